"""`convert`: import any file we read into an empty scene, then export it with a target's writer.

Shared by the command line (in-process or `blender -b -P cli.py -- ...`) and batch scripts. Every format comes
from the registry (`formats.py`): the input's spec by its content, its `blender_import`; each `--motion` file's
`motion_loader`; the target's `export_target`.
"""
from __future__ import annotations

import os

import bpy

from .. import formats
from ..blender.selection import NoTarget, find_armature
from ..core.errors import ExportError, FormatError
from .options import ConvertOptions  # noqa: F401  (re-exported)


def reset_scene() -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    from .operators import register

    try:
        register()
    except ValueError:  # already registered
        pass


def importable(path: str) -> formats.FormatSpec:
    """The spec of a model file we can bring into Blender; FormatError naming the file's format otherwise."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file: {path}")
    spec = formats.identify_file(path)
    if not spec.has("blender_import"):
        raise FormatError(f"{spec.label} files cannot be imported as a model", None, "format")
    return spec


def load_motion(context, path: str, options) -> list[str]:
    spec = formats.identify_file(path)
    if not spec.has("motion_loader"):
        raise FormatError(f"{path}: {spec.label} files are not motions", None, "--motion")
    try:
        arm = find_armature(context, required=True)
    except NoTarget as e:
        raise ExportError(f"--motion {path}: {e}") from None
    return spec.get("motion_loader")(context, path, arm, options)


def convert_file(src: str, outdir: str, name: str, options: ConvertOptions) -> tuple[list[str], list[str]]:
    """Convert one input into `outdir`; returns (written paths, warnings). Raises FormatError, ExportError
    or OSError naming what went wrong."""
    targets = formats.targets()
    if options.target not in targets:
        raise ExportError(f"unknown target {options.target!r}; expected one of {', '.join(targets)}")
    spec = importable(src)
    reset_scene()
    context = bpy.context
    warnings = spec.get("blender_import")(context, src, options)
    for motion in options.motions:
        warnings += load_motion(context, motion, options)
    options.protected = options.protected | {os.path.realpath(src)}
    written, more = targets[options.target].get("export_target")(context, outdir, name, options)
    return written, warnings + more
