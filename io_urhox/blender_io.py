"""UrhoX / Urho3D model import and export in Blender: file → records → core → bpy and back.

Shared by the operators and the command line. Import parses and maps the whole file before the first
datablock is created; export writes to a temporary file and renames it into place.
"""
from __future__ import annotations

import os

from ..blender import scene as bscene
from ..core.errors import ExportError
from ..core.fileio import read_bytes, write_atomic
from . import convert, umd2

AXES_PROP = "skinbridge_axes"  # on an imported armature: the profile whose axes its file used


def import_mdl(context, path: str, profile: str = "auto", all_lods: bool = False) -> bscene.ImportResult:
    """`profile` "auto" picks the file's likely axes (`convert.detect_profile`): urho3d for UMDL/UMD3 and for
    UMD2 files with collision extras or morphs, urhox otherwise. `all_lods` imports every LOD level."""
    data = read_bytes(path)
    model = umd2.read(data)
    name = os.path.splitext(os.path.basename(path))[0]
    core_scene, warnings = convert.to_scene(model, name, profile, all_lods=all_lods)
    result = bscene.build_scene(context, core_scene, name, os.path.dirname(path))
    if result.armature is not None:  # motions loaded onto this armature later read with the same axes
        result.armature[AXES_PROP] = convert.resolve_profile(model, profile)
    result.warnings[:0] = warnings
    return result


def export_mdl(context, path: str, profile: str = "urhox", selected_only: bool = False,
               deform_only: bool = False, max_bones: int = 64) -> list[str]:
    core_scene, warnings = bscene.gather_scene(context, selected_only=selected_only, deform_only=deform_only)
    if not core_scene.meshes:
        raise ExportError("nothing to export: no visible mesh with faces")
    model, more = convert.from_scene(core_scene, profile, max_bones=max_bones)
    data = umd2.write(model)
    bscene._stage("write")
    write_atomic(path, data)
    return warnings + more


def export_package(context, outdir: str, name: str, options) -> tuple[list[str], list[str]]:
    """`convert --to urhox`: OUTDIR/NAME.mdl, Textures/*.png, Materials/*.xml, Animations/*.ani (+ .xml triggers)."""
    from .blender_package import write_textures_and_materials

    protected = set(getattr(options, "protected", ()) or ())
    path = os.path.join(outdir, name + ".mdl")
    if os.path.realpath(path) in protected:
        raise ExportError(f"refusing to overwrite the input {path}")
    warnings = export_mdl(context, path, options.profile, deform_only=options.deform_only,
                          max_bones=options.max_bones)
    written = [path]
    more_written, more = write_textures_and_materials(context, outdir, protected)
    from .blender_ani import export_package_animations

    _, arm_ob = bscene.exportable_objects(context)
    ani_written, ani_warnings = export_package_animations(context, outdir, options, arm_ob=arm_ob)
    return written + more_written + ani_written, warnings + more + ani_warnings


def import_for_convert(context, path: str, options) -> list[str]:
    """`convert`, `render` and drag and drop: the file with its own axes (or the profile the options name)."""
    profile = getattr(options, "import_profile", None) or "auto"
    return import_mdl(context, path, profile).warnings
