"""The add-on's registration, read from the format registry: each format's own operators, a plain Import /
Export entry for a format that has a Blender import or export target but no operators of its own, the
drag-and-drop handlers, the contact-sheet operator and the Rest Compare sidebar.

Drag and drop: a FileHandler per format for the extensions no other format claims; for an extension that
several formats share (UrhoX and Wallpaper Engine `.mdl`), one handler whose operator reads each dropped
file's content and calls the import operator of the format it is.
"""
from __future__ import annotations

import importlib
import os
import sys

import bpy
from bpy.props import CollectionProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper, poll_file_object_drop

from .. import formats
from ..blender.ops_common import ExportFile, ImportFiles, file_operator, option_values
from ..blender.selection import armatures
from ..blender.translations import translate
from . import ops_render, ops_rest_compare, preferences, sidebar
from .options import ConvertOptions
from ..core.errors import FormatError

DROP_OPERATOR = "wm.skinbridge_drop_import"
_ROOT = __package__.rsplit(".", 1)[0]

_registered: list = []  # classes, in registration order
_menus: list = []  # (menu, draw function)
_modules: list = []  # format operator modules registered
errors: list[str] = []  # formats whose operators could not be registered (the others still are)


def _operator(idname: str):
    group, _, name = idname.partition(".")
    return getattr(getattr(bpy.ops, group), name)


def import_idname(spec) -> str | None:
    if spec.import_operator:
        return spec.import_operator
    return f"import_scene.skinbridge_{spec.name}" if spec.has("blender_import") else None


def export_idname(spec) -> str | None:
    if spec.export_operator:
        return spec.export_operator
    return f"export_scene.skinbridge_{spec.name}" if spec.has("export_target") else None


def _plain_import(spec):
    """File › Import for a format with `blender_import` and no operators of its own."""

    def import_one(self, context, path: str) -> list[str]:
        return spec.get("blender_import")(context, path, ConvertOptions())

    cls = type(f"IMPORT_SCENE_OT_skinbridge_{spec.name}", (ImportFiles, bpy.types.Operator, ImportHelper), {
        "__doc__": f"Import {spec.label} files",
        "bl_idname": import_idname(spec), "bl_label": f"Import {spec.label}", "bl_options": {"REGISTER", "UNDO"},
        "__annotations__": {}, "import_one": import_one,
    })
    return file_operator(spec.extensions, several=True)(cls)


def _plain_export(spec):
    """File › Export for a format with an `export_target` and no operators of its own: the package is written
    into the chosen file's folder, named by its stem, with the target's options (`spec.options`)."""

    def export(self, context) -> list[str]:
        outdir, base = os.path.split(self.filepath)
        options = ConvertOptions(target=spec.target or spec.name, **option_values(self, spec.options))
        return spec.get("export_target")(context, outdir or ".", os.path.splitext(base)[0], options)[1]

    cls = type(f"EXPORT_SCENE_OT_skinbridge_{spec.name}", (ExportFile, bpy.types.Operator, ExportHelper), {
        "__doc__": f"Export the scene's model as {spec.label}",
        "bl_idname": export_idname(spec), "bl_label": f"Export {spec.label}", "bl_options": {"PRESET"},
        "__annotations__": {}, "export": export,
    })
    return file_operator(spec.extensions[:1], spec.options, collection=True)(cls)


class WM_OT_skinbridge_drop_import(bpy.types.Operator):
    """Import dropped files, each with the importer of the format its content is"""

    bl_idname = DROP_OPERATOR
    bl_label = "Import (format by content)"
    bl_options = {"REGISTER", "UNDO", "INTERNAL"}
    directory: StringProperty(subtype="DIR_PATH", options={"HIDDEN", "SKIP_SAVE"})
    files: CollectionProperty(type=bpy.types.OperatorFileListElement, options={"HIDDEN", "SKIP_SAVE"})
    filepath: StringProperty(subtype="FILE_PATH", options={"HIDDEN", "SKIP_SAVE"})

    def execute(self, context):
        paths = [os.path.join(self.directory, f.name) for f in self.files if f.name] or [self.filepath]
        groups: dict[str, list[str]] = {}
        failed = 0
        for path in paths:
            try:
                spec = formats.identify_file(path)
            except (FormatError, OSError) as e:
                self.report({"ERROR"}, translate(f"{os.path.basename(path)}: {e}"))
                failed += 1
                continue
            idname = import_idname(spec)
            if idname is None:
                self.report({"ERROR"}, translate(f"{os.path.basename(path)}: {spec.label} files cannot be imported"))
                failed += 1
                continue
            groups.setdefault(idname, []).append(path)
        done = 0
        for idname, group in groups.items():
            by_folder: dict[str, list[str]] = {}
            for path in group:
                by_folder.setdefault(os.path.dirname(path), []).append(os.path.basename(path))
            for folder, names in by_folder.items():
                try:
                    result = _operator(idname)("EXEC_DEFAULT", directory=folder, files=[{"name": n} for n in names],
                                               filepath=os.path.join(folder, names[0]))
                except (RuntimeError, AttributeError) as e:  # its errors were reported; a missing operator too
                    self.report({"ERROR"}, translate(f"{', '.join(names)}: {str(e).strip().splitlines()[-1]}"))
                    continue
                done += "FINISHED" in result
        return {"FINISHED"} if done else {"CANCELLED"}


def _file_handler(label: str, idname_suffix: str, import_op: str | None, export_op: str | None, exts: list[str],
                  motion: bool):
    def poll_drop(cls, context):
        if not poll_file_object_drop(context):
            return False
        if motion:  # with several armatures the import runs and names them (nothing chosen silently)
            return bool(armatures(context))
        return True

    attrs = {"bl_idname": f"IO_FH_skinbridge_{idname_suffix}", "bl_label": label,
             "bl_file_extensions": ";".join(exts), "poll_drop": classmethod(poll_drop)}
    if import_op:
        attrs["bl_import_operator"] = import_op
    if export_op:
        attrs["bl_export_operator"] = export_op
    return type(f"IO_FH_skinbridge_{idname_suffix}", (bpy.types.FileHandler,), attrs)


def _classes_and_menus():
    classes, imports, exports = [], [], []
    specs = formats.all_specs()
    for spec in specs:
        if spec.operators or spec.foreign_operators:
            continue
        if not spec.import_operator and spec.has("blender_import"):
            cls = _plain_import(spec)
            classes.append(cls)
            imports.append((cls, f"{spec.label} ({', '.join(spec.extensions)})"))
        if not spec.export_operator and spec.has("export_target"):
            cls = _plain_export(spec)
            classes.append(cls)
            exports.append((cls, f"{spec.label} ({spec.extensions[0]})"))
    shared = formats.shared_extensions()
    classes.append(WM_OT_skinbridge_drop_import)
    for spec in specs:
        if spec.foreign_operators or import_idname(spec) is None or (spec.operators and spec.operators not in _modules):
            continue
        own = [e for e in spec.extensions if e not in shared]
        if own:
            classes.append(_file_handler(spec.label, spec.name, import_idname(spec), export_idname(spec), own,
                                         spec.kind == "motion"))
    if shared:
        classes.append(_file_handler("SkinBridge (format by content)", "by_content", DROP_OPERATOR, None,
                                     sorted(shared), False))
        for spec in specs:  # Collection Exporters of a format whose extensions are all shared
            own = [e for e in spec.extensions if e not in shared]
            if own or spec.foreign_operators or export_idname(spec) is None or \
                    (spec.operators and spec.operators not in _modules):
                continue
            classes.append(_file_handler(f"{spec.label} (export)", f"{spec.name}_export", None, export_idname(spec),
                                         [spec.extensions[0]], False))
    return classes, imports, exports


def register() -> None:
    """Raises ValueError when already registered (a factory reset of Blender keeps add-on classes)."""
    if _registered or _modules:
        raise ValueError("SkinBridge is already registered")
    errors.clear()
    sidebar.register()  # first: format packages hang their panels under the SkinBridge tab's model panel
    for spec in formats.all_specs():
        if spec.operators and spec.operators not in _modules:
            try:
                module = importlib.import_module(f"{_ROOT}.{spec.operators}")
                module.register()
            except Exception as e:  # one broken format must not take the others' menus away
                errors.append(f"{spec.label}: {type(e).__name__}: {e}")
                print(f"SkinBridge: {spec.label} not registered: {e}", file=sys.stderr)
                continue
            _modules.append(spec.operators)
    classes, imports, exports = _classes_and_menus()
    for cls in classes:
        bpy.utils.register_class(cls)
        _registered.append(cls)

    def entries(items):
        def draw(self, context):
            for cls, text in items:
                self.layout.operator(cls.bl_idname, text=text)
        return draw

    for menu, items in ((bpy.types.TOPBAR_MT_file_import, imports), (bpy.types.TOPBAR_MT_file_export, exports)):
        if items:
            draw = entries(items)
            menu.append(draw)
            _menus.append((menu, draw))
    ops_render.register()
    ops_rest_compare.register()
    preferences.register({export_idname(s): t for t, s in formats.targets().items() if export_idname(s)})


def unregister() -> None:
    preferences.unregister()
    ops_rest_compare.unregister()
    ops_render.unregister()
    while _menus:
        menu, draw = _menus.pop()
        menu.remove(draw)
    while _registered:
        bpy.utils.unregister_class(_registered.pop())
    while _modules:
        importlib.import_module(f"{_ROOT}.{_modules.pop()}").unregister()
    sidebar.unregister()
