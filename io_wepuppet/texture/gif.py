"""Animated GIF frames (a `.tex` whose mip is a whole GIF file, FreeImage format 25): docs/wallpaper_engine.md §5.1.

Layout (the GIF89a specification, w3.org/Graphics/GIF/spec-gif89a.txt), little-endian:

    "GIF87a" | "GIF89a"; u16 width, height; u8 flags (0x80 global colour table, size 2^(flags&7 + 1)); u8 background;
    u8 aspect; [global colour table: RGB × size]
    blocks: 0x21 extension (u8 label, sub-blocks: u8 size + bytes, until size 0); label 0xF9 graphic control:
            u8 flags (disposal (flags >> 2) & 7, transparent flag & 1), u16 delay in 1/100 s, u8 transparent index
            0x2C image: u16 left, top, width, height; u8 flags (0x80 local colour table, 0x40 interlaced, size
            & 7); [local colour table]; u8 LZW minimum code size; sub-blocks of LZW codes, least significant bit
            first
            0x3B trailer

Frames are composed on a canvas of the screen size that starts transparent (as browsers show GIFs): disposal
2 clears the frame's rectangle to transparent afterwards, 3 restores what was under it, 0 and 1 leave it. A
delay of 0 is shown for 0.1 s, as browsers do.
"""
from __future__ import annotations

import numpy as np

from ...core.binary import Reader
from ...core.errors import FormatError

ZERO_DELAY = 0.1  # seconds a frame of delay 0 is shown
MAX_CODE_BITS = 12
INTERLACE = ((0, 8), (4, 8), (2, 4), (1, 2))  # first row and step of the four passes
MAX_PIXELS = 1 << 26  # screen × frames, and any one image: a bigger animation is refused before it is decoded


def sniff(head: bytes) -> bool:
    return head[:6] in (b"GIF87a", b"GIF89a")


def _sub_blocks(r: Reader, what: str) -> bytes:
    parts = []
    while True:
        n = r.u8(f"{what} block size")
        if n == 0:
            return b"".join(parts)
        parts.append(r.bytes(n, what))


def lzw_decode(data: bytes, min_size: int, count: int, at: int = 0) -> bytes:
    """The first `count` colour indices of an image's LZW code stream (missing ones as index 0, as decoders
    keep a short image)."""
    if not 1 <= min_size <= 8:  # codes below 2^min_size are colour indices, so at most 8 bits
        raise FormatError(f"LZW minimum code size {min_size} outside 1..8", at, "LZW code size")
    clear, end = 1 << min_size, (1 << min_size) + 1
    base = [bytes([i]) for i in range(clear)] + [b"", b""]
    table = list(base)
    size = min_size + 1
    out = bytearray()
    prev = b""
    buf = nbits = i = 0
    n = len(data)
    while len(out) < count:
        while nbits < size and i < n:
            buf |= data[i] << nbits
            nbits += 8
            i += 1
        if nbits < size:
            break
        code = buf & ((1 << size) - 1)
        buf >>= size
        nbits -= size
        if code == clear:
            table, size, prev = list(base), min_size + 1, b""
            continue
        if code == end:
            break
        if code < len(table) and code > end or code < clear:
            entry = table[code]
            grow = prev + entry[:1] if prev else None
        elif code == len(table) and prev:
            entry = grow = prev + prev[:1]
        else:
            raise FormatError(f"LZW code {code} is not in the table of {len(table)}", at, "LZW data")
        if grow is not None and len(table) < 1 << MAX_CODE_BITS:  # a full table waits for a clear code
            table.append(grow)
            if len(table) == 1 << size and size < MAX_CODE_BITS:
                size += 1
        out += entry
        prev = entry
    out = out[:count]
    return bytes(out) + bytes(count - len(out))


def _palette(r: Reader, flags: int, what: str) -> np.ndarray:
    n = 2 << (flags & 7)
    rgb = np.frombuffer(r.bytes(3 * n, what), np.uint8).reshape(n, 3)
    pal = np.full((256, 4), 255, np.uint8)
    pal[:n, :3] = rgb
    pal[n:, :3] = 0
    return pal


def _image(r: Reader, canvas: np.ndarray, pal: np.ndarray | None, control: dict) -> tuple[np.ndarray, tuple]:
    """One image block (after its 0x2C) drawn onto a copy of `canvas`: that copy and the frame's rectangle."""
    at = r.pos
    x, y, w, h = (r.u16(f"image {k}") for k in ("left", "top", "width", "height"))
    if w * h > MAX_PIXELS:  # before the index buffer is sized from it
        raise FormatError(f"image of {w}×{h} pixels, above {MAX_PIXELS}", at, "image size")
    flags = r.u8("image flags")
    if flags & 0x80:
        pal = _palette(r, flags, "local colour table")
    if pal is None:
        raise FormatError("image without a colour table (no global one either)", at, "colour table")
    min_size = r.u8("LZW minimum code size")
    idx = np.frombuffer(lzw_decode(_sub_blocks(r, "image data"), min_size, w * h, r.pos), np.uint8)
    idx = idx.reshape(h, w)
    if flags & 0x40:
        rows = [k for start, step in INTERLACE for k in range(start, h, step)]
        ordered = np.empty_like(idx)
        ordered[rows] = idx
        idx = ordered
    out = canvas.copy()
    ch, cw = canvas.shape[:2]
    x1, y1 = min(x + w, cw), min(y + h, ch)
    if x < x1 and y < y1:  # only the part on the screen is coloured: an image may reach far past it
        seen = idx[:y1 - y, :x1 - x]
        keep = seen != control["transparent"] if control.get("transparent") is not None else np.ones_like(seen, bool)
        out[y:y1, x:x1][keep] = pal[seen][keep]
    return out, (x, y, x1, y1)


def frames(data: bytes) -> list[tuple[float, np.ndarray]]:
    """The animation's frames in order: (seconds shown, (h, w, 4) uint8 RGBA of the whole canvas)."""
    r = Reader(data)
    if not sniff(data):
        raise FormatError(f"expected 'GIF87a' or 'GIF89a', found {bytes(data[:6])!r}", 0, "GIF signature")
    r.bytes(6, "signature")
    w, h = r.u16("screen width"), r.u16("screen height")
    flags = r.u8("screen flags")
    r.u8("background")
    r.u8("aspect")
    pal = _palette(r, flags, "global colour table") if flags & 0x80 else None
    if w * h > MAX_PIXELS:
        raise FormatError(f"screen of {w}×{h} pixels, above {MAX_PIXELS}", 6, "screen size")
    canvas = np.zeros((h, w, 4), np.uint8)
    control: dict = {}
    out: list[tuple[float, np.ndarray]] = []
    while True:
        at = r.pos
        kind = r.u8("block")
        if kind == 0x3B:
            break
        if kind == 0x21:
            label = r.u8("extension label")
            body = _sub_blocks(r, "extension")
            if label == 0xF9 and len(body) >= 4:
                transparent = body[3] if body[0] & 1 else None
                control = {"disposal": body[0] >> 2 & 7, "delay": body[1] | body[2] << 8, "transparent": transparent}
            continue
        if kind != 0x2C:
            raise FormatError(f"block 0x{kind:02x} is not an image, an extension or the trailer", at, "block")
        if (len(out) + 1) * max(w * h, 1) > MAX_PIXELS:
            raise FormatError(f"more than {MAX_PIXELS} pixels of frames", at, "image")
        shown, (x0, y0, x1, y1) = _image(r, canvas, pal, control)
        delay = control.get("delay", 0)
        out.append((delay / 100 if delay else ZERO_DELAY, shown))
        disposal = control.get("disposal", 0)
        if disposal == 2:
            canvas = shown.copy()
            canvas[y0:y1, x0:x1] = 0
        elif disposal != 3:
            canvas = shown
        control = {}
    if not out:
        raise FormatError("GIF without an image", r.pos, "image")
    return out
