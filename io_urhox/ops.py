"""File › Import / Export entries and drag-and-drop for UrhoX / Urho3D models (.mdl)."""
from __future__ import annotations

import os

import bpy
from bpy.props import BoolProperty, CollectionProperty, EnumProperty, IntProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper, poll_file_object_drop

from ..core.errors import ExportError, FormatError

_PROFILES = [
    ("urhox", "UrhoX", "glTF axes (right-handed, Y up), every geometry maps all bones, no morphs (UrhoX glb2mdl rules)"),
    ("urho3d", "Urho3D", "Left-handed Y up as Urho3D's tools write, geometries split at Max Bones, morphs written"),
]


class IMPORT_SCENE_OT_urhox_mdl(bpy.types.Operator, ImportHelper):
    """Import an UrhoX / Urho3D model (UMD2, UMDL, UMD3)"""

    bl_idname = "import_scene.urhox_mdl"
    bl_label = "Import UrhoX / Urho3D Model"
    bl_options = {"REGISTER", "UNDO", "PRESET"}
    filename_ext = ".mdl"
    filter_glob: StringProperty(default="*.mdl", options={"HIDDEN"})
    files: CollectionProperty(type=bpy.types.OperatorFileListElement, options={"HIDDEN", "SKIP_SAVE"})
    directory: StringProperty(subtype="DIR_PATH", options={"HIDDEN", "SKIP_SAVE"})
    profile: EnumProperty(name="Profile", items=_PROFILES, default="urhox")

    def execute(self, context):
        from . import blender_io

        paths = [os.path.join(self.directory, f.name) for f in self.files if f.name] or [self.filepath]
        done = 0
        for path in paths:
            try:
                result = blender_io.import_mdl(context, path, self.profile)
            except (FormatError, OSError) as e:
                self.report({"ERROR"}, f"{os.path.basename(path)}: {e}")
                continue
            for w in result.warnings:
                self.report({"WARNING"}, f"{os.path.basename(path)}: {w}")
            done += 1
        return {"FINISHED"} if done else {"CANCELLED"}

    def invoke(self, context, event):
        return self.invoke_popup(context)


class EXPORT_SCENE_OT_urhox_mdl(bpy.types.Operator, ExportHelper):
    """Export the visible skinned meshes and their armature as an UrhoX / Urho3D model (UMD2)"""

    bl_idname = "export_scene.urhox_mdl"
    bl_label = "Export UrhoX / Urho3D Model"
    bl_options = {"PRESET"}
    filename_ext = ".mdl"
    filter_glob: StringProperty(default="*.mdl", options={"HIDDEN"})
    collection: StringProperty(options={"HIDDEN"})
    profile: EnumProperty(name="Profile", items=_PROFILES, default="urhox")
    selected_only: BoolProperty(name="Selected Only", default=False)
    deform_only: BoolProperty(name="Deforming Bones Only", default=False,
                              description="Drop bones that deform nothing and have no deforming descendants")
    max_bones: IntProperty(name="Max Bones", default=64, min=1, max=255,
                           description="Bones per geometry under the Urho3D profile")

    def execute(self, context):
        from . import blender_io

        try:
            warnings = blender_io.export_mdl(context, self.filepath, self.profile, self.selected_only,
                                             self.deform_only, self.max_bones)
        except (ExportError, OSError) as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        for w in warnings:
            self.report({"WARNING"}, w)
        return {"FINISHED"}


class IO_FH_urhox_mdl(bpy.types.FileHandler):
    bl_idname = "IO_FH_urhox_mdl"
    bl_label = "UrhoX / Urho3D model"
    bl_import_operator = "import_scene.urhox_mdl"
    bl_export_operator = "export_scene.urhox_mdl"
    bl_file_extensions = ".mdl"

    @classmethod
    def poll_drop(cls, context):
        return poll_file_object_drop(context)


def _menu_import(self, context):
    self.layout.operator(IMPORT_SCENE_OT_urhox_mdl.bl_idname, text="UrhoX / Urho3D model (.mdl)")


def _menu_export(self, context):
    self.layout.operator(EXPORT_SCENE_OT_urhox_mdl.bl_idname, text="UrhoX / Urho3D model (.mdl)")


_classes = (IMPORT_SCENE_OT_urhox_mdl, EXPORT_SCENE_OT_urhox_mdl, IO_FH_urhox_mdl)


def register():
    for c in _classes:
        bpy.utils.register_class(c)
    bpy.types.TOPBAR_MT_file_import.append(_menu_import)
    bpy.types.TOPBAR_MT_file_export.append(_menu_export)


def unregister():
    bpy.types.TOPBAR_MT_file_export.remove(_menu_export)
    bpy.types.TOPBAR_MT_file_import.remove(_menu_import)
    for c in reversed(_classes):
        bpy.utils.unregister_class(c)
