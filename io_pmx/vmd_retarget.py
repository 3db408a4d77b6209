"""The pure part of retargeting a motion onto a rigged PMX (no bpy): per frame and PMX bone, the MMD local
key that makes `core.skinning.mmd_world_matrices` give the wanted deformation (see `blender_vmd_retarget`).
"""
from __future__ import annotations

import numpy as np

from ..core.skinning import _mul_xyzw, _slerp_xyzw
from ..core.transforms import matrix3_to_quat
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
