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


def _plan(args) -> list[tuple[str, str, str]]:
    """(input, output folder, model name) per input, names through DESIGN's naming rule."""
    from .core.naming import NameAllocator, safe_file_name

    folders = NameAllocator()
    plan = []
    for src in args.inputs:
        stem = os.path.splitext(os.path.basename(src))[0]
        if len(args.inputs) > 1:
            sub = folders.take(stem)
            outdir = os.path.join(args.output, sub) if args.output else f"{sub}_UrhoX"
        else:
            outdir = args.output or f"{safe_file_name(stem)}_UrhoX"
        plan.append((src, outdir, safe_file_name(args.name or stem)))
    return plan


def _convert_worker(src: str, outdir: str, name: str, options) -> tuple[list[str], list[str], str | None]:
    """One conversion; in a worker process it gets its own Blender user folder before bpy is imported."""
    if "bpy" not in sys.modules:
        os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="skinbridge-bl-user-")
    _bpy()
    from .blender.pipeline import convert_file

    try:
        written, warnings = convert_file(src, outdir, name, options)
    except (FormatError, ExportError, OSError, RuntimeError) as e:
        return [], [], str(e)
    return written, warnings, None


def cmd_convert(args) -> int:
    if len(args.inputs) > 1 and args.name:
        print("error: -n/--name applies to one input only", file=sys.stderr)
        return 2
    from .convert_options import ConvertOptions

    options = ConvertOptions(target=args.to, profile=args.profile, max_bones=args.max_bones,
                             deform_only=args.deform_only, ani_format=args.ani_format, motions=args.motion or [],
                             protected={os.path.realpath(p) for p in args.inputs})
    plan = _plan(args)
    total = len(plan)
    failed = 0

    def report(i, src, result):
        nonlocal failed
        written, warnings, error = result
        print(f"[{i}/{total}] {src}: {'FAILED' if error else 'done'}", file=sys.stderr)
        if error:
            print(f"error: {src}: {error}", file=sys.stderr)
            failed += 1
            return
        for w in warnings:
            print(f"warning: {src}: {w}", file=sys.stderr)
        for path in written:
            print(path)

    if args.jobs > 1 and total > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=min(args.jobs, total),
                                 mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(_convert_worker, src, outdir, name, options): src for src, outdir, name in plan}
            for i, fut in enumerate(as_completed(futures), 1):
                try:
                    result = fut.result()
                except Exception as e:  # a worker that died (crash, out of memory) fails its input only
                    result = ([], [], f"worker failed: {e!r}")
                report(i, futures[fut], result)
    else:
        for i, (src, outdir, name) in enumerate(plan, 1):
            print(f"[{i}/{total}] {src} -> {outdir}", file=sys.stderr)
            report(i, src, _convert_worker(src, outdir, name, options))
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

        result = info(data)
        for anim in result["animations"]:  # UrhoX files carry no name: use the file's
            anim["name"] = anim["name"] or os.path.splitext(os.path.basename(path))[0]
        return result
    if magic == b"PMX ":
        from .io_pmx.info import info

        return info(data)
    if data.startswith(b"Vocaloid Motion Data"):
        from .io_pmx.vmd_info import info

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


def cmd_check(args) -> int:
    from .core.fileio import read_bytes

    status = 0
    for path in args.files:
        try:
            magic = read_bytes(path)[:4]
        except OSError as e:
            print(f"error: {path}: {e}", file=sys.stderr)
            status = 1
            continue
        print(f"{path}:")
        if magic == b"PMX ":
            from .io_pmx.validate import check_command

            status = max(status, check_command(path, out=lambda line: print("  " + line)))
        else:
            print(f"  check is not available for this file type yet (first bytes {magic!r})")
            status = max(status, 2)
    return status


def cmd_demo(args) -> int:
    _bpy()
    from .blender.demo import run_demo

    return run_demo(args.output)


def _bone_limit(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 255:
        raise argparse.ArgumentTypeError("--max-bones takes 1 to 255")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="skinbridge", description="Move rigged, skinned, animated models between "
                                "Blender and game formats.")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("convert", help="convert model files (glTF/GLB or any format we read) to a game format")
    c.add_argument("inputs", nargs="+", metavar="INPUT")
    c.add_argument("--to", required=True, choices=["urhox"], help="target format")
    c.add_argument("-o", "--output", help="output folder (default <stem>_UrhoX/)")
    c.add_argument("-n", "--name", help="model file name without extension (one input only)")
    c.add_argument("-j", "--jobs", type=int, default=1, help="convert N inputs in parallel processes (default 1)")
    c.add_argument("--profile", default="urhox", choices=["urhox", "urho3d"],
                   help="urhox: glTF axes, all bones in every mapping (default); urho3d: left-handed Y up, "
                   "geometries split at --max-bones, morphs written")
    c.add_argument("--max-bones", type=_bone_limit, default=64, help="bones per geometry under urho3d (1-255, default 64)")
    c.add_argument("--deform-only", action="store_true",
                   help="drop bones that deform nothing and have no deforming descendants")
    c.add_argument("--ani-format", default="urhox", choices=["urhox", "urho3d"],
                   help="animation files: UrhoX UANI v2 (default) or classic Urho3D UANI")
    c.add_argument("--motion", action="append", metavar="FILE",
                   help="load a motion file onto the model as an action before export (repeatable)")
    c.set_defaults(func=cmd_convert)
    i = sub.add_parser("info", help="print a JSON summary of model or animation files")
    i.add_argument("files", nargs="+", metavar="FILE")
    i.set_defaults(func=cmd_info)
    k = sub.add_parser("check", help="list invariant violations with offset and field, and test the write-back (PMX)")
    k.add_argument("files", nargs="+", metavar="FILE")
    k.set_defaults(func=cmd_check)
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
