"""The pure part of retargeting a motion onto a rigged PMX (no bpy): per frame and PMX bone, the MMD local
key that makes `core.skinning.mmd_world_matrices` give the wanted deformation (see `blender_vmd_retarget`).
"""
from __future__ import annotations

import functools

import numpy as np

from ...core.transforms import quat_multiply_xyzw, slerp_xyzw
from ...core.transforms import matrix3_to_quat, quat_to_matrix3
from . import vmd
from . import channels as vc


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
                        a = slerp_xyzw(ident, a, ratio)
                    key_r = quat_multiply_xyzw(q, a * np.array([-1.0, -1, -1, 1]))
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


@functools.lru_cache(maxsize=1)
def _steep_curves() -> tuple[np.ndarray, np.ndarray]:
    """(x bytes 0..127, where the curve x1 = x2 = b/127, y1 = y2 = 1 is at x = 1/2): from 0.991 at b = 0 down
    to 1/2 at b = 127; the mirror (y = 0, x = 127 − b) reaches down to 0.009."""
    b = np.arange(128)
    p = np.zeros((128, 4, 2))
    p[:, 1, 0] = p[:, 2, 0] = b / 127.0
    p[:, 1, 1] = p[:, 2, 1] = 1.0
    p[:, 3] = 1.0
    u = vc.solve_many(p, 0, np.full(128, 0.5))
    return b, 1 - (1 - u) ** 3


_THIRD = 42  # x1 = 42/127, x2 = 85/127: symmetric about 1/2, so the curve is at x = 1/2 when u = 1/2


def midpoint_fractions(pos: np.ndarray, rot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For segments whose start, middle and end are given (`pos` (N, 3 samples, 3), `rot` (N, 3, 4; x, y,
    z, w)): where each channel X/Y/Z/R is at the middle, as a fraction of the way from start to end (the
    rotation's projection onto the slerp arc), (N, 4); and which channels move at all (N, 4)."""
    pos = np.asarray(pos, np.float64)
    rot = np.asarray(rot, np.float64)
    n = len(pos)
    frac = np.full((n, 4), 0.5)
    dp = pos[:, 2] - pos[:, 0]
    moving = np.abs(dp) > 1e-9 * np.maximum(1.0, np.abs(pos[:, 0]))
    frac[:, :3] = np.where(moving, (pos[:, 1] - pos[:, 0]) / np.where(moving, dp, 1.0), 0.5)
    qa, qm, qb = (rot[:, i] / np.linalg.norm(rot[:, i], axis=1, keepdims=True) for i in range(3))
    qb = qb * np.where(np.sum(qa * qb, axis=1) < 0, -1.0, 1.0)[:, None]
    cos = np.clip(np.sum(qa * qb, axis=1), -1.0, 1.0)
    theta = np.arccos(cos)
    turns = theta > 1e-7
    ortho = qb - cos[:, None] * qa
    ortho /= np.where(turns, np.linalg.norm(ortho, axis=1), 1.0)[:, None]
    qm = qm * np.where(np.sum(qa * qm, axis=1) < 0, -1.0, 1.0)[:, None]
    angle = np.arctan2(np.sum(qm * ortho, axis=1), np.sum(qm * qa, axis=1))
    frac[:, 3] = np.where(turns, angle / np.where(turns, theta, 1.0), 0.5)
    return frac, np.concatenate([moving, turns[:, None]], axis=1)


def fraction_curves(frac: np.ndarray, moving: np.ndarray) -> np.ndarray:
    """VMD curves (N, 4 channels, x1/y1/x2/y2) that are at `frac` (N, 4) of the way at the middle of their
    segment: with x1 = 42, x2 = 85 and y1 = y2 = c/127 a curve is at (6c + 1) / 8 there, for fractions in
    [1/8, 7/8]; beyond, y1 = y2 = 127 (or 0) and x1 = x2 = b, the b nearest (`_steep_curves`: up to 0.991,
    down to 0.009). Channels that do not move, or move half-way, keep the linear curve."""
    frac = np.asarray(frac, np.float64)
    n = len(frac)
    c = np.clip(np.rint((8 * np.clip(frac, 0.125, 0.875) - 1) / 6 * 127), 0, 127)
    out = np.empty((n, 4, 4), np.uint8)
    out[:, :, 0] = _THIRD
    out[:, :, 1] = c
    out[:, :, 2] = 127 - _THIRD
    out[:, :, 3] = c
    _, table = _steep_curves()
    for far, y, sign in ((frac > 0.875, 127, 1.0), (frac < 0.125, 0, -1.0)):
        if far.any():
            want = frac[far] if sign > 0 else 1 - frac[far]
            b = np.abs(table[None, :] - want[:, None]).argmin(axis=1)
            b = b if sign > 0 else 127 - b
            out[far] = np.stack([b, np.full_like(b, y), b, np.full_like(b, y)], axis=1)
    still = ~np.asarray(moving, bool) | (np.abs(frac - 0.5) < 0.004)
    out[still] = vmd.LINEAR_CURVE
    return out


CANDIDATES = np.linspace(0.01, 0.99, 99)


def fit_chain_fractions(model, pos_h: np.ndarray, rot_h: np.ndarray, target: np.ndarray, which: dict
                        ) -> dict[int, np.ndarray]:
    """Rotation fractions (per bone: one per key, the segment into it; NaN for the first) chosen along the
    chain rather than bone by bone. MMD slerps each local rotation; where the source's path between two
    whole frames leaves that arc, a bone's own best point on it need not put its child where the source
    has it. So, for every one-frame segment [a, a + 1] that a bone and its parent both key, bones taken
    parents first: the point on the bone's arc that brings its farthest child's head nearest the source's
    at a + 1/2, with the parents as already chosen. `pos_h`, `rot_h`: MMD local keys on the half-frame grid
    (H, K, ...); `target`: the source's world head of each bone there (H, K, 3; NaN without a source);
    `which`: whole-frame indices of each keyed bone's keys. Bones with append (付与) parents keep their
    own projection."""
    r = vc.mmd_rig(model)
    n = len(r.names)
    heads = r.heads
    nh = pos_h.shape[0]
    mids = np.arange(1, nh, 2)  # a + 1/2 on the half grid, a = 0 .. last − 1
    na = len(mids)
    children: dict[int, list[int]] = {}
    for k in range(n):
        p = int(r.parents[k])
        if 0 <= p < n and p != k:
            children.setdefault(p, []).append(k)
    world = np.zeros((na, n, 4, 4))  # MMD's world at each midpoint, as the chosen curves make it
    out: dict[int, np.ndarray] = {}
    keyed = {k: np.asarray(v, np.int64) for k, v in which.items()}
    for k in r.order:
        p = int(r.parents[k])
        pw = world[:, p] if 0 <= p < n and p != k else np.broadcast_to(np.eye(4), (na, 4, 4))
        ph = heads[p] if 0 <= p < n and p != k else np.zeros(3)
        idx = keyed.get(k)
        local = np.broadcast_to(np.eye(4), (na, 4, 4)).copy()
        local[:, :3, 3] = heads[k] - ph
        if idx is None or len(idx) < 2:
            if idx is not None and len(idx):  # one key: held
                local[:, :3, :3] = quat_to_matrix3(rot_h[2 * idx[0], k][[3, 0, 1, 2]])
                local[:, :3, 3] += pos_h[2 * idx[0], k]
            world[:, k] = pw @ local
            continue
        # the segment around each midpoint a + 1/2, for this bone's keys
        seg = np.clip(np.searchsorted(idx, np.arange(na), "right") - 1, 0, len(idx) - 2)
        a_, b_ = idx[seg], idx[seg + 1]
        samples = np.stack([2 * a_, 2 * np.arange(na) + 1, 2 * b_], axis=1)
        t = (np.arange(na) + 0.5 - a_) / np.maximum(b_ - a_, 1)
        frac, moving = midpoint_fractions(pos_h[samples, k], rot_h[samples, k])
        s_pos = np.where(b_ - a_ == 1, frac[:, 0], t)  # positions: per channel, their own fraction
        pos_mid = pos_h[2 * a_, k] + np.where((b_ - a_ == 1)[:, None], frac[:, :3], t[:, None]) * \
            (pos_h[2 * b_, k] - pos_h[2 * a_, k])
        del s_pos
        qa, qb = rot_h[2 * a_, k], rot_h[2 * b_, k]
        s_rot = np.where(b_ - a_ == 1, frac[:, 3], t)
        one = (b_ - a_ == 1) & moving[:, 3] & (r.append_parent[k] < 0)
        kids = [c for c in children.get(k, []) if np.isfinite(target[:, c]).all()]
        if one.any() and kids:
            c = max(kids, key=lambda c: float(np.linalg.norm(heads[c] - heads[k])))
            goal = target[mids, c]
            base = pw.copy()
            base[:, :3, 3] = (pw[:, :3, :3] @ (heads[k] - ph + pos_mid)[:, :, None])[:, :, 0] + pw[:, :3, 3]
            qs = slerp_xyzw(np.repeat(qa[:, None], len(CANDIDATES), 1).reshape(-1, 4),
                             np.repeat(qb[:, None], len(CANDIDATES), 1).reshape(-1, 4),
                             np.tile(CANDIDATES, na))
            rm = quat_to_matrix3(qs[:, [3, 0, 1, 2]]).reshape(na, len(CANDIDATES), 3, 3)
            offset = heads[c] - heads[k]
            tip = np.einsum("aij,acjk,k->aci", base[:, :3, :3], rm, offset) + base[:, None, :3, 3]
            best = np.argmin(np.linalg.norm(tip - goal[:, None], axis=2), axis=1)
            s_rot = np.where(one, CANDIDATES[best], s_rot)
        q = slerp_xyzw(qa, qb, np.clip(s_rot, 0.0, 1.0))
        local[:, :3, :3] = quat_to_matrix3(q[:, [3, 0, 1, 2]])
        local[:, :3, 3] += pos_mid
        world[:, k] = pw @ local
        per_key = np.full(len(idx), np.nan)
        single = np.flatnonzero(one)
        per_key[seg[single] + 1] = s_rot[single]
        out[k] = per_key
    return out
