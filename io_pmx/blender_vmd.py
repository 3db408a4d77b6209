"""VMD motions in Blender: `.vmd` files ⇄ actions of an armature imported from PMX (reference/pmx.md §2–§3).

Import (atomic: the file is read and every F-curve worked out before the first datablock is created): one
action named after the file, with a slot for the armature (bone keys, matched by the MMD Japanese name each
bone keeps, as F-curves whose Bézier handles reproduce the VMD curves; rotations as MMD plays them through
GENERATED keys, see `vmd_convert`), a slot for the mesh's shape keys (morph keys, linear) and IK on/off keys
as CONSTANT keys on the influence of the IK constraints. Camera keys make an animated camera (an empty at the
target holding the Euler rotation, a child camera at local Y = distance) with its own slot of the action.
VMD frame f lands at Blender frame f × fps / 30. Everything of the file is kept with the action
(`RAW`: the records of every key, light / self-shadow / show keys, header bytes); keys for bones and morphs
the model lacks are listed in a warning and written back unchanged.

Export (read-only): one action → one VMD. A key whose frame, value and incoming handles are what import made
of the file is written as its raw record (block, physics-toggle bytes and all); other keys get blocks from
their handles (a warning where a curve cannot be held by a block). GENERATED keys still where import put them
are dropped; in an edited segment they become keys. Keys that fall between whole 30-fps frames are replaced by
samples on the whole frames around them; `bake` samples every whole frame.
"""
from __future__ import annotations

import json
import math
import os
import re

import bpy
import numpy as np
from bpy_extras import anim_utils

from ..blender import action as bact
from ..core.errors import ExportError, FormatError
from ..core.fileio import read_bytes, write_atomic
from ..core.naming import NameAllocator
from ..core.transforms import quat_normalize
from . import blender_mmd, convert, vmd
from . import vmd_convert as vc

RAW = "skinbridge_vmd"
CAMERA_PROP = "skinbridge_vmd_camera"
_KEY = bpy.types.Keyframe.bl_rna.properties
_INTERP = {k: v.value for k, v in _KEY["interpolation"].enum_items.items()}
_KEYTYPE = {k: v.value for k, v in _KEY["type"].enum_items.items()}
_HANDLE = {k: v.value for k, v in _KEY["handle_left_type"].enum_items.items()}
_BONE_PATH = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\.(location|rotation_quaternion|rotation_euler)$')
_IK_PATH = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\.constraints\["((?:[^"\\]|\\.)*)"\]\.influence$')
_MORPH_PATH = re.compile(r'^key_blocks\["((?:[^"\\]|\\.)*)"\]\.value$')
_WHOLE = 1e-3  # VMD frames: a Blender key this close to a whole 30-fps frame is on it


def _esc(name: str) -> str:
    return bpy.utils.escape_identifier(name)


def _unesc(name: str) -> str:
    return re.sub(r"\\(.)", r"\1", name)


# ------------------------------------------------------------------------------------------------------------
# What the model offers: bones, morphs and IK constraints by MMD name

def model_scale(arm_ob) -> float:
    raw = blender_mmd.stored_extras(arm_ob, [])
    try:
        s = float(raw.get("scale", convert.DEFAULT_SCALE)) if raw else convert.DEFAULT_SCALE
    except (TypeError, ValueError):
        s = convert.DEFAULT_SCALE
    return s if s > 0 and math.isfinite(s) else convert.DEFAULT_SCALE


def bone_names(arm_ob) -> dict[str, str]:
    """MMD (Japanese) name → Blender bone name; a bone not from PMX goes by its Blender name."""
    out: dict[str, str] = {}
    for bone in arm_ob.data.bones:
        names = blender_mmd.pmx_names(bone)
        out.setdefault(names[0] if names and names[0] else bone.name, bone.name)
    return out


def skinned_meshes(arm_ob) -> list:
    return [ob for ob in bpy.data.objects if ob.type == "MESH" and
            (ob.parent == arm_ob or any(m.type == "ARMATURE" and m.object == arm_ob for m in ob.modifiers))]


def morph_names(arm_ob) -> dict[str, tuple]:
    """MMD morph name → (mesh object, shape key name) for the vertex morphs Blender shows as shape keys."""
    raw = blender_mmd.stored_extras(arm_ob, []) or {}
    by_index = raw.get("shape_keys", {}) if isinstance(raw.get("shape_keys"), dict) else {}
    morphs = raw.get("morphs", []) if isinstance(raw.get("morphs"), list) else []
    renamed = {}
    for k, key_name in by_index.items():
        try:
            renamed[key_name] = morphs[int(k)]["name"]
        except (IndexError, KeyError, ValueError, TypeError):
            pass
    out: dict[str, tuple] = {}
    for ob in skinned_meshes(arm_ob):
        keys = ob.data.shape_keys
        if keys is None:
            continue
        for kb in list(keys.key_blocks)[1:]:
            out.setdefault(renamed.get(kb.name, kb.name), (ob, kb.name))
    return out


def ik_constraints(arm_ob) -> dict[str, list[tuple[str, str]]]:
    """MMD name of an IK bone → [(pose bone, constraint name)] its on/off key drives: the IK constraint aimed
    at it and the IK-limit override on that constraint's bone."""
    mmd_of = {b: m for m, b in bone_names(arm_ob).items()}
    out: dict[str, list] = {}
    for pb in arm_ob.pose.bones:
        for c in pb.constraints:
            if c.type == "IK" and c.target == arm_ob and c.subtarget in mmd_of:
                lst = out.setdefault(mmd_of[c.subtarget], [])
                lst.append((pb.name, c.name))
                for o in pb.constraints:
                    if o.type == "LIMIT_ROTATION" and o.name.startswith(blender_mmd.LIMIT_NAME):
                        lst.append((pb.name, o.name))
    return out


def _bone_map(arm_ob, bone_name: str, scale: float, rest: dict | None = None) -> vc.BoneMap:
    world = np.array(arm_ob.matrix_world, np.float64)
    bone = arm_ob.data.bones[bone_name]
    rw = world @ np.array(bone.matrix_local, np.float64)
    if rest and bone_name in rest:
        r = rest[bone_name]
        parent = bone.parent.name if bone.parent else None
        return vc.bone_map(rw, scale, r.get("head"), r.get("change"),
                           rest.get(parent, {}).get("change") if parent else None)
    return vc.bone_map(rw, scale)


# ------------------------------------------------------------------------------------------------------------
# Import

def _fcurve(cb, path: str, index: int, group: str, ck: vc.ChannelKeys, interpolation: str = "BEZIER"):
    fc = cb.fcurves.new(path, index=index, group_name=group)
    n = len(ck.x)
    kp = fc.keyframe_points
    kp.add(n)
    co = np.empty((n, 2), np.float32)
    co[:, 0], co[:, 1] = ck.x, ck.y
    kp.foreach_set("co", co.ravel())
    kp.foreach_set("interpolation", np.full(n, _INTERP[interpolation], np.int32))
    if interpolation == "BEZIER":
        kp.foreach_set("handle_left_type", np.full(n, _HANDLE["FREE"], np.int32))
        kp.foreach_set("handle_right_type", np.full(n, _HANDLE["FREE"], np.int32))
        kp.foreach_set("handle_left", ck.hl.astype(np.float32).ravel())
        kp.foreach_set("handle_right", ck.hr.astype(np.float32).ravel())
    if ck.generated.any():
        kp.foreach_set("type", np.where(ck.generated, _KEYTYPE["GENERATED"], _KEYTYPE["KEYFRAME"]).astype(np.int32))
    fc.update()
    return fc


def _simple(x, y) -> vc.ChannelKeys:
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    return vc.ChannelKeys(x, y, np.stack([x - 1, y], 1), np.stack([x + 1, y], 1), np.zeros(len(x), bool),
                          np.arange(len(x)))


def _split_keys(keys: np.ndarray, known) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """File positions of keys whose name is known, of the others, and a count per unknown name."""
    names, which = vmd.distinct_names(keys["name"])
    ok = np.array([n in known for n in names], bool)
    hit = ok[which] if len(keys) else np.zeros(0, bool)
    counts = np.bincount(which[~hit], minlength=len(names)) if len(keys) else np.zeros(0, np.int64)
    missing = [f"{names[j]} ({counts[j]})" for j in range(len(names)) if not ok[j]]
    return np.flatnonzero(hit), np.flatnonzero(~hit), missing


def _non_finite(keys: np.ndarray) -> np.ndarray:
    if not len(keys):
        return np.zeros(0, bool)
    return ~(np.isfinite(keys["position"]).all(axis=1) & np.isfinite(keys["rotation"]).all(axis=1))


def _plan(context, motion: vmd.Motion, arm_ob, label: str) -> dict:
    """Everything import will create, worked out without touching Blender data."""
    fps = bact.fps_of(context.scene)
    scale = model_scale(arm_ob)
    warnings = [f"{label}: {w}" for w in motion.warnings]
    bones = bone_names(arm_ob)
    hit, miss, missing = _split_keys(motion.bone_keys, bones)
    if missing:
        warnings.append(f"{label}: {len(miss)} bone key(s) for {len(missing)} bone(s) not in {arm_ob.name}, kept "
                        f"unchanged for export: {', '.join(missing)}")
    bad = _non_finite(motion.bone_keys[hit])
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
        channels, fit = vc.build_bone_channels(tr, _bone_map(arm_ob, bone, scale), fps)
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
    mhit, mmiss, mmissing = _split_keys(motion.morph_keys, morphs)
    if mmissing:
        warnings.append(f"{label}: {len(mmiss)} morph key(s) for {len(mmissing)} morph(s) without a shape key in "
                        f"{arm_ob.name}, kept unchanged for export: {', '.join(mmissing)}")
    plan_morphs = {}
    mk = motion.morph_keys[mhit]
    names, which = vmd.distinct_names(mk["name"])
    for j, name in enumerate(names):
        sel = np.flatnonzero(which == j)
        order = sel[np.lexsort((sel, mk["frame"][sel]))]
        fr = mk["frame"][order].astype(np.float64)
        last = np.append(fr[1:] != fr[:-1], True)
        ob, key_name = morphs[name]
        plan_morphs.setdefault(ob.name, {})[key_name] = _simple(fr[last] * fps / vmd.FPS,
                                                                mk["weight"][order][last])
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
    return {"fps": fps, "scale": scale, "bones": plan_bones, "morphs": plan_morphs, "ik": plan_ik,
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


def import_vmd(context, paths, arm_ob, camera: bool = True, assign: bool = True) -> tuple[list, list[str]]:
    """Import `.vmd` files as actions onto ``arm_ob`` (an armature imported from PMX); returns
    (actions, warnings). Atomic: on failure every action, object and curve made is removed."""
    if arm_ob is None or arm_ob.type != "ARMATURE":
        raise ExportError("select an armature (imported from PMX) to import motions onto")
    parsed = []
    for path in paths:
        data = read_bytes(path)
        motion = vmd.read(data)
        label = os.path.basename(path)
        parsed.append((os.path.splitext(label)[0], motion, _plan(context, motion, arm_ob, label), data))
    created, objects, warnings = [], [], []
    ad = arm_ob.animation_data
    saved = (ad.action, ad.action_slot) if ad is not None else None
    had_ad = ad is not None
    modes = {pb.name: pb.rotation_mode for pb in arm_ob.pose.bones}
    key_ads = {ob.name: (ob.data.shape_keys.animation_data is not None) for ob in skinned_meshes(arm_ob)
               if ob.data.shape_keys is not None}
    try:
        for name, motion, plan, data in parsed:
            warnings += plan["warnings"]
            act = bpy.data.actions.new(name)
            created.append(act)
            _fill_action(context, act, arm_ob, motion, plan, objects if camera else None, assign)
            act[RAW] = _raw_of(motion, plan, data)
            act.use_fake_user = True
            if len(motion.camera_keys) and not camera:
                warnings.append(f"{name}: {len(motion.camera_keys)} camera key(s) kept unchanged for export "
                                "(no camera made)")
        if assign and created:
            bact.assign(arm_ob, created[-1])
    except BaseException:
        for ob in objects:
            data = ob.data
            bpy.data.objects.remove(ob)
            if data is not None and data.users == 0:
                bpy.data.cameras.remove(data)
        if not had_ad and arm_ob.animation_data is not None:
            arm_ob.animation_data_clear()
        elif saved is not None:
            arm_ob.animation_data.action = saved[0]
            if saved[1] is not None:
                arm_ob.animation_data.action_slot = saved[1]
        for ob in skinned_meshes(arm_ob):
            keys = ob.data.shape_keys
            if keys is not None and keys.animation_data is not None and not key_ads.get(ob.name, True):
                keys.animation_data_clear()
        for act in created:
            try:
                bpy.data.actions.remove(act)
            except ReferenceError:
                pass
        for bone, mode in modes.items():
            if arm_ob.pose.bones[bone].rotation_mode != mode:
                arm_ob.pose.bones[bone].rotation_mode = mode
        raise
    return created, warnings


def _fill_action(context, act, arm_ob, motion, plan, objects, assign: bool) -> None:
    slot = act.slots.new(id_type="OBJECT", name=arm_ob.name)
    cb = anim_utils.action_ensure_channelbag_for_slot(act, slot)
    for bone, channels in plan["bones"].items():
        for (prop, index), ck in channels.items():
            _fcurve(cb, f'pose.bones["{_esc(bone)}"].{prop}', index, bone, ck)
        if arm_ob.pose.bones[bone].rotation_mode != "QUATERNION":
            arm_ob.pose.bones[bone].rotation_mode = "QUATERNION"
    for (bone, cname), keys in plan["ik"].items():
        keys.sort(key=lambda k: k[0])
        x = np.array([k[0] for k in keys])
        y = np.array([k[1] for k in keys])
        last = np.append(x[1:] != x[:-1], True)
        _fcurve(cb, f'pose.bones["{_esc(bone)}"].constraints["{_esc(cname)}"].influence', 0, bone,
                _simple(x[last], y[last]), "CONSTANT")
    for ob_name, keys in plan["morphs"].items():
        shape = bpy.data.objects[ob_name].data.shape_keys
        kslot = act.slots.new(id_type="KEY", name=shape.name)
        kcb = anim_utils.action_ensure_channelbag_for_slot(act, kslot)
        for key_name, ck in keys.items():
            _fcurve(kcb, f'key_blocks["{_esc(key_name)}"].value', 0, "Shape Keys", ck, "LINEAR")
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
    cb = anim_utils.action_ensure_channelbag_for_slot(act, slot)
    cslot = act.slots.new(id_type="OBJECT", name=cam.name)
    ccb = anim_utils.action_ensure_channelbag_for_slot(act, cslot)
    dslot = act.slots.new(id_type="CAMERA", name=data.name)
    dcb = anim_utils.action_ensure_channelbag_for_slot(act, dslot)
    channels = {("location", 0): (cb, "location", vals["location"][:, 0]),
                ("location", 1): (cb, "location", vals["location"][:, 1]),
                ("location", 2): (cb, "location", vals["location"][:, 2]),
                ("rotation_euler", 0): (cb, "rotation_euler", vals["rotation"][:, 0]),
                ("rotation_euler", 1): (cb, "rotation_euler", vals["rotation"][:, 1]),
                ("rotation_euler", 2): (cb, "rotation_euler", vals["rotation"][:, 2]),
                ("distance", 0): (ccb, "location", vals["distance"]),
                ("angle", 0): (dcb, "lens", vals["lens"])}
    for (what, index), (bag, path, y) in channels.items():
        b = vc._Builder()
        b.point(x[0], y[0], 0)
        for k in range(1, len(x)):
            p = vc.curve_points(curves[k, vc.CAMERA_MAP[(what, index)]])
            p[:, 0] = x[k - 1] + p[:, 0] * (x[k] - x[k - 1])
            p[:, 1] = y[k - 1] + p[:, 1] * (y[k] - y[k - 1])
            b.piece(p, k)
        _fcurve(bag, path, 1 if what == "distance" else index, "Camera", b.done())
    for ob, s in ((rig, slot), (cam, cslot)):
        ob.animation_data_create()
        ob.animation_data.action = act
        ob.animation_data.action_slot = s
    data.animation_data_create()
    data.animation_data.action = act
    data.animation_data.action_slot = dslot


# ------------------------------------------------------------------------------------------------------------
# Export

class _Curve:
    def __init__(self, fc):
        kp = fc.keyframe_points
        n = len(kp)
        co, hl, hr = (np.empty(2 * n, np.float32) for _ in range(3))
        kp.foreach_get("co", co)
        kp.foreach_get("handle_left", hl)
        kp.foreach_get("handle_right", hr)
        interp, types = np.empty(n, np.int32), np.empty(n, np.int32)
        kp.foreach_get("interpolation", interp)
        kp.foreach_get("type", types)
        order = np.argsort(co[0::2], kind="stable")
        self.fc = fc
        self.x = co[0::2][order].astype(np.float64)
        self.y = co[1::2][order].astype(np.float64)
        self.hl = hl.reshape(-1, 2)[order].astype(np.float64)
        self.hr = hr.reshape(-1, 2)[order].astype(np.float64)
        self.interp = interp[order]
        self.generated = types[order] == _KEYTYPE["GENERATED"]

    def value(self, x: float) -> float:
        i = np.searchsorted(self.x, x)
        if i < len(self.x) and abs(self.x[i] - x) <= 1e-6:
            return float(self.y[i])
        return float(self.fc.evaluate(x))

    def values(self, xs: np.ndarray) -> np.ndarray:
        """`value` at every x: the key's own value where a key sits there, the curve's elsewhere."""
        xs = np.asarray(xs, np.float64)
        out = np.empty(len(xs))
        i = np.searchsorted(self.x, xs)
        hit = i < len(self.x)
        hit[hit] = np.abs(self.x[i[hit]] - xs[hit]) <= 1e-6
        out[hit] = self.y[i[hit]]
        out[~hit] = [self.fc.evaluate(float(x)) for x in xs[~hit]]
        return out

    def inside(self, xa: float, xb: float) -> bool:
        """Whether a key lies strictly between frames xa and xb."""
        return bool(np.any((self.x > xa + 1e-6) & (self.x < xb - 1e-6)))

    def segment(self, xa: float, xb: float):
        """The curve on [xa, xb] as Bézier control points (4, 2); 'constant', 'other' (an easing MMD lacks), or
        None when a key lies inside."""
        if self.inside(xa, xb) or len(self.x) < 2:
            return None
        i = int(np.clip(np.searchsorted(self.x, xa + 1e-6) - 1, 0, len(self.x) - 2))
        if xa < self.x[0] - 1e-6 or xb > self.x[-1] + 1e-6:
            ya, yb = self.value(xa), self.value(xb)
            return np.array([[xa, ya], [xa + (xb - xa) / 3, ya], [xb - (xb - xa) / 3, yb], [xb, yb]])
        kind = self.interp[i]
        p0, p3 = np.array([self.x[i], self.y[i]]), np.array([self.x[i + 1], self.y[i + 1]])
        if kind == _INTERP["CONSTANT"]:
            return "constant" if self.y[i] != self.y[i + 1] else np.array([p0, p0, p3, p3])
        if kind == _INTERP["LINEAR"]:
            p = np.array([p0, p0 + (p3 - p0) / 3, p0 + 2 * (p3 - p0) / 3, p3])
        elif kind == _INTERP["BEZIER"]:
            p = np.array([p0, self.hr[i], self.hl[i + 1], p3])
        else:
            return "other"
        if abs(xa - p0[0]) <= 1e-6 and abs(xb - p3[0]) <= 1e-6:
            return p
        ua = float(vc._solve(p, 0, np.array([xa]))[0]) if xa > p0[0] + 1e-6 else 0.0
        ub = float(vc._solve(p, 0, np.array([xb]))[0]) if xb < p3[0] - 1e-6 else 1.0
        return vc.split_bezier(p, ua, ub)


def _close(a, b, scale=1.0) -> bool:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= 2e-5 * np.maximum(scale, np.abs(b)) + 1e-6))


def _unchanged(actual: _Curve, expected: vc.ChannelKeys, xa: float | None, xb: float) -> bool:
    """Whether the keys of a channel in (xa, xb] (just the key at xb when xa is None) and the handles of the
    segment leading to xb are what import made."""
    tol = 1e-3

    def pick(x):
        if xa is None:
            return np.flatnonzero(np.abs(x - xb) <= tol)
        return np.flatnonzero((x > xa + tol) & (x <= xb + tol))

    ia, ie = pick(actual.x), pick(expected.x)
    if len(ia) != len(ie) or not len(ia):
        return False
    if not (_close(actual.x[ia], expected.x[ie]) and _close(actual.y[ia], expected.y[ie])):
        return False
    if xa is None:
        return True
    rel = lambda h, x, y, i: h[i] - np.stack([x[i], y[i]], 1)  # noqa: E731
    if not _close(rel(actual.hl, actual.x, actual.y, ia), rel(expected.hl, expected.x, expected.y, ie)):
        return False
    ja = np.flatnonzero(np.abs(actual.x - xa) <= tol)
    je = np.flatnonzero(np.abs(expected.x - xa) <= tol)
    if len(ja) != 1 or len(je) != 1:
        return False
    ha = np.concatenate([ja, ia[:-1]])
    he = np.concatenate([je, ie[:-1]])
    return _close(rel(actual.hr, actual.x, actual.y, ha), rel(expected.hr, expected.x, expected.y, he))


def _unchanged_channel(actual: _Curve | None, expected: vc.ChannelKeys, xk: np.ndarray) -> np.ndarray | None:
    """`_unchanged` for every key frame `xk` at once when the whole channel is as import made it (the common case:
    keys, values and handle offsets all equal); None otherwise, and then each key is checked alone."""
    if actual is None or len(actual.x) != len(expected.x) or not len(xk):
        return None

    def offsets(c, h):
        return h - np.stack([c.x, c.y], 1)

    if not (_close(actual.x, expected.x) and _close(actual.y, expected.y)
            and _close(offsets(actual, actual.hl), offsets(expected, expected.hl))
            and _close(offsets(actual, actual.hr), offsets(expected, expected.hr))):
        return None
    tol = 1e-3
    x = np.sort(np.asarray(expected.x, np.float64))
    xk = np.asarray(xk, np.float64)
    at = np.searchsorted(x, xk + tol, "right") - np.searchsorted(x, xk - tol, "left")  # keys at each frame
    after_previous = np.searchsorted(x, np.r_[-np.inf, xk[:-1] + tol], "right")
    inside = np.searchsorted(x, xk + tol, "right") - after_previous  # keys in (previous + tol, this + tol]
    ok = np.empty(len(xk), bool)
    ok[0] = at[0] > 0
    ok[1:] = (inside[1:] > 0) & (at[:-1] == 1)
    return ok


def _channelbags(act, slot):
    for layer in act.layers:
        for strip in layer.strips:
            cb = strip.channelbag(slot) if slot is not None else None
            if cb is not None:
                yield cb


def _load_raw(act) -> dict | None:
    raw = act.get(RAW)
    if raw is None:
        return None
    try:
        meta = json.loads(raw["meta"])
        out = {"meta": meta}
        for key, dtype in (("bone_keys", vmd.BONE_KEY), ("morph_keys", vmd.MORPH_KEY),
                           ("camera_keys", vmd.CAMERA_KEY), ("light_keys", vmd.LIGHT_KEY),
                           ("shadow_keys", vmd.SHADOW_KEY)):
            out[key] = np.frombuffer(bytes(raw[key]), dtype).copy()
        out["property"] = [vmd.PropertyKey(p["frame"], p["visible"], np.frombuffer(bytes(ik), vmd.IK_STATE).copy())
                           for p, ik in zip(meta["property"], raw["property_ik"])]
        return out
    except (KeyError, ValueError, TypeError):
        return None


def _vmd_frames(x: np.ndarray, fps: float) -> np.ndarray:
    return np.asarray(x, np.float64) * vmd.FPS / fps


def _whole_frames(xs: np.ndarray, fps: float) -> tuple[np.ndarray, bool]:
    """Whole VMD frames for Blender key frames: keys on a whole frame stay, a key between two is replaced by
    the whole frames around it. Returns (frames, whether any key was resampled)."""
    v = _vmd_frames(xs, fps)
    r = np.round(v)
    whole = np.abs(v - r) <= _WHOLE
    out = set(r[whole].astype(np.int64).tolist())
    out |= set(np.floor(v[~whole]).astype(np.int64).tolist()) | set(np.ceil(v[~whole]).astype(np.int64).tolist())
    return np.array(sorted(f for f in out if f >= 0), np.int64), bool((~whole).any())


def export_motion(context, act, arm_ob, bake: bool = False, rest: dict | None = None,
                  names: dict | None = None) -> tuple[vmd.Motion, list[str]]:
    """The VMD of one action (read-only). `rest`: per Blender bone {"head", "change"} when the PMX's rest
    differs from Blender's (an MMD rig export); `names`: Blender bone → VMD name overrides."""
    fps = bact.fps_of(context.scene)
    scale = model_scale(arm_ob) if arm_ob is not None else convert.DEFAULT_SCALE
    raw = _load_raw(act)
    warnings: list[str] = []
    m = vmd.Motion()
    if raw is not None:
        meta = raw["meta"]
        m.signature, m.model_name_raw = bytes(meta["signature"]), bytes(meta["model"])
        m.tail_groups, m.trailing = int(meta["tail_groups"]), bytes(meta["trailing"])
        m.light_keys, m.shadow_keys = raw["light_keys"], raw["shadow_keys"]
    else:
        extras = blender_mmd.stored_extras(arm_ob, []) if arm_ob is not None else None
        m.model_name = (extras or {}).get("name") or (arm_ob.name if arm_ob is not None else act.name)
        if vmd.name_problem(m.model_name, vmd.MODEL_NAME_SIZE):
            warnings.append(f"model name {m.model_name!r} {vmd.name_problem(m.model_name, vmd.MODEL_NAME_SIZE)}")
    bone_parts, morph_parts, props = [], [], None
    if arm_ob is not None:
        slot = bact._slot_for(arm_ob, act)
        bone_parts, more, props = _export_bones(act, slot, arm_ob, raw, fps, scale, bake, rest, names)
        warnings += more
        morph_parts, more = _export_morphs(act, arm_ob, raw, fps, bake)
        warnings += more
    bone_keys = _assemble(bone_parts, raw["bone_keys"] if raw else None, vmd.BONE_KEY)
    morph_keys = _assemble(morph_parts, raw["morph_keys"] if raw else None, vmd.MORPH_KEY)
    m.bone_keys, m.morph_keys = bone_keys, morph_keys
    m.camera_keys = raw["camera_keys"] if raw is not None else m.camera_keys
    m.property_keys = props if props is not None else (raw["property"] if raw else [])
    for keys, what in ((m.bone_keys, "bone"), (m.morph_keys, "morph")):
        if not len(keys):
            continue
        bad = ~np.all(np.isfinite(keys["position" if what == "bone" else "weight"].reshape(len(keys), -1)), axis=1)
        if what == "bone":
            bad |= ~np.all(np.isfinite(keys["rotation"]), axis=1)
        if bad.any():
            raise ExportError(f"action {act.name}: {what} {vmd.decode_name(bytes(keys['name'][bad][0]))} has a "
                              "non-finite value")
    return m, warnings


def _assemble(parts, raw_keys, dtype) -> np.ndarray:
    """Records in file order: raw keys by their place in the file, new keys after them. `parts` holds
    (order, record) pairs and (orders, records) arrays."""
    if not parts:
        return np.zeros(0, dtype)
    orders = np.concatenate([np.atleast_1d(np.asarray(o, np.int64)) for o, _ in parts])
    recs = np.concatenate([np.atleast_1d(np.asarray(r, dtype)) for _, r in parts])
    return recs[np.argsort(orders, kind="stable")]


def _export_bones(act, slot, arm_ob, raw, fps, scale, bake, rest, names):
    warnings: list[str] = []
    mmd_names = {b: m for m, b in bone_names(arm_ob).items()}
    if names:
        mmd_names.update(names)
    curves: dict[str, dict] = {}
    ik_curves: dict[tuple[str, str], _Curve] = {}
    for cb in _channelbags(act, slot):
        for fc in cb.fcurves:
            if fc.mute or not len(fc.keyframe_points):
                continue
            m = _BONE_PATH.match(fc.data_path)
            if m:
                bone = _unesc(m.group(1))
                if bone in arm_ob.data.bones:
                    curves.setdefault(bone, {})[(m.group(2), fc.array_index)] = _Curve(fc)
                continue
            m = _IK_PATH.match(fc.data_path)
            if m:
                ik_curves[(_unesc(m.group(1)), _unesc(m.group(2)))] = _Curve(fc)
    raw_tracks: dict[str, vc.BoneTrack] = {}
    parts: list = []
    big = 1 << 40
    if raw is not None:
        keys = raw["bone_keys"]
        known = {mmd_names.get(b, b) for b in curves}
        hit, miss, _ = _split_keys(keys, known)
        bad = _non_finite(keys[hit])
        miss, hit = np.concatenate([miss, hit[bad]]), hit[~bad]
        miss = np.asarray(miss, np.int64)  # bones the model lacks (or whose curves were deleted), non-finite
        parts.append((miss, keys[miss]))   # keys: unchanged
        tracks = vc.group_bone_keys(keys[hit])
        for name, tr in tracks.items():
            tr.index = hit[tr.index]
            shadowed = hit[tr.duplicates]
            parts.append((shadowed, keys[shadowed]))
            raw_tracks[name] = tr
    counter = 0
    resampled, unrepresentable, promoted = [], [], []
    encoded, name_warnings = vmd.encode_names([mmd_names.get(b, b) for b in curves])
    warnings += name_warnings
    for (bone, chans), field in zip(curves.items(), encoded):
        name = mmd_names.get(bone, bone)
        bmap = _bone_map(arm_ob, bone, scale, rest)
        tr = raw_tracks.get(name)
        expected = vc.build_bone_channels(tr, bmap, fps)[0] if tr is not None else None
        pb = arm_ob.pose.bones[bone]
        # which raw keys (per channel) are untouched: frame, value and the handles of the segment leading to it
        same_ch: dict[tuple[str, int], np.ndarray] = {}
        xk = np.zeros(0)
        if tr is not None:
            xk = tr.frames * fps / vmd.FPS
            for key in [("location", j) for j in range(3)] + [("rotation_quaternion", c) for c in range(4)]:
                actual = chans.get(key)
                whole = _unchanged_channel(actual, expected[key], xk)
                same_ch[key] = whole if whole is not None else np.array(
                    [actual is not None and _unchanged(actual, expected[key], xk[k - 1] if k else None, xk[k])
                     for k in range(len(xk))], bool)
        same = np.logical_and.reduce(list(same_ch.values())) if same_ch else np.zeros(0, bool)
        # frames to export: real keys, and GENERATED keys of segments the user changed
        real = [c.x[~c.generated] for c in chans.values()]
        gen_kept = []
        for key, c in chans.items():
            g = c.x[c.generated]
            if not len(g):
                continue
            if key in same_ch and len(xk):
                k = np.searchsorted(xk, g - 1e-6)
                ok = (k > 0) & (k < len(xk)) & same_ch[key][np.clip(k, 0, len(xk) - 1)]
                g = g[~ok]
            gen_kept.append(g)
        if any(len(g) for g in gen_kept):
            promoted.append(bone)
        xs = np.unique(np.concatenate(real + gen_kept)) if real else np.zeros(0)
        if not len(xs):
            continue
        if bake:
            v0, v1 = _vmd_frames(xs[[0, -1]], fps)
            frames = np.arange(int(math.floor(v0 + _WHOLE)), int(math.ceil(v1 - _WHOLE)) + 1)
        else:
            frames, moved = _whole_frames(xs, fps)
            if moved:
                resampled.append(bone)
        euler = any(k[0] == "rotation_euler" for k in chans) and not any(k[0] == "rotation_quaternion" for k in chans)
        if euler and not bake:  # Blender blends Euler angles, MMD slerps: sample every frame where they turn
            extra = []
            for a, b in zip(frames[:-1], frames[1:]):
                xa, xb = a * fps / vmd.FPS, b * fps / vmd.FPS
                if any(not np.isclose(c.value(xa), c.value(xb)) for k, c in chans.items() if k[0] == "rotation_euler"):
                    extra.append(np.arange(a + 1, b))
            if extra:
                frames = np.unique(np.concatenate([frames] + extra))
        x = frames * fps / vmd.FPS
        def sampled(prop, n):  # (frames, n): the channel's curve, or the pose value where it has none
            return np.stack([chans[(prop, j)].values(x) if (prop, j) in chans
                             else np.full(len(x), getattr(pb, prop)[j], np.float64) for j in range(n)], axis=1)

        loc = sampled("location", 3)
        if euler:
            quat = bact._euler_to_quat(sampled("rotation_euler", 3),
                                       pb.rotation_mode if len(pb.rotation_mode) == 3 else "XYZ")
        else:
            quat = sampled("rotation_quaternion", 4)
        quat = quat_normalize(quat)
        pos_mmd, rot_mmd = bmap.to_mmd(loc, quat)
        perm = vc.dominant_permutation(np.linalg.inv(bmap.position_matrix()).T)  # MMD channel i ← Blender perm[i]
        # the file's key on each frame (-1: none); keys the user left alone are written back as they were
        k_at = np.full(len(frames), -1, np.int64)
        if tr is not None and len(tr.frames):
            raw_frames = tr.frames.astype(np.int64)
            j = np.clip(np.searchsorted(raw_frames, frames), 0, len(raw_frames) - 1)
            k_at = np.where(raw_frames[j] == frames, j, -1)
        reuse = np.zeros(len(frames), bool)
        if tr is not None and not bake:
            on_key = np.flatnonzero(k_at >= 0)
            k = k_at[on_key]
            reuse[on_key] = same[k] & (np.abs(x[on_key] - xk[k]) <= 1e-6 * np.maximum(1, np.abs(x[on_key])))
        if reuse.any():
            kept = tr.index[k_at[reuse]].astype(np.int64)
            parts.append((kept, raw["bone_keys"][kept]))
        new_keys = vmd.new_bone_keys(len(frames))
        for m_ in np.flatnonzero(~reuse).tolist():  # new and edited keys: their curves are derived one by one
            f = frames[m_]
            hitk = (int(k_at[m_]), int(tr.index[k_at[m_]])) if k_at[m_] >= 0 else None
            rec = new_keys[m_]
            rec["name"] = field
            rec["frame"] = int(f)
            rec["position"] = pos_mmd[m_]
            rec["rotation"] = rot_mmd[m_]
            old = raw["bone_keys"][hitk[1]] if hitk is not None else None
            cv = vmd.curves(old["interpolation"]) if old is not None else vmd.linear_curves()
            if m_ > 0 and not bake:
                keep = np.zeros(4, bool)  # channels whose segment is still the file's keep its curve
                if hitk is not None and abs(x[m_] - xk[hitk[0]]) <= 1e-6 * max(1, abs(x[m_])) and \
                        abs(x[m_ - 1] - (xk[hitk[0] - 1] if hitk[0] else -1e30)) <= 1e-6 * max(1, abs(x[m_])):
                    keep[:3] = [same_ch[("location", int(perm[i]))][hitk[0]] for i in range(3)]
                    keep[3] = all(same_ch[("rotation_quaternion", c)][hitk[0]] for c in range(4))
                derived, bad = _segment_curves(chans, x[m_ - 1], x[m_], perm, cv, euler)
                cv = np.where(keep[:, None], cv, derived)
                if bad and not keep.all():
                    unrepresentable.append(f"{name}@{int(f)}")
            elif bake:
                cv = vmd.linear_curves()
            rec["interpolation"] = vmd.build_interpolation(
                cv, physics=vmd.physics_bytes(old["interpolation"]) if old is not None else None)
            parts.append((hitk[1] if hitk is not None else big + counter, rec))
            counter += 1
    if resampled:
        warnings.append(f"{act.name}: keys between whole 30-fps frames resampled onto the frames around them: "
                        f"{', '.join(resampled[:8])}{', ...' if len(resampled) > 8 else ''}")
    if unrepresentable:
        warnings.append(f"{act.name}: {len(unrepresentable)} curve segment(s) a VMD block cannot hold exactly "
                        f"(written as the nearest block): {', '.join(unrepresentable[:8])}"
                        f"{', ...' if len(unrepresentable) > 8 else ''}")
    if promoted:
        warnings.append(f"{act.name}: GENERATED keys in edited segments written as keys: {', '.join(promoted)}")
    props = _export_ik(act, arm_ob, ik_curves, raw, fps)
    return parts, warnings, props


def _segment_curves(chans, xa, xb, perm, fallback, euler) -> tuple[np.ndarray, bool]:
    """X/Y/Z/R curve bytes of the segment [xa, xb] from the handles; `fallback` (4, 4) where a channel does
    not move. Returns (curves, whether a curve had to be approximated)."""
    out = np.array(fallback, np.uint8).copy()
    bad = False

    def derive(keys):
        best, best_dy, shapes = None, 0.0, []
        for key in keys:
            c = chans.get(key)
            if c is None:
                continue
            seg = c.segment(xa, xb)
            if seg is None:
                return vmd.LINEAR_CURVE, False, True
            if isinstance(seg, str):
                return vmd.LINEAR_CURVE, True, True
            b, off = vc.bytes_of(seg)
            if b is None:
                continue
            dy = abs(seg[3, 1] - seg[0, 1])
            shapes.append((b, off))
            if dy > best_dy:
                best, best_dy = (b, off), dy
        if best is None:
            return None, False, False
        differs = any(np.abs(b.astype(int) - best[0].astype(int)).max() > 1 for b, _ in shapes)
        return best[0], best[1] > 0.5 or differs, True

    for i in range(3):
        b, worse, _ = derive([("location", int(perm[i]))])
        if b is not None:
            out[i] = b
        bad |= worse
    if euler:
        out[3] = vmd.LINEAR_CURVE
    else:
        b, worse, _ = derive([("rotation_quaternion", c) for c in range(4)])
        if b is not None:
            out[3] = b
        bad |= worse
    return out, bad


def _export_ik(act, arm_ob, ik_curves, raw, fps):
    """Show / IK keys: the file's while the IK influence curves are what import made, else rebuilt."""
    iks = ik_constraints(arm_ob)
    by_target = {}
    for name, targets in iks.items():
        for t in targets:
            if t in ik_curves and ik_curves[t].fc.data_path:
                by_target.setdefault(name, ik_curves[t])
    raw_props = raw["property"] if raw is not None else []
    expected: dict[str, list] = {}
    for key in raw_props:
        for st in key.ik:
            n = vmd.decode_name(bytes(st["name"]))
            expected.setdefault(n, []).append((float(key.frame) * fps / vmd.FPS, 1.0 if st["enabled"] else 0.0))
    changed = False
    for name, c in by_target.items():
        exp = sorted(dict(expected.get(name, [])).items())
        if len(exp) != len(c.x) or not _close(c.x, [e[0] for e in exp]) or not _close(c.y, [e[1] for e in exp]):
            changed = True
    if not changed and (raw is not None or not by_target):
        return raw_props if raw is not None else []
    frames = sorted({int(round(f)) for c in by_target.values() for f in _vmd_frames(c.x, fps)} |
                    {int(k.frame) for k in raw_props})
    out = []
    for f in frames:
        before = [k for k in raw_props if k.frame <= f]
        base = before[-1] if before else None
        states = {vmd.decode_name(bytes(s["name"])): (bytes(s["name"]), int(s["enabled"]))
                  for s in (base.ik if base is not None else [])}
        for name, c in by_target.items():
            states[name] = (vmd.encode_name(name, vmd.IK_NAME_SIZE), 1 if c.value(f * fps / vmd.FPS) >= 0.5 else 0)
        ik = np.zeros(len(states), vmd.IK_STATE)
        for i, (raw_name, on) in enumerate(states.values()):
            ik[i] = (raw_name, on)
        out.append(vmd.PropertyKey(f, int(base.visible) if base is not None else 1, ik))
    return out


def _export_morphs(act, arm_ob, raw, fps, bake):
    warnings: list[str] = []
    morphs = morph_names(arm_ob)
    morph_of = {(ob.data.shape_keys.name, key): name for name, (ob, key) in morphs.items()}
    curves: dict[str, _Curve] = {}
    for slot in act.slots:
        if slot.target_id_type != "KEY":
            continue
        users = [u for u in slot.users()] if hasattr(slot, "users") else []
        for cb in _channelbags(act, slot):
            for fc in cb.fcurves:
                m = _MORPH_PATH.match(fc.data_path)
                if not m or fc.mute or not len(fc.keyframe_points):
                    continue
                key_name = _unesc(m.group(1))
                name = next((morph_of[(u.name, key_name)] for u in users if (u.name, key_name) in morph_of), None)
                if name is None:
                    name = next((n for (k, kn), n in morph_of.items() if kn == key_name), key_name)
                curves[name] = _Curve(fc)
    parts = []
    big = 1 << 40
    raw_keys = raw["morph_keys"] if raw is not None else np.zeros(0, vmd.MORPH_KEY)
    hit, miss, _ = _split_keys(raw_keys, set(curves))
    for i in miss:
        parts.append((int(i), raw_keys[i]))
    raw_at = {}
    for i in hit:
        raw_at[(vmd.decode_name(bytes(raw_keys["name"][i])), int(raw_keys["frame"][i]))] = int(i)
    fields, more = vmd.encode_names(list(curves), what="morph")
    warnings += more
    counter = 0
    used = set()
    for (name, c), field in zip(curves.items(), fields):
        if bake:
            v0, v1 = _vmd_frames(c.x[[0, -1]], fps)
            frames = np.arange(int(math.floor(v0 + _WHOLE)), int(math.ceil(v1 - _WHOLE)) + 1)
        else:
            frames, _ = _whole_frames(c.x, fps)
        for f in frames:
            value = np.float32(c.value(f * fps / vmd.FPS))
            i = raw_at.get((name, int(f)))
            if i is not None and abs(float(raw_keys["weight"][i]) - float(value)) <= 1e-6:
                parts.append((i, raw_keys[i]))
                used.add(i)
                continue
            rec = np.zeros(1, vmd.MORPH_KEY)[0]
            rec["name"], rec["frame"], rec["weight"] = field, int(f), value
            parts.append((i if i is not None else big + counter, rec))
            counter += 1
    for i in hit:  # shadowed duplicates on one frame stay as they were
        key = (vmd.decode_name(bytes(raw_keys["name"][i])), int(raw_keys["frame"][i]))
        if i not in used and raw_at.get(key) != i:
            parts.append((int(i), raw_keys[i]))
    return parts, warnings


def export_vmd(context, path: str, arm_ob, act=None, bake: bool = False, rest: dict | None = None,
               names: dict | None = None) -> list[str]:
    """Write one action (default: the armature's assigned one) to `path`; returns warnings."""
    if act is None:
        act = arm_ob.animation_data.action if arm_ob is not None and arm_ob.animation_data else None
        if act is None:
            raise ExportError(f"{arm_ob.name if arm_ob is not None else 'no armature'}: no action to export")
    motion, warnings = export_motion(context, act, arm_ob, bake, rest, names)
    write_atomic(path, vmd.write(motion))
    return warnings


def motion_actions(arm_ob) -> list:
    """Actions to export for an armature: those animating its bones, then those made from a VMD for it."""
    out = bact.armature_actions(arm_ob) if arm_ob is not None else []
    for act in bpy.data.actions:
        if act not in out and act.get(RAW) is not None:
            out.append(act)
    return out


def export_actions(context, outdir: str, arm_ob, actions=None, bake: bool = False, rest: dict | None = None,
                   names: dict | None = None, allocator: NameAllocator | None = None, protected=()
                   ) -> tuple[list[str], list[str]]:
    """One OUTDIR/<action>.vmd per action; all made in memory before the first is written."""
    actions = motion_actions(arm_ob) if actions is None else list(actions)
    allocator = allocator or NameAllocator()
    pending, warnings = [], []
    for act in actions:
        motion, more = export_motion(context, act, arm_ob, bake, rest, names)
        warnings += more
        pending.append((allocator.take(act.name, ".vmd"), vmd.write(motion)))
    protected = set(protected or ())
    for stem, _ in pending:
        if os.path.realpath(os.path.join(outdir, stem + ".vmd")) in protected:
            raise ExportError(f"refusing to overwrite the input {os.path.join(outdir, stem + '.vmd')}")
    written = []
    if pending:
        os.makedirs(outdir, exist_ok=True)
    for stem, data in pending:
        path = os.path.join(outdir, stem + ".vmd")
        write_atomic(path, data)
        written.append(path)
    return written, warnings


def rig_rest(arm_ob, mmd_rig: bool = False, arm_angle: float = 0.0, bone_map=None
             ) -> tuple[dict | None, dict | None, list[str]]:
    """For a model exported with `--mmd-rig` / `--arm-angle`: the PMX rest of every bone, from the function
    the PMX export uses (`mmd_rig.skeleton_arm_angle_rest`), and the MMD name each bone gets. Bones merged
    into 全ての親 or dropped as helpers get no keys (with a warning). Per-bone local mapping, right only where
    the PMX keeps Blender's hierarchy; `convert` uses `export_rigged_motion` (world retargeting) instead."""
    from ..blender import armature as barm
    from . import mmd_rig as rig

    if isinstance(bone_map, (str, os.PathLike)):
        bone_map = rig.load_bone_map(os.fspath(bone_map))
    skel = barm.read_skeleton(arm_ob)
    warnings: list[str] = []
    change = rig.skeleton_arm_angle_rest(skel, float(arm_angle or 0.0), bone_map)
    heads = skel.binds()[:, :3, 3]
    rest = {}
    for i, b in enumerate(skel.bones):
        rest[b.name] = {"change": change[i], "head": change[i][:3, :3] @ heads[i] + change[i][:3, 3]}
    names = None
    if mmd_rig:
        mapping = rig.map_bones(skel.names, [int(p) for p in skel.parents], None, bone_map)
        names = {}
        skipped = []
        for i, b in enumerate(skel.bones):
            if mapping.dropped(i) or mapping.merged(i):
                skipped.append(b.name)
            names[b.name] = mapping.exported_name(i)
        if skipped:
            warnings.append(f"bones merged or dropped by the MMD rig keep no keys: {', '.join(skipped)}")
    return rest, names, warnings


def export_target_motions(context, outdir: str, name: str, options) -> tuple[list[str], list[str]]:
    """`convert --to pmx`: OUTDIR/<action>.vmd for every action of the model's armature. With `--mmd-rig` or
    `--arm-angle` the motions are retargeted onto the very PMX just written (OUTDIR/NAME.pmx, read back; its
    bones, parents and rest positions are the ones `mmd_rig.apply` made), see `export_rigged_motion`."""
    arm_ob = next((o for o in context.view_layer.objects if o.type == "ARMATURE"), None)
    if arm_ob is None:
        return [], []
    actions = motion_actions(arm_ob)
    if not actions:
        return [], []
    if not (getattr(options, "mmd_rig", False) or getattr(options, "arm_angle", 0.0)):
        return export_actions(context, outdir, arm_ob, actions, protected=getattr(options, "protected", ()))
    from . import pmx as pmx_io

    path = os.path.join(outdir, name + ".pmx")
    if os.path.isfile(path):
        model = pmx_io.read(read_bytes(path))
    else:  # not written by export_target: the same records, built the same way
        from . import blender_io
        from . import mmd_rig as rig

        model, _ = blender_io.gather_model(context, None, False)
        rig.apply(model, rig=getattr(options, "mmd_rig", False), bone_map=getattr(options, "bone_map", None),
                  arm_angle=getattr(options, "arm_angle", 0.0))
    allocator = NameAllocator()
    pending, warnings = [], []
    for act in actions:
        motion, more = export_rigged_motion(context, act, arm_ob, model, getattr(options, "arm_angle", 0.0),
                                            getattr(options, "bone_map", None),
                                            mmd_rig=bool(getattr(options, "mmd_rig", False)))
        warnings += more
        pending.append((allocator.take(act.name, ".vmd"), vmd.write(motion)))
    protected = set(getattr(options, "protected", ()) or ())
    for stem, _ in pending:
        if os.path.realpath(os.path.join(outdir, stem + ".vmd")) in protected:
            raise ExportError(f"refusing to overwrite the input {os.path.join(outdir, stem + '.vmd')}")
    written = []
    for stem, data in pending:
        out = os.path.join(outdir, stem + ".vmd")
        write_atomic(out, data)
        written.append(out)
    return written, warnings


# ------------------------------------------------------------------------------------------------------------
# Export onto a rigged PMX (`--mmd-rig` / `--arm-angle`): retargeting through world transforms
#
# The rigged PMX has another hierarchy than the Blender armature (上半身 hangs on 腰, not on the hips; control
# bones are inserted; helpers are dropped; roots merge into 全ての親) and, with `--arm-angle`, another rest
# pose. Local keys can therefore not be carried over bone by bone. Instead, at every frame exported:
#
# * Blender evaluates the action (the armature's pose at that time, NLA off); each source bone b gives its
#   deformation M_b = posed world · rest world⁻¹ (Blender world axes);
# * the PMX bone k made from b must deform its own rest (which is D_b · Blender rest, D_b the arm-angle rest
#   transform of `mmd_rig.arm_angle_rest_transforms`, identity off the arms) as b deforms Blender's:
#   S_k = K · M_b · D_b⁻¹ · K⁻¹ (K: Blender world → MMD axes and units), so its MMD world matrix is
#   W_k = S_k · T(head_k);
# * 全ての親 takes the deformation of the deepest source bone merged into it (the root motion), so センター,
#   グルーブ, 腰 and 足IK親 stay at rest under it; an IK bone takes the deformation of its IK target (so that
#   MMD with IK on lands where the motion puts the foot); other bones without a source (the inserted 上半身2)
#   stay at rest relative to their parent;
# * the key is the local transform MMD composes to W_k: rotation R_p⁻¹ R_k, position R_p⁻¹ (t_k − t_p) −
#   (head_k − head_p), with 付与 (append) contributions taken out as `core.skinning.mmd_world_matrices` adds
#   them.
#
# Frames: every whole 30-fps frame that is a key of the action, and for keys between whole frames the whole
# frames on both sides (`_whole_frames`; a 24-fps action gets nearly every frame); every whole frame inside a
# segment of a bone curve that is not a straight line (Bézier, easing): a PMX-local key composes several source
# curves (上半身 = hips · spine), which one 4-channel VMD block cannot follow; `bake`: every whole frame.
# Blocks are linear: between two keys MMD slerps each PMX-local rotation, which equals Blender's evaluation of
# the action baked onto whole 30-fps frames (rotations turning by slerp) up to second order in the per-frame
# motion of bones whose PMX parent is not their Blender parent. IK state keys are not
# written (MMD's default, IK on). Bones that never leave their rest get no keys. Scale in the pose cannot be
# held by a VMD: it is dropped with a warning.

def _rig_sources(model, arm_ob, bone_map, mmd_rig: bool = True) -> tuple:
    """(source skeleton, its `mmd_rig.map_bones` mapping, the source bone index each PMX bone follows or
    None). Without the rig (`--arm-angle` alone) the PMX keeps the source names."""
    from ..blender import armature as barm
    from . import mmd_rig as rig

    if isinstance(bone_map, (str, os.PathLike)):
        bone_map = rig.load_bone_map(os.fspath(bone_map))
    skel = barm.read_skeleton(arm_ob)
    mmd_of = {b: m for m, b in bone_names(arm_ob).items()}
    names = [mmd_of.get(n, n) for n in skel.names]  # the names the PMX export starts from
    parents = [int(p) for p in skel.parents]
    mapping = rig.map_bones(names, parents, None, bone_map)
    by_name: dict[str, int] = {}
    merged = [i for i in range(len(names)) if mapping.merged(i)]
    for i in range(len(names)):
        if mapping.dropped(i) or mapping.merged(i):
            continue
        by_name.setdefault(mapping.exported_name(i) if mmd_rig else names[i], i)
    if mmd_rig and merged:  # the root motion: the deepest bone merged into 全ての親
        depth = rig._depths(parents)
        by_name.setdefault(rig.ROOT, max(merged, key=lambda i: (depth[i], i)))
    src = [by_name.get(b.name) for b in model.bones]
    return skel, mapping, src


def _posed_world(context, arm_ob, act, xs: np.ndarray, names: list[str]) -> np.ndarray:
    """(F, B, 4, 4) world matrices of bones `names` at Blender frames `xs`, as Blender evaluates the armature
    with `act` assigned (NLA off). The scene's frame, the action and its slot are restored."""
    scene = context.scene
    ad = arm_ob.animation_data or arm_ob.animation_data_create()
    saved = (scene.frame_current, scene.frame_subframe, ad.action, ad.action_slot, ad.use_nla)
    out = np.zeros((len(xs), len(names), 4, 4))
    try:
        if ad.action != act:
            ad.action = act
        slot = bact._slot_for(arm_ob, act)
        if slot is not None and ad.action_slot != slot:
            ad.action_slot = slot
        ad.use_nla = False
        for f, x in enumerate(xs):
            base = math.floor(x + 1e-9)
            scene.frame_set(int(base), subframe=float(max(x - base, 0.0)))
            deps = context.evaluated_depsgraph_get()
            ev = arm_ob.evaluated_get(deps)
            world = np.array(ev.matrix_world, np.float64)
            for b, n in enumerate(names):
                out[f, b] = world @ np.array(ev.pose.bones[n].matrix, np.float64)
    finally:
        ad.use_nla = saved[4]
        if ad.action != saved[2]:
            ad.action = saved[2]
        if saved[3] is not None and ad.action_slot != saved[3]:
            try:
                ad.action_slot = saved[3]
            except (TypeError, RuntimeError):
                pass
        scene.frame_set(saved[0], subframe=saved[1])
    return out


def _rotation_part(m: np.ndarray) -> tuple[np.ndarray, float]:
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
    from ..core.skinning import _mul_xyzw, _slerp_xyzw
    from ..core.transforms import matrix3_to_quat

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
            rk, s = _rotation_part(world[k, :3, :3])
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


def export_rigged_motion(context, act, arm_ob, model, arm_angle: float = 0.0, bone_map=None,
                         bake: bool = False, mmd_rig: bool = True) -> tuple[vmd.Motion, list[str]]:
    """The VMD of one action for `model`, the rigged PMX exported from `arm_ob` (read-only; see above)."""
    from . import mmd_rig as rig

    fps = bact.fps_of(context.scene)
    scale = model_scale(arm_ob)
    warnings: list[str] = []
    skel, mapping, src = _rig_sources(model, arm_ob, bone_map, mmd_rig)
    m = vmd.Motion()
    m.model_name = model.name or arm_ob.name
    if vmd.name_problem(m.model_name, vmd.MODEL_NAME_SIZE):
        warnings.append(f"model name {m.model_name!r} {vmd.name_problem(m.model_name, vmd.MODEL_NAME_SIZE)}")
    slot = bact._slot_for(arm_ob, act)
    xs, curved = [], []
    for cb in _channelbags(act, slot):
        for fc in cb.fcurves:
            mt = _BONE_PATH.match(fc.data_path) or re.match(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\.', fc.data_path)
            if mt and not fc.mute and len(fc.keyframe_points) and _unesc(mt.group(1)) in arm_ob.data.bones:
                c = _Curve(fc)
                xs.append(c.x)
                # segments that are not straight lines (Bézier, easings) are sampled on every whole frame
                change = (c.y[1:] != c.y[:-1]) & (c.interp[:-1] != _INTERP["LINEAR"])
                for i in np.flatnonzero(change):
                    v0, v1 = _vmd_frames(c.x[[i, i + 1]], fps)
                    curved.append(np.arange(int(math.ceil(v0)), int(math.floor(v1)) + 1))
    if xs:
        allx = np.concatenate(xs)
        if bake:
            v0, v1 = _vmd_frames(np.array([allx.min(), allx.max()]), fps)
            frames = np.arange(max(int(math.floor(v0 + _WHOLE)), 0), int(math.ceil(v1 - _WHOLE)) + 1)
        else:
            frames, moved = _whole_frames(allx, fps)
            if moved:
                warnings.append(f"{act.name}: keys between whole 30-fps frames resampled onto the frames around "
                                "them")
            if curved:
                frames = np.unique(np.concatenate([frames] + curved))
                frames = frames[frames >= 0]
        used = sorted({s for s in src if s is not None})
        binds = skel.binds()
        posed = _posed_world(context, arm_ob, act, frames * fps / vmd.FPS, [skel.names[i] for i in used])
        heads = binds[:, :3, 3]
        arms = {i: side for side, prefix in rig.SIDES.items() if (i := mapping.index(prefix + "腕")) is not None}
        d = rig.arm_angle_rest_transforms([int(p) for p in skel.parents], heads, arms, float(arm_angle or 0.0))
        k4 = np.eye(4)
        k4[:3, :3] = vc._SWAP / scale
        k4_inv = np.linalg.inv(k4)
        n = len(model.bones)
        deform = np.full((len(frames), n, 4, 4), np.nan)
        col = {s: c for c, s in enumerate(used)}
        for k, s in enumerate(src):
            if s is None:
                continue
            mb = posed[:, col[s]] @ np.linalg.inv(binds[s])
            deform[:, k] = k4 @ mb @ np.linalg.inv(d[s]) @ k4_inv
        for k, b in enumerate(model.bones):  # IK bones follow their targets
            if src[k] is None and b.ik is not None and 0 <= b.ik.target < n and src[b.ik.target] is not None:
                deform[:, k] = deform[:, b.ik.target]
        pos, rot, worst = rigged_keys(model, deform)
        if worst > 1e-4:
            warnings.append(f"{act.name}: the pose scales bones (by up to {worst:.3g}), which a VMD cannot hold; "
                            "scale dropped")
        pos[np.abs(pos) < 1e-6] = 0.0
        moving = [k for k in range(n) if np.abs(pos[:, k]).max() > 0 or
                  np.abs(np.abs(rot[:, k, 3]) - 1).max() > 1e-12]
        fields, more = vmd.encode_names([model.bones[k].name for k in moving])
        warnings += more
        keys = vmd.new_bone_keys(len(moving) * len(frames))
        block = vmd.build_interpolation(vmd.linear_curves())
        for j, (k, field) in enumerate(zip(moving, fields)):
            sl = slice(j * len(frames), (j + 1) * len(frames))
            keys["name"][sl] = field
            keys["frame"][sl] = frames
            keys["position"][sl] = pos[:, k]
            keys["rotation"][sl] = rot[:, k]
            keys["interpolation"][sl] = block
        m.bone_keys = keys
        dropped = [skel.names[i] for i in range(len(skel.names)) if mapping.dropped(i)]
        if dropped:
            warnings.append(f"{act.name}: bones dropped by the MMD rig keep no keys (their vertices follow the "
                            f"bone they were merged into): {', '.join(dropped)}")
    parts, more = _export_morphs(act, arm_ob, None, fps, bake)
    warnings += more
    m.morph_keys = _assemble(parts, None, vmd.MORPH_KEY)
    bad = ~np.all(np.isfinite(m.bone_keys["position"]), axis=1) | ~np.all(np.isfinite(m.bone_keys["rotation"]), axis=1)
    if bad.any():
        raise ExportError(f"action {act.name}: bone {vmd.decode_name(bytes(m.bone_keys['name'][bad][0]))} has a "
                          "non-finite value")
    return m, warnings


def load_motion(context, path, arm_ob, options) -> list[str]:
    """`--motion FILE.vmd` for `convert`: the motion as an action on the model's armature."""
    _, warnings = import_vmd(context, [path], arm_ob)
    return warnings


__all__ = ["import_vmd", "export_vmd", "export_motion", "export_actions", "load_motion", "FormatError"]
