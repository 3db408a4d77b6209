"""Rigged exports played by an MMD runtime that is not ours: babylon-mmd's `MmdRuntime` on @babylonjs/core's
`NullEngine` in node (both pinned in tools/package.json), IK on, physics off, one `seekAnimation` per frame
(tests/js/mmd_runtime_pose.mjs). At every whole and half frame its feet, knees, hips, hands and head stay
within 1 % of the model's height of the source armature evaluated in Blender; every knee key lies inside the
knee limit written with it; the demo's knees bend backward, as human knees do."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.app.options import ConvertOptions  # noqa: E402
from skinbridge.io_pmx.model import pmx  # noqa: E402
from skinbridge.io_pmx.motion import vmd  # noqa: E402
from skinbridge.io_pmx.motion import channels  # noqa: E402
from skinbridge.io_pmx.rig.knees import knee_links, twist_x  # noqa: E402
from support.babylon import runtime_positions  # noqa: E402

pytestmark = pytest.mark.blender

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOL = 0.01  # of the model's height
CHECKED = [s + n for s in "左右" for n in ("足首", "ひざ", "足", "手首")] + ["頭"]


def blender_positions(arm, act, frames, names, scale) -> np.ndarray:
    """(F, B, 3) heads of the source bones `names` at VMD frames `frames` as Blender evaluates the action, in
    MMD axes and units."""
    scene = bpy.context.scene
    arm.animation_data.action = act
    arm.animation_data.use_nla = False
    fps = scene.render.fps / scene.render.fps_base
    out = np.zeros((len(frames), len(names), 3))
    world = np.array(arm.matrix_world)
    for i, f in enumerate(frames):
        x = f * fps / 30.0
        base = int(np.floor(x + 1e-9))
        scene.frame_set(base, subframe=float(x - base))
        for j, n in enumerate(names):
            out[i, j] = (world @ np.append(np.array(arm.pose.bones[n].head), 1.0))[:3]
    return channels.positions_to_mmd(out, scale)


def _source_names(model: pmx.PmxModel) -> dict[str, str]:
    """MMD name → the source bone it was made from (the rig keeps that as the English name)."""
    return {b.name: b.name_e for b in model.bones if b.name in CHECKED}


def _height(model: pmx.PmxModel) -> float:
    y = model.vertices["position"][:, 1]
    return float(y.max() - y.min())


def _check_knee_keys(model: pmx.PmxModel, motion: vmd.Motion) -> dict[str, np.ndarray]:
    """Every knee key inside the written limit (a rotation about X only, its angle within [lower, upper])."""
    angles = {}
    for knee, links in knee_links(model).items():
        sel = motion.bone_keys["name"] == vmd.encode_name(knee)
        rot = motion.bone_keys["rotation"][sel].astype(np.float64)
        a = twist_x(rot)
        assert np.abs(rot[:, 1:3]).max(initial=0) <= 1e-6, knee
        for link in links:
            assert (a >= float(link.lower[0]) - 1e-6).all() and (a <= float(link.upper[0]) + 1e-6).all(), knee
        angles[knee] = a
    return angles


def _compare(model_path, motion_path, arm, act, scale, label) -> float:
    model = pmx.read(pathlib.Path(model_path).read_bytes())
    motion = vmd.read_file(motion_path)
    last = int(motion.bone_keys["frame"].max())
    frames = np.arange(0, 2 * last + 1) / 2.0  # every whole and half frame
    names = [n for n in CHECKED if n in _source_names(model)]
    ours = runtime_positions(model_path, motion_path, frames, names)
    source = blender_positions(arm, act, frames, [_source_names(model)[n] for n in names], scale)
    err = np.linalg.norm(ours - source, axis=2)
    height = _height(model)
    f, b = np.unravel_index(np.argmax(err), err.shape)
    print(f"\n{label}: largest distance {err.max():.4g} MMD units = {err.max() / height:.3%} of the height "
          f"{height:.4g}, at frame {frames[f]} on {names[b]}")
    assert err.max() <= TOL * height, f"{label}: {names[b]} at frame {frames[f]}"
    return float(err.max() / height)


@pytest.mark.parametrize("action", ["Walk", "Survey", "Run"])
@pytest.mark.slow
def test_fox_rigged_plays_like_the_source(testdata, tmp_path, addon, action):
    from conftest import run_cli

    out = tmp_path / "fox"
    r = run_cli("convert", testdata / "gltf" / "Fox.glb", "--to", "pmx", "--mmd-rig", "-o", out)
    assert r.returncode == 0, r.stderr
    model = pmx.read((out / "Fox.pmx").read_bytes())
    angles = _check_knee_keys(model, vmd.read_file(out / f"{action}.vmd"))
    # Fox's knees mostly bend back: the rig's limit [−180°, −0.5°], whose inner edge is widened past the keys
    # where the source swings a shin forward (Walk, Run; the export says so, with the frames)
    for knee, links in knee_links(model).items():
        assert float(links[0].lower[0]) < -3.14, knee
        assert len(angles[knee]) and (angles[knee] < 0).sum() > (angles[knee] > 0).sum()
    both = [line for line in r.stderr.splitlines() if "bends both ways" in line and f": {action}: " in line]
    assert len(both) == (0 if action == "Survey" else 2), both
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.import_scene.gltf(filepath=str(testdata / "gltf" / "Fox.glb")) == {"FINISHED"}
    arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    _compare(out / "Fox.pmx", out / f"{action}.vmd", arm, bpy.data.actions[action], 0.08, f"Fox {action}")


def test_demo_walk_plays_like_the_source_and_bends_knees_backward(clean_scene, tmp_path):
    from skinbridge.app import demo
    from skinbridge.blender import scene as bscene
    from skinbridge.io_pmx.blender_side import blender_io

    arm = bscene.build_scene(bpy.context, demo.humanoid_scene(), "Humanoid").armature
    act = demo.add_walk(arm)
    arm.animation_data.use_nla = False
    # the source: the shin swings back (+Y; the model faces −Y) of the line from hip to ankle's rest
    scene = bpy.context.scene
    for f in range(1, 26, 3):
        scene.frame_set(f)
        for side in ("Left", "Right"):
            knee = arm.pose.bones[demo.PREFIX + side + "Leg"]
            ankle = arm.pose.bones[demo.PREFIX + side + "Foot"]
            shin = np.array(ankle.head) - np.array(knee.head)
            thigh = np.array(knee.head) - np.array(arm.pose.bones[demo.PREFIX + side + "UpLeg"].head)
            # the shin turned back (toward +Y) from the thigh's direction: thigh × shin points along +X
            assert thigh[1] * shin[2] - thigh[2] * shin[1] > 0, (f, side)
    options = ConvertOptions(target="pmx", mmd_rig=True)
    written, warnings = blender_io.export_target(bpy.context, str(tmp_path), "Humanoid", options)
    assert not [w for w in warnings if "bends" in w], warnings
    model = pmx.read((tmp_path / "Humanoid.pmx").read_bytes())
    motion = vmd.read_file(tmp_path / "Walk.vmd")
    angles = _check_knee_keys(model, motion)
    for knee, links in knee_links(model).items():  # the rig's human knee limit, [−180°, −0.5°]
        assert float(links[0].upper[0]) < 0, knee
        assert len(angles[knee]) and (angles[knee] < 0).all()
    _compare(tmp_path / "Humanoid.pmx", tmp_path / "Walk.vmd", arm, act, 0.08, "demo Walk")
