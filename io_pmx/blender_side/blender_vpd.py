"""VPD poses ⇄ an armature imported from PMX (docs/mmd.md, "VPD poses").

Import: the pose becomes a one-frame action named after the file (one key per channel at frame 0, so it holds at
every frame, is undone with Ctrl+Z and exports as a VMD too), assigned to the armature; bones are matched by
the MMD Japanese name each bone keeps, each bone's translation and rotation mapped exactly as a VMD key at that
frame (`channels.BoneMap.from_mmd`: MMD → Blender axes and units, relative to the bone's rest); morph weights go
to the shape keys of the vertex morphs (a slot of the same action). Bones and morphs the model lacks are named
in a warning. Atomic: nothing is created until every value is worked out, and a failure removes what was made.

Export: the armature's pose as shown (every bone with an MMD name, in the armature's bone order, as MMD writes
a pose of all its bones; `BoneMap.to_mmd`) and the weight of every vertex morph whose shape key is not 0.
"""
from __future__ import annotations

import os

import bpy
import numpy as np
from mathutils import Matrix

from ...blender import action as bact
from ...blender import compat
from ...core.errors import ExportError
from ...core.fileio import read_bytes, write_atomic
from ..pose import vpd
from .blender_motion_curves import new_fcurve, simple_keys
from .blender_motion_model import bone_key_map, bone_names, escape, model_metres_per_unit, morph_names

IDENTITY = Matrix.Identity(4)


def import_vpd(context, path: str, arm_ob) -> tuple[object, list[str]]:
    """Import the pose at `path` onto `arm_ob` as a one-frame action; returns (action, warnings)."""
    if arm_ob is None or arm_ob.type != "ARMATURE":
        raise ExportError("select an armature (imported from PMX) to import a pose onto")
    pose = vpd.read(read_bytes(path))
    label = os.path.basename(path)
    scale = model_metres_per_unit(arm_ob)
    bones, morphs = bone_names(arm_ob), morph_names(arm_ob)
    planned: dict[str, tuple] = {}
    missing = []
    for b in pose.bones:  # the last of a name wins, as babylon-mmd reads it
        if b.name not in bones:
            missing.append(b.name)
            continue
        name = bones[b.name]
        planned[name] = bone_key_map(arm_ob, name, scale).from_mmd(b.translation, b.rotation)
    weights: dict[str, dict[str, float]] = {}
    absent = []
    for m in pose.morphs:
        if m.name not in morphs:
            absent.append(m.name)
            continue
        ob, key_name = morphs[m.name]
        weights.setdefault(ob.name, {})[key_name] = m.weight
    warnings = []
    if missing:
        warnings.append(f"{label}: {len(missing)} bone(s) not in {arm_ob.name}, not posed: {', '.join(missing)}")
    if absent:
        warnings.append(f"{label}: {len(absent)} morph(s) without a shape key in {arm_ob.name}, not set: "
                        f"{', '.join(absent)}")
    created: list = []
    with bact.rollback_on_failure(arm_ob, created):
        act = bpy.data.actions.new(os.path.splitext(label)[0])
        created.append(act)
        cb = compat.channelbag_for_slot(act, act.slots.new(id_type="OBJECT", name=arm_ob.name))
        for name, (loc, quat) in planned.items():
            arm_ob.pose.bones[name].rotation_mode = "QUATERNION"
            for prop, values in (("location", loc), ("rotation_quaternion", quat)):
                for i, v in enumerate(values):
                    new_fcurve(cb, f'pose.bones["{escape(name)}"].{prop}', i, name, simple_keys([0.0], [v]),
                               "CONSTANT")
        for ob_name, keys in weights.items():
            shape = bpy.data.objects[ob_name].data.shape_keys
            kslot = act.slots.new(id_type="KEY", name=shape.name)
            kcb = compat.channelbag_for_slot(act, kslot)
            for key_name, w in keys.items():
                new_fcurve(kcb, f'key_blocks["{escape(key_name)}"].value', 0, "Shape Keys",
                           simple_keys([0.0], [w]), "CONSTANT")
            kad = shape.animation_data or shape.animation_data_create()
            kad.action, kad.action_slot = act, kslot
        bact.tag_owner(act, arm_ob)
        act.use_fake_user = True
        bact.assign(arm_ob, act)
    return act, warnings


def pose_of(context, arm_ob) -> vpd.VpdPose:
    """The armature's pose as shown, in MMD axes and units."""
    scale = model_metres_per_unit(arm_ob)
    mmd_of = {}
    for mmd_name, name in bone_names(arm_ob).items():
        mmd_of.setdefault(name, mmd_name)
    pose = vpd.VpdPose(model_name=f"{arm_ob.name}.osm")
    for bone in arm_ob.data.bones:
        pb = arm_ob.pose.bones[bone.name]
        basis = pb.matrix_basis
        name = mmd_of.get(bone.name, bone.name)
        if basis == IDENTITY:  # at rest: MMD's zeros (the map of the rest would add float32 noise of the rest)
            pose.bones.append(vpd.VpdBone(name))
            continue
        loc, quat = bone_key_map(arm_ob, bone.name, scale).to_mmd(np.array(basis.to_translation()),
                                                                    np.array(basis.to_quaternion()))
        pose.bones.append(vpd.VpdBone(name, tuple(float(v) for v in loc),
                                      tuple(float(v) for v in quat)))
    for mmd_name, (ob, key_name) in morph_names(arm_ob).items():
        w = float(ob.data.shape_keys.key_blocks[key_name].value)
        if w != 0.0:
            pose.morphs.append(vpd.VpdMorph(mmd_name, w))
    return pose


def export_vpd(context, path: str, arm_ob) -> list[str]:
    """Write the armature's pose as shown to `path` (atomic); returns warnings (none so far)."""
    if arm_ob is None or arm_ob.type != "ARMATURE":
        raise ExportError("select an armature to export its pose")
    data = vpd.write(pose_of(context, arm_ob))
    write_atomic(path, data)
    return []
