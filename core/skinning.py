"""Pose evaluation and linear blend skinning: the independent reference tests compare Blender against.

A vertex moves with each bone that weighs on it: from model space into the bone's space at bind time
(the inverse bind matrix), then back out with the bone's current world transform, the results blended
by weight:  v' = Σ_k w_k · World_k · Bind_k⁻¹ · v.  A bone's world transform is its parent's world
transform times its own local (parent-relative) transform, walked from the root.
"""
from __future__ import annotations

import numpy as np

from .transforms import (matrix3_to_quat, quat_multiply_xyzw, quat_xyzw_to_matrix3,
                         slerp, slerp_xyzw, trs_to_matrix)


def merge_repeated_bones(joints: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weights (V, K) with a bone named twice in one vertex summed into its first slot, the later slot's weight
    set to 0 (a vertex group, like most formats' readers, holds one weight per bone). Slots of weight 0 are
    unused and never merged."""
    weights = np.array(weights, copy=True)
    for k in range(1, weights.shape[1]):
        for s in range(k):
            same = (joints[:, k] == joints[:, s]) & (weights[:, k] != 0) & (weights[:, s] != 0)
            if same.any():
                weights[same, s] += weights[same, k]
                weights[same, k] = 0
    return weights


def world_matrices(parents, local) -> np.ndarray:
    """World (model-space) matrices from parent indices (-1 = root) and local 4×4 matrices.

    Bones may be stored in any order; a parent cycle or out-of-range parent raises ValueError.
    """
    parents = np.asarray(parents, dtype=np.int64)
    local = np.asarray(local, dtype=np.float64)
    world = np.empty_like(local)
    for j in parents_first(parents):
        p = int(parents[j])
        world[j] = local[j] if p < 0 else world[p] @ local[j]
    return world


def parents_first(parents, out_of_range_is_root: bool = False) -> list[int]:
    """Bone indices with every bone after its parent (-1 = root), each bone's unplaced ancestors placed when
    it is met in index order. A parent cycle raises ValueError; so does a parent outside -1..n-1 unless
    `out_of_range_is_root`, which makes that bone a root."""
    parents = np.asarray(parents, dtype=np.int64)
    n = len(parents)
    order: list[int] = []
    done = np.zeros(n, dtype=bool)
    for start in range(n):
        chain = []
        i = start
        while i >= 0 and not done[i]:
            if i in chain:
                raise ValueError(f"bone {i} is in a parent cycle")
            chain.append(i)
            p = int(parents[i])
            if p < -1 or p >= n:
                if not out_of_range_is_root:
                    raise ValueError(f"bone {i} has parent {p} outside 0..{n - 1}")
                p = -1
            i = p
        chain.reverse()
        order += chain
        done[chain] = True
    return order


def skin_matrices(world, bind) -> np.ndarray:
    """Per-bone skinning matrices World · Bind⁻¹."""
    return np.asarray(world, dtype=np.float64) @ np.linalg.inv(np.asarray(bind, dtype=np.float64))


def skin(positions, joints, weights, skinning) -> np.ndarray:
    """Linear blend skinning of positions (V,3) with joints/weights (V,K) and matrices (B,4,4).

    Weights are used as stored (not normalised), as engines do.
    """
    p = np.asarray(positions, dtype=np.float64)
    j = np.asarray(joints, dtype=np.int64)
    w = np.asarray(weights, dtype=np.float64)
    m = np.asarray(skinning, dtype=np.float64)
    blended = np.einsum("vk,vkij->vij", w, m[j])  # (V, 4, 4)
    return np.einsum("vij,vj->vi", blended[:, :3, :3], p) + blended[:, :3, 3]


def pose_from_trs(parents, translations, rotations, scales) -> np.ndarray:
    """World matrices of a pose given per-bone local T, R (w,x,y,z), S."""
    return world_matrices(parents, trs_to_matrix(translations, rotations, scales))


def sample_linear(times, values, t) -> np.ndarray:
    """Linear interpolation of key values (K, C) at time t, clamped at both ends."""
    times = np.asarray(times, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if len(times) == 1 or t <= times[0]:
        return values[0]
    if t >= times[-1]:
        return values[-1]
    i = int(np.searchsorted(times, t, side="right")) - 1
    f = (t - times[i]) / (times[i + 1] - times[i])
    return values[i] * (1 - f) + values[i + 1] * f


def sample_slerp(times, quats, t) -> np.ndarray:
    """Shortest-arc slerp of key rotations (K, 4) w,x,y,z at time t, clamped at both ends."""
    times = np.asarray(times, dtype=np.float64)
    if len(times) == 1 or t <= times[0]:
        return np.asarray(quats[0], dtype=np.float64)
    if t >= times[-1]:
        return np.asarray(quats[-1], dtype=np.float64)
    i = int(np.searchsorted(times, t, side="right")) - 1
    f = (t - times[i]) / (times[i + 1] - times[i])
    return slerp(quats[i], quats[i + 1], f)


def sample_step(times, values, t) -> np.ndarray:
    times = np.asarray(times, dtype=np.float64)
    i = max(int(np.searchsorted(times, t, side="right")) - 1, 0)
    return np.asarray(values[i], dtype=np.float64)


def evaluate_animation(skeleton, animation, t: float) -> np.ndarray:
    """World matrices of `skeleton` (core.model.Skeleton) posed by `animation` at time t.

    Channels a track lacks keep the bone's default (rest) value; bones without a track keep their
    default pose. Translation and scale interpolate linearly, rotation by shortest-arc slerp, as
    Urho3D/UrhoX and glTF do; STEP tracks hold each key until the next.
    """
    n = len(skeleton.bones)
    t_ = np.array([b.rest_translation for b in skeleton.bones], dtype=np.float64).reshape(n, 3)
    r_ = np.array([b.rest_rotation for b in skeleton.bones], dtype=np.float64).reshape(n, 4)
    s_ = np.array([b.rest_scale for b in skeleton.bones], dtype=np.float64).reshape(n, 3)
    index = {b.name: i for i, b in enumerate(skeleton.bones)}
    for track in animation.tracks:
        i = index.get(track.bone)
        if i is None:
            continue
        step = track.interpolation == "STEP"
        if track.translations is not None and len(track.translations):
            t_[i] = (sample_step if step else sample_linear)(track.translation_times, track.translations, t)
        if track.rotations is not None and len(track.rotations):
            r_[i] = (sample_step if step else sample_slerp)(track.rotation_times, track.rotations, t)
        if track.scales is not None and len(track.scales):
            s_[i] = (sample_step if step else sample_linear)(track.scale_times, track.scales, t)
    return pose_from_trs(skeleton.parents, t_, r_, s_)


def rest_pose(skeleton) -> np.ndarray:
    """World matrices of the skeleton's default pose."""
    return pose_from_trs(
        skeleton.parents,
        [b.rest_translation for b in skeleton.bones],
        [b.rest_rotation for b in skeleton.bones],
        [b.rest_scale for b in skeleton.bones],
    )


def skin_mesh(mesh, skeleton, world) -> np.ndarray:
    """Deformed positions of a core Mesh under world bone matrices (static meshes return unchanged)."""
    if mesh.joints is None or mesh.weights is None:
        return np.asarray(mesh.positions, dtype=np.float64)
    return skin(mesh.positions, mesh.joints, mesh.weights, skin_matrices(world, skeleton.binds()))


# -- the MMD evaluation rule ----------------------------------------------------------------------------
# MMD (docs/mmd.md §3, §4.4): a bone key holds a position offset and a rotation in model-aligned axes;
# between two keys each position channel X, Y, Z follows its own Bézier timing curve and the rotation is
# slerp(q0, q1, bezier_R(t)). A curve is (x1, y1, x2, y2) in 0..127: control points (x1/127, y1/127) and
# (x2/127, y2/127) from (0, 0) to (1, 1); the timing is y at the curve parameter u where x(u) = t. Append
# (付与) bones add ratio × their append parent's animated rotation (slerp from identity) and translation, a
# chained append parent passing on its own result; IK is not evaluated here. Everything below works in MMD
# axes and units and takes plain arrays, so it can check any importer/exporter independently.

def _cubic(a, b, u):
    """One coordinate of a cubic Bézier from 0 to 1 with inner control values a, b."""
    v = 1.0 - u
    return 3.0 * v * v * u * a + 3.0 * v * u * u * b + u * u * u


def mmd_bezier(points, t) -> np.ndarray:
    """MMD timing y(t) of curves `points` (..., 4) = x1, y1, x2, y2 (0..127) at fractions t (...) in [0, 1].

    x(u) is monotone for control values in [0, 1], so u is found by bisection (to float64 precision)."""
    p = np.asarray(points, dtype=np.float64) / 127.0
    t = np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0)
    p, t = np.broadcast_arrays(p, t[..., None])
    t = t[..., 0]
    x1, y1, x2, y2 = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    lo, hi = np.zeros_like(t), np.ones_like(t)
    for _ in range(56):
        u = 0.5 * (lo + hi)
        below = _cubic(x1, x2, u) < t
        lo = np.where(below, u, lo)
        hi = np.where(below, hi, u)
    return _cubic(y1, y2, 0.5 * (lo + hi))


def mmd_sample_bone(frames, positions, rotations_xyzw, curves, frame: float) -> tuple[np.ndarray, np.ndarray]:
    """(position offset, rotation x,y,z,w) of one bone's keys at `frame` (VMD frames, 30 fps).

    `frames` (K,) sorted ascending; `curves` (K, 4, 4): per key, channels X/Y/Z/R × x1/y1/x2/y2, each
    describing the interpolation from the previous key to this one. Held before the first and after the last
    key. An all-zero quaternion counts as identity (as mmd_tools reads it)."""
    frames = np.asarray(frames, np.float64)
    pos = np.asarray(positions, np.float64)
    rot = np.asarray(rotations_xyzw, np.float64).copy()
    rot[~np.any(rot != 0, axis=-1)] = (0.0, 0.0, 0.0, 1.0)
    if len(frames) == 1 or frame <= frames[0]:
        return pos[0], rot[0]
    if frame >= frames[-1]:
        return pos[-1], rot[-1]
    k = int(np.searchsorted(frames, frame, side="right"))
    t = (frame - frames[k - 1]) / (frames[k] - frames[k - 1])
    s = mmd_bezier(curves[k], np.full(4, t))
    p = pos[k - 1] + (pos[k] - pos[k - 1]) * s[:3]
    return p, slerp_xyzw(rot[k - 1], rot[k], s[3])


def mmd_world_matrices(positions, parents, local_positions, local_rotations_xyzw, append_parent=None,
                       append_ratio=None, append_rotate=None, append_move=None, append_local=None,
                       order=None, append: bool = True) -> np.ndarray:
    """World matrices (B, 4, 4; MMD axes and units) of bones at rest `positions` (B, 3) posed by animated
    offsets `local_positions` (B, 3) and rotations (B, 4, x,y,z,w). Local transform = T(head − parent head +
    offset) · R(rotation); world = parent world · local. Append bones (non-local: the parent's animated value,
    or a chained append parent's result; local flag: the parent's world rotation / deformation translation)
    get ratio × that added, rotation as slerp(identity, r, ratio) multiplied after their own. `order`: the
    evaluation order (MMD's transform order; default: file order)."""
    heads = np.asarray(positions, np.float64)
    n = len(heads)
    parents = np.asarray(parents, np.int64)
    pos = np.asarray(local_positions, np.float64).copy()
    rot = np.asarray(local_rotations_xyzw, np.float64).copy()
    order = list(range(n)) if order is None else [int(i) for i in order]
    world = np.tile(np.eye(4), (n, 1, 1))
    done = np.zeros(n, bool)
    final_rot, final_pos = rot.copy(), pos.copy()
    ident = np.array([0.0, 0, 0, 1])

    def world_of(i):
        if done[i]:
            return world[i]
        p = int(parents[i])
        local = np.eye(4)
        local[:3, :3] = quat_xyzw_to_matrix3(final_rot[i])
        local[:3, 3] = heads[i] - (heads[p] if 0 <= p < n else 0.0) + final_pos[i]
        world[i] = (world_of(p) @ local) if 0 <= p < n and p != i else local
        done[i] = True
        return world[i]

    for i in order:
        ap = -1 if append_parent is None else int(append_parent[i])
        if append and 0 <= ap < n and ap != i:
            ratio = float(append_ratio[i])
            local_flag = bool(append_local[i]) if append_local is not None else False
            if append_rotate is not None and append_rotate[i]:
                if local_flag:
                    r = matrix3_to_quat(world_of(ap)[:3, :3])[[1, 2, 3, 0]]
                elif append_rotate[ap] and append_parent is not None and 0 <= int(append_parent[ap]) < n:
                    r = final_rot[ap]
                else:
                    r = rot[ap]
                if ratio != 1.0:
                    r = slerp_xyzw(ident, r, ratio)
                final_rot[i] = quat_multiply_xyzw(rot[i], r)
            if append_move is not None and append_move[i]:
                if local_flag:
                    w = world_of(ap)  # the translation of the parent's deformation (world · bind⁻¹)
                    t = w[:3, :3] @ -heads[ap] + w[:3, 3]
                elif append_move[ap] and append_parent is not None and 0 <= int(append_parent[ap]) < n:
                    t = final_pos[ap]
                else:
                    t = pos[ap]
                final_pos[i] = pos[i] + t * ratio
        world_of(i)
    for i in range(n):
        world_of(i)
    return world


def mmd_skin_matrices(world, positions) -> np.ndarray:
    """Skinning matrices World · T(−head) (MMD bones have no rest orientation)."""
    m = np.array(world, np.float64, copy=True)
    m[:, :3, 3] -= np.einsum("bij,bj->bi", m[:, :3, :3], np.asarray(positions, np.float64))
    return m
# -- end MMD evaluation rule ------------------------------------------------------------------------------------------
