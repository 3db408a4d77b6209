"""Issue 52: Urho3D motions play in Blender as the engine plays them between keys, steps included (two keys at one
time: the engine plays the first as the end of the segment before and the second from then on).

Blender's pose is read at 200 seeded random times between keys (away from the steps' own instant) and its bones'
world transforms compared with `support.urho_engine.Engine` (the engine's rule, written in the tests from the file
records: linear position and scale, slerped rotation), within 2e-5 of the model's height and 1e-4 rad. An edited
stepped track is written back with its steps (the key count of the file), and only that track changes."""
from __future__ import annotations

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from conftest import run_cli  # noqa: E402
from support.urho_engine import Engine  # noqa: E402

from skinbridge.blender import action as bact  # noqa: E402
from skinbridge.io_urhox.model import blender_io, umd2  # noqa: E402
from skinbridge.io_urhox.motion import blender_io as motion_io, uani  # noqa: E402

pytestmark = pytest.mark.blender

MOTIONS = [("Ninja.mdl", "Ninja_HighJump"), ("Ninja.mdl", "Ninja_Walk"), ("Ninja.mdl", "Ninja_Idle1"),
           ("Kachujin.mdl", "Kachujin_Walk")]
C = np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1]], np.float64)  # Urho3D (x, y, z) → (x, z, y)
# of the model's height: Blender blends a rotation's four curves linearly, import adds keys where that parts from
# slerp by more than `action.ANGLE_TOLERANCE` (1e-5 rad) per bone, and those add up down a chain: Ninja_Walk, which
# has no step, is 1.04e-5 off at its worst
POSITION_TOL = 2e-5
ANGLE_TOL = 1e-4  # radians
AWAY = 0.05  # frames: the random times keep this far from a key and from a step (its CONSTANT key is 0.02 before)
SAMPLES = 200


def _load(testdata, model: str, clip: str):
    folder = testdata / "urho3d"
    arm = blender_io.import_mdl(bpy.context, str(folder / model), "urho3d").armature
    acts, _ = motion_io.import_ani(bpy.context, [str(folder / f"{clip}.ani")], arm, "urho3d")
    mdl = umd2.read((folder / model).read_bytes())
    return arm, acts[0], Engine(mdl), uani.read((folder / f"{clip}.ani").read_bytes()), mdl


def _fps() -> float:
    return bpy.context.scene.render.fps / bpy.context.scene.render.fps_base


def _blender_worlds(arm, engine: Engine, times: np.ndarray) -> np.ndarray:
    """Blender's world transforms of the engine's bones (T, N, 4, 4) in Urho3D axes: the skin matrix Blender
    deforms with (world · pose · rest⁻¹ · world⁻¹), brought to the file's axes, times the file's bind."""
    fps = _fps()
    w = np.array(arm.matrix_world, np.float64)
    w_inv = np.linalg.inv(w)
    rest_inv = np.linalg.inv(np.array([arm.data.bones[n].matrix_local for n in engine.names], np.float64))
    binds = np.linalg.inv(engine.offsets)
    out = np.empty((len(times), len(engine.names), 4, 4))
    for k, t in enumerate(times):
        f = t * fps
        bpy.context.scene.frame_set(int(np.floor(f)), subframe=float(f - np.floor(f)))
        pose = np.array([arm.pose.bones[n].matrix for n in engine.names], np.float64)
        skin = w @ pose @ rest_inv @ w_inv
        out[k] = C @ skin @ C @ binds
    return out


def _rotation_angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angles between the rotations of transforms with uniform scale (..., 4, 4)."""
    ra = a[..., :3, :3] / np.linalg.norm(a[..., :3, 0], axis=-1)[..., None, None]
    rb = b[..., :3, :3] / np.linalg.norm(b[..., :3, 0], axis=-1)[..., None, None]
    chord = np.linalg.norm(ra - rb, axis=(-2, -1))  # 2·√2·sin(angle / 2), well conditioned near 0
    return 2 * np.arcsin(np.clip(chord / (2 * np.sqrt(2)), 0.0, 1.0))


def _random_times(anim: uani.Animation, fps: float, seed: int) -> np.ndarray:
    keys = np.unique(np.concatenate([np.asarray(t.times, np.float64) for t in anim.tracks]))
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.0, float(anim.length), SAMPLES * 4)
    near = np.abs(t[:, None] - keys[None, :]).min(axis=1) * fps
    return np.sort(t[near > AWAY][:SAMPLES])


def _steps(anim: uani.Animation) -> list[tuple[str, float]]:
    return [(t.name, float(t.times[k])) for t in anim.tracks for k in np.flatnonzero(np.diff(t.times) <= 0)]


def _clean_chains(engine: Engine) -> list[int]:
    """Bones whose bind, and every ancestor's, Blender holds exactly (a rotation with uniform scale): the others
    are approximated on purpose (module docstring of `blender.action`) and measured elsewhere."""
    def clean(i):
        return engine.bind_is_clean(i) and (engine.parents[i] < 0 or clean(engine.parents[i]))
    return [i for i in range(len(engine.names)) if clean(i)]


@pytest.mark.default_leg
@pytest.mark.parametrize("model,clip", MOTIONS)
def test_pose_between_keys_is_the_engines(clean_scene, testdata, model, clip):
    arm, _, engine, anim, mdl = _load(testdata, model, clip)
    times = _random_times(anim, _fps(), seed=52)
    assert len(times) == SAMPLES
    got = _blender_worlds(arm, engine, times)
    want = np.array([engine.worlds(anim, t) for t in times])
    bones = _clean_chains(engine)
    assert len(bones) == (len(engine.names) if model == "Ninja.mdl" else 22)
    height = float(mdl.bbox_max[1] - mdl.bbox_min[1])
    moved = np.linalg.norm(got[:, bones, :3, 3] - want[:, bones, :3, 3], axis=-1)
    assert moved.max() <= POSITION_TOL * height, (clip, moved.max() / height)
    assert _rotation_angles(got[:, bones], want[:, bones]).max() <= ANGLE_TOL


def test_high_jump_plays_both_sides_of_each_step(clean_scene, testdata):
    """Just before a step a bone is where the segment to the step's first key has brought it, just after it near
    the second key: Joint1 (the hips) drops by 0.0197 at the step."""
    arm, _, engine, anim, mdl = _load(testdata, "Ninja.mdl", "Ninja_HighJump")
    steps = _steps(anim)
    assert len(steps) == 15 and {t for _, t in steps} == {np.float32(0.333333).item()}
    fps = _fps()
    step = steps[0][1]
    times = np.array([step - AWAY / fps, step + AWAY / fps])
    got = _blender_worlds(arm, engine, times)
    want = np.array([engine.worlds(anim, t) for t in times])
    hips = engine.names.index("Joint1")
    # the engine's own jump: 0.05 frame before the step the hips are 0.0017 above where they are 0.05 frame after
    assert want[0, hips, 1, 3] - want[1, hips, 1, 3] > 1e-3
    height = float(mdl.bbox_max[1] - mdl.bbox_min[1])
    assert np.abs(got[:, :, :3, 3] - want[:, :, :3, 3]).max() <= POSITION_TOL * height
    assert _rotation_angles(got, want).max() <= ANGLE_TOL


def test_high_jump_curves_hold_each_step(clean_scene, testdata):
    """Each step is a CONSTANT key `STEP_GAP` frames before the step's time, then a key at it."""
    arm, act, _, anim, _ = _load(testdata, "Ninja.mdl", "Ninja_HighJump")
    fps = _fps()
    fc = next(fc for cb in bact._channelbags(act) for fc in cb.fcurves
              if fc.data_path == 'pose.bones["Joint1"].location' and fc.array_index == 2)
    keys = [(k.co[0], k.interpolation) for k in fc.keyframe_points]
    src = anim.tracks[[t.name for t in anim.tracks].index("Joint1")]
    assert len(keys) == src.key_count  # 10: the pair is two keys, not one
    step = float(src.times[2]) * fps
    assert keys[2] == (pytest.approx(step - bact.STEP_GAP, abs=1e-5), "CONSTANT")
    assert keys[3] == (pytest.approx(step, abs=1e-5), "LINEAR")


def _edit_one_key(act, bone: str, index: int) -> float:
    fc = next(fc for cb in bact._channelbags(act) for fc in cb.fcurves
              if fc.data_path == f'pose.bones["{bone}"].location' and fc.array_index == 2)
    fc.keyframe_points[index].co[1] += 0.01
    fc.update()
    return fc.keyframe_points[index].co[0]


def test_edited_stepped_track_keeps_its_steps(clean_scene, testdata, tmp_path):
    """One key of Joint1 edited (the key at 0.75 s): its track comes back with the file's 10 keys (the step
    pair included, first value then second) and differs from the file at that key only; every other track is the
    file's record, bit for bit (`skinbridge diff` names that one key)."""
    arm, act, _, src, _ = _load(testdata, "Ninja.mdl", "Ninja_HighJump")
    _edit_one_key(act, "Joint1", 5)
    written, _ = motion_io.export_actions(bpy.context, str(tmp_path / "out"), arm, "urho3d", "urho3d",
                                          actions=[act])
    path = next(p for p in written if p.endswith(".ani"))
    back = uani.read(open(path, "rb").read())
    assert [t.name for t in back.tracks] == [t.name for t in src.tracks]
    diff = run_cli("diff", testdata / "urho3d" / "Ninja_HighJump.ani", path)
    changed = [line for line in diff.stdout.splitlines() if line.startswith("tracks[")]
    assert len(changed) == 1 and changed[0].startswith("tracks[0] (Joint1): positions[5] "), diff.stdout
    assert "1 difference(s) in 1 record(s); 0 record(s) added, 0 removed" in diff.stdout
    for a, b in zip(src.tracks, back.tracks):
        if a.name != "Joint1":
            assert np.asarray(a.times).tobytes() == np.asarray(b.times).tobytes(), a.name
            assert np.asarray(a.positions).tobytes() == np.asarray(b.positions).tobytes(), a.name
            assert np.asarray(a.rotations).tobytes() == np.asarray(b.rotations).tobytes(), a.name
            continue
        assert b.key_count == a.key_count == 10
        assert np.abs(np.asarray(b.times, np.float64) - np.asarray(a.times, np.float64)).max() <= 1e-6
        assert b.times[2] == b.times[3]
        d = np.abs(np.asarray(b.positions, np.float64) - np.asarray(a.positions, np.float64))
        assert d[5, 1] == pytest.approx(0.01, abs=1e-5)  # Blender's Z is the file's Y
        d[5, 1] = 0.0
        assert d.max() <= 1e-5
        assert np.abs(np.asarray(b.rotations, np.float64) - np.asarray(a.rotations, np.float64)).max() <= 1e-5
