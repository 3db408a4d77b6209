"""The pure parts of a rigged VMD export (no bpy): which frames an IK bone is keyed on (`path_keys`), the curves
that pass a segment through the source's middle (`midpoint_fractions`, `fraction_curves`) and knee limits
that fit the knee keys (`mmd_knees.fit_knees`)."""
from __future__ import annotations

import numpy as np
import pytest

from skinbridge.core.transforms import slerp_xyzw
from skinbridge.io_pmx.model import pmx
from skinbridge.io_pmx.motion import vmd
from skinbridge.io_pmx.motion import channels
from skinbridge.io_pmx.rig.knees import fit_knees, twist_x
from skinbridge.io_pmx.motion.retarget import fraction_curves, midpoint_fractions, path_keys


def _curve_at_half(curve) -> float:
    p = channels.curve_points(curve)
    return float(channels.bezier_point(p, channels.solve_many(p, 0, np.array([0.5])))[0, 1])


def test_path_keys_hold_every_sample_within_the_tolerance():
    t = np.arange(0, 41, dtype=np.float64)
    # an ankle on a circle (a linear rotation of the leg): curved although every local curve is linear
    path = np.stack([np.cos(t / 12), np.sin(t / 12), 0.1 * t], axis=1)[:, None, :] * 10.0
    tol = 0.05
    base = np.array([0, 20, 40])
    keys = path_keys(path, base, tol)
    assert set(base) <= set(keys.tolist()) and len(keys) < len(t)  # only where needed
    # the straight line between consecutive keys stays within tol of every sample
    for a, b in zip(keys[:-1], keys[1:]):
        s = (t[a:b + 1] - a) / (b - a)
        line = path[a] + s[:, None, None] * (path[b] - path[a])
        assert np.linalg.norm(path[a:b + 1] - line, axis=2).max() <= tol
    # a straight path needs nothing more
    straight = np.stack([t, 2 * t, 0 * t], axis=1)[:, None, :]
    assert path_keys(straight, base, tol).tolist() == base.tolist()


def test_midpoint_curves_pass_through_the_middle():
    qa = np.array([0.1, 0.2, 0.0, 1.0]) / np.linalg.norm([0.1, 0.2, 0.0, 1.0])
    qb = np.array([0.3, -0.1, 0.2, 1.0]) / np.linalg.norm([0.3, -0.1, 0.2, 1.0])
    for s in (0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.97):
        qm = slerp_xyzw(qa, qb, s)
        pos = np.array([[[0.0, 1, 2], [s * 4, 1, 2 + s], [4.0, 1, 3]]])
        frac, moving = midpoint_fractions(pos, np.array([[qa, qm, qb]]))
        np.testing.assert_allclose(frac[0, [0, 2, 3]], s, atol=1e-9)
        assert moving[0].tolist() == [True, False, True, True]
        curves = fraction_curves(frac, moving)[0]
        assert curves[1].tolist() == list(vmd.LINEAR_CURVE)  # Y does not move
        for c in (0, 2, 3):
            assert abs(_curve_at_half(curves[c]) - s) < 0.006, (s, c, curves[c])


def _rigged_legs() -> pmx.PmxModel:
    m = pmx.PmxModel(name="legs")
    for name, pos, parent in (("左足", (1, 10, 0), -1), ("左ひざ", (1, 5, -0.2), 0), ("左足首", (1, 1, 0), 1)):
        m.bones.append(pmx.PmxBone(name=name, position=np.float32(pos), parent=parent, flags=0x1B, tail_bone=-1))
    lower = np.array([0xC0490FDB, 0, 0], np.uint32).view(np.float32)
    upper = np.array([0xBC0EFA35, 0, 0], np.uint32).view(np.float32)
    ik = pmx.PmxBone(name="左足ＩＫ", position=np.float32((1, 1, 0)), parent=-1, flags=0x3E, tail_bone=-1)
    ik.ik = pmx.PmxIK(target=2, loop=40, limit_angle=np.float32(2.0),
                      links=[pmx.PmxIKLink(1, lower.copy(), upper.copy()), pmx.PmxIKLink(0)])
    m.bones.append(ik)
    return m


def _knee_motion(degrees) -> vmd.Motion:
    keys = vmd.new_bone_keys(len(degrees))
    keys["name"] = vmd.encode_name("左ひざ")
    keys["frame"] = np.arange(len(degrees))
    a = np.radians(np.asarray(degrees, np.float64))
    keys["rotation"] = np.stack([np.sin(a / 2), 0.01 * np.ones_like(a), 0 * a, np.cos(a / 2)], axis=1)
    return vmd.Motion(bone_keys=keys)


def test_knee_limits_follow_the_keys():
    # a human knee: keys bend back (negative X); the rig's limit stays, the keys lose their Y part
    m = _rigged_legs()
    motion = _knee_motion([-10, -40, -0.2, -25])
    warnings = fit_knees(m, [("Walk", motion)])
    link = m.bones[3].ik.links[0]
    assert link.lower.view(np.uint32).tolist() == [0xC0490FDB, 0, 0]
    assert link.upper.view(np.uint32).tolist() == [0xBC0EFA35, 0, 0]
    a = twist_x(motion.bone_keys["rotation"])
    assert (a >= link.lower[0] - 1e-7).all() and (a <= link.upper[0] + 1e-7).all()
    assert np.abs(motion.bone_keys["rotation"][:, 1:3]).max() == 0
    assert warnings == []
    # a leg that bends forward gets the mirrored limit, [+0.5°, +180°]
    m = _rigged_legs()
    forward = _knee_motion([10, 40, 25])
    fit_knees(m, [("Hop", forward)])
    link = m.bones[3].ik.links[0]
    assert link.lower.view(np.uint32).tolist() == [0x3C0EFA35, 0, 0]
    assert link.upper.view(np.uint32).tolist() == [0x40490FDB, 0, 0]
    # both ways: the majority decides, the limit is widened past the other keys, and the frames are reported
    m = _rigged_legs()
    both = _knee_motion([-30, -40, 12, 17, -20])
    warnings = fit_knees(m, [("Run", both)])
    link = m.bones[3].ik.links[0]
    assert link.lower[0] < -3.14 and np.degrees(link.upper[0]) == pytest.approx(17.5, abs=1e-4)
    assert len(warnings) == 1 and "Run: 左ひざ bends both ways" in warnings[0] and "frames 2, 3" in warnings[0]
    a = twist_x(both.bone_keys["rotation"])
    assert (a >= link.lower[0] - 1e-7).all() and (a <= link.upper[0] + 1e-7).all()
