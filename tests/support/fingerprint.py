"""A comparable snapshot of the user-visible Blender state, for tests of "export changes nothing".

`scene_fingerprint()` reads, never writes: per object its type, data, parent, matrices, hide/select state,
modifiers, vertex groups and animation data; per mesh SHA-256 digests of positions and normals; per armature
the pose position, every bone's rest matrix and every pose bone's matrix_basis; per action its slots and
keys; the scene's frame, subframe, mode and active object; and the length of every `bpy.data` collection.

Floats are rounded to `DECIMALS` places (after converting to float64, with -0.0 folded into 0.0) before they
are stored or hashed, so any change of 1e-6 or more shows while the value printed in a diff stays readable.
What is read is the original (not evaluated) data; a mesh or armature in Edit mode is read as stored on the
datablock, i.e. as of the last switch out of Edit mode.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

import bpy
import numpy as np

from skinbridge.blender import compat

DECIMALS = 7

# Modifier properties that are UI or runtime state rather than settings.
_MODIFIER_SKIP = frozenset({"rna_type", "show_expanded", "execution_time", "is_override_data", "persistent_uid"})


def _num(x: float) -> float:
    return round(float(x), DECIMALS) + 0.0


def _vec(values) -> list[float]:
    return [_num(v) for v in values]


def _matrix(m) -> list[list[float]]:
    return [_vec(row) for row in m]


def _quantised(a: np.ndarray) -> np.ndarray:
    return np.round(a.astype(np.float64), DECIMALS) + 0.0


def _array_digest(collection, prop: str, count: int, width: int, dtype=np.float32) -> str:
    """SHA-256 of `collection.foreach_get(prop)` (shape count×width), floats quantised as everywhere else."""
    buf = np.empty(count * width, dtype=dtype)
    if count:
        collection.foreach_get(prop, buf)
    if np.issubdtype(dtype, np.floating):
        buf = _quantised(buf)
    h = hashlib.sha256()
    h.update(f"{buf.dtype.str}:{count}x{width}:".encode())
    h.update(np.ascontiguousarray(buf).tobytes())
    return h.hexdigest()


def _id_name(idblock) -> str | None:
    return None if idblock is None else idblock.name_full


def _rna_value(value) -> Any:
    if isinstance(value, bpy.types.ID):
        return value.name_full
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return _num(value)
    if isinstance(value, set):
        return sorted(value)
    try:
        return [_rna_value(v) for v in value]
    except TypeError:
        return repr(value)


def _settings(struct, skip: frozenset[str]) -> dict[str, Any]:
    """Every editable scalar/enum/array/ID-pointer property of an RNA struct (a modifier, a constraint)."""
    out: dict[str, Any] = {}
    for prop in struct.bl_rna.properties:
        ident = prop.identifier
        if ident in skip or prop.type == "COLLECTION" or (prop.is_readonly and prop.type == "POINTER"):
            continue
        if prop.type == "POINTER":
            value = getattr(struct, ident)
            if value is not None and not isinstance(value, bpy.types.ID):
                continue  # nested struct (e.g. a curve mapping): not a setting we compare
        out[ident] = _rna_value(getattr(struct, ident))
    return out


def _safe(call, default=None):
    """`hide_get()`/`select_get()` raise for objects outside the view layer."""
    try:
        return call()
    except RuntimeError:
        return default


def _animation(adt) -> dict[str, Any] | None:
    if adt is None:
        return None
    return {
        "action": _id_name(adt.action),
        "slot": adt.action_slot.identifier if adt.action_slot else None,
        "extrapolation": adt.action_extrapolation,
        "blend_type": adt.action_blend_type,
        "influence": _num(adt.action_influence),
        "use_nla": adt.use_nla,
        "use_tweak_mode": adt.use_tweak_mode,
        "drivers": [[fc.data_path, fc.array_index] for fc in adt.drivers],
        "nla_tracks": [
            {
                "name": track.name,
                "mute": track.mute,
                "is_solo": track.is_solo,
                "lock": track.lock,
                "strips": [
                    {
                        "name": strip.name,
                        "action": _id_name(strip.action),
                        "slot": strip.action_slot.identifier if strip.action_slot else None,
                        "frames": _vec((strip.frame_start, strip.frame_end,
                                        strip.action_frame_start, strip.action_frame_end)),
                        "blend_type": strip.blend_type,
                        "extrapolation": strip.extrapolation,
                        "influence": _num(strip.influence),
                        "repeat": _num(strip.repeat),
                        "scale": _num(strip.scale),
                        "mute": strip.mute,
                        "use_reverse": strip.use_reverse,
                    }
                    for strip in track.strips
                ],
            }
            for track in adt.nla_tracks
        ],
    }


def _pose(ob) -> dict[str, Any] | None:
    if ob.pose is None:
        return None
    return {
        pb.name: {
            "matrix_basis": _matrix(pb.matrix_basis),
            "rotation_mode": pb.rotation_mode,
            "select": compat.pose_bone_flag(pb, "select"),
            "hide": compat.pose_bone_flag(pb, "hide"),
            "constraints": [[c.name, c.type, c.mute] for c in pb.constraints],
        }
        for pb in ob.pose.bones
    }


def _object(ob) -> dict[str, Any]:
    return {
        "type": ob.type,
        "data": _id_name(ob.data),
        "parent": _id_name(ob.parent),
        "parent_type": ob.parent_type,
        "parent_bone": ob.parent_bone,
        "mode": ob.mode,
        "matrix_world": _matrix(ob.matrix_world),
        "matrix_basis": _matrix(ob.matrix_basis),
        "rotation_mode": ob.rotation_mode,
        "hide_viewport": ob.hide_viewport,
        "hide_render": ob.hide_render,
        "hide_get": _safe(ob.hide_get),
        "select_get": _safe(ob.select_get),
        "collections": sorted(c.name_full for c in ob.users_collection),
        "modifiers": [
            {"name": m.name, "type": m.type, **_settings(m, _MODIFIER_SKIP)} for m in ob.modifiers
        ],
        "constraints": [[c.name, c.type, c.mute] for c in ob.constraints],
        "vertex_groups": [[vg.name, vg.lock_weight] for vg in ob.vertex_groups],
        "active_vertex_group": ob.vertex_groups.active_index,
        "animation": _animation(ob.animation_data),
        "pose": _pose(ob),
    }


def _mesh(me) -> dict[str, Any]:
    n_v, n_l = len(me.vertices), len(me.loops)
    return {
        "counts": [n_v, len(me.edges), len(me.polygons), n_l],
        "positions": _array_digest(me.attributes["position"].data, "vector", n_v, 3)
        if "position" in me.attributes else _array_digest(me.vertices, "co", n_v, 3),
        "vertex_normals": _array_digest(me.vertex_normals, "vector", n_v, 3),
        "corner_normals": _array_digest(me.corner_normals, "vector", n_l, 3),
        "corner_verts": _array_digest(me.attributes[".corner_vert"].data, "value", n_l, 1, np.int32)
        if ".corner_vert" in me.attributes else _array_digest(me.loops, "vertex_index", n_l, 1, np.int32),
        "attributes": sorted([a.name, a.domain, a.data_type] for a in me.attributes),
        "shape_keys": [[kb.name, _num(kb.value), kb.mute] for kb in me.shape_keys.key_blocks]
        if me.shape_keys else [],
        "materials": [_id_name(mat) for mat in me.materials],
    }


def _armature(arm) -> dict[str, Any]:
    return {
        "pose_position": arm.pose_position,
        "display_type": arm.display_type,
        "active_bone": arm.bones.active.name if arm.bones.active else None,
        "bones": {
            bone.name: {
                "parent": bone.parent.name if bone.parent else None,
                "matrix_local": _matrix(bone.matrix_local),
                "length": _num(bone.length),
                "use_deform": bone.use_deform,
                "use_connect": bone.use_connect,
                "hide": bone.hide,
            }
            for bone in arm.bones
        },
    }


def _action(act) -> dict[str, Any]:
    channelbags = []
    for li, layer in enumerate(act.layers):
        for si, strip in enumerate(layer.strips):
            for bag in getattr(strip, "channelbags", ()):
                curves = []
                for fc in bag.fcurves:
                    n = len(fc.keyframe_points)
                    curves.append([
                        fc.data_path, fc.array_index, fc.mute, n,
                        _array_digest(fc.keyframe_points, "co", n, 2),
                        _array_digest(fc.keyframe_points, "handle_left", n, 2),
                        _array_digest(fc.keyframe_points, "handle_right", n, 2),
                        _array_digest(fc.keyframe_points, "interpolation", n, 1, np.int32),
                    ])
                channelbags.append({"layer": li, "strip": si, "slot": bag.slot.identifier, "fcurves": curves})
    return {
        "slots": [slot.identifier for slot in act.slots],
        "frame_range": _vec(act.frame_range),
        "channelbags": channelbags,
    }


def data_lengths() -> dict[str, int]:
    """The length of every `bpy.data` collection (a failed import must leave them all as they were)."""
    return {
        prop.identifier: len(getattr(bpy.data, prop.identifier))
        for prop in bpy.data.bl_rna.properties
        if prop.type == "COLLECTION"
    }


def scene_fingerprint() -> dict:
    """Snapshot of the current file's user-visible state; JSON-serialisable, equal iff nothing changed."""
    context = bpy.context
    scene = context.scene
    active = context.view_layer.objects.active if context.view_layer else None
    return {
        "scene": {
            "name": scene.name_full,
            "frame_current": scene.frame_current,
            "frame_subframe": _num(scene.frame_subframe),
            "mode": context.mode,
            "active_object": _id_name(active),
        },
        "data_lengths": data_lengths(),
        "objects": {ob.name_full: _object(ob) for ob in bpy.data.objects},
        "meshes": {me.name_full: _mesh(me) for me in bpy.data.meshes},
        "armatures": {arm.name_full: _armature(arm) for arm in bpy.data.armatures},
        "actions": {act.name_full: _action(act) for act in bpy.data.actions},
    }


def fingerprint_digest(fp: dict) -> str:
    """One SHA-256 over a fingerprint (canonical JSON)."""
    text = json.dumps(fp, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def diff_fingerprints(a: dict, b: dict) -> list[str]:
    """Human-readable differences, one line per changed leaf, as `path: before -> after`."""
    out: list[str] = []

    def walk(x: Any, y: Any, path: str) -> None:
        if isinstance(x, dict) and isinstance(y, dict):
            for key in sorted(set(x) | set(y), key=str):
                sub = f"{path}/{key}" if path else str(key)
                if key not in y:
                    out.append(f"{sub}: removed (was {_short(x[key])})")
                elif key not in x:
                    out.append(f"{sub}: added {_short(y[key])}")
                else:
                    walk(x[key], y[key], sub)
        elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y) and any(
            isinstance(v, (dict, list)) for v in x
        ):
            for i, (u, v) in enumerate(zip(x, y)):
                walk(u, v, f"{path}[{i}]")
        elif x != y:
            out.append(f"{path}: {_short(x)} -> {_short(y)}")

    walk(a, b, "")
    return out
