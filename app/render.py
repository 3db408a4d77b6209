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
the header and label strips. `Sheet.panels` gives each panel's rectangle.

Read-only for the user: the temporary scene and everything in it are removed in `finally`; the armature's
pose position, action, NLA switch and the scene frame are put back; a "Render Result" image that did not
exist before is removed.
"""
from __future__ import annotations

import math
import os
import re
import tempfile
import time
from dataclasses import dataclass

import bpy
import numpy as np

from ..core.fileio import write_atomic
from ..core.png import encode_png
from ..blender import scene as bscene

VIEWS = ("front", "side", "top")
# Rows: the world axes seen as (screen right, screen up, toward the viewer) by a camera looking down -Z.
# front: Blender's Front view (from -Y); side: its Right view (from +X); top: from +Z.
_VIEW_ROTATION = {
    "front": np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]]),
    "side": np.array([[0.0, 1, 0], [0, 0, 1], [1, 0, 0]]),
    "top": np.eye(3),
}

BACKGROUND = (38, 42, 56)
HEADER_COLOR = (22, 24, 32)
TEXT_COLOR = (235, 235, 225)
# (side, weighted) -> colour of the bone overlay
PALETTE = {
    ("left", True): (225, 50, 50),
    ("right", True): (40, 110, 245),
    ("centre", True): (40, 190, 70),
    ("left", False): (250, 175, 195),
    ("right", False): (165, 215, 250),
    ("centre", False): (190, 240, 150),
}
MESH_GREY = (70, 235)  # darkest and lightest grey of the shaded mesh

HEADER_HEIGHT = 48
LABEL_HEIGHT = 20
DEFAULT_PANEL = (400, 560)
MIN_SHEET = (800, 600)
MAX_FRAMES = 32
MARGIN = 0.06  # of each panel, around the model

BONE_HALF_WIDTH_PX = 1.0  # half width of a bone's prism, in pixels
JOINT_HALF_WIDTH_PX = 2.0  # half size of the marker at each bone's head


@dataclass
class Panel:
    view: str
    frame: int | None  # None at rest
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 in sheet pixels (x1, y1 exclusive), rendered area only


@dataclass
class Sheet:
    pixels: np.ndarray  # (H, W, 3) uint8, first row at the top
    panels: list[Panel]
    counts: dict
    seconds: float = 0.0  # wall time of capture + render + compositing


@dataclass
class _Snapshot:
    frame: int | None
    meshes: list  # baked bpy meshes, world space
    heads: np.ndarray  # (B, 3)
    ends: np.ndarray  # (B, 3)
    classes: list[tuple[str, bool]]  # (side, weighted) per bone


# ---------------------------------------------------------------------------------------------------
# bones: side, weights, segments

_LEFT_WORDS = re.compile(r"left|左")
_RIGHT_WORDS = re.compile(r"right|右")


def bone_side(name: str) -> str:
    """'left', 'right' or 'centre' from a bone name: the words Left/Right (any case, also inside CamelCase),
    左/右, or a separate L/R token (`arm.L`, `L_arm`, `arm_r`)."""
    low = name.lower()
    left, right = bool(_LEFT_WORDS.search(low)), bool(_RIGHT_WORDS.search(low))
    if left != right:
        return "left" if left else "right"
    tokens = set(re.split(r"[\s._\-:|]+", low))
    if ("l" in tokens) != ("r" in tokens):
        return "left" if "l" in tokens else "right"
    return "centre"


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


def _prisms(heads: np.ndarray, ends: np.ndarray, half: float, joint: float) -> tuple[np.ndarray, np.ndarray]:
    """A square prism of half width `half` along every segment plus an octahedron of size `joint` at every
    head: (vertices (N, 3), triangles (T, 3)) with 8 + 6 vertices per segment."""
    n = len(heads)
    d = ends - heads
    length = np.linalg.norm(d, axis=1)
    ok = length > 0
    d = np.where(ok[:, None], d / np.where(ok, length, 1)[:, None], np.array([0.0, 0.0, 1.0]))
    helper = np.where((np.abs(d[:, 2]) < 0.9)[:, None], np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0]))
    u = np.cross(d, helper)
    u /= np.linalg.norm(u, axis=1)[:, None]
    v = np.cross(d, u)
    corners = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]], dtype=np.float64)
    ring = half * (corners[None, :, 0, None] * u[:, None, :] + corners[None, :, 1, None] * v[:, None, :])
    prism = np.concatenate([heads[:, None, :] + ring, ends[:, None, :] + ring], axis=1)  # (n, 8, 3)
    axes = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], dtype=np.float64)
    octa = heads[:, None, :] + joint * axes[None, :, :]  # (n, 6, 3)
    verts = np.concatenate([prism, octa], axis=1).reshape(-1, 3)
    side = [[0, 1, 5], [0, 5, 4], [1, 2, 6], [1, 6, 5], [2, 3, 7], [2, 7, 6], [3, 0, 4], [3, 4, 7],
            [0, 3, 2], [0, 2, 1], [4, 5, 6], [4, 6, 7]]
    octa_tris = [[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]]
    local = np.array(side + [[a + 8, b + 8, c + 8] for a, b, c in octa_tris], dtype=np.int64)
    tris = (np.arange(n)[:, None, None] * 14 + local[None]).reshape(-1, 3)
    return verts, tris


# ---------------------------------------------------------------------------------------------------
# capture (reads the user's scene, puts back what it touched)

def _find_action(name: str):
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


def _capture(context, arm_ob, meshes, frames: list[int] | None, action: str | None, created: list,
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
                    _assign(arm_ob, _find_action(action))
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


def _linear(c) -> tuple[float, float, float, float]:
    def one(x):
        x /= 255.0
        return x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4

    return (one(c[0]), one(c[1]), one(c[2]), 1.0)


def _bone_mesh(snap: _Snapshot, offset: np.ndarray, half: float, joint: float, class_index: dict, created: list):
    """The bone overlay of a snapshot as one mesh, a material slot per colour class; `offset` moves the overlay
    alone (a control knob for tests and diagnosis: the mesh stays)."""
    verts, tris = _prisms(snap.heads + offset, snap.ends + offset, half, joint)
    me = bpy.data.meshes.new("skinbridge_render_bones")
    created.append(me)
    me.vertices.add(len(verts))
    me.attributes["position"].data.foreach_set("vector", verts.astype(np.float32).ravel())
    me.loops.add(tris.size)
    me.attributes[".corner_vert"].data.foreach_set("value", tris.astype(np.int32).ravel())
    me.polygons.add(len(tris))
    me.polygons.foreach_set("loop_start", np.arange(0, tris.size, 3, dtype=np.int32))
    per_bone = np.array([class_index[c] for c in snap.classes], dtype=np.int32)
    me.polygons.foreach_set("material_index", np.repeat(per_bone, 20))
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
    pts = np.concatenate(points) if points else np.zeros((1, 3))
    pts = pts[np.isfinite(pts).all(axis=1)]
    if not len(pts):
        pts = np.zeros((1, 3))
    scale = 0.0
    centres = {}
    pw, ph = panel
    for v in views:
        q = pts @ _VIEW_ROTATION[v].T
        lo, hi = q.min(axis=0), q.max(axis=0)
        centres[v] = (lo + hi) / 2
        ext = hi - lo
        scale = max(scale, ext[0] / (pw * (1 - 2 * MARGIN)), ext[1] / (ph * (1 - 2 * MARGIN)))
    if scale <= 0:
        scale = 1.0 / min(pw, ph)
    return scale, centres


def _render_grid(snapshots, views, panel, bone_offset, created, tmpdir) -> tuple[np.ndarray, np.ndarray]:
    """The mesh pass and the bone pass of the whole grid: (H, W, 4) uint8 each."""
    pw, ph = panel
    rows, cols = len(snapshots), len(views)
    s, centres = _layout(snapshots, views, panel, bone_offset)
    scene = bpy.data.scenes.new("skinbridge_render")
    created.append(scene)
    classes = list(PALETTE)
    class_index = {c: i for i, c in enumerate(classes)}
    mats = []
    for c in classes:
        mat = bpy.data.materials.new(f"skinbridge_render_{c[0]}_{int(c[1])}")
        created.append(mat)
        mat.diffuse_color = _linear(PALETTE[c])
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
            rot[:3, :3] = _VIEW_ROTATION[view]
            cell = np.array([(c + 0.5) * pw * s, -(r + 0.5) * ph * s, 0.0])
            place = _translation(cell - np.array([*centres[view][:2], 0.0])) @ rot
            for me in snap.meshes:
                ob = bpy.data.objects.new("skinbridge_render_mesh", me)
                created.append(ob)
                scene.collection.objects.link(ob)
                ob.matrix_world = _blender_matrix(place)
                mesh_objects.append(ob)
                z = _mesh_points(me) @ _VIEW_ROTATION[view][2]
                if len(z):
                    zmin, zmax = min(zmin, z.min()), max(zmax, z.max())
            if bones is not None:
                ob = bpy.data.objects.new("skinbridge_render_bones", bones)
                created.append(ob)
                scene.collection.objects.link(ob)
                ob.matrix_world = _blender_matrix(place)
                bone_objects.append(ob)
                z = _mesh_points(bones) @ _VIEW_ROTATION[view][2]
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
    sh.light = "STUDIO"
    sh.color_type = "SINGLE"
    sh.single_color = (0.8, 0.8, 0.8)
    mesh_pass = _render_pass(scene, path) if mesh_objects else np.zeros((height, width, 4), np.uint8)
    show(bone_objects, True)
    show(mesh_objects, False)
    sh.light = "FLAT"
    sh.color_type = "MATERIAL"
    bone_pass = _render_pass(scene, path) if bone_objects else np.zeros((height, width, 4), np.uint8)
    return mesh_pass, bone_pass


def _translation(t) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = t
    return m


def _blender_matrix(m: np.ndarray):
    from mathutils import Matrix

    return Matrix(np.asarray(m, dtype=np.float64).tolist())


# ---------------------------------------------------------------------------------------------------
# compositing

def _composite(mesh_pass: np.ndarray, bone_pass: np.ndarray) -> np.ndarray:
    h, w = mesh_pass.shape[:2]
    out = np.empty((h, w, 3), np.uint8)
    out[:] = BACKGROUND
    mesh = mesh_pass[..., 3] >= 128
    lum = mesh_pass[..., :3].astype(np.float64) @ np.array([0.2126, 0.7152, 0.0722]) / 255.0
    lo, hi = MESH_GREY
    grey = np.clip(np.round(lo + (hi - lo) * lum), lo, hi).astype(np.uint8)
    out[mesh] = grey[mesh][:, None]
    bone = bone_pass[..., 3] >= 128
    if bone.any():
        palette = np.array(list(PALETTE.values()), dtype=np.float64)
        px = bone_pass[bone][:, :3].astype(np.float64)
        nearest = np.argmin(((px[:, None, :] - palette[None]) ** 2).sum(axis=2), axis=1)
        out[bone] = palette[nearest].astype(np.uint8)
    return out


def _fit(text: str, width_px: int, scale: int) -> str:
    room = max(1, width_px // (FONT_ADVANCE * scale))
    return text if len(text) <= room else text[: max(room - 3, 0)] + "..."


def _sheet(grid: np.ndarray, snapshots, views, panel, title: str, info: str) -> tuple[np.ndarray, list[Panel]]:
    pw, ph = panel
    rows, cols = len(snapshots), len(views)
    width = cols * pw
    height = HEADER_HEIGHT + rows * (LABEL_HEIGHT + ph)
    img = np.empty((height, width, 3), np.uint8)
    img[:] = HEADER_COLOR
    draw_text(img, 8, 6, _fit(title, width - 16, 2), TEXT_COLOR, 2)
    legend = [("left", (True, False)), ("right", (True, False)), ("centre", (True, False))]
    legend_width = 3 * (FONT_ADVANCE * 6 + 28) + FONT_ADVANCE * 16
    x = width - legend_width
    info_room = x - 16 if x > width // 2 else width - 16
    draw_text(img, 8, 28, _fit(info, info_room, 1), TEXT_COLOR, 1)
    if x > width // 2:
        for side, flags in legend:
            for k, weighted in enumerate(flags):
                img[29 + 8 * k:35 + 8 * k, x:x + 10] = PALETTE[(side, weighted)]
            draw_text(img, x + 14, 32, side, TEXT_COLOR, 1)
            x += FONT_ADVANCE * 6 + 28
        draw_text(img, x, 28, "top: weighted", TEXT_COLOR, 1)
        draw_text(img, x, 38, "pale: no weights", TEXT_COLOR, 1)
    panels = []
    for r, snap in enumerate(snapshots):
        y0 = HEADER_HEIGHT + r * (LABEL_HEIGHT + ph)
        for c, view in enumerate(views):
            x0 = c * pw
            label = view if snap.frame is None else f"{view}  frame {snap.frame}"
            draw_text(img, x0 + 6, y0 + 3, _fit(label, pw - 12, 2), TEXT_COLOR, 2)
            top = y0 + LABEL_HEIGHT
            img[top:top + ph, x0:x0 + pw] = grid[r * ph:(r + 1) * ph, c * pw:(c + 1) * pw]
            if c:  # a one-pixel separator between panels, in the header colour
                img[top:top + ph, x0] = HEADER_COLOR
            panels.append(Panel(view, snap.frame, (x0 + (1 if c else 0), top, x0 + pw, top + ph)))
    return img, panels


# ---------------------------------------------------------------------------------------------------
# entry points

def parse_frames(text: str) -> list[int]:
    """'a:b:step' (b included) or 'a:b' or a comma list '1,5,9' → frame numbers."""
    text = text.strip()
    if ":" in text:
        parts = [int(p) for p in text.split(":")]
        if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] <= 0):
            raise ValueError(f"--frames {text!r}: expected a:b or a:b:step with step > 0")
        a, b = parts[0], parts[1]
        step = parts[2] if len(parts) == 3 else 1
        frames = list(range(a, b + 1, step))
    else:
        frames = [int(p) for p in text.split(",") if p.strip()]
    if not frames:
        raise ValueError(f"--frames {text!r} selects no frame")
    if len(frames) > MAX_FRAMES:
        raise ValueError(f"--frames {text!r} selects {len(frames)} frames; at most {MAX_FRAMES} per sheet")
    return frames


def panel_size(n_views: int, n_rows: int, panel: tuple[int, int] = DEFAULT_PANEL) -> tuple[int, int]:
    """The panel size, grown so that the sheet is at least MIN_SHEET."""
    pw = max(panel[0], -(-MIN_SHEET[0] // max(n_views, 1)))
    rows_height = MIN_SHEET[1] - HEADER_HEIGHT
    ph = max(panel[1], -(-rows_height // max(n_rows, 1)) - LABEL_HEIGHT)
    return pw, ph


def scene_objects(context, arm_ob=None) -> tuple[object, list]:
    """(armature, meshes) to draw: with `arm_ob`, the visible meshes it deforms or parents; otherwise what an
    export would take (`scene.exportable_objects`)."""
    from ..blender.scene import exportable_objects

    if arm_ob is None:
        meshes, arm_ob = exportable_objects(context)
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
        if v not in _VIEW_ROTATION:
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
            snapshots = _capture(context, arm_ob, meshes, frames, action, created, weighted)
            mesh_pass, bone_pass = _render_grid(snapshots, views, panel, offset, created, tmpdir)
    finally:
        bscene.remove_created(created)
        if not had_result and "Render Result" in bpy.data.images:
            bpy.data.images.remove(bpy.data.images["Render Result"])
        if saved_pose is not None:  # the user's unkeyed pose edits, which evaluating the action replaced
            context.view_layer.update()
            _set_pose_values(arm_ob, saved_pose)
    grid = _composite(mesh_pass, bone_pass)
    n_bones = len(arm_ob.data.bones) if arm_ob is not None else 0
    counts = {
        "vertices": sum(len(ob.data.vertices) for ob in meshes),
        "triangles": sum(_triangle_count(ob.data) for ob in meshes),
        "bones": n_bones,
        "weighted_bones": len(weighted),
    }
    when = "rest position" if frames is None else (
        f"frame {frames[0]}" if len(frames) == 1 else f"frames {frames[0]}..{frames[-1]} ({len(frames)})")
    if frames is not None and action:
        when += f", action {action}"
    info = (f"{when} | {counts['vertices']} vertices, {counts['triangles']} triangles, {counts['bones']} bones "
            f"({counts['weighted_bones']} weighted)")
    pixels, panels = _sheet(grid, snapshots, views, panel, title, info)
    return Sheet(pixels, panels, counts, time.perf_counter() - start)


def _triangle_count(me) -> int:
    sizes = np.empty(len(me.polygons), np.int32)
    me.polygons.foreach_get("loop_total", sizes)
    return int((sizes - 2).sum())


def write_sheet(sheet: Sheet, path: str) -> None:
    write_atomic(path, encode_png(sheet.pixels))


# ---------------------------------------------------------------------------------------------------
# a 5×7 bitmap font (printable ASCII; anything else is drawn as an open box)

FONT_WIDTH, FONT_HEIGHT, FONT_ADVANCE = 5, 7, 6

_GLYPHS = {
    " ": ".....|.....|.....|.....|.....|.....|.....",
    "!": "..#..|..#..|..#..|..#..|..#..|.....|..#..",
    '"': ".#.#.|.#.#.|.....|.....|.....|.....|.....",
    "#": ".#.#.|#####|.#.#.|.#.#.|.#.#.|#####|.#.#.",
    "$": "..#..|.####|#.#..|.###.|..#.#|####.|..#..",
    "%": "##..#|##.#.|...#.|..#..|.#...|.#.##|#..##",
    "&": ".##..|#..#.|#.#..|.#...|#.#.#|#..#.|.##.#",
    "'": "..#..|..#..|.....|.....|.....|.....|.....",
    "(": "...#.|..#..|.#...|.#...|.#...|..#..|...#.",
    ")": ".#...|..#..|...#.|...#.|...#.|..#..|.#...",
    "*": ".....|..#..|#.#.#|.###.|#.#.#|..#..|.....",
    "+": ".....|..#..|..#..|#####|..#..|..#..|.....",
    ",": ".....|.....|.....|.....|..##.|...#.|..#..",
    "-": ".....|.....|.....|#####|.....|.....|.....",
    ".": ".....|.....|.....|.....|.....|.##..|.##..",
    "/": "....#|....#|...#.|..#..|.#...|#....|#....",
    "0": ".###.|#...#|#..##|#.#.#|##..#|#...#|.###.",
    "1": "..#..|.##..|..#..|..#..|..#..|..#..|.###.",
    "2": ".###.|#...#|....#|...#.|..#..|.#...|#####",
    "3": "####.|....#|....#|.###.|....#|....#|####.",
    "4": "...#.|..##.|.#.#.|#..#.|#####|...#.|...#.",
    "5": "#####|#....|####.|....#|....#|#...#|.###.",
    "6": "..##.|.#...|#....|####.|#...#|#...#|.###.",
    "7": "#####|....#|...#.|..#..|.#...|.#...|.#...",
    "8": ".###.|#...#|#...#|.###.|#...#|#...#|.###.",
    "9": ".###.|#...#|#...#|.####|....#|...#.|.##..",
    ":": ".....|.##..|.##..|.....|.##..|.##..|.....",
    ";": ".....|.##..|.##..|.....|.##..|..#..|.#...",
    "<": "...#.|..#..|.#...|#....|.#...|..#..|...#.",
    "=": ".....|.....|#####|.....|#####|.....|.....",
    ">": ".#...|..#..|...#.|....#|...#.|..#..|.#...",
    "?": ".###.|#...#|....#|...#.|..#..|.....|..#..",
    "@": ".###.|#...#|#.###|#.#.#|#.###|#....|.###.",
    "A": ".###.|#...#|#...#|#####|#...#|#...#|#...#",
    "B": "####.|#...#|#...#|####.|#...#|#...#|####.",
    "C": ".###.|#...#|#....|#....|#....|#...#|.###.",
    "D": "###..|#..#.|#...#|#...#|#...#|#..#.|###..",
    "E": "#####|#....|#....|####.|#....|#....|#####",
    "F": "#####|#....|#....|####.|#....|#....|#....",
    "G": ".###.|#...#|#....|#.###|#...#|#...#|.####",
    "H": "#...#|#...#|#...#|#####|#...#|#...#|#...#",
    "I": ".###.|..#..|..#..|..#..|..#..|..#..|.###.",
    "J": "..###|...#.|...#.|...#.|...#.|#..#.|.##..",
    "K": "#...#|#..#.|#.#..|##...|#.#..|#..#.|#...#",
    "L": "#....|#....|#....|#....|#....|#....|#####",
    "M": "#...#|##.##|#.#.#|#.#.#|#...#|#...#|#...#",
    "N": "#...#|#...#|##..#|#.#.#|#..##|#...#|#...#",
    "O": ".###.|#...#|#...#|#...#|#...#|#...#|.###.",
    "P": "####.|#...#|#...#|####.|#....|#....|#....",
    "Q": ".###.|#...#|#...#|#...#|#.#.#|#..#.|.##.#",
    "R": "####.|#...#|#...#|####.|#.#..|#..#.|#...#",
    "S": ".####|#....|#....|.###.|....#|....#|####.",
    "T": "#####|..#..|..#..|..#..|..#..|..#..|..#..",
    "U": "#...#|#...#|#...#|#...#|#...#|#...#|.###.",
    "V": "#...#|#...#|#...#|#...#|#...#|.#.#.|..#..",
    "W": "#...#|#...#|#...#|#.#.#|#.#.#|#.#.#|.#.#.",
    "X": "#...#|#...#|.#.#.|..#..|.#.#.|#...#|#...#",
    "Y": "#...#|#...#|.#.#.|..#..|..#..|..#..|..#..",
    "Z": "#####|....#|...#.|..#..|.#...|#....|#####",
    "[": ".###.|.#...|.#...|.#...|.#...|.#...|.###.",
    "\\": "#....|#....|.#...|..#..|...#.|....#|....#",
    "]": ".###.|...#.|...#.|...#.|...#.|...#.|.###.",
    "^": "..#..|.#.#.|#...#|.....|.....|.....|.....",
    "_": ".....|.....|.....|.....|.....|.....|#####",
    "`": ".#...|..#..|.....|.....|.....|.....|.....",
    "a": ".....|.....|.###.|....#|.####|#...#|.####",
    "b": "#....|#....|#.##.|##..#|#...#|#...#|####.",
    "c": ".....|.....|.###.|#....|#....|#...#|.###.",
    "d": "....#|....#|.##.#|#..##|#...#|#...#|.####",
    "e": ".....|.....|.###.|#...#|#####|#....|.###.",
    "f": "..##.|.#..#|.#...|###..|.#...|.#...|.#...",
    "g": ".....|.####|#...#|#...#|.####|....#|.###.",
    "h": "#....|#....|#.##.|##..#|#...#|#...#|#...#",
    "i": "..#..|.....|.##..|..#..|..#..|..#..|.###.",
    "j": "...#.|.....|..##.|...#.|...#.|#..#.|.##..",
    "k": "#....|#....|#..#.|#.#..|##...|#.#..|#..#.",
    "l": ".##..|..#..|..#..|..#..|..#..|..#..|.###.",
    "m": ".....|.....|##.#.|#.#.#|#.#.#|#...#|#...#",
    "n": ".....|.....|#.##.|##..#|#...#|#...#|#...#",
    "o": ".....|.....|.###.|#...#|#...#|#...#|.###.",
    "p": ".....|.....|####.|#...#|####.|#....|#....",
    "q": ".....|.....|.##.#|#..##|.####|....#|....#",
    "r": ".....|.....|#.##.|##..#|#....|#....|#....",
    "s": ".....|.....|.###.|#....|.###.|....#|####.",
    "t": ".#...|.#...|###..|.#...|.#...|.#..#|..##.",
    "u": ".....|.....|#...#|#...#|#...#|#..##|.##.#",
    "v": ".....|.....|#...#|#...#|#...#|.#.#.|..#..",
    "w": ".....|.....|#...#|#...#|#.#.#|#.#.#|.#.#.",
    "x": ".....|.....|#...#|.#.#.|..#..|.#.#.|#...#",
    "y": ".....|.....|#...#|#...#|.####|....#|.###.",
    "z": ".....|.....|#####|...#.|..#..|.#...|#####",
    "{": "...#.|..#..|..#..|.#...|..#..|..#..|...#.",
    "|": "..#..|..#..|..#..|..#..|..#..|..#..|..#..",
    "}": ".#...|..#..|..#..|...#.|..#..|..#..|.#...",
    "~": ".....|.....|.#...|#.#.#|...#.|.....|.....",
}
_UNKNOWN = "#####|#...#|#...#|#...#|#...#|#...#|#####"


def _glyph_bits(pattern: str) -> np.ndarray:
    return np.array([[ch == "#" for ch in row] for row in pattern.split("|")], dtype=bool)


_BITMAPS = {ch: _glyph_bits(p) for ch, p in _GLYPHS.items()}
_UNKNOWN_BITS = _glyph_bits(_UNKNOWN)


def text_mask(text: str, scale: int = 1) -> np.ndarray:
    """Boolean pixels of `text` in the 5×7 font, (7·scale, 6·len·scale)."""
    if not text:
        return np.zeros((FONT_HEIGHT * scale, 0), bool)
    cells = []
    for ch in text:
        bits = _BITMAPS.get(ch, _UNKNOWN_BITS)
        cells.append(np.pad(bits, ((0, 0), (0, FONT_ADVANCE - FONT_WIDTH))))
    mask = np.concatenate(cells, axis=1)
    return np.kron(mask, np.ones((scale, scale), bool)) if scale > 1 else mask


def draw_text(img: np.ndarray, x: int, y: int, text: str, color, scale: int = 1) -> None:
    """Draw `text` with its top-left corner at (x, y), clipped to the image."""
    mask = text_mask(text, scale)
    h, w = mask.shape
    H, W = img.shape[:2]
    x0, y0 = max(x, 0), max(y, 0)
    x1, y1 = min(x + w, W), min(y + h, H)
    if x1 <= x0 or y1 <= y0:
        return
    sub = mask[y0 - y:y1 - y, x0 - x:x1 - x]
    region = img[y0:y1, x0:x1]
    region[sub] = color
