"""DMX animations in Blender: importing a DMX with a DmeChannelsClip gives one action per clip, assigned, whose
keys read back through the core model (`read_action`) pose every bone as the mapped clip does (which
test_dmx_animation.py compares with srctools' reading); the motion loader puts the same clip onto an armature
already in the scene, and refuses a clip that matches none of its bones."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge import formats  # noqa: E402
from skinbridge.blender import action as bact  # noqa: E402
from skinbridge.core.errors import ExportError  # noqa: E402
from skinbridge.io_smd.dmx import blender_io as blender_dmx  # noqa: E402
from skinbridge.io_smd.smd import convert  # noqa: E402
from skinbridge.io_smd.dmx import convert as dmx_convert  # noqa: E402

pytestmark = pytest.mark.blender

DMX_DIR = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "dmx"
TOL = 1e-5  # float32 keys through Blender's F-curves


def _assert_action_poses_as(arm, act, scene) -> None:
    (anim,) = scene.animations
    got, _ = bact.read_action(bpy.context, arm, act)
    rate = anim.extras["fps"]
    seconds = np.arange(int(round(anim.length * rate)) + 1) / rate
    want = convert.animation_locals(scene.skeleton, anim, seconds)
    have = convert.animation_locals(scene.skeleton, got, seconds)
    scale = max(1.0, float(np.abs(want[..., :3, 3]).max()))
    assert np.abs(have - want).max() <= TOL * scale, float(np.abs(have - want).max())


@pytest.mark.parametrize("name", ["bst_walkn.dmx.gz", "bst_ActionFilter_X_Axis.dmx"])
def test_import_makes_one_action_per_clip(clean_scene, name):
    path = DMX_DIR / name
    scene, _ = dmx_convert.load(str(path), path.read_bytes())
    formats.identify_file(path).get("blender_import")(bpy.context, str(path), None)
    (arm,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    act = arm.animation_data.action
    assert [a.name for a in bpy.data.actions] == [scene.animations[0].name] == [act.name]
    assert act.frame_end == pytest.approx(scene.animations[0].length * bact.fps_of(bpy.context.scene))
    _assert_action_poses_as(arm, act, scene)


@pytest.mark.slow  # walkn built twice: about 6 s
def test_motion_loader_onto_existing_armature(clean_scene):
    path = DMX_DIR / "bst_walkn.dmx.gz"
    scene, _ = dmx_convert.load(str(path), path.read_bytes())
    blender_dmx.blender_import(bpy.context, str(path))
    (arm,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    formats.get("dmx").get("motion_loader")(bpy.context, str(path), arm, None)
    assert len(bpy.data.actions) == 2 and len([o for o in bpy.data.objects if o.type == "ARMATURE"]) == 1
    _assert_action_poses_as(arm, arm.animation_data.action, scene)
    other = DMX_DIR / "bst_ActionFilter_X_Axis.dmx"  # its one bone "Bone" is none of walkn's
    with pytest.raises(ExportError, match="matches a bone"):
        blender_dmx.load_motion(bpy.context, str(other), arm)
    assert len(bpy.data.actions) == 2


@pytest.mark.slow  # walkn read three times and built twice: about 8 s
def test_import_operator_puts_a_motion_file_onto_the_active_armature(clean_scene):
    """A DMX of animations only (walkn: a skeleton and a clip) builds its own rig into an empty scene, and goes
    onto the active armature as a new action the second time."""
    path = str(DMX_DIR / "bst_walkn.dmx.gz")
    assert bpy.ops.import_scene.skinbridge_dmx(filepath=path) == {"FINISHED"}
    (arm,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.import_scene.skinbridge_dmx(filepath=path) == {"FINISHED"}
    assert [o for o in bpy.data.objects if o.type == "ARMATURE"] == [arm] and len(bpy.data.actions) == 2
