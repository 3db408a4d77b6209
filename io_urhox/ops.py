"""File › Import / Export entries and drag-and-drop for UrhoX / Urho3D models (.mdl) and animations (.ani)."""
from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ..blender.ops_common import (ExportFile, ImportFiles, OptionsPopup, export_motions, file_operator,
                                  import_motions, option_values, registrar)
from ..blender.selection import armatures
from . import FORMATS, PROFILE
from .model import blender_io as model_io
from .model.blender_io import AXES_PROP
from .motion import blender_io as motion_io

_MODEL, _ANIMATION = (next(s for s in FORMATS if s.name == n) for n in ("umd2", "uani"))
_MODEL_OPTIONS = tuple(o for o in _MODEL.options if o.name != "ani_format")  # the model operator writes no animation


@file_operator(_MODEL.extensions, _MODEL.import_options, several=True)
class IMPORT_SCENE_OT_skinbridge_urhox(ImportFiles, OptionsPopup, bpy.types.Operator, ImportHelper):
    """Import an UrhoX / Urho3D model (UMD2, UMDL, UMD3)"""

    bl_idname = "import_scene.skinbridge_urhox"
    bl_label = "Import UrhoX / Urho3D Model"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    def import_one(self, context, path: str) -> list[str]:
        return model_io.import_mdl(context, path, **option_values(self, _MODEL.import_options)).warnings


@file_operator(_MODEL.extensions, _MODEL_OPTIONS, collection=True)
class EXPORT_SCENE_OT_skinbridge_urhox(ExportFile, bpy.types.Operator, ExportHelper):
    """Export the visible skinned meshes and their armature as an UrhoX / Urho3D model (UMD2)"""

    bl_idname = "export_scene.skinbridge_urhox"
    bl_label = "Export UrhoX / Urho3D Model"
    bl_options = {"PRESET"}
    selected_only: BoolProperty(name="Selected Only", default=False)

    def invoke(self, context, event):
        self._follow_import(context)  # before the preferred values, so that the file browser shows it
        return super().invoke(context, event)

    def _follow_import(self, context) -> None:
        """Profile not chosen by the caller: the one the model was imported with (its axes and layout), so that
        the model fits the animations exported with it (each in its own layout, below)."""
        if not self.properties.is_property_set("profile", ghost=False):
            self.profile = model_io.imported_profile(context, self.selected_only) or PROFILE.default

    def export(self, context) -> list[str]:
        self._follow_import(context)
        return model_io.export_mdl(context, self.filepath, selected_only=self.selected_only,
                                   **option_values(self, _MODEL_OPTIONS))


# -- animations (.ani) ---------------------------------------------------------------------------------

def _read_axes(arm, profile: str) -> str:
    return profile if profile != "auto" else (arm.get(AXES_PROP) or "urhox")


@file_operator(_ANIMATION.extensions, _ANIMATION.import_options, several=True)
class IMPORT_ANIM_OT_skinbridge_urhox_ani(OptionsPopup, bpy.types.Operator, ImportHelper):
    """Import UrhoX / Urho3D animations (.ani) as actions of the active armature"""

    bl_idname = "import_anim.skinbridge_urhox_ani"
    bl_label = "Import UrhoX / Urho3D Animation"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    @classmethod
    def poll(cls, context):
        return bool(armatures(context))  # which one: decided (or refused, naming them) when it runs

    def execute(self, context):
        return import_motions(self, context, lambda path, arm: motion_io.import_ani(
            context, [path], arm, _read_axes(arm, self.profile)), "animation")


@file_operator((), _ANIMATION.options, collection=True)  # a folder is chosen: no file name ending
class EXPORT_ANIM_OT_skinbridge_urhox_ani(bpy.types.Operator):
    """Export the actions of the active armature to <folder>/Animations/<action>.ani"""

    bl_idname = "export_anim.skinbridge_urhox_ani"
    bl_label = "Export UrhoX / Urho3D Animations"
    bl_options = {"PRESET"}
    directory: StringProperty(subtype="DIR_PATH")
    filter_folder: BoolProperty(default=True, options={"HIDDEN"})
    which: EnumProperty(name="Actions", default="ALL",
                        items=[("ALL", "All", "Every action that animates the armature's bones"),
                               ("ACTIVE", "Active", "The armature's assigned action only")])

    @classmethod
    def poll(cls, context):
        return bool(armatures(context))

    def execute(self, context):
        return export_motions(self, context, lambda arm, act: self._export(context, arm, act), "animation",
                              "has no assigned action" if self.which == "ACTIVE" else None)

    def _profile(self, arm) -> str:
        """The axes the caller chose; not chosen: the ones the armature's model was imported with (the
        option's default for other armatures), so that the animations fit the model they came with."""
        if self.properties.is_property_set("profile", ghost=False):
            return self.profile
        return arm.get(AXES_PROP) or PROFILE.default

    def _format(self) -> str | None:
        """The layout the caller chose; not chosen: None, each action's own (the layout of the file it was
        imported from, else the one its axes' profile writes: classic UANI for Urho3D's, UANI v2 for UrhoX's)."""
        return self.ani_format if self.properties.is_property_set("ani_format", ghost=False) else None

    def _export(self, context, arm, act) -> tuple[str, list[str]]:
        written, warnings = motion_io.export_actions(context, self.directory, arm, self._format(),
                                                     self._profile(arm), None if act is None else [act])
        return f"{sum(p.endswith('.ani') for p in written)} animation(s) written", warnings

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}


_CLASSES = (IMPORT_SCENE_OT_skinbridge_urhox, EXPORT_SCENE_OT_skinbridge_urhox, IMPORT_ANIM_OT_skinbridge_urhox_ani,
            EXPORT_ANIM_OT_skinbridge_urhox_ani)

register, unregister = registrar(
    _CLASSES,
    imports=[(IMPORT_SCENE_OT_skinbridge_urhox, "UrhoX / Urho3D model (.mdl)"),
             (IMPORT_ANIM_OT_skinbridge_urhox_ani, "UrhoX / Urho3D animation (.ani)")],
    exports=[(EXPORT_SCENE_OT_skinbridge_urhox, "UrhoX / Urho3D model (.mdl)"),
             (EXPORT_ANIM_OT_skinbridge_urhox_ani, "UrhoX / Urho3D animations (.ani)")],
    aliases={"import_scene.urhox_mdl": IMPORT_SCENE_OT_skinbridge_urhox,  # the ids of earlier versions
             "export_scene.urhox_mdl": EXPORT_SCENE_OT_skinbridge_urhox,
             "import_scene.urhox_ani": IMPORT_ANIM_OT_skinbridge_urhox_ani,
             "export_scene.urhox_ani": EXPORT_ANIM_OT_skinbridge_urhox_ani},
)
