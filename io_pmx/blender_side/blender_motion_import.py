"""VMD import: `.vmd` files → actions of an armature imported from PMX (docs/mmd.md §3–§4).

Atomic: the file is read and every F-curve worked out (`_plan`) before the first datablock is created. One
action named after the file, with a slot for the armature (bone keys, matched by the MMD Japanese name each
bone keeps, as F-curves whose Bézier handles reproduce the VMD curves; rotations as MMD plays them through
GENERATED keys, see `vmd_convert`), a slot for the mesh's shape keys (morph keys, linear) and IK on/off keys
as CONSTANT keys on the influence of the IK constraints. Camera keys make an animated camera (an empty at the
target holding the Euler rotation, a child camera at local Y = distance) with its own slot of the action.
VMD frame f lands at Blender frame f × fps / 30. Everything of the file is kept with the action
(`blender_vmd_model.RAW`: the records of every key, light / self-shadow / show keys, header bytes), which the
export (`blender_vmd_export`) writes back; keys for bones and morphs the model lacks are listed in a warning
and written back unchanged.
"""
from __future__ import annotations

import json
import math
import os

import bpy
import numpy as np

from ...blender import action as bact
from ...blender import compat
from ...core.errors import ExportError
from ...core.fileio import read_bytes
from ..motion import vmd
from ..motion import channels as vc
from .blender_motion_curves import new_fcurve, simple_keys
from .blender_physics_sim import follow_scene_range
from .blender_motion_model import (
    CAMERA_PROP, RAW, bone_key_map, bone_names, escape, ik_constraints, model_metres_per_unit, morph_names, non_finite,
    skinned_meshes, slider_names, split_keys,
)


def _plan(context, motion: vmd.Motion, arm_ob, label: str) -> dict:
    """Everything import will create, worked out without touching Blender data."""
    fps = bact.fps_of(context.scene)
    scale = model_metres_per_unit(arm_ob)
    warnings = [f"{label}: {w}" for w in motion.warnings]
    bones = bone_names(arm_ob)
    hit, miss, missing = split_keys(motion.bone_keys, bones)
    if missing:
        warnings.append(f"{label}: {len(miss)} bone key(s) for {len(missing)} bone(s) not in {arm_ob.name}, kept "
                        f"unchanged for export: {', '.join(missing)}")
    bad = non_finite(motion.bone_keys[hit])
    if bad.any():
        names = sorted({vmd.decode_name(bytes(n)) for n in motion.bone_keys["name"][hit[bad]]})
        warnings.append(f"{label}: {int(bad.sum())} bone key(s) with values that are not finite, not shown and "
                        f"kept as they are (export refuses them): {', '.join(names)}")
        hit = hit[~bad]
    tracks = vc.group_bone_keys(motion.bone_keys[hit])
    plan_bones, fitted, dup = {}, [], 0
    for name, tr in tracks.items():
        tr.index = hit[tr.index]
        dup += len(tr.duplicates)
        tr.duplicates = hit[tr.duplicates]
        bone = bones[name]
        channels, fit = vc.build_bone_channels(tr, bone_key_map(arm_ob, bone, scale), fps)
        plan_bones[bone] = channels
        if fit:
            fitted.append(name)
    if dup:
        warnings.append(f"{label}: {dup} bone key(s) on a frame their bone already has a key on: the last one in "
                        "the file is shown, the others kept unchanged for export")
    if fitted:
        warnings.append(f"{label}: position curves of {', '.join(fitted)} mix MMD axes with different curves in "
                        "Blender's axes; followed with GENERATED keys")
    morphs = morph_names(arm_ob)
    sliders = {n: p for n, p in slider_names(arm_ob).items() if n not in morphs}
    mhit, mmiss, mmissing = split_keys(motion.morph_keys, morphs.keys() | sliders.keys())
    if mmissing:
        warnings.append(f"{label}: {len(mmiss)} morph key(s) for {len(mmissing)} morph(s) without a shape key or "
                        f"slider in {arm_ob.name}, kept unchanged for export: {', '.join(mmissing)}")
    plan_morphs: dict = {}
    plan_sliders: dict = {}
    mk = motion.morph_keys[mhit]
    names, which = vmd.distinct_names(mk["name"])
    for j, name in enumerate(names):
        sel = np.flatnonzero(which == j)
        order = sel[np.lexsort((sel, mk["frame"][sel]))]
        fr = mk["frame"][order].astype(np.float64)
        last = np.append(fr[1:] != fr[:-1], True)
        keys = simple_keys(fr[last] * fps / vmd.FPS, mk["weight"][order][last])
        if name in sliders:
            plan_sliders[sliders[name]] = keys
            continue
        ob, key_name = morphs[name]
        plan_morphs.setdefault(ob.name, {})[key_name] = keys
    iks = ik_constraints(arm_ob)
    plan_ik: dict[tuple[str, str], list] = {}
    unknown_ik = set()
    for key in motion.property_keys:
        for state in key.ik:
            name = vmd.decode_name(bytes(state["name"]))
            if name not in iks:
                unknown_ik.add(name)
                continue
            for target in iks[name]:
                plan_ik.setdefault(target, []).append((float(key.frame) * fps / vmd.FPS,
                                                       1.0 if state["enabled"] else 0.0))
    if unknown_ik:
        warnings.append(f"{label}: IK keys for {', '.join(sorted(unknown_ik))}, which {arm_ob.name} has no IK "
                        "constraint for, kept unchanged for export")
    return {"fps": fps, "scale": scale, "bones": plan_bones, "morphs": plan_morphs, "sliders": plan_sliders,
            "ik": plan_ik,
            "warnings": warnings, "bone_hit": hit, "morph_hit": mhit}


def _raw_of(motion: vmd.Motion, plan: dict, data: bytes) -> dict:
    """What the action keeps of the file (ID properties; bytes stay bytes)."""
    props = [{"frame": int(k.frame), "visible": int(k.visible), "ik": k.ik.tobytes()} for k in motion.property_keys]
    return {
        "bone_keys": motion.bone_keys.tobytes(), "morph_keys": motion.morph_keys.tobytes(),
        "camera_keys": motion.camera_keys.tobytes(), "light_keys": motion.light_keys.tobytes(),
        "shadow_keys": motion.shadow_keys.tobytes(),
        "meta": json.dumps({"signature": list(motion.signature), "model": list(motion.model_name_raw),
                            "tail_groups": int(motion.tail_groups), "trailing": list(motion.trailing),
                            "property": [{"frame": p["frame"], "visible": p["visible"]} for p in props]}),
        "property_ik": [p["ik"] for p in props],
    }


def import_vmd(context, paths, arm_ob, camera: bool = True, assign: bool = True, mmd_time: bool = True
               ) -> tuple[list, list[str]]:
    """Import `.vmd` files as actions onto ``arm_ob`` (an armature imported from PMX); returns
    (actions, warnings). `mmd_time`: set the scene to MMD's 30 fps first (every key then lands on a whole
    frame) and its frame range to cover the motions. Atomic: on failure every action, object and curve made
    is removed and the scene's frame rate and range are put back. The rigid-body cache then follows the scene's
    range."""
    if arm_ob is None or arm_ob.type != "ARMATURE":
        raise ExportError("select an armature (imported from PMX) to import motions onto")
    motions = []
    for path in paths:
        data = read_bytes(path)
        motions.append((path, vmd.read(data), data))
    scene = context.scene
    saved_time = (scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end)
    if mmd_time:
        scene.render.fps, scene.render.fps_base = vmd.FPS, 1.0
    try:
        parsed = []
        for path, motion, data in motions:
            label = os.path.basename(path)
            parsed.append((os.path.splitext(label)[0], motion, _plan(context, motion, arm_ob, label), data))
        created, warnings = _create(context, parsed, arm_ob, camera, assign)
    except BaseException:
        scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end = saved_time
        raise
    if mmd_time:
        frames = np.concatenate([vmd.all_frames(m) for _, m, _ in motions] + [np.zeros(0, np.int64)])
        first, last = (int(frames.min()), int(frames.max())) if len(frames) else (0, 0)
        scene.frame_start = first
        scene.frame_end = last
    follow_scene_range(scene)  # the physics simulates the whole motion, from its first frame
    return created, warnings


def _create(context, parsed, arm_ob, camera: bool, assign: bool) -> tuple[list, list[str]]:
    created, objects, warnings = [], [], []
    key_ads = {ob.name: (ob.data.shape_keys.animation_data is not None) for ob in skinned_meshes(arm_ob)
               if ob.data.shape_keys is not None}
    with bact.rollback_on_failure(arm_ob, created):
        try:
            for name, motion, plan, data in parsed:
                warnings += plan["warnings"]
                act = bpy.data.actions.new(name)
                created.append(act)
                _fill_action(context, act, arm_ob, motion, plan, objects if camera else None, assign)
                act[RAW] = _raw_of(motion, plan, data)
                bact.tag_owner(act, arm_ob)
                act.use_fake_user = True
                if len(motion.camera_keys) and not camera:
                    warnings.append(f"{name}: {len(motion.camera_keys)} camera key(s) kept unchanged for export "
                                    "(no camera made)")
            if assign and created:
                bact.assign(arm_ob, created[-1])
        except BaseException:  # what only a VMD makes: cameras and shape-key animation
            for ob in objects:
                data = ob.data
                bpy.data.objects.remove(ob)
                if data is not None and data.users == 0:
                    bpy.data.cameras.remove(data)
            for ob in skinned_meshes(arm_ob):
                keys = ob.data.shape_keys
                if keys is not None and keys.animation_data is not None and not key_ads.get(ob.name, True):
                    keys.animation_data_clear()
            raise
    return created, warnings


def _fill_action(context, act, arm_ob, motion, plan, objects, assign: bool) -> None:
    slot = act.slots.new(id_type="OBJECT", name=arm_ob.name)
    cb = compat.channelbag_for_slot(act, slot)
    for bone, channels in plan["bones"].items():
        for (prop, index), ck in channels.items():
            new_fcurve(cb, f'pose.bones["{escape(bone)}"].{prop}', index, bone, ck)
        if arm_ob.pose.bones[bone].rotation_mode != "QUATERNION":
            arm_ob.pose.bones[bone].rotation_mode = "QUATERNION"
    for prop, ck in plan["sliders"].items():
        new_fcurve(cb, f'["{escape(prop)}"]', 0, "MMD Morphs", ck, "LINEAR")
    for (bone, cname), keys in plan["ik"].items():
        keys.sort(key=lambda k: k[0])
        x = np.array([k[0] for k in keys])
        y = np.array([k[1] for k in keys])
        last = np.append(x[1:] != x[:-1], True)
        new_fcurve(cb, f'pose.bones["{escape(bone)}"].constraints["{escape(cname)}"].influence', 0, bone,
                simple_keys(x[last], y[last]), "CONSTANT")
    for ob_name, keys in plan["morphs"].items():
        shape = bpy.data.objects[ob_name].data.shape_keys
        kslot = act.slots.new(id_type="KEY", name=shape.name)
        kcb = compat.channelbag_for_slot(act, kslot)
        for key_name, ck in keys.items():
            new_fcurve(kcb, f'key_blocks["{escape(key_name)}"].value', 0, "Shape Keys", ck, "LINEAR")
        if assign:
            kad = shape.animation_data or shape.animation_data_create()
            kad.action = act
            kad.action_slot = kslot
    if objects is not None and len(motion.camera_keys):
        _camera(context, act, motion, plan, objects)
    act.use_frame_range = True
    frames = vmd.all_frames(motion)
    act.frame_start = 0.0
    act.frame_end = max(float(frames.max()) if len(frames) else 0.0, 1.0) * plan["fps"] / vmd.FPS


def _camera(context, act, motion, plan, objects) -> None:
    """An empty at the camera target (Euler rotation) with a child camera at local Y = distance."""
    keys = motion.camera_keys
    order = np.lexsort((np.arange(len(keys)), keys["frame"]))
    fr = keys["frame"][order].astype(np.float64)
    last = order[np.append(fr[1:] != fr[:-1], True)]
    keys = keys[last]
    x = keys["frame"].astype(np.float64) * plan["fps"] / vmd.FPS
    vals = vc.camera_to_blender(keys, plan["scale"])
    curves = vc.camera_curves(keys["interpolation"])
    data = bpy.data.cameras.new(f"{act.name} camera")
    cam = bpy.data.objects.new(f"{act.name} camera", data)
    rig = bpy.data.objects.new(f"{act.name} camera target", None)
    objects += [cam, rig]
    context.scene.collection.objects.link(rig)
    context.scene.collection.objects.link(cam)
    cam.parent = rig
    cam.rotation_euler = (math.pi / 2, 0.0, 0.0)  # look along the target empty's +Y
    rig.rotation_mode = "YXZ"
    rig[CAMERA_PROP] = act.name
    data.type = "ORTHO" if vals["ortho"][0] else "PERSP"
    data.sensor_fit = "VERTICAL"  # MMD's view angle is the vertical field of view
    vals["lens"] = data.sensor_height / (2 * np.tan(vals["angle"] / 2))
    slot = act.slots.new(id_type="OBJECT", name=rig.name)
    cb = compat.channelbag_for_slot(act, slot)
    cslot = act.slots.new(id_type="OBJECT", name=cam.name)
    ccb = compat.channelbag_for_slot(act, cslot)
    dslot = act.slots.new(id_type="CAMERA", name=data.name)
    dcb = compat.channelbag_for_slot(act, dslot)
    channels = {("location", 0): (cb, "location", vals["location"][:, 0]),
                ("location", 1): (cb, "location", vals["location"][:, 1]),
                ("location", 2): (cb, "location", vals["location"][:, 2]),
                ("rotation_euler", 0): (cb, "rotation_euler", vals["rotation"][:, 0]),
                ("rotation_euler", 1): (cb, "rotation_euler", vals["rotation"][:, 1]),
                ("rotation_euler", 2): (cb, "rotation_euler", vals["rotation"][:, 2]),
                ("distance", 0): (ccb, "location", vals["distance"]),
                ("angle", 0): (dcb, "lens", vals["lens"])}
    for (what, index), (bag, path, y) in channels.items():
        b = vc.CurveBuilder()
        b.point(x[0], y[0], 0)
        for k in range(1, len(x)):
            p = vc.curve_points(curves[k, vc.CAMERA_MAP[(what, index)]])
            p[:, 0] = x[k - 1] + p[:, 0] * (x[k] - x[k - 1])
            p[:, 1] = y[k - 1] + p[:, 1] * (y[k] - y[k - 1])
            b.piece(p, k)
        new_fcurve(bag, path, 1 if what == "distance" else index, "Camera", b.done())
    for ob, s in ((rig, slot), (cam, cslot)):
        ob.animation_data_create()
        ob.animation_data.action = act
        ob.animation_data.action_slot = s
    data.animation_data_create()
    data.animation_data.action = act
    data.animation_data.action_slot = dslot


def load_motion(context, path, arm_ob, options) -> list[str]:
    """`--motion FILE.vmd` for `convert`: the motion as an action on the model's armature (the scene at 30 fps,
    as MMD plays it)."""
    _, warnings = import_vmd(context, [path], arm_ob)
    return warnings
