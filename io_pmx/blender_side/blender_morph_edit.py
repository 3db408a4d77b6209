"""Editing UV, additional-UV, group and flip morphs in Blender (docs/mmd.md §4.7, "Editing a morph").

A UV morph is edited as it shows: with its slider above 0 the user moves UVs of the active UV map (or, for an
additional-UV morph, changes `pmx_morph_add_uv1..4`, the set the slider shows) and `store_uvs` makes the morph
give what is shown at that weight. `set_uv_offset` sets the offset of chosen vertices directly (the panel's
button: the vertices selected in Edit Mode). Group and flip morphs keep their members; `set_member_ratio`
changes one member's factor. Each writes the morph back into the stored PMX data (what export writes) and shows
the sliders again; every other morph and record stays as it was, so the exported file differs in that morph.
"""
from __future__ import annotations

import json

import bpy
import numpy as np

from ...blender.translations import translate
from ..model import convert, morphs as mmd_morphs
from ..model import pmx
from . import blender_mmd
from .blender_morphs import (ADD_UV_ATTR, Model, MorphEdit, UV_SHOWN_ATTR, active_armature, morph_state, apply,
                             has_morphs)

CHANGED = 1e-6  # a UV value further than this from what the sliders show was edited by the user


def _find(model: Model, morph_name: str, kinds: tuple[int, ...], what: str) -> int:
    k = next((i for i, m in enumerate(model.morphs) if m.name == morph_name and m.kind in kinds), None)
    if k is None:
        raise ValueError(f"{model.arm_ob.name} has no {what} morph named {morph_name!r}")
    return k


def _save(model: Model, k: int, rows: np.ndarray) -> None:
    """Morph `k` takes `rows` in the stored PMX data; the sliders show it at once."""
    model.morphs[k].offsets = rows
    extras = dict(model.extras)
    extras["morphs"] = list(extras["morphs"])
    extras["morphs"][k] = convert.morph_to_dict(model.morphs[k])
    model.arm_ob[blender_mmd.PROP] = json.dumps(extras, ensure_ascii=False)
    apply(model.arm_ob, force=True)


def _with_rows(old: np.ndarray, vertices: np.ndarray, values: np.ndarray) -> np.ndarray:
    """`old` UV offset rows with the offset of each of `vertices` (distinct) set to its row of `values` (n, 4):
    the first row naming the vertex changes (to the value less any later rows of that vertex, since MMD adds
    them), a vertex without a row gets one appended; other rows keep their bytes."""
    named = old["vertex"].astype(np.int64)
    known, first = np.unique(named, return_index=True)  # each vertex's first row
    later_rows = np.ones(len(old), bool)
    later_rows[first] = False
    later = np.zeros((len(known), 4))  # the later rows' sum per vertex, added in row order
    np.add.at(later, np.searchsorted(known, named[later_rows]), old["offset"][later_rows].astype(np.float64))
    vertices = np.asarray(vertices, np.int64)
    at = np.minimum(np.searchsorted(known, vertices), max(len(known) - 1, 0))
    listed = (known[at] == vertices) if len(known) else np.zeros(len(vertices), bool)
    extra = vertices[~listed]
    rows = pmx.empty_records(pmx.MORPH_OFFSETS[pmx.MORPH_UV], len(old) + len(extra))
    rows[:len(old)] = old
    rows["vertex"][len(old):] = extra
    target = np.empty(len(vertices), np.int64)
    target[listed] = first[at[listed]]
    target[~listed] = len(old) + np.arange(len(extra))
    values = np.array(values, np.float64)  # a copy: the caller's stays as given
    values[listed] -= later[at[listed]]
    rows["offset"][target] = values
    return rows


def _offset_rows(old: np.ndarray, n: int) -> np.ndarray:
    """The morph's offset per vertex (n, 4), from its rows (several rows of one vertex add up, as MMD adds)."""
    out = np.zeros((n, 4))
    idx = old["vertex"].astype(np.int64)
    ok = (idx >= 0) & (idx < n)
    np.add.at(out, idx[ok], old["offset"][ok].astype(np.float64))
    return out


def _mesh(model: Model):
    ob = next((ob for ob in model.meshes if ob.data.attributes.get("pmx_uv") is not None), None)
    if ob is None:
        raise ValueError(f"{model.arm_ob.name} has no mesh imported from PMX")
    return ob.data


def _uv_changes(me, shown: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(vertices, offsets in the file's UV axes (k, 2)) where the active UV map differs from the file's UVs plus
    `shown` (n, 4), the offsets the sliders show; a vertex's changed corners are averaged."""
    corner = np.empty(len(me.loops), np.int64)
    me.loops.foreach_get("vertex_index", corner)
    uv = np.empty(len(me.loops) * 2, np.float32)
    me.uv_layers.active.data.foreach_get("uv", uv)
    base = np.empty(len(me.vertices) * 2, np.float32)
    me.attributes["pmx_uv"].data.foreach_get("vector", base)
    base = base.reshape(-1, 2).astype(np.float64)
    base = np.stack([base[:, 0], 1.0 - base[:, 1]], axis=1)  # the file's v runs down
    delta = uv.reshape(-1, 2) - (base + shown[:, :2] * (1.0, -1.0))[corner]
    edited = np.abs(delta).max(axis=1) > CHANGED
    total = np.zeros((len(me.vertices), 2))
    count = np.zeros(len(me.vertices))
    np.add.at(total, corner[edited], delta[edited])
    np.add.at(count, corner[edited], 1)
    vertices = np.flatnonzero(count)
    # back to what the sliders showed, so that the next `apply` takes its own offset away and finds the base
    restored = uv.reshape(-1, 2).copy()
    restored[edited] = base[corner[edited]] + _shown_corners(me)[edited]
    me.uv_layers.active.data.foreach_set("uv", restored.astype(np.float32).reshape(-1))
    return vertices, (total[vertices] / count[vertices, None]) * (1.0, -1.0)


def _shown_corners(me) -> np.ndarray:
    attr = me.attributes.get(UV_SHOWN_ATTR)
    out = np.zeros(len(me.loops) * 2, np.float32)
    if attr is not None:
        attr.data.foreach_get("vector", out)
    return out.reshape(-1, 2).astype(np.float64)


def _add_uv_changes(me, kind: int, shown: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(vertices, changes (k, 4)) where `pmx_morph_add_uv<j>` differs from the file's set plus `shown`."""
    j = kind - pmx.MORPH_UV
    raw, now = me.attributes.get(f"pmx_add_uv{j}"), me.attributes.get(ADD_UV_ATTR.format(j))
    if raw is None or now is None:
        raise ValueError(f"the mesh has no additional UV set {j} to edit")
    n = len(me.vertices)
    values = np.empty((2, n * 4), np.float32)
    raw.data.foreach_get("value", values[0])
    now.data.foreach_get("value", values[1])
    delta = values[1].reshape(n, 4).astype(np.float64) - (values[0].reshape(n, 4) + shown)
    vertices = np.flatnonzero(np.abs(delta).max(axis=1) > CHANGED)
    return vertices, delta[vertices]


def store_uvs(arm_ob, morph_name: str) -> int:
    """The UV or additional-UV morph `morph_name` gives, at the weight it shows, the UVs the user set (the
    active UV map's, or `pmx_morph_add_uv<j>`'s): each vertex whose value differs from what the sliders show
    gets its offset changed by (value − shown) / weight (a new row where the morph had none). Returns the number
    of vertices changed; ValueError for an unknown name or a weight of 0."""
    model = Model(arm_ob)
    k = _find(model, morph_name, mmd_morphs.UV_KINDS, "UV")
    own = model.own_weights(morph_state(arm_ob))
    weights = mmd_morphs.effective_weights(model.morphs, own)
    weight = float(weights[k])
    if weight == 0:
        raise ValueError(f"{morph_name}: set its slider above 0 and change the UVs it shows first")
    me = _mesh(model)
    n = len(me.vertices)
    kind = model.morphs[k].kind
    if kind == pmx.MORPH_UV:  # sliders moved since the last update: show them (UV edits in between are kept)
        apply(arm_ob)
    shown = mmd_morphs.uv_offsets(model.morphs, weights, n).get(kind, np.zeros((n, 4)))
    if kind == pmx.MORPH_UV:
        if me.uv_layers.active is None:
            raise ValueError(f"{morph_name}: the mesh has no UV map")
        vertices, change = _uv_changes(me, shown)
        change = np.concatenate([change, np.zeros((len(vertices), 2))], axis=1)  # z, w: unused by MMD's UV
    else:
        vertices, change = _add_uv_changes(me, kind, shown)
    old = model.morphs[k].offsets
    values = _offset_rows(old, n)[vertices] + change / weight
    _save(model, k, _with_rows(old, vertices, values))
    return len(vertices)


def set_uv_offset(arm_ob, morph_name: str, vertices, offset) -> int:
    """The UV or additional-UV morph `morph_name` moves each of `vertices` by `offset` (u, v, z, w in the file's
    axes: v runs down) at weight 1. Returns the number of vertices."""
    model = Model(arm_ob)
    k = _find(model, morph_name, mmd_morphs.UV_KINDS, "UV")
    vertices = np.unique(np.asarray(vertices, np.int64))
    if not len(vertices):
        raise ValueError(f"{morph_name}: select the vertices to move in Edit Mode first")
    values = np.broadcast_to(np.asarray(offset, np.float64), (len(vertices), 4))
    _save(model, k, _with_rows(model.morphs[k].offsets, vertices, values))
    return len(vertices)


def set_member_ratio(arm_ob, morph_name: str, member: int, ratio: float) -> None:
    """Member `member` (its row) of the group or flip morph `morph_name` takes the factor `ratio`."""
    model = Model(arm_ob)
    k = _find(model, morph_name, (pmx.MORPH_GROUP, pmx.MORPH_FLIP), "group or flip")
    rows = model.morphs[k].offsets.copy()
    if not 0 <= member < len(rows):
        raise ValueError(f"{morph_name} has no member {member}")
    rows["ratio"][member] = ratio
    _save(model, k, rows)


def members(arm_ob, morph_name: str) -> list[tuple[str, float]]:
    """(member morph name, ratio) per row of the group or flip morph `morph_name`."""
    model = Model(arm_ob)
    k = _find(model, morph_name, (pmx.MORPH_GROUP, pmx.MORPH_FLIP), "group or flip")
    o = model.morphs[k].offsets
    names = [m.name for m in model.morphs]
    return [(names[t] if 0 <= t < len(names) else str(t), float(r)) for t, r in zip(o["morph"].tolist(),
                                                                                   o["ratio"].tolist())]


def _selected_vertices(arm_ob) -> np.ndarray:
    """The vertices selected in the PMX mesh (its Edit Mode selection flushed first)."""
    model = Model(arm_ob)
    me = _mesh(model)
    ob = next(ob for ob in model.meshes if ob.data == me)
    if ob.mode == "EDIT":
        ob.update_from_editmode()
    selected = np.zeros(len(me.vertices), bool)
    me.vertices.foreach_get("select", selected)
    return np.flatnonzero(selected)


class SKINBRIDGE_OT_mmd_uv_morph_from_uvs(MorphEdit, bpy.types.Operator):
    """Make this UV morph give the UVs you set while it shows (the active UV map; for an additional-UV morph,
    the pmx_morph_add_uv attribute)"""

    bl_idname = "skinbridge.mmd_uv_morph_from_uvs"
    bl_label = "UV Morph from UVs"

    def edit(self, arm_ob) -> str:
        n = store_uvs(arm_ob, self.morph)
        return translate(f"{self.morph}: {n} vertex offset(s) changed")


class SKINBRIDGE_OT_mmd_uv_morph_offset(MorphEdit, bpy.types.Operator):
    """Set this UV morph's offset of the vertices selected in Edit Mode"""

    bl_idname = "skinbridge.mmd_uv_morph_offset"
    bl_label = "Set UV Morph Offset"
    offset: bpy.props.FloatVectorProperty(name="Offset", size=4, default=(0.0, 0.0, 0.0, 0.0),
                                          description="What the morph at 1.0 adds to each selected vertex's "
                                                      "UV (u, v, z, w; v runs down as in the PMX file)")

    def invoke(self, context, event):
        return context.window_manager.invoke_props_dialog(self)

    def edit(self, arm_ob) -> str:
        n = set_uv_offset(arm_ob, self.morph, _selected_vertices(arm_ob), tuple(self.offset))
        return translate(f"{self.morph}: offset of {n} vertices set")


_MEMBER_ITEMS: list[tuple[str, str, str]] = []  # Blender keeps no reference to dynamic enum items' strings


def _member_items(self, context) -> list[tuple[str, str, str]]:
    arm_ob = active_armature(context)
    try:
        rows = members(arm_ob, self.morph) if has_morphs(arm_ob) else []
    except ValueError:
        rows = []
    _MEMBER_ITEMS[:] = [(str(i), name, f"{ratio:g}") for i, (name, ratio) in enumerate(rows)]
    return _MEMBER_ITEMS


def _member_chosen(self, context) -> None:
    """The dialog's factor starts at the chosen member's stored one."""
    rows = members(active_armature(context), self.morph)
    if self.member.isdigit() and int(self.member) < len(rows):
        self.ratio = rows[int(self.member)][1]


class SKINBRIDGE_OT_mmd_morph_member_ratio(MorphEdit, bpy.types.Operator):
    """Change the factor of one member of this group or flip morph"""

    bl_idname = "skinbridge.mmd_morph_member_ratio"
    bl_label = "Set Member Factor"
    member: bpy.props.EnumProperty(name="Member", items=_member_items, update=_member_chosen,
                                   description="The member morph whose factor changes")
    ratio: bpy.props.FloatProperty(name="Factor", default=1.0, soft_min=0.0, soft_max=1.0,
                                   description="The member's weight when this morph is at 1.0")

    def invoke(self, context, event):
        _member_chosen(self, context)
        return context.window_manager.invoke_props_dialog(self)

    def execute(self, context):
        try:
            set_member_ratio(active_armature(context), self.morph, int(self.member or 0), self.ratio)
        except ValueError as e:
            self.report({"ERROR"}, translate(str(e)))
            return {"CANCELLED"}
        return {"FINISHED"}


CLASSES = (SKINBRIDGE_OT_mmd_uv_morph_from_uvs, SKINBRIDGE_OT_mmd_uv_morph_offset,
           SKINBRIDGE_OT_mmd_morph_member_ratio)
