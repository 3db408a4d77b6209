"""The `skinbridge` command: the same pipelines as the add-on, without the UI.

    skinbridge convert INPUT --to urhox [-o OUTDIR] [-n NAME]
    skinbridge info FILE
    skinbridge demo [-o OUTDIR]

Also runs inside Blender: `blender -b -P cli.py -- convert ...`.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

if __package__ in (None, ""):  # run as a script (blender -P cli.py, python cli.py): load the package by path
    import importlib.util

    _root = os.path.dirname(os.path.abspath(__file__))
    _spec = importlib.util.spec_from_file_location("skinbridge", os.path.join(_root, "__init__.py"),
                                                   submodule_search_locations=[_root])
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["skinbridge"] = _mod
    _spec.loader.exec_module(_mod)
    __package__ = "skinbridge"

from .core.errors import ExportError, FormatError  # noqa: E402

TARGETS = ("urhox",)


def _bpy():
    """Import bpy with Blender's user files kept in a temporary folder, and register the add-on."""
    os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="skinbridge-bl-user-"))
    import bpy

    from . import register

    try:
        register()
    except ValueError:  # already registered (running inside Blender with the extension enabled)
        pass
    return bpy


def _empty_scene(bpy) -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    from . import register

    try:
        register()
    except ValueError:
        pass


def import_any(bpy, path: str) -> list[str]:
    """Import a file of any format we read into the current (empty) scene; returns warnings."""
    ext = os.path.splitext(path)[1].lower()
    ctx = bpy.context
    if ext in (".glb", ".gltf"):
        res = bpy.ops.import_scene.gltf(filepath=path)
        if res != {"FINISHED"}:
            raise FormatError(f"the glTF importer could not read {path}")
        return []
    if ext == ".mdl":
        from .io_urhox import blender_io

        return blender_io.import_mdl(ctx, path).warnings
    raise FormatError(f"no importer for '{ext}' files", None, "file extension")


def cmd_convert(args) -> int:
    if args.to not in TARGETS:
        print(f"error: --to {args.to}: expected one of {', '.join(TARGETS)}", file=sys.stderr)
        return 2
    if len(args.inputs) > 1 and args.name:
        print("error: -n/--name applies to one input only", file=sys.stderr)
        return 2
    bpy = _bpy()
    from .core.naming import safe_file_name
    from .io_urhox import blender_io

    failed = 0
    for i, src in enumerate(args.inputs, 1):
        stem = os.path.splitext(os.path.basename(src))[0]
        outdir = args.output or f"{stem}_UrhoX"
        if len(args.inputs) > 1 and args.output:
            outdir = os.path.join(args.output, safe_file_name(stem))
        name = safe_file_name(args.name or stem)
        target = os.path.join(outdir, name + ".mdl")
        print(f"[{i}/{len(args.inputs)}] {src} → {target}", file=sys.stderr)
        try:
            if not os.path.isfile(src):
                raise FileNotFoundError(src)
            if os.path.exists(target) and os.path.samefile(src, target):
                raise ExportError(f"refusing to overwrite the input {src}")
            _empty_scene(bpy)
            warnings = import_any(bpy, src)
            warnings += blender_io.export_mdl(bpy.context, target, args.profile, deform_only=args.deform_only)
        except (FormatError, ExportError, OSError, RuntimeError) as e:
            print(f"error: {src}: {e}", file=sys.stderr)
            failed += 1
            continue
        for w in warnings:
            print(f"warning: {src}: {w}", file=sys.stderr)
        print(target)
    return 1 if failed else 0


def info_file(path: str) -> dict:
    from .core.fileio import read_bytes

    data = read_bytes(path)
    magic = data[:4]
    if magic in (b"UMD2", b"UMDL", b"UMD3"):
        from .io_urhox.model_info import info

        return info(data)
    if magic in (b"UANI", b"UAN2"):
        from .io_urhox.ani_info import info

        return info(data, name=os.path.splitext(os.path.basename(path))[0])
    if magic == b"PMX ":
        from .io_pmx.info import info

        return info(data)
    raise FormatError(f"unknown file type (first bytes {magic!r})", 0, "magic")


def cmd_info(args) -> int:
    status = 0
    for path in args.files:
        try:
            result = info_file(path)
        except (FormatError, OSError) as e:
            print(f"error: {path}: {e}", file=sys.stderr)
            status = 1
            continue
        result = {"file": path, **result}
        print(json.dumps(result, indent=2, ensure_ascii=False, default=_json_default))
    return status


def _json_default(o):
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o).__name__)


def cmd_demo(args) -> int:
    _bpy()
    from .blender.demo import run_demo

    return run_demo(args.output)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="skinbridge", description="Move rigged, skinned, animated models between "
                                "Blender and game formats.")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("convert", help="convert model files (glTF/GLB or any format we read) to a game format")
    c.add_argument("inputs", nargs="+", metavar="INPUT")
    c.add_argument("--to", required=True, help="target format: urhox")
    c.add_argument("-o", "--output", help="output folder (default <stem>_UrhoX/)")
    c.add_argument("-n", "--name", help="model file name without extension (one input only)")
    c.add_argument("--profile", default="urhox", choices=["urhox"], help="export profile (default urhox)")
    c.add_argument("--deform-only", action="store_true", help="write deforming bones only")
    c.set_defaults(func=cmd_convert)
    i = sub.add_parser("info", help="print a JSON summary of model or animation files")
    i.add_argument("files", nargs="+", metavar="FILE")
    i.set_defaults(func=cmd_info)
    d = sub.add_parser("demo", help="build a skinned humanoid with a walk, export it with every exporter, check")
    d.add_argument("-o", "--output", default=None, help="output folder (default: a temporary folder)")
    d.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
        if "--" in sys.argv:  # inside Blender: blender -b -P cli.py -- convert ...
            argv = sys.argv[sys.argv.index("--") + 1:]
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
