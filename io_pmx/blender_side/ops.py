"""File › Import / Export "MikuMikuDance model (.pmx)" and "motion (.vmd)"."""
from __future__ import annotations

import bpy
from bpy.props import BoolProperty, CollectionProperty, FloatProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ...blender.ops_common import export_reporting, import_each, import_motions, protect_scene_files, registrar
from ...blender.selection import NoTarget, armatures, find_armature
from ...core.errors import ExportError
from ...core.fileio import output_session
from ..model import convert
from .physics_chain import POSE_OT_skinbridge_mmd_physics_chain


class IMPORT_SCENE_OT_skinbridge_pmx(bpy.types.Operator, ImportHelper):
    """Import a MikuMikuDance model (PMX 2.0 / 2.1)"""

    bl_idname = "import_scene.skinbridge_pmx"
    bl_label = "Import MikuMikuDance Model"
    bl_options = {"REGISTER", "UNDO", "PRESET"}
    filename_ext = ".pmx"
    filter_glob: StringProperty(default="*.pmx", options={"HIDDEN"})
    files: CollectionProperty(type=bpy.types.OperatorFileListElement, options={"HIDDEN", "SKIP_SAVE"})
    directory: StringProperty(subtype="DIR_PATH", options={"HIDDEN", "SKIP_SAVE"})
    scale: FloatProperty(name="Scale", default=convert.DEFAULT_SCALE, min=1e-6, soft_max=10.0, precision=4,
                         description="Metres per MMD unit (0.08: 1 unit = 8 cm); stored with the model so that "
                                     "export uses its inverse")

    def execute(self, context):
        from . import blender_io

        return import_each(self, lambda path: blender_io.import_pmx(context, path, self.scale))

    def invoke(self, context, event):
        return self.invoke_popup(context)


class EXPORT_SCENE_OT_skinbridge_pmx(bpy.types.Operator, ExportHelper):
    """Export the visible model (meshes and their armature, at rest) as a MikuMikuDance model (PMX 2.0)"""

    bl_idname = "export_scene.skinbridge_pmx"
    bl_label = "Export MikuMikuDance Model"
    bl_options = {"PRESET"}
    filename_ext = ".pmx"
    filter_glob: StringProperty(default="*.pmx", options={"HIDDEN"})
    collection: StringProperty(options={"HIDDEN"})
    use_model_scale: BoolProperty(name="Model's Scale", default=True,
                                  description="Use the inverse of the scale the model was imported with")
    scale: FloatProperty(name="Scale", default=convert.DEFAULT_SCALE, min=1e-6, soft_max=10.0, precision=4,
                         description="Metres per MMD unit when the model's own scale is not used "
                                     "(0.08: positions × 12.5)")
    selected_only: BoolProperty(name="Selected Only", default=False)
    # MMD control rig (mmd_rig.py, mmd_bone_map.py, mmd_arm_angle.py)
    mmd_rig: BoolProperty(name="MMD Rig", default=False,
                          description="Add the MMD control bones (全ての親, センター, グルーブ, 腰, 上半身2, 足IK親, "
                                      "足ＩＫ, つま先ＩＫ) and MMD bone names to the armature")
    bone_map: StringProperty(name="Bone Map", default="", subtype="FILE_PATH",
                             description="JSON file {\"source bone\": \"MMD name\" or null} overriding the "
                                         "bone mapping (empty: automatic)")
    arm_angle: FloatProperty(name="Arm Angle", default=0.0, subtype="ANGLE", min=-1.5707964, max=1.5707964,
                             description="Turn the upper arms down by this angle about +Y (the mesh follows) "
                                         "before export")

    def execute(self, context):
        from . import blender_io

        return export_reporting(self, lambda: blender_io.export_pmx(
            context, self.filepath, None if self.use_model_scale else self.scale, self.selected_only,
            mmd_rig=self.mmd_rig, bone_map=bpy.path.abspath(self.bone_map) if self.bone_map else None,
            arm_angle=self.arm_angle * 57.29577951308232))  # radians → degrees


# -- VMD motions (blender_vmd_*.py) -------------------------------------------------------------------------

class IMPORT_ANIM_OT_skinbridge_vmd(bpy.types.Operator, ImportHelper):
    """Import MikuMikuDance motions (.vmd) as actions onto the active armature imported from PMX"""

    bl_idname = "import_anim.skinbridge_vmd"
    bl_label = "Import MikuMikuDance Motion"
    bl_options = {"REGISTER", "UNDO"}
    filename_ext = ".vmd"
    filter_glob: StringProperty(default="*.vmd", options={"HIDDEN"})
    files: CollectionProperty(type=bpy.types.OperatorFileListElement, options={"HIDDEN", "SKIP_SAVE"})
    directory: StringProperty(subtype="DIR_PATH", options={"HIDDEN", "SKIP_SAVE"})
    camera: BoolProperty(name="Camera", default=True, description="Make an animated camera from camera keys")
    mmd_time: BoolProperty(name="MMD Frame Rate", default=True,
                           description="Set the scene to 30 fps (keys on whole frames) and its frame range to "
                                       "cover the motion, as MMD plays it")

    @classmethod
    def poll(cls, context):
        return bool(armatures(context))  # which one: decided (or refused, naming them) when it runs

    def execute(self, context):
        from . import motion_import as blender_vmd_import

        return import_motions(self, context, lambda path, arm: blender_vmd_import.import_vmd(
            context, [path], arm, self.camera, mmd_time=self.mmd_time))


class EXPORT_ANIM_OT_skinbridge_vmd(bpy.types.Operator, ExportHelper):
    """Export the active armature's action as a MikuMikuDance motion (.vmd)"""

    bl_idname = "export_anim.skinbridge_vmd"
    bl_label = "Export MikuMikuDance Motion"
    filename_ext = ".vmd"
    filter_glob: StringProperty(default="*.vmd", options={"HIDDEN"})
    bake: BoolProperty(name="Bake Every Frame", default=False,
                       description="Write a key on every whole 30-fps frame instead of at the keyframes")

    def execute(self, context):
        from . import motion_export as blender_vmd_export

        try:
            arm = find_armature(context, required=True)
        except NoTarget as e:
            self.report({"ERROR"}, f"no motion exported: {e}")
            return {"CANCELLED"}
        act = arm.animation_data.action if arm.animation_data else None
        if act is None:
            self.report({"ERROR"}, f"{arm.name} has no action to export: assign one")
            return {"CANCELLED"}
        try:
            with output_session() as session:
                protect_scene_files(session)
                warnings = blender_vmd_export.export_vmd(context, self.filepath, arm, act, self.bake)
        except (ExportError, OSError) as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        for w in warnings:
            self.report({"WARNING"}, w)
        return {"FINISHED"}


_register, _unregister = registrar(
    (IMPORT_SCENE_OT_skinbridge_pmx, EXPORT_SCENE_OT_skinbridge_pmx,
     IMPORT_ANIM_OT_skinbridge_vmd, EXPORT_ANIM_OT_skinbridge_vmd, POSE_OT_skinbridge_mmd_physics_chain),
    imports=[(IMPORT_SCENE_OT_skinbridge_pmx, "MikuMikuDance model (.pmx)"),
             (IMPORT_ANIM_OT_skinbridge_vmd, "MikuMikuDance motion (.vmd)")],
    exports=[(EXPORT_SCENE_OT_skinbridge_pmx, "MikuMikuDance model (.pmx)"),
             (EXPORT_ANIM_OT_skinbridge_vmd, "MikuMikuDance motion (.vmd)")],
)


def register():
    from .physics_chain import menu_entry

    _register()
    bpy.types.VIEW3D_MT_pose.append(menu_entry)  # Pose › Add MMD Physics to Chain


def unregister():
    from .physics_chain import menu_entry

    bpy.types.VIEW3D_MT_pose.remove(menu_entry)
    _unregister()
