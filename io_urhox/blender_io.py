"""`convert --to urhox` in Blender: the UrhoX package, the model (model/blender_io.py) with its textures and
materials (model/blender_package.py) and the armature's animations (motion/blender_io.py), in one output folder
(docs/urho.md §5.3)."""
from __future__ import annotations

from ..blender import scene as bscene
from ..core.fileio import output_path
from .model.blender_io import export_mdl
from .model.blender_package import write_textures_and_materials
from .motion.blender_io import export_package_animations


def export_target(context, outdir: str, name: str, options) -> tuple[list[str], list[str]]:
    """OUTDIR/NAME.mdl, Textures/*.png, Materials/*.xml, Animations/*.ani (+ .xml triggers)."""
    path = output_path(outdir, name + ".mdl")
    warnings = export_mdl(context, path, options.profile, deform_only=options.deform_only,
                          max_bones=options.max_bones)
    more_written, more = write_textures_and_materials(context, outdir)
    _, arm_ob = bscene.exportable_objects(context)
    ani_written, ani_warnings = export_package_animations(context, outdir, options, arm_ob=arm_ob)
    return [path] + more_written + ani_written, warnings + more + ani_warnings
