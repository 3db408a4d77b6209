"""Loading any file we read for viewing and comparing: into a fresh Blender scene (render), or as a core Scene
(compare) through a codec and mapping where one exists, else through Blender's importer and the export gather.

The caller (the command line) has already imported bpy with a private user folder (`cli._bpy`).
"""
from __future__ import annotations

import os

from ..core.errors import FormatError


def import_for_view(path: str):
    """Import a model into a fresh empty scene; returns (bpy, warnings, options)."""
    from ..convert_options import ConvertOptions
    from ..core.fileio import read_bytes

    ext = os.path.splitext(path)[1].lower()
    import bpy

    from . import pipeline

    if ext not in pipeline.IMPORTERS:
        raise FormatError(f"no importer for '{ext}' files (we read {', '.join(sorted(pipeline.IMPORTERS))})", None,
                          "file extension")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no such file: {path}")
    options = ConvertOptions()
    if ext == ".mdl":
        from ..io_urhox import convert, umd2

        data = read_bytes(path)
        if data[:4] in (b"UMD2", b"UMDL", b"UMD3"):
            options.profile = convert.detect_profile(umd2.read(data))
    pipeline.reset_scene()
    warnings = pipeline.IMPORTERS[ext](bpy.context, path, options)
    return bpy, warnings, options



_MODEL_EXTS = (".mdl", ".pmx", ".glb", ".gltf")


def _blender_scene(path: str, with_animations: bool):
    """A file only Blender reads (glTF, ...): imported into a fresh scene, gathered as an export would, its
    armature's actions sampled into core animations; the scene is emptied again afterwards."""
    bpy, warnings, _ = import_for_view(path)
    from . import pipeline
    from . import scene as bscene

    try:
        scene, more = bscene.gather_scene(bpy.context)
        warnings += more
        _, arm = bscene.exportable_objects(bpy.context)
        if with_animations and arm is not None:
            from . import action as bact

            for act in bact.armature_actions(arm):
                anim, more = bact.read_action(bpy.context, arm, act)
                scene.animations.append(anim)
                warnings += more
    finally:
        pipeline.reset_scene()
    return scene, warnings


def _file_scene(path: str, with_animations: bool):
    from ..core.fileio import read_bytes

    ext = os.path.splitext(path)[1].lower()
    stem = os.path.splitext(os.path.basename(path))[0]
    if ext == ".mdl":
        data = read_bytes(path)
        if data[:4] not in (b"UMD2", b"UMDL", b"UMD3"):
            raise FormatError(f"unsupported format (magic {data[:8]!r})", 0, "magic")
        from ..io_urhox import convert, umd2

        return convert.to_scene(umd2.read(data), stem, "auto")
    if ext == ".pmx":
        from ..io_pmx import convert as pmx_convert, pmx

        return pmx_convert.to_scene(pmx.read(read_bytes(path)), stem)
    if ext in (".ani", ".vmd"):
        raise FormatError("a motion alone has no skeleton to pose: compare the model folder (model + Animations/)",
                          None, "file")
    return _blender_scene(path, with_animations)


def _folder_scene(folder: str, with_animations: bool):
    """A folder of outputs: its one model file, and Animations/*.ani mapped onto the model's skeleton."""
    models = sorted(f for f in os.listdir(folder) if os.path.splitext(f)[1].lower() in _MODEL_EXTS
                    and os.path.isfile(os.path.join(folder, f)))
    if len(models) != 1:
        raise FormatError(f"{folder}: expected one model file ({', '.join(_MODEL_EXTS)}), found "
                          f"{len(models)}{': ' + ', '.join(models) if models else ''}", None, "folder")
    scene, warnings = _file_scene(os.path.join(folder, models[0]), with_animations)
    anim_dir = os.path.join(folder, "Animations")
    if with_animations and os.path.isdir(anim_dir):
        from ..core.fileio import read_bytes
        from ..io_urhox import ani_convert, uani

        profile = scene.extras.get("urho", {}).get("profile", "urhox")
        roots = {b.name for b in scene.skeleton.bones if b.parent < 0} if scene.skeleton else set()
        for f in sorted(os.listdir(anim_dir)):
            if f.lower().endswith(".ani"):
                anim, more = ani_convert.to_core(uani.read(read_bytes(os.path.join(anim_dir, f))),
                                                 os.path.splitext(f)[0], profile, roots)
                scene.animations.append(anim)
                warnings += [f"{f}: {w}" for w in more]
    return scene, warnings


def compare_load(path: str, with_animations: bool = True):
    """(core Scene, warnings) of a model file or an output folder, for `compare`."""
    if os.path.isdir(path):
        return _folder_scene(path, with_animations)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no such file or folder: {path}")
    return _file_scene(path, with_animations)
