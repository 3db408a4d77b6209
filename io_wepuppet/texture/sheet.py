"""Sprite sheets (`.tex` with flag 4, which RePKG names IsGif: Wallpaper Engine turns an imported GIF into
one) as a timed sequence of frames, and back: docs/wallpaper_engine.md §5.1.

`schedule` spreads the sheet's frame times over a scene's frame rate (each sheet frame at least one scene
frame); `rebuild` puts new frame pixels into the sheet's own layout, keeping its timings, rectangles, sizes,
flags, mip count and LZ4 use; `from_frames` lays frames of one size out as a new sheet (an edited GIF: we
write no GIF, and a sheet is what Wallpaper Engine makes of one).
"""
from __future__ import annotations

import copy
import math

import numpy as np

from ...core.errors import ExportError, FormatError
from ...core.png import encode_png
from . import tex


def schedule(times: list[float], fps: float, limit: int | None = None) -> list[list[int]]:
    """For each sheet frame, the scene frames (counted from 0 at the cycle's start) that show it at `fps`.
    A frame starts at the scene frame nearest to its start time; a frame shorter than one scene frame still
    gets one, pushing the later ones on, since a frame without a scene frame could be neither seen nor
    edited. A cycle longer than `limit` scene frames is a FormatError, raised before its lists are made (a
    frame time of 1e9 s would be billions of numbers); so is a time that is not a finite number."""
    if not fps > 0:
        raise ValueError(f"frame rate {fps} is not positive")
    out: list[list[int]] = []
    start = 0.0
    at = 0
    for k, time in enumerate(times):
        time = float(time)
        if not math.isfinite(time):
            raise FormatError(f"sprite frame {k} is shown for {time} seconds", None, f"frame {k} time")
        end = start + max(time, 0.0)
        stop = max(at + 1, round(end * fps)) if math.isfinite(end * fps) else math.inf
        if limit is not None and stop > limit:
            raise FormatError(f"the sheet's cycle reaches {end:g} s at frame {k}: more than {limit} scene frames at "
                              f"{fps:g} fps", None, f"frame {k} time")
        out.append(list(range(at, stop)))
        at, start = stop, end
    return out


def rebuild(t: tex.Texture, frames: list[np.ndarray], decode=None) -> tuple[tex.Texture, list[str]]:
    """The sheet `t` with frame k's rectangle holding `frames[k]` ((h, w, 4) uint8, the rectangle's size);
    pixels outside every rectangle stay as decoded. Stored in `t`'s format where we encode it, else RGBA8888
    with a warning. A sheet of PNG mips (`decode`: as `tex.sprite_frames`) is written with PNG mips again."""
    given, needed = len(frames), len(t.frames)
    if given != needed:
        raise ExportError(f"{given} frames for a sheet of {needed}")
    decoded = tex.top_mips(t, range(len(t.images)), decode)  # new arrays, pasted into below
    images = [decoded[i] for i in range(len(t.images))]
    for k, (f, px) in enumerate(zip(t.frames, frames)):
        x0, x1, y0, y1 = tex.frame_box(t, k, images[f.image].shape[:2])
        w, h = x1 - x0, y1 - y0
        if px.shape != (h, w, 4):
            raise ExportError(f"sprite frame {k} is of shape {px.shape}, its rectangle {w}×{h}")
        images[f.image][y0:y1, x0:x1] = px
    warnings = []
    out = copy.copy(t)
    out.warnings = []
    if t.image_format == tex.FIF_PNG:
        out.images = [_png_mips(t, i, px) for i, px in enumerate(images)]
        return out, warnings
    if t.image_format != -1:
        warnings.append(f"sprite sheet of FreeImageFormat {t.image_format} files, which has no encoder here: "
                        "written as RGBA8888")
        out.image_format = -1
    fmt = t.format if t.image_format == -1 else tex.FORMAT_RGBA8888
    if fmt not in tex.WRITTEN_FORMATS:
        warnings.append(f"sprite sheet in {tex.FORMAT_NAMES[fmt]}, which has no encoder here: written as RGBA8888")
        fmt = tex.FORMAT_RGBA8888
    out.format = fmt
    out.images = [_mips(t, i, px, fmt) for i, px in enumerate(images)]
    return out, warnings


def _png_mips(t: tex.Texture, image: int, px: np.ndarray) -> list[tex.Mip]:
    """Image `image`'s chain of PNG files for its new top level `px`, as many levels as stored, each LZ4-packed
    where the stored one was."""
    out = []
    for old, level in zip(t.images[image], tex.make_mips(px, len(t.images[image]))):
        data = encode_png(level)
        packed = tex.lz4_compress(data) if old.lz4 else data
        out.append(tex.Mip(level.shape[1], level.shape[0], packed, old.lz4, len(data)))
    return out


def _mips(t: tex.Texture, image: int, px: np.ndarray, fmt: int) -> list[tex.Mip]:
    """Image `image`'s mip chain for its new top level `px`: a level whose bytes did not change is the stored
    mip itself (so its LZ4 block stays Wallpaper Engine's own), a changed one LZ4-packed where the stored one
    was (Wallpaper Engine leaves some small levels plain)."""
    kept = t.images[image]
    new = tex.from_rgba(px, levels=len(kept), fmt=fmt).images[0]
    out = []
    for j, (m, old) in enumerate(zip(new, kept)):
        if fmt == t.format and (old.width, old.height) == (m.width, m.height) and tex.mip_bytes(t, image, j) == m.data:
            out.append(old)
        elif old.lz4:
            out.append(tex.Mip(m.width, m.height, tex.lz4_compress(m.data), 1, len(m.data)))
        else:
            out.append(m)
    return out


def from_frames(frames: list[tuple[float, np.ndarray]], flags: int = 0) -> tex.Texture:
    """A TEXS0003 sheet (RGBA8888, LZ4, mips as Wallpaper Engine makes them) of (seconds, (h, w, 4) uint8)
    frames of one size, in rows of ceil(√n) frames, left to right and top to bottom."""
    if not frames:
        raise ExportError("no frames for a sprite sheet")
    fh, fw = frames[0][1].shape[:2]
    if any(px.shape != (fh, fw, 4) for _, px in frames):
        raise ExportError("sprite sheet frames of different sizes")
    cols = math.ceil(math.sqrt(len(frames)))
    rows = math.ceil(len(frames) / cols)
    page = np.zeros((rows * fh, cols * fw, 4), np.uint8)
    cells = []
    for k, (time, px) in enumerate(frames):
        x, y = fw * (k % cols), fh * (k // cols)
        page[y:y + fh, x:x + fw] = px
        cells.append(tex.Frame(0, np.float32(time), (float(x), float(y), float(fw), 0.0, 0.0, float(fh))))
    t = tex.from_rgba(page, lz4=True, flags=flags | tex.FLAG_SPRITE)
    t.sprite_tag, t.sprite_size, t.frames = "TEXS0003", (fw, fh), cells
    return t
