"""File › Import / Export entries for Wallpaper Engine puppets/models (`.mdl`), textures (`.tex`) and projects
(`project.json` / `scene.json`: import, and export of an imported one).
Thin: the properties are the specs' options (io_wepuppet/__init__.py), passed by name to the parts' `blender_io`
functions, the same ones `convert` runs; errors become reports. Drag and drop handlers come from the registry
(the application builds them), not from here."""
from __future__ import annotations

import bpy
from bpy.props import BoolProperty, StringProperty
from bpy.types import Operator
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ..blender.ops_common import ExportFile, ImportFiles, file_operator, option_values, registrar
from . import FORMATS
from .project import blender_io as project_io
from .project.project import PROJECT_FILE
from .puppet import blender_io as puppet_io
from .texture import blender_io as texture_io

_PUPPET, _TEXTURE, _PROJECT = (next(s for s in FORMATS if s.name == n) for n in ("wepuppet", "wetex", "weproject"))


@file_operator(_PUPPET.extensions, _PUPPET.import_options, several=True)
class ImportWEPuppet(ImportFiles, Operator, ImportHelper):
    """Import a Wallpaper Engine puppet or model (.mdl)"""
    bl_idname = "import_scene.skinbridge_wepuppet"
    bl_label = "Import Wallpaper Engine puppet"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    def import_one(self, context, path: str) -> list[str]:
        return puppet_io.import_wepuppet(context, path, **option_values(self, _PUPPET.import_options)).warnings


@file_operator(_PUPPET.extensions, _PUPPET.options, collection=True)
class ExportWEPuppet(ExportFile, Operator, ExportHelper):
    """Export the visible armature and meshes as a Wallpaper Engine puppet (.mdl)"""
    bl_idname = "export_scene.skinbridge_wepuppet"
    bl_label = "Export Wallpaper Engine puppet"
    bl_options = {"PRESET"}
    selected_only: BoolProperty(name="Selected only", default=False)

    def export(self, context) -> list[str]:
        values = option_values(self, _PUPPET.options)
        return puppet_io.export_wepuppet(context, self.filepath, **values, selected_only=self.selected_only)


@file_operator(_TEXTURE.extensions, several=True)
class ImportWETexture(ImportFiles, Operator, ImportHelper):
    """Import a Wallpaper Engine texture (.tex) as a packed image (a sprite sheet or GIF: an image sequence)"""
    bl_idname = "import_scene.skinbridge_wetex"
    bl_label = "Import Wallpaper Engine texture"
    bl_options = {"REGISTER", "UNDO"}

    def import_one(self, context, path: str) -> list[str]:
        return texture_io.import_texture(context, path)[1]


@file_operator(_TEXTURE.extensions, _TEXTURE.options)
class ExportWETexture(ExportFile, Operator, ExportHelper):
    """Export an image as a Wallpaper Engine texture: the one named, else the image editor's, else the active
    material's, else the only image imported from a .tex"""
    bl_idname = "export_scene.skinbridge_wetex"
    bl_label = "Export Wallpaper Engine texture"
    image: StringProperty(name="Image", default="",
                          description="The Blender image to write. Empty: the image editor's image, else the active "
                                      "material's, else the only image imported from a .tex")

    def draw(self, context):
        self.layout.prop_search(self, "image", bpy.data, "images")
        for o in _TEXTURE.options:
            self.layout.prop(self, o.name)

    def export(self, context) -> list[str]:
        image = texture_io.texture_to_export(context, self.image)
        return texture_io.export_texture(image, self.filepath, **option_values(self, _TEXTURE.options))


@file_operator(_PROJECT.extensions, _PROJECT.import_options, several=True)
class ImportWEProject(ImportFiles, Operator, ImportHelper):
    """Import a Wallpaper Engine project (project.json or scene.json): camera, images, puppets and models placed
    as its layers"""
    bl_idname = "import_scene.skinbridge_weproject"
    bl_label = "Import Wallpaper Engine project"
    bl_options = {"REGISTER", "UNDO"}

    def import_one(self, context, path: str) -> list[str]:
        return project_io.import_project(context, path, **option_values(self, _PROJECT.import_options)).warnings


@file_operator(_PROJECT.extensions, _PROJECT.options, collection=True)
class ExportWEProject(ExportFile, Operator, ExportHelper):
    """Write the imported Wallpaper Engine project back (project.json, scene.json, its models, materials and
    textures): unchanged files as they were, places, animation layers and models changed in Blender written anew"""
    bl_idname = "export_scene.skinbridge_weproject"
    bl_label = "Export Wallpaper Engine project"
    filename_ext = ".json"

    def invoke(self, context, event):
        self.filepath = PROJECT_FILE  # Wallpaper Engine opens a folder by this name
        return ExportHelper.invoke(self, context, event)

    def export(self, context) -> list[str]:
        # a Collection Exporter's collection: its project (or model) alone, never the active object's project
        packed = option_values(self, _PROJECT.options)["package"]  # scene.pkg, project.json and preview beside it
        write = project_io.export_packed if packed else project_io.export_project
        return write(context, self.filepath, collection=self.collection or None)[1]


register, unregister = registrar(
    [ImportWEPuppet, ExportWEPuppet, ImportWETexture, ExportWETexture, ImportWEProject, ExportWEProject],
    imports=[(ImportWEPuppet, "Wallpaper Engine puppet (.mdl)"), (ImportWETexture, "Wallpaper Engine texture (.tex)"),
             (ImportWEProject, "Wallpaper Engine project (project.json, scene.json)")],
    exports=[(ExportWEPuppet, "Wallpaper Engine puppet (.mdl)"), (ExportWETexture, "Wallpaper Engine texture (.tex)"),
             (ExportWEProject, "Wallpaper Engine project (project.json)")])
