"""Loading any file we read for viewing and comparing: into a fresh Blender scene (render), or as a core Scene
(compare) through the format's own codec and mapping where it has one (`load`), else through Blender's
importer and the export gather. Formats come from the registry, by content. And the one Rest Position
comparison (`compare_rest`) that `compare --rest`, `render --compare` and the sidebar's Rest Compare all make
(docs/rest_compare.md §1).

The caller (the command line) has already imported bpy with a private user folder where Blender is needed.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from .. import formats
from ..core.errors import FormatError
from ..core.model import COMPARE_KEY
from .options import ConvertOptions


def _reading_of(spec: formats.FormatSpec, reading: dict | None) -> dict:
    """The given reading options (`--skeleton-path`) that `spec` declares: what its load and import take."""
    names = {o.name for o in spec.options if o.reading}
    return {k: v for k, v in (reading or {}).items() if k in names and v is not None}


def import_for_view(path: str, reading: dict | None = None):
    """Import a model into a fresh empty scene (with the reading options given, e.g. `skeleton_path`); returns
    (bpy, warnings, options)."""
    import bpy  # bpy: compare of files with a codec runs without Blender, and cli sets the user folder first

    from . import pipeline  # imports bpy (see above)

    spec = pipeline.importable(path)
    options = ConvertOptions(**_reading_of(spec, reading))
    pipeline.reset_scene()
    warnings = spec.get("blender_import")(bpy.context, path, options)
    return bpy, warnings, options


def _blender_scene(path: str, with_animations: bool):
    """A file only Blender reads (glTF, ...): imported into a fresh scene, gathered as an export would, its
    armature's actions sampled into core animations; the scene is emptied again afterwards."""
    bpy, warnings, _ = import_for_view(path)
    from ..blender import action as bact  # bpy: see import_for_view
    from ..blender import scene as bscene  # bpy: see import_for_view
    from . import pipeline  # bpy: see import_for_view

    try:
        scene, more = bscene.gather_scene(bpy.context)
        warnings += more
        _, arm = bscene.exportable_objects(bpy.context)
        if with_animations and arm is not None:
            for act in bact.armature_actions(arm, strict=False):
                anim, more = bact.read_action(bpy.context, arm, act)
                scene.animations.append(anim)
                warnings += more
    finally:
        pipeline.reset_scene()
    return scene, warnings


def _file_scene(path: str, with_animations: bool, motions: list[str] = (), reading: dict | None = None):
    spec = formats.identify_file(path)
    if spec.has("load"):
        return spec.get("load")(path, formats.read_input(path), with_animations, motions,
                                **_reading_of(spec, reading))
    if spec.has("blender_import"):
        return _blender_scene(path, with_animations)
    raise FormatError(f"{spec.label} files cannot be compared", None, "format")


def _identified(folder: str) -> list[tuple[str, formats.FormatSpec]]:
    out = []
    for f in sorted(os.listdir(folder)):
        path = os.path.join(folder, f)
        if not os.path.isfile(path):
            continue
        try:
            out.append((path, formats.identify_file(path)))
        except (FormatError, OSError):
            continue  # textures, materials, sidecars: not ours to compare
    return out


def _folder_scene(folder: str, with_animations: bool, reading: dict | None = None):
    """A folder of outputs: its one model file, and the motions beside it or in Animations/ mapped onto the
    model's skeleton."""
    files = _identified(folder)
    kinds = {p: formats.file_kind(p, s) for p, s in files}
    models = [p for p, _ in files if kinds[p] == "model"]
    if len(models) != 1:
        names = ", ".join(os.path.basename(p) for p in models)
        raise FormatError(f"{folder}: expected one model file, found {len(models)}{': ' + names if names else ''}",
                          None, "folder")
    motions = [p for p, _ in files if kinds[p] in ("motion", "flex")]
    anim_dir = os.path.join(folder, "Animations")
    if os.path.isdir(anim_dir):
        motions += [p for p, s in _identified(anim_dir) if formats.file_kind(p, s) in ("motion", "flex")]
    return _file_scene(models[0], with_animations, motions, reading)


def compare_load(path: str, with_animations: bool = True, reading: dict | None = None):
    """(core Scene, warnings) of a model file, a motion file or an output folder, for `compare`; `reading`: the
    reading options given (`skeleton_path`), passed to the formats that declare them."""
    if os.path.isdir(path):
        return _folder_scene(path, with_animations, reading)
    if not formats.input_exists(path):  # a special file goes on to the guarded reader, which says why
        raise FileNotFoundError(f"no such file or folder: {path}")
    return _file_scene(path, with_animations, reading=reading)


# -- the Rest Position comparison ----------------------------------------------------------------------------

def compare_view(scene) -> dict | None:
    """How `compare` reads `scene`'s skeleton: the view its codec set (`load`), else the one the format whose
    import made the bones of a scene gathered from Blender gives (capability `compare_view`: a PMX's bones
    matched by their English name, their orientations not compared), else None (by name, every field)."""
    view = scene.extras.get(COMPARE_KEY)
    if view is not None or scene.skeleton is None:
        return view
    for spec in formats.with_capability("compare_view"):
        view = spec.get("compare_view")(scene)
        if view is not None:
            return view
    return None


@dataclass
class RestFindings:
    """What `compare_rest` found: the comparison, the marked bones (the names the findings use) and, per model,
    each marked bone's own name in that model (a PMX bone found by its English name is coloured by its own)."""
    result: object  # core.compare.Comparison
    marked: list[str]
    own_names: tuple[dict[str, str], dict[str, str]]

    def summary(self) -> str:
        """The one line every entry point prints: verdict, counts and the marked bones."""
        verdict = ("same within the tolerances" if self.result.same
                   else f"{len(self.result.differences)} difference(s)")
        names = f": {', '.join(self.marked)}" if self.marked else ""
        return f"rest position: {verdict}, {len(self.marked)} bone(s) marked{names}"


def compare_rest(a, b, tol: float, rot_tol: float) -> RestFindings:
    """The Rest Position comparison of two core Scenes (skeletons and meshes, `compare_view` on each side) and
    the bones it marks; the same whichever way each scene was read (a codec or Blender's gather)."""
    from ..core.compare import compare_scenes, matched_names  # numpy: 60-90 ms import, not needed by --help
    from ..core.rest_overlay import marked_bones  # numpy (see above)

    views = (compare_view(a), compare_view(b))
    for scene, view in zip((a, b), views):
        if view is not None:
            scene.extras[COMPARE_KEY] = view
    result = compare_scenes(a, b, tol=tol, rot_tol=rot_tol, rest=True)
    marked = sorted(marked_bones(result))
    own = []
    for scene, other, view in ((a, b, views[0]), (b, a, views[1])):
        if scene.skeleton is None or other.skeleton is None:
            own.append({})
            continue
        found = set(marked)
        own.append({m: n for m, n in zip(matched_names(scene.skeleton, view, other.skeleton), scene.skeleton.names)
                    if m in found})
    return RestFindings(result, marked, (own[0], own[1]))
