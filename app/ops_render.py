"""Render › SkinBridge Contact Sheet: the `skinbridge render` sheet of the active armature, from Blender's UI.

The operator only reads the user's scene: `render.render_sheet` draws in a temporary scene and puts back the
pose position, action and frame it touched.
"""
from __future__ import annotations

import os

import bpy
from bpy.props import EnumProperty, IntProperty, StringProperty
from bpy_extras.io_utils import ExportHelper

from ..blender.ops_common import protect_scene_files
from ..blender.translations import translate
from ..blender.selection import armature_of
from ..core.fileio import output_session
from . import render


def _armature(context):
    return armature_of(context.active_object)


class SKINBRIDGE_OT_render_sheet(bpy.types.Operator, ExportHelper):
    """Render a PNG contact sheet of the active armature: its meshes with the bones drawn over them, front, side
    and top views, at Rest Position or at frames of an action"""

    bl_idname = "skinbridge.render_sheet"
    bl_label = "SkinBridge Contact Sheet"
    bl_options = {"REGISTER"}
    filename_ext = ".png"
    filter_glob: StringProperty(default="*.png", options={"HIDDEN"})
    pose: EnumProperty(name="Pose", items=[("REST", "Rest Position", "The armature's Rest Position"),
                                           ("FRAMES", "Frames", "The pose at each frame of the range")],
                       default="REST")
    frame_start: IntProperty(name="First Frame", default=1)
    frame_end: IntProperty(name="Last Frame", default=1)
    frame_step: IntProperty(name="Step", default=1, min=1)
    action: StringProperty(name="Action", default="", description="Pose with this action (empty: as assigned)")
    views: StringProperty(name="Views", default="front,side,top", description="Comma-separated: front, side, top")

    @classmethod
    def poll(cls, context):
        return _armature(context) is not None

    def invoke(self, context, event):
        arm = _armature(context)
        self.filepath = bpy.path.ensure_ext(f"{arm.name}_sheet" if arm else "sheet", ".png")
        self.frame_start = self.frame_end = context.scene.frame_current
        return super().invoke(context, event)

    def execute(self, context):
        arm = _armature(context)
        if arm is None:
            self.report({"ERROR"}, translate("no active armature"))
            return {"CANCELLED"}
        frames = None
        if self.pose == "FRAMES":
            frames = list(range(self.frame_start, self.frame_end + 1, self.frame_step))
            if not frames or len(frames) > render.MAX_FRAMES:
                self.report({"ERROR"}, translate(f"choose 1 to {render.MAX_FRAMES} frames"))
                return {"CANCELLED"}
        views = [v.strip() for v in self.views.split(",") if v.strip()]
        title = os.path.basename(bpy.data.filepath) or arm.name

        try:
            sheet = render.render_sheet(context, arm, frames=frames, action=self.action or None, views=views,
                                        title=f"{title}: {arm.name}")
            with output_session() as session:  # never onto the .blend or a texture the scene uses
                protect_scene_files(session)
                render.write_sheet(sheet, self.filepath)
        except (ValueError, OSError, RuntimeError) as e:
            self.report({"ERROR"}, translate(str(e)))
            return {"CANCELLED"}
        self.report({"INFO"}, translate(f"Contact sheet written to {self.filepath} ({sheet.seconds:.1f} s)"))
        return {"FINISHED"}


def _menu(self, context):
    self.layout.operator(SKINBRIDGE_OT_render_sheet.bl_idname, text="SkinBridge Contact Sheet…")


_CLASSES = (SKINBRIDGE_OT_render_sheet,)


def register():
    for cls in _CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.TOPBAR_MT_render.append(_menu)


def unregister():
    bpy.types.TOPBAR_MT_render.remove(_menu)
    for cls in reversed(_CLASSES):
        bpy.utils.unregister_class(cls)
