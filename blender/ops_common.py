"""What every format's operators share: registering classes with their File › Import / Export entries, the
file properties and the target's options (`file_operator`), the multi-file import loop, the export run and one
report per operation (`report_outcome`)."""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

import bpy
from bpy.props import BoolProperty, CollectionProperty, EnumProperty, FloatProperty, IntProperty, StringProperty

from ..core.errors import ExportError, FormatError
from ..core.fileio import output_session
from ..core.formatspec import Option
from . import action as bact
from . import compat
from .model_facts import stamp_source
from .scene import export_scope
from .selection import NoTarget, armature_of, find_armature
from .translations import translate


def option_property(o: Option):
    """The operator property of a target's option: the same default, limits, choices and words as the command
    line (core/formatspec.py)."""
    name = o.label or o.name.replace("_", " ").title()
    text = o.help[:1].upper() + o.help[1:] + (f" ({o.unit})" if o.unit else "")
    default = o.default if o.default is not None else o.ui_default
    if o.type is bool:
        return BoolProperty(name=name, description=text, default=bool(default))
    if o.choices:
        return EnumProperty(name=name, description=text, items=list(o.choices), default=default)
    if o.type is str:
        return StringProperty(name=name, description=text, default=default or "",
                              subtype="FILE_PATH" if o.path else "NONE")
    limits = {k: v for k, v in (("min", o.low), ("max", o.high)) if v is not None}
    if o.type is int:
        return IntProperty(name=name, description=text, default=int(default or 0), **limits)
    return FloatProperty(name=name, description=text, default=float(default or 0.0), precision=4, **limits)


def alias_properties(o: Option) -> dict:
    """Hidden properties under the option's earlier ids (`aliases`: the same unit; `inverse_aliases`: the inverse
    unit, e.g. metres per pixel for a pixels-per-metre option), so that users' scripts and presets that set them
    keep working; not saved, so an unset alias never stands in."""
    out = {}
    for alias in o.aliases + o.inverse_aliases:
        prop = option_property(o)
        keywords = dict(prop.keywords)
        keywords["options"] = {"HIDDEN", "SKIP_SAVE"}
        if alias in o.inverse_aliases:
            keywords.pop("max", None), keywords.pop("min", None)
            keywords.update(default=0.0, min=0.0, description="")  # hidden: no words to translate
        out[alias] = prop.function(**keywords)
    return out


def _given_value(op, o: Option):
    """The option's value on the operator: an alias the caller set stands in for it."""
    props = getattr(op, "properties", op)  # an operator's, or a property group's (the sidebar, preferences)
    for alias in o.aliases:
        if hasattr(op, alias) and props.is_property_set(alias):
            return getattr(op, alias)
    for alias in o.inverse_aliases:
        if hasattr(op, alias) and props.is_property_set(alias) and getattr(op, alias) > 0:
            # as the option's own float property would hold the value given to it
            return struct.unpack("<f", struct.pack("<f", 1.0 / getattr(op, alias)))[0]
    return getattr(op, o.name)


def option_values(op, options: tuple[Option, ...]) -> dict:
    """The operator's values of `options` as the exporters take them (an empty text or file path: not given;
    a path made absolute; an alias the caller set stands in for its option)."""
    out = {}
    for o in options:
        value = _given_value(op, o)
        if o.type is str and not o.choices:
            value = (bpy.path.abspath(value) if o.path else value) if value else None
        out[o.name] = value
    return out


def file_operator(extensions: tuple[str, ...], options: tuple[Option, ...] = (), *, several: bool = False,
                  collection: bool = False):
    """Class decorator of an import or export operator: its file name ending and filter from the format's
    `extensions`, the `files`/`directory` of a multi-file import (`several`), the hidden `collection` of a
    Collection Exporter, and one property per target option (`option_property`)."""

    def decorate(cls):
        annotations = cls.__dict__.get("__annotations__")
        if annotations is None:
            annotations = {}
            cls.__annotations__ = annotations
        added = {}
        if extensions:  # none for an operator that picks a folder
            cls.filename_ext = extensions[0]
            added["filter_glob"] = StringProperty(default=";".join(f"*{e}" for e in extensions), options={"HIDDEN"})
        if several:
            added["files"] = CollectionProperty(type=bpy.types.OperatorFileListElement,
                                                options={"HIDDEN", "SKIP_SAVE"})
            added["directory"] = StringProperty(subtype="DIR_PATH", options={"HIDDEN", "SKIP_SAVE"})
        if collection:
            added["collection"] = StringProperty(options={"HIDDEN"})
        for o in options:
            added[o.name] = option_property(o)
            added.update(alias_properties(o))
        annotations.update(added)
        return cls

    return decorate


@dataclass
class Outcome:
    """The last operation's summary and every warning it gave (the SkinBridge panel lists them)."""
    operation: str = ""
    headline: str = ""
    warnings: list[str] = field(default_factory=list)


LAST_OUTCOME = Outcome()


def report_outcome(op, headline: str, warnings: list[str], level: str = "WARNING") -> None:
    """One report per operation: `headline` and the count of warnings as its first line (what the status bar
    shows), every warning on a line of its own below it (the Info log shows them); as WARNING when there are
    warnings (`level`), else INFO. The warnings are kept in `LAST_OUTCOME` for the SkinBridge panel."""
    LAST_OUTCOME.operation = getattr(op, "bl_label", "") or type(op).__name__
    LAST_OUTCOME.headline, LAST_OUTCOME.warnings = headline, list(warnings)
    if not warnings:
        op.report({"INFO"}, translate(headline))
        return
    count = f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''}"
    lines = "".join(f"\n  {w}" for w in warnings)
    op.report({level}, translate(f"{headline}: {count}, see the SkinBridge panel or Info{lines}"))


def registrar(classes, imports=(), exports=(), aliases=None):
    """(register, unregister) for `classes` plus File › Import entries `imports` and File › Export entries
    `exports`, each a (operator class, menu text) pair, shown in that order. `aliases` maps an operator id an
    earlier version used to the operator class that took its place: the old id keeps working in users' scripts
    (`bpy.ops.<old id>(...)`), hidden from menus and search."""
    classes = tuple(classes) + tuple(_alias(old, cls) for old, cls in (aliases or {}).items())

    def entries(items):
        def draw(self, context):
            for cls, text in items:
                self.layout.operator(cls.bl_idname, text=text)
        return draw

    menus = [(bpy.types.TOPBAR_MT_file_import, entries(imports)), (bpy.types.TOPBAR_MT_file_export, entries(exports))]

    def register():
        for c in classes:
            bpy.utils.register_class(c)
        for menu, draw in menus:
            menu.append(draw)

    def unregister():
        for menu, draw in reversed(menus):
            menu.remove(draw)
        for c in reversed(classes):
            bpy.utils.unregister_class(c)

    return register, unregister


def _alias(old_id: str, cls) -> type:
    """An operator class that is `cls` under the id `old_id` (the same properties and behaviour)."""
    category, _, name = old_id.partition(".")
    # a copy of the class, not a subclass: Blender binds one RNA struct per registered class, and a subclass of a
    # registered operator would inherit (and take over) its binding
    body = {k: v for k, v in vars(cls).items() if k not in ("__dict__", "__weakref__", "bl_rna")}
    body.update(bl_idname=old_id, bl_options=set(getattr(cls, "bl_options", ())) | {"INTERNAL"},
                __doc__=f"{cls.__doc__} (old id of {cls.bl_idname})")
    return type(f"{category.upper()}_OT_{name}", cls.__bases__, body)


def protect_scene_files(session) -> None:
    """Every file the open Blender data refers to (image textures, libraries, the .blend itself) as an input
    of the output `session` (core/fileio.py): an export never overwrites them."""
    if session is None:
        return
    if bpy.data.filepath:
        session.protect(bpy.data.filepath)
    for coll in (bpy.data.images, bpy.data.libraries):
        for item in coll:
            path = getattr(item, "filepath", "")
            if path and getattr(item, "packed_file", None) is None:
                try:
                    session.protect(bpy.path.abspath(path, library=getattr(item, "library", None)))
                except (ValueError, TypeError):
                    continue


def _new_objects_chosen(context, before: set) -> None:
    """As Blender's own importers do: the objects made by the import selected (the others not), the armature
    active, else a mesh, else any new object."""
    layer = context.view_layer
    layer.update()
    new = [ob for ob in layer.objects if ob.as_pointer() not in before]
    if not new:
        return
    for ob in layer.objects:
        if ob.select_get() and ob not in new:
            ob.select_set(False)
    for ob in new:
        try:
            ob.select_set(True)
        except RuntimeError:  # hidden (an LOD level above 0): stays unselected
            pass
    active = next((o for o in new if o.type == "ARMATURE"), None) or next(
        (o for o in new if o.type == "MESH" and o.visible_get()), None) or new[0]
    layer.objects.active = active


def import_each(op, import_one) -> set[str]:
    """Run `import_one(path)` (returning its warnings, or an object with `.warnings`) for every file the import
    operator `op` was given (its `files` in `directory`, else `filepath`); a failure is an ERROR report naming
    the file, and one summary reports the warnings, each with its file's name (`report_outcome`). The objects
    made are left selected and the new armature (or mesh) active."""
    context = bpy.context
    before = {ob.as_pointer() for ob in context.view_layer.objects}
    paths = [os.path.join(op.directory, f.name) for f in op.files if f.name] or [op.filepath]
    done: list[str] = []
    warnings: list[str] = []
    for path in paths:
        made_before = {ob.as_pointer() for ob in bpy.data.objects}
        try:
            result = import_one(path)
        except (FormatError, ExportError, OSError) as e:
            op.report({"ERROR"}, translate(f"{os.path.basename(path)}: {e}"))
            continue
        except Exception as e:  # a fault of ours in one file must not cost the user the other files
            op.report({"ERROR"}, translate(f"{os.path.basename(path)}: internal error ({type(e).__name__}: {e})"))
            continue
        more = result if isinstance(result, list) else result.warnings
        stamp_source([ob for ob in bpy.data.objects if ob.as_pointer() not in made_before], os.path.abspath(path))
        warnings += [f"{os.path.basename(path)}: {w}" for w in more]
        done.append(os.path.basename(path))
    if done:
        _new_objects_chosen(context, before)
        report_outcome(op, f"Imported {done[0] if len(done) == 1 else f'{len(done)} files'}", warnings)
    return {"FINISHED"} if done else {"CANCELLED"}


class ImportFiles:
    """Mixin of an import operator of several files (with `file_operator(..., several=True)`): the class gives
    `import_one(context, path)` returning the file's warnings."""

    def import_one(self, context, path: str) -> list[str]:
        raise NotImplementedError

    def execute(self, context):
        return import_each(self, lambda path: self.import_one(context, path))


class OptionsPopup:
    """Mixin of an import operator (before ImportHelper) whose options matter for a dropped file: dropped (its
    path given) it shows them in a popup before importing; from the File menu it opens the file browser."""

    def invoke(self, context, event):
        return self.invoke_popup(context)


# Run by an export's invoke before the file browser opens, each as f(operator, context): the add-on's
# preferred option values (app/preferences.py), kept out of this layer, which knows no format.
START_VALUES: list = []

# Asked by an import operator for the folders the user's preferences add to one of its reading options (a folder
# list such as NWN2's skeleton path), each as f(context, option name) -> folders: app/preferences.py's, kept out
# of this layer as START_VALUES is.
READ_FOLDERS: list = []


def preferred_folders(context, option: str) -> list[str]:
    """The folders every READ_FOLDERS source gives for the reading option `option`, in order."""
    return [folder for source in READ_FOLDERS for folder in source(context, option)]


class ExportFile:
    """Mixin of an export operator: the class gives `export(context)` returning warnings, run through
    `export_reporting` (the scope the user chose, the output guard, one report)."""

    def export(self, context) -> list[str]:
        raise NotImplementedError

    def invoke(self, context, event):
        """The preferred option values first (`START_VALUES`), then the file browser; in background mode,
        which has none, the export runs with the path given."""
        for start in START_VALUES:
            start(self, context)
        if bpy.app.background:
            return self.execute(context)
        return super().invoke(context, event)

    def execute(self, context):
        return export_reporting(self, lambda: self.export(context))


def bone_curves(arm_ob, act) -> int:
    """How many F-curves of `act` animate something that exists: a bone of `arm_ob`, or anything other than a
    pose bone (shape keys, a camera)."""
    names = set(arm_ob.data.bones.keys())
    n = 0
    for cb in compat.channelbags(act):
        for fc in cb.fcurves:
            m = bact.POSE_BONE_PATH.match(fc.data_path)
            n += bool(m is None or bact.unescape_bone_name(m.group(1)) in names)
    return n


def unmatched_motion(arm_ob, actions) -> bool:
    """The one rule of every motion import, the operators' and convert's --motion alike: motions none of whose
    tracks animates a bone of `arm_ob` (or anything other than a pose bone) are refused."""
    return bool(actions) and not sum(bone_curves(arm_ob, a) for a in actions)


def _scene_time(scene) -> tuple:
    return scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end, scene.frame_current


def _put_scene_time(scene, saved: tuple) -> None:
    if _scene_time(scene) != saved:  # a motion import may set MMD's 30 fps and its range: undone with it
        scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end = saved[:4]
        scene.frame_set(saved[4])


def export_armature(op, context):
    """The armature a motion export takes: in a Collection Exporter (the operator's `collection`) the one
    armature of that collection or deforming its meshes, never the active rig of another collection; else the
    user's choice (`find_armature`). NoTarget naming what is there when it is not exactly one."""
    name = getattr(op, "collection", "") or None
    if name is None:
        return find_armature(context, required=True)
    coll = bpy.data.collections.get(name)
    if coll is None:
        raise NoTarget(f"the collection {name!r} does not exist")
    arms = []
    for ob in coll.all_objects:
        arm = armature_of(ob)
        if arm is not None and arm not in arms:
            arms.append(arm)
    if len(arms) != 1:
        held = f"{len(arms)} armatures ({', '.join(sorted(a.name for a in arms))})" if arms else "no armature"
        raise NoTarget(f"the collection {name} holds {held}: a motion export takes one")
    return arms[0]


def import_motions(op, context, import_one, what: str = "motion") -> set[str]:
    """The import operator `op` of motion files onto the armature the user chose (`find_armature`: the active
    or selected one, else the only one; refused naming the candidates otherwise). Each file on its own:
    `import_one(path, armature)` returns (actions, warnings); a file whose actions animate none of the
    armature's bones is an error, and everything it made is removed and the armature's action put back. Every
    message names its file; one summary (`report_outcome`); FINISHED when at least one file was imported."""
    try:
        arm = find_armature(context, required=True)
    except NoTarget as e:
        op.report({"ERROR"}, translate(f"no {what} imported: {e}"))
        return {"CANCELLED"}
    paths = [os.path.join(op.directory, f.name) for f in op.files if f.name] or [op.filepath]
    done = []
    all_warnings: list[str] = []
    for path in paths:
        name = os.path.basename(path)
        actions_before = {a.as_pointer() for a in bpy.data.actions}
        objects_before = {o.as_pointer() for o in bpy.data.objects}
        ad = arm.animation_data
        saved = (ad.action, ad.action_slot) if ad is not None else None
        time = _scene_time(context.scene)
        try:
            actions, warnings = import_one(path, arm)
        except (FormatError, ExportError, OSError, ValueError) as e:
            _put_scene_time(context.scene, time)
            text = str(e)
            op.report({"ERROR"}, translate(text if text.startswith(name) else f"{name}: {text}"))
            continue
        if unmatched_motion(arm, actions):
            _undo_motion(arm, saved, actions_before, objects_before)
            _put_scene_time(context.scene, time)
            op.report({"ERROR"}, translate(f"{name}: none of its tracks matches a bone of {arm.name}: nothing "
                                           "imported (select the armature this motion was made for)"))
            continue
        all_warnings += [w if w.startswith(name) else f"{name}: {w}" for w in warnings]
        done.append(name)
    if done:
        report_outcome(op, f"{len(done)} {what}(s) imported onto {arm.name}", all_warnings)
    return {"FINISHED"} if done else {"CANCELLED"}


def export_motions(op, context, export, what: str, no_action: str | None) -> set[str]:
    """The export operator `op` of the motion(s) of the armature the user chose (`export_armature`: a Collection
    Exporter's own rig, else `find_armature` as `import_motions`). `export(arm, action)` returns (headline,
    warnings); `action` is the armature's assigned action, refused with `no_action` (naming the armature after
    it) when there is none, or None when `no_action` is None (the export picks its own). Every file is written
    through one output session that never overwrites a file the scene uses; a failure is an ERROR report and
    CANCELLED, else one summary."""
    try:
        arm = export_armature(op, context)
    except NoTarget as e:
        op.report({"ERROR"}, translate(f"no {what} exported: {e}"))
        return {"CANCELLED"}
    act = None
    if no_action is not None:
        act = arm.animation_data.action if arm.animation_data else None
        if act is None:
            op.report({"ERROR"}, translate(f"{arm.name} {no_action}"))
            return {"CANCELLED"}
    try:
        with output_session() as session:
            protect_scene_files(session)
            headline, warnings = export(arm, act)
    except (ExportError, ValueError, OSError) as e:
        op.report({"ERROR"}, translate(str(e)))
        return {"CANCELLED"}
    report_outcome(op, headline, warnings)
    return {"FINISHED"}


def _undo_motion(arm, saved, actions_before: set, objects_before: set) -> None:
    """Remove the actions and objects made since the `..._before` sets and put back the armature's action."""
    if saved is None:
        if arm.animation_data is not None:
            arm.animation_data_clear()
    else:
        if arm.animation_data.action != saved[0]:
            arm.animation_data.action = saved[0]
        if saved[1] is not None and arm.animation_data.action_slot != saved[1]:
            arm.animation_data.action_slot = saved[1]
    new_objects = [o for o in bpy.data.objects if o.as_pointer() not in objects_before]
    data = [o.data for o in new_objects if o.data is not None]
    if new_objects:
        bpy.data.batch_remove(new_objects)
    orphans = [d for d in data if d.users == 0]
    if orphans:
        bpy.data.batch_remove(orphans)
    new_actions = [a for a in bpy.data.actions if a.as_pointer() not in actions_before]
    if new_actions:
        bpy.data.batch_remove(new_actions)


def export_reporting(op, export) -> set[str]:
    """Run `export()` (returning warnings) for the export operator `op`: an ExportError, OSError, an ambiguous
    choice of model or a writer's FormatError (a value it cannot write, as `convert` reports it) becomes an
    ERROR report and CANCELLED; else one summary (`report_outcome`).

    What is exported follows the user's choice (`scene.export_scope`): a Collection Exporter's `collection`
    (the operator's `collection` property) and the operator's `selected_only`. Every file is written through
    one output session (core/fileio.py): never onto a file the scene uses (textures, libraries, the .blend),
    staged beside its target and renamed into place only when the whole export has succeeded."""
    collection = getattr(op, "collection", "") or None
    try:
        with export_scope(collection, getattr(op, "selected_only", False)):
            with output_session() as session:  # a format may lay out a project around the chosen file
                protect_scene_files(session)
                warnings = export()
    except (ExportError, NoTarget, FormatError, OSError) as e:
        op.report({"ERROR"}, translate(str(e)))
        return {"CANCELLED"}
    report_outcome(op, f"Exported {os.path.basename(getattr(op, 'filepath', '') or '') or 'the model'}", warnings)
    return {"FINISHED"}
