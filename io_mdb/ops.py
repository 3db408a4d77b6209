"""File › Import / Export "Neverwinter Nights 2 model (.mdb)", File › Import / Export of GR2 skeletons and
animations, and the object panel showing what an MDB keeps.

Drag and drop is built by the application from the format registry (io_mdb.FORMATS)."""
from __future__ import annotations

import os

import bpy
from bpy.props import BoolProperty, EnumProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ..blender.ops_common import (ExportFile, OptionsPopup, file_operator, import_each, option_values,
                                  preferred_folders, registrar)
from ..blender.selection import find_armature
from ..blender.translations import translate
from ..core.errors import FormatError
from . import EXPORT_OPTIONS, FORMATS, OPTIONS
from .archive import archive
from .gr2 import blender_io as gr2_blender
from .mdb import blender_io as mdb_blender

_MDB, _GR2 = FORMATS
_SKELETON_PATH = next(o for o in OPTIONS if o.name == "skeleton_path")


@file_operator(_MDB.extensions, several=True)
class IMPORT_SCENE_OT_skinbridge_mdb(OptionsPopup, bpy.types.Operator, ImportHelper):
    """Import a Neverwinter Nights 2 model (.mdb): meshes, collision and walk meshes, hooks, hair/helm points"""

    bl_idname = "import_scene.skinbridge_mdb"
    bl_label = "Import Neverwinter Nights 2 Model"
    bl_options = {"REGISTER", "UNDO", "PRESET"}
    armature: StringProperty(name="Skeleton Armature", default="",
                             description="An armature of the model's GR2 skeleton: SKIN bone indices name its "
                                         "bones (attachment and face bones dropped, Ribcage last). Empty: vertex "
                                         "groups bone_<n>")
    skeleton_path: StringProperty(name="Skeleton Path", default="", subtype="DIR_PATH",
                                  description=_SKELETON_PATH.help[0].upper() + _SKELETON_PATH.help[1:])

    def draw(self, context):
        self.layout.prop_search(self, "armature", bpy.data, "objects")
        self.layout.prop(self, "skeleton_path")

    def execute(self, context):
        arm = bpy.data.objects.get(self.armature) if self.armature else None
        if self.armature and (arm is None or arm.type != "ARMATURE"):
            self.report({"ERROR"}, translate(f"{self.armature} is not an armature"))
            return {"CANCELLED"}
        # the MDB's own folder first (gr2/bind.py), then this operator's Skeleton Path, then the preferences' folders
        folders = [bpy.path.abspath(f) for f in self.skeleton_path.split(os.pathsep) if f.strip()]
        folders += preferred_folders(context, _SKELETON_PATH.name)
        return import_each(self, lambda path: mdb_blender.import_mdb(context, path, arm, folders))


# the members listed by the last archive chosen ({path: [names]}); Blender keeps no reference to the strings
# an EnumProperty's items callback returns, so they live here while the popup is open
LISTED: dict[str, list[tuple[str, str, str]]] = {}


def _member_items(self, context):
    return LISTED.get(self.filepath) or [("", "", "")]


@file_operator(archive.ARCHIVE_EXTENSIONS, several=True)
class IMPORT_SCENE_OT_skinbridge_nwn2_archive(bpy.types.Operator, ImportHelper):
    """Import an NWN2 model or skeleton from a hak pack, an ERF, a module or a Data zip, chosen from its members"""

    bl_idname = "import_scene.skinbridge_nwn2_archive"
    bl_label = "Import from NWN2 Archive"
    bl_options = {"REGISTER", "UNDO"}
    member: StringProperty(name="Member", default="", options={"SKIP_SAVE"},
                           description="The model or skeleton inside the archive (name.mdb or name.gr2); empty: "
                                       "chosen from the list of its members")
    listed: EnumProperty(name="Member", items=_member_items, options={"SKIP_SAVE"},
                         description="The .mdb and .gr2 files inside the archive")
    choosing: BoolProperty(default=False, options={"HIDDEN", "SKIP_SAVE"})
    skeleton_path: StringProperty(name="Skeleton Path", default="", subtype="DIR_PATH",
                                  description=_SKELETON_PATH.help[0].upper() + _SKELETON_PATH.help[1:])

    def invoke(self, context, event):
        if self.choosing:  # the archive was chosen: the list of its members
            return context.window_manager.invoke_props_dialog(self)
        return super().invoke(context, event)

    def draw(self, context):
        if self.choosing:
            self.layout.prop(self, "listed")
        self.layout.prop(self, "skeleton_path")

    def execute(self, context):
        member = self.member or (self.listed if self.choosing else "")
        if not member:
            try:
                names = archive.member_names(self.filepath)
            except (FormatError, OSError) as e:
                self.report({"ERROR"}, translate(f"{os.path.basename(self.filepath)}: {e}"))
                return {"CANCELLED"}
            if not names:
                self.report({"ERROR"}, translate(f"{os.path.basename(self.filepath)} holds no .mdb or .gr2 file"))
                return {"CANCELLED"}
            if len(names) > 1 and bpy.app.background:  # no popup to choose from
                self.report({"ERROR"}, translate(f"{os.path.basename(self.filepath)} holds {len(names)} models "
                                                 f"and skeletons: name one as Member ({', '.join(names[:5])})"))
                return {"CANCELLED"}
            if len(names) > 1:
                LISTED[self.filepath] = [(n, n, "") for n in names]
                bpy.ops.import_scene.skinbridge_nwn2_archive(
                    "INVOKE_DEFAULT", filepath=self.filepath, choosing=True, skeleton_path=self.skeleton_path)
                return {"FINISHED"}
            member = names[0]
        LISTED.pop(self.filepath, None)
        spec = f"{self.filepath}:{member}"
        self.filepath = spec  # import_each imports `filepath` (one member, not the files the browser
        self.files.clear()  # listed) and names it in its reports
        if member.lower().endswith(".gr2"):
            arm = find_armature(context)
            return import_each(self, lambda path: gr2_blender.import_file(context, path, arm))
        folders = [bpy.path.abspath(f) for f in self.skeleton_path.split(os.pathsep) if f.strip()]
        folders += preferred_folders(context, _SKELETON_PATH.name)
        return import_each(self, lambda path: mdb_blender.import_mdb(context, path, None, folders))


@file_operator(_MDB.extensions, EXPORT_OPTIONS, collection=True)
class EXPORT_SCENE_OT_skinbridge_mdb(ExportFile, bpy.types.Operator, ExportHelper):
    """Export the visible MDB objects (and hidden LODs) as a Neverwinter Nights 2 model (.mdb)"""

    bl_idname = "export_scene.skinbridge_mdb"
    bl_label = "Export Neverwinter Nights 2 Model"
    bl_options = {"PRESET"}

    def export(self, context) -> list[str]:
        coll = bpy.data.collections.get(self.collection) if self.collection else None
        return mdb_blender.export_mdb(context, self.filepath, coll, **option_values(self, EXPORT_OPTIONS))


@file_operator(_GR2.extensions, several=True)
class IMPORT_SCENE_OT_skinbridge_gr2(bpy.types.Operator, ImportHelper):
    """Import Granny 2 files (NWN2): a skeleton as an armature with its animations; an animation onto the
    chosen armature"""

    bl_idname = "import_scene.skinbridge_gr2"
    bl_label = "Import Granny 2 Skeleton or Animation (NWN2)"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        arm = find_armature(context)  # for animation files; None: they are refused, naming what to select
        return import_each(self, lambda path: gr2_blender.import_file(context, path, arm))


@file_operator(_GR2.extensions, collection=True)
class EXPORT_SCENE_OT_skinbridge_gr2(ExportFile, bpy.types.Operator, ExportHelper):
    """Export the model's armature as a GR2 skeleton and each of its actions as a GR2 animation beside it"""

    bl_idname = "export_scene.skinbridge_gr2"
    bl_label = "Export Granny 2 Skeleton and Animations (NWN2)"
    bl_options = {"PRESET"}

    def export(self, context) -> list[str]:
        folder, base = os.path.split(self.filepath)
        return gr2_blender.export_gr2(context, folder or ".", os.path.splitext(base)[0])[1]


class OBJECT_PT_nwn2_mdb(bpy.types.Panel):
    bl_label = "NWN2 MDB"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "object"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        ob = context.object
        return ob is not None and any(k.startswith("nwn2_") for k in ob.keys())

    def draw(self, context):
        ob = context.object
        for key in ("nwn2_skeleton", "nwn2_shortening", "nwn2_hiding"):
            if key in ob:
                self.layout.prop(ob, f'["{key}"]', text=key[5:].title())


register, unregister = registrar(
    (IMPORT_SCENE_OT_skinbridge_mdb, IMPORT_SCENE_OT_skinbridge_gr2, IMPORT_SCENE_OT_skinbridge_nwn2_archive,
     EXPORT_SCENE_OT_skinbridge_mdb, EXPORT_SCENE_OT_skinbridge_gr2, OBJECT_PT_nwn2_mdb),
    imports=[(IMPORT_SCENE_OT_skinbridge_mdb, "Neverwinter Nights 2 model (.mdb)"),
             (IMPORT_SCENE_OT_skinbridge_gr2, "Granny 2 skeleton or animation (NWN2) (.gr2)"),
             (IMPORT_SCENE_OT_skinbridge_nwn2_archive, "NWN2 model or skeleton from an archive (.hak, .zip)")],
    exports=[(EXPORT_SCENE_OT_skinbridge_mdb, "Neverwinter Nights 2 model (.mdb)"),
             (EXPORT_SCENE_OT_skinbridge_gr2, "NWN2 GR2 skeleton and animations (.gr2)")],
    aliases={"import_scene.nwn2_mdb": IMPORT_SCENE_OT_skinbridge_mdb,  # the ids of earlier versions
             "export_scene.nwn2_mdb": EXPORT_SCENE_OT_skinbridge_mdb},
)
