"""File › Import / Export entries for Wallpaper Engine puppets/models (`.mdl`), textures (`.tex`) and projects
(`project.json` / `scene.json`: import, and export of an imported one).
Thin: options map to `blender_io` arguments; errors become reports. Drag and drop handlers come from the
registry (the application builds them), not from here."""
from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, StringProperty
from bpy.types import Operator
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ..blender.ops_common import ExportFile, ImportFiles, file_operator, registrar
from . import FORMATS, blender_io, blender_project, convert, project

_PUPPET, _TEXTURE, _PROJECT = (next(s for s in FORMATS if s.name == n) for n in ("wepuppet", "wetex", "weproject"))


@file_operator(_PUPPET.extensions, several=True)
class ImportWEPuppet(ImportFiles, Operator, ImportHelper):
    """Import a Wallpaper Engine puppet or model (.mdl)"""
    bl_idname = "import_scene.skinbridge_wepuppet"
    bl_label = "Import Wallpaper Engine puppet"
    bl_options = {"REGISTER", "UNDO", "PRESET"}
    scale: FloatProperty(name="Scale", description="Blender metres per image pixel (0.01: 100 px = 1 m)",
                         default=convert.DEFAULT_SCALE, min=1e-6, soft_max=1.0)

    def import_one(self, context, path: str) -> list[str]:
        return blender_io.import_wepuppet(context, path, self.scale).warnings


@file_operator(_PUPPET.extensions, _PUPPET.options, collection=True)
class ExportWEPuppet(ExportFile, Operator, ExportHelper):
    """Export the visible armature and meshes as a Wallpaper Engine puppet (.mdl)"""
    bl_idname = "export_scene.skinbridge_wepuppet"
    bl_label = "Export Wallpaper Engine puppet"
    bl_options = {"PRESET"}
    layout_format: EnumProperty(
        name="Format",
        items=[("KEEP", "As imported / narrow MDLV0013",
                "The imported file's MDLV and section versions; new models: MDLV0013 with 52-byte vertices"),
               ("WIDE", "Wide (MDLV0023, experimental)",
                "80-byte vertices, format 0x0180000F. Unverified against Wallpaper Engine: the reference and the "
                "seed disagree on the v17+ header and no v17+ file was available")],
        default="KEEP")
    scale: FloatProperty(name="Scale", description="Blender metres per image pixel; 0 = as imported (else 0.01)",
                         default=0.0, min=0.0)
    selected_only: BoolProperty(name="Selected only", default=False)
    project_files: BoolProperty(name="Write project files",
                                description="Also models/<name>.json, materials/<name>.tex and a material .json",
                                default=False)

    def export(self, context) -> list[str]:
        return blender_io.export_wepuppet(context, self.filepath, wide=self.layout_format == "WIDE",
                                          scale=self.scale or None, selected_only=self.selected_only,
                                          project_files=self.project_files)


@file_operator(_TEXTURE.extensions, several=True)
class ImportWETexture(ImportFiles, Operator, ImportHelper):
    """Import a Wallpaper Engine texture (.tex) as a packed image (a sprite sheet or GIF: an image sequence)"""
    bl_idname = "import_scene.skinbridge_wetex"
    bl_label = "Import Wallpaper Engine texture"
    bl_options = {"REGISTER", "UNDO"}

    def import_one(self, context, path: str) -> list[str]:
        return blender_io.import_texture(context, path)[1]


@file_operator(_TEXTURE.extensions)
class ExportWETexture(ExportFile, Operator, ExportHelper):
    """Export an image as a Wallpaper Engine texture: the one named, else the image editor's, else the active
    material's, else the only image imported from a .tex"""
    bl_idname = "export_scene.skinbridge_wetex"
    bl_label = "Export Wallpaper Engine texture"
    image: StringProperty(name="Image", default="",
                          description="The Blender image to write. Empty: the image editor's image, else the active "
                                      "material's, else the only image imported from a .tex")
    lz4: BoolProperty(name="LZ4", description="Compress the mips with LZ4 where it helps", default=False)

    def draw(self, context):
        self.layout.prop_search(self, "image", bpy.data, "images")
        self.layout.prop(self, "lz4")

    def export(self, context) -> list[str]:
        image = blender_io.texture_to_export(context, self.image)
        return blender_io.export_texture(image, self.filepath, self.lz4)


@file_operator(_PROJECT.extensions, several=True)
class ImportWEProject(ImportFiles, Operator, ImportHelper):
    """Import a Wallpaper Engine project (project.json or scene.json): camera, images, puppets and models placed
    as its layers"""
    bl_idname = "import_scene.skinbridge_weproject"
    bl_label = "Import Wallpaper Engine project"
    bl_options = {"REGISTER", "UNDO"}
    scale: FloatProperty(name="Scale", description="Blender metres per scene pixel (0.01: 100 px = 1 m)",
                         default=convert.DEFAULT_SCALE, min=1e-6, soft_max=1.0)

    def import_one(self, context, path: str) -> list[str]:
        return blender_project.import_project(context, path, self.scale).warnings


@file_operator(_PROJECT.extensions)
class ExportWEProject(ExportFile, Operator, ExportHelper):
    """Write the imported Wallpaper Engine project back (project.json, scene.json, its models, materials and
    textures): unchanged files as they were, places, animation layers and models changed in Blender written anew"""
    bl_idname = "export_scene.skinbridge_weproject"
    bl_label = "Export Wallpaper Engine project"
    filename_ext = ".json"

    def invoke(self, context, event):
        self.filepath = project.PROJECT_FILE  # Wallpaper Engine opens a folder by this name
        return ExportHelper.invoke(self, context, event)

    def export(self, context) -> list[str]:
        return blender_project.export_project(context, self.filepath)[1]


register, unregister = registrar(
    [ImportWEPuppet, ExportWEPuppet, ImportWETexture, ExportWETexture, ImportWEProject, ExportWEProject],
    imports=[(ImportWEPuppet, "Wallpaper Engine puppet (.mdl)"), (ImportWETexture, "Wallpaper Engine texture (.tex)"),
             (ImportWEProject, "Wallpaper Engine project (project.json, scene.json)")],
    exports=[(ExportWEPuppet, "Wallpaper Engine puppet (.mdl)"), (ExportWETexture, "Wallpaper Engine texture (.tex)"),
             (ExportWEProject, "Wallpaper Engine project (project.json)")])
