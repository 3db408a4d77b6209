"""Through Blender, an unchanged DMX comes back byte for byte (io_smd/dmx/blender_io.py, docs/source.md §6.6): Blender
Source Tools' models and motion, whose element graphs our writer lays out differently (asserted: our writer's
bytes for the unchanged model are not the file's), keep their bytes while the core records
export makes of them give the digest they gave right after import; a moved vertex, a new key, or another visible
mesh in the export is written from Blender."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.io_smd.dmx import blender_io as blender_dmx  # noqa: E402

from skinbridge.io_smd.dmx import dmx  # noqa: E402

from skinbridge.io_smd.dmx import convert as dmx_convert  # noqa: E402

from skinbridge.io_smd.dmx import write as dmx_write  # noqa: E402

pytestmark = pytest.mark.blender

DMX_DIR = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "dmx"
MODELS = ["bst_Cube_NoArmature.dmx", "bst_Curve_Armature_BezierCurve.dmx", "bst_cloth_test_simple.dmx"]


def _export(tmp_path, name: str = "out") -> dict[str, bytes]:
    out = tmp_path / name
    out.mkdir()
    paths, _ = blender_dmx.export_target(bpy.context, str(out), "model", None)
    return {pathlib.Path(p).name: pathlib.Path(p).read_bytes() for p in paths}


def _positions(data: bytes) -> np.ndarray:
    scene, _ = dmx_convert.to_scene(dmx.read(data), "x")
    return np.concatenate([m.positions for m in scene.meshes])


@pytest.mark.parametrize("name", MODELS)
def test_an_unchanged_model_comes_back_byte_for_byte_and_a_changed_one_from_blender(clean_scene, tmp_path, name):
    source = (DMX_DIR / name).read_bytes()
    blender_dmx.blender_import(bpy.context, str(DMX_DIR / name))
    scene, _ = blender_dmx._export_scene(bpy.context)
    assert dmx.write(dmx_write.model_dmx(scene, "model", [])) != source  # what keeping the bytes is for
    assert _export(tmp_path, "same")["model.dmx"] == source
    me = next(o for o in bpy.data.objects if o.type == "MESH").data
    me.vertices[0].co.z += 0.25
    if me.shape_keys is not None:  # the export reads the basis key
        me.shape_keys.key_blocks[0].data[0].co.z += 0.25
    changed = _export(tmp_path, "changed")["model.dmx"]
    # one Blender vertex, a position value of the file: every corner at it moves, no other
    before, after = np.unique(_positions(source), axis=0), np.unique(_positions(changed), axis=0)
    assert len(before) == len(after)
    gone = before[~(np.abs(before[:, None] - after[None]).max(axis=2) <= 1e-6).any(axis=1)]
    new = after[~(np.abs(after[:, None] - before[None]).max(axis=2) <= 1e-6).any(axis=1)]
    assert len(gone) == len(new) == 1 and np.allclose(new - gone, [0, 0, 0.25], atol=1e-5)


def test_another_visible_mesh_is_not_in_the_kept_file(clean_scene, tmp_path):
    name = "bst_Cube_NoArmature.dmx"
    blender_dmx.blender_import(bpy.context, str(DMX_DIR / name))
    bpy.ops.mesh.primitive_plane_add(location=(5, 0, 0))
    written = _export(tmp_path)["model.dmx"]
    assert written != (DMX_DIR / name).read_bytes()
    scene, _ = dmx_convert.to_scene(dmx.read(written), "x")
    assert len(scene.meshes) == 2


def test_an_unchanged_motion_comes_back_byte_for_byte(clean_scene, tmp_path):
    """The motion on the armature it makes (no model in the scene: the file's skeleton); once a key moves, the
    action is written from Blender."""
    name = "bst_ActionFilter_X_Axis.dmx"
    source = (DMX_DIR / name).read_bytes()
    bpy.ops.mesh.primitive_cube_add()  # a visible mesh: the export needs a model beside the motion
    blender_dmx.blender_import(bpy.context, str(DMX_DIR / name))
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    bpy.context.active_object.modifiers.new("rig", "ARMATURE").object = arm
    act = arm.animation_data.action
    written = _export(tmp_path, "same")
    assert written[f"{act.name}.dmx"] == source
    bone = arm.pose.bones[0]
    bone.location = (0.0, 0.0, 0.5)
    bone.keyframe_insert("location", frame=1)
    assert _export(tmp_path, "changed")[f"{act.name}.dmx"] != source
