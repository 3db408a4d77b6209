"""A GR2 animation loaded onto the armature an MDB import builds: one action of the file's duration, and at
every key the posed bones where the curves (as Granny evaluates them) compose them."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge import formats  # noqa: E402
from skinbridge.core.errors import ExportError  # noqa: E402
from skinbridge.io_mdb.gr2 import animation as gr2_animation, blender_io as gr2_blender, gr2  # noqa: E402
from skinbridge.io_mdb.gr2 import skeleton as gr2_skeleton  # noqa: E402
from skinbridge.io_mdb.mdb import blender_io  # noqa: E402

pytestmark = pytest.mark.blender

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
HEAD = GR2_DIR / "ovr_P_HEF_head83.MDB"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"
ANIMATION = GR2_DIR / "ovr_p_ddf_glaive01.GR2"


def _expected_world(skel: gr2_skeleton.Gr2Skeleton, track_by_name: dict, time: float) -> np.ndarray:
    """Bone heads (metres) composed from each animated bone's sampled local transform, the rest local
    transform for the others: parent world · translation · rotation · scale/shear."""
    world = np.empty((len(skel.bones), 4, 4))
    for i, b in enumerate(skel.bones):
        local = b.local_matrix()
        track = track_by_name.get(b.name)
        if track is not None:
            s = gr2_animation.sample_track(track, np.array([time]))
            local = np.eye(4)
            local[:3, :3] = gr2_skeleton.quaternion_matrix(s["orientation"][1][-1])
            local[:3, 3] = s["position"][1][-1]
        world[i] = local if b.parent < 0 else world[b.parent] @ local
    return world[:, :3, 3] / skel.units_per_metre


def test_glaive_attack_poses_the_head_skeleton_as_granny_composes_it(clean_scene):
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 30, 1.0
    result = blender_io.import_mdb(bpy.context, str(HEAD))
    rig = result.armature
    spec = formats.identify_file(ANIMATION)
    warnings = spec.get("motion_loader")(bpy.context, str(ANIMATION), rig, None)
    assert any("P_DDF_skel" in w and "not imported" in w for w in warnings)
    act = rig.animation_data.action
    assert act.name == ANIMATION.stem
    assert act.frame_range[1] == pytest.approx(50.0, abs=1e-4)  # 5/3 s at 30 fps
    (skel,) = gr2_skeleton.skeletons(gr2.read(SKELETON.read_bytes()))
    (anim,) = gr2_animation.animations(gr2.read(ANIMATION.read_bytes()))
    body = anim.groups[2]
    tracks = {t.name: t for t in body.tracks if t.name in rig.data.bones}
    assert len(tracks) == 55  # the dwarf's attack on the Genasi skeleton: the bones both have
    for frame in (0, 7, 25, 50):
        scene.frame_set(frame)
        heads = np.array([rig.pose.bones[n].head for n in skel.names])
        expected = _expected_world(skel, tracks, frame / 30)
        assert np.abs(heads - expected).max() < 1e-4, frame


def test_a_file_whose_groups_name_no_bone_is_refused_and_leaves_nothing(clean_scene):
    bpy.ops.object.armature_add()
    rig = bpy.context.object
    before = len(bpy.data.actions)
    with pytest.raises(ExportError, match="no track group"):
        gr2_blender.import_gr2_animations(bpy.context, str(ANIMATION), rig)
    assert len(bpy.data.actions) == before and rig.animation_data is None


def test_file_import_of_a_skeleton_then_an_animation_onto_it(clean_scene):
    """File › Import (and drop, which runs the same operator) of a .gr2: the skeleton file becomes an armature of
    the file's bones; an animation file then goes onto that armature as an action; with no armature to take it,
    the animation is refused with an error and nothing is made."""
    (skel,) = gr2_skeleton.skeletons(gr2.read(SKELETON.read_bytes()))
    before = {ob.name for ob in bpy.data.objects}
    with pytest.raises(RuntimeError, match="select an armature"):
        bpy.ops.import_scene.skinbridge_gr2(filepath=str(ANIMATION))
    assert {ob.name for ob in bpy.data.objects} == before and not bpy.data.actions
    assert bpy.ops.import_scene.skinbridge_gr2(filepath=str(SKELETON)) == {"FINISHED"}
    rig = bpy.context.view_layer.objects.active
    assert rig.type == "ARMATURE" and sorted(rig.data.bones.keys()) == sorted(skel.names)
    assert bpy.ops.import_scene.skinbridge_gr2(filepath=str(ANIMATION)) == {"FINISHED"}
    assert rig.animation_data.action.name == ANIMATION.stem
    assert len([ob for ob in bpy.data.objects if ob.type == "ARMATURE"]) == 1
