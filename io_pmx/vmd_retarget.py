"""The pure part of retargeting a motion onto a rigged PMX (no bpy): per frame and PMX bone, the MMD local
key that makes `core.skinning.mmd_world_matrices` give the wanted deformation (see `blender_vmd_retarget`).
"""
from __future__ import annotations

import numpy as np

from ..core.skinning import _mul_xyzw, _slerp_xyzw
from ..core.transforms import matrix3_to_quat
from . import vmd
from . import vmd_convert as vc


def rotation_part(m: np.ndarray) -> tuple[np.ndarray, float]:
    """The rotation of a 3×3 matrix (polar decomposition) and how far it is from one."""
    u, s, vt = np.linalg.svd(m)
    r = u @ vt
    if np.linalg.det(r) < 0:
        u[:, -1] *= -1
        r = u @ vt
    return r, float(np.abs(s - 1).max())


def rigged_keys(model, deform: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pure part of the retargeting: per frame and PMX bone, the MMD local (position, rotation x,y,z,w) that
    makes `core.skinning.mmd_world_matrices` give world matrices whose skinning matrices are `deform`
    (F, K, 4, 4; MMD axes; NaN where a bone has no source: it stays at rest under its parent). Returns
    (positions (F, K, 3), rotations (F, K, 4), largest scale dropped)."""
    r = vc.mmd_rig(model)
    n = len(r.names)
    nf = len(deform)
    heads = r.heads
    pos = np.zeros((nf, n, 3))
    rot = np.tile([0.0, 0, 0, 1], (nf, n, 1))
    worst = 0.0
    ident = np.array([0.0, 0, 0, 1])
    for f in range(nf):
        world = np.full((n, 4, 4), np.nan)
        done = np.zeros(n, bool)
        final_rot = np.tile(ident, (n, 1))
        final_pos = np.zeros((n, 3))

        def world_of(k):
            if done[k]:
                return world[k]
            done[k] = True  # (a parent cycle ends here at rest)
            p = int(r.parents[k])
            pw = world_of(p) if 0 <= p < n and p != k else np.eye(4)
            ph = heads[p] if 0 <= p < n and p != k else np.zeros(3)
            if np.isfinite(deform[f, k]).all():
                w = deform[f, k].copy()
                w[:3, 3] += w[:3, :3] @ heads[k]
            else:
                w = pw.copy()
                w[:3, 3] = pw[:3, :3] @ (heads[k] - ph) + pw[:3, 3]
            world[k] = w
            return w

        for k in range(n):
            world_of(k)
        for k in range(n):
            rk, s = rotation_part(world[k, :3, :3])
            worst = max(worst, s)
            world[k, :3, :3] = rk
        for k in r.order:  # what MMD composes: local = T(head − parent head + pos) · R(final rotation)
            p = int(r.parents[k])
            pw = world[p] if 0 <= p < n and p != k else np.eye(4)
            ph = heads[p] if 0 <= p < n and p != k else np.zeros(3)
            loc_r = pw[:3, :3].T @ world[k, :3, :3]
            loc_t = pw[:3, :3].T @ (world[k, :3, 3] - pw[:3, 3]) - (heads[k] - ph)
            q = matrix3_to_quat(loc_r)[[1, 2, 3, 0]]
            final_rot[k], final_pos[k] = q, loc_t
            key_r, key_t = q, loc_t
            ap = int(r.append_parent[k])
            if 0 <= ap < n and ap != k:  # take the append contribution out again
                ratio = float(r.append_ratio[k])
                if r.append_rotate[k]:
                    if r.append_local[k]:
                        a = matrix3_to_quat(world[ap, :3, :3])[[1, 2, 3, 0]]
                    elif r.append_rotate[ap] and 0 <= int(r.append_parent[ap]) < n:
                        a = final_rot[ap]
                    else:
                        a = rot[f, ap]
                    if ratio != 1.0:
                        a = _slerp_xyzw(ident, a, ratio)
                    key_r = _mul_xyzw(q, a * np.array([-1.0, -1, -1, 1]))
                if r.append_move[k]:
                    if r.append_local[k]:
                        t = world[ap, :3, :3] @ -heads[ap] + world[ap, :3, 3]
                    elif r.append_move[ap] and 0 <= int(r.append_parent[ap]) < n:
                        t = final_pos[ap]
                    else:
                        t = pos[f, ap]
                    key_t = loc_t - t * ratio
            rot[f, k], pos[f, k] = key_r, key_t
    for k in range(n):  # one hemisphere along time (MMD slerps between neighbours)
        for f in range(1, nf):
            if np.dot(rot[f, k], rot[f - 1, k]) < 0:
                rot[f, k] = -rot[f, k]
    return pos, rot, worst


def path_keys(points: np.ndarray, keep: np.ndarray, tolerance: float) -> np.ndarray:
    """Which of the evenly timed samples `points` (F, P, 3) to key so that a straight line between two keys
    (a linear VMD block) stays within `tolerance` of every sample between them: the samples `keep` (sorted
    indices, the first and last among them) and, per segment that leaves the line, its farthest sample, until
    none does. Returns sorted indices."""
    points = np.asarray(points, np.float64)
    chosen = set(int(i) for i in keep)
    todo = sorted(chosen)
    segments = list(zip(todo[:-1], todo[1:]))
    while segments:
        nxt = []
        for a, b in segments:
            if b - a < 2:
                continue
            t = (np.arange(a + 1, b) - a) / (b - a)
            line = points[a][None] + t[:, None, None] * (points[b] - points[a])[None]
            dev = np.linalg.norm(points[a + 1:b] - line, axis=2).max(axis=1)
            j = int(np.argmax(dev))
            if dev[j] > tolerance:
                m = a + 1 + j
                chosen.add(m)
                nxt += [(a, m), (m, b)]
        segments = nxt
    return np.array(sorted(chosen), np.int64)


_THIRD = 42  # x1 = 42/127, x2 = 85/127: symmetric about 1/2, so the curve is at x = 1/2 when u = 1/2


def midpoint_curves(pos: np.ndarray, rot: np.ndarray) -> np.ndarray:
    """VMD curves (N, 4 channels X/Y/Z/R, x1/y1/x2/y2) for segments whose start, middle and end are given:
    `pos` (N, 3 samples, 3) and `rot` (N, 3, 4; x, y, z, w). Each channel's curve passes through the
    middle sample at the middle of the segment, as far as it lies between the ends (a linear block puts it
    half-way): with x1 = 42, x2 = 85 and y1 = y2 = c/127 the curve is at (6c + 1) / 8 there, for any
    fraction in [1/8, 7/8]; a channel that does not move keeps the linear curve."""
    pos = np.asarray(pos, np.float64)
    rot = np.asarray(rot, np.float64)
    n = len(pos)
    frac = np.full((n, 4), 0.5)
    dp = pos[:, 2] - pos[:, 0]
    moving = np.abs(dp) > 1e-9 * np.maximum(1.0, np.abs(pos[:, 0]))
    frac[:, :3] = np.where(moving, (pos[:, 1] - pos[:, 0]) / np.where(moving, dp, 1.0), 0.5)
    qa, qb, qm = (rot[:, i] / np.linalg.norm(rot[:, i], axis=1, keepdims=True) for i in range(3))
    qb = qb * np.where(np.sum(qa * qb, axis=1) < 0, -1.0, 1.0)[:, None]
    cos = np.clip(np.sum(qa * qb, axis=1), -1.0, 1.0)
    theta = np.arccos(cos)
    turns = theta > 1e-7
    ortho = qb - cos[:, None] * qa
    ortho /= np.where(turns, np.linalg.norm(ortho, axis=1), 1.0)[:, None]
    qm = qm * np.where(np.sum(qa * qm, axis=1) < 0, -1.0, 1.0)[:, None]
    angle = np.arctan2(np.sum(qm * ortho, axis=1), np.sum(qm * qa, axis=1))
    frac[:, 3] = np.where(turns, angle / np.where(turns, theta, 1.0), 0.5)
    c = np.clip(np.rint((8 * np.clip(frac, 0.125, 0.875) - 1) / 6 * 127), 0, 127)
    out = np.empty((n, 4, 4), np.uint8)
    out[:, :, 0] = _THIRD
    out[:, :, 1] = c
    out[:, :, 2] = 127 - _THIRD
    out[:, :, 3] = c
    still = np.concatenate([~moving, ~turns[:, None]], axis=1) | (np.abs(frac - 0.5) < 0.004)
    out[still] = vmd.LINEAR_CURVE
    return out
