"""A VMD motion generated in memory for Luka's bones (item 3 of the VMD tests): keys of five bones on uneven
frames with non-linear Bézier blocks, two keys with the physics toggle off, stored unsorted, morph keys (one of a
morph Luka lacks) and IK on/off property keys."""
from __future__ import annotations

import math

import numpy as np

from skinbridge.core.transforms import quat_multiply
from skinbridge.io_pmx.motion import vmd

GENERATED_BONES = ("センター", "左足", "左ひざ", "上半身", "首")


def axis_angle(axis, angle):
    """The unit quaternion (w, x, y, z) of a rotation by `angle` radians about `axis`."""
    axis = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    return np.concatenate([[math.cos(angle / 2)], axis * math.sin(angle / 2)])


def _curve(rng):
    """A non-linear curve: x1 < x2 mostly, some x1 > x2 (MMD allows it); y off the diagonal."""
    while True:
        c = rng.integers(0, 128, 4)
        if abs(int(c[0]) - int(c[1])) > 15 or abs(int(c[2]) - int(c[3])) > 15:
            return c


def generated_motion(seed: int = 9) -> tuple[vmd.Motion, dict]:
    rng = np.random.default_rng(seed)
    recs = []
    for name in GENERATED_BONES:
        frames = np.cumsum(np.concatenate([[int(rng.integers(0, 5))], rng.integers(7, 31, 4)]))
        q = np.array([1.0, 0, 0, 0])
        for k, f in enumerate(frames):
            rec = vmd.new_bone_keys(1)[0]
            rec["name"] = vmd.encode_name(name)
            rec["frame"] = int(f)
            if name == "センター":
                rec["position"] = rng.uniform(-30, 30, 3)
            else:
                if k:
                    q = quat_multiply(q, axis_angle(rng.normal(size=3), math.radians(rng.uniform(40, 120))))
                x, y, z = -q[1], -q[3], -q[2]  # any rotation; stored in MMD's x,y,z,w order
                rec["rotation"] = (x, y, z, q[0])
            curves = np.stack([_curve(rng) for _ in range(4)])
            while len({tuple(c) for c in curves}) < 4:
                curves = np.stack([_curve(rng) for _ in range(4)])
            rec["interpolation"] = vmd.build_interpolation(curves)
            recs.append(rec)
    keys = np.array(recs, vmd.BONE_KEY)
    for i in (3, 12):  # two keys with the physics toggle off
        keys[i]["interpolation"][2:4] = vmd.PHYSICS_OFF
    keys = keys[rng.permutation(len(keys))]  # stored unsorted
    m = vmd.Motion(bone_keys=keys)
    m.model_name = "巡音ルカ"
    morphs = np.zeros(6, vmd.MORPH_KEY)
    for i, (n, f, w) in enumerate([("あ", 0, 0.0), ("あ", 10, 1.0), ("あ", 25, 0.25), ("まばたき", 5, 1.0),
                                   ("まばたき", 9, 0.0), ("存在しない", 3, 0.5)]):
        morphs[i] = (vmd.encode_name(n), f, w)
    m.morph_keys = morphs
    ik = np.zeros(2, vmd.IK_STATE)
    ik[0] = (vmd.encode_name("左足ＩＫ", 20), 0)
    ik[1] = (vmd.encode_name("右足ＩＫ", 20), 1)
    ik2 = ik.copy()
    ik2[0]["enabled"] = 1
    m.property_keys = [vmd.PropertyKey(0, 1, ik), vmd.PropertyKey(40, 1, ik2)]
    return m, {"physics": 2}
