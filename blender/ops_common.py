"""What every format's operators share: registering classes with their File › Import / Export entries."""
from __future__ import annotations

import bpy


def registrar(classes, imports=(), exports=()):
    """(register, unregister) for `classes` plus File › Import entries `imports` and File › Export entries
    `exports`, each a (operator class, menu text) pair, shown in that order."""

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
    """Run `import_one(path)` (returning an object with `.warnings`) for every file the import operator `op` was
    given (its `files` in `directory`, else `filepath`); report each failure and warning with the file's name.
    The objects made are left selected and the new armature (or mesh) active."""
    import os

    from ..core.errors import ExportError, FormatError

    context = bpy.context
    before = {ob.as_pointer() for ob in context.view_layer.objects}
    paths = [os.path.join(op.directory, f.name) for f in op.files if f.name] or [op.filepath]
    done = 0
    for path in paths:
        try:
            result = import_one(path)
        except (FormatError, ExportError, OSError) as e:
            op.report({"ERROR"}, f"{os.path.basename(path)}: {e}")
            continue
        for w in result.warnings:
            op.report({"WARNING"}, f"{os.path.basename(path)}: {w}")
        done += 1
    if done:
        _new_objects_chosen(context, before)
    return {"FINISHED"} if done else {"CANCELLED"}


def bone_curves(arm_ob, act) -> int:
    """How many F-curves of `act` animate something that exists: a bone of `arm_ob`, or anything other than a
    pose bone (shape keys, a camera)."""
    from . import action as bact
    from . import compat

    names = set(arm_ob.data.bones.keys())
    n = 0
    for cb in compat.channelbags(act):
        for fc in cb.fcurves:
            m = bact._PATH.match(fc.data_path)
            n += bool(m is None or bact._unescape(m.group(1)) in names)
    return n


def import_motions(op, context, import_one, what: str = "motion") -> set[str]:
    """The import operator `op` of motion files onto the armature the user chose (`find_armature`: the active
    or selected one, else the only one; refused naming the candidates otherwise). Each file on its own:
    `import_one(path, armature)` returns (actions, warnings); a file whose actions animate none of the
    armature's bones is an error, and everything it made is removed and the armature's action put back. Every
    message names its file; FINISHED when at least one file was imported."""
    import os

    from ..core.errors import ExportError, FormatError
    from .selection import NoTarget, find_armature

    try:
        arm = find_armature(context, required=True)
    except NoTarget as e:
        op.report({"ERROR"}, f"no {what} imported: {e}")
        return {"CANCELLED"}
    paths = [os.path.join(op.directory, f.name) for f in op.files if f.name] or [op.filepath]
    done = []
    for path in paths:
        name = os.path.basename(path)
        actions_before = {a.as_pointer() for a in bpy.data.actions}
        objects_before = {o.as_pointer() for o in bpy.data.objects}
        ad = arm.animation_data
        saved = (ad.action, ad.action_slot) if ad is not None else None
        try:
            actions, warnings = import_one(path, arm)
        except (FormatError, ExportError, OSError, ValueError) as e:
            text = str(e)
            op.report({"ERROR"}, text if text.startswith(name) else f"{name}: {text}")
            continue
        matched = sum(bone_curves(arm, a) for a in actions)
        if actions and not matched:
            _undo_motion(arm, saved, actions_before, objects_before)
            op.report({"ERROR"}, f"{name}: none of its tracks matches a bone of {arm.name}: nothing imported "
                                 "(select the armature this motion was made for)")
            continue
        for w in warnings:
            op.report({"WARNING"}, w if w.startswith(name) else f"{name}: {w}")
        done.append(name)
    if done:
        op.report({"INFO"}, f"{len(done)} {what}(s) imported onto {arm.name}")
    return {"FINISHED"} if done else {"CANCELLED"}


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
    """Run `export()` (returning warnings) for the export operator `op`: an ExportError, OSError or an
    ambiguous choice of model becomes an ERROR report and CANCELLED, each warning a WARNING report.

    What is exported follows the user's choice (`scene.export_scope`): a Collection Exporter's `collection`
    (the operator's `collection` property) and the operator's `selected_only`. Every file is written through
    one output session (core/fileio.py): never onto a file the scene uses (textures, libraries, the .blend),
    staged beside its target and renamed into place only when the whole export has succeeded."""
    from ..core.errors import ExportError
    from ..core.fileio import output_session
    from .scene import export_scope
    from .selection import NoTarget

    collection = getattr(op, "collection", "") or None
    try:
        with export_scope(collection, getattr(op, "selected_only", False)):
            with output_session() as session:  # a format may lay out a project around the chosen file
                protect_scene_files(session)
                warnings = export()
    except (ExportError, NoTarget, OSError) as e:
        op.report({"ERROR"}, str(e))
        return {"CANCELLED"}
    for w in warnings:
        op.report({"WARNING"}, w)
    return {"FINISHED"}
