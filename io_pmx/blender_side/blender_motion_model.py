"""What an armature imported from PMX offers a VMD motion, for the import and the export alike: its bones,
morphs and IK constraints by MMD name, its unit (metres per MMD unit), the map between a bone's pose channels and
its VMD keys (`bone_key_map`), and which keys of a file the model can take (`split_keys`). Also the names both sides use
for what they keep on Blender data (the action's raw VMD, the camera rig, the data paths of bone, IK and
morph curves).
"""
from __future__ import annotations

import math
import re

import bpy
import numpy as np

from . import blender_mmd
from ..model.units import METRES_PER_UNIT
from ..motion import vmd
from ..motion import channels as vc

RAW = "skinbridge_vmd"
CAMERA_PROP = "skinbridge_vmd_camera"
BONE_PATH = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\.(location|rotation_quaternion|rotation_euler)$')
IK_PATH = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\.constraints\["((?:[^"\\]|\\.)*)"\]\.influence$')
MORPH_PATH = re.compile(r'^key_blocks\["((?:[^"\\]|\\.)*)"\]\.value$')
SLIDER_PATH = re.compile(r'^\["((?:[^"\\]|\\.)*)"\]$')  # a morph slider: a custom property of the armature


def escape(name: str) -> str:
    return bpy.utils.escape_identifier(name)


def unescape(name: str) -> str:
    return re.sub(r"\\(.)", r"\1", name)


def model_metres_per_unit(arm_ob) -> float:
    """Blender metres of one MMD unit of the armature's model: the import's, stored with the model (under the
    key "scale"), else MMD's 8 cm."""
    raw = blender_mmd.stored_extras(arm_ob, [])
    try:
        s = float(raw.get("scale", METRES_PER_UNIT)) if raw else METRES_PER_UNIT
    except (TypeError, ValueError):
        s = METRES_PER_UNIT
    return s if s > 0 and math.isfinite(s) else METRES_PER_UNIT





def bone_names(arm_ob) -> dict[str, str]:
    """MMD (Japanese) name → Blender bone name; a bone not from PMX goes by its Blender name. A bone renamed in
    Blender goes by its new name (the one the export writes), and by its file's name where no other bone has
    it (a motion made for the original model still reaches it)."""
    out: dict[str, str] = {}
    for bone in arm_ob.data.bones:
        names = blender_mmd.pmx_names(bone)
        out.setdefault(names[0] if names and names[0] else bone.name, bone.name)
    for bone in arm_ob.data.bones:
        names = blender_mmd.file_names(bone)
        if names and names[0]:
            out.setdefault(names[0], bone.name)
    return out


def mmd_names_of(arm_ob) -> dict[str, str]:
    """Blender bone name → the MMD (Japanese) name the export writes for it (`bone_names` the other way, each
    bone once, by its new name when renamed in Blender)."""
    out: dict[str, str] = {}
    for mmd, bone in bone_names(arm_ob).items():
        out.setdefault(bone, mmd)
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


def slider_names(arm_ob) -> dict[str, str]:
    """MMD morph name → the armature's custom property that is the slider of that non-vertex morph
    (blender_morphs); a name that is also a vertex morph's stays with its shape key."""
    raw = blender_mmd.stored_extras(arm_ob, []) or {}
    sliders = raw.get("morph_sliders", {}) if isinstance(raw.get("morph_sliders"), dict) else {}
    morphs = raw.get("morphs", []) if isinstance(raw.get("morphs"), list) else []
    out: dict[str, str] = {}
    for k, prop in sliders.items():
        try:
            name = morphs[int(k)]["name"]
        except (IndexError, KeyError, ValueError, TypeError):
            continue
        if prop in arm_ob:
            out.setdefault(name, prop)
    return out


def ik_constraints(arm_ob) -> dict[str, list[tuple[str, str]]]:
    """MMD name of an IK bone → [(pose bone, constraint name)] its on/off key drives: the IK constraint aimed
    at it and the IK-limit override on that constraint's bone."""
    mmd_of = mmd_names_of(arm_ob)
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


def bone_key_map(arm_ob, bone_name: str, scale: float, rest: dict | None = None) -> vc.BoneMap:
    world = np.array(arm_ob.matrix_world, np.float64)
    bone = arm_ob.data.bones[bone_name]
    rw = world @ np.array(bone.matrix_local, np.float64)
    if rest and bone_name in rest:
        r = rest[bone_name]
        parent = bone.parent.name if bone.parent else None
        return vc.bone_map(rw, scale, r.get("head"), r.get("change"),
                           rest.get(parent, {}).get("change") if parent else None)
    return vc.bone_map(rw, scale)


def split_keys(keys: np.ndarray, known) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """File positions of keys whose name is known, of the others, and a count per unknown name."""
    names, which = vmd.distinct_names(keys["name"])
    ok = np.array([n in known for n in names], bool)
    hit = ok[which] if len(keys) else np.zeros(0, bool)
    counts = np.bincount(which[~hit], minlength=len(names)) if len(keys) else np.zeros(0, np.int64)
    missing = [f"{names[j]} ({counts[j]})" for j in range(len(names)) if not ok[j]]
    return np.flatnonzero(hit), np.flatnonzero(~hit), missing


def non_finite(keys: np.ndarray) -> np.ndarray:
    if not len(keys):
        return np.zeros(0, bool)
    return ~(np.isfinite(keys["position"]).all(axis=1) & np.isfinite(keys["rotation"]).all(axis=1))
