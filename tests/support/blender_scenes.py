"""Scenes built in code for Blender tests (call after `read_factory_settings(use_empty=True)`).

`build_posed_scene()` gives a deliberately non-default state, so that a test can check that an operator
(export above all) leaves the user's objects, pose, mode, frame and selection exactly as they were:

* `Rig`: armature with three bones in a chain (root -> spine -> head), pose bones rotated/moved by hand
  and by the assigned layered action `RigWave` (slot `OBRig`), plus an NLA track holding `RigIdle`;
  selected, active, in Pose mode, with only `spine` selected among the pose bones.
* `Body`: a 16-vertex column skinned to the three bones (vertex groups + Armature modifier), parented to
  the rig, not selected.
* `Prop`: an empty, selected, not active, hidden in renders.
* The scene is at frame 17.
"""
from __future__ import annotations

import bpy
import numpy as np
from skinbridge.app import demo
from skinbridge.blender import compat
from skinbridge.blender import scene as bscene

BONES = (  # name, parent, head, tail
    ("root", None, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
    ("spine", "root", (0.0, 0.0, 1.0), (0.0, 0.0, 2.0)),
    ("head", "spine", (0.0, 0.0, 2.0), (0.0, 0.0, 3.0)),
)
FRAME = 17


def _column_mesh(name: str) -> bpy.types.Mesh:
    """Four square rings at z = 0..3 (16 vertices), 12 side quads and 2 caps."""
    ring = np.array([(-0.2, -0.2), (0.2, -0.2), (0.2, 0.2), (-0.2, 0.2)], dtype=np.float32)
    co = np.array([(x, y, z) for z in range(4) for x, y in ring], dtype=np.float32)
    faces = []
    for r in range(3):
        for i in range(4):
            a, b = r * 4 + i, r * 4 + (i + 1) % 4
            faces.append((a, b, b + 4, a + 4))
    faces.append((3, 2, 1, 0))
    faces.append((12, 13, 14, 15))
    corner_verts = np.array(faces, dtype=np.int32).ravel()

    me = bpy.data.meshes.new(name)
    me.vertices.add(len(co))
    me.attributes["position"].data.foreach_set("vector", co.ravel())
    me.loops.add(corner_verts.size)
    me.attributes[".corner_vert"].data.foreach_set("value", corner_verts)
    me.polygons.add(len(faces))
    me.polygons.foreach_set("loop_start", np.arange(0, corner_verts.size, 4, dtype=np.int32))
    me.update(calc_edges=True)
    if me.validate():
        raise RuntimeError("test column mesh is invalid")
    return me


def _keyed_action(name: str, arm_ob: bpy.types.Object, keys: dict[tuple[str, int], list[tuple[float, float]]]):
    action = bpy.data.actions.new(name)
    slot = action.slots.new(id_type="OBJECT", name=arm_ob.name)
    bag = compat.channelbag_for_slot(action, slot)
    for (data_path, index), points in keys.items():
        bone = data_path.split('"')[1]
        fc = compat.new_fcurve(bag, data_path, index=index, group_name=bone)
        fc.keyframe_points.add(len(points))
        fc.keyframe_points.foreach_set("co", [v for point in points for v in point])
        fc.update()
    return action, slot


def build_posed_scene() -> dict:
    """Build the scene above in the current (empty) file; returns its objects and action names."""
    scene = bpy.context.scene
    view_layer = bpy.context.view_layer
    coll = scene.collection

    arm = bpy.data.armatures.new("Rig")
    arm_ob = bpy.data.objects.new("Rig", arm)
    coll.objects.link(arm_ob)
    arm_ob.location = (0.5, -0.25, 0.1)
    view_layer.objects.active = arm_ob
    bpy.ops.object.mode_set(mode="EDIT")
    for name, parent, head, tail in BONES:
        eb = arm.edit_bones.new(name)
        eb.head, eb.tail = head, tail
        if parent:
            eb.parent = arm.edit_bones[parent]
            eb.use_connect = parent == "root"  # head stays free so its location keys show
    bpy.ops.object.mode_set(mode="OBJECT")

    me = _column_mesh("Body")
    body = bpy.data.objects.new("Body", me)
    coll.objects.link(body)
    body.parent = arm_ob
    for name, *_ in BONES:
        body.vertex_groups.new(name=name)
    ring_weights = ({"root": 1.0}, {"root": 0.5, "spine": 0.5}, {"spine": 0.5, "head": 0.5}, {"head": 1.0})
    for ring, weights in enumerate(ring_weights):
        for bone, w in weights.items():
            body.vertex_groups[bone].add(list(range(ring * 4, ring * 4 + 4)), w, "REPLACE")
    mod = body.modifiers.new("Armature", "ARMATURE")
    mod.object = arm_ob

    prop = bpy.data.objects.new("Prop", None)
    coll.objects.link(prop)
    prop.location = (2.0, 0.0, 1.0)
    prop.hide_render = True

    wave, wave_slot = _keyed_action("RigWave", arm_ob, {
        ('pose.bones["spine"].rotation_quaternion', 0): [(1.0, 1.0), (24.0, 0.8660254)],
        ('pose.bones["spine"].rotation_quaternion', 1): [(1.0, 0.0), (24.0, 0.5)],
        ('pose.bones["head"].location', 0): [(1.0, 0.0), (24.0, 0.3)],
    })
    idle, idle_slot = _keyed_action("RigIdle", arm_ob, {
        ('pose.bones["head"].rotation_quaternion', 2): [(1.0, 0.0), (12.0, 0.2)],
    })
    adt = arm_ob.animation_data_create()
    track = adt.nla_tracks.new()
    track.name = "Idle"
    strip = track.strips.new("RigIdle", 1, idle)
    strip.action_slot = idle_slot
    adt.action = wave
    adt.action_slot = wave_slot

    scene.frame_set(FRAME)
    # Pose the unanimated bone by hand (kept: only animated channels are overwritten on frame change).
    arm_ob.pose.bones["root"].rotation_mode = "XYZ"
    arm_ob.pose.bones["root"].rotation_euler = (0.1, 0.0, 0.2)

    for ob in (arm_ob, body, prop):
        ob.select_set(False)
    arm_ob.select_set(True)
    prop.select_set(True)
    view_layer.objects.active = arm_ob
    bpy.ops.object.mode_set(mode="POSE")
    for pb in arm_ob.pose.bones:
        compat.set_pose_bone_flag(pb, "select", pb.name == "spine")
    view_layer.update()
    return {
        "armature": arm_ob,
        "mesh": body,
        "action": wave.name,
        "prop": prop,
        "nla_action": idle.name,
        "bones": [name for name, *_ in BONES],
        "frame": FRAME,
    }


def walking_humanoid(frame: int) -> tuple[bpy.types.Object, bpy.types.Object]:
    """The demo's humanoid (app/demo.py) built with its walk, the scene at `frame`: its armature and its mesh."""
    result = bscene.build_scene(bpy.context, demo.humanoid_scene(), "Humanoid")
    mesh_ob = next(o for o in result.objects if o.type == "MESH")
    demo.add_walk(result.armature)
    bpy.context.scene.frame_set(frame)
    return result.armature, mesh_ob


def import_urhox(path) -> list:
    """The objects an import of an UrhoX / Urho3D model through its File › Import operator adds."""
    before = set(bpy.data.objects)
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(path)) == {"FINISHED"}
    return [o for o in bpy.data.objects if o not in before]

