"""What every SkinBridge panel and model operator shares: the sidebar tab and its model panel's id, a mixin for
a panel under that model panel, and a mixin for an operator on the model the user means. The application's
sidebar (app/sidebar.py) draws the model panel; format packages hang their own panels under it."""
from __future__ import annotations

import bpy

from .selection import find_armature
from .translations import translate

TAB = "SkinBridge"  # the 3D viewport sidebar's tab
MODEL_PANEL = "VIEW3D_PT_skinbridge"  # its model panel: registered before any panel that names it as parent


class SidebarPanel:
    """Mixin of a panel of the SkinBridge tab under the model panel (closed until the user opens it, unless the
    class says otherwise)."""
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = TAB
    bl_parent_id = MODEL_PANEL
    bl_options = {"DEFAULT_CLOSED"}


class ModelOperator:
    """Mixin of an operator on the model the user means (the active armature, or the one of the active mesh):
    `run(context, armature)` does the work and returns the operator's result."""
    bl_options = {"REGISTER", "UNDO"}
    modes: tuple[str, ...] | None = ("OBJECT", "POSE")  # the modes it runs in (None: any)

    @classmethod
    def poll(cls, context):
        return (cls.modes is None or context.mode in cls.modes) and find_armature(context) is not None

    def execute(self, context):
        arm = find_armature(context)
        if arm is None:
            self.report({"ERROR"}, translate("select the model's armature (or one of its meshes)"))
            return {"CANCELLED"}
        return self.run(context, arm)


def plain_operator(idname: str, label: str, description: str, can, act) -> type:
    """A button with nothing to choose: an operator that runs `act(context)` when `can(context)` says it may
    (REGISTER only: what it changes is no scene data an undo step holds)."""

    def execute(self, context):
        act(context)
        return {"FINISHED"}

    category, _, name = idname.partition(".")
    return type(f"{category.upper()}_OT_{name}", (bpy.types.Operator,), {
        "__doc__": description, "bl_idname": idname, "bl_label": label, "bl_options": {"REGISTER"},
        "poll": classmethod(lambda cls, context: bool(can(context))), "execute": execute})
