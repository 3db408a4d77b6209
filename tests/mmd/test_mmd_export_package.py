"""What `convert --to pmx` hands an MMD user: the model's name in PMX and VMD, its textures beside it, a height MMD
models are made at (or a warning), bone names that PMX and VMD share when a name is too long for a VMD, and
VMD import on MMD's 30-fps clock. Also the array forms of the Bézier solving VMD export uses, against the
one-at-a-time forms they replace."""
from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.io_pmx.model import pmx  # noqa: E402
from skinbridge.io_pmx.motion import vmd  # noqa: E402
from skinbridge.io_pmx.motion import channels as vc  # noqa: E402
from skinbridge.io_pmx.motion.names import short_names  # noqa: E402

pytestmark = pytest.mark.blender

FOX_LONG = ["b_RightUpperArm_06", "b_RightForeArm_07", "b_LeftUpperArm_09", "b_LeftForeArm_010", "b_LeftFoot01_017",
            "b_LeftFoot02_018", "b_RightLeg01_019", "b_RightLeg02_020", "b_RightFoot01_021", "b_RightFoot02_022"]


def _convert(testdata, out, *args):
    from conftest import run_cli

    r = run_cli("convert", testdata / "gltf" / "Fox.glb", "--to", "pmx", "-o", out, *args)
    assert r.returncode == 0, r.stderr
    return r


def _glb_images(path: pathlib.Path) -> list[bytes]:
    """The bytes of every image embedded in a .glb (its JSON chunk and binary chunk, read directly)."""
    import json
    import struct

    data = path.read_bytes()
    n = struct.unpack_from("<I", data, 12)[0]
    doc = json.loads(data[20:20 + n])
    binary = data[20 + n + 8:]
    out = []
    for image in doc.get("images", []):
        view = doc["bufferViews"][image["bufferView"]]
        start = view.get("byteOffset", 0)
        out.append(binary[start:start + view["byteLength"]])
    return out


def _height(model: pmx.PmxModel) -> float:
    y = model.vertices["position"][:, 1]
    return float(y.max() - y.min())


# -- names, textures, size --------------------------------------------------------------------------------------

@pytest.mark.slow
def test_rigged_fox_named_textured_and_sized(testdata, tmp_path, addon):
    out = tmp_path / "named"
    r = _convert(testdata, out, "--mmd-rig", "-n", "FoxN", "--units-per-metre", "0.25")
    model = pmx.read((out / "FoxN.pmx").read_bytes())
    assert (model.name, model.name_e) == ("FoxN", "FoxN")
    vmds = sorted(out.glob("*.vmd"))
    assert [p.stem for p in vmds] == ["Run", "Survey", "Walk"]
    for p in vmds:
        assert vmd.read_file(p).model_name == "FoxN"
    # the glTF's embedded image, byte for byte, referenced by a path relative to the PMX
    assert model.textures == ["Image_0.png"]
    tex = out / model.textures[model.materials[0].texture]
    assert tex.read_bytes() == _glb_images(testdata / "gltf" / "Fox.glb")[0]
    img = bpy.data.images.load(str(tex))
    assert img.size[0] > 0 and img.size[1] > 0 and len(img.pixels) == img.size[0] * img.size[1] * img.channels
    bpy.data.images.remove(img)
    height = _height(model)
    print(f"\nFox at --units-per-metre 0.25: {height:.4g} MMD units tall")
    assert 2 <= height <= 200
    assert "units tall" not in r.stderr

    # without --units-per-metre: 12.5, far too tall, and the warning says which --units-per-metre fits
    out2 = tmp_path / "default"
    r2 = _convert(testdata, out2, "--mmd-rig")
    tall = pmx.read((out2 / "Fox.pmx").read_bytes())
    assert _height(tall) == pytest.approx(height / 0.25 * 12.5, rel=1e-5)
    warned = [line for line in r2.stderr.splitlines() if "units tall" in line]
    assert len(warned) == 1 and "--units-per-metre" in warned[0]
    suggested = float(re.search(r"--units-per-metre ([0-9.e+-]+)", warned[0]).group(1))
    assert 2 <= _height(tall) * suggested / 12.5 <= 200
    assert tall.name == "Fox"  # the glTF armature is called "root": the file's name instead


# -- long names: one short name in PMX and VMD ------------------------------------------------------------------

def test_short_names_are_unique_and_fit():
    names = ["b_LeftFoot01_017", "b_LeftFoot01_018", "b_LeftFoot01_0", "short", "左足首ＩＫ親ボーン長い"]
    got = short_names(names)
    assert set(got) == {"b_LeftFoot01_017", "b_LeftFoot01_018", "左足首ＩＫ親ボーン長い"}
    assert len(set(got.values()) | {"b_LeftFoot01_0", "short"}) == 5
    for short in got.values():
        assert vmd.name_problem(short) is None
    assert got["b_LeftFoot01_017"] == "b_LeftFoot01_01"
    assert got["b_LeftFoot01_018"] == "b_LeftFoot01_~2"  # its 15-byte cut is the previous one's
    assert got["左足首ＩＫ親ボーン長い"] == "左足首ＩＫ親ボ"  # whole characters: 14 bytes
    # a namespace goes first; a name already taken gets a numbered cut
    assert short_names(["mixamorig:RightUpLeg", "mixamorig:LeftForeArm"], {"LeftForeArm"}) == {
        "mixamorig:RightUpLeg": "RightUpLeg", "mixamorig:LeftForeArm": "LeftForeArm~2"}


@pytest.mark.slow
def test_fox_without_rig_every_key_lands_on_a_bone(testdata, tmp_path, addon):
    from skinbridge.io_pmx.blender_side import blender_io
    from skinbridge.io_pmx.blender_side import blender_motion_import

    out = tmp_path / "plain"
    r = _convert(testdata, out)
    model = pmx.read((out / "Fox.pmx").read_bytes())
    by_english = {b.name_e: b.name for b in model.bones}
    for full in FOX_LONG:  # the full name stays as the English name
        assert vmd.name_problem(by_english[full]) is None
    long_warnings = [line for line in r.stderr.splitlines() if "longer than" in line]
    assert len(long_warnings) == len(FOX_LONG)
    assert sorted(re.search(r"bone name '([^']+)'", w).group(1) for w in long_warnings) == sorted(FOX_LONG)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    arm = blender_io.import_pmx(bpy.context, str(out / "Fox.pmx")).armature
    total = 0
    for p in sorted(out.glob("*.vmd")):
        motion = vmd.read_file(p)
        names, _ = vmd.distinct_names(motion.bone_keys["name"])
        assert set(names) <= {b.name for b in model.bones}, p.name
        acts, warnings = blender_motion_import.import_vmd(bpy.context, [str(p)], arm)
        assert not [w for w in warnings if "not in" in w], warnings
        total += len(motion.bone_keys)
    assert total > 0
    # compare through what PMX holds: bones matched by English name, then name; rest orientations skipped
    from conftest import run_cli

    r = run_cli("compare", testdata / "gltf" / "Fox.glb", out / "Fox.pmx", "--rest")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not compared (not held by the file)" in r.stdout and "24 by the same name" in r.stdout, r.stdout


# -- VMD import on MMD's clock ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_vmd_import_sets_30_fps_and_the_frame_range(testdata, addon, tmp_path):
    from skinbridge.io_pmx.blender_side import blender_io
    from skinbridge.io_pmx.blender_side import blender_motion_import
    from support.vmd_motion import generated_motion

    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    assert (scene.render.fps, scene.frame_start, scene.frame_end) == (24, 1, 250)
    luka = blender_io.import_pmx(bpy.context, str(testdata / "pmx" / "mmdtools_megurine_luka.pmx")).armature
    motion, _ = generated_motion()  # keys of Luka's bones on frames up to about 100, Bézier blocks
    path = tmp_path / "gen.vmd"
    path.write_bytes(vmd.write(motion))
    acts, _ = blender_motion_import.import_vmd(bpy.context, [str(path)], luka)
    assert scene.render.fps / scene.render.fps_base == 30
    frames = vmd.all_frames(motion)
    assert (scene.frame_start, scene.frame_end) == (int(frames.min()), int(frames.max()))
    assert frames.max() > 30
    file_frames = set(motion.bone_keys["frame"].tolist())
    keyed = set()
    for fc in bact_fcurves(acts[0]):
        for kp in fc.keyframe_points:
            if kp.type == "KEYFRAME":
                assert kp.co[0] == round(kp.co[0]), fc.data_path
                keyed.add(int(kp.co[0]))
    assert file_frames <= keyed <= set(frames.tolist())  # (and the morph keys' frames)
    # off: the scene keeps its 24 fps and range, and keys land on 24/30 of their frame
    bpy.ops.wm.read_factory_settings(use_empty=True)
    luka = blender_io.import_pmx(bpy.context, str(testdata / "pmx" / "mmdtools_megurine_luka.pmx")).armature
    acts, _ = blender_motion_import.import_vmd(bpy.context, [str(path)], luka, mmd_time=False)
    scene = bpy.context.scene
    assert (scene.render.fps, scene.frame_start, scene.frame_end) == (24, 1, 250)
    keyed = {round(float(kp.co[0]), 3) for fc in bact_fcurves(acts[0]) for kp in fc.keyframe_points
             if kp.type == "KEYFRAME"}
    assert {round(f * 0.8, 3) for f in file_frames} <= keyed


def bact_fcurves(act):
    for layer in act.layers:
        for strip in layer.strips:
            for cb in strip.channelbags:
                yield from cb.fcurves


# -- Bézier solving on arrays ----------------------------------------------------------------------------------

def _bisect(p, axis, target):  # the one-at-a-time solver the array form replaces
    lo, hi = 0.0, 1.0
    for _ in range(56):
        u = 0.5 * (lo + hi)
        if vc.bezier_point(p, np.array([u]))[0, axis] < target:
            lo = u
        else:
            hi = u
    return 0.5 * (lo + hi)


def test_array_solving_equals_one_at_a_time():
    rng = np.random.default_rng(7)
    n = 200
    p = np.zeros((n, 4, 2))
    p[:, 1:3] = rng.uniform(0, 1, (n, 2, 2))
    p[:, 3] = 1.0
    p[:, :, 0] = np.sort(p[:, :, 0], axis=1)  # monotone in x
    p[:, :, 0] = p[:, :, 0] * rng.uniform(1, 10, (n, 1)) + rng.uniform(-5, 5, (n, 1))
    p[:, :, 1] = p[:, :, 1] * rng.uniform(-3, 3, (n, 1)) + rng.uniform(-1, 1, (n, 1))
    targets = p[:, 0, 0] + (p[:, 3, 0] - p[:, 0, 0]) * rng.uniform(0, 1, n)
    u = vc.solve_many(p, 0, targets)
    expected = np.array([_bisect(p[i], 0, targets[i]) for i in range(n)])
    np.testing.assert_allclose(u, expected, atol=1e-12)
    ua = np.where(rng.uniform(size=n) < 0.3, 0.0, rng.uniform(0, 0.5, n))
    ub = np.where(rng.uniform(size=n) < 0.3, 1.0, rng.uniform(0.5, 1, n))
    split = vc.split_many(p, ua, ub)
    for i in range(n):
        np.testing.assert_allclose(split[i], vc.split_bezier(p[i], ua[i], ub[i]), atol=1e-12)
    b, off, valid = vc.bytes_many(split)
    for i in range(n):
        one, one_off = vc.bytes_of(split[i])
        assert valid[i] == (one is not None)
        if one is not None:
            assert b[i].tolist() == one.tolist() and off[i] == one_off


def test_curve_segments_equal_segment(addon):
    from skinbridge.io_pmx.blender_side.blender_motion_curves import Curve

    bpy.ops.wm.read_factory_settings(use_empty=True)
    ob = bpy.data.objects.new("o", None)
    bpy.context.scene.collection.objects.link(ob)
    for f, z, interp in ((0, 0.0, "BEZIER"), (7, 1.0, "LINEAR"), (13, 1.0, "CONSTANT"), (20, -2.0, "CONSTANT"),
                         (26, 3.0, "BEZIER"), (40, 0.5, "SINE"), (45, 1.0, "BEZIER")):
        ob.location.z = z
        ob.keyframe_insert("location", index=2, frame=f)
        curve = ob.animation_data.action.layers[0].strips[0].channelbags[0].fcurves[0]
        curve.keyframe_points[-1].interpolation = interp
    fc = ob.animation_data.action.layers[0].strips[0].channelbags[0].fcurves[0]
    c = Curve(fc)
    xs = np.array([-3.0, 0.0, 2.5, 7.0, 9.0, 13.0, 16.0, 20.0, 26.0, 30.0, 40.0, 42.0, 45.0, 48.0])
    xa, xb = xs[:-1], xs[1:]
    xa = np.concatenate([xa, [0.0, 3.0]])
    xb = np.concatenate([xb, [20.0, 5.0]])
    seg, status = c.segments(xa, xb)
    for k in range(len(xa)):
        one = c.segment(float(xa[k]), float(xb[k]))
        if one is None:
            assert status[k] == Curve.KEY_INSIDE, k
        elif isinstance(one, str):
            assert status[k] == Curve.UNHELD, k
        else:
            assert status[k] == Curve.SEGMENT, k
            np.testing.assert_allclose(seg[k], one, atol=1e-9)
