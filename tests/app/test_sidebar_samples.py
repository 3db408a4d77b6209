"""Every panel of the SkinBridge tab drawn for a model of each format we import (README "The SkinBridge sidebar",
docs/blender.md §10): one sample per family of the test data (conftest.py `TESTDATA`) and files Blender Source
Tools wrote (`INTEROP`), with its motion, morph or
texture file where the family has one, the armature and then each mesh of the model active, after a check for a
target and with the Names list loaded, against the stand-in layout of support/sidebar.py (every prop() names a
real RNA property, every operator and icon exists) extended by the UI list the Names panel draws. The Model panel
names the sample's file and format, and the Check panel shows every finding of the check."""
from __future__ import annotations


import pytest

bpy = pytest.importorskip("bpy")

from skinbridge import formats  # noqa: E402  (after the bpy check: these modules need Blender)
from skinbridge.app import operators  # noqa: E402
from skinbridge.blender import model_facts as mf  # noqa: E402
from skinbridge.blender.translations import translate  # noqa: E402
from support.sidebar import StandInLayout  # noqa: E402

pytestmark = pytest.mark.blender

# (model file, the file imported onto it or None), one per family; the check's target turns with the family
FAMILIES = [
    ("urho3d/Ninja.mdl", "urho3d/Ninja_Walk.ani"),
    ("pmx/babylonmmd_constraint_test.pmx", "pmx/mlibgo_shagamu.vmd"),
    ("wepuppet/blacryu_goose_t_puppet.mdl", "wepuppet/blacryu_goose_t.tex"),
    ("gr2/ovr_P_HEF_head83.MDB", None),  # an NWN2 head bound to the GR2 skeleton beside it
    ("gr2/ovr_P_HEF_skel83.GR2", None),
    ("mdb/kaedrin_plc_cus_cliffcc_01.MDB", None),
    ("smd/bst_Cube_NoArmature_ref.smd", "smd/bst_Cube_NoArmature_flex.vta"),
    ("dmx/bst_Curve_Armature_BezierCurve.dmx", None),
    ("qc/health_charger001/health_charger001.qc", None),
    ("gltf/Fox.glb", None),
    # files Blender Source Tools wrote (conftest.py INTEROP): keyvalues2 and binary 9 DMX, an SMD of the same scene
    pytest.param("../interop/bst_written/AllTypes_binary9.dmx",
                 "../interop/bst_written/AllTypes_ArmatureAction_kv2.dmx", marks=pytest.mark.default_leg),
    pytest.param("../interop/bst_written/Cube_Armature_kv2.dmx", None, marks=pytest.mark.default_leg),
    pytest.param("../interop/bst_written/Dice.smd", None, marks=pytest.mark.default_leg),
]


class ListLayout(StandInLayout):
    """The stand-in layout with `template_list`, which draws each item through its UIList into this layout."""

    def _sub(self, *args, **kwargs) -> "ListLayout":
        return ListLayout(self.labels)

    column = row = box = grid_flow = split = _sub

    def template_list(self, list_type: str, list_id: str, data, prop: str, active_data, active_prop: str,
                      **kwargs) -> None:
        assert prop in data.bl_rna.properties and active_prop in active_data.bl_rna.properties
        ui_list = getattr(bpy.types, list_type)
        for item in getattr(data, prop):
            ui_list.draw_item(None, bpy.context, self, data, item, 0, active_data, active_prop)


class ListPanel:
    def __init__(self):
        self.layout = ListLayout()


def tab_panels() -> list[type]:
    """Every registered panel of the SkinBridge tab, parents before their children."""
    found = [cls for cls in bpy.types.Panel.__subclasses__()
             if getattr(cls, "bl_category", "") == "SkinBridge" and cls.is_registered]
    return sorted(found, key=lambda cls: getattr(cls, "bl_parent_id", "") != "")


def _drawn(context) -> list[str]:
    """The labels of every panel of the tab that Blender would show now (its poll passes), in order."""
    labels = []
    for cls in tab_panels():
        if hasattr(cls, "poll") and not cls.poll(context):
            continue
        panel = ListPanel()
        cls.draw(panel, context)
        labels += panel.layout.labels
    return labels


def _import(path) -> str:
    """Through the format's File › Import operator, as a user does: "ours" (SkinBridge's operator notes the
    source file on the objects) or "foreign" (Blender's glTF operator)."""
    spec = formats.identify_file(path)
    category, _, name = operators.import_idname(spec).partition(".")
    op = getattr(getattr(bpy.ops, category), name)
    assert op(filepath=str(path)) == {"FINISHED"}
    return "foreign" if spec.foreign_operators else "ours"


def test_the_tab_holds_the_panels_of_every_family(addon):
    names = {cls.__name__ for cls in tab_panels()}
    assert {"VIEW3D_PT_skinbridge", "VIEW3D_PT_skinbridge_target", "VIEW3D_PT_skinbridge_report",
            "VIEW3D_PT_skinbridge_mmd", "VIEW3D_PT_skinbridge_mmd_morphs", "VIEW3D_PT_skinbridge_pmx_names",
            "SKINBRIDGE_PT_rest_compare"} <= names


@pytest.mark.parametrize("sample, extra", FAMILIES)
def test_every_panel_draws_for_an_imported_sample(clean_scene, testdata, sample, extra):
    path = testdata / sample
    how = _import(path)
    if extra:
        _import(testdata / extra)
    layer = bpy.context.view_layer
    arm, meshes = mf.active_model(bpy.context)
    assert arm is not None or meshes, sample
    props = bpy.context.scene.skinbridge_sidebar
    order = [(row.values if hasattr(row, "values") else row)[0] for row in FAMILIES]
    props.target = list(formats.targets())[order.index(sample) % len(formats.targets())]
    assert bpy.ops.skinbridge.check_target() == {"FINISHED"}
    findings = [f.text for f in props.findings]
    assert findings, sample  # at least the file it writes, or why it refuses
    if bpy.ops.skinbridge.pmx_names_load.poll():
        assert bpy.ops.skinbridge.pmx_names_load() == {"FINISHED"}
    label = formats.identify_file(path).label
    for ob in [o for o in (arm, *meshes) if o is not None]:
        layer.objects.active = ob
        labels = _drawn(bpy.context)
        assert labels[0] == (arm or ob).name, (sample, ob.name)  # the model: the armature, else the mesh
        if how == "ours":
            assert path.name in labels and translate(label, interface=True) in labels, (sample, ob.name)
        elif how == "foreign":
            assert "not imported by SkinBridge" in labels, (sample, ob.name)
        for text in findings:  # each finding's first words, wrapped to the sidebar's width
            assert any(text.startswith(line) and line for line in labels), (ob.name, text)
