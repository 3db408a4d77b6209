"""A headless contact sheet of a rigged model: the mesh with its bones drawn over it, one panel per view.

What is drawn is what Blender evaluates: the meshes as the depsgraph deforms them (Rest Position for `rest`,
else the pose at each frame) and each bone as thin geometry from its head to its first child's head (head to
tail for a bone without children), coloured by side. Side comes from the bone name (Left/Right, a separate
L/R token, 左/右; see `bone_side`); a name that says neither is drawn as centre. Bones that carry no skin
weight on the drawn meshes are drawn in a pale version of their side's colour (`PALETTE`).

How: the evaluated meshes and the bone geometry of every frame are baked into a temporary scene, one copy per
view turned so that one orthographic camera looking down sees the front, side and top views side by side
(rows are frames, columns views). Workbench renders that scene twice, the meshes (studio light) and the bones
(flat colours, no anti-aliasing); numpy composites the two passes, bones over meshes, and writes the file
name, frame and counts with a small bitmap font (Workbench draws no text). The sheet's pixels are exact
classes: background `BACKGROUND`, mesh pixels grey (r = g = b), bone pixels one of `PALETTE`, text only in
the header and label strips. `Sheet.panels` gives each panel's rectangle. This module holds what needs
Blender (capture and the two Workbench passes); the layout, the compositing and the font work on numpy arrays
alone in core/contact_sheet.py and core/bitmap_font.py.

`camera_view` renders, beside the sheet, the scene through the camera an import set up (a Wallpaper Engine
project: its layers as the format draws them), with EEVEE.

Read-only for the user: the temporary scene and everything in it are removed in `finally`; the armature's
pose position, action, NLA switch and the scene frame are put back; a "Render Result" image that did not
exist before is removed.
"""
from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import dataclass

import bpy
import numpy as np
from mathutils import Matrix

from ..blender import scene as bscene
from ..core.bitmap_font import text_mask  # noqa: F401  (re-exported for the tests)
from ..core.fileio import write_atomic
from ..core.png import encode_png
from ..core.contact_sheet import (
    DEFAULT_PANEL, PALETTE, TRIANGLES_PER_BONE, VIEW_ROTATION, VIEWS, Sheet, bone_prisms, bone_side, compose_sheet,
    composite, panel_size, sheet_info, srgb_to_linear, translation, view_scale,
)
from ..core.contact_sheet import (  # noqa: F401  (re-exported for the CLI, the operator and the tests)
    HEADER_HEIGHT, LABEL_HEIGHT, MAX_FRAMES, TEXT_COLOR, Panel, parse_frames, write_sheet,
)

BONE_HALF_WIDTH_PX = 1.0  # half width of a bone's prism, in pixels
JOINT_HALF_WIDTH_PX = 2.0  # half size of the marker at each bone's head


@dataclass
class _Snapshot:
    frame: int | None
    meshes: list  # baked bpy meshes, world space
    heads: np.ndarray  # (B, 3)
    ends: np.ndarray  # (B, 3)
    classes: list[tuple[str, bool]]  # (side, weighted) per bone


# ---------------------------------------------------------------------------------------------------
# bones: weights, segments

def weighted_bones(meshes, arm_ob) -> set[str]:
    """Names of the bones that weigh on at least one vertex of the meshes deformed by `arm_ob`."""
    names = set(arm_ob.data.bones.keys())
    out: set[str] = set()
    for ob in meshes:
        if not any(m.type == "ARMATURE" and m.object == arm_ob for m in ob.modifiers):
            continue
        groups = {g.index: g.name for g in ob.vertex_groups if g.name in names}
        if not groups:
            continue
        seen: set[int] = set()
        for v in ob.data.vertices:
            for g in v.groups:
                if g.weight > 0:
                    seen.add(g.group)
        out |= {groups[i] for i in seen if i in groups}
    return out


def _segments(arm_ob, depsgraph) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(names, heads, ends) of every bone as evaluated, world space: end = the first child's head, or the
    tail for a bone without children (or whose first child starts where it does)."""
    ev = arm_ob.evaluated_get(depsgraph)
    world = np.array(ev.matrix_world, dtype=np.float64)
    names = [pb.name for pb in ev.pose.bones]
    heads = np.array([tuple(pb.head) for pb in ev.pose.bones], dtype=np.float64).reshape(-1, 3)
    tails = np.array([tuple(pb.tail) for pb in ev.pose.bones], dtype=np.float64).reshape(-1, 3)
    index = {n: i for i, n in enumerate(names)}
    ends = tails.copy()
    for i, pb in enumerate(ev.pose.bones):
        kids = pb.children
        if len(kids):
            j = index[kids[0].name]
            if np.linalg.norm(heads[j] - heads[i]) > 1e-9 * (1 + np.abs(heads[i]).max()):
                ends[i] = heads[j]

    def to_world(p):
        return p @ world[:3, :3].T + world[:3, 3]

    return names, to_world(heads), to_world(ends)


# ---------------------------------------------------------------------------------------------------
# capture (reads the user's scene, puts back what it touched)

def find_action(name: str):
    act = bpy.data.actions.get(name)
    if act is None:
        lowered = {a.name.lower(): a for a in bpy.data.actions}
        act = lowered.get(name.lower())
    if act is None:
        available = ", ".join(sorted(a.name for a in bpy.data.actions)) or "none"
        raise ValueError(f"no action named {name!r} (actions: {available})")
    return act


def _assign(arm_ob, act) -> None:
    ad = arm_ob.animation_data or arm_ob.animation_data_create()
    ad.action = act
    if ad.action_slot is None or ad.action_slot not in list(act.slots):
        slot = next((s for s in act.slots if s.target_id_type in ("OBJECT", "UNSPECIFIED")), None)
        if slot is not None:
            ad.action_slot = slot


def _bake_mesh(ob, depsgraph):
    ev = ob.evaluated_get(depsgraph)
    me = bpy.data.meshes.new_from_object(ev, preserve_all_data_layers=False, depsgraph=depsgraph)
    me.transform(ev.matrix_world)
    return me


def capture(context, arm_ob, meshes, frames: list[int] | None, action: str | None, created: list,
             weighted: set[str]) -> list[_Snapshot]:
    scene = context.scene
    saved_frame = (scene.frame_current, scene.frame_subframe)
    saved_pose = arm_ob.data.pose_position if arm_ob is not None else None
    ad = arm_ob.animation_data if arm_ob is not None else None
    saved_anim = (ad.action, ad.action_slot, ad.use_nla) if ad is not None else None
    had_anim = ad is not None
    snapshots = []
    try:
        if arm_ob is not None:
            if frames is None:
                arm_ob.data.pose_position = "REST"
            else:
                arm_ob.data.pose_position = "POSE"
                if action is not None:
                    _assign(arm_ob, find_action(action))
                    arm_ob.animation_data.use_nla = False  # the named action alone, not NLA strips under it
        for frame in frames if frames is not None else [None]:
            if frame is not None:
                scene.frame_set(frame)
            context.view_layer.update()
            dg = context.evaluated_depsgraph_get()
            baked = []
            for ob in meshes:
                me = _bake_mesh(ob, dg)
                created.append(me)
                baked.append(me)
            if arm_ob is not None:
                names, heads, ends = _segments(arm_ob, dg)
            else:
                names, heads, ends = [], np.zeros((0, 3)), np.zeros((0, 3))
            classes = [(bone_side(n), n in weighted) for n in names]
            snapshots.append(_Snapshot(frame, baked, heads, ends, classes))
    finally:
        if arm_ob is not None:
            if arm_ob.data.pose_position != saved_pose:
                arm_ob.data.pose_position = saved_pose
            if had_anim:
                ad = arm_ob.animation_data
                if ad.action != saved_anim[0]:
                    ad.action = saved_anim[0]
                if saved_anim[1] is not None and ad.action_slot != saved_anim[1]:
                    ad.action_slot = saved_anim[1]
                if ad.use_nla != saved_anim[2]:
                    ad.use_nla = saved_anim[2]
            elif arm_ob.animation_data is not None:
                arm_ob.animation_data_clear()
        if (scene.frame_current, scene.frame_subframe) != saved_frame:
            scene.frame_set(saved_frame[0], subframe=saved_frame[1])
        context.view_layer.update()
    return snapshots


_POSE_CHANNELS = (("location", 3), ("rotation_quaternion", 4), ("rotation_euler", 3), ("rotation_axis_angle", 4),
                  ("scale", 3))


def _pose_values(arm_ob) -> dict[str, np.ndarray]:
    """Every pose bone's local transform channels, as the user left them (keyed or not)."""
    bones = arm_ob.pose.bones
    out = {}
    for prop, width in _POSE_CHANNELS:
        buf = np.empty(len(bones) * width, np.float32)
        bones.foreach_get(prop, buf)
        out[prop] = buf
    return out


def _set_pose_values(arm_ob, saved: dict[str, np.ndarray]) -> None:
    bones = arm_ob.pose.bones
    for prop, _ in _POSE_CHANNELS:
        current = np.empty_like(saved[prop])
        bones.foreach_get(prop, current)
        if not np.array_equal(current, saved[prop]):
            bones.foreach_set(prop, saved[prop])


# ---------------------------------------------------------------------------------------------------
# layout and render of the temporary scene

def _mesh_points(me) -> np.ndarray:
    co = np.empty(len(me.vertices) * 3, np.float32)
    me.attributes["position"].data.foreach_get("vector", co)
    return co.reshape(-1, 3).astype(np.float64)


def _bone_mesh(snap: _Snapshot, offset: np.ndarray, half: float, joint: float, class_index: dict, created: list):
    """The bone overlay of a snapshot as one mesh, a material slot per colour class; `offset` moves the overlay
    alone (a control knob for tests and diagnosis: the mesh stays)."""
    verts, tris = bone_prisms(snap.heads + offset, snap.ends + offset, half, joint)
    me = bpy.data.meshes.new("skinbridge_render_bones")
    created.append(me)
    me.vertices.add(len(verts))
    me.attributes["position"].data.foreach_set("vector", verts.astype(np.float32).ravel())
    me.loops.add(tris.size)
    me.attributes[".corner_vert"].data.foreach_set("value", tris.astype(np.int32).ravel())
    me.polygons.add(len(tris))
    me.polygons.foreach_set("loop_start", np.arange(0, tris.size, 3, dtype=np.int32))
    per_bone = np.array([class_index[c] for c in snap.classes], dtype=np.int32)
    me.polygons.foreach_set("material_index", np.repeat(per_bone, TRIANGLES_PER_BONE))
    me.update()
    return me


def _configure(scene, size: tuple[int, int], path: str) -> None:
    r = scene.render
    r.engine = "BLENDER_WORKBENCH"
    r.resolution_x, r.resolution_y = size
    r.resolution_percentage = 100
    r.film_transparent = True
    r.filepath = path
    r.image_settings.file_format = "PNG"
    r.image_settings.color_mode = "RGBA"
    r.image_settings.color_depth = "8"
    scene.view_settings.view_transform = "Standard"
    scene.view_settings.look = "None"
    scene.view_settings.exposure = 0.0
    scene.view_settings.gamma = 1.0
    scene.display.render_aa = "OFF"
    sh = scene.display.shading
    sh.show_cavity = False
    sh.show_shadows = False
    sh.show_object_outline = False
    sh.show_specular_highlight = False
    sh.show_xray = False
    sh.show_backface_culling = False


def _render_pass(scene, path: str) -> np.ndarray:
    """Render `scene` to `path` and read the RGBA pixels back (H, W, 4) uint8, first row at the top."""
    bpy.ops.render.render(scene=scene.name)
    bpy.data.images["Render Result"].save_render(path, scene=scene)  # (write_still would log "Saved:" on stdout)
    img = bpy.data.images.load(path, check_existing=False)
    try:
        w, h = img.size
        buf = np.empty(w * h * 4, np.float32)
        img.pixels.foreach_get(buf)
    finally:
        bpy.data.images.remove(img)
    return np.round(buf.reshape(h, w, 4)[::-1] * 255).astype(np.uint8)


def _layout(snapshots, views, panel, bone_offset) -> tuple[float, dict]:
    """World units per pixel (one scale for every panel) and each view's centre in its turned frame."""
    points = []
    for s in snapshots:
        for me in s.meshes:
            points.append(_mesh_points(me))
        if len(s.heads):
            points += [s.heads + bone_offset, s.ends + bone_offset]
    return view_scale(np.concatenate(points) if points else np.zeros((0, 3)), views, panel)


def render_grid(snapshots, views, panel, bone_offset, created, tmpdir, palette: dict = PALETTE,
                 mesh_color: str = "SINGLE") -> tuple[np.ndarray, np.ndarray]:
    """The mesh pass and the bone pass of the whole grid: (H, W, 4) uint8 each. `palette`: the bone classes'
    colours; `mesh_color` "VERTEX": the meshes in their active colour attribute, unlit (the Rest Compare)."""
    pw, ph = panel
    rows, cols = len(snapshots), len(views)
    s, centres = _layout(snapshots, views, panel, bone_offset)
    scene = bpy.data.scenes.new("skinbridge_render")
    created.append(scene)
    classes = list(palette)
    class_index = {c: i for i, c in enumerate(classes)}
    mats = []
    for c in classes:
        mat = bpy.data.materials.new(f"skinbridge_render_{c[0]}_{int(c[1])}")
        created.append(mat)
        mat.diffuse_color = srgb_to_linear(palette[c])
        mats.append(mat)
    mesh_objects, bone_objects = [], []
    zmin, zmax = math.inf, -math.inf
    for r, snap in enumerate(snapshots):
        bones = None
        if len(snap.heads):
            bones = _bone_mesh(snap, bone_offset, BONE_HALF_WIDTH_PX * s, JOINT_HALF_WIDTH_PX * s, class_index,
                               created)
            for mat in mats:
                bones.materials.append(mat)
        for c, view in enumerate(views):
            rot = np.eye(4)
            rot[:3, :3] = VIEW_ROTATION[view]
            cell = np.array([(c + 0.5) * pw * s, -(r + 0.5) * ph * s, 0.0])
            place = translation(cell - np.array([*centres[view][:2], 0.0])) @ rot
            for me in snap.meshes:
                mesh_objects.append(_placed(scene, "skinbridge_render_mesh", me, place, created))
                z = _mesh_points(me) @ VIEW_ROTATION[view][2]
                if len(z):
                    zmin, zmax = min(zmin, z.min()), max(zmax, z.max())
            if bones is not None:
                bone_objects.append(_placed(scene, "skinbridge_render_bones", bones, place, created))
                z = _mesh_points(bones) @ VIEW_ROTATION[view][2]
                zmin, zmax = min(zmin, z.min()), max(zmax, z.max())
    if not math.isfinite(zmin):
        zmin, zmax = -1.0, 1.0
    width, height = cols * pw, rows * ph
    cam_data = bpy.data.cameras.new("skinbridge_render_camera")
    created.append(cam_data)
    cam_data.type = "ORTHO"
    cam_data.sensor_fit = "AUTO"
    cam_data.ortho_scale = s * max(width, height)
    depth = zmax - zmin
    pad = max(depth, s * max(width, height)) * 0.1 + 1e-6
    cam_data.clip_start = pad * 0.5
    cam_data.clip_end = depth + pad * 2
    cam = bpy.data.objects.new("skinbridge_render_camera", cam_data)
    created.append(cam)
    scene.collection.objects.link(cam)
    cam.location = (width * s / 2, -height * s / 2, zmax + pad)
    scene.camera = cam
    path = os.path.join(tmpdir, "pass.png")
    _configure(scene, (width, height), path)
    sh = scene.display.shading

    def show(objects, visible):
        for ob in objects:
            ob.hide_render = not visible

    show(bone_objects, False)
    sh.light = "STUDIO" if mesh_color == "SINGLE" else "FLAT"
    sh.color_type = mesh_color
    sh.single_color = (0.8, 0.8, 0.8)
    mesh_pass = _render_pass(scene, path) if mesh_objects else np.zeros((height, width, 4), np.uint8)
    show(bone_objects, True)
    show(mesh_objects, False)
    sh.light = "FLAT"
    sh.color_type = "MATERIAL"
    bone_pass = _render_pass(scene, path) if bone_objects else np.zeros((height, width, 4), np.uint8)
    return mesh_pass, bone_pass


def _placed(scene, name: str, data, place: np.ndarray, created: list):
    """A new object of mesh `data` in `scene` at the matrix `place`, listed in `created` (removed afterwards)."""
    ob = bpy.data.objects.new(name, data)
    created.append(ob)
    scene.collection.objects.link(ob)
    ob.matrix_world = _blender_matrix(place)
    return ob


def _blender_matrix(m: np.ndarray):
    return Matrix(np.asarray(m, dtype=np.float64).tolist())


# ---------------------------------------------------------------------------------------------------
# entry points

def scene_objects(context, arm_ob=None) -> tuple[object, list]:
    """(armature, meshes) to draw: with `arm_ob`, the visible meshes it deforms or parents; otherwise what an
    export would take (`scene.exportable_objects`)."""
    if arm_ob is None:
        meshes, arm_ob = bscene.exportable_objects(context)
        return arm_ob, meshes
    meshes = []
    for ob in context.view_layer.objects:
        if ob.type != "MESH":
            continue
        deformed = any(m.type == "ARMATURE" and m.object == arm_ob and m.show_viewport for m in ob.modifiers)
        if deformed or (ob.parent == arm_ob and ob.visible_get()):
            meshes.append(ob)
    return arm_ob, meshes


def render_sheet(context, arm_ob=None, meshes=None, *, frames: list[int] | None = None, action: str | None = None,
                 views=VIEWS, panel: tuple[int, int] = DEFAULT_PANEL, title: str = "",
                 bone_offset=(0.0, 0.0, 0.0)) -> Sheet:
    """Render the contact sheet of `arm_ob` and `meshes` (default: `scene_objects`). `frames` None draws the
    Rest Position; otherwise one row per frame, posed by `action` (by name; else what is assigned).
    `bone_offset` moves the bone overlay only (world units), for control renders."""
    start = time.perf_counter()
    views = tuple(views)
    for v in views:
        if v not in VIEW_ROTATION:
            raise ValueError(f"unknown view {v!r}; expected some of {', '.join(VIEWS)}")
    if not views:
        raise ValueError("no view to render")
    if meshes is None:
        arm_ob, meshes = scene_objects(context, arm_ob)
    if arm_ob is None and not meshes:
        raise ValueError("nothing to render: no armature and no visible mesh")
    panel = panel_size(len(views), 1 if frames is None else len(frames), panel)
    offset = np.asarray(bone_offset, dtype=np.float64).reshape(3)
    weighted = weighted_bones(meshes, arm_ob) if arm_ob is not None else set()
    created: list = []
    had_result = "Render Result" in bpy.data.images
    saved_pose = _pose_values(arm_ob) if arm_ob is not None else None
    try:
        with tempfile.TemporaryDirectory(prefix="skinbridge-render-") as tmpdir:
            snapshots = capture(context, arm_ob, meshes, frames, action, created, weighted)
            mesh_pass, bone_pass = render_grid(snapshots, views, panel, offset, created, tmpdir)
    finally:
        bscene.remove_created(created)
        if not had_result and "Render Result" in bpy.data.images:
            bpy.data.images.remove(bpy.data.images["Render Result"])
        if saved_pose is not None:  # the user's unkeyed pose edits, which evaluating the action replaced
            context.view_layer.update()
            _set_pose_values(arm_ob, saved_pose)
    grid = composite(mesh_pass, bone_pass)
    n_bones = len(arm_ob.data.bones) if arm_ob is not None else 0
    counts = {
        "vertices": sum(len(ob.data.vertices) for ob in meshes),
        "triangles": sum(_triangle_count(ob.data) for ob in meshes),
        "bones": n_bones,
        "weighted_bones": len(weighted),
    }
    info = sheet_info(counts, frames, action)
    pixels, panels = compose_sheet(grid, [s.frame for s in snapshots], views, panel, title, info)
    return Sheet(pixels, panels, counts, time.perf_counter() - start)


def _triangle_count(me) -> int:
    sizes = np.empty(len(me.polygons), np.int32)
    me.polygons.foreach_get("loop_total", sizes)
    return int((sizes - 2).sum())


# ---------------------------------------------------------------------------------------------------
# the view through the scene's camera

CAMERA_VIEW_MAX = 1024  # the camera view's longer side at most, in pixels (the scene's own size when smaller)
CAMERA_VIEW_SAMPLES = 8  # EEVEE samples: enough to smooth a layer's edges, cheap on a shared CPU


def camera_view_path(output: str) -> str:
    """Where `skinbridge render` writes the camera view beside the sheet `output`: NAME_camera.png."""
    stem, ext = os.path.splitext(output)
    return f"{stem}_camera{ext}"


def camera_view(context, frame: int | None = None, longest: int = CAMERA_VIEW_MAX) -> np.ndarray | None:
    """The scene as its camera sees it, rendered with EEVEE at the scene's resolution (its longer side brought
    down to `longest`), standard view transform: (H, W, 4) uint8, first row at the top. None when the scene has
    no camera: only an import that draws a scene through its camera (a Wallpaper Engine project) sets one in
    the empty scene `skinbridge render` imports into. `frame`: the scene frame drawn (default: the current one).
    The render settings, the frame and a new "Render Result" image are put back as they were."""
    scene = context.scene
    if scene.camera is None:
        return None
    r = scene.render
    saved = {"engine": r.engine, "resolution_percentage": r.resolution_percentage, "filepath": r.filepath,
             "film_transparent": r.film_transparent}
    saved_image = (r.image_settings.file_format, r.image_settings.color_mode, r.image_settings.color_depth)
    saved_view = (scene.view_settings.view_transform, scene.view_settings.look)
    saved_samples = scene.eevee.taa_render_samples
    saved_frame = (scene.frame_current, scene.frame_subframe)
    had_result = "Render Result" in bpy.data.images
    try:
        engines = [e.identifier for e in type(r).bl_rna.properties["engine"].enum_items]
        r.engine = "BLENDER_EEVEE_NEXT" if "BLENDER_EEVEE_NEXT" in engines else "BLENDER_EEVEE"
        scene.eevee.taa_render_samples = CAMERA_VIEW_SAMPLES
        w, h = r.resolution_x, r.resolution_y
        r.resolution_percentage = max(1, min(100, int(100 * longest // max(w, h, 1))))
        r.film_transparent = False
        r.image_settings.file_format, r.image_settings.color_mode = "PNG", "RGBA"
        r.image_settings.color_depth = "8"
        scene.view_settings.view_transform, scene.view_settings.look = "Standard", "None"
        if frame is not None:
            scene.frame_set(frame)
        with tempfile.TemporaryDirectory(prefix="skinbridge-render-") as tmpdir:
            r.filepath = os.path.join(tmpdir, "camera.png")
            return _render_pass(scene, r.filepath)
    finally:
        for key, value in saved.items():
            if getattr(r, key) != value:
                setattr(r, key, value)
        r.image_settings.file_format, r.image_settings.color_mode, r.image_settings.color_depth = saved_image
        scene.view_settings.view_transform, scene.view_settings.look = saved_view
        scene.eevee.taa_render_samples = saved_samples
        if (scene.frame_current, scene.frame_subframe) != saved_frame:
            scene.frame_set(saved_frame[0], subframe=saved_frame[1])
        if not had_result and "Render Result" in bpy.data.images:
            bpy.data.images.remove(bpy.data.images["Render Result"])


def write_camera_view(pixels: np.ndarray, path: str) -> None:
    write_atomic(path, encode_png(pixels))
