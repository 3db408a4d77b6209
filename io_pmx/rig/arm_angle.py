"""The arm angle (`--arm-angle θ`, docs/mmd.md §5.5; no bpy): the one function giving the rest transforms it
produces (`arm_angle_rest_transforms`), which the PMX export (`turn_arms`, on records) and the VMD exporter
(`skeleton_arm_angle_rest`, on a core skeleton) both use, so that a model and its motions share one rest pose.
"""
from __future__ import annotations

import math

import numpy as np

from ...core.skinning import parents_first
from ..model import pmx
from .bone_map import map_bones
from .names import SIDES

_SWAP4 = np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1]], np.float64)  # MMD ⇄ Blender axes


def _rotation_about_y(angle: float, point) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    r = np.array([[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1]], np.float64)
    t = np.eye(4)
    t[:3, 3] = point
    back = np.eye(4)
    back[:3, 3] = -np.asarray(point, np.float64)
    return t @ r @ back


def arm_angle_rest_transforms(parents, heads, arms: dict[int, str], angle_degrees: float) -> np.ndarray:
    """The rest transforms `--arm-angle θ` produces, as one (N, 4, 4) array D in Blender axes: a bone whose
    rest (world) matrix was M rests at D[i] @ M afterwards.

    `parents`: parent index per bone (−1 for a root); `heads`: (N, 3) bone heads in Blender axes (any unit: the
    translations of D come out in the same unit); `arms`: upper-arm bone index → 'L' (the character's left, +X)
    or 'R'. The left upper arm turns by +θ and the right by −θ about Blender's +Y axis through its head, so a
    T-pose arm's tip drops by θ on both sides; everything below an upper arm moves with it rigidly; every
    other bone keeps D = identity. This is the only place that defines the arm-angle rest pose: the PMX
    export (`apply`) and the VMD exporter both call it."""
    parents = np.asarray(parents, np.int64)
    heads = np.asarray(heads, np.float64).reshape(-1, 3)
    n = len(parents)
    out = np.tile(np.eye(4), (n, 1, 1))
    theta = math.radians(float(angle_degrees))
    for j in parents_first(parents, out_of_range_is_root=True):
        p = int(parents[j])
        d = out[p] if 0 <= p < n else np.eye(4)
        if j in arms and theta:
            moved_head = d[:3, :3] @ heads[j] + d[:3, 3]
            d = _rotation_about_y(theta if arms[j] == "L" else -theta, moved_head) @ d
        out[j] = d
    return out


def skeleton_arm_angle_rest(skeleton, angle_degrees: float, bone_map: dict | None = None) -> np.ndarray:
    """`arm_angle_rest_transforms` for a core Skeleton (Blender axes): the upper arms found by `map_bones`
    (with the same `bone_map` as the model export), heads from the bind matrices. For the VMD exporter."""
    names, parents = skeleton.names, [int(p) for p in skeleton.parents]
    mapping = map_bones(names, parents, None, bone_map)
    arms = {i: side for side, prefix in SIDES.items() if (i := mapping.index(prefix + "腕")) is not None}
    heads = skeleton.binds()[:, :3, 3]
    return arm_angle_rest_transforms(parents, heads, arms, angle_degrees)


def turn_arms(model: pmx.PmxModel, arms: dict[int, str], angle: float) -> list[str]:
    """Turn the upper arms with `arm_angle_rest_transforms` and re-pose everything they carry with linear blend
    skinning: bone heads and axes, vertex positions, normals and SDEF points, vertex morph offsets."""
    warnings: list[str] = []
    bones = model.bones
    n = len(bones)
    parents = [int(b.parent) for b in bones]
    pos = np.array([b.position for b in bones], np.float64).reshape(n, 3)
    # MMD and Blender axes differ by the Y↔Z swap only (the scale does not matter for a rotation about a head)
    d_blender = arm_angle_rest_transforms(parents, pos[:, [0, 2, 1]], arms, angle)
    d = _SWAP4 @ d_blender @ _SWAP4
    moved = np.flatnonzero(np.abs(d - np.eye(4)).max(axis=(1, 2)) > 0)
    for k in moved:
        b = bones[k]
        r, t = d[k, :3, :3], d[k, :3, 3]
        b.position = (r @ np.asarray(b.position, np.float64) + t).astype(np.float32)
        for name in ("tail_offset", "fixed_axis", "local_x", "local_z"):
            value = getattr(b, name)
            if value is not None:
                setattr(b, name, (r @ np.asarray(value, np.float64)).astype(np.float32))
    v = model.vertices
    if len(v) and len(moved):
        count = np.array(pmx.DEFORM_BONE_COUNT + (0,) * 251, np.int64)[v["deform"]]
        j = v["bones"].astype(np.int64)
        w = v["weights"].astype(np.float64)
        used = (np.arange(4)[None, :] < count[:, None]) & (j >= 0) & (j < n)
        w = np.where(used, w, 0)
        affected = (np.isin(j, moved) & used & (w != 0)).any(axis=1)
        rows = np.flatnonzero(affected)
        if len(rows):
            blend = np.einsum("vk,vkij->vij", w[rows], d[np.where(used[rows], j[rows], 0)])
            lin, off = blend[:, :3, :3], blend[:, :3, 3]
            p = v["position"][rows].astype(np.float64)
            v["position"][rows] = (np.einsum("vij,vj->vi", lin, p) + off).astype(np.float32)
            nor = np.einsum("vij,vj->vi", lin, v["normal"][rows].astype(np.float64))
            length = np.linalg.norm(nor, axis=1, keepdims=True)
            v["normal"][rows] = np.where(length > 0, nor / np.where(length > 0, length, 1), nor).astype(np.float32)
            sdef = rows[v["deform"][rows] == pmx.SDEF]
            if len(sdef):
                at = np.searchsorted(rows, sdef)
                for key in ("sdef_c", "sdef_r0", "sdef_r1"):
                    q = v[key][sdef].astype(np.float64)
                    v[key][sdef] = (np.einsum("vij,vj->vi", lin[at], q) + off[at]).astype(np.float32)
            row_of = np.full(len(v), -1, np.int64)
            row_of[rows] = np.arange(len(rows))
            for morph in model.morphs:
                if morph.kind != pmx.MORPH_VERTEX or not len(morph.offsets):
                    continue
                idx = morph.offsets["vertex"].astype(np.int64)
                r_ = np.where((idx >= 0) & (idx < len(v)), row_of[np.clip(idx, 0, len(v) - 1)], -1)
                sel = np.flatnonzero(r_ >= 0)
                if len(sel):
                    o = morph.offsets["offset"][sel].astype(np.float64)
                    morph.offsets["offset"][sel] = np.einsum("vij,vj->vi", lin[r_[sel]], o).astype(np.float32)
    on_arms = [r.name for r in model.rigid_bodies if 0 <= r.bone < n and r.bone in set(moved.tolist())]
    if on_arms:
        warnings.append(f"--arm-angle: rigid bodies on the arms are not turned: {', '.join(on_arms)}")
    return warnings
