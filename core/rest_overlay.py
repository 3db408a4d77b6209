"""The numbers and colours of the Rest Position overlay (docs/rest_compare.md §1): how far each vertex of one
model lies from the other, the colour band of that distance, which bones `compare --rest` found moved or
turned, and the legend and findings strip of the `render --compare` picture.

Distances are in the space both models were gathered in (world, Rest Position), against A's bounding-box
diagonal as `core.compare` measures it. Two models whose pooled vertex lists are as long as each other and
agree in order (at least half the vertices within the limit of their namesake) are compared vertex by vertex
("same vertex order": a rest mesh deformed in place shows each vertex's own displacement); otherwise every
vertex takes the distance to the nearest vertex of the other model ("nearest vertex"), as `compare` does.

Pure numpy; no Blender.
"""
from __future__ import annotations

import numpy as np

from .bitmap_font import FONT_HEIGHT, draw_text, fit_text
from .compare import Comparison, match_distances

# Colour bands of distance / diagonal (sRGB 8 bit): within the limit, then one decade each above it.
SAME_COLOR = (200, 200, 200)
BAND_COLORS = ((70, 130, 255), (60, 200, 90), (250, 200, 40), (230, 50, 40))
MARKED_BONE_COLOR = (255, 0, 255)  # bones whose rest head or orientation differ, in the picture
MARKED_FIELDS = ("presence", "parent", "rest head", "rest orientation")

LEGEND_HEIGHT = 26
FINDING_LINE = FONT_HEIGHT + 5


def vertex_distances(pa: np.ndarray, pb: np.ndarray, limit: float, scale: float
                     ) -> tuple[np.ndarray, np.ndarray, str]:
    """(distance of each point of `pa` to B, of each point of `pb` to A, the mode: "same vertex order" or
    "nearest vertex"); `limit` is the position tolerance, `scale` the diagonal (see the module docstring)."""
    pa = np.asarray(pa, np.float64).reshape(-1, 3)
    pb = np.asarray(pb, np.float64).reshape(-1, 3)
    if len(pa) == len(pb) and len(pa):
        in_order = np.linalg.norm(pa - pb, axis=1)
        if np.count_nonzero(in_order <= limit) * 2 >= len(pa):
            return in_order, in_order.copy(), "same vertex order"
    if not len(pa) or not len(pb):
        return np.full(len(pa), np.inf), np.full(len(pb), np.inf), "nearest vertex"
    # the search grid's first cell: never finer than 1e-4 of the diagonal (a grid of cell `limit` at 1e-6 of it
    # has more cells than an int64 key holds); the distances stay exact, the grid only grows from there
    radius = max(limit, scale * 1e-4)
    return (match_distances(pa, pb, radius, scale), match_distances(pb, pa, radius, scale), "nearest vertex")


def bands(distances: np.ndarray, limit: float) -> np.ndarray:
    """Band per distance: 0 within `limit`, k (1..4) for (limit·10^(k−1), limit·10^k], 4 beyond; NaN and inf
    in the last band."""
    d = np.asarray(distances, np.float64)
    out = np.zeros(len(d), np.int32)
    over = ~(d <= limit)
    finite = over & np.isfinite(d) & (limit > 0)
    out[over] = len(BAND_COLORS)
    if finite.any():
        k = np.ceil(np.log10(d[finite] / limit))
        out[finite] = np.clip(k, 1, len(BAND_COLORS)).astype(np.int32)
    return out


def band_colors_srgb() -> np.ndarray:
    """(5, 3) uint8: the colour of band 0 (within the limit) to 4."""
    return np.array([SAME_COLOR, *BAND_COLORS], np.uint8)


def srgb_to_linear(c: np.ndarray) -> np.ndarray:
    """8-bit sRGB → linear floats (Blender's FLOAT_COLOR attributes hold linear values)."""
    x = np.asarray(c, np.float64) / 255.0
    return np.where(x <= 0.04045, x / 12.92, ((x + 0.055) / 1.055) ** 2.4)


def legend(limit_fraction: float, diagonal: float) -> list[tuple[tuple[int, int, int], str]]:
    """(colour, text) per band: the distance range as a fraction of the diagonal and in scene units."""
    out = [(SAME_COLOR, f"<= {limit_fraction:.0e} of diag ({limit_fraction * diagonal:.3g})")]
    for k, color in enumerate(BAND_COLORS):
        lo = limit_fraction * 10 ** k
        if k == len(BAND_COLORS) - 1:
            out.append((color, f"> {lo:.0e} ({lo * diagonal:.3g})"))
        else:
            out.append((color, f"{lo:.0e} - {lo * 10:.0e} ({lo * 10 * diagonal:.3g})"))
    return out


def marked_bones(result: Comparison) -> set[str]:
    """Names of the bones `compare --rest` reports present in one model only, re-parented, moved or turned."""
    out = set()
    for d in result.differences:
        if d.part == "skeleton" and d.element.startswith("bone ") and d.field in MARKED_FIELDS:
            out.add(d.element[len("bone "):])
    return out


def largest(distances: np.ndarray, names: list[str], count: int = 3) -> list[tuple[str, float]]:
    """The `count` largest finite distances with the name of their element, largest first, one per name."""
    d = np.where(np.isfinite(distances), distances, -1.0)
    out: list[tuple[str, float]] = []
    for i in np.argsort(-d, kind="stable"):
        if d[i] <= 0 or len(out) >= count:
            break
        if all(n != names[i] for n, _ in out):
            out.append((names[i], float(d[i])))
    return out


def footer(width: int, entries: list[tuple[tuple[int, int, int], str]], lines: list[str], background,
           text_color) -> np.ndarray:
    """The picture's strip below the panels: the colour legend in one row, then one line per finding."""
    height = LEGEND_HEIGHT + FINDING_LINE * len(lines) + 6
    img = np.empty((height, width, 3), np.uint8)
    img[:] = background
    x = 8
    step = max(1, (width - 16) // max(len(entries), 1))
    for color, text in entries:
        img[8:8 + FONT_HEIGHT + 2, x:x + 14] = color
        draw_text(img, x + 18, 9, fit_text(text, step - 24, 1), text_color, 1)
        x += step
    for i, line in enumerate(lines):
        draw_text(img, 8, LEGEND_HEIGHT + i * FINDING_LINE, fit_text(line, width - 16, 1), text_color, 1)
    return img


def _snap(px: np.ndarray, colors) -> np.ndarray:
    colors = np.asarray(colors, np.float64)
    px = px[:, :3].astype(np.float64)
    return colors[np.argmin(((px[:, None, :] - colors[None]) ** 2).sum(axis=2), axis=1)].astype(np.uint8)


def composite_colors(mesh_pass: np.ndarray, bone_pass: np.ndarray, palette, background) -> np.ndarray:
    """The two RGBA passes (H, W, 4) uint8 of the compare picture as one RGB grid of exact classes: mesh pixels
    snapped to the nearest band colour (Workbench dithers, and a face between two bands blends them), bone
    pixels over them snapped to the nearest colour of `palette` (K, 3)."""
    h, w = mesh_pass.shape[:2]
    out = np.empty((h, w, 3), np.uint8)
    out[:] = background
    mesh = mesh_pass[..., 3] >= 128
    if mesh.any():
        out[mesh] = _snap(mesh_pass[mesh], band_colors_srgb())
    bone = bone_pass[..., 3] >= 128
    if bone.any():
        out[bone] = _snap(bone_pass[bone], palette)
    return out
