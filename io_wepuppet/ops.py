"""File › Import / Export entries for Wallpaper Engine puppets/models (`.mdl`) and textures (`.tex`).
Thin: options map to `blender_io` arguments; errors become reports. Drag and drop handlers come from the
registry (the application builds them), not from here."""
from __future__ import annotations

from bpy.props import BoolProperty, CollectionProperty, EnumProperty, FloatProperty, StringProperty
from bpy.types import Operator, OperatorFileListElement
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ..blender.ops_common import export_reporting, import_each, registrar
from ..core.errors import ExportError
from . import blender_io, convert


class ImportWEPuppet(Operator, ImportHelper):
    """Import a Wallpaper Engine puppet or model (.mdl)"""
    bl_idname = "import_scene.skinbridge_wepuppet"
    bl_label = "Import Wallpaper Engine puppet"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    filename_ext = ".mdl"
    filter_glob: StringProperty(default="*.mdl", options={"HIDDEN"})
    files: CollectionProperty(type=OperatorFileListElement, options={"HIDDEN", "SKIP_SAVE"})
    directory: StringProperty(subtype="DIR_PATH", options={"HIDDEN", "SKIP_SAVE"})
    scale: FloatProperty(name="Scale", description="Blender metres per image pixel (0.01: 100 px = 1 m)",
                         default=convert.DEFAULT_SCALE, min=1e-6, soft_max=1.0)

    def execute(self, context):
        return import_each(self, lambda path: blender_io.import_wepuppet(context, path, self.scale))


class ExportWEPuppet(Operator, ExportHelper):
    """Export the visible armature and meshes as a Wallpaper Engine puppet (.mdl)"""
    bl_idname = "export_scene.skinbridge_wepuppet"
    bl_label = "Export Wallpaper Engine puppet"
    bl_options = {"PRESET"}

    filename_ext = ".mdl"
    filter_glob: StringProperty(default="*.mdl", options={"HIDDEN"})
    collection: StringProperty(options={"HIDDEN"})  # a Collection Exporter: exactly that collection
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

    def execute(self, context):
        return export_reporting(self, lambda: blender_io.export_wepuppet(
            context, self.filepath, wide=self.layout_format == "WIDE", scale=self.scale or None,
            selected_only=self.selected_only, project_files=self.project_files))


class ImportWETexture(Operator, ImportHelper):
    """Import a Wallpaper Engine texture (.tex) as a packed image"""
    bl_idname = "import_scene.skinbridge_wetex"
    bl_label = "Import Wallpaper Engine texture"
    bl_options = {"REGISTER", "UNDO"}

    filename_ext = ".tex"
    filter_glob: StringProperty(default="*.tex", options={"HIDDEN"})
    files: CollectionProperty(type=OperatorFileListElement, options={"HIDDEN", "SKIP_SAVE"})
    directory: StringProperty(subtype="DIR_PATH", options={"HIDDEN", "SKIP_SAVE"})

    def execute(self, context):
        class _R:
            def __init__(self, warnings):
                self.warnings = warnings

        return import_each(self, lambda path: _R(blender_io.import_texture(context, path)[1]))


class ExportWETexture(Operator, ExportHelper):
    """Export the active image (image editor, else the first material image) as a Wallpaper Engine texture"""
    bl_idname = "export_scene.skinbridge_wetex"
    bl_label = "Export Wallpaper Engine texture"

    filename_ext = ".tex"
    filter_glob: StringProperty(default="*.tex", options={"HIDDEN"})
    lz4: BoolProperty(name="LZ4", description="Compress the mips with LZ4 where it helps", default=False)

    def execute(self, context):
        def run():
            space = getattr(context, "space_data", None)
            image = getattr(space, "image", None) if space is not None else None
            if image is None:
                meshes = [ob for ob in context.view_layer.objects if ob.type == "MESH"]
                image = blender_io._first_image(meshes)
            if image is None:
                raise ExportError("no image to export")
            blender_io.export_texture(image, self.filepath, self.lz4)
            return []

        return export_reporting(self, run)


register, unregister = registrar(
    [ImportWEPuppet, ExportWEPuppet, ImportWETexture, ExportWETexture],
    imports=[(ImportWEPuppet, "Wallpaper Engine puppet (.mdl)"), (ImportWETexture, "Wallpaper Engine texture (.tex)")],
    exports=[(ExportWEPuppet, "Wallpaper Engine puppet (.mdl)"), (ExportWETexture, "Wallpaper Engine texture (.tex)")])
