"""`convert`: import any file we read into an empty scene, then export it with a target's writer.

Shared by the command line (in-process or `blender -b -P cli.py -- ...`) and batch scripts. Every format comes
from the registry (`formats.py`): the input's spec by its content, its `blender_import`; each `--motion` file's
`motion_loader`; the target's `export_target`.
"""
from __future__ import annotations

import os

import bpy

from .. import formats
from ..blender import action as bact
from ..blender.ops_common import unmatched_motion
from ..blender.props import json_prop
from ..blender.ops_common import protect_scene_files  # noqa: F401  (also used by the render command)
from ..blender.selection import NoTarget, find_armature
from ..core import fileio, workers
from ..core import model as cm
from ..core.errors import ExportError, FormatError
from .options import ConvertOptions  # noqa: F401  (re-exported)


def reset_scene() -> None:
    """An empty scene. The add-on's registration is the entry point's job (cli.py's `_bpy`, the add-on's own
    register, the tests' `addon` fixture); a factory reset keeps the classes registered. Signals wait for its end:
    Blender re-enables its own add-ons in it and prints, then swallows, an exception raised there (docs/architecture.md
    §7.1 "Signals")."""
    with workers.signals_deferred():
        bpy.ops.wm.read_factory_settings(use_empty=True)


def importable(path: str) -> formats.FormatSpec:
    """The spec of a model file we can bring into Blender; FormatError naming the file's format otherwise."""
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path} is a folder, not a model file: give a file inside it")
    if not formats.input_exists(path):  # a file, or an archive member ("pack.hak:head.mdb")
        raise FileNotFoundError(f"no such file: {path}")
    spec = formats.identify_file(path)
    if not spec.has("blender_import"):
        raise FormatError(f"{spec.label} files cannot be imported as a model", None, "format")
    return spec


def load_motion(context, path: str, options) -> list[str]:
    spec = formats.identify_file(path)
    if not spec.has("motion_loader"):
        raise FormatError(f"--motion {path}: {spec.label} files are not motions; give a motion file", None)
    try:  # shape-key animation (an SMD's VTA flex) goes onto the mesh: no armature needed
        arm = None if formats.file_kind(path, spec) == "flex" else find_armature(context, required=True)
    except NoTarget as e:
        raise ExportError(f"--motion {path}: {e}") from None
    before = {a.as_pointer() for a in bpy.data.actions}
    try:
        warnings = spec.get("motion_loader")(context, path, arm, options)
    except (FormatError, ExportError) as e:
        if path in str(e):
            raise
        raise type(e)(f"--motion {path}: {e}") from None
    new = [a for a in bpy.data.actions if a.as_pointer() not in before]
    if unmatched_motion(arm, new):
        raise ExportError(f"--motion {path}: none of its tracks matches a bone of the model ({arm.name}): give "
                          "a motion made for this model")
    return warnings


def convert_file(src: str, outdir: str, name: str, options: ConvertOptions) -> tuple[list[str], list[str]]:
    """Convert one input into `outdir`; returns (written paths, warnings). Raises FormatError, ExportError
    or OSError naming what went wrong.

    The whole package is written through one output session (core/fileio.py): no output may be an input
    (the model, each motion, every sidecar and texture read), every file is staged beside its target and
    renamed into place only when all are complete; on any failure the output folder is left as it was. The
    written paths are exactly the files renamed into place."""
    targets = formats.targets()
    if options.target not in targets:
        raise ExportError(f"unknown target {options.target!r}; expected one of {', '.join(targets)}")
    spec = importable(src)
    for motion in options.motions:
        if os.path.isdir(motion):
            raise IsADirectoryError(f"--motion {motion} is a folder, not a motion file: give a file inside it")
        if not os.path.exists(motion):
            raise FileNotFoundError(f"--motion {motion}: no such file")
    inputs = [src, *options.motions, *(options.protected or ())]
    inputs += options.given_paths()  # files an option names (PMX --bone-map) are inputs too
    with fileio.output_session(outdir, inputs) as session:
        session.check(outdir)  # the output folder itself is no input and lies in none
        reset_scene()
        context = bpy.context
        warnings = spec.get("blender_import")(context, src, options)
        for motion in options.motions:
            warnings += load_motion(context, motion, options)
        protect_scene_files(session)
        try:
            _, more = targets[options.target].get("export_target")(context, outdir, name, options)
        except NoTarget as e:  # several rigged models and none chosen: the user must say which
            raise ExportError(str(e)) from None
    return list(session.written), warnings + more + modes_not_kept(targets[options.target])


def modes_not_kept(spec) -> list[str]:
    """One warning naming the clips whose play mode (core.model CLIP_KEY) is not a loop when the target stores
    none: they will play as loops."""
    if spec.clip_modes:
        return []
    lost = []
    for act in bpy.data.actions:
        mode = (json_prop(act, bact.PROP).get(cm.CLIP_KEY) or {}).get("mode", cm.LOOP)
        if mode != cm.LOOP:
            lost.append(f"{act.name} ({mode})")
    if not lost:
        return []
    return [f"clip play modes not kept: {spec.label} stores none, so these play as loops: {', '.join(lost)}"]
