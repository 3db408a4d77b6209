"""The Names (PMX) panel of the SkinBridge tab (README "The SkinBridge sidebar", docs/mmd.md): Luka's bones,
morphs and materials listed with the Japanese and English names of its file, in file order; a name edited in
the list is the name the PMX export writes, the other names and the renamed vertex morph's offsets unchanged."""
from __future__ import annotations

import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.io_pmx.model import pmx  # noqa: E402  (after the bpy check: the panel needs Blender)
from support.sidebar import StandInLayout, StandInPanel, import_file  # noqa: E402

pytestmark = [pytest.mark.blender, pytest.mark.slow]


class ListLayout(StandInLayout):
    """The sidebar tests' stand-in layout, with `template_list` drawing every item through its UIList."""

    def _sub(self, *args, **kwargs) -> "ListLayout":
        return ListLayout(self.labels)

    column = row = box = grid_flow = split = _sub

    def prop(self, data, name: str, text: str | None = None, **kwargs) -> None:
        super().prop(data, name, text)
        self.labels.append(getattr(data, name))

    def template_list(self, list_type: str, list_id: str, data, prop: str, active_data, active_prop: str,
                      **kwargs) -> None:
        assert prop in data.bl_rna.properties and active_prop in active_data.bl_rna.properties
        ui_list = getattr(bpy.types, list_type)
        for item in getattr(data, prop):
            ui_list.draw_item(None, bpy.context, self, data, item, 0, active_data, active_prop)


def _names(m: pmx.PmxModel) -> list[tuple[str, str, str]]:
    return ([("BONE", b.name, b.name_e) for b in m.bones] + [("MORPH", x.name, x.name_e) for x in m.morphs]
            + [("MATERIAL", x.name, x.name_e) for x in m.materials])


def test_luka_names_are_listed_edited_and_exported(clean_scene, testdata, tmp_path):
    path = testdata / "pmx" / "mmdtools_megurine_luka.pmx"
    original = pmx.read(path.read_bytes())
    import_file(path)
    panel = StandInPanel()
    panel.layout = ListLayout()
    bpy.types.VIEW3D_PT_skinbridge_pmx_names.draw(panel, bpy.context)
    assert "Load the names of the active model" in panel.layout.labels
    assert bpy.ops.skinbridge.pmx_names_load() == {"FINISHED"}
    items = bpy.context.scene.skinbridge_pmx_names
    assert [(i.kind, i.japanese, i.english) for i in items] == _names(original)
    panel.layout = ListLayout()
    bpy.types.VIEW3D_PT_skinbridge_pmx_names.draw(panel, bpy.context)
    shown = panel.layout.labels  # each row's icon is checked by the stand-in's label()
    assert [shown[shown.index("センター") + 1], shown[shown.index("材質31") + 1]] == ["center", "Material31"]

    bones, morphs = len(original.bones), len(original.morphs)
    k = next(k for k, m in enumerate(original.morphs) if m.kind == pmx.MORPH_VERTEX)
    items[0].english = "centre"
    items[bones + k].japanese = "新しい表情"
    items[bones + morphs].english = "Skin"
    assert bpy.ops.export_scene.skinbridge_pmx(filepath=str(tmp_path / "Luka.pmx")) == {"FINISHED"}
    written = pmx.read((tmp_path / "Luka.pmx").read_bytes())
    want = _names(original)
    want[0] = ("BONE", want[0][1], "centre")
    want[bones + k] = ("MORPH", "新しい表情", want[bones + k][2])
    want[bones + morphs] = ("MATERIAL", want[bones + morphs][1], "Skin")
    assert _names(written) == want
    before, after = original.morphs[k].offsets, written.morphs[k].offsets
    assert after["vertex"].tolist() == before["vertex"].tolist()  # the renamed morph keeps its shape key
