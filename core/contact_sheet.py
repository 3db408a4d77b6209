"""The contact sheet's geometry and pixels, without Blender: the sheet layout (a header strip, then one row per
frame of label strip + panels, one panel per view), the view rotations and the one world-to-pixel scale of all
panels, the bone overlay as prisms, the compositing of the two Workbench passes into exact colour classes, and
the header text. `app/render.py` captures the scene and renders the passes; everything here works on numpy
arrays, so it is tested without bpy (tests/app/test_contact_sheet.py).

Pixel classes of a finished sheet: background `BACKGROUND`, mesh pixels grey (r = g = b within `MESH_GREY`),
bone pixels one of `PALETTE`, text (`TEXT_COLOR`) only on `HEADER_COLOR` in the header and label strips.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .bitmap_font import FONT_ADVANCE, draw_text, fit_text
from .fileio import write_atomic
from .png import encode_png

VIEWS = ("front", "side", "top")
# Rows: the world axes seen as (screen right, screen up, toward the viewer) by a camera looking down -Z.
# front: Blender's Front view (from -Y); side: its Right view (from +X); top: from +Z.
VIEW_ROTATION = {
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

# the legend: three sides, a weighted and a pale swatch each, then two lines that explain the swatches
_LEGEND_ENTRY = FONT_ADVANCE * 6 + 28
_LEGEND_WIDTH = 3 * _LEGEND_ENTRY + FONT_ADVANCE * 16


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


def write_sheet(sheet: Sheet, path: str) -> None:
    write_atomic(path, encode_png(sheet.pixels))


# ---------------------------------------------------------------------------------------------------
# bones: side and overlay geometry

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


TRIANGLES_PER_BONE = 20  # 12 of the prism, 8 of the octahedron: `bone_prisms` writes them bone by bone


def bone_prisms(heads: np.ndarray, ends: np.ndarray, half: float, joint: float) -> tuple[np.ndarray, np.ndarray]:
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
# layout: frames, panel sizes, scale, colours for Workbench

def parse_frames(text: str) -> list[int]:
    """'a:b:step' (b included) or 'a:b' or a comma list '1,5,9' → frame numbers."""
    text = text.strip()
    expected = f"--frames {text[:40]!r}: expected A:B or A:B:STEP (integers, STEP > 0) or a list like 1,5,9"
    try:
        if ":" in text:
            parts = [int(p) for p in text.split(":")]
        else:
            frames = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise ValueError(expected) from None
    if ":" in text:
        if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] <= 0):
            raise ValueError(expected)
        a, b = parts[0], parts[1]
        step = parts[2] if len(parts) == 3 else 1
        frames = list(range(a, b + 1, step))
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


def sheet_size(n_views: int, n_rows: int, panel: tuple[int, int]) -> tuple[int, int]:
    """(width, height) of a sheet of `n_rows` rows of `n_views` panels of size `panel`."""
    pw, ph = panel
    return n_views * pw, HEADER_HEIGHT + n_rows * (LABEL_HEIGHT + ph)


def panel_origin(row: int, col: int, panel: tuple[int, int]) -> tuple[int, int]:
    """(x, y) of the top-left pixel of a panel's rendered area; its label strip is the LABEL_HEIGHT rows above."""
    pw, ph = panel
    return col * pw, HEADER_HEIGHT + row * (LABEL_HEIGHT + ph) + LABEL_HEIGHT


def view_scale(points: np.ndarray, views, panel: tuple[int, int]) -> tuple[float, dict[str, np.ndarray]]:
    """World units per pixel, one for every panel so that views compare, fitting `points` (N, 3) inside each
    panel less MARGIN; and each view's centre in its turned frame. Non-finite points are left out."""
    pts = points[np.isfinite(points).all(axis=1)] if len(points) else points
    if not len(pts):
        pts = np.zeros((1, 3))
    scale = 0.0
    centres = {}
    pw, ph = panel
    for v in views:
        q = pts @ VIEW_ROTATION[v].T
        lo, hi = q.min(axis=0), q.max(axis=0)
        centres[v] = (lo + hi) / 2
        ext = hi - lo
        scale = max(scale, ext[0] / (pw * (1 - 2 * MARGIN)), ext[1] / (ph * (1 - 2 * MARGIN)))
    if scale <= 0:
        scale = 1.0 / min(pw, ph)
    return scale, centres


def translation(t) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = t
    return m


def srgb_to_linear(c) -> tuple[float, float, float, float]:
    """An 8-bit sRGB colour as the linear RGBA Blender stores in a material, so the Standard view transform
    renders it back to the same 8-bit values."""
    def one(x):
        x /= 255.0
        return x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4

    return (one(c[0]), one(c[1]), one(c[2]), 1.0)


# ---------------------------------------------------------------------------------------------------
# compositing

def composite(mesh_pass: np.ndarray, bone_pass: np.ndarray) -> np.ndarray:
    """The two RGBA passes (H, W, 4) uint8 as one RGB grid: background, the mesh as grey by luminance, the
    bones over it snapped to the nearest palette colour (anti-aliasing and colour management leave near
    values; the sheet's pixels must be exact classes)."""
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


def sheet_info(counts: dict, frames: list[int] | None, action: str | None) -> str:
    """The header's second line: what is drawn (rest, frames, action) and the counts."""
    when = "rest position" if frames is None else (
        f"frame {frames[0]}" if len(frames) == 1 else f"frames {frames[0]}..{frames[-1]} ({len(frames)})")
    if frames is not None and action:
        when += f", action {action}"
    return (f"{when} | {counts['vertices']} vertices, {counts['triangles']} triangles, {counts['bones']} bones "
            f"({counts['weighted_bones']} weighted)")


def _draw_legend(img: np.ndarray, x: int) -> None:
    for side in ("left", "right", "centre"):
        for k, weighted in enumerate((True, False)):
            img[29 + 8 * k:35 + 8 * k, x:x + 10] = PALETTE[(side, weighted)]
        draw_text(img, x + 14, 32, side, TEXT_COLOR, 1)
        x += _LEGEND_ENTRY
    draw_text(img, x, 28, "top: weighted", TEXT_COLOR, 1)
    draw_text(img, x, 38, "pale: no weights", TEXT_COLOR, 1)


def compose_sheet(grid: np.ndarray, frames: list[int | None], views, panel: tuple[int, int], title: str,
                  info: str) -> tuple[np.ndarray, list[Panel]]:
    """The sheet around the composited `grid` (rows × views panels, no gaps): the header (title, info, and
    the colour legend where it fits), a label strip above every row of panels, a one-pixel separator between
    panels. `frames` has one entry per row (None: the rest position). Returns (pixels, panels)."""
    pw, ph = panel
    width, height = sheet_size(len(views), len(frames), panel)
    img = np.empty((height, width, 3), np.uint8)
    img[:] = HEADER_COLOR
    draw_text(img, 8, 6, fit_text(title, width - 16, 2), TEXT_COLOR, 2)
    x = width - _LEGEND_WIDTH
    legend = x > width // 2
    draw_text(img, 8, 28, fit_text(info, x - 16 if legend else width - 16, 1), TEXT_COLOR, 1)
    if legend:
        _draw_legend(img, x)
    panels = []
    for r, frame in enumerate(frames):
        for c, view in enumerate(views):
            x0, top = panel_origin(r, c, panel)
            label = view if frame is None else f"{view}  frame {frame}"
            draw_text(img, x0 + 6, top - LABEL_HEIGHT + 3, fit_text(label, pw - 12, 2), TEXT_COLOR, 2)
            img[top:top + ph, x0:x0 + pw] = grid[r * ph:(r + 1) * ph, c * pw:(c + 1) * pw]
            if c:  # a one-pixel separator between panels, in the header colour
                img[top:top + ph, x0] = HEADER_COLOR
            panels.append(Panel(view, frame, (x0 + (1 if c else 0), top, x0 + pw, top + ph)))
    return img, panels
