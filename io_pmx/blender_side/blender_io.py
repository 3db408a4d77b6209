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

import numpy as np


from ...blender import scene as bscene
from ...core.errors import ExportError, FormatError
from ...core.fileio import output_path, read_bytes, write_atomic
from . import blender_mmd
from . import blender_morphs
from . import blender_sdef
from ..model import convert
from ..model import pmd
from ..model import pmx
from ..model.units import METRES_PER_UNIT
from ..model.validate import raise_for_errors, validate
from ..rig.bone_map import load_bone_map
from ..motion.names import shorten_bone_names
from . import blender_physics
from . import blender_physics_sim
from . import blender_motion_retarget
from ..rig import rig
from .blender_textures import write_textures

# Faults that would index out of range or loop when building: import refuses them (docs/architecture.md §7.1).
_FATAL = re.compile(r"index|is not a bone|cycle|own parent|consume")
_ID_COLLECTIONS = ("objects", "meshes", "armatures", "materials", "images", "collections", "node_groups",
                   "actions", "textures")


def load(path: str) -> tuple[pmx.PmxModel, list[str]]:
    """Read and check a PMX file: FormatError for structural faults and for values that would index out of
    range or loop; the other findings come back as warnings naming the element."""
    data = read_bytes(path)
    model = pmd.read(data) if data[:3] == pmd.MAGIC else pmx.read(data)  # a PMD imports as the PMX it converts to
    findings = validate(model, for_export=False)
    fatal = [f for f in findings if f.severity == "error" and _FATAL.search(f.message)]
    if fatal:
        lines = "; ".join(str(f) for f in fatal[:5])
        more = f" (and {len(fatal) - 5} more)" if len(fatal) > 5 else ""
        raise FormatError(f"{len(fatal)} fault(s) that would index out of range or loop: {lines}{more}",
                          fatal[0].offset, fatal[0].field)
    return model, list(model.warnings) + [str(f) for f in findings if f not in fatal]


def import_pmx(context, path: str, metres_per_unit: float = METRES_PER_UNIT, physics: bool = True,
               sdef: bool = True) -> bscene.ImportResult:
    """`metres_per_unit`: Blender metres of one MMD unit (stored with the model, so that export writes the same
    units). `physics`: the rigid bodies simulate and the bones follow them when the scene plays (off: they are
    built all the same, kept for export, and a motion plays as MMD plays it with physics off). `sdef`: SDEF
    vertices deform as MMD's SDEF (blender_sdef.py; the modifier is made off when False)."""
    if not metres_per_unit > 0:
        raise FormatError(f"{metres_per_unit} metres per unit is not positive")
    model, warnings = load(path)
    name = os.path.splitext(os.path.basename(path))[0]
    core_scene, more = convert.to_scene(model, name, metres_per_unit)
    warnings += more
    # Textures are built by blender_mmd (a missing file becomes a placeholder, not a failed import).
    textures = [m.base_color_texture for m in core_scene.materials]
    for m in core_scene.materials:
        m.base_color_texture = None
    base_dir = os.path.dirname(os.path.abspath(path))
    before = bscene.snapshot_ids(_ID_COLLECTIONS)
    try:
        result = bscene.build_scene(context, core_scene, name, base_dir)
        blender_mmd.build_extras(context, result, core_scene, textures, base_dir, warnings)
        if result.armature is not None:
            blender_morphs.build_sliders(result.armature)
            blender_sdef.build(result.objects, result.armature, sdef)
        if result.armature is not None and (model.rigid_bodies or model.joints):
            arm_ob = result.armature
            names = bscene.barm_names(arm_ob) or [b.name for b in arm_ob.data.bones]
            warnings += blender_physics.build_physics(context, arm_ob, core_scene.extras["pmx"], metres_per_unit,
                                                      names, [])
            warnings += blender_physics_sim.link(context, arm_ob, physics)
    except BaseException:
        bscene.remove_new(before)
        raise
    result.warnings[:0] = warnings
    return result


def blender_import(context, path: str, options) -> list[str]:
    """The registry's `blender_import` (convert, render): the PMX in MMD's 8 cm unit, physics built but off
    (a conversion writes the file's bodies, and frames sampled out of order cannot simulate)."""
    return import_pmx(context, path, physics=False).warnings


def gather_model(context, metres_per_unit: float | None = None, selected_only: bool = False,
                 objects: tuple | None = None) -> tuple[pmx.PmxModel, list[str]]:
    """The PMX records export would write (read-only), not yet validated. `objects`: the (meshes, armature) of
    `exportable_objects`, when the caller has them already."""
    objects = objects if objects is not None else bscene.exportable_objects(context, selected_only)
    meshes, arm_ob = objects
    with blender_morphs.at_rest(arm_ob), blender_sdef.suspended(meshes, context):  # the model's own values
        core_scene, warnings = bscene.gather_scene(context, selected_only=selected_only, tangents=False,
                                                   objects=objects, bones_alone=True)
        if not core_scene.meshes and core_scene.skeleton is None:  # bones alone make a PMX (a rig, a motion model)
            raise ExportError("nothing to export: no visible mesh with faces or armature")
        blender_mmd.read_extras(core_scene, arm_ob, meshes)
    model, more = convert.from_scene(core_scene, metres_per_unit)
    if arm_ob is not None:
        more += _physics_from_blender(model, arm_ob, metres_per_unit, core_scene.extras.get("pmx") or {})
    return model, warnings + more


def _physics_from_blender(model: pmx.PmxModel, arm_ob, metres_per_unit: float | None, extras: dict) -> list[str]:
    """Rigid bodies and joints from the model's Physics collection (`physics`), when it has one; impulse
    morphs follow the bodies' new indices (offsets on a deleted body dropped). Returns warnings."""
    if metres_per_unit is None:
        metres_per_unit = float(extras.get("scale", METRES_PER_UNIT))
    pmx_index: dict[str, int] = {}
    for i, b in enumerate(model.bones):
        pmx_index.setdefault(b.name, i)
    bone_index = {}
    for bone in arm_ob.data.bones:
        names = blender_mmd.pmx_names(bone)
        k = pmx_index.get(names[0] if names and names[0] else bone.name)
        if k is not None:
            bone_index[bone.name] = k
    warnings: list[str] = []
    read = blender_physics.read_physics(arm_ob, metres_per_unit, bone_index, warnings)
    if read is None:
        return warnings
    model.rigid_bodies, model.joints, file_index = read
    new_of = {old: k for k, old in enumerate(file_index) if old is not None}
    for morph in model.morphs:
        if morph.kind != pmx.MORPH_IMPULSE or not len(morph.offsets):
            continue
        new = np.array([new_of.get(int(x), -1) for x in morph.offsets["rigid_body"]], np.int64)
        if (new < 0).any():
            warnings.append(f"morph {morph.name}: {int((new < 0).sum())} offsets on deleted rigid bodies; dropped")
        morph.offsets["rigid_body"] = np.maximum(new, 0)
        morph.offsets = morph.offsets[new >= 0]
    return warnings


GENERIC_NAMES = {"armature", "root", "skeleton", "rig", "scene", ""}  # say nothing of the model: the file's name
MODEL_HEIGHT = (2.0, 200.0)  # MMD units a model is expected to span (a character is about 20: 1.6 m)


def model_height(model: pmx.PmxModel) -> float:
    """Height of the model in MMD units (the span of its vertices along Y)."""
    if not len(model.vertices):
        return 0.0
    y = model.vertices["position"][:, 1]
    return float(y.max() - y.min())


def height_warning(model: pmx.PmxModel, metres_per_unit: float | None) -> str | None:
    """A warning when the model's height is outside `MODEL_HEIGHT`, with the `--units-per-metre` that makes it
    20 units (a 1.6 m character) tall."""
    h = model_height(model)
    lo, hi = MODEL_HEIGHT
    if h <= 0 or lo <= h <= hi:
        return None
    per_metre = 1.0 / (metres_per_unit if metres_per_unit else METRES_PER_UNIT)
    return (f"the model is {h:.4g} MMD units tall, outside the {lo:g}–{hi:g} MMD models are made at (a 1.6 m "
            f"character is 20): written at {per_metre:.4g} units per metre; --units-per-metre "
            f"{per_metre * 20 / h:.4g} would make it 20 units tall")


def export_model(context, path: str, metres_per_unit: float | None = None, selected_only: bool = False,
                 mmd_rig: bool = False, bone_map=None, arm_angle: float = 0.0, model_name: str | None = None,
                 textures: bool = False, before_write=None
                 ) -> tuple[list[str], list[str], dict[str, str], pmx.PmxModel]:
    """`export_pmx` returning (written paths, the model first; warnings; Blender bone → the shorter name
    PMX and VMD call it; the records written). `model_name`: the model name written (Japanese and English; None:
    the file's own for a model imported from PMX, else the armature's, else the output file's stem); `textures`:
    write the images the materials use next to the PMX (`blender_textures`); `before_write(model, names)`: called
    with the records and the name map before they are validated and written (it may change them), returns
    warnings."""
    objects = bscene.exportable_objects(context, selected_only)
    meshes, arm_ob = objects
    model, warnings = gather_model(context, metres_per_unit, selected_only, objects)
    # imported from PMX: the file's own name, also an empty one (MMD reads a model without a name)
    from_pmx = arm_ob is not None and isinstance((blender_mmd.stored_extras(arm_ob, []) or {}).get("name"), str)
    if model_name or not from_pmx:
        name = model_name
        if not name and arm_ob is not None and arm_ob.name.lower().rstrip(".0123456789") not in GENERIC_NAMES:
            name = arm_ob.name
        model.name = model.name_e = name or os.path.splitext(os.path.basename(path))[0]
    # --- MMD control rig and arm angle: on the gathered records, before validation ---
    if mmd_rig or arm_angle:
        warnings += rig.apply(model, rig=mmd_rig, bone_map=bone_map, arm_angle=arm_angle)
    # --- end MMD control rig ---
    renamed, more = shorten_bone_names(model)
    warnings += more
    written: list[str] = []
    if textures:
        written, more = write_textures(context, model, os.path.dirname(os.path.abspath(path)), meshes)
        warnings += more
    names = {}
    if arm_ob is not None:
        sources = {b.name for b in arm_ob.data.bones}
        names = {b.name_e: b.name for b in model.bones if b.name_e in sources and renamed.get(b.name_e) == b.name}
    if before_write is not None:
        warnings += before_write(model, names)
    findings = validate(model, for_export=True)
    raise_for_errors(findings)
    warnings += [str(f) for f in findings]
    tall = height_warning(model, metres_per_unit if metres_per_unit is not None else
                          (blender_mmd.stored_extras(arm_ob, []) or {}).get("scale") if arm_ob is not None else None)
    if tall:
        warnings.append(tall)
    data = pmx.write(model)
    bscene.failure_point("write")
    write_atomic(path, data)
    return [path] + written, warnings, names, model


def export_pmx(context, path: str, metres_per_unit: float | None = None, selected_only: bool = False,
               mmd_rig: bool = False, bone_map=None, arm_angle: float = 0.0, model_name: str | None = None
               ) -> list[str]:
    """Write the visible model to `path`. `metres_per_unit` is what one MMD unit is in Blender (None: the
    import's, stored with the model, else 0.08); positions are divided by it (× 12.5 by default;
    `metres_per_unit_of` turns the option `units_per_metre` into it). `mmd_rig`, `bone_map` (a JSON file path or
    dict) and `arm_angle` (degrees): see io_pmx/rig/rig.py, bone_map.py and arm_angle.py."""
    return export_model(context, path, metres_per_unit, selected_only, mmd_rig, bone_map, arm_angle, model_name)[1]


def metres_per_unit_of(units_per_metre: float | None) -> float | None:
    """What the export divides positions by, from the option `units_per_metre` (units written for one metre):
    None or 0 give None, the model's own import unit (else MMD's 8 cm)."""
    return 1.0 / units_per_metre if units_per_metre else None


def _given_name(context, name: str, options) -> str | None:
    """The `-n` name of `convert` (`options.name`), None without one."""
    return getattr(options, "name", None) or None


def export_target(context, outdir: str, name: str, options) -> tuple[list[str], list[str]]:
    """`convert --to pmx`: OUTDIR/NAME.pmx, the images its materials use beside it, and a .vmd per action
    (retargeted onto this PMX when rigged). `--units-per-metre S` (default the model's own, else 12.5) reaches
    `options.units_per_metre`; `-n` names the model in PMX and VMD."""
    path = output_path(outdir, name + ".pmx")
    inward = metres_per_unit_of(options.units_per_metre)
    model_name = _given_name(context, name, options)

    bone_map = load_bone_map(options.bone_map) if options.bone_map else None  # once, for the model and motions
    pending: list = []

    def motions(model, names) -> list[str]:  # made before the PMX is written: they fit its knee limits
        built, more = blender_motion_retarget.build_target_motions(context, options, inward, model, names, bone_map)
        pending.extend(built)
        return more

    written, warnings, _, _ = export_model(
        context, path, inward, mmd_rig=options.mmd_rig,
        bone_map=bone_map, arm_angle=options.arm_angle,
        model_name=model_name, textures=True, before_write=motions)
    written += blender_motion_retarget.write_motions(outdir, pending)
    return written, warnings
