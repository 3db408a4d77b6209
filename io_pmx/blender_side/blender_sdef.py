"""MMD's SDEF (spherical deformation) in Blender: a vertex of deform type SDEF follows its two bones by the
rotation slerped between them about its centre C, not by the linear blend of their matrices, so an elbow or a
knee keeps its volume when bent (docs/mmd.md §4.9).

How: a small geometry-nodes modifier ("SkinBridge SDEF") after the Armature modifier adds a per-vertex offset,
the attribute `skinbridge_sdef_offset`, to what the Armature modifier made of the vertex; after every frame
change and every pose edit a handler works out that offset with numpy for the SDEF vertices alone:

    SDEF(p) = R(slerp(q0, q1, w1)) (p - C) + w0 M0 (C + r0) / 2 + w1 M1 (C + r1) / 2
    r0 = C + R0 - (w0 R0 + w1 R1),  r1 = C + R1 - (w0 R0 + w1 R1)
    offset = SDEF(p) - (w0 M0 + w1 M1) p

with M0, M1 the two bones' skinning matrices (pose times inverse rest) and q0, q1 their rotations. Blender
evaluates the mesh a second time when a handler changed data, so the frame shows the corrected positions.
The switch is the modifier's viewport and render visibility: off, the handler skips the mesh. Export reads the
mesh with the modifier switched off (`suspended`), so what is written does not depend on it.
"""
from __future__ import annotations

import contextlib

import bpy
import numpy as np

from ...blender import handlers as app_handlers
from ...blender import scene as bscene
from ...blender.selection import find_armature
from ...blender.sidebar_ui import ModelOperator, SidebarPanel
from ...core.workers import quiet_stop
from ..model import pmx
from ..model.convert import positions_to_blender
from ..model.units import METRES_PER_UNIT
from . import blender_mmd

MODIFIER = "SkinBridge SDEF"
GROUP = "SkinBridge SDEF"
OFFSET = "skinbridge_sdef_offset"

_cache: dict[int, "_Sdef"] = {}  # by the mesh object's session_uid


def sdef_count(me) -> int:
    """How many vertices of `me` have PMX deform type SDEF (0 without the import's per-vertex records)."""
    attr = me.attributes.get("pmx_deform")
    if attr is None or attr.domain != "POINT" or "pmx_sdef_c" not in me.attributes:
        return 0
    deform = np.empty(len(me.vertices), np.int8)
    attr.data.foreach_get("value", deform)
    return int((deform == pmx.SDEF).sum())


def _node_group():
    group = bpy.data.node_groups.get(GROUP)
    if group is not None and group.bl_idname == "GeometryNodeTree":
        return group
    group = bpy.data.node_groups.new(GROUP, "GeometryNodeTree")
    group.is_modifier = True
    group.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    group.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    nodes, links = group.nodes, group.links
    inp, out = nodes.new("NodeGroupInput"), nodes.new("NodeGroupOutput")
    attr = nodes.new("GeometryNodeInputNamedAttribute")
    attr.data_type = "FLOAT_VECTOR"
    attr.inputs["Name"].default_value = OFFSET
    setpos = nodes.new("GeometryNodeSetPosition")
    links.new(inp.outputs[0], setpos.inputs["Geometry"])
    links.new(attr.outputs["Attribute"], setpos.inputs["Offset"])
    links.new(setpos.outputs["Geometry"], out.inputs[0])
    return group


def build(objects, arm_ob, on: bool) -> int:
    """Give every imported mesh of `objects` with SDEF vertices the SDEF modifier after its Armature modifier,
    switched on or off. Returns how many SDEF vertices the meshes have."""
    total = 0
    for ob in objects:
        if ob.type != "MESH" or arm_ob is None:
            continue
        n = sdef_count(ob.data)
        if not n:
            continue
        total += n
        if OFFSET not in ob.data.attributes:
            ob.data.attributes.new(OFFSET, "FLOAT_VECTOR", "POINT")
        mod = ob.modifiers.get(MODIFIER) or ob.modifiers.new(MODIFIER, "NODES")
        mod.node_group = _node_group()
        mod.show_viewport = mod.show_render = on
    forget()
    return total


def modifiers(arm_ob) -> list:
    """The SDEF modifiers of the meshes `arm_ob` deforms."""
    out = []
    for ob in bpy.data.objects:
        if ob.type == "MESH" and (ob.parent == arm_ob or ob.find_armature() == arm_ob):
            mod = ob.modifiers.get(MODIFIER)
            if mod is not None and mod.type == "NODES":
                out.append(mod)
    return out


def is_on(arm_ob) -> bool:
    return any(m.show_viewport for m in modifiers(arm_ob))


def set_on(arm_ob, on: bool) -> int:
    """Switch SDEF on or off for the meshes of `arm_ob`; returns how many modifiers it switched."""
    mods = modifiers(arm_ob)
    for mod in mods:
        mod.show_viewport = mod.show_render = on
    forget()
    return len(mods)


@contextlib.contextmanager
def suspended(meshes, context):
    """The SDEF modifiers of `meshes` off while the body runs (export reads the mesh as the Armature modifier
    leaves it at rest), back as they were afterwards."""
    mods = [m for ob in meshes if (m := ob.modifiers.get(MODIFIER)) is not None and m.show_viewport]
    for mod in mods:
        mod.show_viewport = False
    if mods:
        context.view_layer.update()
    try:
        yield
    finally:
        for mod in mods:
            mod.show_viewport = True
        if mods:
            context.view_layer.update()


class _Sdef:
    """What a mesh's SDEF vertices need every frame, in the mesh's own space: their indices, bone names,
    weights, centre C and the points (C + r0) / 2, (C + r1) / 2."""

    def __init__(self, ob, arm_ob):
        me = ob.data
        n = len(me.vertices)
        self.n = n
        deform = _get(me, "pmx_deform", "value", 1, np.int8)
        self.rows = np.flatnonzero(deform == pmx.SDEF)
        bones = _get(me, "pmx_bones01", "value", 2, np.int32)[self.rows]
        w0 = _get(me, "pmx_weights", "value", 4, np.float32)[self.rows, 0].astype(np.float64)
        extras = blender_mmd.stored_extras(arm_ob, [ob])
        unit = float(extras.get("scale", METRES_PER_UNIT)) if isinstance(extras, dict) else METRES_PER_UNIT
        c, r0, r1 = (positions_to_blender(_get(me, f"pmx_{k}", "vector", 3, np.float32)[self.rows], unit)
                     for k in ("sdef_c", "sdef_r0", "sdef_r1"))
        names = bscene.barm_names(arm_ob) or [b.name for b in arm_ob.data.bones]
        used = sorted(set(int(i) for i in np.unique(bones)))
        known = [i for i in used if 0 <= i < len(names) and names[i] in arm_ob.data.bones]
        keep = np.isin(bones, known).all(axis=1)  # a vertex of a deleted bone: left to the Armature modifier
        self.rows, bones, w0, c, r0, r1 = self.rows[keep], bones[keep], w0[keep], c[keep], r0[keep], r1[keep]
        self.bone_names = [names[i] for i in known]
        slot = {i: k for k, i in enumerate(known)}
        self.b0 = np.array([slot[int(i)] for i in bones[:, 0]], np.int64)
        self.b1 = np.array([slot[int(i)] for i in bones[:, 1]], np.int64)
        self.w0, self.w1 = w0, 1.0 - w0
        rw = r0 * w0[:, None] + r1 * self.w1[:, None]
        self.c = c
        self.cr0 = (c + (c + r0 - rw)) * 0.5
        self.cr1 = (c + (c + r1 - rw)) * 0.5
        self.last: np.ndarray | None = None
        self.rest: np.ndarray | None = None
        self.full = np.zeros((n, 3), np.float32)


def _get(me, name, prop, width, dtype) -> np.ndarray:
    out = np.empty(len(me.vertices) * width, dtype)
    me.attributes[name].data.foreach_get(prop, out)
    return out.reshape(len(me.vertices), width) if width > 1 else out


def quaternions(m: np.ndarray) -> np.ndarray:
    """(k, 3, 3) rotation matrices (columns may carry a scale, divided out) → (k, 4) unit quaternions w, x, y, z,
    each from the largest of 1 + trace and the diagonal terms (Shepperd's method)."""
    r = m / np.linalg.norm(m, axis=1, keepdims=True)
    d0, d1, d2 = r[:, 0, 0], r[:, 1, 1], r[:, 2, 2]
    k = np.stack([1 + d0 + d1 + d2, 1 + d0 - d1 - d2, 1 - d0 + d1 - d2, 1 - d0 - d1 + d2], axis=1)
    pick = np.argmax(k, axis=1)
    s = 2.0 * np.sqrt(np.maximum(k[np.arange(len(r)), pick], 1e-300))
    zy, yz, xz, zx, yx, xy = (r[:, 2, 1], r[:, 1, 2], r[:, 0, 2], r[:, 2, 0], r[:, 1, 0], r[:, 0, 1])
    cases = np.stack([
        np.stack([0.25 * s, (zy - yz) / s, (xz - zx) / s, (yx - xy) / s], axis=1),
        np.stack([(zy - yz) / s, 0.25 * s, (xy + yx) / s, (xz + zx) / s], axis=1),
        np.stack([(xz - zx) / s, (xy + yx) / s, 0.25 * s, (yz + zy) / s], axis=1),
        np.stack([(yx - xy) / s, (xz + zx) / s, (yz + zy) / s, 0.25 * s], axis=1)], axis=0)
    q = cases[pick, np.arange(len(r))]
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def slerp(q0: np.ndarray, q1: np.ndarray, t: np.ndarray) -> np.ndarray:
    """(n, 4) unit quaternions (w, x, y, z) of the shortest-path slerp from q0 to q1 (n, 4) by t (n,)."""
    d = np.einsum("ij,ij->i", q0, q1)
    q1 = np.where(d[:, None] < 0, -q1, q1)
    theta = np.arccos(np.clip(np.abs(d), 0.0, 1.0))
    sin = np.sin(theta)
    near = sin < 1e-6
    safe = np.where(near, 1.0, sin)
    a = np.where(near, 1.0 - t, np.sin((1.0 - t) * theta) / safe)
    b = np.where(near, t, np.sin(t * theta) / safe)
    q = a[:, None] * q0 + b[:, None] * q1
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(n, 3) vectors `v` turned by unit quaternions `q` (n, 4: w, x, y, z)."""
    u = q[:, 1:]
    t = 2.0 * np.cross(u, v)
    return v + q[:, :1] * t + np.cross(u, t)


def offsets(data: _Sdef, skin: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """(n, 3) SDEF position minus linear blend position of the SDEF vertices at `rest` (n, 3), with `skin`
    (bones, 4, 4) the skinning matrices of `data.bone_names` in the mesh's space. The bones' translations
    cancel: SDEF - linear = R(q) (p - C) + w0 R0 ((C + r0) / 2 - p) + w1 R1 ((C + r1) / 2 - p)."""
    lin = skin[:, :3, :3]
    q = quaternions(lin)
    rot = rotate(slerp(q[data.b0], q[data.b1], data.w1), rest - data.c)
    to0 = np.einsum("nij,nj->ni", lin[data.b0], data.cr0 - rest)
    to1 = np.einsum("nij,nj->ni", lin[data.b1], data.cr1 - rest)
    return rot + data.w0[:, None] * to0 + data.w1[:, None] * to1


def _skin_matrices(ob, arm_eval, names) -> np.ndarray:
    """Skinning matrices of bones `names` in the mesh object's space, as its Armature modifier applies them."""
    to_arm = np.linalg.inv(np.array(arm_eval.matrix_world)) @ np.array(ob.matrix_world)
    pose, rest = np.empty((len(names), 4, 4)), np.empty((len(names), 4, 4))
    bones = arm_eval.pose.bones
    for k, name in enumerate(names):
        pb = bones[name]
        pose[k] = pb.matrix
        rest[k] = pb.bone.matrix_local
    return np.linalg.inv(to_arm) @ pose @ np.linalg.inv(rest) @ to_arm


def update_object(ob, depsgraph, reread: bool = False) -> bool:
    """Write the SDEF offsets of `ob` for the pose `depsgraph` holds; True when they changed. `reread`: take
    the mesh's rest positions afresh (after an edit; playback reuses them)."""
    arm_ob = ob.find_armature()
    me = ob.data
    if arm_ob is None or OFFSET not in me.attributes:
        return False
    data = _cache.get(ob.session_uid)
    if data is None or data.n != len(me.vertices):
        data = _cache[ob.session_uid] = _Sdef(ob, arm_ob)
        reread = True
    if not len(data.rows):
        return False
    if reread or data.rest is None:
        co = np.empty(data.n * 3, np.float32)
        me.vertices.foreach_get("co", co)
        data.rest = co.reshape(-1, 3)[data.rows].astype(np.float64)
    arm_eval = arm_ob.evaluated_get(depsgraph)
    if arm_eval.data.pose_position == "REST":
        values = np.zeros((len(data.rows), 3), np.float32)
    else:
        values = offsets(data, _skin_matrices(ob, arm_eval, data.bone_names), data.rest).astype(np.float32)
    if data.last is not None and np.array_equal(values, data.last):
        return False
    data.last = values
    data.full[data.rows] = values
    me.attributes[OFFSET].data.foreach_set("vector", data.full.reshape(-1))
    me.update_tag()
    return True


_objects: list | None = None  # the meshes with an SDEF modifier switched on; None: look again


def _active(scene) -> list:
    global _objects
    if _objects is None:
        _objects = [ob for ob in scene.objects if ob.type == "MESH" and
                    (mod := ob.modifiers.get(MODIFIER)) is not None and mod.show_viewport]
    return _objects


def _run(scene, depsgraph, edited: set) -> None:
    global _objects
    if depsgraph is None:
        depsgraph = bpy.context.evaluated_depsgraph_get()
    for ob in _active(scene):
        try:
            update_object(ob, depsgraph, ob.data.name in edited)
        except ReferenceError:  # removed since
            _objects = None
        except (KeyError, ValueError, IndexError):  # a mesh or rig edited out of shape: the Armature modifier only
            _cache.pop(ob.session_uid, None)


@bpy.app.handlers.persistent
@quiet_stop
def _on_update(scene, depsgraph=None) -> None:
    """After an edit (a pose, a switch, a mesh edit): the meshes looked up again, an edited one read again."""
    forget()
    edited = set()
    if depsgraph is not None:
        edited = {u.id.original.name for u in depsgraph.updates
                  if isinstance(u.id, bpy.types.Mesh) and u.is_updated_geometry}
    _run(scene, depsgraph, edited)


@bpy.app.handlers.persistent
@quiet_stop
def _on_frame(scene, depsgraph=None) -> None:
    _run(scene, depsgraph, set())


def forget() -> None:
    """Look the meshes up again at the next frame (a modifier made or switched)."""
    global _objects
    _objects = None


@bpy.app.handlers.persistent
@quiet_stop
def _on_load(*_args) -> None:
    forget()
    _cache.clear()


_HANDLERS = ((bpy.app.handlers.depsgraph_update_post, _on_update),
             (bpy.app.handlers.frame_change_post, _on_frame),
             (bpy.app.handlers.load_post, _on_load))


def register_handlers() -> None:
    app_handlers.add(_HANDLERS)


def unregister_handlers() -> None:
    app_handlers.remove(_HANDLERS)
    _on_load()


# ------------------------------------------------------------------------------------------------------------
# the switch in the MMD panel

class SKINBRIDGE_OT_mmd_sdef_toggle(ModelOperator, bpy.types.Operator):
    """Turn SDEF on (SDEF vertices bend about their centre as in MMD) or off (linear blend skinning only)"""
    bl_idname = "skinbridge.mmd_sdef_toggle"
    bl_label = "SDEF On/Off"

    @classmethod
    def poll(cls, context):
        arm = find_armature(context)
        return super().poll(context) and bool(modifiers(arm))

    def run(self, context, arm):
        set_on(arm, not is_on(arm))
        return {"FINISHED"}


class VIEW3D_PT_skinbridge_mmd_sdef(SidebarPanel, bpy.types.Panel):
    bl_label = "SDEF"
    bl_parent_id = "VIEW3D_PT_skinbridge_mmd"
    bl_options = {"HIDE_HEADER"}

    @classmethod
    def poll(cls, context):
        arm = find_armature(context)
        return arm is not None and bool(modifiers(arm))

    def draw(self, context):
        on = is_on(find_armature(context))
        self.layout.operator(SKINBRIDGE_OT_mmd_sdef_toggle.bl_idname, depress=on,
                             text="SDEF On" if on else "SDEF Off")


CLASSES = (SKINBRIDGE_OT_mmd_sdef_toggle, VIEW3D_PT_skinbridge_mmd_sdef)
