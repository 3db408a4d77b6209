"""The add-on's preferences: the defaults of every export option of every target, made from the format specs
(`formats.targets()`, `FormatSpec.options`), one group per target. An export operator starts from them when it
is invoked (File › Export, the Collection Exporter): a value the caller set (a script's keyword, a preset) is
kept. And, for every reading option of a format (a folder list: NWN2's skeleton path), a list of folders that its
import operator (File › Import, drag and drop) searches after the file's own and the operator's own value. The
command line never reads them: `convert` and `check-target` start from the specs' defaults and `--skeleton-path`.

Blender keeps an add-on's preferences under its module name; when SkinBridge is registered without being
enabled as an add-on (the command line, tests calling `register()`), there are none and nothing changes.
"""
from __future__ import annotations

import bpy
from bpy.props import CollectionProperty, IntProperty, PointerProperty, StringProperty

from .. import formats
from ..blender import ops_common
from ..blender.ops_common import option_property
from ..core.formatspec import FormatSpec, Option

ADDON = __package__.rsplit(".", 1)[0]  # the add-on's module: the preferences' bl_idname

_targets_by_operator: dict[str, str] = {}  # export operator idname → its `convert --to` target
_registered: list = []


def _exported(spec) -> tuple:
    """The options of `spec` an export takes (the ones that only read are the import's)."""
    return tuple(o for o in spec.options if not o.reading)


def _reading_options() -> dict[str, tuple[FormatSpec, Option]]:
    """{option name: (spec, option)} of the formats' reading options (folders to search), the first spec that
    declares each."""
    out: dict[str, tuple] = {}
    for spec in formats.all_specs():
        for o in spec.options:
            if o.reading and o.type is str:
                out.setdefault(o.name, (spec, o))
    return out


class SKINBRIDGE_PG_folder(bpy.types.PropertyGroup):
    path: StringProperty(name="Folder", subtype="DIR_PATH",
                         description="A folder searched on import for the files this list is for")


def _folders(context, option: str):
    """The preferences' folder list of the reading option `option`, None without preferences or such a list."""
    prefs = preferences(context)
    return getattr(prefs, f"folders_{option}", None) if prefs is not None else None


class SKINBRIDGE_OT_folder_add(bpy.types.Operator):
    """Add a folder to the list an import searches"""

    bl_idname = "skinbridge.folder_add"
    bl_label = "Add Folder"
    bl_options = {"INTERNAL"}
    option: StringProperty(options={"HIDDEN"})

    def execute(self, context):
        folders = _folders(context, self.option)
        if folders is None:
            return {"CANCELLED"}
        folders.add()
        context.preferences.is_dirty = True
        return {"FINISHED"}


class SKINBRIDGE_OT_folder_remove(bpy.types.Operator):
    """Remove this folder from the list an import searches"""

    bl_idname = "skinbridge.folder_remove"
    bl_label = "Remove Folder"
    bl_options = {"INTERNAL"}
    option: StringProperty(options={"HIDDEN"})
    index: IntProperty(options={"HIDDEN"})

    def execute(self, context):
        folders = _folders(context, self.option)
        if folders is None or not 0 <= self.index < len(folders):
            return {"CANCELLED"}
        folders.remove(self.index)
        context.preferences.is_dirty = True
        return {"FINISHED"}


def preferred_folders(context, option: str) -> list[str]:
    """The folders (absolute) the preferences list for the reading option `option`, in their order; the hook
    an import operator reads through `ops_common.READ_FOLDERS`."""
    folders = _folders(context, option)
    return [bpy.path.abspath(f.path) for f in folders if f.path.strip()] if folders is not None else []


def _groups() -> dict[str, type]:
    out = {}
    for target, spec in formats.targets().items():
        annotations = {o.name: option_property(o) for o in _exported(spec)}
        if annotations:
            out[target] = type(f"SKINBRIDGE_PG_defaults_{target}", (bpy.types.PropertyGroup,),
                               {"__annotations__": annotations})
    return out


def _draw(self, context) -> None:
    layout = self.layout
    layout.label(text="Defaults of the export options (File › Export starts from them; the command line does not)")
    for target, spec in formats.targets().items():
        group = getattr(self, f"defaults_{target}", None)
        if group is None:
            continue
        box = layout.box()
        box.label(text=f"{spec.label} ({target})", icon="EXPORT")
        for o in _exported(spec):
            box.prop(group, o.name)
    _draw_folders(self, layout)


def _draw_folders(prefs, layout) -> None:
    reading = _reading_options()
    if not reading:
        return
    layout.label(text="Folders an import searches after the file's own and the import's own option (the command "
                      "line does not)")
    for name, (spec, o) in reading.items():
        box = layout.box()
        box.label(text=f"{spec.label}: {_label(o)}", icon="FILE_FOLDER")
        for i, folder in enumerate(getattr(prefs, f"folders_{name}")):
            row = box.row(align=True)
            row.prop(folder, "path", text="")
            op = row.operator(SKINBRIDGE_OT_folder_remove.bl_idname, text="", icon="X")
            op.option, op.index = name, i
        box.operator(SKINBRIDGE_OT_folder_add.bl_idname, icon="ADD").option = name


def _label(o: Option) -> str:
    return o.label or o.name.replace("_", " ").title()


def _preferences_class(groups: dict[str, type]) -> type:
    annotations = {f"defaults_{t}": PointerProperty(type=cls) for t, cls in groups.items()}
    annotations.update({f"folders_{name}": CollectionProperty(
        type=SKINBRIDGE_PG_folder, name=f"{_label(o)} Folders",
        description="Folders an import searches, in this order, after the file's own and the import's own option")
        for name, (_, o) in _reading_options().items()})
    return type("SKINBRIDGE_AP_preferences", (bpy.types.AddonPreferences,),
                {"bl_idname": ADDON, "__annotations__": annotations, "draw": _draw})


def preferences(context):
    """The add-on's preferences, None when SkinBridge is not enabled as an add-on."""
    addon = context.preferences.addons.get(ADDON)
    return addon.preferences if addon is not None else None


def start_from_preferences(op, context) -> None:
    """Set each export option of `op` the caller did not set to the preferred default of its target."""
    target = _targets_by_operator.get(op.bl_idname)
    prefs = preferences(context) if target else None
    group = getattr(prefs, f"defaults_{target}", None) if prefs is not None else None
    if group is None:
        return
    for o in _exported(formats.targets()[target]):
        if o.name in op.properties.bl_rna.properties and not op.properties.is_property_set(o.name):
            setattr(op, o.name, getattr(group, o.name))


def register(export_operators: dict[str, str]) -> None:
    """Register the preferences; `export_operators` maps each target's export operator idname to the target."""
    _targets_by_operator.update(export_operators)
    groups = _groups()
    for cls in [*groups.values(), SKINBRIDGE_PG_folder, SKINBRIDGE_OT_folder_add, SKINBRIDGE_OT_folder_remove,
                _preferences_class(groups)]:
        bpy.utils.register_class(cls)
        _registered.append(cls)
    ops_common.START_VALUES.append(start_from_preferences)
    ops_common.READ_FOLDERS.append(preferred_folders)


def unregister() -> None:
    if start_from_preferences in ops_common.START_VALUES:
        ops_common.START_VALUES.remove(start_from_preferences)
    if preferred_folders in ops_common.READ_FOLDERS:
        ops_common.READ_FOLDERS.remove(preferred_folders)
    while _registered:
        bpy.utils.unregister_class(_registered.pop())
    _targets_by_operator.clear()
