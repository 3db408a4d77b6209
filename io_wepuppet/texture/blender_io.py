"""Wallpaper Engine textures in Blender: a `.tex` imported as a packed image (a sprite sheet or a GIF as an image
sequence, blender_sheet.py) that keeps its file, and a Blender image written as a `.tex`: the file it came from
while its pixels are unchanged, else encoded in that file's format where we have an encoder. Import reads no
pixels back: the image keeps a fingerprint of the file Blender holds, and export reads pixels only when Blender
says the image was edited or holds another file.
"""
from __future__ import annotations

import os
import tempfile
import zlib

import bpy
import numpy as np

from ...blender import material as bmat
from ...blender import scene as bscene
from ...core.errors import ExportError, FormatError
from ...core.fileio import read_bytes, write_atomic
from ...core.naming import safe_file_name
from . import blender_sheet, tex

TEX_PROP, TEX_KEY_PROP = "skinbridge_we_tex", "skinbridge_we_tex_pixels"  # on an image: its `.tex`, a file digest


def import_texture(context, path: str) -> tuple[object, list[str]]:
    """A `.tex` as a packed Blender image (its first image's top mip); a sprite sheet or an embedded GIF as an
    image sequence of its frames (blender_sheet.py)."""
    raw = read_bytes(path)
    t = tex.read(raw)
    if not t.images or not t.images[0]:
        raise FormatError("texture holds no image", None, "image count")
    name = os.path.splitext(os.path.basename(path))[0]
    warnings = list(t.warnings)
    if tex.is_gif(t):
        return _keep_imported(blender_sheet.import_gif(context, t, name), name, raw), warnings
    if t.flags & tex.FLAG_SPRITE and t.frames:
        try:
            img = blender_sheet.import_sheet(context, t, name)
        except (FormatError, OSError) as e:
            warnings.append(f"sprite sheet shown as its whole image, not as frames: {e}")
        else:
            return _keep_imported(img, name, raw), warnings
    data = tex.image_file(t)
    img = bpy.data.images.load_from_memory(data) if hasattr(bpy.data.images, "load_from_memory") else None
    if img is None:
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, safe_file_name(name) + ".png")
            with open(p, "wb") as f:
                f.write(data)
            img = bpy.data.images.load(p)
            img.pack()
    return _keep_imported(img, name, raw), warnings


def _keep_imported(img, name: str, raw: bytes):
    """The imported image named and keeping its `.tex`; removed again on any failure (import is atomic)."""
    try:
        if not img.size[0] or not img.size[1]:  # an image file Blender cannot read loads as 0×0, not as an error
            raise FormatError("the embedded image file is not one Blender reads", None, "image format")
        img.name = name
        keep_texture(img, raw)
        bscene.failure_point("done")
    except BaseException:  # atomic: a failure after the image exists takes it away again
        bpy.data.images.remove(img)
        raise
    return img


def rgba_of(img) -> np.ndarray:
    """(h, w, 4) uint8 rows top first: the image as a `.tex` stores it."""
    w, h = img.size
    px = np.empty(w * h * 4, np.float32)
    img.pixels.foreach_get(px)
    return np.clip(np.round(px.reshape(h, w, 4)[::-1] * 255), 0, 255).astype(np.uint8)


def _file_key(img) -> str:
    """The fingerprint of the image file Blender holds (its packed bytes' CRC-32), "" for an image that holds
    none. Made from bytes in memory: nothing is decoded, and Blender's pixels are not read back."""
    packed = img.packed_file
    return f"packed:{zlib.crc32(packed.data):08x}" if packed is not None else ""


def keep_texture(img, raw: bytes) -> None:
    """The `.tex` a Blender image came from, written again while the image's pixels are unchanged: kept with a
    fingerprint of the image file Blender holds (`_file_key`), so that import reads no pixels back."""
    img[TEX_PROP] = raw
    img[TEX_KEY_PROP] = _file_key(img)


def _untouched(img) -> bool:
    """Whether the image is as imported, known without reading its pixels: not edited since it was loaded
    (Blender marks an image whose pixels are painted, set or scaled as dirty) and holding the file it was
    imported with (a saved, repacked or replaced image holds another)."""
    key = img.get(TEX_KEY_PROP)
    return bool(key) and not img.is_dirty and key == _file_key(img)


def _own_pixels(kept: tex.Texture) -> np.ndarray | None:
    """The `.tex`'s picture as its import shows it: decoded from its bytes, an embedded image file as Blender
    reads it; None where it cannot be read."""
    try:
        return tex.image_pixels(kept) if kept.image_format == -1 else blender_sheet.file_rgba(tex.mip_bytes(kept))
    except (FormatError, ExportError):
        return None


def texture_bytes(img, lz4: bool = True) -> tuple[bytes, list[str]]:
    """A Blender image as a `.tex`: the file it came from while the image is as imported (`_untouched`) or its
    pixels equal the file's own (an edit undone); else encoded in that file's format and flags where we have an
    encoder (R8, RG88, RGBA8888), RGBA8888 with a warning otherwise, LZ4 where that file used it (`lz4` for an
    image of no file)."""
    raw = img.get(TEX_PROP)
    if isinstance(raw, bytes) and blender_sheet.sheet_info(img) is not None:
        return blender_sheet.sheet_bytes(img, raw)
    if not isinstance(raw, bytes):
        return tex.write(tex.from_rgba(rgba_of(img), lz4=lz4)), []
    if _untouched(img):
        return raw, []
    rgba = rgba_of(img)
    kept = tex.read(raw)
    if np.array_equal(rgba, _own_pixels(kept)):
        return raw, []
    warnings = []
    fmt = kept.format if kept.image_format == -1 else -1
    if fmt not in tex.ENCODED_FORMATS:
        what = tex.FORMAT_NAMES.get(fmt, "an embedded image file") if fmt != -1 else "an embedded image file"
        warnings.append(f"image {img.name!r}: changed, and {what} has no encoder here: written as RGBA8888")
        fmt = tex.FORMAT_RGBA8888
    flags = kept.flags
    if flags & tex.FLAG_SPRITE:
        warnings.append(f"image {img.name!r}: changed: its sprite-sheet frames are not written")
        flags &= ~tex.FLAG_SPRITE
    lz4 = any(m.lz4 for mips in kept.images for m in mips)
    return tex.write(tex.from_rgba(rgba, lz4=lz4, flags=flags, fmt=fmt)), warnings


def blender_import(context, path: str, options=None) -> list[str]:
    return import_texture(context, path)[1]


def _has_pixels(img) -> bool:
    """A packed image holds its file (nothing is decoded to know it); another has pixels when Blender reads a
    size from its file."""
    return img.packed_file is not None or bool(img.size[0])


def first_image(materials):
    for mat in materials:
        if mat is None or mat.node_tree is None:
            continue
        for node in mat.node_tree.nodes:
            if node.type == "TEX_IMAGE" and node.image is not None and _has_pixels(node.image) \
                    and not bmat.is_placeholder(node.image):
                return node.image
    return None


def exportable_image(img) -> bool:
    return img.type not in ("RENDER_RESULT", "COMPOSITING") and not bmat.is_placeholder(img) and \
        bool(img.size[0] and img.size[1])


def texture_to_export(context, name: str = ""):
    """The image a `.tex` export writes: the one named `name`; else the image editor's; else the active
    object's active material's; else the only image imported from a `.tex` (the only image at all when none
    was). Several candidates and none chosen: refused, naming them, since writing an arbitrary one would be a
    silent guess."""
    if name:
        img = bpy.data.images.get(name)
        if img is None:
            known = ", ".join(repr(i.name) for i in bpy.data.images if exportable_image(i)) or "none"
            raise ExportError(f"no image named {name!r} (images: {known})")
        return img
    space = getattr(context, "space_data", None)
    img = getattr(space, "image", None) if space is not None else None
    if img is not None and exportable_image(img):
        return img
    ob = getattr(context, "active_object", None)
    img = first_image([ob.active_material]) if ob is not None and ob.active_material is not None else None
    if img is not None:
        return img
    candidates = [i for i in bpy.data.images if exportable_image(i)]
    pool = [i for i in candidates if isinstance(i.get(TEX_PROP), bytes)] or candidates
    if len(pool) == 1:
        return pool[0]
    if not pool:
        raise ExportError("no image to export")
    names = ", ".join(repr(i.name) for i in pool)
    raise ExportError(f"{len(pool)} images could be exported ({names}): choose one with Image (image=...)")


def export_texture(image, path: str, lz4: bool = False) -> list[str]:
    """A Blender image as a `.tex` (`texture_bytes`; `lz4` for an image that came from no `.tex`)."""
    w, h = image.size
    if not (w and h) and blender_sheet.sheet_info(image) is None:  # a sheet whose frame files are gone: its .tex
        raise ExportError(f"image {image.name!r} has no pixels")
    data, warnings = texture_bytes(image, lz4)
    write_atomic(path, data)
    return warnings
