"""The MMD physics operators (build, clear, rebuild, bake, on/off for posing) and the MMD panel of the
3D viewport sidebar's SkinBridge tab that holds them with "Add MMD Physics to Chain"; registered with the PMX
operators (`ops.py`)."""
from __future__ import annotations

import bpy

from ...blender.ops_common import report_outcome
from ...blender.selection import find_armature
from ...blender.sidebar_ui import ModelOperator, SidebarPanel, plain_operator
from ...blender.translations import translate
from . import blender_physics
from . import blender_physics_sim as sim
from .blender_physics_chain import POSE_OT_skinbridge_mmd_physics_chain



def _has_physics(arm_ob) -> bool:
    bodies, joints = blender_physics.physics_objects(arm_ob)
    return bool(bodies or joints)


class SKINBRIDGE_OT_mmd_physics_build(ModelOperator, bpy.types.Operator):
    """Make the model's MMD rigid bodies and joints simulate: bones follow their dynamic bodies when the scene
    plays, collisions as MMD decides them; bodies cleared before are made again from the model's records"""
    bl_idname = "skinbridge.mmd_physics_build"
    bl_label = "Build Physics"

    def run(self, context, arm):
        warnings = sim.build(context, arm)
        if not _has_physics(arm):
            self.report({"WARNING"}, translate(f"{arm.name} has no MMD rigid bodies"))
            return {"CANCELLED"}
        report_outcome(self, f"Physics built for {arm.name}", warnings)
        return {"FINISHED"}


class SKINBRIDGE_OT_mmd_physics_clear(ModelOperator, bpy.types.Operator):
    """Stop the physics and restore the rest pose of the bones it drove; the rigid bodies and joints stay with
    the model (export writes them)"""
    bl_idname = "skinbridge.mmd_physics_clear"
    bl_label = "Clear Physics"

    def run(self, context, arm):
        sim.clear(context, arm)
        return {"FINISHED"}


class SKINBRIDGE_OT_mmd_physics_rebuild(ModelOperator, bpy.types.Operator):
    """Clear and build again, taking the bodies and joints as edited (group, mask, shape, mode, bone)"""
    bl_idname = "skinbridge.mmd_physics_rebuild"
    bl_label = "Rebuild Physics"

    def run(self, context, arm):
        report_outcome(self, f"Physics rebuilt for {arm.name}", sim.rebuild(context, arm))
        return {"FINISHED"}


class SKINBRIDGE_OT_mmd_physics_toggle(ModelOperator, bpy.types.Operator):
    """Turn the physics off for posing (bodies at rest, bones free) or on again"""
    bl_idname = "skinbridge.mmd_physics_toggle"
    bl_label = "Physics On/Off"

    def run(self, context, arm):
        sim.set_simulation(context, arm, not sim.is_on(arm))
        return {"FINISHED"}


SKINBRIDGE_OT_mmd_physics_bake = plain_operator(
    "skinbridge.mmd_physics_bake", "Bake Physics",
    "Simulate the scene's frame range into the rigid body cache, from its first frame",
    can=lambda context: context.scene.rigidbody_world is not None, act=sim.bake)


class SKINBRIDGE_OT_mmd_physics_range(bpy.types.Operator):
    """Simulate over the scene's frame range: the rigid body cache set to it, from its first frame"""
    bl_idname = "skinbridge.mmd_physics_range"
    bl_label = "Physics over Scene Range"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return context.scene is not None and context.scene.rigidbody_world is not None

    def execute(self, context):
        sim.follow_scene_range(context.scene)
        return {"FINISHED"}


class VIEW3D_PT_skinbridge_mmd(SidebarPanel, bpy.types.Panel):
    bl_label = "MMD"
    bl_options = set()  # open: what an MMD model's user comes to the tab for

    def draw(self, context):
        layout = self.layout
        arm = find_armature(context)
        col = layout.column(align=True)
        col.label(text="Physics")
        col.operator(SKINBRIDGE_OT_mmd_physics_build.bl_idname, icon="PHYSICS")
        col.operator(SKINBRIDGE_OT_mmd_physics_rebuild.bl_idname, icon="FILE_REFRESH")
        col.operator(SKINBRIDGE_OT_mmd_physics_clear.bl_idname, icon="X")
        on = arm is not None and sim.is_on(arm)
        col.operator(SKINBRIDGE_OT_mmd_physics_toggle.bl_idname, depress=on,
                     text="Physics On" if on else "Physics Off (Posing)")
        col.operator(SKINBRIDGE_OT_mmd_physics_range.bl_idname, icon="PREVIEW_RANGE")
        col.operator(SKINBRIDGE_OT_mmd_physics_bake.bl_idname, icon="REC")
        layout.operator(POSE_OT_skinbridge_mmd_physics_chain.bl_idname)


CLASSES = (SKINBRIDGE_OT_mmd_physics_build, SKINBRIDGE_OT_mmd_physics_clear, SKINBRIDGE_OT_mmd_physics_rebuild,
           SKINBRIDGE_OT_mmd_physics_toggle, SKINBRIDGE_OT_mmd_physics_range, SKINBRIDGE_OT_mmd_physics_bake,
           VIEW3D_PT_skinbridge_mmd)
