"""PNG pixels for the tests, decoded by Pillow (an independent reader, pinned in tools/requirements*.txt): gray
(h, w, 1), gray+alpha (h, w, 2), RGB (h, w, 3), RGBA (h, w, 4); a palette image as RGB, or RGBA when it has a
tRNS chunk."""
from __future__ import annotations

import io

import numpy as np
from PIL import Image


def decode_png(data: bytes) -> np.ndarray:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    with Image.open(io.BytesIO(data)) as im:
        assert im.format == "PNG", im.format
        if im.mode == "P":
            im = im.convert("RGBA" if "transparency" in im.info else "RGB")
        assert im.mode in ("L", "LA", "RGB", "RGBA"), im.mode  # 8 bits per channel, as our writers write
        px = np.asarray(im, np.uint8)
    return px.reshape(px.shape[0], px.shape[1], -1)
