"""The SkinBridge tab of the 3D viewport's sidebar: what the active model is (`blender/model_facts.py`), a check
for a target that lists what its export would refuse, warn about and write (`target_check.py`), and the
messages of the last operation (`blender/ops_common.py` `report_outcome`). Format packages hang their own
panels under the model panel (`bl_parent_id = "VIEW3D_PT_skinbridge"`), so this module registers first.

The target list and each target's options come from the registry (`formats.targets()`, `FormatSpec.options`):
one property group per target holds its options, as its export operator does.
"""
from __future__ import annotations

import ast
import functools
import os
import re
import textwrap

import bpy
from bpy.app.handlers import persistent
from bpy.props import CollectionProperty, EnumProperty, IntProperty, PointerProperty, StringProperty

from .. import formats
from ..blender import model_facts as mf
from ..blender.compat import set_pose_bone_flag
from ..blender.ops_common import LAST_OUTCOME, option_property, option_values, report_outcome
from ..blender.sidebar_ui import MODEL_PANEL, TAB, SidebarPanel
from ..blender.translations import translate
from ..core.errors import FormatError
from ..core.workers import quiet_stop
from .sidebar_fixes import CLASSES as FIX_CLASSES, fix_of
from ..core.i18n import N_
from .target_check import check_target

SCENE_PROP = "skinbridge_sidebar"
KIND_ICONS = {"refuse": "CANCEL", "warn": "ERROR", "file": "FILE"}
CHAR_PIXELS = 7  # a rough width of one character of the UI font, to wrap long findings to the sidebar's width
POPUP_WIDTH = 600  # pixels: a warning of about 80 characters on one line

QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")  # a name as the exporters quote it (repr)

_facts_cache: dict = {}
_generation = [0]  # bumped on every depsgraph update: the facts of a model are computed once per change


@persistent
@quiet_stop  # a signal arriving here ends the run at its next check, without a traceback
def _changed(scene, depsgraph) -> None:
    _generation[0] += 1


def _facts(context):
    """The facts of the active model, computed again only after the scene changed."""
    arm, meshes = mf.active_model(context)
    key = (arm.as_pointer() if arm else 0, tuple(m.as_pointer() for m in meshes), _generation[0])
    if _facts_cache.get("key") != key:
        _facts_cache.clear()
        _facts_cache.update(key=key, facts=mf.model_facts(arm, meshes) if (arm or meshes) else None)
    return _facts_cache["facts"]


@functools.lru_cache(maxsize=64)
def _format_of(path: str, mtime: float) -> str:
    """The label of the format the file's content is (read once per file version)."""
    try:
        return formats.identify_file(path).label
    except (FormatError, OSError) as e:
        return N_(f"unreadable now ({e})")


def source_text(facts) -> tuple[str, str]:
    """(file name, format) of where the model came from, as the panel shows them."""
    path = facts.source_path
    if not path:
        return (facts.source_name or N_("not imported by SkinBridge")), ""
    try:
        mtime = os.path.getmtime(path)
    except OSError:
        return os.path.basename(path), N_("the file is no longer there")
    return os.path.basename(path), _format_of(path, mtime)


def export_name(facts) -> str:
    """The name the check exports as: the model's own name from its file, else its object's."""
    if facts is None:
        return "model"
    stem = os.path.splitext(os.path.basename(facts.source_path))[0]
    return facts.source_name or stem or facts.name


def count_rows(facts) -> list[tuple[str, str]]:
    """(label, value) of the counts the panel lists."""
    rows = [(N_("Meshes"), str(len(facts.meshes))), (N_("Vertices"), f"{facts.vertices:,}"),
            (N_("Faces"), f"{facts.faces:,}"), (N_("Triangles"), f"{facts.triangles:,}")]
    if facts.armature:
        rows += [(N_("Bones"), str(facts.bones)), (N_("Deforming bones"), str(facts.deforming_bones)),
                 (N_("Influences per vertex"), N_(f"max {facts.max_influences}, mean {facts.mean_influences:.2f}"))]
    rows += [(N_("Morphs"), str(facts.morphs))]
    if facts.armature:
        rows += [(N_("Actions"), str(facts.actions)), (N_("Rigid bodies"), str(facts.rigid_bodies))]
    return rows


def kept_rows(facts) -> list[str]:
    """The file data kept for write-back, and how much of it is as imported."""
    rows = []
    if facts.binds_kept:
        rows.append(N_(f"Bind matrices: {facts.binds_unchanged} of {facts.binds_kept} bones as imported"))
    if facts.tracks_kept:
        rows.append(N_(f"Kept keys: {facts.tracks_unchanged} of {facts.tracks_kept} tracks unchanged"))
    rows += [N_(f"{k.prop} on {k.count} {k.where}" if k.count > 1 else f"{k.prop} on the {k.where}")
             for k in facts.kept]
    return rows


class SKINBRIDGE_PG_finding(bpy.types.PropertyGroup):
    kind: EnumProperty(items=[("refuse", "Refuse", "The export stops"), ("warn", "Warn", "The export changes or "
                                                                                          "warns about this"),
                              ("file", "File", "The export writes this file")])
    text: StringProperty()


def _option_groups() -> dict[str, type]:
    """A property group per target with one property per option of its spec (the export operator's own)."""
    out = {}
    for target, spec in formats.targets().items():
        annotations = {o.name: option_property(o) for o in spec.options if not o.reading}
        out[target] = type(f"SKINBRIDGE_PG_options_{target}", (bpy.types.PropertyGroup,),
                           {"__annotations__": annotations})
    return out


def _sidebar_group(option_groups: dict[str, type]) -> type:
    annotations = {
        "target": EnumProperty(name="Target", description="The format the check exports to (convert --to)",
                               items=[(t, t, spec.label) for t, spec in formats.targets().items()]),
        "findings": CollectionProperty(type=SKINBRIDGE_PG_finding),
        "checked": StringProperty(description="The model and target of the findings listed"),
    }
    annotations.update((f"options_{t}", PointerProperty(type=cls)) for t, cls in option_groups.items())
    return type("SKINBRIDGE_PG_sidebar", (bpy.types.PropertyGroup,), {"__annotations__": annotations})


def target_options(props, target: str) -> dict:
    """The values of `target`'s options as set in the panel."""
    spec = formats.targets()[target]
    return option_values(getattr(props, f"options_{target}"), tuple(o for o in spec.options if not o.reading))


class SKINBRIDGE_OT_check_target(bpy.types.Operator):
    """Run the chosen target's export into a temporary folder that is then removed, and list in the SkinBridge
    panel what it would refuse, warn about (names cut, bones or vertices split, weights limited, ...) and write"""
    bl_idname = "skinbridge.check_target"
    bl_label = "Check for Target"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        return context.mode == "OBJECT" and any(mf.active_model(context))

    def execute(self, context):
        props = getattr(context.scene, SCENE_PROP)
        target = props.target
        facts = _facts(context)
        result = check_target(context, target, target_options(props, target), export_name(facts))
        props.findings.clear()
        for kind, text in result.findings:
            item = props.findings.add()
            item.kind, item.text = kind, text
        props.checked = f"{facts.name if facts else ''} → {target}"
        if result.refused:
            self.report({"WARNING"}, translate(f"{target} would refuse the export: {result.refused}"))
            return {"FINISHED"}
        report_outcome(self, f"{target}: writes {len(result.files)} file(s)", result.warnings)
        return {"FINISHED"}


def quoted_names(text: str) -> list[str]:
    """The names a finding quotes, in order (the exporters quote names with `repr`)."""
    out = []
    for m in QUOTED.finditer(text):
        try:
            name = ast.literal_eval(m.group(0))
        except (ValueError, SyntaxError):
            continue
        if isinstance(name, str) and name not in out:
            out.append(name)
    return out


def named_elements(context, text: str) -> tuple[list[str], list[str]]:
    """(bones of the active model's armature, objects of the view layer) that the finding `text` names."""
    names = quoted_names(text)
    arm, _ = mf.active_model(context)
    bones = [n for n in names if arm is not None and n in arm.data.bones]
    objects = [n for n in names if n in context.view_layer.objects]
    return bones, objects


class SKINBRIDGE_OT_select_finding(bpy.types.Operator):
    """Select what this finding names: its bones (the armature active, in Pose Mode's selection) or objects"""
    bl_idname = "skinbridge.select_finding"
    bl_label = "Select"
    bl_options = {"REGISTER", "UNDO"}
    index: IntProperty(min=0, options={"HIDDEN"})

    def execute(self, context):
        findings = getattr(context.scene, SCENE_PROP).findings
        if self.index >= len(findings):
            self.report({"ERROR"}, translate("no such finding: check the target again"))
            return {"CANCELLED"}
        bones, objects = named_elements(context, findings[self.index].text)
        if not bones and not objects:
            self.report({"WARNING"}, translate("this finding names no bone or object of the scene"))
            return {"CANCELLED"}
        layer = context.view_layer
        for ob in layer.objects:
            ob.select_set(ob.name in objects)
        if bones:
            arm, _ = mf.active_model(context)
            for pb in arm.pose.bones:
                set_pose_bone_flag(pb, "select", pb.name in bones)
            arm.select_set(True)
            layer.objects.active = arm
        elif objects:
            layer.objects.active = layer.objects[objects[0]]
        self.report({"INFO"}, translate(f"selected {', '.join(bones + objects)}"))
        return {"FINISHED"}


def _wrapped(layout, text: str, icon: str, width: int) -> None:
    """`text` as labels of at most `width` characters, the icon on the first; translated before it is cut into
    lines (Blender translates a label only as a whole)."""
    lines = textwrap.wrap(translate(text, interface=True), max(20, width)) or [""]
    col = layout.column(align=True)
    for i, line in enumerate(lines):
        col.label(text=line, icon=icon if i == 0 else "BLANK1")


def _width(context) -> int:
    region = getattr(context, "region", None)
    return (region.width // CHAR_PIXELS if region is not None else 60) - 4


class VIEW3D_PT_skinbridge(bpy.types.Panel):
    """What the active model is: where it came from, its counts, and the file data kept on it"""
    bl_idname = MODEL_PANEL
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = TAB
    bl_label = "Model"

    def draw(self, context):
        layout = self.layout
        facts = _facts(context)
        if facts is None:
            layout.label(text="No armature or mesh active", icon="INFO")
            return
        layout.label(text=facts.name, icon="ARMATURE_DATA" if facts.armature else "MESH_DATA")
        name, kind = source_text(facts)
        col = layout.column(align=True)
        col.label(text=name, icon="FILE")
        if kind:
            col.label(text=translate(kind, interface=True), icon="BLANK1")
        grid = layout.grid_flow(row_major=True, columns=2, even_columns=False, align=True)
        for label, value in count_rows(facts):
            grid.label(text=label)
            grid.label(text=translate(value, interface=True))
        rows = kept_rows(facts)
        if rows:
            box = layout.box()
            box.label(text="Kept for write-back", icon="FILE_BACKUP")
            for row in rows:
                _wrapped(box, row, "DOT", _width(context))
        _draw_settings(layout, context.view_layer.objects.active)


def _draw_settings(layout, ob) -> None:
    """The active object's short custom properties (a format's per-object settings, NWN2's hair shortening or
    helm hiding, ...), editable; long ones hold file data and are only counted above."""
    if ob is None:
        return
    keys = [k for k in ob.keys() if k not in mf.SOURCE_PROPS and (
        isinstance(ob[k], (int, float)) or (isinstance(ob[k], str) and len(ob[k]) <= 64))]
    if not keys:
        return
    box = layout.box()
    box.label(text=translate(f"{ob.name} settings", interface=True), icon="PROPERTIES")
    for k in keys:
        box.prop(ob, f'["{k}"]', text=k)


class VIEW3D_PT_skinbridge_target(SidebarPanel, bpy.types.Panel):
    """Check for a target: what its export would refuse, warn about and write, before it runs"""
    bl_label = "Check for Target"
    bl_options = set()  # open: the panel the tab is for

    def draw(self, context):
        layout = self.layout
        props = getattr(context.scene, SCENE_PROP)
        layout.prop(props, "target")
        target = props.target
        spec = formats.targets().get(target)
        if spec is not None:
            options = getattr(props, f"options_{target}")
            for o in spec.options:
                if not o.reading:
                    layout.prop(options, o.name)
        layout.operator(SKINBRIDGE_OT_check_target.bl_idname, icon="VIEWZOOM")
        if props.checked:
            layout.label(text=props.checked)
        if props.checked and not props.findings:
            layout.label(text="Nothing to report", icon="CHECKMARK")
        for i, item in enumerate(props.findings):
            _wrapped(layout, item.text, KIND_ICONS[item.kind], _width(context))
            if item.kind != "file" and any(named_elements(context, item.text)):
                layout.operator(SKINBRIDGE_OT_select_finding.bl_idname, icon="RESTRICT_SELECT_OFF").index = i
            fix = fix_of(item.text) if item.kind == "warn" else None
            if fix is not None:
                layout.operator(fix, icon="TOOL_SETTINGS").index = i


def _draw_outcome(layout, width: int) -> None:
    if not LAST_OUTCOME.headline:
        layout.label(text="No operation yet")
        return
    _wrapped(layout, f"{LAST_OUTCOME.operation}: {LAST_OUTCOME.headline}", "INFO", width)
    for w in LAST_OUTCOME.warnings:
        _wrapped(layout, w, "ERROR", width)


class SKINBRIDGE_OT_last_report(bpy.types.Operator):
    """Every message of the last SkinBridge operation, in a popup"""
    bl_idname = "skinbridge.last_report"
    bl_label = "Messages of the Last Operation"
    bl_options = {"REGISTER"}

    def invoke(self, context, event):
        return context.window_manager.invoke_popup(self, width=POPUP_WIDTH)

    def draw(self, context):
        _draw_outcome(self.layout, POPUP_WIDTH // CHAR_PIXELS - 4)

    def execute(self, context):
        return {"FINISHED"}


class VIEW3D_PT_skinbridge_report(SidebarPanel, bpy.types.Panel):
    """Every message of the last SkinBridge operation (the status bar shows its summary)"""
    bl_label = "Last Operation"

    def draw(self, context):
        self.layout.operator(SKINBRIDGE_OT_last_report.bl_idname, text="Show in a Popup", icon="WINDOW")
        _draw_outcome(self.layout, _width(context))


_registered: list = []


def register() -> None:
    """Register the tab's classes and the scene property (before any format's child panel)."""
    groups = _option_groups()
    classes = [SKINBRIDGE_PG_finding, *groups.values(), _sidebar_group(groups), SKINBRIDGE_OT_check_target,
               SKINBRIDGE_OT_select_finding, *FIX_CLASSES, SKINBRIDGE_OT_last_report, VIEW3D_PT_skinbridge,
               VIEW3D_PT_skinbridge_target, VIEW3D_PT_skinbridge_report]
    for cls in classes:
        bpy.utils.register_class(cls)
        _registered.append(cls)
    setattr(bpy.types.Scene, SCENE_PROP, PointerProperty(type=classes[len(groups) + 1]))
    bpy.app.handlers.depsgraph_update_post.append(_changed)


def unregister() -> None:
    if _changed in bpy.app.handlers.depsgraph_update_post:
        bpy.app.handlers.depsgraph_update_post.remove(_changed)
    if hasattr(bpy.types.Scene, SCENE_PROP):
        delattr(bpy.types.Scene, SCENE_PROP)
    while _registered:
        bpy.utils.unregister_class(_registered.pop())
    _facts_cache.clear()
