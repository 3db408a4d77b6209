"""File › Import / Export "Valve SMD (.smd, .vta)"."""
from __future__ import annotations

import os

import bpy
from bpy.props import BoolProperty, CollectionProperty, EnumProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ..blender.ops_common import export_reporting, import_each, registrar


class _Result:
    def __init__(self, warnings):
        self.warnings = warnings


class IMPORT_SCENE_OT_skinbridge_smd(bpy.types.Operator, ImportHelper):
    """Import Valve SMD reference meshes, animations (onto the selected or only armature) and VTA flex shapes"""

    bl_idname = "import_scene.skinbridge_smd"
    bl_label = "Import Valve SMD"
    bl_options = {"REGISTER", "UNDO"}
    filename_ext = ".smd"
    filter_glob: StringProperty(default="*.smd;*.vta", options={"HIDDEN"})
    files: CollectionProperty(type=bpy.types.OperatorFileListElement, options={"HIDDEN", "SKIP_SAVE"})
    directory: StringProperty(subtype="DIR_PATH", options={"HIDDEN", "SKIP_SAVE"})

    def execute(self, context):
        from ..core.errors import ExportError
        from . import blender_io

        def one(path):
            try:
                return _Result(blender_io.import_file(context, path))
            except ExportError as e:  # no target for an animation or a VTA
                from ..core.errors import FormatError

                raise FormatError(str(e)) from None

        return import_each(self, one)


class EXPORT_SCENE_OT_skinbridge_smd(bpy.types.Operator, ExportHelper):
    """Export the visible model at rest as a reference SMD; optionally each action as an animation SMD and the
    shape keys as a VTA beside it (a .vta file name writes the VTA alone)"""

    bl_idname = "export_scene.skinbridge_smd"
    bl_label = "Export Valve SMD"
    bl_options = {"PRESET"}
    filename_ext = ".smd"
    filter_glob: StringProperty(default="*.smd;*.vta", options={"HIDDEN"})
    collection: StringProperty(options={"HIDDEN"})  # a Collection Exporter: exactly that collection
    animations: BoolProperty(name="Animations", default=False,
                             description="Write each action of the armature as <action>.smd in the same folder")
    flex: BoolProperty(name="Shape Keys (VTA)", default=True,
                       description="Write the shape keys as <name>.vta beside the reference")
    flavour: EnumProperty(name="Flavour", default="AUTO", items=(
        ("AUTO", "As Read", "The flavour the mesh was imported in (Source for new meshes)"),
        ("SOURCE", "Source", "Link columns on every vertex line, LF line ends"),
        ("GOLDSRC", "GoldSrc", "No link columns (each corner on its heaviest bone), CRLF line ends")))

    def execute(self, context):
        from . import blender_io

        def run():
            path = self.filepath
            folder, stem = os.path.dirname(path), os.path.splitext(os.path.basename(path))[0]
            if path.lower().endswith(".vta"):
                return blender_io.export_flex_only(context, path)
            warnings = blender_io.export_reference(context, path, os.path.join(folder, stem + ".vta")
                                                   if self.flex else None, self.flavour)
            if self.animations:
                from ..blender.scene import exportable_objects

                _, arm_ob = exportable_objects(context)
                if arm_ob is not None:
                    warnings += blender_io.export_animations(context, folder, arm_ob)[1]
            return warnings

        return export_reporting(self, run)


register, unregister = registrar(
    (IMPORT_SCENE_OT_skinbridge_smd, EXPORT_SCENE_OT_skinbridge_smd),
    imports=[(IMPORT_SCENE_OT_skinbridge_smd, "Valve SMD (.smd, .vta)")],
    exports=[(EXPORT_SCENE_OT_skinbridge_smd, "Valve SMD (.smd, .vta)")],
)
