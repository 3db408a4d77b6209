"""File › Import / Export "Valve SMD (.smd, .vta)" and "Valve DMX (.dmx)"."""
from __future__ import annotations

import os
from types import SimpleNamespace

import bpy
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ..blender.ops_common import ExportFile, ImportFiles, file_operator, option_values, registrar
from ..blender.selection import find_armature
from . import FORMATS
from .dmx import blender_io as dmx_io
from .smd import blender_io as smd_io

_SMD, _DMX = (next(s for s in FORMATS if s.name == n) for n in ("smd", "dmx"))


class _TargetExport(ExportFile):
    """An export that writes what `convert --to <target>` writes, through the same `export_target`: the files go
    into the chosen file's folder, named by its stem, with the operator's values of the spec's options (so the
    two give the same bytes)."""

    spec = None  # the FormatSpec exported

    def export(self, context) -> list[str]:
        folder, base = os.path.split(self.filepath)
        options = SimpleNamespace(**option_values(self, self.spec.options))
        return self.spec.get("export_target")(context, folder or ".", os.path.splitext(base)[0], options)[1]


def _importer(spec, label: str, doc: str, import_one) -> type:
    """File › Import of `spec`'s files, several at once, each through `import_one(context, path)` (its warnings);
    an ExportError (an animation, VTA or motion with nothing to go onto) fails that file only (`import_each`)."""
    body = {"__doc__": doc, "bl_idname": spec.import_operator, "bl_label": label, "bl_options": {"REGISTER", "UNDO"},
            "import_one": lambda self, context, path: import_one(context, path)}
    category, _, name = spec.import_operator.partition(".")
    cls = type(f"{category.upper()}_OT_{name}", (ImportFiles, bpy.types.Operator, ImportHelper), body)
    return file_operator(spec.extensions, several=True)(cls)


def _import_dmx(context, path: str) -> list[str]:
    """A model with its animations; a file of animations only onto the selected armature, when there is one."""
    arm = find_armature(context)  # first: with no armature the file is not read twice (walkn: 0.1 s)
    if arm is not None and dmx_io.motion_only(path):
        return dmx_io.load_motion(context, path, arm)
    return dmx_io.blender_import(context, path)


IMPORT_SCENE_OT_skinbridge_smd = _importer(
    _SMD, "Import Valve SMD", "Import Valve SMD reference meshes, animations (onto the selected or only armature) "
    "and VTA flex shapes", smd_io.import_file)
IMPORT_SCENE_OT_skinbridge_dmx = _importer(
    _DMX, "Import Valve DMX", "Import Valve DMX models with their animations; a file of animations only goes onto "
    "the selected armature", _import_dmx)


@file_operator(_SMD.extensions, _SMD.options, collection=True)  # a Collection Exporter: exactly that collection
class EXPORT_SCENE_OT_skinbridge_smd(_TargetExport, bpy.types.Operator, ExportHelper):
    """Export the visible model at rest as a reference SMD; optionally each action as an animation SMD and the
    shape keys as a VTA beside it (a .vta file name writes the VTA alone)"""

    bl_idname = "export_scene.skinbridge_smd"
    bl_label = "Export Valve SMD"
    bl_options = {"PRESET"}
    spec = _SMD

    def export(self, context) -> list[str]:
        if self.filepath.lower().endswith(".vta"):
            return smd_io.export_flex_only(context, self.filepath, self.flavour)
        return super().export(context)


@file_operator(_DMX.extensions, _DMX.options, collection=True)  # a Collection Exporter: exactly that collection
class EXPORT_SCENE_OT_skinbridge_dmx(_TargetExport, bpy.types.Operator, ExportHelper):
    """Export the visible model as <name>.dmx, each action of its armature as <action>.dmx, and <name>.qc"""

    bl_idname = "export_scene.skinbridge_dmx"
    bl_label = "Export Valve DMX"
    bl_options = {"PRESET"}
    spec = _DMX


register, unregister = registrar(
    (IMPORT_SCENE_OT_skinbridge_smd, EXPORT_SCENE_OT_skinbridge_smd, IMPORT_SCENE_OT_skinbridge_dmx,
     EXPORT_SCENE_OT_skinbridge_dmx),
    imports=[(IMPORT_SCENE_OT_skinbridge_smd, "Valve SMD (.smd, .vta)"),
             (IMPORT_SCENE_OT_skinbridge_dmx, "Valve DMX (.dmx)")],
    exports=[(EXPORT_SCENE_OT_skinbridge_smd, "Valve SMD (.smd, .vta)"),
             (EXPORT_SCENE_OT_skinbridge_dmx, "Valve DMX (.dmx)")],
)
