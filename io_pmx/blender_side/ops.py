"""File › Import / Export "MikuMikuDance model (.pmx)", "motion (.vmd)" and "pose (.vpd)"; File › Import "PMD model
(.pmd)"."""
from __future__ import annotations

import bpy
from bpy.props import BoolProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ...blender.ops_common import (ExportFile, ImportFiles, OptionsPopup, export_motions, file_operator,
                                   import_motions, option_values, registrar)
from ...blender.selection import armatures
from .. import FORMATS
from .blender_physics_chain import menu_entry, POSE_OT_skinbridge_mmd_physics_chain
from .blender_physics_ops import CLASSES as PHYSICS_CLASSES
from . import blender_morphs
from . import blender_morph_edit
from . import blender_names
from . import blender_sdef
from . import blender_io
from . import blender_motion_import
from . import blender_motion_export
from . import blender_vpd

_PMX, _PMD, _VMD, _VPD = (next(s for s in FORMATS if s.name == n) for n in ("pmx", "pmd", "vmd", "vpd"))


@file_operator(_PMX.extensions, _PMX.import_options, several=True)
class IMPORT_SCENE_OT_skinbridge_pmx(ImportFiles, OptionsPopup, bpy.types.Operator, ImportHelper):
    """Import a MikuMikuDance model (PMX 2.0 / 2.1)"""

    bl_idname = "import_scene.skinbridge_pmx"
    bl_label = "Import MikuMikuDance Model"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    def import_one(self, context, path: str) -> list[str]:
        return blender_io.import_pmx(context, path, **option_values(self, _PMX.import_options)).warnings


@file_operator(_PMD.extensions, _PMD.import_options, several=True)
class IMPORT_SCENE_OT_skinbridge_pmd(ImportFiles, OptionsPopup, bpy.types.Operator, ImportHelper):
    """Import a MikuMikuDance PMD model as the PMX it converts to"""

    bl_idname = "import_scene.skinbridge_pmd"
    bl_label = "Import MikuMikuDance PMD Model"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    def import_one(self, context, path: str) -> list[str]:
        return blender_io.import_pmx(context, path, **option_values(self, _PMD.import_options)).warnings


@file_operator(_PMX.extensions, _PMX.options, collection=True)
class EXPORT_SCENE_OT_skinbridge_pmx(ExportFile, bpy.types.Operator, ExportHelper):
    """Export the visible model (meshes and their armature, at rest) as a MikuMikuDance model (PMX 2.0)"""

    bl_idname = "export_scene.skinbridge_pmx"
    bl_label = "Export MikuMikuDance Model"
    bl_options = {"PRESET"}
    selected_only: BoolProperty(name="Selected Only", default=False)

    def export(self, context) -> list[str]:
        values = option_values(self, _PMX.options)
        inward = blender_io.metres_per_unit_of(values.pop("units_per_metre"))
        return blender_io.export_pmx(context, self.filepath, inward, self.selected_only, **values)


# -- VMD motions (blender_vmd_*.py) -------------------------------------------------------------------------

@file_operator(_VMD.extensions, _VMD.import_options, several=True)
class IMPORT_ANIM_OT_skinbridge_vmd(bpy.types.Operator, ImportHelper):
    """Import MikuMikuDance motions (.vmd) as actions onto the active armature imported from PMX"""

    bl_idname = "import_anim.skinbridge_vmd"
    bl_label = "Import MikuMikuDance Motion"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return bool(armatures(context))  # which one: decided (or refused, naming them) when it runs

    def execute(self, context):
        choices = option_values(self, _VMD.import_options)
        return import_motions(self, context, lambda path, arm: blender_motion_import.import_vmd(
            context, [path], arm, choices["camera"], mmd_time=choices["mmd_time"]))


@file_operator(_VMD.extensions, _VMD.options, collection=True)
class EXPORT_ANIM_OT_skinbridge_vmd(bpy.types.Operator, ExportHelper):
    """Export the active armature's action as a MikuMikuDance motion (.vmd)"""

    bl_idname = "export_anim.skinbridge_vmd"
    bl_label = "Export MikuMikuDance Motion"

    def execute(self, context):
        return export_motions(self, context, lambda arm, act: (
            f"Exported {act.name} to {bpy.path.basename(self.filepath)}",
            blender_motion_export.export_vmd(context, self.filepath, arm, act, **option_values(self, _VMD.options))),
            "motion", "has no action to export: assign one")


# -- VPD poses (blender_vpd.py) ----------------------------------------------------------------------------

@file_operator(_VPD.extensions, several=True)
class IMPORT_ANIM_OT_skinbridge_vpd(bpy.types.Operator, ImportHelper):
    """Import a MikuMikuDance pose (.vpd) onto the active armature imported from PMX, as a one-frame action"""

    bl_idname = "import_anim.skinbridge_vpd"
    bl_label = "Import MikuMikuDance Pose"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return bool(armatures(context))

    def execute(self, context):
        def one(path, arm):
            act, warnings = blender_vpd.import_vpd(context, path, arm)
            return [act], warnings
        return import_motions(self, context, one)


@file_operator(_VPD.extensions)
class EXPORT_ANIM_OT_skinbridge_vpd(bpy.types.Operator, ExportHelper):
    """Export the active armature's pose as shown as a MikuMikuDance pose (.vpd)"""

    bl_idname = "export_anim.skinbridge_vpd"
    bl_label = "Export MikuMikuDance Pose"

    def execute(self, context):
        return export_motions(self, context, lambda arm, act: (
            f"Exported {arm.name} to {bpy.path.basename(self.filepath)}",
            blender_vpd.export_vpd(context, self.filepath, arm)), "motion", None)


_register, _unregister = registrar(
    (IMPORT_SCENE_OT_skinbridge_pmx, IMPORT_SCENE_OT_skinbridge_pmd, EXPORT_SCENE_OT_skinbridge_pmx,
     IMPORT_ANIM_OT_skinbridge_vmd, EXPORT_ANIM_OT_skinbridge_vmd, IMPORT_ANIM_OT_skinbridge_vpd,
     EXPORT_ANIM_OT_skinbridge_vpd, POSE_OT_skinbridge_mmd_physics_chain,
     *PHYSICS_CLASSES, *blender_morphs.CLASSES, *blender_morph_edit.CLASSES, *blender_names.CLASSES,
     *blender_sdef.CLASSES),
    imports=[(IMPORT_SCENE_OT_skinbridge_pmx, "MikuMikuDance model (.pmx)"),
             (IMPORT_SCENE_OT_skinbridge_pmd, "MikuMikuDance PMD model (.pmd)"),
             (IMPORT_ANIM_OT_skinbridge_vmd, "MikuMikuDance motion (.vmd)"),
             (IMPORT_ANIM_OT_skinbridge_vpd, "MikuMikuDance pose (.vpd)")],
    exports=[(EXPORT_SCENE_OT_skinbridge_pmx, "MikuMikuDance model (.pmx)"),
             (EXPORT_ANIM_OT_skinbridge_vmd, "MikuMikuDance motion (.vmd)"),
             (EXPORT_ANIM_OT_skinbridge_vpd, "MikuMikuDance pose (.vpd)")],
)


def register():
    _register()
    blender_names.register()
    bpy.types.VIEW3D_MT_pose.append(menu_entry)  # Pose › Add MMD Physics to Chain
    blender_morphs.register_handlers()
    blender_sdef.register_handlers()


def unregister():
    blender_morphs.unregister_handlers()
    blender_sdef.unregister_handlers()
    blender_names.unregister()
    bpy.types.VIEW3D_MT_pose.remove(menu_entry)
    _unregister()
