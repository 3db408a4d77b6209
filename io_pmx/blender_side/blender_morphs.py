"""Every MMD morph a slider in Blender, its effect shown in the viewport, and the "MMD Morphs" sidebar panel.

docs/mmd.md §4.7. Vertex morphs are the mesh's shape keys (their value is the slider). Every other morph
(group, bone, material, UV, additional UV 1-4, flip, impulse) gets a float custom property on the armature,
`SLIDER_PREFIX + name` (keyable; 0-1 as MMD's morph panel offers it; the file morph index → property name is
`morph_sliders` in the stored PMX data). `apply` evaluates all sliders as MMD does (`model.morphs`) and shows
the result without the depsgraph: group and flip members (shape key values included) follow their factors,
bone morphs pose their bones, material morphs change the Principled BSDF's base colour and alpha (the other
MMD material fields have no Blender counterpart; their values are `material_values`), UV morphs move the
active UV map, additional-UV morphs write `pmx_morph_add_uv1..4` (the file's own sets stay untouched). What
`apply` adds is recorded on the armature (`STATE_PROP`) and taken away first on the next call, so a user's
pose, colours and UV edits in between are kept. Handlers call it after every depsgraph update (only when a
slider changed) and around frame changes, so keyed sliders play. Export sees the model with every slider at
0 (`at_rest`), so an unchanged model writes the same bytes. A bone morph is edited from a pose (`store_pose`),
a material morph from colours (`store_colour`), UV, group and flip morphs through blender_morph_edit; the
panel has a button for each.
"""
from __future__ import annotations

import contextlib
import json

import bpy
import numpy as np
from mathutils import Matrix

from ...blender import armature as barm
from ...blender import handlers as app_handlers
from ...blender.sidebar_ui import SidebarPanel
from ...core.transforms import matrix3_to_quat, trs_to_matrix
from ...core.workers import quiet_stop
from ..model import convert, morphs as mmd_morphs
from ..model import pmx
from . import blender_mmd, blender_mmd_material
from .blender_motion_model import bone_key_map, bone_names, escape, model_metres_per_unit, skinned_meshes
from ...blender.translations import translate

SLIDER_PREFIX = "MMD "
STATE_PROP = "skinbridge_pmx_morph_state"
ADD_UV_ATTR = "pmx_morph_add_uv{}"
UV_SHOWN_ATTR = "pmx_morph_uv_shown"  # the UV offset `apply` added to the active UV map (corner domain)
PANELS = ("System", "Eyebrow", "Eye", "Mouth", "Other")
KINDS = ("group", "vertex", "bone", "UV", "additional UV 1", "additional UV 2", "additional UV 3",
         "additional UV 4", "material", "flip", "impulse")


# ------------------------------------------------------------------------------------------------------------
# sliders

def build_sliders(holder) -> None:
    """A keyable float property on `holder` (the armature) per non-vertex morph; the stored PMX data's
    `morph_sliders` maps the file morph index to its property name. Called once on import."""
    raw = holder.get(blender_mmd.PROP)
    extras = json.loads(raw) if raw else {}
    sliders: dict[str, str] = {}
    used = set(holder.keys())
    for k, m in enumerate(extras.get("morphs", [])):
        if m["kind"] == pmx.MORPH_VERTEX:
            continue
        name = _slider_name(m["name"] or f"morph{k}", used)
        used.add(name)
        holder[name] = 0.0
        panel = PANELS[m["panel"]] if 0 <= m["panel"] < len(PANELS) else str(m["panel"])
        kind = KINDS[m["kind"]] if 0 <= m["kind"] < len(KINDS) else str(m["kind"])
        holder.id_properties_ui(name).update(min=0.0, max=1.0, soft_min=0.0, soft_max=1.0, default=0.0,
                                             description=f"MMD {kind} morph ({panel} panel)")
        sliders[str(k)] = name
    if sliders:
        extras["morph_sliders"] = sliders
        holder[blender_mmd.PROP] = json.dumps(extras, ensure_ascii=False)


MAX_PROP_BYTES = 63  # Blender's limit on an ID property's name (UTF-8)


def _slider_name(morph_name: str, used: set[str]) -> str:
    """`SLIDER_PREFIX + morph_name` as an ID property name: control characters (a C string ends at NUL) and
    bytes that did not decode (lone surrogates) as `_`, cut to MAX_PROP_BYTES at a character boundary,
    `.002`, `.003`, ... where taken."""
    clean = "".join("_" if ord(c) < 32 or c == "\x7f" or 0xD800 <= ord(c) < 0xE000 else c for c in morph_name)
    n = 1
    while True:
        suffix = f".{n:03d}" if n > 1 else ""
        room = MAX_PROP_BYTES - len(suffix.encode())
        name = (SLIDER_PREFIX + clean).encode("utf-8")[:room].decode("utf-8", "ignore") + suffix
        if name not in used:
            return name
        n += 1


_PARSED: dict[str, tuple[str, dict, list]] = {}  # armature → (its stored text, extras, morphs): the handlers
# run on every depsgraph update, and parsing Luka's 200 kB each time would cost milliseconds


def _parsed(arm_ob) -> tuple[dict, list[pmx.PmxMorph]]:
    raw = arm_ob.get(blender_mmd.PROP) or ""
    cached = _PARSED.get(arm_ob.name_full)
    if cached is not None and cached[0] == raw:
        return cached[1], cached[2]
    extras = blender_mmd.stored_extras(arm_ob, []) or {}
    morphs = [convert.morph_from_dict(d) for d in extras.get("morphs", [])]
    _PARSED[arm_ob.name_full] = (raw, extras, morphs)
    return extras, morphs


class Model:
    """The stored morphs of an armature imported from PMX and where each morph's slider lives."""

    def __init__(self, arm_ob) -> None:
        self.arm_ob = arm_ob
        self.extras, self.morphs = _parsed(arm_ob)
        self.sliders = {int(k): v for k, v in (self.extras.get("morph_sliders") or {}).items()}
        self.keys = {int(k): v for k, v in (self.extras.get("shape_keys") or {}).items()}
        self.meshes = [ob for ob in skinned_meshes(arm_ob) if ob.data.shape_keys is not None
                       or ob.data.attributes.get("pmx_uv") is not None]

    def key_blocks(self, k: int) -> list:
        name = self.keys.get(k)
        return [ob.data.shape_keys.key_blocks[name] for ob in self.meshes
                if name is not None and ob.data.shape_keys is not None and name in ob.data.shape_keys.key_blocks]

    def own_weights(self, state: dict) -> np.ndarray:
        """The slider of each morph: the property, or the shape key's value less what `apply` added to it."""
        out = np.zeros(len(self.morphs))
        added = state.get("keys", {})
        for k, m in enumerate(self.morphs):
            if m.kind == pmx.MORPH_VERTEX:
                blocks = self.key_blocks(k)
                if blocks:
                    out[k] = blocks[0].value - added.get(str(k), 0.0)
            elif k in self.sliders:
                out[k] = float(self.arm_ob.get(self.sliders[k], 0.0))
        return out


def has_morphs(arm_ob) -> bool:
    # `in`, not `get`: the handlers ask this of every object on every update, and `get` copies the stored text
    return arm_ob is not None and arm_ob.type == "ARMATURE" and blender_mmd.PROP in arm_ob


# ------------------------------------------------------------------------------------------------------------
# evaluation

def morph_state(arm_ob) -> dict:
    try:
        out = json.loads(arm_ob.get(STATE_PROP, "{}"))
    except (TypeError, ValueError):
        return {}
    return out if isinstance(out, dict) else {}


def undo(arm_ob) -> None:
    """Take away what the last `apply` added (the pose offsets, shape key additions, colours, UV offsets)."""
    if not has_morphs(arm_ob) or STATE_PROP not in arm_ob:
        return
    model = Model(arm_ob)
    _undo(model, morph_state(arm_ob))
    del arm_ob[STATE_PROP]


def _undo(model: Model, state: dict) -> None:
    pose = model.arm_ob.pose
    for bone, (m, before) in state.get("bones", {}).items():
        pb = pose.bones.get(bone)
        if pb is None:
            continue
        now = np.asarray(pb.matrix_basis, np.float64)
        if np.allclose(now, np.asarray(before) @ m, atol=1e-6):  # untouched since: the exact pose comes back
            pb.matrix_basis = Matrix(before)
        else:
            pb.matrix_basis = Matrix((now @ np.linalg.inv(np.asarray(m))).tolist())
    for k, add in state.get("keys", {}).items():
        for kb in model.key_blocks(int(k)):
            kb.value -= add
    for name, (base, shown, *more) in state.get("materials", {}).items():
        mat = bpy.data.materials.get(name)
        bsdf = _bsdf(mat)
        if bsdf is not None and np.allclose(_colour(bsdf), shown, atol=1e-6):
            _set_colour(bsdf, base)
        for key, (was, now) in (more[0] if more else {}).items():  # untouched since: its own value comes back
            get, put = _SHOWN[key]
            if mat is not None and get(mat) is not None and np.allclose(get(mat), now, atol=1e-6):
                put(mat, was)
    for ob in model.meshes:
        me = ob.data
        shown = me.attributes.get(UV_SHOWN_ATTR)
        if shown is not None and me.uv_layers.active is not None:
            offset = np.empty(len(me.loops) * 2, np.float32)
            shown.data.foreach_get("vector", offset)
            uv = np.empty(len(me.loops) * 2, np.float32)
            me.uv_layers.active.data.foreach_get("uv", uv)
            me.uv_layers.active.data.foreach_set("uv", uv - offset)
            me.attributes.remove(me.attributes[UV_SHOWN_ATTR])


def apply(arm_ob, force: bool = False) -> bool:
    """Show every slider's effect (see the module docstring); returns whether anything was redone. Without
    `force`, nothing happens while the sliders hold the values the last call showed."""
    if not has_morphs(arm_ob):
        return False
    model = Model(arm_ob)
    state = morph_state(arm_ob)
    own = model.own_weights(state)
    if not force and (state.get("own") or [0.0] * len(own)) == own.tolist():
        return False
    _undo(model, state)
    if STATE_PROP in arm_ob:
        del arm_ob[STATE_PROP]
    if not own.any():  # at rest nothing is recorded, so that an untouched model stays untouched
        return True
    weights = mmd_morphs.effective_weights(model.morphs, own)
    new = {"own": own.tolist(), "keys": _apply_keys(model, own, weights), "bones": _apply_bones(model, weights),
           "materials": _apply_materials(model, weights)}
    _apply_uvs(model, weights)
    arm_ob[STATE_PROP] = json.dumps(new)
    return True


def _apply_keys(model: Model, own: np.ndarray, weights: np.ndarray) -> dict[str, float]:
    out = {}
    for k, m in enumerate(model.morphs):
        add = float(weights[k] - own[k])
        if m.kind == pmx.MORPH_VERTEX and add != 0:
            for kb in model.key_blocks(k):
                kb.value += add
            out[str(k)] = add
    return out


def _apply_bones(model: Model, weights: np.ndarray) -> dict[str, list]:
    arm_ob = model.arm_ob
    names = bone_names(arm_ob)
    file_names = [d.get("pmx", {}).get("name") for d in _bone_records(arm_ob)]
    offsets = mmd_morphs.bone_offsets(model.morphs, weights, len(file_names))
    metres_per_unit = model_metres_per_unit(arm_ob)
    out = {}
    for b, (t, q) in offsets.items():
        bone = names.get(file_names[b] or "")
        pb = arm_ob.pose.bones.get(bone) if bone else None
        if pb is None:
            continue
        loc, quat = bone_key_map(arm_ob, bone, metres_per_unit).from_mmd(t, q)
        m = trs_to_matrix(loc, quat, np.ones(3))
        before = np.asarray(pb.matrix_basis, np.float64)
        pb.matrix_basis = Matrix((before @ m).tolist())
        out[bone] = [m.tolist(), before.tolist()]
    return out


def _bone_records(arm_ob) -> list[dict]:
    """Per file bone index, the bone's stored `skinbridge` extras (empty where no bone has that index)."""
    records: dict[int, dict] = {}
    for bone in arm_ob.data.bones:
        extras = barm.bone_extras(bone)
        raw = extras.get("pmx")
        if isinstance(raw, dict) and isinstance(raw.get("index"), int):
            records[raw["index"]] = extras
    return [records.get(i, {}) for i in range(max(records) + 1)] if records else []


def _bsdf(mat):
    if mat is None or mat.node_tree is None:
        return None
    return next((n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED"), None)


def _colour(bsdf) -> list[float]:
    return [*bsdf.inputs["Base Color"].default_value[:3], bsdf.inputs["Alpha"].default_value]


def _set_colour(bsdf, rgba) -> None:
    bsdf.inputs["Base Color"].default_value = (*rgba[:3], 1.0)
    bsdf.inputs["Alpha"].default_value = rgba[3]


def _shader_colour(mat) -> list[float] | None:
    """The MMD Shader node's diffuse colour and alpha (the node setup EEVEE and Cycles draw), or None."""
    node = mat.node_tree.nodes.get(blender_mmd_material.SHADER_NODE) if mat and mat.node_tree else None
    if node is None or "Diffuse Color" not in node.inputs or "Alpha" not in node.inputs:
        return None
    return [*node.inputs["Diffuse Color"].default_value[:3], node.inputs["Alpha"].default_value]


def _set_shader_colour(mat, rgba) -> None:
    node = mat.node_tree.nodes[blender_mmd_material.SHADER_NODE]
    node.inputs["Diffuse Color"].default_value = (*rgba[:3], 1.0)
    node.inputs["Alpha"].default_value = rgba[3]


# what a material morph colours besides the Principled BSDF (export reads the BSDF): the MMD Shader and the
# Solid view's colour, each from its own value (an edit made on one of them stays its own)
_SHOWN = {"shader": (_shader_colour, _set_shader_colour),
          "solid": (lambda mat: list(mat.diffuse_color) if mat is not None else None,
                    lambda mat, rgba: setattr(mat, "diffuse_color", rgba))}


def _apply_materials(model: Model, weights: np.ndarray) -> dict[str, list]:
    if not any(m.kind == pmx.MORPH_MATERIAL and w for m, w in zip(model.morphs, weights)) or not model.meshes:
        return {}
    mats = list(model.meshes[0].data.materials)
    records = []
    for mat in mats:
        bsdf = _bsdf(mat)
        rec = convert.material_from_dict(json.loads(mat[blender_mmd.PROP])) if mat and mat.get(
            blender_mmd.PROP) else pmx.PmxMaterial()
        if bsdf is not None:  # the colour the user sees now is the base the morphs change
            rec.diffuse = np.asarray(_colour(bsdf), np.float32)
        records.append(rec)
    values = mmd_morphs.material_values(records, model.morphs, weights)
    shown_on = {}
    for key, (get, _) in _SHOWN.items():
        bases = [get(mat) for mat in mats]
        recs = [pmx.PmxMaterial(diffuse=np.asarray(b if b is not None else r.diffuse, np.float32))
                for b, r in zip(bases, records)]
        shown_on[key] = (bases, mmd_morphs.material_values(recs, model.morphs, weights))
    out = {}
    for k, (mat, rec, v) in enumerate(zip(mats, records, values)):
        bsdf = _bsdf(mat)
        shown = [float(x) for x in v["diffuse"]]
        if bsdf is None or np.allclose(shown, rec.diffuse, atol=0):
            continue
        _set_colour(bsdf, shown)
        others = {}
        for key, (get, put) in _SHOWN.items():
            bases, their = shown_on[key]
            if bases[k] is not None:
                put(mat, [float(x) for x in their[k]["diffuse"]])
                others[key] = [[float(x) for x in bases[k]], [float(x) for x in get(mat)]]
        out[mat.name] = [[float(x) for x in rec.diffuse], _colour(bsdf), others]
    return out


def _apply_uvs(model: Model, weights: np.ndarray) -> None:
    for ob in model.meshes:
        me = ob.data
        n = len(me.vertices)
        offsets = mmd_morphs.uv_offsets(model.morphs, weights, n)
        if pmx.MORPH_UV in offsets and me.uv_layers.active is not None:
            corner = np.empty(len(me.loops), np.int64)
            me.loops.foreach_get("vertex_index", corner)
            shift = offsets[pmx.MORPH_UV][corner, :2] * (1.0, -1.0)  # the file's v runs down (v' = 1 − v)
            shift = shift.astype(np.float32).reshape(-1)
            uv = np.empty(len(me.loops) * 2, np.float32)
            me.uv_layers.active.data.foreach_get("uv", uv)
            me.uv_layers.active.data.foreach_set("uv", uv + shift)
            attr = me.attributes.new(UV_SHOWN_ATTR, "FLOAT2", "CORNER")
            attr.data.foreach_set("vector", shift)
        for j in range(1, 5):
            raw = me.attributes.get(f"pmx_add_uv{j}")
            kind = pmx.MORPH_UV + j
            name = ADD_UV_ATTR.format(j)
            if raw is None or (kind not in offsets and name not in me.attributes):
                continue
            values = np.empty(n * 4, np.float32)
            raw.data.foreach_get("value", values)
            if kind in offsets:
                values = (values.reshape(n, 4) + offsets[kind]).astype(np.float32).reshape(-1)
            attr = me.attributes.get(name) or me.attributes.new(name, "QUATERNION", "POINT")
            attr.data.foreach_set("value", values)


@contextlib.contextmanager
def at_rest(arm_ob):
    """Within the block the model shows no morph (every effect of `apply` taken away, the handlers paused, so
    frames set inside show none either); afterwards it shows them again. Export reads the model inside it."""
    if not has_morphs(arm_ob):
        yield
        return
    _paused.add(arm_ob.name)  # the export's depsgraph updates and frame changes must not show the morphs
    undo(arm_ob)
    try:
        yield
    finally:
        _paused.discard(arm_ob.name)
        apply(arm_ob, force=True)


# ------------------------------------------------------------------------------------------------------------
# editing a bone or material morph

def store_pose(arm_ob, morph_name: str) -> int:
    """The bone morph `morph_name` becomes what it shows plus the armature's own pose: each bone it lists, and
    each other bone posed away from rest, gets (its pose) · (this morph at its slider's weight) as its offset at
    weight 1 (a value within 1e-6 of the stored one keeps the file's bits); those bones go back to rest and the
    slider to 1, so the model looks as before. Returns the number of offsets; ValueError for an unknown name."""
    model = Model(arm_ob)
    k = next((i for i, m in enumerate(model.morphs) if m.name == morph_name and m.kind == pmx.MORPH_BONE), None)
    if k is None:
        raise ValueError(f"{arm_ob.name} has no bone morph named {morph_name!r}")
    weight = float(model.own_weights(morph_state(arm_ob))[k])
    undo(arm_ob)
    index = {r["pmx"]["index"]: bone for bone in arm_ob.data.bones
             if isinstance((r := barm.bone_extras(bone)).get("pmx"), dict) and "index" in r["pmx"]}
    old = model.morphs[k].offsets
    listed = [int(b) for b in old["bone"]]
    posed = [i for i, bone in index.items() if i not in listed and _is_posed(arm_ob.pose.bones[bone.name])]
    rows = pmx.empty_records(pmx.MORPH_OFFSETS[pmx.MORPH_BONE], len(listed) + len(posed))
    metres_per_unit = model_metres_per_unit(arm_ob)
    shown = mmd_morphs.bone_offsets([model.morphs[k]], [weight], max(index, default=-1) + 1)
    for r, b in enumerate(listed + posed):
        rows[r] = old[r] if r < len(old) else rows[r]
        rows["bone"][r] = b
        bone = index.get(b)
        if bone is None:
            continue
        pb = arm_ob.pose.bones[bone.name]
        bmap = bone_key_map(arm_ob, bone.name, metres_per_unit)
        basis = np.asarray(pb.matrix_basis, np.float64)
        if b in shown:
            basis = basis @ trs_to_matrix(*bmap.from_mmd(*shown[b]), np.ones(3))
        t, q = bmap.to_mmd(basis[:3, 3], _rotation_of(basis))
        if r < len(old):  # each value the user left keeps the file's bits (docs/mmd.md §4.8)
            if float(np.dot(old["rotation"][r], q)) < 0:  # the same turn, with the sign the file has
                q = -q
            t, q = keep_bits(old["translation"][r], t), keep_bits(old["rotation"][r], q)
        else:
            if q[3] < 0:  # the same turn, written with w ≥ 0 as MMD's tools write it
                q = -q
            t, q = _clean(t), _clean(q)
        rows["translation"][r], rows["rotation"][r] = t, q
        pb.matrix_basis = Matrix()
    model.morphs[k].offsets = rows
    extras = dict(model.extras)
    extras["morphs"] = list(extras["morphs"])
    extras["morphs"][k] = convert.morph_to_dict(model.morphs[k])
    arm_ob[blender_mmd.PROP] = json.dumps(extras, ensure_ascii=False)
    if k in model.sliders:
        arm_ob[model.sliders[k]] = 1.0
    apply(arm_ob, force=True)
    return len(rows)


KEPT = 1e-6  # a value within this (plus 1e-6 of its size) of the stored one was not edited: its bits are kept


def keep_bits(stored: np.ndarray, new: np.ndarray) -> np.ndarray:
    """`new` as float32 with every value within `KEPT` of `stored` taken from `stored`, bit for bit (the
    round trip through Blender's float32 pose gives −0.62499982 for −0.625 and 2e-16 or −0.0 for 0)."""
    stored = np.asarray(stored, np.float32)
    out = np.asarray(new, np.float64)
    near = np.abs(out - stored) <= KEPT * (1 + np.abs(stored.astype(np.float64)))
    return np.where(near, stored, _clean(out))


def _clean(values) -> np.ndarray:
    """float32 values with the noise of a matrix round trip (below 1e-9) written as +0.0."""
    v = np.asarray(values, np.float64)
    return np.where(np.abs(v) < 1e-9, 0.0, v).astype(np.float32)


def _rotation_of(m: np.ndarray) -> np.ndarray:
    """The rotation (w, x, y, z) of a pose basis, its scale divided out."""
    r = np.asarray(m, np.float64)[:3, :3]
    return matrix3_to_quat(r / np.linalg.norm(r, axis=0, keepdims=True))


POSED_DISTANCE = 1e-5  # metres (1/8 mm in MMD units): import leaves rest bases a few µm and 1e-5 rad off
POSED_TURN = 1e-4  # quaternion x, y, z: 0.01°


def _is_posed(pb) -> bool:
    """Moved or turned away from rest by more than the float error import leaves on some bones."""
    m = np.asarray(pb.matrix_basis, np.float64)
    return bool(np.abs(m[:3, 3]).max() > POSED_DISTANCE or np.abs(_rotation_of(m)[1:]).max() > POSED_TURN)


def store_colour(arm_ob, morph_name: str) -> int:
    """The material morph `morph_name` takes the colours the user set while it shows: for each material it
    names (not −1, "all") whose Base Color or Alpha was changed since the sliders were shown, the diffuse
    offset becomes what gives that colour at the slider's weight (multiply: 1 + (wanted / base − 1) / weight
    per channel, a base of 0 keeping its value; add: (wanted − base) / weight). Returns how many offsets
    changed; ValueError for an unknown name or a slider at 0."""
    model = Model(arm_ob)
    k = next((i for i, m in enumerate(model.morphs) if m.name == morph_name and m.kind == pmx.MORPH_MATERIAL),
             None)
    if k is None:
        raise ValueError(f"{arm_ob.name} has no material morph named {morph_name!r}")
    state = morph_state(arm_ob)
    weight = float(model.own_weights(state)[k])
    if weight == 0:
        raise ValueError(f"{morph_name}: set its slider above 0 and change the colours it shows first")
    mats = list(model.meshes[0].data.materials) if model.meshes else []
    seen = state.get("materials", {})
    rows = model.morphs[k].offsets.copy()
    changed = 0
    for r, t in enumerate(rows["material"].tolist()):
        bsdf = _bsdf(mats[t]) if 0 <= t < len(mats) else None
        if bsdf is None or mats[t].name not in seen:
            continue
        base, shown = (np.asarray(x, np.float64) for x in seen[mats[t].name][:2])
        wanted = np.asarray(_colour(bsdf), np.float64)
        if np.allclose(wanted, shown, atol=1e-6):
            continue
        if int(rows["operation"][r]) == 0:
            safe = np.where(base != 0, base, 1.0)
            rows["diffuse"][r] = np.where(base != 0, 1 + (wanted / safe - 1) / weight, rows["diffuse"][r])
        else:
            rows["diffuse"][r] = (wanted - base) / weight
        _set_colour(bsdf, shown.tolist())  # so that the next `apply` finds its own colour and starts from base
        changed += 1
    model.morphs[k].offsets = rows
    extras = dict(model.extras)
    extras["morphs"] = list(extras["morphs"])
    extras["morphs"][k] = convert.morph_to_dict(model.morphs[k])
    arm_ob[blender_mmd.PROP] = json.dumps(extras, ensure_ascii=False)
    apply(arm_ob, force=True)
    return changed


class MorphEdit:
    """Mixin of an operator that changes one stored morph of the active MMD model (`morph`, by name):
    `edit(arm_ob)` does it and returns the message to report; a ValueError it raises is the operator's error."""

    bl_options = {"REGISTER", "UNDO"}
    morph: bpy.props.StringProperty(name="Morph")

    @classmethod
    def poll(cls, context):
        return has_morphs(active_armature(context))

    def execute(self, context):
        try:
            done = self.edit(active_armature(context))
        except ValueError as e:
            self.report({"ERROR"}, translate(str(e)))
            return {"CANCELLED"}
        self.report({"INFO"}, done)
        return {"FINISHED"}


class SKINBRIDGE_OT_mmd_material_morph_from_colour(MorphEdit, bpy.types.Operator):
    """Make this material morph give the colours you set while it shows (Base Color and Alpha)"""

    bl_idname = "skinbridge.mmd_material_morph_from_colour"
    bl_label = "Material Morph from Colour"

    def edit(self, arm_ob) -> str:
        n = store_colour(arm_ob, self.morph)
        return translate(f"{self.morph}: {n} material offset(s) changed")


class SKINBRIDGE_OT_mmd_bone_morph_from_pose(MorphEdit, bpy.types.Operator):
    """Make this bone morph the current pose: the posed bones' offsets at weight 1, the bones back at rest and
    the slider at 1"""

    bl_idname = "skinbridge.mmd_bone_morph_from_pose"
    bl_label = "Bone Morph from Pose"

    def edit(self, arm_ob) -> str:
        n = store_pose(arm_ob, self.morph)
        return translate(f"{self.morph}: {n} bone offset(s)")


# ------------------------------------------------------------------------------------------------------------
# handlers: sliders dragged or keyed show at once

_paused: set[str] = set()  # armatures inside `at_rest`


def _armatures() -> list:
    return [ob for ob in bpy.data.objects if has_morphs(ob) and ob.name not in _paused]


@bpy.app.handlers.persistent
@quiet_stop
def _on_update(scene, depsgraph=None) -> None:
    for ob in _armatures():
        apply(ob)


@bpy.app.handlers.persistent
@quiet_stop
def _before_frame(scene, depsgraph=None) -> None:
    for ob in _armatures():  # so that keyed channels are not offset twice: the keys set them afresh
        undo(ob)


_HANDLERS = ((bpy.app.handlers.depsgraph_update_post, _on_update),
             (bpy.app.handlers.frame_change_pre, _before_frame),
             (bpy.app.handlers.frame_change_post, _on_update))


# ------------------------------------------------------------------------------------------------------------
# the panel

class VIEW3D_PT_skinbridge_mmd_morphs(SidebarPanel, bpy.types.Panel):
    """Every morph of the active MMD model as a slider, by MMD's morph panels."""

    bl_label = "MMD Morphs"

    @classmethod
    def poll(cls, context):
        return has_morphs(active_armature(context))

    def draw(self, context):
        arm_ob = active_armature(context)
        model = Model(arm_ob)
        by_panel: dict[int, list[int]] = {}
        for k, m in enumerate(model.morphs):
            by_panel.setdefault(int(m.panel), []).append(k)
        for panel in sorted(by_panel):
            col = self.layout.column(align=True)
            col.label(text=PANELS[panel] if 0 <= panel < len(PANELS) else str(panel))
            for k in by_panel[panel]:
                m = model.morphs[k]
                if m.kind == pmx.MORPH_VERTEX:
                    for kb in model.key_blocks(k)[:1]:
                        col.prop(kb, "value", text=m.name, slider=True)
                elif k in model.sliders:
                    row = col.row(align=True)
                    row.prop(arm_ob, f'["{escape(model.sliders[k])}"]', text=m.name, slider=True)
                    if m.kind == pmx.MORPH_BONE:
                        row.operator(SKINBRIDGE_OT_mmd_bone_morph_from_pose.bl_idname, text="",
                                     icon="POSE_HLT").morph = m.name
                    elif m.kind == pmx.MORPH_MATERIAL:
                        row.operator(SKINBRIDGE_OT_mmd_material_morph_from_colour.bl_idname, text="",
                                     icon="MATERIAL").morph = m.name
                    elif m.kind in mmd_morphs.UV_KINDS:
                        row.operator(EDIT_OPERATORS["uv"], text="", icon="UV").morph = m.name
                        row.operator(EDIT_OPERATORS["offset"], text="", icon="VERTEXSEL").morph = m.name
                    elif m.kind in (pmx.MORPH_GROUP, pmx.MORPH_FLIP):
                        row.operator(EDIT_OPERATORS["member"], text="", icon="PRESET").morph = m.name


# the editing operators of blender_morph_edit (which imports this module), by idname
EDIT_OPERATORS = {"uv": "skinbridge.mmd_uv_morph_from_uvs", "offset": "skinbridge.mmd_uv_morph_offset",
                  "member": "skinbridge.mmd_morph_member_ratio"}


def active_armature(context):
    ob = context.active_object
    if ob is not None and ob.type != "ARMATURE":
        ob = ob.find_armature() or ob.parent
    return ob if ob is not None and ob.type == "ARMATURE" else None


CLASSES = (SKINBRIDGE_OT_mmd_bone_morph_from_pose, SKINBRIDGE_OT_mmd_material_morph_from_colour,
           VIEW3D_PT_skinbridge_mmd_morphs)


def register_handlers() -> None:
    app_handlers.add(_HANDLERS)


def unregister_handlers() -> None:
    app_handlers.remove(_HANDLERS)
