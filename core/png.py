"""A small PNG encoder (8-bit RGBA or RGB, no interlace) with numpy and zlib, for exported textures."""
from __future__ import annotations

import struct
import zlib

import numpy as np


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(pixels: np.ndarray, level: int = 6) -> bytes:
    """`pixels`: (height, width, 3 or 4) uint8, first row at the top."""
    px = np.ascontiguousarray(pixels, dtype=np.uint8)
    if px.ndim != 3 or px.shape[2] not in (3, 4):
        raise ValueError(f"expected (h, w, 3|4) pixels, got {px.shape}")
    h, w, c = px.shape
    raw = np.concatenate([np.zeros((h, 1), np.uint8), px.reshape(h, w * c)], axis=1)  # filter type 0 per row
    header = struct.pack(">IIBBBBB", w, h, 8, 6 if c == 4 else 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw.tobytes(), level))
            + _chunk(b"IEND", b""))
