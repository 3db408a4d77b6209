"""Pose evaluation and linear blend skinning: the independent reference tests compare Blender against.

A vertex moves with each bone that weighs on it: from model space into the bone's space at bind time
(the inverse bind matrix), then back out with the bone's current world transform, the results blended
by weight:  v' = Σ_k w_k · World_k · Bind_k⁻¹ · v.  A bone's world transform is its parent's world
transform times its own local (parent-relative) transform, walked from the root.
"""
from __future__ import annotations

import numpy as np

from .transforms import slerp, trs_to_matrix


def world_matrices(parents, local) -> np.ndarray:
    """World (model-space) matrices from parent indices (-1 = root) and local 4×4 matrices.

    Bones may be stored in any order; a parent cycle or out-of-range parent raises ValueError.
    """
    parents = np.asarray(parents, dtype=np.int64)
    local = np.asarray(local, dtype=np.float64)
    n = len(parents)
    world = np.empty_like(local)
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
                raise ValueError(f"bone {i} has parent {p} outside 0..{n - 1}")
            i = p
        for j in reversed(chain):
            p = int(parents[j])
            world[j] = local[j] if p < 0 else world[p] @ local[j]
            done[j] = True
    return world


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
