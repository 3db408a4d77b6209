"""Issue 28, fault 8: an export whose path lies under a file (not a folder) is refused in one line that says so,
by every exporter operator (no "[Errno 20] Not a directory") and by convert to every target; nothing is
written."""
from __future__ import annotations

import os

import pytest

bpy = pytest.importorskip("bpy")

from support.blender_scenes import import_urhox  # noqa: E402
from skinbridge import cli, formats  # noqa: E402

pytestmark = pytest.mark.blender

UNDER_A_FILE = "is a file, not a folder"


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "afile"
    path.write_text("the user's file\n")
    return path


def _ninja_with_walk(testdata):
    arm = next(o for o in import_urhox(testdata / "urho3d" / "Ninja.mdl") if o.type == "ARMATURE")
    bpy.ops.import_anim.skinbridge_urhox_ani(filepath=str(testdata / "urho3d" / "Ninja_Walk.ani"))
    for ob in bpy.context.view_layer.objects:
        ob["nwn2_skeleton"] = "P_HHM_skel"  # the MDB exporter's skeleton name of a skinned part
        ob.select_set(ob is arm)
    bpy.context.view_layer.objects.active = arm
    return arm


def _exporters() -> list[tuple[str, str]]:
    """(operator id, the path property it writes to) of every exporter SkinBridge registers."""
    found = []
    for name in dir(bpy.ops.export_scene) + dir(bpy.ops.export_anim):
        if not name.startswith("skinbridge_"):
            continue
        group = "export_scene" if name in dir(bpy.ops.export_scene) else "export_anim"
        rna = getattr(getattr(bpy.ops, group), name).get_rna_type()
        prop = "filepath" if "filepath" in rna.properties else "directory"
        found.append((f"{group}.{name}", prop))
    return found


def test_every_exporter_refuses_a_path_under_a_file(clean_scene, testdata, a_file, tmp_path):
    _ninja_with_walk(testdata)
    exporters = _exporters()
    assert {"export_anim.skinbridge_urhox_ani", "export_anim.skinbridge_vmd",
            "export_scene.skinbridge_smd", "export_scene.skinbridge_pmx"} <= {op for op, _ in exporters}
    assert len(exporters) >= 8, exporters  # urhox, ani, pmx, vmd, wepuppet, wetex, mdb, smd (and any added)
    image = bpy.data.images.new("mask", 4, 4)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    for op, prop in exporters:
        group, name = op.split(".")
        ext = getattr(getattr(bpy.ops, group), name).get_rna_type().properties.get("filename_ext")
        target = os.path.join(a_file, "sub", "out" + (ext.default if ext is not None else ""))
        kwargs = {prop: target if prop == "filepath" else os.path.dirname(target)}
        if op == "export_scene.skinbridge_wetex":
            kwargs["image"] = image.name  # the texture exporter writes an image, not the rig
        with pytest.raises(RuntimeError) as raised:
            getattr(getattr(bpy.ops, group), name)(**kwargs)
        message = str(raised.value)
        assert UNDER_A_FILE in message and "Errno" not in message, (op, message)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert a_file.read_text() == "the user's file\n"


def test_convert_to_every_target_refuses_an_output_under_a_file(testdata, a_file, capsys):
    for target in formats.targets():
        assert cli.main(["convert", str(testdata / "urho3d" / "Box.mdl"), "--to", target,
                         "-o", str(a_file / "out")]) == 1, target
        err = capsys.readouterr().err
        assert UNDER_A_FILE in err and "Errno" not in err, (target, err)
    assert a_file.read_text() == "the user's file\n"
