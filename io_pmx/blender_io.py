"""PMX model import and export in Blender: file → records → core → bpy and back. Shared by the operators,
the command line and the bench script.

Import is one transaction: the whole file is parsed, checked and mapped before the first datablock is created;
if building the shared scene or the MMD extras fails, every datablock created since the start is removed.
Export is read-only (the bridge reads rest data with the armature in Rest Position, and puts back what it
switched in `finally`), validated with `validate(..., for_export=True)` before a byte is written, and
written to a temporary file renamed into place.
"""
from __future__ import annotations

import os
import re

import bpy

from ..blender import scene as bscene
from ..core.errors import ExportError, FormatError
from ..core.fileio import read_bytes, write_atomic
from . import blender_mmd, convert, pmx
from .validate import raise_for_errors, validate

# Faults that would index out of range or loop when building: import refuses them (DESIGN, "Bad input").
_FATAL = re.compile(r"index|is not a bone|cycle|own parent|consume")
_ID_COLLECTIONS = ("objects", "meshes", "armatures", "materials", "images", "collections", "node_groups",
                   "actions", "textures")


def _ids() -> dict[str, set[int]]:
    return {name: {x.as_pointer() for x in getattr(bpy.data, name)} for name in _ID_COLLECTIONS}


def _remove_new(before: dict[str, set[int]]) -> None:
    """Remove every datablock created since `before` (objects first)."""
    for name in _ID_COLLECTIONS:
        new = [x for x in getattr(bpy.data, name) if x.as_pointer() not in before[name]]
        if new:
            bpy.data.batch_remove(new)


def load(path: str) -> tuple[pmx.PmxModel, list[str]]:
    """Read and check a PMX file: FormatError for structural faults and for values that would index out of
    range or loop; the other findings come back as warnings naming the element."""
    model = pmx.read(read_bytes(path))
    findings = validate(model, for_export=False)
    fatal = [f for f in findings if f.severity == "error" and _FATAL.search(f.message)]
    if fatal:
        lines = "; ".join(str(f) for f in fatal[:5])
        more = f" (and {len(fatal) - 5} more)" if len(fatal) > 5 else ""
        raise FormatError(f"{len(fatal)} fault(s) that would index out of range or loop: {lines}{more}",
                          fatal[0].offset, fatal[0].field)
    return model, list(model.warnings) + [str(f) for f in findings if f not in fatal]


def import_pmx(context, path: str, scale: float = convert.DEFAULT_SCALE) -> bscene.ImportResult:
    if not scale > 0:
        raise FormatError(f"scale {scale} is not positive")
    model, warnings = load(path)
    name = os.path.splitext(os.path.basename(path))[0]
    core_scene, more = convert.to_scene(model, name, scale)
    warnings += more
    # Textures are built by blender_mmd (a missing file becomes a placeholder, not a failed import).
    textures = [m.base_color_texture for m in core_scene.materials]
    for m in core_scene.materials:
        m.base_color_texture = None
    base_dir = os.path.dirname(os.path.abspath(path))
    before = _ids()
    try:
        result = bscene.build_scene(context, core_scene, name, base_dir)
        blender_mmd.build_extras(context, result, core_scene, textures, base_dir, warnings)
    except BaseException:
        _remove_new(before)
        raise
    result.warnings[:0] = warnings
    return result


def gather_model(context, scale: float | None = None, selected_only: bool = False) -> tuple[pmx.PmxModel, list[str]]:
    """The PMX records export would write (read-only), not yet validated."""
    meshes, arm_ob = bscene.exportable_objects(context, selected_only)
    core_scene, warnings = bscene.gather_scene(context, selected_only=selected_only, tangents=False)
    if not core_scene.meshes:
        raise ExportError("nothing to export: no visible mesh with faces")
    blender_mmd.read_extras(core_scene, arm_ob, meshes)
    model, more = convert.from_scene(core_scene, scale)
    return model, warnings + more


def export_pmx(context, path: str, scale: float | None = None, selected_only: bool = False,
               mmd_rig: bool = False, bone_map=None, arm_angle: float = 0.0) -> list[str]:
    """Write the visible model to `path`. `scale` is the import scale the model uses (None: the one stored
    with the model, else 0.08); positions are divided by it (× 12.5 by default). `mmd_rig`, `bone_map` (a JSON
    file path or dict) and `arm_angle` (degrees): see mmd_rig.py, mmd_bone_map.py and mmd_arm_angle.py."""
    model, warnings = gather_model(context, scale, selected_only)
    # --- MMD control rig and arm angle: on the gathered records, before validation ---
    if mmd_rig or arm_angle:
        from . import mmd_rig as rig

        warnings += rig.apply(model, rig=mmd_rig, bone_map=bone_map, arm_angle=arm_angle)
    # --- end MMD control rig ---
    findings = validate(model, for_export=True)
    raise_for_errors(findings)
    warnings += [str(f) for f in findings]
    data = pmx.write(model)
    bscene._stage("write")
    write_atomic(path, data)
    return warnings


def export_target(context, outdir: str, name: str, options) -> tuple[list[str], list[str]]:
    """`convert --to pmx`: OUTDIR/NAME.pmx (texture paths written as the model holds them)."""
    path = os.path.join(outdir, name + ".pmx")
    if os.path.realpath(path) in set(getattr(options, "protected", ()) or ()):
        raise ExportError(f"refusing to overwrite the input {path}")
    os.makedirs(outdir, exist_ok=True)
    warnings = export_pmx(context, path, mmd_rig=getattr(options, "mmd_rig", False),
                          bone_map=getattr(options, "bone_map", None),
                          arm_angle=getattr(options, "arm_angle", 0.0))
    # A .vmd per action next to the model (retargeted onto this PMX when rigged).
    from . import blender_vmd_retarget

    written, more = blender_vmd_retarget.export_target_motions(context, outdir, name, options)
    return [path] + written, warnings + more
