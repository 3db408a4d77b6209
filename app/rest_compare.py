"""Rest Position compare you can see (docs/rest_compare.md §1–§3): two models in Rest Position, overlaid, each
vertex coloured by its distance to the other model, the bones `compare --rest` finds moved or turned marked,
and the findings kept for the sidebar panel; `clear` puts both models back exactly as they were.

The findings are `app.loading.compare_rest` (the one Rest comparison `compare --rest` makes too) on the two
models as an export gathers them (`blender.scene.gather_scene`: world space, Rest Position), and
`core.rest_overlay` for the per-vertex distances and colours. What the overlay changes, and `clear` restores:
each armature's pose position, the bones' colour palettes, a colour attribute and a float attribute on every
mesh (the mesh's active and default colour attribute), B's root objects' transforms (side by side), the 3D
views' shading, the selection, the active object and its mode; a model imported from a file for the comparison
is removed again. A marked bone is coloured by its own name in each model (a PMX bone whose export shortened
its name is found by its English name, the source's full one).
"""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field

import bpy
import numpy as np

from .. import formats
from ..blender import scene as bscene
from ..blender.selection import armature_of
from ..core import model as cm
from ..core import rest_overlay as ro
from ..core.bitmap_font import draw_text, fit_text
from ..core.compare import DEFAULT_ROT_TOL, Comparison
from ..core.contact_sheet import (
    BACKGROUND, DEFAULT_PANEL, HEADER_COLOR, LABEL_HEIGHT, PALETTE, TEXT_COLOR, VIEWS, Sheet, compose_sheet,
    panel_origin, panel_size,
)
from . import pipeline
from .loading import RestFindings, compare_rest
from .options import ConvertOptions
from . import render
from .render import scene_objects

COLOR_ATTRIBUTE = "skinbridge_rest_distance"  # FLOAT_COLOR, POINT: the band colour
VALUE_ATTRIBUTE = "skinbridge_rest_distance_value"  # FLOAT, POINT: the distance in scene units
MARK_PALETTE = "THEME01"  # the theme's red bone colour set
DEFAULT_TOL = 1e-5  # of the diagonal: the overlay colours what `compare`'s default 1e-4 would pass
LAYOUTS = ("SUPERIMPOSED", "SIDE_BY_SIDE")


@dataclass
class Model:
    label: str  # "A" or "B"
    armature: object | None
    meshes: list

    @property
    def objects(self) -> list:
        return ([self.armature] if self.armature is not None else []) + list(self.meshes)


@dataclass
class _Saved:
    mode: str = "OBJECT"
    active: str | None = None
    selected: dict[str, bool] = field(default_factory=dict)
    pose_positions: dict[str, str] = field(default_factory=dict)  # armature object -> pose position
    palettes: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # armature object -> (bone, pose bone)
    colors: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)  # mesh -> active, default
    matrices: dict[str, list] = field(default_factory=dict)  # object -> matrix_basis
    imported: list[tuple[str, str]] = field(default_factory=list)  # (bpy.data collection, name)
    shading: list = field(default_factory=list)  # (View3DShading, type, color_type)


@dataclass
class Overlay:
    """What one comparison found and showed; `clear` undoes it."""
    findings: RestFindings
    mode: str  # "same vertex order" or "nearest vertex"
    tol: float  # position tolerance, a fraction of the diagonal
    distances: dict[str, np.ndarray]  # mesh object name -> distance per vertex
    largest: list[tuple[str, float]]
    names: tuple[list[str], list[str]]  # the object names of A and B
    saved: _Saved
    notes: list[str] = field(default_factory=list)

    @property
    def result(self) -> Comparison:
        return self.findings.result

    @property
    def marked(self) -> set[str]:
        """The marked bones by the names the findings use (a PMX bone by its English name)."""
        return set(self.findings.marked)

    def marked_in(self, label: str) -> set[str]:
        """The marked bones of model `label` ("A" or "B") by that model's own bone names."""
        return set(self.findings.own_names["AB".index(label)].values())

    @property
    def diagonal(self) -> float:
        return self.result.diagonal

    @property
    def limit(self) -> float:
        return self.result.position_limit

    def legend(self) -> list[tuple[tuple[int, int, int], str]]:
        return ro.legend(self.tol, self.diagonal)


shown: Overlay | None = None  # the overlay in the scene now (one at a time)


# ---------------------------------------------------------------------------------------------------
# the two models

def model_of(context, ob, label: str) -> Model | None:
    """The model `ob` belongs to: its armature and the meshes it deforms or carries, or a lone mesh."""
    arm = armature_of(ob)
    if arm is not None:
        return Model(label, *scene_objects(context, arm))
    if ob is not None and ob.type == "MESH":
        return Model(label, None, [ob])
    return None


def selected_models(context) -> tuple[Model, Model]:
    """The two models among the selected objects (the active one's first); ValueError unless exactly two."""
    layer = context.view_layer
    picked = [layer.objects.active] if layer.objects.active is not None and layer.objects.active.select_get() else []
    picked += [ob for ob in layer.objects if ob.select_get() and ob not in picked]
    models: list[Model] = []
    for ob in picked:
        m = model_of(context, ob, "AB"[min(len(models), 1)])
        if m is not None and not any(set(m.objects) & set(x.objects) for x in models):
            models.append(m)
    if len(models) != 2:
        raise ValueError(f"select two models (an armature or a mesh of each); {len(models)} selected")
    return models[0], models[1]


def import_model(context, path: str, saved: _Saved) -> tuple[Model, list[str]]:
    """Import any file we read as model B; its datablocks are listed in `saved.imported` for `clear`."""
    spec = pipeline.importable(path)
    kind = formats.file_kind(path, spec)
    if kind != "model":  # a motion would go onto the user's armature, not stand beside it
        raise ValueError(f"{path}: a {spec.label} file of kind {kind}, not a model to compare")
    before = bscene.snapshot_ids()
    try:
        warnings = spec.get("blender_import")(context, path, ConvertOptions())
    except BaseException:
        bscene.remove_new(before)
        raise
    for name in before:
        saved.imported += [(name, x.name) for x in getattr(bpy.data, name) if x.as_pointer() not in before[name]]
    new = [bpy.data.objects[n] for c, n in saved.imported if c == "objects"]
    context.view_layer.update()
    arm = next((ob for ob in new if ob.type == "ARMATURE"), None)
    if arm is not None:
        meshes = [ob for ob in scene_objects(context, arm)[1] if ob in new]
    else:
        meshes = [ob for ob in new if ob.type == "MESH"]
    if arm is None and not meshes:
        raise ValueError(f"{path}: holds no model to compare")
    return Model("B", arm, meshes), warnings


# ---------------------------------------------------------------------------------------------------
# measuring

def _gathered(context, model: Model, notes: list[str]) -> cm.Scene:
    scene, warnings = bscene.gather_scene(context, tangents=False, objects=(list(model.meshes), model.armature))
    notes += [f"{model.label}: {w}" for w in warnings]
    return scene


def _pooled(scene: cm.Scene) -> np.ndarray:
    parts = [np.asarray(m.positions, np.float64).reshape(-1, 3) for m in scene.meshes]
    return np.concatenate(parts) if parts else np.zeros((0, 3))


def _vertex_names(label: str, scene: cm.Scene) -> list[str]:
    """Per pooled vertex: its model, mesh and the bone that weighs most on it (the region it belongs to)."""
    names: list[str] = []
    bones = scene.skeleton.names if scene.skeleton is not None else []
    for m in scene.meshes:
        if m.joints is not None and m.weights is not None and len(bones):
            w = np.asarray(m.weights).reshape(m.vertex_count, -1)
            j = np.asarray(m.joints).reshape(m.vertex_count, -1)
            top = j[np.arange(m.vertex_count), np.argmax(w, axis=1)]
            names += [f"{label} {m.name} near bone {bones[k] if 0 <= k < len(bones) else k}" for k in top]
        else:
            names += [f"{label} {m.name}"] * m.vertex_count
    return names


def _per_object(scene: cm.Scene, distances: np.ndarray, notes: list[str]) -> dict[str, np.ndarray]:
    """The pooled distances scattered onto each mesh object's own vertices (largest of a vertex's copies)."""
    out = {}
    at = 0
    for m in scene.meshes:
        d = distances[at:at + m.vertex_count]
        at += m.vertex_count
        ob = bpy.data.objects.get(m.name)
        source = m.extras.get("source_vertex")
        if ob is None or ob.type != "MESH" or source is None or m.extras.get("source_vertex_count") != len(
                ob.data.vertices):
            notes.append(f"{m.name}: not coloured (its modifiers change the vertex count)")
            continue
        per_vertex = np.zeros(len(ob.data.vertices))
        np.maximum.at(per_vertex, np.asarray(source, np.int64), np.where(np.isfinite(d), d, np.inf))
        out[m.name] = per_vertex
    return out


def measure(context, a: Model, b: Model, tol: float = DEFAULT_TOL, rot_tol: float = DEFAULT_ROT_TOL):
    """(findings, distance per vertex of every mesh object of A and B, mode, largest named, notes)."""
    notes: list[str] = []
    sa, sb = _gathered(context, a, notes), _gathered(context, b, notes)
    findings = compare_rest(sa, sb, tol, rot_tol)
    result = findings.result
    da, db, mode = ro.vertex_distances(_pooled(sa), _pooled(sb), result.position_limit, result.diagonal)
    distances = _per_object(sa, da, notes)
    distances.update(_per_object(sb, db, notes))
    names = _vertex_names("A", sa) + _vertex_names("B", sb)
    largest = ro.largest(np.concatenate([da, db]), names)
    return findings, distances, mode, largest, notes


# ---------------------------------------------------------------------------------------------------
# showing and clearing

def _save_selection(context, saved: _Saved) -> None:
    """The active object, its mode and the selection, once (before a file is imported for B); then Object mode,
    where attributes and pose positions can be changed."""
    layer = context.view_layer
    if not saved.selected:
        saved.active = layer.objects.active.name if layer.objects.active is not None else None
        saved.mode = layer.objects.active.mode if layer.objects.active is not None else "OBJECT"
        saved.selected = {ob.name: ob.select_get() for ob in layer.objects}
    if layer.objects.active is not None and layer.objects.active.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")


def _save(models: tuple[Model, ...], saved: _Saved) -> None:
    for m in models:
        if m.armature is not None and m.armature.name not in saved.pose_positions:
            arm = m.armature
            saved.pose_positions[arm.name] = arm.data.pose_position
            saved.palettes[arm.name] = [(bone.color.palette, arm.pose.bones[bone.name].color.palette)
                                        for bone in arm.data.bones]
        for ob in m.meshes:
            ca = ob.data.color_attributes
            saved.colors.setdefault(ob.data.name, (ca.active_color_name or None, ca.default_color_name or None))


def _paint(ob, d: np.ndarray, limit: float) -> None:
    me = ob.data
    for name in (COLOR_ATTRIBUTE, VALUE_ATTRIBUTE):
        if name in me.attributes:
            me.attributes.remove(me.attributes[name])
    rgb = ro.srgb_to_linear(ro.band_colors_srgb()[ro.bands(d, limit)])
    rgba = np.concatenate([rgb, np.ones((len(d), 1))], axis=1).astype(np.float32)
    color = me.color_attributes.new(COLOR_ATTRIBUTE, "FLOAT_COLOR", "POINT")
    color.data.foreach_set("color", rgba.ravel())
    value = me.attributes.new(VALUE_ATTRIBUTE, "FLOAT", "POINT")
    value.data.foreach_set("value", np.where(np.isfinite(d), d, np.finfo(np.float32).max).astype(np.float32))
    me.color_attributes.active_color_name = COLOR_ATTRIBUTE
    me.update()


def _mark(arm, marked: set[str]) -> None:
    for bone in arm.data.bones:
        if bone.name in marked:
            bone.color.palette = MARK_PALETTE
            arm.pose.bones[bone.name].color.palette = MARK_PALETTE


def _side_by_side(b: Model, points: tuple[np.ndarray, np.ndarray], diagonal: float, saved: _Saved) -> None:
    """B's root objects moved along +X until B's points (world) start a tenth of the diagonal beyond A's."""
    pa, pb = points
    if not len(pa) or not len(pb):
        return
    shift = float(np.nanmax(pa[:, 0]) - np.nanmin(pb[:, 0]) + 0.1 * diagonal)
    roots = [ob for ob in b.objects if ob.parent not in b.objects]
    for ob in roots:
        saved.matrices[ob.name] = [list(row) for row in ob.matrix_basis]
        m = ob.matrix_world.copy()
        m[0][3] += shift
        ob.matrix_world = m


def _viewport_shading(context, saved: _Saved) -> None:
    """Every 3D view shows the colour attribute (Solid, Attribute colour); none exist headless."""
    wm = context.window_manager
    for window in wm.windows if wm is not None else ():
        for area in window.screen.areas:
            for space in area.spaces:
                if space.type == "VIEW_3D":
                    sh = space.shading
                    saved.shading.append((sh, sh.type, sh.color_type))
                    sh.type = "SOLID"
                    sh.color_type = "VERTEX"


def show(context, a: Model, b: Model, layout: str = "SUPERIMPOSED", tol: float = DEFAULT_TOL,
         rot_tol: float = DEFAULT_ROT_TOL, saved: _Saved | None = None) -> Overlay:
    """Measure A against B and show the overlay (see the module docstring); the result is also `shown`."""
    global shown
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    if saved is None:
        clear(context)
    saved = saved or _Saved()
    _save_selection(context, saved)
    _save((a, b), saved)
    overlay = None
    try:
        findings, distances, mode, largest, notes = measure(context, a, b, tol, rot_tol)
        overlay = Overlay(findings, mode, tol, distances, largest,
                          ([o.name for o in a.objects], [o.name for o in b.objects]), saved, notes)
        for m in (a, b):
            if m.armature is not None:
                m.armature.data.pose_position = "REST"
                _mark(m.armature, overlay.marked_in(m.label))
            for ob in m.meshes:
                if ob.name in distances:
                    _paint(ob, distances[ob.name], overlay.limit)
        if layout == "SIDE_BY_SIDE":
            bounds = tuple(_world_points(m) for m in (a, b))
            _side_by_side(b, bounds, overlay.diagonal, saved)
        _viewport_shading(context, saved)
        context.view_layer.update()
    except BaseException:
        _restore(context, saved)
        raise
    shown = overlay
    return overlay


def _world_points(model: Model) -> np.ndarray:
    parts = []
    for ob in model.meshes:
        n = len(ob.data.vertices)
        co = np.empty(n * 3, np.float32)
        ob.data.attributes["position"].data.foreach_get("vector", co)
        m = np.array(ob.matrix_world, np.float64)
        parts.append(co.reshape(n, 3) @ m[:3, :3].T + m[:3, 3])
    return np.concatenate(parts) if parts else np.zeros((0, 3))


def _restore(context, saved: _Saved) -> None:
    """Put back everything `saved` lists; what no longer exists (deleted by the user) is skipped."""
    for mesh_name, (active, default) in saved.colors.items():
        me = bpy.data.meshes.get(mesh_name)
        if me is None:
            continue
        for name in (COLOR_ATTRIBUTE, VALUE_ATTRIBUTE):
            if name in me.attributes:
                me.attributes.remove(me.attributes[name])
        ca = me.color_attributes
        if active and active in ca:
            ca.active_color_name = active
        if default and default in ca:
            ca.default_color_name = default
        me.update()
    for arm_name, palettes in saved.palettes.items():
        arm = bpy.data.objects.get(arm_name)
        if arm is None or len(arm.data.bones) != len(palettes):
            continue
        for bone, (bone_palette, pose_palette) in zip(arm.data.bones, palettes):
            bone.color.palette = bone_palette
            arm.pose.bones[bone.name].color.palette = pose_palette
        arm.data.pose_position = saved.pose_positions[arm_name]
    for name, rows in saved.matrices.items():
        ob = bpy.data.objects.get(name)
        if ob is not None:
            ob.matrix_basis = rows
    for sh, kind, color_type in saved.shading:
        try:
            sh.type, sh.color_type = kind, color_type
        except ReferenceError:  # the view was closed meanwhile
            pass
    _remove_imported(saved.imported)
    _restore_selection(context, saved)


def _remove_imported(imported: list[tuple[str, str]]) -> None:
    ids = [getattr(bpy.data, c).get(n) for c, n in imported]
    bscene.remove_created([x for x in ids if x is not None])


def _restore_selection(context, saved: _Saved) -> None:
    layer = context.view_layer
    layer.update()
    for ob in layer.objects:
        if ob.name in saved.selected and ob.select_get() != saved.selected[ob.name]:
            ob.select_set(saved.selected[ob.name])
    active = bpy.data.objects.get(saved.active) if saved.active else None
    if active is not None and active.name in layer.objects:
        layer.objects.active = active
        if saved.mode != "OBJECT" and active.mode != saved.mode:
            bpy.ops.object.mode_set(mode=saved.mode)
    layer.update()


def clear(context) -> bool:
    """Remove the overlay shown and restore both models; False when none is shown."""
    global shown
    if shown is None:
        return False
    overlay, shown = shown, None
    _restore(context, overlay.saved)
    return True


def compare_file(context, path: str, layout: str = "SUPERIMPOSED", tol: float = DEFAULT_TOL,
                 rot_tol: float = DEFAULT_ROT_TOL) -> tuple[Overlay, list[str]]:
    """The active model (A) against a file of any format we read (B, imported and removed again by `clear`)."""
    clear(context)
    a = model_of(context, context.view_layer.objects.active, "A")
    if a is None:
        raise ValueError("no active model: make an armature or a mesh active")
    saved = _Saved()
    _save_selection(context, saved)
    try:
        b, warnings = import_model(context, path, saved)
    except BaseException:
        _remove_imported(saved.imported)
        _restore_selection(context, saved)
        raise
    return show(context, a, b, layout, tol, rot_tol, saved), warnings


# ---------------------------------------------------------------------------------------------------
# the picture: `skinbridge render A --compare B`

MARKED_CLASS = ("marked", True)  # a bone class of the picture's palette, beside render's side classes
MAX_PICTURE_LINES = 10  # findings written under the panels


def _snapshot(context, model: Model, marked: set[str], created: list):
    """The model captured by the contact sheet's own path, its marked bones in `MARKED_CLASS`."""
    weighted = render.weighted_bones(model.meshes, model.armature) if model.armature is not None else set()
    [snap] = render.capture(context, model.armature, model.meshes, None, None, created, weighted)
    if model.armature is not None:
        names = [pb.name for pb in model.armature.pose.bones]
        snap.classes = [MARKED_CLASS if n in marked else c for n, c in zip(names, snap.classes)]
    for me in snap.meshes:
        if COLOR_ATTRIBUTE in me.color_attributes:
            me.color_attributes.active_color_name = COLOR_ATTRIBUTE
    return snap


def _picture_lines(overlay: Overlay) -> list[str]:
    lines = [f"largest: {name} {value:.3g} ({value / overlay.diagonal:.1e} of diag)"
             for name, value in overlay.largest]
    if overlay.marked:
        lines.append("marked bones: " + ", ".join(sorted(overlay.marked)))
    lines += [f"difference: {d}" for d in overlay.result.differences]
    if len(lines) > MAX_PICTURE_LINES:
        lines = lines[:MAX_PICTURE_LINES - 1] + [f"... {len(lines) - MAX_PICTURE_LINES + 1} more (skinbridge "
                                                 "compare --rest lists them all)"]
    return lines or ["no difference beyond the tolerances"]


def _relabel(img, labels: tuple[str, str], views, panel) -> None:
    pw = panel[0]
    for r, label in enumerate(labels):
        for c, view in enumerate(views):
            x0, top = panel_origin(r, c, panel)
            img[top - LABEL_HEIGHT:top, x0:x0 + pw] = HEADER_COLOR
            draw_text(img, x0 + 6, top - LABEL_HEIGHT + 3, fit_text(f"{label}: {view}", pw - 12, 2), TEXT_COLOR, 2)


def render_compare(context, a: Model, b: Model, *, views=VIEWS, panel: tuple[int, int] = DEFAULT_PANEL,
                   title: str = "", labels: tuple[str, str] = ("A", "B"), tol: float = DEFAULT_TOL,
                   saved: _Saved | None = None) -> Sheet:
    """The overlay as a picture: A's row and B's row of front, side and top panels, each vertex in its band
    colour, marked bones in `MARKED_BONE_COLOR`, the legend and the largest differences under the panels.
    The overlay is cleared afterwards (and a model imported for B, listed in `saved`, removed)."""
    start = time.perf_counter()
    views = tuple(views)
    panel = panel_size(len(views), 2, panel)
    overlay = show(context, a, b, "SUPERIMPOSED", tol, saved=saved)
    created: list = []
    had_result = "Render Result" in bpy.data.images
    palette = {**PALETTE, MARKED_CLASS: ro.MARKED_BONE_COLOR}
    try:
        with tempfile.TemporaryDirectory(prefix="skinbridge-render-") as tmpdir:
            snapshots = [_snapshot(context, m, overlay.marked_in(m.label), created) for m in (a, b)]
            mesh_pass, bone_pass = render.render_grid(snapshots, views, panel, np.zeros(3), created, tmpdir,
                                                       palette, "VERTEX")
    finally:
        bscene.remove_created(created)
        if not had_result and "Render Result" in bpy.data.images:
            bpy.data.images.remove(bpy.data.images["Render Result"])
        clear(context)
    grid = ro.composite_colors(mesh_pass, bone_pass, list(palette.values()), BACKGROUND)
    result = overlay.result
    verdict = "same within the tolerances" if result.same else f"{len(result.differences)} differences"
    info = (f"rest position | {verdict}, {len(overlay.marked)} bones marked | limit {overlay.limit:.3g} ({tol:g} of "
            f"diagonal {overlay.diagonal:.3g}), {overlay.mode}")
    pixels, panels = compose_sheet(grid, [None, None], views, panel, title, info)
    _relabel(pixels, labels, views, panel)
    entries = overlay.legend() + [(ro.MARKED_BONE_COLOR, "marked bone")]
    strip = ro.footer(pixels.shape[1], entries, _picture_lines(overlay), HEADER_COLOR, TEXT_COLOR)
    pixels = np.concatenate([pixels, strip], axis=0)
    counts = {"differences": len(result.differences), "marked_bones": len(overlay.marked),
              "vertices": sum(len(ob.data.vertices) for ob in a.meshes), "summary": overlay.findings.summary()}
    return Sheet(pixels, panels, counts, time.perf_counter() - start)


def render_files(context, name_a: str, path_b: str, *, views=VIEWS, tol: float = DEFAULT_TOL
                 ) -> tuple[Sheet, list[str]]:
    """The model in the scene (as an export would take it; `name_a` names it) against the file `path_b`:
    (picture, warnings)."""
    arm, meshes = scene_objects(context)
    if arm is None and not meshes:
        raise ValueError("nothing to compare: no armature and no visible mesh")
    a = Model("A", arm, meshes)
    saved = _Saved()
    _save_selection(context, saved)
    b, warnings = import_model(context, path_b, saved)
    name_b = os.path.basename(path_b)
    sheet = render_compare(context, a, b, views=views, title=f"{name_a} against {name_b}",
                           labels=(f"A {name_a}", f"B {name_b}"), tol=tol, saved=saved)
    return sheet, warnings
