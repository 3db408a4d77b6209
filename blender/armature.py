"""Armatures: core Skeleton ⇄ Blender armature object.

Edit bones are built from bind matrices in one EDIT pass (bones may come in any file order). Blender keeps
only head, tail and roll, so the file's exact values travel in the bone's `skinbridge` custom property
(JSON of the core bone's `extras`) and the mappings reuse them on export while the bone still matches.

`BoneFrame` is the constant change of frame between a file's parent-relative bone transforms and Blender's
pose basis of one bone (through the file's exact bind matrices); the default pose and the actions
(`blender.action`) both map through it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import bpy
import numpy as np
from mathutils import Matrix

from ..core import model as cm
from .props import json_prop
from ..core.transforms import (
    affine_inverse, matrix3_to_quat, matrix_to_trs, quat_angle, quat_multiply, quat_to_matrix3, trs_to_matrix,
)

PROP = "skinbridge"
POSE_PROP = "skinbridge_pose"  # on a pose bone: its default basis (location, quaternion, scale) set at import
EXACT_FRAME = 1e-6  # a frame whose residue is below this maps keys as exactly as float32 keys are stored


# -- the per-bone change of frame between a file's local transforms and Blender's pose basis ---------------

@dataclass
class BoneFrame:
    """basis = A · local · B, with A = Rest⁻¹ · Bind_parent and B = Bind⁻¹ · Rest (Rest the edit bone's
    matrix, Bind the file's exact bind matrix), held channel by channel as
    A ≈ [sigma·R(q) | t] and B ≈ diag(1 / bind_scale) · R(q_after).

    The left factor is a similarity and the right one a scale followed by a small rotation whenever the
    parent's bind has uniform scale and the bone's bind has no shear (the rotation takes up what Blender's
    float32 head/tail/roll rebuild leaves off): then every channel maps on its own, and key times and the
    linear/slerp interpolation of each channel survive. A bind with shear, or below a parent whose bind
    scale is not uniform, has no such form (Blender's rest is rigid and its pose basis holds no shear); the
    nearest one is used and ``residue`` says how far it is (0 exact)."""

    sigma: float
    q: np.ndarray
    t: np.ndarray
    bind_scale: np.ndarray
    q_after: np.ndarray
    residue: float = 0.0

    def to_basis(self, channel: str, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, np.float64)
        if channel == "t":
            return self.sigma * (v @ quat_to_matrix3(self.q).T) + self.t
        if channel == "r":
            return quat_multiply(quat_multiply(self.q, v), self.q_after)
        return self.sigma * v / self.bind_scale

    def from_basis(self, channel: str, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, np.float64)
        if channel == "t":
            return ((v - self.t) @ quat_to_matrix3(self.q)) / self.sigma
        if channel == "r":
            conj = np.array([1.0, -1, -1, -1])
            return quat_multiply(quat_multiply(self.q * conj, v), self.q_after * conj)
        return v * self.bind_scale / self.sigma

    @property
    def exact(self) -> bool:
        return self.residue <= EXACT_FRAME


def to_basis_of(frames: list[BoneFrame], channel: str, v: np.ndarray) -> np.ndarray:
    """`BoneFrame.to_basis` of one value per bone (B, C) through each bone's frame, in one call: the same
    arithmetic, bone by bone."""
    sigma, q, t, bind_scale, q_after = _stacked(frames)
    v = np.asarray(v, np.float64)
    if channel == "t":
        return sigma[:, None] * (v[:, None, :] @ quat_to_matrix3(q).transpose(0, 2, 1))[:, 0] + t
    if channel == "r":
        return quat_multiply(quat_multiply(q, v), q_after)
    return sigma[:, None] * v / bind_scale


def from_basis_of(frames: list[BoneFrame], channel: str, v: np.ndarray) -> np.ndarray:
    """`BoneFrame.from_basis` of one value per bone (B, C), in one call (see `to_basis_of`)."""
    sigma, q, t, bind_scale, q_after = _stacked(frames)
    v = np.asarray(v, np.float64)
    if channel == "t":
        return ((v - t)[:, None, :] @ quat_to_matrix3(q))[:, 0] / sigma[:, None]
    if channel == "r":
        conj = np.array([1.0, -1, -1, -1])
        return quat_multiply(quat_multiply(q * conj, v), q_after * conj)
    return v * bind_scale / sigma[:, None]


def _stacked(frames: list[BoneFrame]) -> tuple[np.ndarray, ...]:
    return (np.array([f.sigma for f in frames], np.float64), np.array([f.q for f in frames], np.float64),
            np.array([f.t for f in frames], np.float64), np.array([f.bind_scale for f in frames], np.float64),
            np.array([f.q_after for f in frames], np.float64))


def _rotation_of(u: np.ndarray, vt: np.ndarray) -> np.ndarray:
    """Proper rotations u · vt of stacked SVD factors (…, 3, 3); a mirrored bind's mirror stays in the residue."""
    r = u @ vt
    mirrored = np.linalg.det(r) < 0
    if mirrored.any():
        u = u.copy()
        u[mirrored, :, -1] *= -1
        r[mirrored] = u[mirrored] @ vt[mirrored]
    return r


def _frames_of(rest: np.ndarray, parent_bind: np.ndarray, bind: np.ndarray) -> list[BoneFrame]:
    """The frame of each bone from its rest (armature space), its parent's bind (or the armature's inverse
    world matrix for a root) and its own bind, stacked (N, 4, 4): numpy's matrix functions take a stack matrix
    by matrix, so each frame is what one bone alone would give."""
    a = affine_inverse(rest) @ parent_bind
    u, sv, vt = np.linalg.svd(a[:, :3, :3])
    sigma = sv.mean(axis=1)
    rot_a = _rotation_of(u, vt)
    residue = np.abs(a[:, :3, :3] - sigma[:, None, None] * rot_a).max(axis=(1, 2)) / np.maximum(sigma, 1e-30)
    b = affine_inverse(bind) @ rest
    u, sv, vt = np.linalg.svd(b[:, :3, :3])
    rot_b = _rotation_of(u, vt)
    stretch = (u * sv[:, None, :]) @ u.transpose(0, 2, 1)  # b = stretch · rot_b, stretch symmetric
    diag = np.diagonal(stretch, axis1=1, axis2=2).copy()
    size = np.abs(diag).max(axis=1)
    off = np.abs(stretch - diag[:, :, None] * np.eye(3)).max(axis=(1, 2)) / size
    moved = np.abs(b[:, :3, 3]).max(axis=1) / size / np.maximum(1.0, np.abs(rest[:, :3, 3]).max(axis=1))
    residue = np.maximum(np.maximum(residue, off), moved)
    q, q_after = matrix3_to_quat(rot_a), matrix3_to_quat(rot_b)
    return [BoneFrame(float(sigma[i]), q[i], a[i, :3, 3].copy(), 1.0 / diag[i], q_after[i], float(residue[i]))
            for i in range(len(rest))]


def rest_matrices(arm_ob) -> np.ndarray:
    """Every bone's armature-space rest (edit-bone) matrix, (N, 4, 4) float64 in `arm_ob.data.bones` order:
    one bulk read (Blender keeps them as float32, column by column)."""
    bones = arm_ob.data.bones
    flat = np.empty(16 * len(bones), np.float32)
    bones.foreach_get("matrix_local", flat)
    return flat.reshape(-1, 4, 4).transpose(0, 2, 1).astype(np.float64)


def bind_matrices(arm_ob, rests: np.ndarray | None = None, kept_binds: dict[str, np.ndarray] | None = None
                  ) -> dict[str, np.ndarray]:
    """Armature-space bind matrix per bone: the file's exact one (kept on the bone) while the bone still
    matches it, else the edit bone's matrix (as `read_skeleton` chooses it for export). ``rests``: what
    `rest_matrices` gives, when the caller has it; ``kept_binds``: the binds kept on the bones, by name, when
    the caller has them (`build_armature`, which has just written them)."""
    bones = arm_ob.data.bones
    rests = rest_matrices(arm_ob) if rests is None else rests
    out = {bone.name: rests[i].copy() for i, bone in enumerate(bones)}
    if not np.allclose(np.array(arm_ob.matrix_world, dtype=np.float64), np.eye(4)):
        return out
    kept, exact = [], []
    for i, bone in enumerate(bones):
        raw = bone_extras(bone).get("bind") if kept_binds is None else kept_binds.get(bone.name)
        if raw is not None and len(raw) == 16:
            kept.append(i)
            exact.append(np.array(raw, dtype=np.float64).reshape(4, 4))
    if kept:
        exact = np.array(exact)
        t_e, r_e, _ = matrix_to_trs(exact)
        t_b, r_b, _ = matrix_to_trs(rests[kept])
        tol = 1e-4 * np.maximum(1.0, np.abs(t_e).max(axis=1))
        angle = 2 * np.arccos(np.minimum(1.0, np.abs(np.sum(r_e * r_b, axis=1))))
        for k in np.flatnonzero((np.abs(t_e - t_b).max(axis=1) < tol) & (angle < 1e-3)):
            out[bones[kept[k]].name] = exact[k]
    return out


def bone_frames(arm_ob, binds: dict[str, np.ndarray] | None = None) -> dict[str, BoneFrame]:
    """The constant change of frame of every bone (never refuses: see `BoneFrame.residue`); ``binds``: what
    `bind_matrices` gives, when the caller has it."""
    bones = arm_ob.data.bones
    if not len(bones):
        return {}
    rests = rest_matrices(arm_ob)
    binds = bind_matrices(arm_ob, rests) if binds is None else binds
    root = affine_inverse(np.array(arm_ob.matrix_world, dtype=np.float64))
    parent_binds = np.array([binds[b.parent.name] if b.parent else root for b in bones])
    own = np.array([binds[b.name] for b in bones])
    return dict(zip([b.name for b in bones], _frames_of(rests, parent_binds, own)))


def _bone_lengths(skel: cm.Skeleton, heads: np.ndarray) -> np.ndarray:
    """A display length per bone: distance to its nearest child, else its parent's, else a fraction of the size."""
    n = len(skel.bones)
    size = float(np.ptp(heads, axis=0).max()) if n > 1 else 1.0
    default = max(size * 0.05, 1e-3)
    lengths = np.full(n, -1.0)
    parents = skel.parents
    for i in range(n):
        kids = np.flatnonzero(parents == i)
        if len(kids):
            d = np.linalg.norm(heads[kids] - heads[i], axis=1)
            d = d[d > default * 0.05]
            if len(d):
                lengths[i] = float(d.min())
    for i in skel.topological_order():
        if lengths[i] <= 0:
            p = parents[i]
            lengths[i] = lengths[p] * 0.5 if p >= 0 and lengths[p] > 0 else default
    return np.maximum(lengths, default * 0.1)


def build_armature(context, skel: cm.Skeleton, name: str, collection, created: list) -> bpy.types.Object:
    arm = bpy.data.armatures.new(name)
    created.append(arm)
    ob = bpy.data.objects.new(f"{name}_rig", arm)
    created.append(ob)
    collection.objects.link(ob)
    binds = skel.binds()
    # Edit bones carry no scale: build each from its bind matrix with the scale taken out.
    t, r, s = matrix_to_trs(binds)
    rest = trs_to_matrix(t, r, np.ones_like(s))
    lengths = _bone_lengths(skel, t)

    view_layer = context.view_layer
    previous_active = view_layer.objects.active
    view_layer.objects.active = ob
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        ebs = []
        for i, b in enumerate(skel.bones):
            eb = arm.edit_bones.new(b.name)
            eb.head = (0.0, 0.0, 0.0)
            eb.tail = (0.0, float(lengths[i]), 0.0)
            eb.matrix = Matrix(rest[i].tolist())
            eb.use_deform = b.deform
            ebs.append(eb)
        for i, b in enumerate(skel.bones):
            if b.parent >= 0:
                ebs[i].parent = ebs[b.parent]
        names = [eb.name for eb in ebs]  # Blender may have renamed duplicates
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
        view_layer.objects.active = previous_active
    kept = {}
    for i, b in enumerate(skel.bones):
        bone = arm.bones[names[i]]
        kept[names[i]] = [float(x) for x in b.bind.reshape(-1)]  # what the bone keeps, read back by set_pose
        bone[PROP] = json.dumps({"bind": kept[names[i]], **b.extras})
    set_pose(ob, skel, names, rest, kept)
    ob.data[PROP] = json.dumps({"names": names})
    return ob


def set_pose(ob, skel: cm.Skeleton, names: list[str], rest: np.ndarray | None = None,
             kept_binds: dict[str, list[float]] | None = None) -> None:
    """Pose the armature at the skeleton's default pose (which may differ from its bind pose), through the
    same per-bone frames as the actions (`bone_frames`), so that a channel an action leaves out holds the
    default pose's value mapped alike. ``kept_binds``: the binds kept on the bones (`bind_matrices`), when the
    caller has just written them."""
    frames = bone_frames(ob, None if kept_binds is None else bind_matrices(ob, kept_binds=kept_binds))
    if not names:
        return
    of = [frames[name] for name in names]
    bones = skel.bones
    poses = np.concatenate([to_basis_of(of, "t", np.array([b.rest_translation for b in bones], np.float64)),
                            to_basis_of(of, "r", np.array([b.rest_rotation for b in bones], np.float64)),
                            to_basis_of(of, "s", np.array([b.rest_scale for b in bones], np.float64))], axis=1)
    pose_bones = ob.pose.bones
    row = {name: i for i, name in enumerate(names)}
    order = [row[pb.name] for pb in pose_bones]  # pose bones in their own order, each its row of `poses`
    for pb, pose in zip(pose_bones, poses[order].tolist()):
        pb.rotation_mode = "QUATERNION"  # (already the mode of a new bone: no values change)
        pb[POSE_PROP] = pose
    ordered = poses[order]  # one bulk write per channel: as the per-bone assignments, in float32
    for channel, cols in (("location", slice(0, 3)), ("rotation_quaternion", slice(3, 7)), ("scale", slice(7, 10))):
        pose_bones.foreach_set(channel, np.ascontiguousarray(ordered[:, cols], np.float32).ravel())


def bone_extras(bone) -> dict:
    return json_prop(bone, PROP)


def file_bind(bone) -> np.ndarray | None:
    """The bind matrix (4x4, float64) the bone's file gave it at import, as kept with the bone; None when none
    was kept. Whether the bone still matches it is the caller's test."""
    raw = bone_extras(bone).get("bind")
    if not isinstance(raw, list) or len(raw) != 16:
        return None
    return np.array(raw, dtype=np.float64).reshape(4, 4)


def read_skeleton(arm_ob, order: list[str] | None = None) -> cm.Skeleton:
    """Rest (edit-bone) data of an armature as a core Skeleton in world space; never reads the pose.

    `order` lists bone names that come first (e.g. the skinned mesh's vertex-group order); the others
    follow in armature order.
    """
    arm = arm_ob.data
    names = [b.name for b in arm.bones]
    first = [n for n in (order or []) if n in arm.bones]
    seen = set(first)
    names = first + [n for n in names if n not in seen]
    index = {n: i for i, n in enumerate(names)}
    world = np.array(arm_ob.matrix_world, dtype=np.float64)
    skel = cm.Skeleton(name=arm_ob.name)
    for n in names:
        bone = arm.bones[n]
        extras = bone_extras(bone)
        extras.pop("bind", None)
        bind = world @ np.array(bone.matrix_local, dtype=np.float64)
        parent = index[bone.parent.name] if bone.parent else -1
        skel.bones.append(cm.Bone(name=n, parent=parent, bind=bind, rest_translation=np.zeros(3),
                                  rest_rotation=np.array([1.0, 0, 0, 0]), rest_scale=np.ones(3),
                                  deform=bone.use_deform, extras=extras))
    # The file's exact bind matrices, where the bone still matches them (Blender keeps float32 head/tail/roll).
    for i, n in enumerate(names):
        exact = file_bind(arm.bones[n])
        if exact is not None:
            t_e, r_e, _ = matrix_to_trs(exact)
            t_b, r_b, _ = matrix_to_trs(skel.bones[i].bind)
            tol = 1e-4 * max(1.0, float(np.abs(t_e).max()))
            if np.abs(t_e - t_b).max() < tol and float(quat_angle(r_e, r_b)) < 1e-3 and np.allclose(world, np.eye(4)):
                skel.bones[i].bind = exact
    skel.set_rest_from_binds()
    return skel
