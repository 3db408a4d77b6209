"""Armatures: core Skeleton ⇄ Blender armature object.

Edit bones are built from bind matrices in one EDIT pass (bones may come in any file order). Blender keeps
only head, tail and roll, so the file's exact values travel in the bone's `skinbridge` custom property
(JSON of the core bone's `extras`) and the mappings reuse them on export while the bone still matches.
"""
from __future__ import annotations

import json

import bpy
import numpy as np
from mathutils import Matrix

from ..core import model as cm
from ..core.skinning import world_matrices
from ..core.transforms import matrix_to_trs, quat_angle, trs_to_matrix

PROP = "skinbridge"


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
    for i, b in enumerate(skel.bones):
        bone = arm.bones[names[i]]
        bone[PROP] = json.dumps({"bind": [float(x) for x in b.bind.reshape(-1)], **b.extras})
    set_pose(ob, skel, names, rest)
    ob.data[PROP] = json.dumps({"names": names})
    return ob


def set_pose(ob, skel: cm.Skeleton, names: list[str], rest: np.ndarray) -> None:
    """Pose the armature at the skeleton's default pose (which may differ from its bind pose).

    Blender deforms with Pose · Rest⁻¹; the file with World · Bind⁻¹. Rest is Bind without scale, so the
    pose matrix that deforms alike is World · Bind⁻¹ · Rest.
    """
    world = world_matrices(skel.parents, [b.rest_local for b in skel.bones])
    pose = world @ np.linalg.inv(skel.binds()) @ rest
    parents = skel.parents
    for i, name in enumerate(names):
        p = parents[i]
        if p < 0:
            basis = np.linalg.inv(rest[i]) @ pose[i]
        else:
            basis = np.linalg.inv(np.linalg.inv(rest[p]) @ rest[i]) @ np.linalg.inv(pose[p]) @ pose[i]
        pb = ob.pose.bones[name]
        pb.rotation_mode = "QUATERNION"
        tt, rr, ss = matrix_to_trs(basis)
        if np.allclose(basis, np.eye(4), atol=1e-9):
            continue
        pb.location = tt.tolist()
        pb.rotation_quaternion = rr.tolist()
        pb.scale = ss.tolist()


def bone_extras(bone) -> dict:
    raw = bone.get(PROP)
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except (TypeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


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
        raw = bone_extras(arm.bones[n]).get("bind")
        if raw is not None and len(raw) == 16:
            exact = np.array(raw, dtype=np.float64).reshape(4, 4)
            t_e, r_e, _ = matrix_to_trs(exact)
            t_b, r_b, _ = matrix_to_trs(skel.bones[i].bind)
            tol = 1e-4 * max(1.0, float(np.abs(t_e).max()))
            if np.abs(t_e - t_b).max() < tol and float(quat_angle(r_e, r_b)) < 1e-3 and np.allclose(world, np.eye(4)):
                skel.bones[i].bind = exact
    skel.set_rest_from_binds()
    return skel
