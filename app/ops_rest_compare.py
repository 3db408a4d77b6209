"""Rest Compare in the 3D view's SkinBridge sidebar: the operators that show and clear the overlay of
`rest_compare` and the panel with their settings, the colour legend and the `compare --rest` findings
(docs/rest_compare.md §2)."""
from __future__ import annotations

import bpy
from bpy.props import EnumProperty, FloatProperty, FloatVectorProperty, PointerProperty, StringProperty

from ..blender.sidebar_ui import SidebarPanel, plain_operator
from ..blender.translations import translate
from ..core import rest_overlay as ro
from ..core.compare import DEFAULT_ROT_TOL
from ..core.errors import FormatError
from . import rest_compare

MAX_PANEL_LINES = 12  # findings listed in the panel; the Info log has them all

_SOURCES = [("SELECTED", "Two Selected", "The two selected models (an armature or a mesh of each)"),
            ("FILE", "File", "A file of any format SkinBridge reads, against the active model")]
_LAYOUTS = [("SUPERIMPOSED", "Superimposed", "Both models where they are"),
            ("SIDE_BY_SIDE", "Side by Side", "The second model moved along +X beside the first")]


def _legend_color(k: int):
    return FloatVectorProperty(name=f"Band {k}", subtype="COLOR_GAMMA", size=3, min=0.0, max=1.0,
                               default=tuple(c / 255 for c in ro.band_colors_srgb()[k]))


class SkinBridgeRestCompareSettings(bpy.types.PropertyGroup):
    source: EnumProperty(name="Compare", items=_SOURCES, default="SELECTED")
    filepath: StringProperty(name="File", subtype="FILE_PATH", description="The model to compare with")
    layout: EnumProperty(name="Layout", items=_LAYOUTS, default="SUPERIMPOSED")
    tolerance: FloatProperty(name="Tolerance", default=rest_compare.DEFAULT_TOL, min=1e-9, max=1.0, precision=6,
                             description="Positions: a fraction of the model's bounding-box diagonal")
    # the legend's swatches (display only: the overlay's colours are fixed)
    band_0: _legend_color(0)
    band_1: _legend_color(1)
    band_2: _legend_color(2)
    band_3: _legend_color(3)
    band_4: _legend_color(4)


class SKINBRIDGE_OT_rest_compare(bpy.types.Operator):
    """Overlay two models in Rest Position, colour each vertex by its distance to the other model and mark the
    bones whose rest head or orientation differ"""

    bl_idname = "skinbridge.rest_compare"
    bl_label = "Rest Compare"
    bl_options = {"REGISTER"}
    source: EnumProperty(name="Compare", items=_SOURCES, default="SELECTED")
    filepath: StringProperty(name="File", subtype="FILE_PATH")
    layout: EnumProperty(name="Layout", items=_LAYOUTS, default="SUPERIMPOSED")
    tolerance: FloatProperty(name="Tolerance", default=rest_compare.DEFAULT_TOL, min=1e-9, max=1.0)
    rot_tolerance: FloatProperty(name="Rotation Tolerance", default=DEFAULT_ROT_TOL, min=1e-9, max=3.15)

    def execute(self, context):
        try:
            if self.source == "FILE":
                path = bpy.path.abspath(self.filepath)
                overlay, warnings = rest_compare.compare_file(context, path, self.layout, self.tolerance,
                                                              self.rot_tolerance)
            else:
                a, b = rest_compare.selected_models(context)
                overlay, warnings = rest_compare.show(context, a, b, self.layout, self.tolerance,
                                                      self.rot_tolerance), []
        except (FormatError, ValueError, OSError, RuntimeError) as e:
            self.report({"ERROR"}, translate(str(e)))
            return {"CANCELLED"}
        for w in warnings:
            self.report({"WARNING"}, translate(w))
        for line in overlay.result.lines() + overlay.notes:
            self.report({"INFO"}, translate(line))
        n = len(overlay.result.differences)
        self.report({"INFO"}, translate("Rest Position: same within the tolerances" if overlay.result.same
                                        else f"Rest Position: {n} difference(s), {len(overlay.marked)} bone(s) marked"))
        return {"FINISHED"}


SKINBRIDGE_OT_rest_compare_clear = plain_operator(
    "skinbridge.rest_compare_clear", "Clear Rest Compare",
    "Remove the Rest Compare overlay and put both models back as they were",
    can=lambda context: rest_compare.shown is not None, act=rest_compare.clear)


class SKINBRIDGE_PT_rest_compare(SidebarPanel, bpy.types.Panel):
    bl_label = "Rest Compare"
    bl_idname = "SKINBRIDGE_PT_rest_compare"

    def draw(self, context):
        layout = self.layout
        settings = context.window_manager.skinbridge_rest_compare
        layout.prop(settings, "source")
        if settings.source == "FILE":
            layout.prop(settings, "filepath")
        layout.prop(settings, "layout")
        layout.prop(settings, "tolerance")
        row = layout.row(align=True)
        op = row.operator(SKINBRIDGE_OT_rest_compare.bl_idname, text="Compare")
        op.source, op.filepath, op.layout, op.tolerance = (settings.source, settings.filepath, settings.layout,
                                                           settings.tolerance)
        row.operator(SKINBRIDGE_OT_rest_compare_clear.bl_idname, text="Clear")
        overlay = rest_compare.shown
        if overlay is None:
            return
        box = layout.box()
        box.label(text=translate(f"Distance to the other model ({overlay.mode})", interface=True))
        for k, (_, text) in enumerate(overlay.legend()):
            row = box.row()
            row.prop(settings, f"band_{k}", text="")
            row.label(text=text)
        box = layout.box()
        same = overlay.result.same
        box.label(text=translate("Same within the tolerances" if same else f"{len(overlay.result.differences)} "
                                 f"difference(s); marked bones: {len(overlay.marked)}", interface=True))
        for name, value in overlay.largest:
            box.label(text=f"{name}: {value:.3g}")
        lines = [f"difference: {d}" for d in overlay.result.differences] + overlay.result.notes + overlay.notes
        for line in lines[:MAX_PANEL_LINES]:
            box.label(text=line)
        if len(lines) > MAX_PANEL_LINES:
            box.label(text=translate(f"... {len(lines) - MAX_PANEL_LINES} more in the Info log", interface=True))


_CLASSES = (SkinBridgeRestCompareSettings, SKINBRIDGE_OT_rest_compare, SKINBRIDGE_OT_rest_compare_clear,
            SKINBRIDGE_PT_rest_compare)


def register():
    for cls in _CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.WindowManager.skinbridge_rest_compare = PointerProperty(type=SkinBridgeRestCompareSettings)


def unregister():
    if rest_compare.shown is not None:
        rest_compare.clear(bpy.context)
    del bpy.types.WindowManager.skinbridge_rest_compare
    for cls in reversed(_CLASSES):
        bpy.utils.unregister_class(cls)
