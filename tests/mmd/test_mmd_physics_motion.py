"""MMD physics under a motion (issue 48): after a VMD import the rigid-body cache covers the scene's range from
its first frame (0), so a long dance keeps simulating; the MMD panel's button does the same for a range the
user set. The model is tests/support/mmd_hair.py's: two 6-bone hair chains with their own IK bones, every chain
bone on a mode-1 dynamic body."""
from __future__ import annotations

import json
import math
import pathlib
import subprocess

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.io_pmx.blender_side import blender_io  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_motion_import  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_physics as bp  # noqa: E402
from skinbridge.io_pmx.model import pmx  # noqa: E402
from skinbridge.io_pmx.motion import vmd  # noqa: E402
from support import mmd_extras, mmd_hair  # noqa: E402
from support.tools import NODE_MODULES, node_with_babylon  # noqa: E402

pytestmark = [pytest.mark.blender]


def _import(tmp_path, motion: vmd.Motion | None = None):
    path = tmp_path / "hair.pmx"
    path.write_bytes(mmd_hair.hair_model_bytes())
    arm = blender_io.import_pmx(bpy.context, str(path)).armature
    if motion is not None:
        vpath = tmp_path / "sway.vmd"
        vpath.write_bytes(vmd.write(motion))
        blender_motion_import.import_vmd(bpy.context, [str(vpath)], arm)
    return arm


def dynamic_bones(arm) -> list:
    bodies, _ = bp.physics_objects(arm)
    return [(ob, ob[bp.BONE_PROP]) for ob in bodies if not ob.rigid_body.kinematic and ob.get(bp.BONE_PROP)]


def follow_errors(arm, dynamic, offsets) -> tuple[float, float, str]:
    """The worst angle (degrees) and distance (metres) between a dynamic bone and its body, and its bone."""
    deps = bpy.context.evaluated_depsgraph_get()
    worst = (0.0, 0.0, "")
    for ob, bone in dynamic:
        want = np.array(ob.evaluated_get(deps).matrix_world @ offsets[ob.name])
        got = np.array(arm.matrix_world @ arm.pose.bones[bone].matrix)
        turn = want[:3, :3].T @ got[:3, :3]
        angle = math.degrees(math.acos(min(1.0, max(-1.0, (np.trace(turn) - 1) / 2))))
        distance = float(np.linalg.norm(want[:3, 3] - got[:3, 3]))
        if (angle, distance) > worst[:2]:
            worst = (max(angle, worst[0]), max(distance, worst[1]), bone)
    return worst


def rest_offsets(arm, dynamic) -> dict:
    return {ob.name: bp.rest_matrix(ob).inverted() @ arm.matrix_world @ arm.data.bones[bone].matrix_local
            for ob, bone in dynamic}


def test_cache_follows_a_600_frame_motion(clean_scene, tmp_path):
    """A 600-frame VMD imported: scene 0..600, the cache 0..600 (it was 1..250), two 1/60 s steps a frame; the
    chains still on their bodies at frame 590 (within 1 mm), where a cache ending at 250 leaves the bones
    behind."""
    arm = _import(tmp_path, mmd_hair.sway_motion(600))
    scene = bpy.context.scene
    cache = scene.rigidbody_world.point_cache
    assert (scene.frame_start, scene.frame_end) == (0, 600)
    assert (cache.frame_start, cache.frame_end) == (0, 600)
    assert scene.rigidbody_world.substeps_per_frame == 2
    dynamic = dynamic_bones(arm)
    assert len(dynamic) == 2 * mmd_hair.CHAIN
    offsets = rest_offsets(arm, dynamic)
    for f in range(0, 591, 1):
        scene.frame_set(f)
    angle, distance, bone = follow_errors(arm, dynamic, offsets)
    print(f"\nframe 590: worst bone-to-body {angle:.3f}° {distance * 1000:.3f} mm ({bone})")
    assert angle <= 1.0 and distance <= 1e-3


def test_button_sets_the_cache_to_the_scene_range(clean_scene, tmp_path):
    _import(tmp_path)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 0, 700
    assert bpy.ops.skinbridge.mmd_physics_range() == {"FINISHED"}
    cache = scene.rigidbody_world.point_cache
    assert (cache.frame_start, cache.frame_end) == (0, 700)
    scene.frame_start, scene.frame_end = 720, 900  # a start beyond the cache's end
    assert bpy.ops.skinbridge.mmd_physics_range() == {"FINISHED"}
    assert (cache.frame_start, cache.frame_end) == (720, 900)


def _ik_influence(arm, ik_bone: str) -> float:
    """The evaluated influence of the IK constraint aimed at `ik_bone` (what a VMD's IK on/off keys)."""
    pb, c = next((pb, c) for pb in arm.pose.bones for c in pb.constraints if c.type == "IK" and c.subtarget == ik_bone)
    return c.influence, c.enabled


@pytest.mark.default_leg
@pytest.mark.slow
def test_physics_wins_over_the_models_own_ik(clean_scene, tmp_path):
    """Issue 48 item 1: the hair chains' own IK bones (under センター, which sways away from the head) reach only
    bones on dynamic bodies; MMD applies physics after IK there, so every dynamic bone stays within 1° and 1 mm
    of its body at every frame of a motion that ends at 400, played to 600 (two 1/60 s steps a frame). The IK
    keys still act: 左足ＩＫ switched off at frame 100 is off, the leg's IK on before."""
    motion = mmd_hair.ik_switches(mmd_hair.sway_motion(600, still_from=400), 100)
    arm = _import(tmp_path, motion)
    scene = bpy.context.scene
    assert (scene.rigidbody_world.point_cache.frame_start, scene.rigidbody_world.point_cache.frame_end) == (0, 600)
    dynamic = dynamic_bones(arm)
    offsets = rest_offsets(arm, dynamic)
    worst = (0.0, 0.0, "")
    rest = {ob.name: np.array(bp.rest_matrix(ob).translation) for ob, _ in dynamic}
    swing = 0.0
    for f in range(0, 601):
        scene.frame_set(f)
        deps = bpy.context.evaluated_depsgraph_get()
        swing = max(swing, max(float(np.linalg.norm(np.array(ob.evaluated_get(deps).matrix_world.translation)
                                                    - rest[ob.name])) for ob, _ in dynamic))
        angle, distance, bone = follow_errors(arm, dynamic, offsets)
        if (angle, distance) > worst[:2]:
            worst = (max(angle, worst[0]), max(distance, worst[1]), f"{bone} at frame {f}")
        if f in (50, 150):
            assert _ik_influence(arm, "左足ＩＫ") == ((1.0, True) if f == 50 else (0.0, True)), f
            assert _ik_influence(arm, "右足ＩＫ") == (1.0, True), f
            assert _ik_influence(arm, "左髪ＩＫ")[1] is False  # off while physics drives its bones
    print(f"\n600 frames: worst bone-to-body {worst[0]:.4f}° {worst[1] * 1000:.4f} mm ({worst[2]}); bodies swung "
          f"up to {swing:.3f} m")
    assert worst[0] <= 1.0 and worst[1] <= 1e-3
    assert swing > 0.1  # the chains swing (センター sways 0.24 m): the test is not of bodies at rest
    assert bpy.ops.skinbridge.mmd_physics_toggle() == {"FINISHED"}  # physics off for posing: the IK back on
    assert _ik_influence(arm, "左髪ＩＫ")[1] is True


@pytest.mark.default_leg
@pytest.mark.slow
def test_luka_with_hair_ik_keeps_her_hair_on_its_bodies(clean_scene, testdata, tmp_path):
    """Luka with hair and necktie IK chains of her own (tests/support/mmd_extras.py; the hair links are on
    dynamic bodies, the necktie has none): the motion ending at 400 played to 600, every dynamic bone within 1°
    and 1 mm of its body at every frame; the necktie's IK, which reaches no body, stays on."""
    path = tmp_path / "luka_ik.pmx"
    path.write_bytes(mmd_extras.luka_with_ik_chains(testdata / "pmx" / mmd_extras.LUKA))
    arm = blender_io.import_pmx(bpy.context, str(path)).armature
    vpath = tmp_path / "sway.vmd"
    vpath.write_bytes(vmd.write(mmd_hair.sway_motion(600, still_from=400)))
    blender_motion_import.import_vmd(bpy.context, [str(vpath)], arm)
    assert [_ik_influence(arm, n)[1] for n in ("左髪ＩＫ", "右髪ＩＫ", "ﾈｸﾀｲＩＫ")] == [False, False, True]
    dynamic = dynamic_bones(arm)
    offsets = rest_offsets(arm, dynamic)
    scene = bpy.context.scene
    worst = (0.0, 0.0, "")
    for f in range(0, 601):
        scene.frame_set(f)
        angle, distance, bone = follow_errors(arm, dynamic, offsets)
        if (angle, distance) > worst[:2]:
            worst = (max(angle, worst[0]), max(distance, worst[1]), f"{bone} at frame {f}")
    print(f"\nLuka, 600 frames: worst bone-to-body {worst[0]:.4f}° {worst[1] * 1000:.4f} mm ({worst[2]})")
    assert worst[0] <= 1.0 and worst[1] <= 1e-3


MOTION_SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "js" / "mmd_physics_motion.mjs"


def babylon_played(model_path, motion_path, steps: list[int], bones: list[str]) -> list[dict]:
    """Per step count, bone name → 4×4 world matrix (row vectors, MMD units) in babylon-mmd's MmdAmmoPhysics
    playing the motion (tests/js/mmd_physics_motion.mjs)."""
    node = node_with_babylon()
    done = subprocess.run([node, str(MOTION_SCRIPT), str(NODE_MODULES), str(model_path), str(motion_path),
                           json.dumps(steps), json.dumps(bones, ensure_ascii=False)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout[done.stdout.index("{"):])  # after the engine's banner
    assert out["missing"] == [] and out["steps"] == steps
    return [{n: np.array(m, np.float64).reshape(4, 4) for n, m in zip(bones, frame)} for frame in out["frames"]]


def against_babylon(tmp_path, m: pmx.PmxModel, checkpoints=(300, 600)) -> dict[int, tuple[float, str]]:
    """`m` under the motion that ends at 400, played to the last checkpoint at 30 fps, two 1/60 s steps a frame,
    in Blender and in babylon-mmd 1.3.0's MmdAmmoPhysics (run once): per checkpoint frame, the worst distance
    between a dynamic body's centre where its bone carries it in the two, as a share of the model's height, and
    that body's name."""
    path, vpath = tmp_path / "model.pmx", tmp_path / "sway.vmd"
    path.write_bytes(pmx.write(m))
    vpath.write_bytes(vmd.write(mmd_hair.sway_motion(600, still_from=400)))
    bodies = [k for k, r in enumerate(m.rigid_bodies) if r.mode != 0 and 0 <= r.bone < len(m.bones)]
    names = sorted({m.bones[m.rigid_bodies[k].bone].name for k in bodies})
    theirs = babylon_played(path, vpath, [2 * f for f in checkpoints], names)
    arm = blender_io.import_pmx(bpy.context, str(path)).armature
    blender_motion_import.import_vmd(bpy.context, [str(vpath)], arm)
    scene = bpy.context.scene
    height = float(m.vertices["position"][:, 1].max() - m.vertices["position"][:, 1].min())
    swap = np.array([[1, 0, 0], [0, 0, 1], [0, 1, 0]], np.float64)  # MMD (x, y, z) ⇄ Blender (x, z, y)
    scale = 0.08
    worst = {}
    for f in range(0, checkpoints[-1] + 1):
        scene.frame_set(f)
        if f not in checkpoints:
            continue
        bab = theirs[checkpoints.index(f)]
        err = {}
        for k in bodies:
            r = m.rigid_bodies[k]
            bone = m.bones[r.bone].name
            carry = np.array(arm.matrix_world) @ np.array(arm.pose.bones[bone].matrix) @ np.linalg.inv(
                np.array(arm.data.bones[bone].matrix_local))  # these models' Blender names are the PMX names
            ours = swap @ (carry @ np.append(swap @ np.asarray(r.position, np.float64) * scale, 1.0))[:3] / scale
            offset = np.asarray(r.position, np.float64) - np.asarray(m.bones[r.bone].position, np.float64)
            babylon = (np.append(offset, 1.0) @ bab[bone])[:3]
            err[r.name] = float(np.linalg.norm(ours - babylon)) / height
        name = max(err, key=err.get)
        worst[f] = (err[name], name)
    print(f"\n{m.name}: worst body apart, share of the height {height * scale:.2f} m: {worst}")
    return worst


@pytest.mark.default_leg
@pytest.mark.slow
def test_chains_against_babylon_mmd_under_a_motion(clean_scene, testdata, tmp_path):
    """Issue 48 item 1: the hair test model, and Luka with hair and necktie IK chains of her own, each under the
    motion that ends at 400 played to 600: every dynamic body, read through its bone, within 3 % of the model's
    height of babylon-mmd's at frame 600 (frame 300, mid-motion, printed). With the hair IK winning over the
    bodies the test model's were 7.5 % apart."""
    hair = against_babylon(tmp_path, mmd_hair.hair_model())
    assert hair[600][0] <= 0.03
    bpy.ops.wm.read_factory_settings(use_empty=True)
    luka = pmx.read(mmd_extras.luka_with_ik_chains(testdata / "pmx" / mmd_extras.LUKA))
    (tmp_path / "luka").mkdir()
    worst = against_babylon(tmp_path / "luka", luka)
    assert worst[600][0] <= 0.03
