"""Pose › "Add MMD Physics to Chain": capsules and joints along the selected bones (hair, skirt, tail), made
by `blender_physics.add_chain` and written to PMX by the export."""
from __future__ import annotations

import bpy
from bpy.props import FloatProperty, IntProperty

from ...blender.translations import translate
from ...core.errors import ExportError
from . import blender_physics as blender_physics
from . import blender_physics_sim


def selected_chain(arm_ob, names) -> list[str]:
    """The selected bones as one chain, parent first; ExportError when they are not one."""
    bones = arm_ob.data.bones
    chosen = set(names)
    if not chosen:
        raise ExportError("select the bones of a chain (hair, skirt, tail) in Pose Mode")
    roots = [n for n in chosen if bones[n].parent is None or bones[n].parent.name not in chosen]
    if len(roots) != 1:
        raise ExportError(f"the selected bones are not one chain ({len(roots)} start bones: "
                          f"{', '.join(sorted(roots))})")
    chain = [roots[0]]
    while True:
        nxt = [c.name for c in bones[chain[-1]].children if c.name in chosen]
        if len(nxt) > 1:
            raise ExportError(f"the selected bones branch at {chain[-1]}: select one chain")
        if not nxt:
            break
        chain.append(nxt[0])
    if len(chain) != len(chosen):
        raise ExportError("the selected bones are not one connected chain")
    return chain


def bones_with_bodies(arm_ob, chain: list[str]) -> list[str]:
    """The bones of `chain` that already have an MMD rigid body: one parented to the bone (it follows the bone)
    or one the bone follows (its FOLLOW constraint)."""
    has = {ob.parent_bone for ob in arm_ob.children
           if ob.get(blender_physics.KIND_PROP) == "rigid" and ob.parent_type == "BONE"}
    bodies, _ = blender_physics.physics_objects(arm_ob)
    has |= {ob.get(blender_physics.BONE_PROP) for ob in bodies}
    for name in chain:
        if any(blender_physics.followed_body(c) is not None for c in arm_ob.pose.bones[name].constraints):
            has.add(name)
    return [n for n in chain if n in has]


class POSE_OT_skinbridge_mmd_physics_chain(bpy.types.Operator):
    """Add MMD rigid bodies (capsules) and joints along the selected bone chain; the first follows its bone,
    the others swing and turn their bones. Exported with the model as PMX rigid bodies and joints. A chain
    with a bone that already has a rigid body is refused (nothing added): a second body on a bone would
    fight the first"""

    bl_idname = "pose.skinbridge_mmd_physics_chain"
    bl_label = "Add MMD Physics to Chain"
    bl_options = {"REGISTER", "UNDO"}
    radius: FloatProperty(name="Radius", default=0.2, min=0.01, max=1.0,
                          description="Capsule radius as a fraction of each bone's length")
    mass: FloatProperty(name="Mass", default=1.0, min=0.001)
    group: IntProperty(name="Collision Group", default=1, min=0, max=15,
                       description="MMD collision group; the chain does not collide with its own group")

    @classmethod
    def poll(cls, context):
        ob = context.object
        return ob is not None and ob.type == "ARMATURE" and context.mode == "POSE"

    def execute(self, context):
        arm = context.object
        try:
            chain = selected_chain(arm, [pb.name for pb in context.selected_pose_bones or []])
            taken = bones_with_bodies(arm, chain)
            if taken:
                raise ExportError(f"{', '.join(taken)} already {'has' if len(taken) == 1 else 'have'} MMD physics: "
                                  "nothing added (delete those rigid bodies and joints first to make them anew)")
            bodies, joints = blender_physics.add_chain(context, arm, chain, radius=self.radius, mass=self.mass,
                                                       group=self.group)
            for w in blender_physics_sim.link(context, arm, True):
                self.report({"WARNING"}, translate(w))
        except ExportError as e:
            self.report({"ERROR"}, translate(str(e)))
            return {"CANCELLED"}
        self.report({"INFO"}, translate(f"{len(bodies)} rigid bodies and {len(joints)} joints along "
                                        f"{', '.join(chain)}"))
        return {"FINISHED"}


def menu_entry(self, context):
    """Pose menu entry (the operator is registered with the PMX operators, `ops.py`)."""
    self.layout.operator(POSE_OT_skinbridge_mmd_physics_chain.bl_idname)
