"""Check for Target, through the panel's operator, on Fox (glTF), Luka (PMX) and the demo humanoid (README "The
SkinBridge sidebar", docs/blender.md §10): for every target the panel lists exactly what the export then does,
the export being the one `convert --to TARGET` runs (app/pipeline.py: one output session, the scene's files
protected) on the same scene: its error as the one refusal, else its warnings in order and then the files it
wrote; the operator's report holds the same warnings. A target's option set in the panel reaches the check as
it reaches the export (NWN2's skeleton name). A value a writer cannot write is the check's refusal and File ›
Export's error, in the writer's words."""
from __future__ import annotations

import os

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge import formats  # noqa: E402  (after the bpy check: these modules need Blender)
from skinbridge.app import demo, sidebar  # noqa: E402
from skinbridge.app.options import ConvertOptions  # noqa: E402
from skinbridge.blender import model_facts as mf  # noqa: E402
from skinbridge.blender import scene as bscene  # noqa: E402
from skinbridge.blender.ops_common import LAST_OUTCOME, protect_scene_files  # noqa: E402
from skinbridge.blender.selection import NoTarget  # noqa: E402
from skinbridge.core.errors import ExportError, FormatError  # noqa: E402
from skinbridge.core.fileio import output_session  # noqa: E402
from skinbridge.io_mdb.mdb import mdb  # noqa: E402
from support.sidebar import import_file  # noqa: E402

pytestmark = pytest.mark.blender

# what `convert` prints as its one error line (cli.py `_convert_worker`; pipeline.py makes NoTarget an ExportError)
CONVERT_FAULTS = (FormatError, ExportError, NoTarget, OSError, RuntimeError)


def _files(folder: str | os.PathLike) -> list[str]:
    out = []
    for root, _, names in os.walk(folder):
        out += [os.path.relpath(os.path.join(root, n), folder).replace(os.sep, "/") for n in names]
    return sorted(out)


def _export(folder, target: str, name: str, values: dict) -> list[tuple[str, str]]:
    """The export of `convert --to target` on the scene as it is, as the panel lists findings: [("refuse",
    error)] or its warnings ("warn") and then the files it wrote ("file")."""
    try:
        with output_session(str(folder)) as session:
            protect_scene_files(session)
            _, warnings = formats.targets()[target].get("export_target")(
                bpy.context, str(folder), name, ConvertOptions(target=target, **values))
    except CONVERT_FAULTS as e:
        return [("refuse", str(e))]
    return [("warn", w) for w in warnings] + [("file", f) for f in _files(folder)]


def _panel_lists_each_export(tmp_path, options: dict[str, dict] | None = None,
                             targets: list[str] | None = None) -> dict[str, list]:
    """For every target (or those of `targets`): Check for Target from the panel (its options
    `options[target]`), then that target's export; the two lists are equal, and the report of a check that does
    not refuse holds the warnings. The lists, by target."""
    props = bpy.context.scene.skinbridge_sidebar
    name = sidebar.export_name(mf.model_facts(*mf.active_model(bpy.context)))
    out = {}
    for target in targets or formats.targets():
        values = (options or {}).get(target, {})
        for option, value in values.items():
            setattr(getattr(props, f"options_{target}"), option, value)
        props.target = target
        LAST_OUTCOME.warnings = ["(none yet)"]
        assert bpy.ops.skinbridge.check_target() == {"FINISHED"}
        listed = [(f.kind, f.text) for f in props.findings]
        out[target] = exported = _export(tmp_path / target, target, name, values)
        assert listed == exported, target
        if exported[0][0] != "refuse":
            assert LAST_OUTCOME.warnings == [text for kind, text in exported if kind == "warn"], target
    return out


@pytest.mark.slow
def test_the_panel_lists_what_each_export_of_fox_does(clean_scene, testdata, tmp_path):
    import_file(testdata / "gltf" / "Fox.glb")
    lists = _panel_lists_each_export(tmp_path / "defaults")
    assert lists["mdb"][0][0] == "refuse" and "--skeleton NAME" in lists["mdb"][0][1]
    assert ("file", "root.gr2") in lists["gr2"] and ("file", "Run.gr2") in lists["gr2"]
    lists = _panel_lists_each_export(tmp_path / "skeleton", {"mdb": {"skeleton": "P_HHM_skel"}}, ["mdb"])
    assert lists["mdb"] == [("file", "root.mdb")]


def test_the_panel_lists_what_each_export_of_the_demo_humanoid_does(clean_scene, tmp_path):
    """The humanoid as `skinbridge demo` builds it (app/demo.py `run_demo`): its Mixamo names fit every target,
    so only PMX warns (its walk's Bézier keys, as VMD interpolation blocks); NWN2's MDB wants the skeleton's
    name."""
    result = bscene.build_scene(bpy.context, demo.humanoid_scene(), "Humanoid")
    mesh_ob = next(o for o in result.objects if o.type == "MESH")
    demo._skin_texture(mesh_ob, str(tmp_path))  # the demo's own texture step, with its image file
    bpy.context.scene.render.fps = 30
    demo.add_walk(result.armature)
    bpy.context.scene.frame_set(1)
    bpy.context.view_layer.objects.active = result.armature
    lists = _panel_lists_each_export(tmp_path / "defaults", {"mdb": {"skeleton": "P_HHM_skel"}})
    warned = {t: [text for kind, text in found if kind != "file"] for t, found in lists.items()}
    assert len(warned.pop("pmx")) == 1 and lists["pmx"][0][1].startswith("Walk: ") and (
        "a VMD block cannot hold exactly" in lists["pmx"][0][1])
    assert warned == {t: [] for t in warned}
    assert lists["gr2"] == [("file", "Humanoid.gr2"), ("file", "Walk.gr2")]
    assert lists["pmx"][1:] == [("file", "Humanoid.pmx"), ("file", "Skin.png"), ("file", "Walk.vmd")]


@pytest.mark.slow
def test_the_panel_lists_what_each_export_of_luka_does(clean_scene, testdata, tmp_path):
    import_file(testdata / "pmx" / "mmdtools_megurine_luka.pmx")
    lists = _panel_lists_each_export(tmp_path)
    assert sum("was not found" in text for _, text in lists["pmx"]) == 2  # the textures the sample lacks
    assert lists["urhox"][0][0] == "refuse" and "at most 64 bones" in lists["urhox"][0][1]


def test_a_value_the_writer_cannot_write_is_the_refusal_and_the_exports_error(clean_scene, testdata, tmp_path):
    """Helm05's mesh packet holds a vertex whose normal is NaN. SMD writes a vertex per triangle corner, in the
    file's face order, and refuses the first corner that uses it; the check lists that as its one refusal and
    File › Export › SMD reports it as its error (neither raises a Python error out of its operator)."""
    path = testdata / "mdb" / "ovr_P_EEF_DMCB_Helm05.MDB"
    packet = next(p for p in mdb.read(path.read_bytes()).packets if getattr(p, "vertices", None) is not None)
    bad = np.flatnonzero(~np.isfinite(packet.vertices["normal"]).all(axis=1))
    corner = int(np.flatnonzero(np.isin(np.asarray(packet.faces).reshape(-1), bad))[0])
    refusal = f"field vertex: vertex {corner} has a value that is not finite"
    import_file(path)
    assert _panel_lists_each_export(tmp_path, targets=["smd"]) == {"smd": [("refuse", refusal)]}
    with pytest.raises(RuntimeError) as raised:  # bpy.ops raises an operator's ERROR report in background mode
        bpy.ops.export_scene.skinbridge_smd(filepath=str(tmp_path / "Helm05.smd"))
    assert str(raised.value).strip().splitlines()[0] == f"Error: {refusal}"
    assert not (tmp_path / "Helm05.smd").exists()
