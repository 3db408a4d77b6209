"""`convert`: import any file we read into an empty scene, then export it with a target's writer.

Shared by the command line (in-process or `blender -b -P cli.py -- ...`) and batch scripts. Formats plug in
through three registries:
  * IMPORTERS[ext](context, path, options) -> warnings          (file → Blender scene)
  * MOTION_LOADERS[ext](context, path, armature, options) -> warnings   (`--motion FILE`, loaded as an action)
  * TARGETS[name](context, outdir, name, options) -> (written paths, warnings)
"""
from __future__ import annotations

import os
import bpy

from ..convert_options import ConvertOptions  # noqa: F401  (re-exported)
from ..core.errors import ExportError, FormatError


def _import_gltf(context, path, options) -> list[str]:
    if bpy.ops.import_scene.gltf(filepath=path) != {"FINISHED"}:
        raise FormatError(f"the glTF importer could not read {path}")
    return []


def _import_mdl(context, path, options) -> list[str]:
    from ..io_urhox import blender_io

    return blender_io.import_mdl(context, path, "auto").warnings


def _target_urhox(context, outdir, name, options):
    from ..io_urhox import blender_io

    return blender_io.export_package(context, outdir, name, options)


def _load_ani(context, path, armature, options) -> list[str]:
    from ..io_urhox import blender_ani

    return blender_ani.load_motion(context, path, armature, options)


def _import_pmx(context, path, options) -> list[str]:
    from ..io_pmx import blender_io

    return blender_io.import_pmx(context, path).warnings


def _target_pmx(context, outdir, name, options):
    from ..io_pmx import blender_io

    return blender_io.export_target(context, outdir, name, options)


def _load_vmd(context, path, armature, options) -> list[str]:
    from ..io_pmx import blender_vmd

    return blender_vmd.load_motion(context, path, armature, options)


IMPORTERS = {".glb": _import_gltf, ".gltf": _import_gltf, ".mdl": _import_mdl, ".pmx": _import_pmx}
MOTION_LOADERS = {".ani": _load_ani, ".vmd": _load_vmd}
TARGETS = {"urhox": _target_urhox, "pmx": _target_pmx}


def reset_scene() -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    from .. import register

    try:
        register()
    except ValueError:  # already registered
        pass


def _armature(context):
    return next((o for o in context.view_layer.objects if o.type == "ARMATURE"), None)


def convert_file(src: str, outdir: str, name: str, options: ConvertOptions) -> tuple[list[str], list[str]]:
    """Convert one input into `outdir`; returns (written paths, warnings). Raises FormatError, ExportError
    or OSError naming what went wrong."""
    ext = os.path.splitext(src)[1].lower()
    if ext not in IMPORTERS:
        raise FormatError(f"no importer for '{ext}' files", None, "file extension")
    if options.target not in TARGETS:
        raise ExportError(f"unknown target {options.target!r}; expected one of {', '.join(TARGETS)}")
    if not os.path.isfile(src):
        raise FileNotFoundError(f"no such file: {src}")
    reset_scene()
    context = bpy.context
    warnings = IMPORTERS[ext](context, src, options)
    for motion in options.motions:
        mext = os.path.splitext(motion)[1].lower()
        loader = MOTION_LOADERS.get(mext)
        if loader is None:
            raise FormatError(f"no motion loader for '{mext}' files ({motion})", None, "--motion")
        arm = _armature(context)
        if arm is None:
            raise ExportError(f"--motion {motion}: the model has no armature")
        warnings += loader(context, motion, arm, options)
    options.protected = options.protected | {os.path.realpath(src)}
    written, more = TARGETS[options.target](context, outdir, name, options)
    return written, warnings + more
