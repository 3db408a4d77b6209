"""Wallpaper Engine `.tex` codec (TEXV0005 / TEXI0001 / TEXB0001–0004 / TEXS000n) and pixel decoding.

Layout: docs/wallpaper_engine.md §5 (RePKG's texture reader, CaptSilver's TEXB0004 word).

    cstr "TEXV0005"; cstr "TEXI0001"; i32 format, flags, texture_w, texture_h, image_w, image_h; u32 unknown
    cstr "TEXB000n"; i32 image_count; [n ≥ 3: i32 FreeImageFormat]; [n = 4: i32 video flag]
    image × { i32 mip_count; mip × { i32 w, h; [n ≥ 2: i32 lz4, i32 decompressed_size]; i32 size; u8[size] } }
    flags & 4: cstr "TEXS000n"; i32 frame_count; [TEXS0003: i32 w, h]; frame × { i32 image; f32 time; 6 × i32|f32 }

Records keep every mip's bytes as stored (compressed ones compressed), so read → write is byte-identical.
Decoding is separate: `mip_pixels` LZ4-decompresses (our own block decoder) and then decodes DXT1/3/5 (palette values
rounded as Blender's own DDS loader rounds them, so a texture looks the same either way),
RGBA8888, RG88 (luminance + alpha), R8 (grey) and the formats of pixel_formats.py (BC7 in bc7.py) to RGBA8 rows,
top row first as stored. `sprite_frames` cuts a sprite sheet into its frames. Mips whose
FreeImageFormat is not −1 are whole image files (PNG, JPEG, ...): handed on as bytes, and a sheet of them is cut
from the pictures a caller decodes (Blender, blender_sheet.py).

`make_mips` builds the chain as Wallpaper Engine does (checked on the goose texture): each level is the floor
of the mean of the 2×2 blocks of the level above, an odd last row or column dropped; by default down to the
last level whose smaller side is at least 8 pixels (the goose texture: 150, 75, 37, 18, 9), or as many as asked.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...core.binary import Reader, Writer
from ...core.errors import ExportError, FormatError
from ...core.png import encode_png
from . import bc7, pixel_formats

MAGIC = b"TEXV"
FORMAT_RGBA8888, FORMAT_DXT5, FORMAT_DXT3, FORMAT_DXT1, FORMAT_RG88, FORMAT_R8 = 0, 4, 6, 7, 8, 9
FORMAT_NAMES = {0: "RGBA8888", 4: "DXT5", 6: "DXT3", 7: "DXT1", 8: "RG88", 9: "R8", **pixel_formats.NAMES}
FLAG_SPRITE = 4  # the one flag bit that changes the layout; the others (1, 2, 32) are kept as read
FLAG_VIDEO = 32
FIF_GIF = 25  # FreeImage's number for GIF: Blender reads no GIF, so such a mip is decoded by gif.py
FIF_PNG = 13  # FreeImage's number for PNG: a sheet of PNG mips is cut from Blender's reading of them
CONTAINERS = ("TEXB0001", "TEXB0002", "TEXB0003", "TEXB0004")
SPRITE_TAGS = ("TEXS0001", "TEXS0002", "TEXS0003")
LZ4_MAX_RATIO = 255  # one LZ4 input byte yields at most 255 output bytes (a run-length byte)
MIN_AUTO_MIP = 8  # make_mips stops above this side unless told a level count
MAX_SIDE = 1 << 15  # a mip side above this is not a texture: refused before anything is sized from it
DXT_CHUNK = 1 << 14  # blocks decoded per pass


@dataclass
class Mip:
    width: int
    height: int
    data: bytes  # as stored
    lz4: int = 0  # TEXB0002+: 1 when `data` is an LZ4 block
    decompressed_size: int = 0  # TEXB0002+


@dataclass
class Frame:
    image: int
    time: np.float32
    values: tuple  # x, y, xAxis.x, xAxis.y, yAxis.x, yAxis.y (ints in TEXS0001, float32 after)


@dataclass
class Texture:
    format: int = FORMAT_RGBA8888
    flags: int = 0
    texture_width: int = 0
    texture_height: int = 0
    image_width: int = 0
    image_height: int = 0
    unknown: int = 0
    container: str = "TEXB0003"
    image_format: int = -1  # TEXB0003+: FreeImageFormat, −1 = raw pixels
    video: int = 0  # TEXB0004
    images: list[list[Mip]] = field(default_factory=list)
    sprite_tag: str | None = None
    sprite_size: tuple[int, int] | None = None  # TEXS0003
    frames: list[Frame] = field(default_factory=list)
    tail: bytes = b""
    warnings: list[str] = field(default_factory=list)
    offsets: dict[str, int] = field(default_factory=dict)
    header_tags: tuple[str, str] = ("TEXV0005", "TEXI0001")

    @property
    def container_version(self) -> int:
        return int(self.container[4:])


def sniff(head: bytes) -> bool:
    return head[:4] == MAGIC


# ------------------------------------------------------------------------------------------------------------
# reading and writing

def read(data: bytes) -> Texture:
    r = Reader(data)
    if data[:4] != MAGIC:
        raise FormatError(f"expected 'TEXV', found {bytes(data[:4])!r}", 0, "magic")
    at = r.pos
    v = r.cstring("TEXV tag", "latin-1")
    if v != "TEXV0005":
        raise FormatError(f"expected TEXV0005, found {v!r}", at, "TEXV tag")
    at = r.pos
    i = r.cstring("TEXI tag", "latin-1")
    if i != "TEXI0001":
        raise FormatError(f"expected TEXI0001, found {i!r}", at, "TEXI tag")
    t = Texture()
    t.offsets["format"] = r.pos
    t.format = r.i32("format")
    if t.format not in FORMAT_NAMES:
        raise FormatError(f"texture format {t.format} is not one of {sorted(FORMAT_NAMES)}", r.pos - 4, "format")
    t.flags = r.i32("flags")
    t.texture_width, t.texture_height = r.i32("texture width"), r.i32("texture height")
    t.image_width, t.image_height = r.i32("image width"), r.i32("image height")
    t.unknown = r.u32("unknown")
    at = r.pos
    t.container = r.cstring("container tag", "latin-1")
    if t.container not in CONTAINERS:
        raise FormatError(f"container {t.container!r} is not one of {CONTAINERS}", at, "container tag")
    cv = t.container_version
    n_images = r.count("image count", 4, signed=True)
    if cv >= 3:
        t.image_format = r.i32("image format")
    if cv >= 4:
        t.video = r.i32("video flag")
    head = 8 + (8 if cv >= 2 else 0) + 4
    for k in range(n_images):
        t.offsets[f"image {k}"] = r.pos
        n_mips = r.count(f"image {k} mip count", head, signed=True)
        mips = []
        for j in range(n_mips):
            p = f"image {k} mip {j}"
            t.offsets[p] = r.pos
            w, h = r.i32(f"{p} width"), r.i32(f"{p} height")
            if not (0 <= w <= MAX_SIDE and 0 <= h <= MAX_SIDE):
                raise FormatError(f"size {w}×{h} outside 0..{MAX_SIDE}", t.offsets[p], f"{p} size")
            lz4 = size = 0
            if cv >= 2:
                lz4 = r.i32(f"{p} lz4 flag")
                size = r.i32(f"{p} decompressed size")
            n = r.count(f"{p} data size", 1, signed=True)
            t.offsets[f"{p} data"] = r.pos
            mips.append(Mip(w, h, r.bytes(n, f"{p} data"), lz4, size))
        t.images.append(mips)
    if t.flags & FLAG_SPRITE:
        at = r.pos
        tag = r.cstring("sprite tag", "latin-1")
        if tag not in SPRITE_TAGS:
            raise FormatError(f"sprite tag {tag!r} is not one of {SPRITE_TAGS}", at, "sprite tag")
        t.sprite_tag = tag
        n = r.count("frame count", 32, signed=True)
        if tag == "TEXS0003":
            t.sprite_size = (r.i32("sprite width"), r.i32("sprite height"))
        kind = "<i4" if tag == "TEXS0001" else "<f4"
        for f in range(n):
            image = r.i32(f"frame {f} image")
            time = r.f32(f"frame {f} time")
            t.frames.append(Frame(image, time, tuple(r.array(kind, 6, f"frame {f} rectangle"))))
    t.tail = r.data[r.pos:]
    if t.tail:
        t.warnings.append(f"{len(t.tail)} bytes after the texture data (kept)")
    return t


def write(t: Texture) -> bytes:
    w = Writer()
    w.cstring(t.header_tags[0], "latin-1")
    w.cstring(t.header_tags[1], "latin-1")
    for v in (t.format, t.flags, t.texture_width, t.texture_height, t.image_width, t.image_height):
        w.i32(v)
    w.u32(t.unknown)
    w.cstring(t.container, "latin-1")
    cv = t.container_version
    w.i32(len(t.images))
    if cv >= 3:
        w.i32(t.image_format)
    if cv >= 4:
        w.i32(t.video)
    for mips in t.images:
        w.i32(len(mips))
        for m in mips:
            w.i32(m.width)
            w.i32(m.height)
            if cv >= 2:
                w.i32(m.lz4)
                w.i32(m.decompressed_size)
            elif m.lz4:
                raise ExportError(f"{t.container} cannot hold LZ4-compressed mips")
            w.i32(len(m.data))
            w.bytes(m.data)
    if t.flags & FLAG_SPRITE:
        tag = t.sprite_tag or "TEXS0002"
        w.cstring(tag, "latin-1")
        w.i32(len(t.frames))
        if tag == "TEXS0003":
            sw, sh = t.sprite_size or (t.image_width, t.image_height)
            w.i32(sw)
            w.i32(sh)
        for f in t.frames:
            w.i32(f.image)
            w.f32(f.time)
            w.array(np.asarray(f.values, "<i4" if tag == "TEXS0001" else "<f4"))
    w.bytes(t.tail)
    return w.getvalue()


# ------------------------------------------------------------------------------------------------------------
# LZ4 block format (lz4.github.io/lz4/lz4_Block_format): sequences of
#   token (literal length << 4 | match length − 4), [255…] extra literal length, literals,
#   u16 offset, [255…] extra match length; the last sequence has literals only.

def lz4_decompress(src: bytes, size: int, field: str = "lz4 data", offset: int = 0) -> bytes:
    """An LZ4 block decompressed into exactly `size` bytes; FormatError (with the source offset) on any fault,
    including output above `size`. A well-formed block goes through `_lz4_fast`; any other is decoded again by
    `_lz4_checked`, which names the fault."""
    if size < 0:
        raise FormatError(f"negative decompressed size {size}", offset, field)
    if size > LZ4_MAX_RATIO * len(src) + 16:  # before allocating: no LZ4 block expands further
        raise FormatError(f"declared size {size} is more than {len(src)} LZ4 bytes can hold", offset, field)
    out = _lz4_fast(bytes(src), size)
    return out if out is not None else _lz4_checked(src, size, field, offset)


def _lz4_fast(src: bytes, size: int) -> bytes | None:
    """The block decompressed, or None for any fault (then `_lz4_checked` says which). The fewest steps per
    sequence (the time of a texture's import is spent here): the output grows by appending, a read past the block
    is caught once as an IndexError, and only the checks that keep the output at most `size` bytes and every
    match inside what was written are made per sequence; the rest are made once at the end."""
    out = bytearray()
    n = len(src)
    i = o = 0  # o: len(out)
    try:
        while True:
            token = src[i]
            i += 1
            lit = token >> 4
            if lit == 15:
                b = 255
                while b == 255:
                    b = src[i]
                    i += 1
                    lit += b
            if lit:
                out += src[i:i + lit]
                i += lit
                o += lit
            if i >= n:
                break
            dist = src[i] | src[i + 1] << 8
            i += 2
            length = (token & 15) + 4
            if length == 19:
                b = 255
                while b == 255:
                    b = src[i]
                    i += 1
                    length += b
            if not 0 < dist <= o or o + length > size:
                return None
            if dist >= length:
                out += out[o - dist:o - dist + length]
            else:  # the match overlaps what it writes: a repeated pattern of `dist` bytes
                out += (out[o - dist:] * (length // dist + 1))[:length]
            o += length
    except IndexError:
        return None
    return bytes(out) if i == n and len(out) == size else None


def _lz4_checked(src: bytes, size: int, field: str, offset: int) -> bytes:
    """`lz4_decompress` step by step, every field checked where it is read: FormatError naming the offset."""
    out = bytearray(size)
    n = len(src)
    i = o = 0
    mv = memoryview(src)
    while True:
        if i >= n:
            raise FormatError("LZ4 block ends without its last literals", offset + i, field)
        token = src[i]
        i += 1
        lit = token >> 4
        if lit == 15:
            lit, i = _lz4_more_length(src, i, lit, "literal", offset, field)
        if lit:
            if i + lit > n:
                raise FormatError(f"{lit} literals run past the block", offset + i, field)
            if o + lit > size:
                raise FormatError(f"decompressed data exceeds the declared {size} bytes", offset + i, field)
            out[o:o + lit] = mv[i:i + lit]
            i += lit
            o += lit
        if i == n:
            break
        if i + 2 > n:
            raise FormatError("LZ4 match offset runs past the block", offset + i, field)
        dist = src[i] | src[i + 1] << 8
        i += 2
        if dist == 0 or dist > o:
            raise FormatError(f"LZ4 match offset {dist} outside the {o} bytes written", offset + i - 2, field)
        length = (token & 15) + 4
        if length == 19:
            length, i = _lz4_more_length(src, i, length, "match", offset, field)
        if o + length > size:
            raise FormatError(f"decompressed data exceeds the declared {size} bytes", offset + i, field)
        start = o - dist
        if dist >= length:
            out[o:o + length] = out[start:start + length]
        else:  # the match overlaps what it writes: a repeated pattern of `dist` bytes
            pattern = bytes(out[start:o])
            out[o:o + length] = (pattern * (length // dist + 1))[:length]
        o += length
    if o != size:
        raise FormatError(f"decompressed to {o} bytes, declared {size}", offset, field)
    return bytes(out)


def _lz4_more_length(src: bytes, i: int, length: int, what: str, offset: int, field: str) -> tuple[int, int]:
    """A literal or match length continued in the bytes at `i` (each 255 says another byte follows): the
    length and the position after it."""
    n = len(src)
    while True:
        if i >= n:
            raise FormatError(f"LZ4 {what} length runs past the block", offset + i, field)
        b = src[i]
        i += 1
        length += b
        if b != 255:
            return length, i


def _lz4_put_more_length(out: bytearray, rest: int) -> None:
    """What a length of 15 or more continues with (the inverse of `_lz4_more_length`): 255 while more
    follows, then the rest."""
    while rest >= 255:
        out.append(255)
        rest -= 255
    out.append(rest)


def lz4_compress(data: bytes) -> bytes:
    """A valid LZ4 block of `data` (greedy, 4-byte hash matches; not tuned for ratio)."""
    n = len(data)
    out = bytearray()
    table: dict[bytes, int] = {}
    anchor = i = 0
    limit = n - 12  # the format keeps the last 5 bytes literal and starts no match in the last 12

    def emit(lit_from: int, lit_to: int, match_len: int, dist: int) -> None:
        lit = lit_to - lit_from
        ml = match_len - 4 if match_len else 0
        out.append((min(lit, 15) << 4) | min(ml, 15))
        if lit >= 15:
            _lz4_put_more_length(out, lit - 15)
        out.extend(data[lit_from:lit_to])
        if match_len:
            out.extend(dist.to_bytes(2, "little"))
            if ml >= 15:
                _lz4_put_more_length(out, ml - 15)

    while i < limit:
        key = data[i:i + 4]
        cand = table.get(key)
        table[key] = i
        if cand is not None and i - cand <= 0xFFFF:
            length = 4
            while i + length < n - 5 and data[cand + length] == data[i + length]:
                length += 1
            emit(anchor, i, length, i - cand)
            i += length
            anchor = i
        else:
            i += 1
    emit(anchor, n, 0, 0)
    return bytes(out)


# ------------------------------------------------------------------------------------------------------------
# pixels

_SHIFTS_2 = 2 * np.arange(16, dtype=np.uint32)  # a colour index word: 16 two-bit indices
_SHIFTS_3 = 3 * np.arange(8, dtype=np.uint32)  # three bytes of BC3 alpha indices: 8 three-bit indices
_OPAQUE = np.uint32(0xFF000000)


def _colour_blocks(blocks: np.ndarray, dxt1: bool) -> np.ndarray:
    """Colour part of BC1/2/3 blocks (N, 8 bytes) → (N, 16) RGB packed little-endian in uint32, each end point
    channel scaled to 0..255 with rounding; for BC1 with alpha 255 except its transparent entry (black, alpha 0),
    for BC2/3 (always four colours) with alpha 0, to be filled in. The palette is gathered by flat index."""
    n = len(blocks)
    c = np.ascontiguousarray(blocks[:, :4]).view("<u2").astype(np.int32)  # (N, 2): c0, c1
    ch = np.stack([((c >> 11) * 255 + 15) // 31, (((c >> 5) & 63) * 255 + 31) // 63,
                   ((c & 31) * 255 + 15) // 31])  # (3, N, 2) RGB of each end point
    p0, p1 = ch[..., 0], ch[..., 1]
    four = (c[:, 0] > c[:, 1]) | (not dxt1)
    e2 = np.where(four, (2 * p0 + p1 + 1) // 3, (p0 + p1 + 1) // 2)
    e3 = np.where(four, (p0 + 2 * p1 + 1) // 3, 0)
    pal = np.empty((n, 4), np.uint32)
    for k, e in enumerate((p0, p1, e2, e3)):
        pal[:, k] = e[0] | e[1] << 8 | e[2] << 16
    if dxt1:
        pal[:, :3] |= _OPAQUE
        pal[:, 3] |= np.where(four, _OPAQUE, np.uint32(0))
    idx = (np.ascontiguousarray(blocks[:, 4:8]).view("<u4") >> _SHIFTS_2) & np.uint32(3)
    idx += (np.arange(n, dtype=np.uint32) * np.uint32(4))[:, None]
    return pal.ravel()[idx]


def _bc3_alpha(blocks: np.ndarray) -> np.ndarray:
    """Alpha part of BC3 blocks (N, 8 bytes) → (N, 16) uint32. The in-between values are floor(v + 1/4) of the
    exact weighted means v, as Blender's DDS loader gives them (measured on random blocks)."""
    n = len(blocks)
    a0, a1 = blocks[:, 0].astype(np.int32), blocks[:, 1].astype(np.int32)
    eight = a0 > a1
    pal = np.empty((n, 8), np.uint32)
    pal[:, 0], pal[:, 1] = a0, a1
    for k in range(1, 7):
        seven = (4 * ((7 - k) * a0 + k * a1) + 7) // 28
        five = (4 * ((5 - k) * a0 + k * a1) + 5) // 20 if k < 5 else (0 if k == 5 else 255)
        pal[:, k + 1] = np.where(eight, seven, five)
    b = blocks[:, 2:8].astype(np.uint32)
    words = np.stack([b[:, 0] | b[:, 1] << 8 | b[:, 2] << 16, b[:, 3] | b[:, 4] << 8 | b[:, 5] << 16], axis=1)
    idx = ((words[:, :, None] >> _SHIFTS_3) & np.uint32(7)).reshape(n, 16)
    idx += (np.arange(n, dtype=np.uint32) * np.uint32(8))[:, None]
    return pal.ravel()[idx]


def decode_dxt(data: bytes, width: int, height: int, fmt: int) -> np.ndarray:
    """DXT1/3/5 blocks → (height, width, 4) uint8, rows top first (as stored). Each pixel is made as one uint32
    (colour | alpha << 24), in chunks of DXT_CHUNK blocks that keep every temporary in cache."""
    bw, bh = max((width + 3) // 4, 1), max((height + 3) // 4, 1)
    size = 8 if fmt == FORMAT_DXT1 else 16
    need = bw * bh * size
    if len(data) < need:
        raise FormatError(f"{len(data)} bytes of {FORMAT_NAMES[fmt]} data, a {width}×{height} image needs {need}",
                          None, "mip data")
    blocks = np.frombuffer(data, np.uint8, need).reshape(-1, size)
    px = np.empty((len(blocks), 16), np.uint32)  # (N, 16 pixels) RGBA little-endian
    for a in range(0, len(blocks), DXT_CHUNK):
        part = blocks[a:a + DXT_CHUNK]
        out = _colour_blocks(part[:, -8:], fmt == FORMAT_DXT1)
        if fmt == FORMAT_DXT3:
            nib = part[:, :8]
            out |= (np.stack([nib & 15, nib >> 4], axis=-1).reshape(-1, 16).astype(np.uint32) * 17) << 24
        elif fmt == FORMAT_DXT5:
            out |= _bc3_alpha(part[:, :8]) << 24
        px[a:a + DXT_CHUNK] = out
    img = px.view(np.uint8).reshape(bh, bw, 4, 4, 4).transpose(0, 2, 1, 3, 4).reshape(bh * 4, bw * 4, 4)
    return np.ascontiguousarray(img[:height, :width])


def decode_pixels(data: bytes, width: int, height: int, fmt: int) -> np.ndarray:
    """Raw (decompressed) mip bytes → (height, width, 4) uint8 RGBA, rows top first."""
    if fmt in (FORMAT_DXT1, FORMAT_DXT3, FORMAT_DXT5):
        return decode_dxt(data, width, height, fmt)
    if fmt == pixel_formats.FORMAT_BC7:
        return bc7.decode(data, width, height)
    if fmt in pixel_formats.ENCODED:
        return pixel_formats.to_rgba8(pixel_formats.decode_values(data, width, height, fmt))
    channels = {FORMAT_RGBA8888: 4, FORMAT_RG88: 2, FORMAT_R8: 1}[fmt]
    need = width * height * channels
    if len(data) < need:
        raise FormatError(f"{len(data)} bytes of {FORMAT_NAMES[fmt]} data, a {width}×{height} image needs {need}",
                          None, "mip data")
    a = np.frombuffer(data, np.uint8, need).reshape(height, width, channels)
    if channels == 4:
        return a.copy()
    out = np.empty((height, width, 4), np.uint8)
    out[..., 0] = out[..., 1] = out[..., 2] = a[..., 0]
    out[..., 3] = a[..., 1] if channels == 2 else 255
    return out


def not_decoded(t: Texture) -> str | None:
    """Why the texture's pixels are not read (one line), or None. A video texture's mips are an MP4 file, not an
    LZ4 block: kept as read for write-back."""
    if t.video or t.flags & FLAG_VIDEO:
        return "a video texture (TEXB0004 MP4): kept but not decoded"
    return None


def is_gif(t: Texture) -> bool:
    """Whether the texture's first mip is a whole GIF file (its frames: gif.py)."""
    first = t.images[0][0].data if t.images and t.images[0] else b""
    return not not_decoded(t) and (t.image_format == FIF_GIF or first[:4] == b"GIF8")


def mip_bytes(t: Texture, image: int = 0, level: int = 0) -> bytes:
    """The mip's bytes after LZ4 decompression (a whole image file when t.image_format != −1)."""
    reason = not_decoded(t)
    if reason:
        raise FormatError(reason, None, "image format")
    m = t.images[image][level]
    at = t.offsets.get(f"image {image} mip {level} data", 0)
    if m.lz4:
        return lz4_decompress(m.data, m.decompressed_size, f"image {image} mip {level} data", at)
    return m.data


def mip_pixels(t: Texture, image: int = 0, level: int = 0) -> np.ndarray:
    """(h, w, 4) uint8 RGBA of one mip, rows top first. FormatError for stored image files (not pixels)."""
    if t.image_format != -1:
        raise FormatError(f"mips are whole image files (FreeImageFormat {t.image_format}), not raw pixels", None,
                          "image format")
    m = t.images[image][level]
    return decode_pixels(mip_bytes(t, image, level), m.width, m.height, t.format)


def image_pixels(t: Texture, image: int = 0) -> np.ndarray:
    """The image's top mip as (h, w, 4) uint8 RGBA cropped to the header's image size: a texture padded to
    whole blocks (3840×2232 holding a 3840×2230 picture) loses its padding rows and columns."""
    px = mip_pixels(t, image, 0)
    h, w = t.image_height, t.image_width
    if 0 < h <= px.shape[0] and 0 < w <= px.shape[1]:
        px = px[:h, :w]
    return px


def image_file(t: Texture) -> bytes:
    """The first image's top mip as a file Blender reads: the stored image file (PNG, JPEG, ...) as it is, else
    its pixels as PNG (a 4096² image: speed over size)."""
    if not t.images or not t.images[0]:
        raise FormatError("texture holds no image", None, "image count")
    if t.image_format != -1:
        return mip_bytes(t, 0, 0)
    return encode_png(image_pixels(t), level=1)


def make_mips(level0: np.ndarray, levels: int | None = None) -> list[np.ndarray]:
    """The mip chain of an (h, w, 4) uint8 image as Wallpaper Engine makes it: each level the floor of the
    mean of the 2×2 blocks of the one above, an odd last row or column dropped."""
    out = [np.ascontiguousarray(level0, np.uint8)]
    while levels is None or len(out) < levels:
        a = out[-1]
        h, w = a.shape[0] // 2, a.shape[1] // 2
        if h < 1 or w < 1 or (levels is None and min(h, w) < MIN_AUTO_MIP):
            break
        s = a[:2 * h, :2 * w].astype(np.uint16).reshape(h, 2, w, 2, -1).sum(axis=(1, 3))
        out.append((s >> 2).astype(np.uint8))
    return out


ENCODED_FORMATS = (FORMAT_RGBA8888, FORMAT_RG88, FORMAT_R8)  # what a changed Blender image is written in
WRITTEN_FORMATS = ENCODED_FORMATS + pixel_formats.ENCODED  # the raw formats `from_rgba` writes


def _channels(level: np.ndarray, fmt: int) -> np.ndarray:
    """The stored channels of RGBA pixels, as `decode_pixels` reads them back: R8 grey, RG88 grey + alpha."""
    if fmt == FORMAT_R8:
        return level[..., :1]
    if fmt == FORMAT_RG88:
        return level[..., [0, 3]]
    return level


def from_rgba(pixels: np.ndarray, levels: int | None = None, lz4: bool = False, flags: int = 0,
              texture_size: tuple[int, int] | None = None, fmt: int = FORMAT_RGBA8888) -> Texture:
    """A TEXB0003 texture of an (h, w, 4) uint8 image (rows top first) with its mip chain, stored as `fmt`
    (one of WRITTEN_FORMATS; RGB565 rounds to its grid, RGB888 drops alpha)."""
    if fmt not in WRITTEN_FORMATS:
        raise ExportError(f"no encoder for {FORMAT_NAMES.get(fmt, fmt)} textures")
    pixels = np.asarray(pixels)
    if pixels.ndim != 3 or pixels.shape[2] != 4 or pixels.dtype != np.uint8:
        raise ExportError(f"expected an (h, w, 4) uint8 image, got {pixels.shape} {pixels.dtype}")
    h, w = pixels.shape[:2]
    if not (1 <= w <= MAX_SIDE and 1 <= h <= MAX_SIDE):
        raise ExportError(f"image of {w}×{h} pixels: sides must be 1..{MAX_SIDE}")
    tw, th = texture_size or (w, h)
    t = Texture(fmt, flags, tw, th, w, h, 0, "TEXB0003", -1)
    mips = []
    for level in make_mips(pixels, levels):
        if fmt in pixel_formats.ENCODED:
            raw = pixel_formats.encode_values(pixel_formats.from_rgba8(level, fmt), fmt)
        else:
            raw = np.ascontiguousarray(_channels(level, fmt)).tobytes()
        if lz4:
            packed = lz4_compress(raw)
            if len(packed) < len(raw):
                mips.append(Mip(level.shape[1], level.shape[0], packed, 1, len(raw)))
                continue
        mips.append(Mip(level.shape[1], level.shape[0], raw, 0, len(raw)))
    t.images = [mips]
    return t


MAX_FRAME_PIXELS = 1 << 26  # a sheet's frames together, and the images they are cut from: 64 Mi pixels (256 MiB)


def sprite_frames(t: Texture, decode=None) -> list[tuple[float, np.ndarray]]:
    """A sprite sheet's frames in order: (seconds shown, (h, w, 4) uint8 RGBA cut from the frame's image).
    A frame's values are its top-left corner and its x and y axes in pixels of that image (TEXS0001 stores
    them as ints, later versions as floats); a frame whose axes are not along x and y is refused. The frames'
    pixels together and the pixels of the images they are cut from are each at most `MAX_FRAME_PIXELS`,
    checked from the sizes the file states before anything is decoded or copied (50 frames of a whole 4096²
    image, a few hundred KB of LZ4, would be 3.2 GB). `decode(image)`: the image's top mip as (h, w, 4) uint8
    where it is not raw pixels (`top_mips`)."""
    boxes, used, total = [], {}, 0
    for k, f in enumerate(t.frames):
        if not 0 <= f.image < len(t.images) or not t.images[f.image]:
            raise FormatError(f"sprite frame {k} names image {f.image} of {len(t.images)}", None, f"frame {k} image")
        top = t.images[f.image][0]
        used[f.image] = top.width * top.height
        box = frame_box(t, k, (top.height, top.width))
        boxes.append(box)
        total += (box[1] - box[0]) * (box[3] - box[2])
        if total > MAX_FRAME_PIXELS or sum(used.values()) > MAX_FRAME_PIXELS:
            what = "frames" if total > MAX_FRAME_PIXELS else "images the frames are cut from"
            raise FormatError(f"sprite sheet {what} hold more than {MAX_FRAME_PIXELS} pixels (at frame {k} of "
                              f"{len(t.frames)})", None, f"frame {k} rectangle")
    out = []
    images = top_mips(t, sorted(used), decode)
    for f, (x0, x1, y0, y1) in zip(t.frames, boxes):
        out.append((float(f.time), images[f.image][y0:y1, x0:x1].copy()))
    return out


def top_mips(t: Texture, which, decode=None) -> dict[int, np.ndarray]:
    """{image: its top mip as (h, w, 4) uint8} for the images `which`: raw pixels decoded here; mips that are
    whole image files (PNG, ...) by `decode(image)` (Blender reads them), FormatError without one or when the
    picture's size is not the size the mip record states (the frames' rectangles are checked against that)."""
    out = {}
    for k in which:
        top = t.images[k][0]
        if t.image_format == -1:
            out[k] = mip_pixels(t, k, 0)
            continue
        if decode is None:
            raise FormatError(f"mips are whole image files (FreeImageFormat {t.image_format}), not raw pixels", None,
                              "image format")
        px = decode(k)
        if px.shape[:2] != (top.height, top.width):
            raise FormatError(f"image {k}'s file holds {px.shape[1]}×{px.shape[0]} pixels, its mip record "
                              f"{top.width}×{top.height}", t.offsets.get(f"image {k} mip 0"), f"image {k} mip 0 size")
        out[k] = px
    return out


def frame_box(t: Texture, k: int, shape: tuple[int, int]) -> tuple[int, int, int, int]:
    """Frame k's pixel box x0, x1, y0, y1 in its image of `shape` (h, w); FormatError for a rotated frame or
    one outside its image."""
    x, y, xx, xy, yx, yy = (float(v) for v in t.frames[k].values)
    if not all(math.isfinite(v) for v in (x, y, xx, xy, yx, yy)):
        raise FormatError(f"sprite frame {k} has a rectangle value that is not a finite number", None,
                          f"frame {k} rectangle")
    if xy or yx:
        raise FormatError(f"sprite frame {k} is rotated (axes {xx, xy} and {yx, yy}): not read", None,
                          f"frame {k} rectangle")
    x0, x1 = sorted((round(x), round(x + xx)))
    y0, y1 = sorted((round(y), round(y + yy)))
    if x0 < 0 or y0 < 0 or x1 > shape[1] or y1 > shape[0] or x0 == x1 or y0 == y1:
        raise FormatError(f"sprite frame {k} ({x0}..{x1} × {y0}..{y1}) is outside its "
                          f"{shape[1]}×{shape[0]} image", None, f"frame {k} rectangle")
    return x0, x1, y0, y1
