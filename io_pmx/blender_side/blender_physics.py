"""MMD physics in Blender: PMX rigid bodies as Blender rigid bodies, joints as Generic Spring constraints, both
in a `Physics` collection; read back for export; and a chain of capsules and joints made from bones
("Add MMD physics to chain").

Conventions (docs/mmd.md §4.3, as mmd_tools but for joints): position = pos.xzy · scale; Euler rotation
(YXZ) = −rot.xzy; box size = size.xzy; a joint's empty and limits on MMD's axes (below). Shapes: a sphere
of radius r, a box of half extents s, a capsule of radius r and height h along its local Y (MMD), which is
Blender's local Z, the axis of Blender's capsule. Blender sizes a collision shape from the object's bounds,
so each body is a small box mesh with the shape's bounds, drawn as that shape.

* Rigid body: mass, damping, friction, restitution as they are (Blender's 0–1 clamps a damping of 2, as
  Bullet does: `range_notes` says so once, and export keeps the file's value); the collision group and the
  16-bit non-collision mask as properties (`GROUP_PROP`, `MASK_PROP`: bit k clear = no collision with group
  k, as PMX stores it), which `blender_physics_sim` turns into collision collections. Mode 0 (follows the
  bone): kinematic, parented to its bone; modes 1 and 2 (physics, physics with bone alignment): dynamic,
  placed at rest (not parented: that would be a cycle), their bone named by `BONE_PROP`; `blender_physics_sim`
  makes the bone follow them.
* Joint: an empty at the joint with a GENERIC_SPRING constraint between its two bodies, linear and angular
  limits on every axis, springs with the stiffnesses: Bullet's first 6-DOF spring (SPRING1) with its own
  damping of 1, the constraint MMD's Bullet and babylon-mmd use. The empty's axes are the joint's X, Y, −Z
  (`JOINT_AXES` after the joint's rotation): Bullet splits a joint's turn into X, then Y, then Z angles in the
  empty's axes, and only with MMD's axes in MMD's order do the limits bound the turn MMD bounds (the plain
  conversion's X, Z, Y order let Luka's hair tips settle 3 % of her height off babylon-mmd's; docs/mmd.md §6).
  Rotation limits: x, y negate and swap lower and upper, z as it is; translation limits: z does.
* Every object keeps the record it was made from (`RAW_PROP`, JSON with the PMX file's exact values).
  Export writes that record while what it describes is unchanged (compared in float32 after the
  conversion back), so a model read and written unchanged stays byte-identical; changed fields are converted
  back; bodies and joints without a record (made by the user or the chain operator) are converted whole.
"""
from __future__ import annotations

import json
import math

import bpy
import numpy as np
from mathutils import Euler, Matrix

from ...blender.props import MODEL_DATA_PROP
from ..model import convert
from ..model import pmx
from .blender_motion_model import model_metres_per_unit

COLLECTION = "Physics"
RAW_PROP = "skinbridge_pmx_physics"
MASK_PROP = "mmd_no_collision_mask"
GROUP_PROP = "mmd_group"
BONE_PROP = "mmd_bone"  # the Blender bone a dynamic body turns (a kinematic one is parented to its bone)
KIND_PROP = "mmd_physics"  # "rigid", "joint", "ncc" or "track"
OWNER_PROP = "skinbridge_pmx_armature"  # on a Physics collection: the armature object of its model
PARENT_REST_PROP = "skinbridge_pmx_bone_rest"  # on a body parented to its bone: that bone's rest at import
FOLLOW = "MMD physics"
MARGIN = 0.04  # Bullet's default collision margin, in MMD units (Blender's own 0.04 is in metres)
# Blender's ranges of the rigid body values (a value outside shows clamped; export keeps the file's)
RANGES = {"mass": (0.001, math.inf), "linear_damping": (0.0, 1.0), "angular_damping": (0.0, 1.0),
          "friction": (0.0, math.inf), "restitution": (0.0, 1.0)}
SHAPES = ("SPHERE", "BOX", "CAPSULE")
_AXES = "xyz"
# A joint empty's axes in the joint's converted frame: (X, Z, Y) of Blender's conversion turned to (X, Y, −Z),
# a right-handed frame whose axes are MMD's X, Y, Z (the −Z keeps it right-handed).
JOINT_AXES = Matrix.Rotation(math.pi / 2, 4, "X")
_ROT_SIGN = np.array([-1.0, -1.0, 1.0])  # a turn about MMD's X, Y, Z is one about the empty's −X, −Y, Z
_LIN_SIGN = np.array([1.0, 1.0, -1.0])  # a shift along MMD's X, Y, Z is one along the empty's X, Y, −Z


# -- conversions (MMD records ⇄ Blender values) ------------------------------------------------------------

def _swap(v) -> np.ndarray:
    v = np.asarray(v, np.float64)
    return v[[0, 2, 1]]


def rigid_dimensions(shape: int, size, scale: float) -> np.ndarray:
    """Blender object dimensions (x, y, z) of an MMD shape."""
    size = np.asarray(size, np.float64)
    if shape == 0:
        return np.full(3, 2 * size[0] * scale)
    if shape == 1:
        return 2 * _swap(size) * scale
    r, h = size[0], size[1]
    return np.array([2 * r, 2 * r, h + 2 * r]) * scale


def rigid_size(shape: int, dims, scale: float) -> np.ndarray:
    """The MMD size of a shape from Blender dimensions (inverse of `rigid_dimensions`)."""
    d = np.asarray(dims, np.float64) / scale
    if shape == 0:
        return np.array([d[0] / 2, 0.0, 0.0])
    if shape == 1:
        return _swap(d) / 2
    r = d[0] / 2
    return np.array([r, max(d[2] - 2 * r, 0.0), 0.0])


def euler_to_blender(rot) -> Euler:
    r = -_swap(rot)
    return Euler((float(r[0]), float(r[1]), float(r[2])), "YXZ")


def euler_to_pmx(matrix3) -> np.ndarray:
    e = Matrix(matrix3).to_euler("YXZ")
    return -_swap([e.x, e.y, e.z])


def _f32(v) -> np.ndarray:
    return np.asarray(v, np.float64).astype(np.float32)


def _same(a, b, tol: float) -> bool:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return bool(np.all(np.abs(a - b) <= tol * np.maximum(1.0, np.abs(b))))


def _signed_limits(lower, upper, sign: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of a joint's limits on the empty's axes from MMD's: a negated axis swaps its bounds.
    Also the way back (the same sign, 1/scale)."""
    lower, upper = np.asarray(lower, np.float64), np.asarray(upper, np.float64)
    return np.where(sign > 0, lower, -upper) * scale, np.where(sign > 0, upper, -lower) * scale


# -- building ------------------------------------------------------------------------------------------------

def ensure_world(context) -> None:
    scene = context.scene
    if scene.rigidbody_world is None:
        with context.temp_override(scene=scene):
            bpy.ops.rigidbody.world_add()
    world = scene.rigidbody_world
    if world.collection is None:
        world.collection = bpy.data.collections.new("RigidBodyWorld")
    if world.constraints is None:
        world.constraints = bpy.data.collections.new("RigidBodyConstraints")


def _box_mesh(name: str, dims) -> bpy.types.Mesh:
    me = bpy.data.meshes.new(name)
    h = np.asarray(dims, np.float64) / 2
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * h
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    me.from_pydata(corners.tolist(), [], faces)
    return me


def _model_collection(parents, arm_ob):
    """The Physics collection of `arm_ob`'s model among the children of `parents`: the one naming that
    armature, else one made before collections named their armature (naming none); None."""
    children = [c for p in parents for c in p.children if c.get(KIND_PROP) == "collection"]
    return next((c for c in children if arm_ob is not None and c.get(OWNER_PROP) == arm_ob), None) or \
        next((c for c in children if c.get(OWNER_PROP) is None), None)


def _physics_collection(context, arm_ob) -> bpy.types.Collection:
    """The model's own Physics collection, made beside its armature when it has none: a model imported twice
    into one collection gets a second one (its bodies look up its own bones)."""
    parent = arm_ob.users_collection[0] if arm_ob is not None and arm_ob.users_collection else \
        context.scene.collection
    found = _model_collection([parent], arm_ob)
    if found is not None:
        return found
    coll = bpy.data.collections.new(COLLECTION)
    coll[KIND_PROP] = "collection"
    if arm_ob is not None:
        coll[OWNER_PROP] = arm_ob
    parent.children.link(coll)
    _hide_in_view_layer(context.view_layer.layer_collection, coll)
    return coll


def _hide_in_view_layer(layer, coll) -> bool:
    """Hide the collection in the view layer (its eye): the exporters take visible meshes only, and the
    bodies are meshes (Blender sizes their shapes from them). Shown again, they are still physics."""
    if layer.collection == coll:
        layer.hide_viewport = True
        return True
    return any(_hide_in_view_layer(child, coll) for child in layer.children)


def _rest_bone_world(arm_ob, bone_name: str) -> Matrix:
    """The world matrix Blender's bone parenting uses at rest (the bone's tail, its rest axes)."""
    bone = arm_ob.data.bones[bone_name]
    return arm_ob.matrix_world @ bone.matrix_local @ Matrix.Translation((0.0, bone.length, 0.0))


def _rigid_body_of(context, ob):
    """Make `ob` a rigid body: Blender gives an object its rigid body settings when it joins the rigid body
    world's collection (the `rigidbody.constraint_add` operator crashes the bpy module; this does not)."""
    world = context.scene.rigidbody_world
    if ob.name not in world.collection.objects:
        world.collection.objects.link(ob)
    if ob.rigid_body is None:
        context.view_layer.update()
    ob.rigid_body.type = "ACTIVE"
    return ob.rigid_body


def constraint_of(context, ob, kind: str):
    world = context.scene.rigidbody_world
    if ob.name not in world.constraints.objects:
        world.constraints.objects.link(ob)
    if ob.rigid_body_constraint is None:
        context.view_layer.update()
    ob.rigid_body_constraint.type = kind
    return ob.rigid_body_constraint


def add_rigid_body(context, coll, arm_ob, rec: pmx.PmxRigidBody, bone_name: str | None, scale: float,
                   raw: dict | None = None) -> bpy.types.Object:
    """One rigid body object for a PMX record (the model's scale); `raw` is kept for export."""
    dims = rigid_dimensions(int(rec.shape), rec.size, scale)
    ob = bpy.data.objects.new(rec.name or "rigid", _box_mesh(rec.name or "rigid", np.maximum(dims, 1e-6)))
    coll.objects.link(ob)
    ob[KIND_PROP] = "rigid"
    ob[MODEL_DATA_PROP] = True
    ob[MASK_PROP] = int(rec.no_collision_mask)
    ob["mmd_name_e"] = rec.name_e
    if raw is not None:
        ob[RAW_PROP] = json.dumps(raw, ensure_ascii=False)
    ob.display_type = "WIRE"
    ob.hide_render = True
    ob.show_bounds = True
    ob.display_bounds_type = "CAPSULE" if rec.shape == 2 else SHAPES[int(rec.shape) if 0 <= rec.shape < 3 else 1]
    world = np.array(arm_ob.matrix_world if arm_ob is not None else Matrix())
    rest = Matrix(world) @ Matrix.Translation(convert.positions_to_blender(
        np.asarray(rec.position, np.float64)[None], scale)[0]) @ euler_to_blender(rec.rotation).to_matrix().to_4x4()
    if arm_ob is not None and bone_name and int(rec.mode) == 0:  # dynamic bodies: their bone follows them
        ob.parent = arm_ob
        ob.parent_type = "BONE"
        ob.parent_bone = bone_name
        ob.matrix_parent_inverse = _rest_bone_world(arm_ob, bone_name).inverted()
        bone_rest = Matrix(arm_ob.matrix_world).inverted() @ _rest_bone_world(arm_ob, bone_name)
        ob[PARENT_REST_PROP] = json.dumps({"bone": bone_name, "rest": [x for row in bone_rest for x in row]},
                                          ensure_ascii=False)
    ob.matrix_basis = rest
    rb = _rigid_body_of(context, ob)
    rb.collision_shape = SHAPES[int(rec.shape)] if 0 <= rec.shape < 3 else "BOX"
    rb.mass = float(rec.mass) if rec.mass > 0 else 1.0
    rb.linear_damping = float(np.clip(rec.linear_damping, 0, 1))
    rb.angular_damping = float(np.clip(rec.angular_damping, 0, 1))
    rb.friction = float(max(rec.friction, 0))
    rb.restitution = float(np.clip(rec.restitution, 0, 1))
    rb.kinematic = int(rec.mode) == 0
    rb.use_margin = True
    rb.collision_margin = MARGIN * scale
    rb.collision_collections = [False] * 20  # blender_physics_sim lays them out for the whole model
    ob["mmd_mode"] = int(rec.mode)
    ob[GROUP_PROP] = int(rec.group)
    if arm_ob is not None and bone_name and int(rec.mode) in (1, 2):
        ob[BONE_PROP] = bone_name
    return ob


def range_notes(records: list[pmx.PmxRigidBody]) -> list[str]:
    """One warning naming the bodies whose values Blender shows clamped (none when every value fits)."""
    out = []
    for rec in records:
        for field, (low, high) in RANGES.items():
            v = float(getattr(rec, field))
            if not low <= v <= high:
                out.append(f"{rec.name} {field.replace('_', ' ')} {v:g}")
    if not out:
        return []
    more = f" (and {len(out) - 5} more)" if len(out) > 5 else ""
    return [f"{len(out)} rigid body value(s) outside Blender's ranges show clamped (Bullet clamps damping to "
            f"0–1 as well); export writes the file's values: {', '.join(out[:5])}{more}"]


def add_joint(context, coll, arm_ob, rec: pmx.PmxJoint, a, b, scale: float, raw: dict | None = None
              ) -> bpy.types.Object:
    ob = bpy.data.objects.new(rec.name or "joint", None)
    coll.objects.link(ob)
    ob[KIND_PROP] = "joint"
    ob[MODEL_DATA_PROP] = True
    ob["mmd_name_e"] = rec.name_e
    ob["mmd_kind"] = int(rec.kind)
    if raw is not None:
        ob[RAW_PROP] = json.dumps(raw, ensure_ascii=False)
    ob.empty_display_type = "ARROWS"
    ob.empty_display_size = 0.1 * scale / 0.08
    world = arm_ob.matrix_world if arm_ob is not None else Matrix()
    ob.matrix_basis = world @ _placement(rec, scale) @ JOINT_AXES
    c = constraint_of(context, ob, "GENERIC_SPRING")
    c.object1, c.object2 = a, b
    c.spring_type = "SPRING1"
    c.disable_collisions = True  # until blender_physics_sim applies MMD's rule (jointed bodies may collide)
    tl, tu = _signed_limits(rec.translation_lower, rec.translation_upper, _LIN_SIGN, scale)
    rl, ru = _signed_limits(rec.rotation_lower, rec.rotation_upper, _ROT_SIGN, 1.0)
    st, sr = np.asarray(rec.spring_translation, np.float64), np.asarray(rec.spring_rotation, np.float64)
    for j, axis in enumerate(_AXES):
        setattr(c, f"use_limit_lin_{axis}", True)
        setattr(c, f"limit_lin_{axis}_lower", float(tl[j]))
        setattr(c, f"limit_lin_{axis}_upper", float(tu[j]))
        setattr(c, f"use_limit_ang_{axis}", True)
        setattr(c, f"limit_ang_{axis}_lower", float(rl[j]))
        setattr(c, f"limit_ang_{axis}_upper", float(ru[j]))
        setattr(c, f"use_spring_{axis}", bool(st[j] != 0))
        setattr(c, f"spring_stiffness_{axis}", float(max(st[j], 0)))
        setattr(c, f"use_spring_ang_{axis}", bool(sr[j] != 0))
        setattr(c, f"spring_stiffness_ang_{axis}", float(max(sr[j], 0)))
        setattr(c, f"spring_damping_{axis}", 1.0)  # Bullet's default, which MMD keeps
        setattr(c, f"spring_damping_ang_{axis}", 1.0)
    return ob


def build_physics(context, arm_ob, extras: dict, scale: float, bone_names: list[str], created: list) -> list[str]:
    """Rigid bodies and joints of a PMX (its stored records) as Blender objects; `bone_names[i]` is the
    Blender bone of PMX bone i. Every object made is appended to `created`; returns warnings (values Blender
    shows clamped). `blender_physics_sim.link` makes them simulate."""
    bodies_raw = extras.get("rigid_bodies", [])
    joints_raw = extras.get("joints", [])
    if not bodies_raw and not joints_raw:
        return []
    ensure_world(context)
    coll = _physics_collection(context, arm_ob)
    records = [convert.fixed_from_dict(pmx.PmxRigidBody, d, pmx.RIGID_BODY) for d in bodies_raw]
    bodies = []
    for k, (rec, raw) in enumerate(zip(records, bodies_raw)):
        bone = bone_names[rec.bone] if 0 <= rec.bone < len(bone_names) else None
        ob = add_rigid_body(context, coll, arm_ob, rec, bone, scale, dict(raw, index=k))
        created.append(ob)
        bodies.append(ob)
    for k, raw in enumerate(joints_raw):
        rec = convert.fixed_from_dict(pmx.PmxJoint, raw, pmx.JOINT)
        a = bodies[rec.rigid_a] if 0 <= rec.rigid_a < len(bodies) else None
        b = bodies[rec.rigid_b] if 0 <= rec.rigid_b < len(bodies) else None
        created.append(add_joint(context, coll, arm_ob, rec, a, b, scale, dict(raw, index=k)))
    return range_notes(records)


# -- reading back --------------------------------------------------------------------------------------------

def find_collection(arm_ob):
    """The model's Physics collection, or None."""
    return _model_collection(arm_ob.users_collection, arm_ob) if arm_ob is not None else None


def physics_objects(arm_ob) -> tuple[list, list]:
    """(rigid body objects, joint objects) of the model: those in its Physics collection, file order first
    (the records they came from), then the user's in name order."""
    coll = find_collection(arm_ob)
    if coll is None:
        return [], []

    def order(ob):
        raw = ob.get(RAW_PROP)
        try:
            return (0, int(json.loads(raw)["index"]), "") if raw else (1, 0, ob.name)
        except (ValueError, KeyError, TypeError):
            return (1, 0, ob.name)

    bodies = sorted((o for o in coll.all_objects if o.rigid_body is not None and o.get(KIND_PROP) != "ncc"),
                    key=order)
    joints = sorted((o for o in coll.all_objects if o.rigid_body_constraint is not None
                     and o.rigid_body_constraint.type == "GENERIC_SPRING"), key=order)
    return bodies, joints


def rest_matrix(ob) -> Matrix:
    """The object's world matrix with its armature at rest (bone parenting through the rest bone)."""
    if ob.parent is not None and ob.parent_type == "BONE" and ob.parent.type == "ARMATURE" and \
            ob.parent_bone in ob.parent.data.bones:
        return _rest_bone_world(ob.parent, ob.parent_bone) @ ob.matrix_parent_inverse @ ob.matrix_basis
    if ob.parent is not None:
        return ob.parent.matrix_world @ ob.matrix_parent_inverse @ ob.matrix_basis
    return ob.matrix_basis.copy()


def followed_body(constraint):
    """The rigid body a bone's constraint makes it follow (through the body's tracking empty), or None."""
    target = getattr(constraint, "target", None)
    if target is None or not constraint.name.startswith(FOLLOW):
        return None
    if target.get(KIND_PROP) == "track":
        target = target.parent
    return target if target is not None and target.get(KIND_PROP) == "rigid" else None


def bone_of(ob, arm_ob) -> str | None:
    if ob.parent == arm_ob and ob.parent_type == "BONE" and ob.parent_bone:
        return ob.parent_bone
    for pb in arm_ob.pose.bones if arm_ob is not None else ():
        for c in pb.constraints:
            if followed_body(c) == ob:
                return pb.name
    bone = ob.get(BONE_PROP)
    return bone if arm_ob is not None and isinstance(bone, str) and bone in arm_ob.data.bones else None


def _same_name(blender: str, file: str) -> bool:
    """Whether a Blender name is the file's (Blender adds .001 to a name already taken)."""
    return blender == file or (blender.startswith(file + ".") and blender[len(file) + 1:].isdigit())


def _body_settings(rec: pmx.PmxRigidBody) -> dict:
    """The Blender rigid body values `add_rigid_body` sets for a record."""
    return {"mass": float(rec.mass) if rec.mass > 0 else 1.0,
            "linear_damping": float(np.clip(rec.linear_damping, 0, 1)),
            "angular_damping": float(np.clip(rec.angular_damping, 0, 1)),
            "friction": float(max(rec.friction, 0)), "restitution": float(np.clip(rec.restitution, 0, 1))}


def _local_rest(ob, arm_ob) -> Matrix:
    """The object's rest placement in its model's space. A body parented to its bone at import is placed by the
    bone's rest of that time: moving the bone's rest in Blender carries the body on screen, but the file keeps
    it where it was in the model (as a PMX editor and MMD keep it) until the body itself is moved
    (docs/mmd.md "Moving a bone's rest")."""
    arm_world = Matrix(arm_ob.matrix_world) if arm_ob is not None else Matrix()
    placed = _placed_rest(ob)
    if placed is not None and ob.parent == arm_ob and ob.parent_type == "BONE" and ob.parent_bone == placed[0]:
        return placed[1] @ ob.matrix_parent_inverse @ ob.matrix_basis
    return arm_world.inverted() @ rest_matrix(ob)


def _placed_rest(ob) -> tuple[str, Matrix] | None:
    """(bone, its rest in the model's space) a body was parented by at import, or None."""
    try:
        raw = json.loads(ob[PARENT_REST_PROP]) if ob.get(PARENT_REST_PROP) else None
        m = [float(x) for x in raw["rest"]] if raw else None
        return (str(raw["bone"]), Matrix([m[0:4], m[4:8], m[8:12], m[12:16]])) if m and len(m) == 16 else None
    except (ValueError, KeyError, TypeError):
        return None


def _placement(rec, scale: float) -> Matrix:
    return Matrix.Translation(convert.positions_to_blender(np.asarray(rec.position, np.float64)[None], scale)[0]) \
        @ euler_to_blender(rec.rotation).to_matrix().to_4x4()


def _same_matrix(a: Matrix, b: Matrix, scale: float) -> bool:
    a, b = np.array(a), np.array(b)
    return bool(np.abs(a[:3, :3] - b[:3, :3]).max() <= 2e-5 and
                np.abs(a[:3, 3] - b[:3, 3]).max() <= 2e-5 * max(1.0, float(np.abs(b[:3, 3]).max())))


def _kept_record(ob, arm_ob, scale: float, cls, layout, axes: Matrix | None = None):
    """(the record kept at import or None, the PMX record of `ob`): the kept fields, with the object's own
    placement once it no longer matches the kept one. `axes`: the object's axes in its record's frame
    (`JOINT_AXES` for a joint)."""
    raw = json.loads(ob[RAW_PROP]) if ob.get(RAW_PROP) else None
    rec = convert.fixed_from_dict(cls, {k: v for k, v in raw.items() if k != "index"}, layout) if raw \
        else cls(name=ob.name)
    local = _local_rest(ob, arm_ob) @ (axes.inverted() if axes is not None else Matrix())
    if raw is None or not _same_matrix(local, _placement(rec, scale), scale):
        loc, rot, _ = local.decompose()
        rec.position = _f32(convert.positions_to_pmx(np.array(loc)[None], scale)[0])
        rec.rotation = _f32(euler_to_pmx(rot.to_matrix()))
    return raw, rec


def read_rigid_body(ob, arm_ob, scale: float, bone_index: dict[str, int]) -> pmx.PmxRigidBody:
    """The PMX record of a rigid body object: each field the file's own while what import made of it is
    unchanged in Blender, else converted back."""
    raw, rec = _kept_record(ob, arm_ob, scale, pmx.PmxRigidBody, pmx.RIGID_BODY)
    rb = ob.rigid_body
    shape = SHAPES.index(rb.collision_shape) if rb.collision_shape in SHAPES else 1
    dims = np.array(ob.dimensions)
    same_shape = raw is not None and shape == int(rec.shape) and _same(
        dims, np.maximum(rigid_dimensions(int(rec.shape), rec.size, scale), 1e-6), 2e-5)
    if not same_shape:
        size = rigid_size(shape, dims, scale)
        keep = np.asarray(rec.size, np.float32).copy()
        n = {0: 1, 1: 3, 2: 2}[shape]
        keep[:n] = _f32(size)[:n]
        rec.size, rec.shape = keep, shape
    expected = _body_settings(rec)
    for field, v in expected.items():
        actual = float(getattr(rb, field))
        if raw is None or abs(actual - v) > 1e-6 * max(1.0, abs(v)):
            setattr(rec, field, np.float32(actual))
    group = int(ob.get(GROUP_PROP, rec.group)) & 15  # the collision collections are derived from it
    if raw is None or group != int(rec.group):
        rec.group = group
    rec.no_collision_mask = int(ob.get(MASK_PROP, 0xFFFF)) & 0xFFFF
    mode = 0 if rb.kinematic else (int(ob.get("mmd_mode", 1)) if int(ob.get("mmd_mode", 1)) in (1, 2) else 1)
    if raw is None or mode != int(rec.mode):
        rec.mode = mode
    bone = bone_of(ob, arm_ob)
    rec.bone = bone_index.get(bone, -1) if bone is not None else -1
    if raw is None or not _same_name(ob.name, rec.name):
        rec.name = ob.name
    rec.name_e = str(ob.get("mmd_name_e", rec.name_e))
    return rec


def _joint_settings(rec: pmx.PmxJoint, scale: float) -> dict:
    """The Blender constraint values `add_joint` sets for a record, per group of PMX fields."""
    st, sr = np.asarray(rec.spring_translation, np.float64), np.asarray(rec.spring_rotation, np.float64)
    return {
        ("translation_lower", "translation_upper"): np.concatenate(
            _signed_limits(rec.translation_lower, rec.translation_upper, _LIN_SIGN, scale)),
        ("rotation_lower", "rotation_upper"): np.concatenate(
            _signed_limits(rec.rotation_lower, rec.rotation_upper, _ROT_SIGN, 1.0)),
        ("spring_translation",): np.maximum(st, 0) * (st != 0),
        ("spring_rotation",): np.maximum(sr, 0) * (sr != 0),
    }


def read_joint(ob, arm_ob, scale: float, body_index: dict) -> pmx.PmxJoint:
    """The PMX record of a joint object, field by field as `read_rigid_body`."""
    raw, rec = _kept_record(ob, arm_ob, scale, pmx.PmxJoint, pmx.JOINT, JOINT_AXES)
    c = ob.rigid_body_constraint

    def axes(prefix):
        return np.array([getattr(c, prefix.format(a)) for a in _AXES], np.float64)

    actual = {
        ("translation_lower", "translation_upper"): np.concatenate(
            [axes("limit_lin_{}_lower"), axes("limit_lin_{}_upper")]),
        ("rotation_lower", "rotation_upper"): np.concatenate(
            [axes("limit_ang_{}_lower"), axes("limit_ang_{}_upper")]),
        ("spring_translation",): axes("spring_stiffness_{}") * axes("use_spring_{}"),
        ("spring_rotation",): axes("spring_stiffness_ang_{}") * axes("use_spring_ang_{}"),
    }
    expected = _joint_settings(rec, scale)
    for fields, got in actual.items():
        if raw is not None and _same(got, expected[fields], 2e-5):
            continue
        if fields[0] == "translation_lower":
            lo, up = _signed_limits(got[:3], got[3:], _LIN_SIGN, 1.0 / scale)
            rec.translation_lower, rec.translation_upper = _f32(lo), _f32(up)
        elif fields[0] == "rotation_lower":
            lo, up = _signed_limits(got[:3], got[3:], _ROT_SIGN, 1.0)
            rec.rotation_lower, rec.rotation_upper = _f32(lo), _f32(up)
        else:
            setattr(rec, fields[0], _f32(got))
    a = body_index.get(c.object1.name, -1) if c.object1 is not None else -1
    b = body_index.get(c.object2.name, -1) if c.object2 is not None else -1
    rec.rigid_a, rec.rigid_b = a, b
    if raw is None or not _same_name(ob.name, rec.name):
        rec.name = ob.name
    rec.name_e = str(ob.get("mmd_name_e", rec.name_e))
    rec.kind = int(ob.get("mmd_kind", rec.kind))
    return rec


def read_physics(arm_ob, scale: float, bone_index: dict[str, int], warnings: list[str] | None = None
                 ) -> tuple[list, list, list] | None:
    """(rigid bodies, joints, the file index of each body or None for a body made in Blender) as PMX records
    from the model's Physics collection, or None when it has none (the records stored with the model are then
    written as they are). A joint one of whose bodies was deleted joins nothing: it is left out, said in
    `warnings`."""
    bodies, joints = physics_objects(arm_ob)
    if not bodies and not joints:
        return None
    recs = [read_rigid_body(ob, arm_ob, scale, bone_index) for ob in bodies]
    index = {ob.name: k for k, ob in enumerate(bodies)}
    kept = []
    for ob in joints:
        c = ob.rigid_body_constraint
        gone = [w for w, body in (("A", c.object1), ("B", c.object2)) if body is None or body.name not in index]
        if gone:
            if warnings is not None:
                warnings.append(f"joint {ob.name}: its rigid body {' and '.join(gone)} was deleted; the joint "
                                "joins nothing and is left out")
            continue
        kept.append(read_joint(ob, arm_ob, scale, index))
    return recs, kept, [_file_index(ob) for ob in bodies]


def _file_index(ob) -> int | None:
    try:
        return int(json.loads(ob[RAW_PROP])["index"]) if ob.get(RAW_PROP) else None
    except (ValueError, KeyError, TypeError):
        return None


# -- Add MMD physics to chain ----------------------------------------------------------------------------------

def add_chain(context, arm_ob, bone_names: list[str], scale: float | None = None, radius: float = 0.2,
              mass: float = 1.0, group: int = 1) -> tuple[list, list]:
    """Capsules along the bones `bone_names` (a chain, parent first) and joints between them: the first
    capsule follows its bone (static, mode 0), the others are dynamic and turn their bones (mode 2, made to
    follow by `blender_physics_sim.link`); a joint at the head of every bone after the first joins it to the one
    before, its rotation limited to ±30° (±10° of twist about the bone) with light springs. `radius`: the capsules'
    radius as a fraction of each bone's length. Returns (bodies, joints)."""
    if scale is None:
        scale = model_metres_per_unit(arm_ob)
    ensure_world(context)
    coll = _physics_collection(context, arm_ob)
    bodies, joints = [], []
    for k, name in enumerate(bone_names):
        bone = arm_ob.data.bones[name]
        head = np.array(bone.head_local)
        tail = np.array(bone.tail_local)
        length = float(np.linalg.norm(tail - head))
        r = max(radius * length, 1e-4)
        centre = (head + tail) / 2
        # capsule along the bone: its local Z (Blender's capsule axis) = the bone's Y
        rest = np.array(bone.matrix_local)[:3, :3]
        axes = np.stack([rest[:, 0], rest[:, 2], rest[:, 1]], axis=1) * np.array([1, -1, 1])
        rotation = euler_to_pmx(Matrix(axes.tolist()))
        rec = pmx.PmxRigidBody(
            name=f"{name}", name_e=f"{name}", bone=-1, group=group, no_collision_mask=0xFFFF & ~(1 << group),
            shape=2, size=_f32([r / scale, max(length - 2 * r, 0.0) / scale, 0]),
            position=_f32(convert.positions_to_pmx(centre[None], scale)[0]), rotation=_f32(rotation),
            mass=np.float32(mass), linear_damping=np.float32(0.5), angular_damping=np.float32(0.5),
            restitution=np.float32(0), friction=np.float32(0.5), mode=0 if k == 0 else 2)
        ob = add_rigid_body(context, coll, arm_ob, rec, name, scale, None)
        bodies.append(ob)
        if k:
            jrec = pmx.PmxJoint(
                name=f"{bone_names[k - 1]}-{name}", name_e=f"{bone_names[k - 1]}-{name}", kind=0,
                position=_f32(convert.positions_to_pmx(head[None], scale)[0]), rotation=_f32(rotation),
                rotation_lower=_f32([-math.radians(30), -math.radians(10), -math.radians(30)]),
                rotation_upper=_f32([math.radians(30), math.radians(10), math.radians(30)]),
                spring_rotation=_f32([50, 50, 50]))
            joints.append(add_joint(context, coll, arm_ob, jrec, bodies[k - 1], ob, scale, None))
    return bodies, joints
