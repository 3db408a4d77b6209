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


def import_each(op, import_one) -> set[str]:
    """Run `import_one(path)` (returning an object with `.warnings`) for every file the import operator `op` was
    given (its `files` in `directory`, else `filepath`); report each failure and warning with the file's name."""
    import os

    from ..core.errors import FormatError

    paths = [os.path.join(op.directory, f.name) for f in op.files if f.name] or [op.filepath]
    done = 0
    for path in paths:
        try:
            result = import_one(path)
        except (FormatError, OSError) as e:
            op.report({"ERROR"}, f"{os.path.basename(path)}: {e}")
            continue
        for w in result.warnings:
            op.report({"WARNING"}, f"{os.path.basename(path)}: {w}")
        done += 1
    return {"FINISHED"} if done else {"CANCELLED"}


def export_reporting(op, export) -> set[str]:
    """Run `export()` (returning warnings) for the export operator `op`: an ExportError or OSError becomes an
    ERROR report and CANCELLED, each warning a WARNING report."""
    from ..core.errors import ExportError

    try:
        warnings = export()
    except (ExportError, OSError) as e:
        op.report({"ERROR"}, str(e))
        return {"CANCELLED"}
    for w in warnings:
        op.report({"WARNING"}, w)
    return {"FINISHED"}
