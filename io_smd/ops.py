"""File › Import / Export "Valve SMD (.smd, .vta)" and "Valve DMX (.dmx)"."""
from __future__ import annotations

import os

import bpy
from bpy.props import BoolProperty, EnumProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ..blender import action as bact
from ..blender.ops_common import ExportFile, ImportFiles, file_operator, registrar
from ..core.errors import ExportError, FormatError
from . import FORMATS, blender_dmx, blender_io
from ..blender.scene import exportable_objects
from ..blender.selection import find_armature

_SMD = FORMATS[0]
_DMX = FORMATS[1]


@file_operator(_SMD.extensions, several=True)
class IMPORT_SCENE_OT_skinbridge_smd(ImportFiles, bpy.types.Operator, ImportHelper):
    """Import Valve SMD reference meshes, animations (onto the selected or only armature) and VTA flex shapes"""

    bl_idname = "import_scene.skinbridge_smd"
    bl_label = "Import Valve SMD"
    bl_options = {"REGISTER", "UNDO"}

    def import_one(self, context, path: str) -> list[str]:
        try:
            return blender_io.import_file(context, path)
        except ExportError as e:  # no target for an animation or a VTA: a failure of this file
            raise FormatError(str(e)) from None


@file_operator(_SMD.extensions, collection=True)  # a Collection Exporter: exactly that collection
class EXPORT_SCENE_OT_skinbridge_smd(ExportFile, bpy.types.Operator, ExportHelper):
    """Export the visible model at rest as a reference SMD; optionally each action as an animation SMD and the
    shape keys as a VTA beside it (a .vta file name writes the VTA alone)"""

    bl_idname = "export_scene.skinbridge_smd"
    bl_label = "Export Valve SMD"
    bl_options = {"PRESET"}
    animations: BoolProperty(name="Animations", default=False,
                             description="Write each action of the armature as <action>.smd in the same folder")
    flex: BoolProperty(name="Shape Keys (VTA)", default=True,
                       description="Write the shape keys as <name>.vta beside the reference")
    write_qc: BoolProperty(name="QC", default=True,
                           description="Write <name>.qc beside the files, naming them and each animation's fps")
    flavour: EnumProperty(name="Flavour", default="AUTO", items=(
        ("AUTO", "As Read", "The flavour the mesh was imported in (Source for new meshes)"),
        ("SOURCE", "Source", "Link columns on every vertex line, LF line ends"),
        ("GOLDSRC", "GoldSrc", "No link columns (each corner on its heaviest bone), CRLF line ends")))

    def export(self, context) -> list[str]:
        path = self.filepath
        folder, stem = os.path.dirname(path), os.path.splitext(os.path.basename(path))[0]
        if path.lower().endswith(".vta"):
            return blender_io.export_flex_only(context, path)
        vta: list[str] = []
        warnings = blender_io.export_reference(context, path, os.path.join(folder, stem + ".vta")
                                               if self.flex else None, self.flavour, vta)
        sequences: list[tuple[str, str, float]] = []
        if self.animations:
            _, arm_ob = exportable_objects(context)
            if arm_ob is not None:
                warnings += blender_io.export_animations(context, folder, arm_ob, sequences=sequences)[1]
        if self.write_qc:
            blender_io.write_qc(folder, stem + ".qc", path, vta[0] if vta else None, sequences,
                                bact.fps_of(context.scene))
        return warnings


@file_operator(_DMX.extensions, several=True)
class IMPORT_SCENE_OT_skinbridge_dmx(ImportFiles, bpy.types.Operator, ImportHelper):
    """Import Valve DMX models with their animations; a file of animations only goes onto the selected armature"""

    bl_idname = "import_scene.skinbridge_dmx"
    bl_label = "Import Valve DMX"
    bl_options = {"REGISTER", "UNDO"}

    def import_one(self, context, path: str) -> list[str]:
        try:
            arm = find_armature(context) if blender_dmx.motion_only(path) else None
            if arm is not None:
                return blender_dmx.load_motion(context, path, arm)
            return blender_dmx.blender_import(context, path)
        except ExportError as e:  # the motion matches no bone of the chosen armature: a failure of this file
            raise FormatError(str(e)) from None


@file_operator(_DMX.extensions, _DMX.options, collection=True)  # a Collection Exporter: exactly that collection
class EXPORT_SCENE_OT_skinbridge_dmx(ExportFile, bpy.types.Operator, ExportHelper):
    """Export the visible model as <name>.dmx, each action of its armature as <action>.dmx, and <name>.qc"""

    bl_idname = "export_scene.skinbridge_dmx"
    bl_label = "Export Valve DMX"
    bl_options = {"PRESET"}

    def export(self, context) -> list[str]:
        folder, base = os.path.split(self.filepath)
        return blender_dmx.export_target(context, folder or ".", os.path.splitext(base)[0], None)[1]


register, unregister = registrar(
    (IMPORT_SCENE_OT_skinbridge_smd, EXPORT_SCENE_OT_skinbridge_smd, IMPORT_SCENE_OT_skinbridge_dmx,
     EXPORT_SCENE_OT_skinbridge_dmx),
    imports=[(IMPORT_SCENE_OT_skinbridge_smd, "Valve SMD (.smd, .vta)"),
             (IMPORT_SCENE_OT_skinbridge_dmx, "Valve DMX (.dmx)")],
    exports=[(EXPORT_SCENE_OT_skinbridge_smd, "Valve SMD (.smd, .vta)"),
             (EXPORT_SCENE_OT_skinbridge_dmx, "Valve DMX (.dmx)")],
)
