"""Every choice an export operator offers is an `Option` of its format's spec (docs/architecture.md §5.4), so that
`convert`, the sidebar's check for a target, the preferences and the README reach it too. Only the scope selectors
(which file, which collection, which objects, which image, which actions) stay the operator's own. An option's
earlier ids (`aliases`, `inverse_aliases`) are hidden properties that still set it. The same holds for the
import operators and their specs' `import_options`."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.blender

# what to export and where, not how: never an Option (a command line names its inputs and -o instead)
SCOPE = {"filepath", "filename_ext", "filter_glob", "check_existing", "directory", "files", "collection",
         "use_selection", "selected_only", "which", "image"}


def _rna(idname: str):
    import bpy

    category, name = idname.split(".")
    return getattr(getattr(bpy.ops, category), name).get_rna_type()


def _exporters():
    from skinbridge import formats

    return [s for s in formats.all_specs() if s.export_operator and not s.foreign_operators]


def stray_properties(idname: str, options) -> list[str]:
    """The properties of operator `idname` that are neither a scope selector nor one of `options` (or an
    earlier id of one)."""
    declared = {o.name for o in options if not o.reading}
    declared |= {a for o in options for a in o.aliases + o.inverse_aliases}
    return [p.identifier for p in _rna(idname).properties
            if p.identifier != "rna_type" and p.identifier not in SCOPE and not p.identifier.startswith("filter_")
            and p.identifier not in declared]


def test_every_export_property_is_an_option_of_its_spec_or_a_scope_selector(addon):
    specs = _exporters()
    assert len(specs) >= 8, [s.name for s in specs]
    stray = [f"{spec.export_operator}.{name} (spec {spec.name})" for spec in specs
             for name in stray_properties(spec.export_operator, spec.options)]
    assert not stray, "export choices that are no Option of their spec:\n" + "\n".join(stray)


# an import's scope: which files, and which armature a file binds onto (NWN2) or goes onto
IMPORT_SCOPE = {"filepath", "filename_ext", "filter_glob", "check_existing", "directory", "files", "armature",
                "hide_props_region"}


def stray_import_properties(spec) -> list[str]:
    """The import operator's properties that are neither a scope selector nor an import option of the spec (or
    an option of reading its files, `Option.reading`), nor an earlier id of one."""
    declared = [o for o in spec.import_options] + [o for o in spec.options if o.reading]
    names = {o.name for o in declared} | {a for o in declared for a in o.aliases + o.inverse_aliases}
    return [p.identifier for p in _rna(spec.import_operator).properties
            if p.identifier != "rna_type" and p.identifier not in IMPORT_SCOPE and p.identifier not in names
            and not p.identifier.startswith("filter_")]


def test_every_import_property_is_an_import_option_of_its_spec_or_a_scope_selector(addon):
    from skinbridge import formats

    specs = [s for s in formats.all_specs() if s.import_operator and not s.foreign_operators]
    assert len(specs) >= 10 and sum(bool(s.import_options) for s in specs) >= 5
    stray = [f"{spec.import_operator}.{name} (spec {spec.name})" for spec in specs
             for name in stray_import_properties(spec)]
    assert not stray, "import choices that are no import option of their spec:\n" + "\n".join(stray)


def test_each_option_property_starts_at_the_options_default(addon):
    """The property has the record's default; an option of reading has no property; an alias is hidden."""
    checked = 0
    for spec in _exporters():
        props = {p.identifier: p for p in _rna(spec.export_operator).properties}
        for o in spec.options:
            if o.reading or o.name not in props:  # reading: the import's; absent: another operator's (.ani)
                assert not (o.reading and o.name in props), f"{spec.name}: {o.name} is an option of reading"
                continue
            default = o.default if o.default is not None else o.ui_default
            if o.type is float and default is not None:
                assert props[o.name].default == pytest.approx(default, rel=1e-6), (spec.name, o.name)
            elif o.type in (bool, int) or o.choices:
                assert props[o.name].default == default, (spec.name, o.name)
            for alias in o.aliases + o.inverse_aliases:
                assert alias in props and props[alias].is_hidden, (spec.name, alias)
            checked += 1
    assert checked >= 10


def test_the_checker_sees_a_stray_property(addon):
    """The rule itself: an operator with a property its spec does not declare is listed."""
    import bpy

    from skinbridge.blender.ops_common import file_operator
    from skinbridge.core.formatspec import Option

    options = (Option("level", int, 3, low=0, high=9, aliases=("old_level",)),)
    cls = type("EXPORT_SCENE_OT_skinbridge_probe", (bpy.types.Operator,), {
        "bl_idname": "export_scene.skinbridge_probe", "bl_label": "Probe",
        "__annotations__": {"stray": bpy.props.BoolProperty(), "use_selection": bpy.props.BoolProperty()}})
    cls = file_operator((".toy",), options, collection=True)(cls)
    bpy.utils.register_class(cls)
    try:
        assert stray_properties("export_scene.skinbridge_probe", options) == ["stray"]
        assert stray_properties("export_scene.skinbridge_probe", ()) == ["stray", "level", "old_level"]
    finally:
        bpy.utils.unregister_class(cls)


def test_an_alias_sets_its_option(addon):
    """`aliases` and `inverse_aliases` as hidden properties: set by a script, they give the option's value."""
    import bpy

    from skinbridge.blender.ops_common import file_operator, option_values
    from skinbridge.core.formatspec import Option

    options = (Option("units_per_metre", float, 12.5, low=1e-6, high=1e6, aliases=("scale",),
                      inverse_aliases=("metres",)),)
    seen = []

    def execute(self, context):
        seen.append(option_values(self, options)["units_per_metre"])
        return {"FINISHED"}

    probe = file_operator((".toy",), options)(type("EXPORT_SCENE_OT_skinbridge_alias_probe", (bpy.types.Operator,), {
        "bl_idname": "export_scene.skinbridge_alias_probe", "bl_label": "Alias probe", "execute": execute}))
    bpy.utils.register_class(probe)
    try:
        op = bpy.ops.export_scene.skinbridge_alias_probe
        op()
        op(units_per_metre=20.0)
        op(scale=40.0)
        op(metres=0.01)
        assert seen == pytest.approx([12.5, 20.0, 40.0, 100.0])
        props = {p.identifier: p for p in op.get_rna_type().properties}
        assert props["scale"].is_hidden and props["metres"].is_hidden and not props["units_per_metre"].is_hidden
    finally:
        bpy.utils.unregister_class(probe)
