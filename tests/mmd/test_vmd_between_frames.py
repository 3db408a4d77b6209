"""VMD motions exact between frames (issue 52 item 3, the VMD part).

A VMD key's block is a Bézier per channel; MMD turns a rotation between two keys spherically (slerp) with the
Bézier as the weight, while Blender blends quaternion components and normalises. Import writes the Béziers as
F-curve handles and cuts a rotation segment with GENERATED keys where the component blend would part from slerp
(docs/mmd.md §4.6). Here Blender's pose at 200 seeded random times between keys is compared with babylon-mmd's
`MmdRuntime` (tests/js/mmd_runtime_world.mjs: physics off, one `seekAnimation` per fractional frame), bone by
bone in world space, for every bone outside IK chains (Blender's IK and MMD's CCD IK differ, docs/mmd.md §4.6):
within 1e-5 of the model's height and 1e-4 rad. Luka plays the physics-toggle sample (in babylon-mmd as it is)
and a generated motion whose keys turn 40–120° apart, which needs GENERATED keys (without them it misses the bar
by two orders, shown below); its steep curves need the runtime's curve weight solved exactly
(tests/js/exact_bezier_hook.mjs). Unchanged import → export is byte-identical; one edited rotation key changes
only that bone's keys in the file, as `skinbridge diff` reports.
"""
from __future__ import annotations

import json
import math
import pathlib
import subprocess

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.io_pmx.blender_side import blender_io  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_motion_export  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_motion_import  # noqa: E402
from skinbridge.io_pmx.model import pmx  # noqa: E402
from skinbridge.io_pmx.model.pmx import BoneFlag  # noqa: E402
from skinbridge.io_pmx.motion import channels as vc  # noqa: E402
from skinbridge.io_pmx.motion import vmd  # noqa: E402
from support.tools import NODE_MODULES, node_with_babylon  # noqa: E402
from support.vmd_motion import generated_motion  # noqa: E402

pytestmark = [pytest.mark.blender, pytest.mark.default_leg]

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "js" / "mmd_runtime_world.mjs"
LUKA = "mmdtools_megurine_luka.pmx"
SAMPLE = "babylonmmd_physics_toggle_test_yyb10th.vmd"
SCALE = 0.08  # metres per MMD unit of the imported model
TIMES = 200
POSITION_TOL = 1e-5  # of the model's height
ANGLE_TOL = 1e-4  # radians
SWAP = np.array([[1.0, 0, 0], [0, 0, 1], [0, 1, 0]])  # MMD axes ⇄ Blender axes (x, y, z) → (x, z, y)


@pytest.fixture
def luka(clean_scene, testdata):
    return blender_io.import_pmx(bpy.context, str(testdata / "pmx" / LUKA), physics=False).armature


def _random_times(motion: vmd.Motion, seed: int) -> np.ndarray:
    """`TIMES` seeded random VMD frames between the first and last bone key, each a float32 (the time Blender
    evaluates at is a float32 frame; babylon-mmd then evaluates at the very same time)."""
    f = motion.bone_keys["frame"]
    t = np.random.default_rng(seed).uniform(float(f.min()), float(f.max()), TIMES)
    return np.sort(t.astype(np.float32).astype(np.float64))


def _outside_ik(model: pmx.PmxModel) -> np.ndarray:
    """Bones no IK moves: not a link of an IK chain, nor below one through a parent or an append parent."""
    n = len(model.bones)
    moved = np.zeros(n, bool)
    for b in model.bones:
        if b.ik is not None:
            moved[[link.bone for link in b.ik.links]] = True
    for _ in range(n):
        before = moved.copy()
        for i, b in enumerate(model.bones):
            appends = int(b.flags) & (BoneFlag.APPEND_ROTATE | BoneFlag.APPEND_MOVE)
            up = [b.parent] + ([b.append_parent] if appends and b.append_parent is not None else [])
            moved[i] |= any(p is not None and 0 <= p < n and moved[p] for p in up)
        if (moved == before).all():
            break
    return ~moved


def _babylon_world(model_path, motion_path, times, tmp_path, exact: bool) -> tuple[list[str], np.ndarray]:
    """Bone names and (T, B, 4, 4) world matrices (column vectors, MMD axes and units) from babylon-mmd;
    `exact`: its curve weights solved to float64 precision (tests/js/exact_bezier_hook.mjs)."""
    node = node_with_babylon()
    if not (NODE_MODULES / "@babylonjs" / "core" / "package.json").is_file():
        pytest.fail("@babylonjs/core is not installed in tools/node_modules (bash tools/run runs npm install)")
    out = tmp_path / "world.f64"
    args = [node, str(SCRIPT), str(NODE_MODULES), str(model_path), str(motion_path),
            json.dumps([float(t) for t in times]), str(out)] + (["--exact-bezier"] if exact else [])
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    names = json.loads(done.stdout[done.stdout.index("{"):])["bones"]
    m = np.fromfile(out, "<f8").reshape(len(times), len(names), 4, 4)
    return names, np.swapaxes(m, -1, -2)  # babylon stores row-vector matrices: transposed, translation in row 3


def _blender_world(arm, names, times) -> tuple[np.ndarray, np.ndarray]:
    """Heads (T, B, 3) and deformation rotations (T, B, 3, 3) of the pose bones `names` in world space as
    Blender evaluates the scene at VMD frames `times` (the scene at 30 fps)."""
    scene = bpy.context.scene
    assert scene.render.fps == 30 and scene.render.fps_base == 1.0
    world = np.array(arm.matrix_world)
    pbs = [arm.pose.bones[n] for n in names]
    inv_rest = np.linalg.inv(np.array([np.array(pb.bone.matrix_local) for pb in pbs]))
    heads = np.zeros((len(times), len(names), 3))
    rots = np.zeros((len(times), len(names), 3, 3))
    for i, t in enumerate(times):
        base = math.floor(t)
        scene.frame_set(base, subframe=float(t - base))
        pose = np.array([np.array(pb.matrix) for pb in pbs])
        deform = world @ pose @ inv_rest @ np.linalg.inv(world)
        heads[i] = (pose[:, :, 3] @ world.T)[:, :3]
        rots[i] = deform[:, :3, :3]
    return heads, rots


def _angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The angle of the rotation between rotation matrices a and b (…, 3, 3): ‖aᵀb − I‖_F = 2√2·sin(θ/2)."""
    d = np.linalg.norm(np.einsum("...ji,...jk->...ik", a, b) - np.eye(3), axis=(-2, -1))
    return 2 * np.arcsin(np.minimum(1.0, d / (2 * math.sqrt(2))))


def _compare(arm, model_path, motion_path, times, tmp_path, label, exact: bool = True) -> tuple[float, float]:
    """(largest head distance / height, largest angle) over the bones outside IK chains at `times`."""
    model = pmx.read(pathlib.Path(model_path).read_bytes())
    names, ref = _babylon_world(model_path, motion_path, times, tmp_path, exact)
    assert names == [b.name for b in model.bones]
    keep = np.flatnonzero(_outside_ik(model))
    assert 150 <= len(keep) < len(names)  # Luka: 162 of 188 bones, the legs' IK chains left out
    heads, rots = _blender_world(arm, [names[i] for i in keep], times)
    ref = ref[:, keep]
    ref_heads = ref[..., :3, 3] @ SWAP.T * SCALE
    ref_rots = SWAP @ ref[..., :3, :3] @ SWAP
    y = model.vertices["position"][:, 1]
    height = float(y.max() - y.min())
    dist = np.linalg.norm(heads - ref_heads, axis=-1) / SCALE / height
    ang = _angle(rots, ref_rots)
    for what, err in (("distance / height", dist), ("angle", ang)):
        t, b = np.unravel_index(np.argmax(err), err.shape)
        print(f"\n{label}: largest {what} {err.max():.3g} at frame {times[t]:.4f} on {names[keep[b]]}")
    return float(dist.max()), float(ang.max())


def _rotation_key_types(act) -> set[str]:
    return {k.type for layer in act.layers for strip in layer.strips for cb in strip.channelbags
            for fc in cb.fcurves if fc.data_path.endswith("rotation_quaternion") for k in fc.keyframe_points}


def test_sample_plays_as_babylon_mmd_between_frames(luka, testdata, tmp_path):
    path = testdata / "pmx" / SAMPLE
    acts, _ = blender_motion_import.import_vmd(bpy.context, [str(path)], luka)
    times = _random_times(vmd.read_file(path), seed=52)
    dist, ang = _compare(luka, testdata / "pmx" / LUKA, path, times, tmp_path, SAMPLE, exact=False)
    assert dist <= POSITION_TOL and ang <= ANGLE_TOL
    out = tmp_path / "back.vmd"
    assert blender_motion_export.export_vmd(bpy.context, str(out), luka, acts[0]) == []
    assert out.read_bytes() == path.read_bytes()


def _generated(tmp_path) -> pathlib.Path:
    path = tmp_path / "turns.vmd"
    path.write_bytes(vmd.write(generated_motion()[0]))
    return path


def test_wide_turns_play_as_babylon_mmd_between_frames(luka, testdata, tmp_path):
    path = _generated(tmp_path)
    acts, _ = blender_motion_import.import_vmd(bpy.context, [str(path)], luka)
    assert _rotation_key_types(acts[0]) == {"KEYFRAME", "GENERATED"}  # slerp needs keys the file lacks
    dist, ang = _compare(luka, testdata / "pmx" / LUKA, path, _random_times(vmd.read_file(path), seed=53),
                         tmp_path, "wide turns")
    assert dist <= POSITION_TOL and ang <= ANGLE_TOL
    out = tmp_path / "back.vmd"
    blender_motion_export.export_vmd(bpy.context, str(out), luka, acts[0])
    assert out.read_bytes() == path.read_bytes()  # the GENERATED keys are not written


def test_component_blend_alone_misses_the_bar(luka, testdata, tmp_path, monkeypatch):
    """The comparison above can fail: the same motion imported without GENERATED keys (each rotation segment
    one Bézier per quaternion component, as Blender blends them) parts from MMD's slerp by far more."""
    monkeypatch.setattr(vc, "max_half_angle", lambda tolerance: math.pi)
    path = _generated(tmp_path)
    acts, _ = blender_motion_import.import_vmd(bpy.context, [str(path)], luka)
    assert _rotation_key_types(acts[0]) == {"KEYFRAME"}
    dist, ang = _compare(luka, testdata / "pmx" / LUKA, path, _random_times(vmd.read_file(path), seed=53),
                         tmp_path, "component blend")
    assert ang > 100 * ANGLE_TOL and dist > 100 * POSITION_TOL


def test_one_edited_rotation_key_changes_only_its_bone(luka, testdata, tmp_path):
    from conftest import run_cli

    path = _generated(tmp_path)
    acts, _ = blender_motion_import.import_vmd(bpy.context, [str(path)], luka)
    act = acts[0]
    motion = vmd.read_file(path)
    neck = sorted(int(k["frame"]) for k in motion.bone_keys if vmd.decode_name(bytes(k["name"])) == "首")
    frame = neck[2]
    pb = luka.pose.bones["首"]
    bpy.context.scene.frame_set(frame)
    q = np.array(pb.rotation_quaternion)
    turn = np.array([math.cos(0.15), math.sin(0.15), 0.0, 0.0])  # 0.3 rad more about the bone's X
    pb.rotation_quaternion = (q[0] * turn[0] - q[1] * turn[1], q[0] * turn[1] + q[1] * turn[0],
                              q[2] * turn[0] + q[3] * turn[1], q[3] * turn[0] - q[2] * turn[1])
    pb.keyframe_insert("rotation_quaternion", frame=frame)  # as the user keys it: all four components
    out = tmp_path / "edited.vmd"
    warnings = blender_motion_export.export_vmd(bpy.context, str(out), luka, act)
    r = run_cli("diff", path, out, "--json")
    assert r.returncode == 1, r.stderr
    found = json.loads(r.stdout)
    assert found["removed"] == 0 and found["total"] == len(found["differences"])
    for d in found["differences"]:  # "bone_keys[8] (首)", or "bone_keys (added: 首, 首, 首, …)" for the count
        assert d["record"].startswith("bone_keys"), d
        named = d["record"].split("(", 1)[1].rstrip(")").removeprefix("added: ").split(", ")
        assert set(named) - {"…"} == {"首"}, d
    # in the file: the edited key's record changed in place, the GENERATED keys of the two segments it bounds
    # became 首 keys (the export says so), every other record is the file's, byte for byte
    back = vmd.read_file(out)
    assert len(back.bone_keys) == len(motion.bone_keys) + found["added"]
    kept = back.bone_keys[:len(motion.bone_keys)]
    changed = np.flatnonzero([a.tobytes() != b.tobytes() for a, b in zip(motion.bone_keys, kept)])
    assert [(vmd.decode_name(bytes(k["name"])), int(k["frame"])) for k in kept[changed]] == [("首", frame)]
    added = back.bone_keys[len(motion.bone_keys):]
    assert {vmd.decode_name(bytes(n)) for n in added["name"]} == {"首"}
    assert ((added["frame"] > neck[1]) & (added["frame"] < neck[3])).all()
    # both segments the key bounds: Blender plays their GENERATED keys, still on the old path, so they are kept
    assert (added["frame"] < frame).any() and (added["frame"] > frame).any()
    assert any("GENERATED keys in edited segments written as keys: 首" in w for w in warnings), warnings
