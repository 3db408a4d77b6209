"""Mapping between VMD keys and Blender pose channels (no bpy): the maths of the `blender_vmd_*` modules,
testable alone.

Conventions (docs/mmd.md §3, §4.4, stated once here):

* **Time**: VMD frame f (30 fps) is Blender frame f × fps / 30 (`FRAME_RATE`).
* **Axes**: MMD (x, y, z) → Blender (x, z, y); positions × scale (the model's, 0.08 by default); a rotation
  (x, y, z, w) in MMD axes is (w, −x, −z, −y) in Blender axes (the swap is a reflection, so the axis turns
  into −S·axis).
* **Relative to each bone's rest**: an MMD bone key is a transform M (offset, rotation) about the bone's head
  in model axes; a pose bone's basis is relative to its rest matrix. With W the armature's world matrix,
  Rest the bone's edit-bone matrix and h' the head the PMX holds, M = A · basis · B with
  A = T(−h') · C_parent · W · Rest and B = (W · Rest)⁻¹ · C⁻¹ · T(h'), where C maps the Blender rest to the
  PMX rest (identity unless an MMD rig export re-poses bones, e.g. `--arm-angle`). `BoneMap` holds A and B.
  A and B are similarities, so the rotation maps as q_M = a ⊗ q ⊗ b: slerp is kept. Positions map
  per channel, with the same Bézier timing, where B has no translation and A's rotation is a signed axis
  permutation; otherwise a Blender channel mixes MMD channels with different curves (`Segment fitting`).
* **Curves**: a key's 64-byte block describes the segment from the previous key to it. In Blender each
  F-curve key is BEZIER with FREE handles; a segment whose channel is a plain MMD curve gets the handles
  (x0 + x1/127·Δx, y0 + y1/127·Δy) and (x0 + x2/127·Δx, y0 + y2/127·Δy), which Blender evaluates exactly.
  Two cases need keys of type GENERATED inside a segment (docs/architecture.md §7.7):
  rotations, which MMD slerps and Blender blends per component (the segment is cut where slerp and the
  component blend would part by more than the tolerance; each piece is the exact sub-curve of the MMD Bézier,
  so the timing stays exact), and Blender channels that mix MMD channels with different curves (cut until a
  cubic through the exact values and slopes stays within the tolerance).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from ...core.skinning import mmd_bezier, mmd_sample_bone, mmd_world_matrices
from ...core.transforms import (
    matrix_to_trs, quat_multiply, quat_normalize, quat_to_matrix3, slerp,
)
from . import vmd
from ..model.pmx import BoneFlag

FRAME_RATE = vmd.FPS
ANGLE_TOLERANCE = 1e-6  # radians: component blend may part from slerp by this much before a GENERATED key (a
# chain of keyed bones adds its bones' errors up: 1e-6 keeps a pose within 1e-5 of the height, docs/mmd.md §4.4)
SWAP_YZ = np.array([[1.0, 0, 0], [0, 0, 1], [0, 1, 0]])
_CONJ = np.array([1.0, -1, -1, -1])


# ------------------------------------------------------------------------------------------------------------
# Axes

def rotation_to_blender(q_xyzw) -> np.ndarray:
    """MMD rotations (..., x,y,z,w) → the same rotations in Blender axes (..., w,x,y,z)."""
    q = np.asarray(q_xyzw, np.float64)
    out = np.stack([q[..., 3], -q[..., 0], -q[..., 2], -q[..., 1]], axis=-1)
    zero = ~np.any(q != 0, axis=-1)  # an all-zero quaternion is identity (as mmd_tools reads it)
    out[zero] = (1.0, 0.0, 0.0, 0.0)
    return out


def rotation_to_mmd(q_wxyz) -> np.ndarray:
    """The inverse of `rotation_to_blender`: (..., w,x,y,z) in Blender axes → (..., x,y,z,w) in MMD axes."""
    q = np.asarray(q_wxyz, np.float64)
    return np.stack([-q[..., 1], -q[..., 3], -q[..., 2], q[..., 0]], axis=-1)


def positions_to_blender(p, scale: float) -> np.ndarray:
    return np.asarray(p, np.float64)[..., [0, 2, 1]] * scale


def positions_to_mmd(p, scale: float) -> np.ndarray:
    return np.asarray(p, np.float64)[..., [0, 2, 1]] / scale


# ------------------------------------------------------------------------------------------------------------
# One bone: MMD key ⇄ pose basis

def _similarity(m: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    t, q, s = matrix_to_trs(m)
    return q, float(np.mean(np.abs(s))), t


@dataclass
class BoneMap:
    """M = A · basis · B (see the module docstring); A = [alpha·R(a) | a_t], B = [R(b)/alpha | b_t]."""

    a: np.ndarray
    alpha: float
    a_t: np.ndarray
    b: np.ndarray
    b_t: np.ndarray
    scale: float

    @property
    def separable(self) -> bool:
        """Positions map channel by channel: B has no translation (no rotation-dependent offset)."""
        return float(np.abs(self.b_t).max()) <= 1e-9 * max(1.0, self.scale)

    def position_matrix(self) -> np.ndarray:
        """K with MMD position = K · location + k0 (when `separable`)."""
        return SWAP_YZ @ (self.alpha * quat_to_matrix3(self.a)) / self.scale

    def to_mmd(self, location, quaternion) -> tuple[np.ndarray, np.ndarray]:
        """Pose basis (loc (…,3), quat w,x,y,z (…,4)) → MMD (position (…,3), rotation x,y,z,w (…,4))."""
        loc = np.asarray(location, np.float64)
        q = quat_normalize(quaternion)
        qm = quat_multiply(quat_multiply(self.a, q), self.b)
        ra = quat_to_matrix3(self.a)
        inner = loc + np.einsum("...ij,j->...i", quat_to_matrix3(q), self.b_t)
        tm = self.alpha * np.einsum("ij,...j->...i", ra, inner) + self.a_t
        return positions_to_mmd(tm, self.scale), rotation_to_mmd(qm)

    def from_mmd(self, position, rotation_xyzw) -> tuple[np.ndarray, np.ndarray]:
        """MMD key → pose basis (loc, quat w,x,y,z)."""
        tm = positions_to_blender(position, self.scale)
        qm = rotation_to_blender(rotation_xyzw)
        q = quat_multiply(quat_multiply(self.a * _CONJ, qm), self.b * _CONJ)
        ra = quat_to_matrix3(self.a)
        loc = np.einsum("ji,...j->...i", ra, tm - self.a_t) / self.alpha
        loc = loc - np.einsum("...ij,j->...i", quat_to_matrix3(q), self.b_t)
        return loc, q


def bone_map(rest_world: np.ndarray, scale: float, pmx_head=None, change=None, parent_change=None) -> BoneMap:
    """The map of a bone whose rest in Blender world space is `rest_world` (W · Rest, 4×4).

    `pmx_head` (Blender axes and units; default the rest head), `change`/`parent_change` (4×4 maps from the
    Blender rest to the PMX rest of the bone and of its parent; default identity) describe a PMX whose rest
    differs from Blender's (an MMD rig export)."""
    wr = np.asarray(rest_world, np.float64)
    h = wr[:3, 3] if pmx_head is None else np.asarray(pmx_head, np.float64)
    c = np.eye(4) if change is None else np.asarray(change, np.float64)
    cp = np.eye(4) if parent_change is None else np.asarray(parent_change, np.float64)
    th, tih = np.eye(4), np.eye(4)
    th[:3, 3] = h
    tih[:3, 3] = -h
    a = tih @ cp @ wr
    b = np.linalg.inv(c @ wr) @ th
    qa, alpha, at = _similarity(a)
    qb, beta, bt = _similarity(b)
    return BoneMap(qa, alpha, at, qb, bt, float(scale))


def dominant_permutation(k: np.ndarray) -> np.ndarray:
    """For each row of `k`, the column of its largest entry, chosen greedily (largest first)."""
    work = np.abs(np.asarray(k, np.float64)).copy()
    out = np.zeros(len(work), np.int64)
    for _ in range(len(work)):
        r, c = np.unravel_index(np.argmax(work), work.shape)
        out[r] = c
        work[r, :] = -1
        work[:, c] = -1
    return out


# ------------------------------------------------------------------------------------------------------------
# Keys grouped per bone

@dataclass
class BoneTrack:
    """The keys of one bone, sorted by frame (the last of several keys on one frame wins)."""

    name: str
    index: np.ndarray  # positions in the file's bone key array
    frames: np.ndarray
    positions: np.ndarray
    rotations: np.ndarray  # x, y, z, w
    curves: np.ndarray  # (K, 4, 4)
    duplicates: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # file positions shadowed


def group_bone_keys(keys: np.ndarray) -> dict[str, BoneTrack]:
    names, which = vmd.distinct_names(keys["name"])
    out: dict[str, BoneTrack] = {}
    if not len(keys):
        return out
    order = np.lexsort((np.arange(len(keys)), keys["frame"], which))
    for j, name in enumerate(names):
        idx = order[which[order] == j]
        fr = keys["frame"][idx].astype(np.int64)
        last = np.append(fr[1:] != fr[:-1], True)  # keep the last key of each frame (file order)
        out[name] = BoneTrack(name, idx[last], fr[last].astype(np.float64),
                              keys["position"][idx[last]].astype(np.float64),
                              keys["rotation"][idx[last]].astype(np.float64),
                              vmd.curves(keys["interpolation"][idx[last]]), idx[~last])
    return out


# ------------------------------------------------------------------------------------------------------------
# Bézier helpers (normalised segment: (0, 0) → (1, 1))

def curve_points(c) -> np.ndarray:
    """Control points (4, 2) of one MMD curve (x1, y1, x2, y2 bytes)."""
    c = np.asarray(c, np.float64) / 127.0
    return np.array([[0.0, 0.0], [c[0], c[1]], [c[2], c[3]], [1.0, 1.0]])


def bezier_point(p: np.ndarray, u) -> np.ndarray:
    u = np.asarray(u, np.float64)[..., None]
    v = 1 - u
    return v ** 3 * p[0] + 3 * v * v * u * p[1] + 3 * v * u * u * p[2] + u ** 3 * p[3]


def split_bezier(p: np.ndarray, ua: float, ub: float) -> np.ndarray:
    """Control points of the part of cubic Bézier `p` (4, 2) between parameters ua < ub (de Casteljau)."""
    def left(q, u):  # part [0, u]
        a, b, c = q[0] + (q[1] - q[0]) * u, q[1] + (q[2] - q[1]) * u, q[2] + (q[3] - q[2]) * u
        d, e = a + (b - a) * u, b + (c - b) * u
        return np.array([q[0], a, d, d + (e - d) * u])

    def right(q, u):  # part [u, 1]
        return left(q[::-1], 1 - u)[::-1]

    q = left(p, ub) if ub < 1 else p
    return right(q, ua / ub) if ua > 0 else q


def solve_axis(p: np.ndarray, axis: int, target) -> np.ndarray:
    """Parameters u where coordinate `axis` of the monotone Bézier `p` equals `target`."""
    return solve_many(p, axis, target)


def _power_basis(p: np.ndarray, axis: int) -> tuple[np.ndarray, ...]:
    """Coefficients (a, b, c, d) of coordinate `axis` of Béziers `p` (..., 4, 2) as a·u³ + b·u² + c·u + d."""
    p0, p1, p2, p3 = (p[..., k, axis] for k in range(4))
    return p3 - p0 + 3 * (p1 - p2), 3 * (p0 - 2 * p1 + p2), 3 * (p1 - p0), p0


def solve_many(p: np.ndarray, axis: int, target) -> np.ndarray:
    """`solve_axis` on arrays: Béziers `p` (4, 2) or (N, 4, 2), monotone in `axis`, and targets broadcast against
    them; on every element at once: 12 halvings, then Newton steps inside that bracket."""
    p = np.asarray(p, np.float64)
    target = np.asarray(target, np.float64)
    a, b, c, d = _power_basis(p, axis)
    if p.ndim == 2:
        shape = target.shape
    else:
        shape = np.broadcast_shapes(target.shape, a.shape)
    a, b, c, d, target = (np.broadcast_to(v, shape) for v in (a, b, c, d, target))
    lo, hi = np.zeros(shape), np.ones(shape)
    for _ in range(12):  # bracket to 2.4e-4, then Newton steps kept inside the bracket
        u = 0.5 * (lo + hi)
        below = ((a * u + b) * u + c) * u + d < target
        lo = np.where(below, u, lo)
        hi = np.where(below, hi, u)
    u = 0.5 * (lo + hi)
    for _ in range(4):
        f = ((a * u + b) * u + c) * u + d - target
        df = (3 * a * u + 2 * b) * u + c
        step = np.where(np.abs(df) > 1e-12, f / np.where(np.abs(df) > 1e-12, df, 1.0), 0.0)
        u = np.clip(u - step, lo, hi)
    return u


def split_many(p: np.ndarray, ua, ub) -> np.ndarray:
    """`split_bezier` on arrays: the parts of Béziers `p` (N, 4, 2) between parameters ua < ub (N,)."""
    p = np.asarray(p, np.float64)
    ua = np.asarray(ua, np.float64)[:, None]
    ub = np.asarray(ub, np.float64)[:, None]

    def left(q, u):
        a, b, c = (q[:, 0] + (q[:, 1] - q[:, 0]) * u, q[:, 1] + (q[:, 2] - q[:, 1]) * u,
                   q[:, 2] + (q[:, 3] - q[:, 2]) * u)
        d, e = a + (b - a) * u, b + (c - b) * u
        return np.stack([q[:, 0], a, d, d + (e - d) * u], axis=1)

    q = np.where((ub < 1)[:, :, None], left(p, ub), p)
    ratio = np.where(ua > 0, ua / np.where(ub > 0, ub, 1.0), 0.0)
    r = left(q[:, ::-1], 1 - ratio)[:, ::-1]
    return np.where((ua > 0)[:, :, None], r, q)


def bytes_many(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`bytes_of` on arrays: for Béziers `p` (N, 4, 2) the curve bytes (N, 4), how far each lies outside what
    a block holds (N,), and which segments have timing at all (N,; False where `bytes_of` gives None)."""
    p = np.asarray(p, np.float64)
    dx = p[:, 3, 0] - p[:, 0, 0]
    dy = p[:, 3, 1] - p[:, 0, 1]
    scale = np.maximum(1.0, np.maximum(np.abs(p[:, 0, 1]), np.abs(p[:, 3, 1])))
    valid = (dx > 0) & (np.abs(dy) > 1e-7 * scale)
    sdx = np.where(valid, dx, 1.0)
    sdy = np.where(valid, dy, 1.0)
    n = np.stack([(p[:, 1, 0] - p[:, 0, 0]) / sdx, (p[:, 1, 1] - p[:, 0, 1]) / sdy,
                  (p[:, 2, 0] - p[:, 0, 0]) / sdx, (p[:, 2, 1] - p[:, 0, 1]) / sdy], axis=1) * 127.0
    r = np.round(n)
    off = np.maximum(np.maximum(-r, r - 127), 0).max(axis=1)
    return np.clip(r, 0, 127).astype(np.uint8), np.where(valid, off, 0.0), valid


def bytes_of(p: np.ndarray) -> tuple[np.ndarray | None, float]:
    """MMD curve bytes (x1, y1, x2, y2) of a Bézier segment `p` (4, 2) in (frame, value), and how far (in
    bytes) the curve lies outside what a block can hold. None when the segment is flat (no timing)."""
    dx = p[3, 0] - p[0, 0]
    dy = p[3, 1] - p[0, 1]
    scale = max(1.0, abs(p[0, 1]), abs(p[3, 1]))
    if dx <= 0 or abs(dy) <= 1e-7 * scale:
        return None, 0.0
    n = np.array([(p[1, 0] - p[0, 0]) / dx, (p[1, 1] - p[0, 1]) / dy, (p[2, 0] - p[0, 0]) / dx,
                  (p[2, 1] - p[0, 1]) / dy]) * 127.0
    r = np.round(n)
    off = float(np.maximum(np.maximum(-r, r - 127), 0).max())
    return np.clip(r, 0, 127).astype(np.uint8), off


# ------------------------------------------------------------------------------------------------------------
# Building Blender curves from MMD keys

@dataclass
class ChannelKeys:
    """F-curve keys: frames, values, handles (n, 2), GENERATED flags, the real key each point is (−1: generated)."""

    x: np.ndarray
    y: np.ndarray
    hl: np.ndarray
    hr: np.ndarray
    generated: np.ndarray
    key: np.ndarray


class CurveBuilder:
    def __init__(self):
        self.x, self.y, self.hl, self.hr, self.gen, self.key = [], [], [], [], [], []

    def point(self, x, y, key):
        self.x.append(x)
        self.y.append(y)
        self.hl.append([x - 1.0, y])
        self.hr.append([x + 1.0, y])
        self.gen.append(key < 0)
        self.key.append(key)

    def piece(self, p: np.ndarray, key_end: int):
        """Append a Bézier piece (4, 2) from the last point to a new one."""
        self.hr[-1] = list(p[1])
        self.point(p[3, 0], p[3, 1], key_end)
        self.hl[-1] = list(p[2])

    def done(self) -> ChannelKeys:
        return ChannelKeys(np.array(self.x, np.float64), np.array(self.y, np.float64),
                           np.array(self.hl, np.float64).reshape(-1, 2), np.array(self.hr, np.float64).reshape(-1, 2),
                           np.array(self.gen, bool), np.array(self.key, np.int64))


@functools.lru_cache(maxsize=8)
def max_half_angle(tolerance: float) -> float:
    """The largest half-angle between two quaternions for which the component blend stays within `tolerance`
    (radians) of slerp everywhere on the way."""
    f = np.linspace(0.0, 0.5, 257)

    def err(a):
        nl = np.arctan2(f * np.sin(a), (1 - f) + f * np.cos(a))
        return 2 * np.abs(nl - f * a).max()

    lo, hi = 0.0, math.pi / 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if err(mid) <= tolerance else (lo, mid)
    return lo


def short_way(q: np.ndarray) -> np.ndarray:
    q = np.array(q, np.float64)
    if len(q) > 1:
        d = np.sum(q[1:] * q[:-1], axis=1)
        q *= np.concatenate([[1.0], np.cumprod(np.where(d < 0, -1.0, 1.0))])[:, None]
    return q


def _fit_pieces(f, x0: float, x1: float, tol: float, depth: int = 0) -> list[np.ndarray]:
    """Cubic pieces (4, 2) in (frame, value) through exact values of f (frames → values) on [x0, x1], with
    slopes from f, cut in halves until each stays within `tol` of f."""
    d = x1 - x0
    e = d * 1e-4
    test = x0 + d * np.linspace(0.05, 0.95, 13)
    ya, yb, ye, yf, *yt = f(np.concatenate([[x0, x1, x0 + e, x1 - e], test]))  # f in one call: its cost is per call
    sa = (ye - ya) / e
    sb = (yb - yf) / e
    p = np.array([[x0, ya], [x0 + d / 3, ya + sa * d / 3], [x1 - d / 3, yb - sb * d / 3], [x1, yb]])
    u = solve_axis(p, 0, test)
    err = np.abs(bezier_point(p, u)[:, 1] - np.array(yt)).max()
    if err <= tol or depth >= 10:
        return [p]
    mid = 0.5 * (x0 + x1)
    return _fit_pieces(f, x0, mid, tol, depth + 1) + _fit_pieces(f, mid, x1, tol, depth + 1)


def _plain_channel(frames, y, curves) -> ChannelKeys:
    """Keys whose every segment is one MMD curve (`curves` (K, 4): the curve into each key), in bulk."""
    n = len(frames)
    hl = np.stack([frames - 1.0, y], 1)
    hr = np.stack([frames + 1.0, y], 1)
    if n > 1:
        c = curves[1:].astype(np.float64) / 127.0
        dx, dy = np.diff(frames), np.diff(y)
        hr[:-1, 0] = frames[:-1] + c[:, 0] * dx
        hr[:-1, 1] = y[:-1] + c[:, 1] * dy
        hl[1:, 0] = frames[:-1] + c[:, 2] * dx
        hl[1:, 1] = y[:-1] + c[:, 3] * dy
    return ChannelKeys(np.asarray(frames, np.float64), np.asarray(y, np.float64), hl, hr, np.zeros(n, bool),
                       np.arange(n))


def _fast_channel(frames, y, track: BoneTrack, k_row, separable: bool) -> ChannelKeys | None:
    """A location channel in bulk when every segment follows a single MMD curve; else None."""
    if not separable:
        return None
    n = len(frames)
    if n < 2:
        return _plain_channel(frames, y, np.zeros((n, 4), np.uint8))
    delta = np.diff(track.positions, axis=0)
    w = np.abs(k_row[None, :] * delta)
    live = w > 1e-12 * np.maximum(1.0, np.maximum(np.abs(y[1:]), np.abs(y[:-1])))[:, None]
    cv = track.curves[1:, :3].astype(np.int64)  # (K-1, 3 channels, 4)
    first = np.argmax(live, axis=1)
    chosen = cv[np.arange(n - 1), first]
    same = np.all(~live | np.all(cv == chosen[:, None, :], axis=2), axis=1)
    if not same.all():
        return None
    chosen = np.where(live.any(axis=1)[:, None], chosen, np.array(vmd.LINEAR_CURVE))
    return _plain_channel(frames, y, np.concatenate([np.zeros((1, 4), np.int64), chosen]))


def _sliced_rotation(frames, quat, curves, halves, limit: float) -> list[ChannelKeys]:
    """The four quaternion channels of a bone whose keys turn further apart than `limit` (half-angles
    `halves` per segment), in bulk: segment k is cut into ceil(halves[k] / limit) pieces at equal slerp
    weights s; each piece is the exact part of the MMD curve `curves[k]` between those weights, its values
    running linearly between the slerped quaternions at its ends (GENERATED keys inside a segment)."""
    parts = np.where(halves > limit, np.ceil(halves / limit), 1).astype(np.int64)  # (K-1,)
    seg = np.repeat(np.arange(len(parts)), parts)  # the segment of each piece
    first = np.concatenate([[0], np.cumsum(parts)[:-1]])
    j = np.arange(len(seg)) - first[seg]  # the piece's place in its segment
    s0, s1 = j / parts[seg], (j + 1) / parts[seg]
    p = np.zeros((len(parts), 4, 2))
    p[:, 1:3] = curves[1:].astype(np.float64).reshape(-1, 2, 2) / 127.0
    p[:, 3] = 1.0
    pp = p[seg]
    u0 = np.where(s0 > 0, solve_many(pp, 1, s0), 0.0)
    u1 = np.where(s1 < 1, solve_many(pp, 1, s1), 1.0)
    sub = split_many(pp, u0, u1)  # (P, 4, 2) in the segment's normalised (time, weight)
    q0, q1 = quat[:-1][seg], quat[1:][seg]
    qa = slerp(q0, q1, s0)
    qb = slerp(q0, q1, s1)
    qa *= np.where(np.sum(qa * q0, axis=1) < 0, -1.0, 1.0)[:, None]
    qb *= np.where(np.sum(qb * q0, axis=1) < 0, -1.0, 1.0)[:, None]
    qa[j == 0] = q0[j == 0]
    last = j == parts[seg] - 1
    qb[last] = q1[last]
    x0, dx = frames[:-1][seg], np.diff(frames)[seg]
    tx = x0[:, None] + sub[:, :, 0] * dx[:, None]  # (P, 4)
    f = (sub[:, :, 1] - s0[:, None]) / (s1 - s0)[:, None]  # (P, 4) of the way from qa to qb
    xs = np.concatenate([[frames[0]], tx[:, 3]])
    gen = np.concatenate([[False], ~last])
    key = np.concatenate([[0], np.where(last, seg + 1, -1)])
    out = []
    for c in range(4):
        ty = qa[:, c, None] + f * (qb[:, c] - qa[:, c])[:, None]
        ys = np.concatenate([[quat[0, c]], qb[:, c]])
        hl = np.stack([xs - 1.0, ys], 1)
        hr = np.stack([xs + 1.0, ys], 1)
        hr[:-1] = np.stack([tx[:, 1], ty[:, 1]], 1)
        hl[1:] = np.stack([tx[:, 2], ty[:, 2]], 1)
        out.append(ChannelKeys(xs.copy(), ys, hl, hr, gen.copy(), key.copy()))
    return out


def build_bone_channels(track: BoneTrack, bmap: BoneMap, frame_rate: float,
                        tolerance: float = ANGLE_TOLERANCE, position_tolerance: float = 1e-6
                        ) -> tuple[dict[tuple[str, int], ChannelKeys], bool]:
    """The F-curve keys (location 0–2, rotation_quaternion 0–3) reproducing one bone's MMD keys, and whether
    any location segment had to be fitted (a Blender channel mixing MMD channels with different curves).
    Deterministic: export rebuilds it from the raw keys to see what the user changed."""
    frames = track.frames * frame_rate / FRAME_RATE
    loc, quat = bmap.from_mmd(track.positions, track.rotations)
    quat = short_way(quat)
    n = len(frames)
    k_mat = bmap.position_matrix()
    k_inv = np.linalg.inv(k_mat)
    separable = bmap.separable
    fitted = False
    out: dict[tuple[str, int], ChannelKeys] = {}
    mmd_rot = track.rotations.copy()
    mmd_rot[~np.any(mmd_rot != 0, axis=1)] = (0, 0, 0, 1)

    # location
    for j in range(3):
        fast = _fast_channel(frames, loc[:, j], track, k_inv[j], separable)
        if fast is not None:
            out[("location", j)] = fast
            continue
        b = CurveBuilder()
        b.point(frames[0], loc[0, j], 0)
        for k in range(1, n):
            x0, x1 = frames[k - 1], frames[k]
            delta = track.positions[k] - track.positions[k - 1]
            weights = k_inv[j] * delta
            live = np.flatnonzero(np.abs(weights) > 1e-12 * max(1.0, float(np.abs(loc[k - 1:k + 1, j]).max())))
            same = len({tuple(track.curves[k, i]) for i in live}) <= 1
            if separable and same:
                c = track.curves[k, live[0]] if len(live) else np.array(vmd.LINEAR_CURVE)
                p = curve_points(c)
                p[:, 0] = x0 + p[:, 0] * (x1 - x0)
                p[:, 1] = loc[k - 1, j] + p[:, 1] * (loc[k, j] - loc[k - 1, j])
                b.piece(p, k)
                continue
            fitted = True

            def f(xs, k=k, j=j, x0=x0, x1=x1):
                t = (np.asarray(xs) - x0) / (x1 - x0)
                s = mmd_bezier(track.curves[k][None, :, :], t[:, None])  # (m, 4)
                pos = track.positions[k - 1] + delta * s[:, :3]
                rot = slerp(quat_normalize(rotation_to_blender(mmd_rot[k - 1])),
                            quat_normalize(rotation_to_blender(mmd_rot[k])), s[:, 3])
                lo, _ = bmap.from_mmd(pos, rotation_to_mmd(rot))
                return lo[:, j]

            for p in _fit_pieces(f, x0, x1, position_tolerance):
                b.piece(p, k if p[3, 0] == x1 else -1)
            b.y[-1] = loc[k, j]  # the key's own value, not the fitted one
        out[("location", j)] = b.done()

    # rotation: exact MMD timing per piece, pieces short enough for the component blend to follow slerp
    limit = max_half_angle(tolerance)
    if n > 1:
        qn = quat_normalize(quat)
        halves = np.arccos(np.clip(np.abs(np.sum(qn[1:] * qn[:-1], axis=1)), 0.0, 1.0))
    if n < 2 or (halves <= limit).all():
        for c in range(4):
            out[("rotation_quaternion", c)] = _plain_channel(frames, quat[:, c], track.curves[:, 3])
        return out, fitted
    for c, ck in enumerate(_sliced_rotation(frames, quat, track.curves[:, 3], halves, limit)):
        out[("rotation_quaternion", c)] = ck
    return out, fitted


# ------------------------------------------------------------------------------------------------------------
# The MMD evaluation of a PMX model + VMD (reference for tests; IK off)

@dataclass
class MmdRig:
    names: list[str]
    heads: np.ndarray
    parents: np.ndarray
    append_parent: np.ndarray
    append_ratio: np.ndarray
    append_rotate: np.ndarray
    append_move: np.ndarray
    append_local: np.ndarray
    order: np.ndarray


def mmd_rig(model) -> MmdRig:
    """Arrays of a `pmx.PmxModel`'s bones for `core.skinning.mmd_world_matrices` (transform order: after-
    physics flag, then layer, then index)."""
    bones = model.bones
    n = len(bones)
    flags = np.array([int(b.flags) for b in bones], np.int64)
    ap = np.array([b.append_parent if b.append_parent is not None else -1 for b in bones], np.int64)
    has = (flags & (BoneFlag.APPEND_ROTATE | BoneFlag.APPEND_MOVE)) != 0
    ap = np.where(has, ap, -1)
    after = (flags & BoneFlag.AFTER_PHYSICS) != 0
    layer = np.array([int(b.layer) for b in bones], np.int64)
    order = np.lexsort((np.arange(n), layer, after))
    return MmdRig([b.name for b in bones], np.array([b.position for b in bones], np.float64).reshape(n, 3),
                  np.array([b.parent for b in bones], np.int64), ap,
                  np.array([float(b.append_ratio) if b.append_ratio is not None else 0.0 for b in bones]),
                  (flags & BoneFlag.APPEND_ROTATE) != 0, (flags & BoneFlag.APPEND_MOVE) != 0,
                  (flags & BoneFlag.LOCAL_APPEND) != 0, order)


def match_tracks(rig: MmdRig, motion: vmd.Motion) -> dict[int, BoneTrack]:
    """Bone index → its track, matched as MMD matches: the bone's name cut to the 15 cp932 bytes a VMD holds."""
    tracks = group_bone_keys(motion.bone_keys)
    by_field = {}
    for name, tr in tracks.items():
        raw = bytes(motion.bone_keys["name"][tr.index[0]])
        by_field[vmd.decode_name(raw)] = tr
    out = {}
    for i, name in enumerate(rig.names):
        tr = by_field.get(vmd.decode_name(vmd.encode_name(name)))
        if tr is not None:
            out[i] = tr
    return out


def evaluate_mmd(rig: MmdRig, tracks: dict[int, BoneTrack], frame: float, append: bool = True) -> np.ndarray:
    """World matrices (MMD axes and units) of every bone at VMD `frame` (IK off)."""
    n = len(rig.names)
    pos = np.zeros((n, 3))
    rot = np.tile([0.0, 0, 0, 1], (n, 1))
    for i, tr in tracks.items():
        pos[i], rot[i] = mmd_sample_bone(tr.frames, tr.positions, tr.rotations, tr.curves, frame)
    return mmd_world_matrices(rig.heads, rig.parents, pos, rot, rig.append_parent, rig.append_ratio,
                              rig.append_rotate, rig.append_move, rig.append_local, rig.order, append)


# ------------------------------------------------------------------------------------------------------------
# Camera: MMD camera keys ⇄ an empty (target, Euler rotation) with a child camera at local Y = distance

def camera_curves(interpolation: np.ndarray) -> np.ndarray:
    """(K, 6, 4) x1, y1, x2, y2 from the 24-byte camera blocks (six groups {x1, x2, y1, y2})."""
    ip = np.asarray(interpolation, np.uint8).reshape(-1, 6, 4)
    return ip[:, :, [0, 2, 1, 3]].copy()


def camera_block(curves: np.ndarray) -> np.ndarray:
    return np.asarray(curves, np.uint8).reshape(-1, 6, 4)[:, :, [0, 2, 1, 3]].reshape(-1, 24)


def camera_to_blender(keys: np.ndarray, scale: float) -> dict[str, np.ndarray]:
    """Channel values per key: target location (x, z, y)·scale, Euler (rx, rz, ry), distance·scale, FOV (rad)."""
    return {"location": positions_to_blender(keys["position"], scale),
            "rotation": np.asarray(keys["rotation"], np.float64)[:, [0, 2, 1]],
            "distance": np.asarray(keys["distance"], np.float64) * scale,
            "angle": np.radians(np.asarray(keys["view_angle"], np.float64)),
            "ortho": np.asarray(keys["perspective"]) != 0}


# which camera curve drives each Blender channel (data path, index) → camera channel
CAMERA_MAP = {("location", 0): 0, ("location", 1): 2, ("location", 2): 1, ("rotation_euler", 0): 3,
              ("rotation_euler", 1): 3, ("rotation_euler", 2): 3, ("distance", 0): 4, ("angle", 0): 5}
