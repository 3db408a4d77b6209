"""VMD through the core model without Blender: the mapping (`io_pmx.motion.convert`), the motion compare
(`core.compare.compare_motions`) and the VMD checker (`io_pmx.motion.check`)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from skinbridge.core import model as cm
from skinbridge.core.compare import compare_motions, is_motion, rotation_angles
from skinbridge.core.transforms import quat_multiply
from skinbridge.io_pmx.motion import vmd
from skinbridge.io_pmx.motion import check as vmd_check
from skinbridge.io_pmx.motion import convert as motion_convert
from support.bytes_compare import assert_same_bytes

SHAGAMU = "mlibgo_shagamu.vmd"
PHYSICS = "babylonmmd_physics_toggle_test_yyb10th.vmd"


def _read(testdata, name) -> bytes:
    return (testdata / "pmx" / name).read_bytes()


def _turn_xyzw(q_xyzw, angle: float, axis=(0.3, -0.5, 0.8)) -> np.ndarray:
    """q followed by a turn of `angle` about `axis` (MMD's x, y, z, w order)."""
    axis = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    r = np.concatenate([[math.cos(angle / 2)], axis * math.sin(angle / 2)])
    q = np.asarray(q_xyzw, np.float64)
    w = quat_multiply(np.array([q[3], q[0], q[1], q[2]]), r)
    return np.array([w[1], w[2], w[3], w[0]])


def _unique_key(m: vmd.Motion) -> int:
    """A bone key that is the only key of its bone on its frame, with a rotation that is not all zeros."""
    names, which = vmd.distinct_names(m.bone_keys["name"])
    pairs = list(zip(which.tolist(), m.bone_keys["frame"].tolist()))
    for i, pair in enumerate(pairs):
        if pairs.count(pair) == 1 and np.any(m.bone_keys["rotation"][i] != 0) and m.bone_keys["rotation"][i][3] < 0.99:
            return i
    raise AssertionError("no key to turn")


@pytest.mark.parametrize("name", [SHAGAMU, PHYSICS])
def test_mapping_gives_the_keys_of_the_file_and_back(testdata, name):
    data = _read(testdata, name)
    m = vmd.read(data)
    scene, warnings = motion_convert.load_vmd(f"/x/{name}", data, True)
    assert warnings == []
    assert is_motion(scene) and scene.skeleton is None and scene.meshes == []
    [anim] = scene.animations
    assert anim.name == name[:-4]
    bones, which = vmd.distinct_names(m.bone_keys["name"])
    morphs, _ = vmd.distinct_names(m.morph_keys["name"])
    assert [t.bone for t in anim.tracks] == bones
    assert [t.shape_key for t in anim.morph_tracks] == morphs
    assert anim.length == int(vmd.all_frames(m).max()) / 30
    # one bone's keys, converted by hand: (x, y, z) → (x, z, y) × 0.08, (x, y, z, w) → (w, −x, −z, −y)
    j = int(which[-1])
    sel = np.flatnonzero(which == j)
    sel = sel[np.argsort(m.bone_keys["frame"][sel], kind="stable")]
    track = anim.tracks[j]
    k = m.bone_keys[sel]
    np.testing.assert_array_equal(track.translation_times, k["frame"] / 30.0)
    np.testing.assert_array_equal(track.translations, k["position"][:, [0, 2, 1]].astype(np.float64) * 0.08)
    q = k["rotation"].astype(np.float64)
    np.testing.assert_array_equal(track.rotations, np.stack([q[:, 3], -q[:, 0], -q[:, 2], -q[:, 1]], 1))
    assert track.scales is None
    # and back: the same keys (in bone then frame order), the same header, camera, light and property keys
    back, more = motion_convert.to_motion(anim)
    assert more == []
    order = np.lexsort((m.bone_keys["frame"], which))
    assert back.bone_keys.tobytes() == m.bone_keys[order].tobytes()
    assert back.camera_keys.tobytes() == m.camera_keys.tobytes()
    assert len(back.property_keys) == len(m.property_keys)
    if name == SHAGAMU:  # stored in that order already: byte-identical
        assert_same_bytes(vmd.write(back), data, vmd.read)


@pytest.mark.slow
def test_identical_motions_compare_at_zero(testdata):
    data = _read(testdata, PHYSICS)
    a, _ = motion_convert.load_vmd("a.vmd", data, True)
    back, _ = motion_convert.to_motion(a.animations[0])
    b, _ = motion_convert.load_vmd("b.vmd", vmd.write(back), True)  # another key order, another name
    result = compare_motions(a, b, pos_tol=0.0, rot_tol=0.0, scale_tol=0.0, weight_tol=0.0, time_tol=0.0)
    assert result.same, result.lines()
    assert "439 bone tracks in A, 439 in B, 439 by name; 100 morph tracks in A, 100 in B" in "\n".join(result.notes)


@pytest.mark.slow
def test_a_key_turned_by_a_hundredth_of_a_radian_is_named_with_its_frame(testdata):
    data = _read(testdata, PHYSICS)
    m = vmd.read(data)
    i = _unique_key(m)
    bone, frame = vmd.decode_name(bytes(m.bone_keys["name"][i])), int(m.bone_keys["frame"][i])
    m.bone_keys["rotation"][i] = _turn_xyzw(m.bone_keys["rotation"][i], 0.01)
    a, _ = motion_convert.load_vmd("a.vmd", data, True)
    b, _ = motion_convert.load_vmd("b.vmd", vmd.write(m), True)
    result = compare_motions(a, b, pos_tol=0.0, rot_tol=1e-3)
    [d] = result.differences
    assert d.element.endswith(f"bone {bone}") and d.field == "rotation"
    assert f"at frame {frame} " in d.message
    assert d.value == pytest.approx(0.01, abs=1e-6)  # float32 storage of the turned quaternion
    assert compare_motions(a, b, pos_tol=0.0, rot_tol=0.011).same


def test_a_moved_key_is_measured_in_file_units(testdata):
    data = _read(testdata, SHAGAMU)
    m = vmd.read(data)
    names = [vmd.decode_name(bytes(n)) for n in m.bone_keys["name"]]
    i = names.index("センター")
    m.bone_keys["position"][i] += np.float32([0.0, 3.0, 4.0])  # 5 MMD units
    a, _ = motion_convert.load_vmd("a.vmd", data, True)
    b, _ = motion_convert.load_vmd("b.vmd", vmd.write(m), True)
    [d] = compare_motions(a, b, pos_tol=4.9, rot_tol=0.0).differences
    assert d.element.endswith("bone センター") and d.field == "translation"
    assert d.value == pytest.approx(5.0, rel=1e-6) and "at frame 0 " in d.message
    assert compare_motions(a, b, pos_tol=5.001, rot_tol=0.0).same


def _scale_motion(scale: float) -> cm.Scene:
    times = np.array([0.0, 1.0])
    track = cm.Track("arm", times, np.zeros((2, 3)), times, np.tile([1.0, 0, 0, 0], (2, 1)), times,
                     np.array([[1.0, 1, 1], [scale, 1, 1]]))
    return cm.Scene(animations=[cm.Animation("Grow", 1.0, [track], extras={"fps": 30})])


def test_a_scale_difference_of_a_hundredth_is_reported_naming_the_bone():
    result = compare_motions(_scale_motion(1.0), _scale_motion(1.01), pos_tol=0.0, rot_tol=0.0)
    [d] = result.differences
    assert (d.element, d.field) == ("animation Grow bone arm", "scale")
    assert d.value == pytest.approx(0.01) and "at frame 30 " in d.message
    assert compare_motions(_scale_motion(1.0), _scale_motion(1.0), pos_tol=0.0, rot_tol=0.0).same


@pytest.mark.slow
def test_morph_weights_tracks_and_curves_are_compared(testdata):
    data = _read(testdata, PHYSICS)
    m = vmd.read(data)
    a, _ = motion_convert.load_vmd("a.vmd", data, True)
    # a morph weight changed
    w = m.morph_keys.copy()
    w["weight"][0] += np.float32(0.25)
    b, _ = motion_convert.load_vmd("b.vmd", vmd.write(vmd.Motion(bone_keys=m.bone_keys, morph_keys=w)), True)
    [d] = compare_motions(a, b, 0.0, 0.0).differences
    assert d.element.endswith(f"morph {vmd.decode_name(bytes(w['name'][0]))}") and d.field == "weight"
    assert d.value == pytest.approx(0.25, abs=1e-6) and f"at frame {int(w['frame'][0])} " in d.message
    # a bone's keys missing from B
    names = np.array([vmd.decode_name(bytes(n)) for n in m.bone_keys["name"]])
    gone = names[0]
    c, _ = motion_convert.load_vmd("c.vmd", vmd.write(vmd.Motion(bone_keys=m.bone_keys[names != gone],
                                                           morph_keys=m.morph_keys)), True)
    diffs = compare_motions(a, c, 0.0, 0.0).differences
    assert [(x.element, x.field, x.message) for x in diffs] == [
        (f"animation a / c bone {gone}", "presence", "track in A only")]
    # only the timing curve of a key changed: the keys agree, the frames between them do not
    keys = m.bone_keys.copy()

    def key_at(n, f):
        return int(np.flatnonzero((names == n) & (keys["frame"] == f))[-1])

    def turn(n):  # the angle a bone turns between its first two keys
        f = np.unique(keys["frame"][names == n])
        if len(f) < 2 or f[1] - f[0] < 2:
            return 0.0
        q = motion_convert.rotations_to_core(keys["rotation"][[key_at(n, f[0]), key_at(n, f[1])]])
        return float(rotation_angles(q[0], q[1]))

    bone = max(sorted(set(names.tolist())), key=turn)
    assert turn(bone) > 1e-3
    f0, f1 = np.unique(keys["frame"][names == bone])[:2]
    k = key_at(bone, f1)
    curves = vmd.curves(keys["interpolation"][k])
    curves[3] = (127, 0, 127, 0)  # the rotation waits, then jumps
    keys["interpolation"][k] = vmd.build_interpolation(curves, physics=vmd.physics_bytes(keys["interpolation"][k]))
    e, _ = motion_convert.load_vmd("e.vmd", vmd.write(vmd.Motion(bone_keys=keys, morph_keys=m.morph_keys)), True)
    [d] = compare_motions(a, e, 0.0, 1e-9).differences
    assert d.element.endswith(f"bone {bone}") and d.field == "rotation"
    assert f"at frame {(f0 + f1) / 2:.6g} " in d.message


def test_rotation_angle_is_exactly_zero_for_equal_rotations():
    q = np.array([[0.2, -0.4, 0.1, 0.88], [1.0, 0, 0, 0]])
    assert (rotation_angles(q, q) == 0).all() and (rotation_angles(q, -q) == 0).all()
    turned = quat_multiply(q[1], np.array([math.cos(0.005), 0, math.sin(0.005), 0]))
    assert rotation_angles(q[1], turned) == pytest.approx(0.01, rel=1e-12)


def test_skeleton_animation_gives_the_offsets_a_vmd_holds():
    """A chain whose binds are pure translations (the benchmark's rig): the offset is the translation minus
    the rest translation and the rotation is the key's, as MMD stores them."""
    skel = cm.Skeleton(bones=[cm.Bone("root", -1, np.eye(4), np.zeros(3), np.array([1.0, 0, 0, 0]), np.ones(3))])
    child = np.eye(4)
    child[:3, 3] = (0, 0, 1.0)
    skel.bones.append(cm.Bone("child", 0, child, np.zeros(3), np.array([1.0, 0, 0, 0]), np.ones(3)))
    skel.set_rest_from_binds()
    times = np.arange(3) / 24.0
    t = np.array([[0, 0, 1.0], [0.1, 0, 1.0], [0.1, 0.2, 1.3]])
    r = np.array([[1.0, 0, 0, 0], [math.cos(0.2), math.sin(0.2), 0, 0], [math.cos(0.4), 0, 0, math.sin(0.4)]])
    anim = cm.Animation("Wave", 2 / 24, [cm.Track("child", times, t, times, r)])
    m, warnings = motion_convert.motion_of_skeleton_animation(skel, anim, "rig", fps=24)
    assert warnings == []
    assert m.model_name == "rig"
    assert m.bone_keys["frame"].tolist() == [0, 1, 2]
    expected = (t - (0, 0, 1.0))[:, [0, 2, 1]] / 0.08
    np.testing.assert_allclose(m.bone_keys["position"], expected, atol=1e-5)
    np.testing.assert_allclose(m.bone_keys["rotation"], np.stack([-r[:, 1], -r[:, 3], -r[:, 2], r[:, 0]], 1),
                               atol=1e-6)


def test_check_reports_a_non_finite_key_at_its_offset(testdata):
    data = _read(testdata, SHAGAMU)
    lines: list[str] = []
    assert vmd_check.check("x.vmd", data, lines.append) == 0
    assert lines == ["0 error(s), 0 warning(s)", "roundtrip: identical"]
    m = vmd.read(data)
    m.bone_keys["position"][3, 1] = np.nan
    bad = vmd.write(m)
    lines = []
    assert vmd_check.check("x.vmd", bad, lines.append) == 1
    offset = 30 + 20 + 4 + 3 * vmd.BONE_KEY.itemsize + 19  # header, count, three keys, name + frame
    name = vmd.decode_name(bytes(m.bone_keys["name"][3]))
    assert lines[0] == (f"error: bone key 3 ({name}) frame {int(m.bone_keys['frame'][3])}: position @ {offset} "
                        f"(0x{offset:x}): value is not finite (NaN or infinity)")
    assert lines[1:] == ["1 error(s), 0 warning(s)", "roundtrip: identical"]
    lines = []
    assert vmd_check.check("x.vmd", data[:40], lines.append) == 1
    assert lines[-1] == "roundtrip: not attempted (unreadable)"


def test_write_scene_gives_a_pmx_and_a_vmd_with_the_skeleton_offsets(tmp_path):
    from skinbridge.bench import models
    from skinbridge.io_pmx import scene_files
    from skinbridge.io_pmx.model import pmx

    scene = models.build("S")
    anim = scene.animations[0]
    paths = scene_files.write_scene(scene, str(tmp_path / "pmx"), "model")
    assert [p.rsplit("/", 1)[-1] for p in paths] == ["model.pmx", "Wave.vmd"]
    assert [b.name for b in pmx.read_file(paths[0]).bones] == scene.skeleton.names
    m = vmd.read_file(paths[1])
    assert len(m.bone_keys) == sum(len(t.translation_times) for t in anim.tracks)
    # the benchmark rig's binds are pure translations: a key holds translation − rest translation and the rotation
    track = anim.tracks[7]
    bone = scene.skeleton.bones[scene.skeleton.index(track.bone)]
    keys = m.bone_keys[np.array([vmd.decode_name(bytes(n)) == track.bone for n in m.bone_keys["name"]])]
    np.testing.assert_array_equal(keys["frame"], np.round(np.asarray(track.translation_times) * 30))
    np.testing.assert_allclose(keys["position"], (track.translations - bone.rest_translation)[:, [0, 2, 1]] / 0.08,
                               atol=2e-5)
    q = np.asarray(track.rotations)
    q = q * np.sign(q[:, :1])
    np.testing.assert_allclose(keys["rotation"] * np.sign(keys["rotation"][:, 3:]),
                               np.stack([-q[:, 1], -q[:, 3], -q[:, 2], q[:, 0]], 1), atol=1e-6)
