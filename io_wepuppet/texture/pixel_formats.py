"""The `.tex` pixel formats beyond RGBA8888, DXT1/3/5, RG88 and R8: their stored values and their RGBA8 view.

Numbers as Almamu/linux-wallpaperengine names them (`src/WallpaperEngine/Assets/ITexture.h`, TextureFormat):
1 RGB888, 2 RGB565, 10 RG1616f, 11 R16f, 12 BC7, 13 RGBa1010102, 14 RGBA16161616f, 15 RGB161616f. No public
reader decodes them on the CPU (they are handed to the GPU as they are), so each layout is the plain one its
name and the matching GPU format give, all little-endian: RGB888 bytes R, G, B; RGB565 a u16 with red in the top
five bits (as in a DXT colour); RGBa1010102 a u32 with red in bits 0–9, green 10–19, blue 20–29, alpha 30–31;
the float formats IEEE half floats per channel in name order; BC7 see bc7.py.

`decode_values` gives the stored channels (floats as stored, integer channels divided by their maximum);
`to_rgba8` shows them as RGBA8 the way the 8-bit formats are shown: one channel as grey, two as grey + alpha (as
R8 and RG88), three with alpha 255. `encode_values` is the exact inverse for values on the format's grid.
"""
from __future__ import annotations

import numpy as np

from ...core.errors import ExportError, FormatError

FORMAT_RGB888, FORMAT_RGB565 = 1, 2
FORMAT_RG1616F, FORMAT_R16F, FORMAT_BC7, FORMAT_RGBA1010102, FORMAT_RGBA16161616F, FORMAT_RGB161616F = range(10, 16)
NAMES = {1: "RGB888", 2: "RGB565", 10: "RG1616f", 11: "R16f", 12: "BC7", 13: "RGBa1010102",
         14: "RGBA16161616f", 15: "RGB161616f"}
HALF_CHANNELS = {FORMAT_RG1616F: 2, FORMAT_R16F: 1, FORMAT_RGBA16161616F: 4, FORMAT_RGB161616F: 3}
CHANNELS = {FORMAT_RGB888: 3, FORMAT_RGB565: 3, FORMAT_RGBA1010102: 4, **HALF_CHANNELS}
BYTES_PER_PIXEL = {FORMAT_RGB888: 3, FORMAT_RGB565: 2, FORMAT_RGBA1010102: 4,
                   **{f: 2 * c for f, c in HALF_CHANNELS.items()}}
ENCODED = tuple(BYTES_PER_PIXEL)  # every format here but BC7
_BITS_1010102 = ((0, 10), (10, 10), (20, 10), (30, 2))  # (shift, width) of R, G, B, A
_BITS_565 = ((11, 5), (5, 6), (0, 5))


def _raw(data: bytes, width: int, height: int, fmt: int) -> np.ndarray:
    need = width * height * BYTES_PER_PIXEL[fmt]
    if len(data) < need:
        raise FormatError(f"{len(data)} bytes of {NAMES[fmt]} data, a {width}×{height} image needs {need}", None,
                          "mip data")
    return np.frombuffer(data, np.uint8, need)


def decode_values(data: bytes, width: int, height: int, fmt: int) -> np.ndarray:
    """(height, width, channels) float32 of the stored values, rows top first; not for BC7 (a block format)."""
    raw = _raw(data, width, height, fmt)
    if fmt in HALF_CHANNELS:
        return raw.view("<f2").reshape(height, width, HALF_CHANNELS[fmt]).astype(np.float32)
    if fmt == FORMAT_RGB888:
        return raw.reshape(height, width, 3).astype(np.float32) / np.float32(255)
    packed = raw.view("<u2" if fmt == FORMAT_RGB565 else "<u4").astype(np.int64).reshape(height, width)
    fields = _BITS_565 if fmt == FORMAT_RGB565 else _BITS_1010102
    return np.stack([((packed >> s) & ((1 << n) - 1)) / np.float32((1 << n) - 1) for s, n in fields],
                    axis=-1).astype(np.float32)


def encode_values(values: np.ndarray, fmt: int) -> bytes:
    """The bytes of (height, width, channels) values: half floats as float16 rounds them, integer channels
    as round(value · maximum) clipped to the channel's range."""
    if fmt not in ENCODED:
        raise ExportError(f"no encoder for {NAMES.get(fmt, fmt)} textures")
    v = np.asarray(values, np.float32)
    if v.ndim != 3 or v.shape[2] != CHANNELS[fmt]:
        raise ExportError(f"{NAMES[fmt]} holds {CHANNELS[fmt]} channels, got values of shape {v.shape}")
    if fmt in HALF_CHANNELS:
        return np.ascontiguousarray(v.astype("<f2")).tobytes()
    if fmt == FORMAT_RGB888:
        return np.clip(np.rint(v * 255), 0, 255).astype(np.uint8).tobytes()
    fields = _BITS_565 if fmt == FORMAT_RGB565 else _BITS_1010102
    packed = np.zeros(v.shape[:2], np.int64)
    for c, (s, n) in enumerate(fields):
        top = (1 << n) - 1
        packed |= np.clip(np.rint(v[..., c] * top), 0, top).astype(np.int64) << s
    return packed.astype("<u2" if fmt == FORMAT_RGB565 else "<u4").tobytes()


def to_rgba8(values: np.ndarray) -> np.ndarray:
    """(h, w, channels) values in 0..1 → (h, w, 4) uint8 RGBA (clipped, rounded), shown as the 8-bit formats
    are: one channel grey, two grey + alpha, three opaque."""
    q = np.clip(np.rint(np.nan_to_num(values) * 255), 0, 255).astype(np.uint8)
    h, w, c = q.shape
    out = np.empty((h, w, 4), np.uint8)
    if c <= 2:
        out[..., 0] = out[..., 1] = out[..., 2] = q[..., 0]
        out[..., 3] = q[..., 1] if c == 2 else 255
    else:
        out[..., :3] = q[..., :3]
        out[..., 3] = q[..., 3] if c == 4 else 255
    return out


def from_rgba8(level: np.ndarray, fmt: int) -> np.ndarray:
    """The values `to_rgba8` shows as these RGBA8 pixels (the inverse wherever the format holds them)."""
    v = level.astype(np.float32) / np.float32(255)
    c = CHANNELS[fmt]
    return v[..., [0]] if c == 1 else v[..., [0, 3]] if c == 2 else v[..., :c]
