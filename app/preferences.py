"""The add-on's preferences: the defaults of every export option of every target, made from the format specs
(`formats.targets()`, `FormatSpec.options`), one group per target. An export operator starts from them when it
is invoked (File › Export, the Collection Exporter): a value the caller set (a script's keyword, a preset) is
kept. The command line never reads them: `convert` and `check-target` start from the specs' defaults.

Blender keeps an add-on's preferences under its module name; when SkinBridge is registered without being
enabled as an add-on (the command line, tests calling `register()`), there are none and nothing changes.
"""
from __future__ import annotations

import bpy
from bpy.props import PointerProperty

from .. import formats
from ..blender import ops_common
from ..blender.ops_common import option_property

ADDON = __package__.rsplit(".", 1)[0]  # the add-on's module: the preferences' bl_idname

_targets_by_operator: dict[str, str] = {}  # export operator idname → its `convert --to` target
_registered: list = []


def _exported(spec) -> tuple:
    """The options of `spec` an export takes (the ones that only read are the import's)."""
    return tuple(o for o in spec.options if not o.reading)


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


def _preferences_class(groups: dict[str, type]) -> type:
    annotations = {f"defaults_{t}": PointerProperty(type=cls) for t, cls in groups.items()}
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
    for cls in [*groups.values(), _preferences_class(groups)]:
        bpy.utils.register_class(cls)
        _registered.append(cls)
    ops_common.START_VALUES.append(start_from_preferences)


def unregister() -> None:
    if start_from_preferences in ops_common.START_VALUES:
        ops_common.START_VALUES.remove(start_from_preferences)
    while _registered:
        bpy.utils.unregister_class(_registered.pop())
    _targets_by_operator.clear()
