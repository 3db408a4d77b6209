"""Where things sit on a contact sheet of `skinbridge render` (with or without `--compare`), worked out from the
documented layout (`render.HEADER_HEIGHT`, `LABEL_HEIGHT`, `panel_size`) and checked on the PNG's pixels. Needs
Blender (app/render.py imports bpy)."""
from __future__ import annotations

import numpy as np

from skinbridge.app import render


def panel_boxes(n_views: int, n_rows: int) -> list[tuple[int, int, int, int]]:
    pw, ph = render.panel_size(n_views, n_rows)
    boxes = []
    for r in range(n_rows):
        top = render.HEADER_HEIGHT + r * (render.LABEL_HEIGHT + ph) + render.LABEL_HEIGHT
        for c in range(n_views):
            boxes.append((c * pw + (1 if c else 0), top, (c + 1) * pw, top + ph))
    return boxes


def header_has_text(px: np.ndarray, x: int, y: int, text: str, scale: int) -> bool:
    mask = render.text_mask(text, scale)
    region = px[y:y + mask.shape[0], x:x + mask.shape[1], :3]
    is_text = (region == np.array(render.TEXT_COLOR)).all(axis=2)
    return bool((is_text == mask).all())
