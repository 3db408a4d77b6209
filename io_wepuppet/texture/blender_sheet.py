"""Sprite sheets (Wallpaper Engine's form of a GIF) and embedded GIF files in Blender as an image sequence that
plays in the viewport.

Blender plays an animated texture only as a movie or an image sequence whose files it reads from disk, one file
per scene frame, through the image user of the node that shows it. A sheet therefore comes in as PNG frame files
in a cache folder, `<stem>_0000.png` onwards, one per scene frame at the scene's frame rate (a sheet frame shown
for 0.1 s at 24 fps is 2 or 3 files with the same pixels: `sheet.schedule`), and the image is of source SEQUENCE.
File 0 is the sheet's first frame, so the image's own size and pixels (what Blender shows without an image user)
are those of frame 1. `use_sequence` sets a node's image user to play the cycle from the scene's start, looped.

Export reads the files back: a sheet frame none of whose files changed (their bytes' CRC as written) is the
sheet's own frame; else the first changed file is the new frame. No change: the sheet's own bytes; else
`sheet.rebuild` writes the new pixels into the sheet's layout and timing (a GIF, for which we have no encoder,
becomes a sheet of its frames and times: `sheet.from_frames`). docs/wallpaper_engine.md §5.1.
"""
from __future__ import annotations

import json
import os
import tempfile
import zlib

import bpy
import numpy as np

from ...core.errors import ExportError, FormatError
from ...core.fileio import read_bytes
from ...core.naming import safe_file_name
from ...core.png import encode_png
from . import gif, sheet, tex

FRAMES_PROP = "skinbridge_we_tex_frames"  # on a sheet's image: JSON {fps, stem, files per sheet frame, crc}
MAX_FILES = 10000  # the 4-digit file numbers Blender pads to; a longer cycle is refused, the sheet comes in still
CACHE_DIR = "skinbridge_we_frames"


def scene_fps(scene) -> float:
    return scene.render.fps / scene.render.fps_base


def cache_folder(name: str) -> str:
    """A new folder for one import's frame files, so that two imports of one sheet are two images whose edits
    do not mix. In Blender's interface under the system temporary folder, kept across sessions since a saved
    .blend refers to the files; without one (command line, scripts) in Blender's own session folder, removed when
    Blender quits, so that `convert` and `render` leave no folder behind."""
    if bpy.app.background and bpy.app.tempdir:
        root = bpy.app.tempdir
    else:
        root = os.path.join(tempfile.gettempdir(), CACHE_DIR)
        os.makedirs(root, exist_ok=True)
    return tempfile.mkdtemp(prefix=f"{safe_file_name(name)}_", dir=root)


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def _link(first: str, path: str, data: bytes) -> None:
    """`path` as a hard link to `first` (a frame shown for several scene frames is one file to edit, and saving
    it in place changes them all); a copy where the file system has no links."""
    try:
        os.link(first, path)
    except OSError:
        _write(path, data)


def _frame_path(folder: str, stem: str, number: int) -> str:
    return os.path.join(folder, f"{stem}_{number:04d}.png")


def import_sheet(context, t: tex.Texture, name: str):
    """The sheet as an image sequence (see the module note); FormatError when its frames cannot be cut (a
    rotated frame, a frame outside its image, a mip file Blender cannot read). Mips that are image files (PNG)
    are read by Blender (`decoder`)."""
    return import_frames(context, tex.sprite_frames(t, decoder(t)), name, "sheet")


def decoder(t: tex.Texture):
    """`decode(image)` for `tex.sprite_frames` and `sheet.rebuild`: the image's top mip file as Blender reads
    it (FormatError when Blender reads none)."""
    def decode(k: int) -> np.ndarray:
        try:
            return file_rgba(tex.mip_bytes(t, k, 0))
        except ExportError as e:
            raise FormatError(f"image {k}'s top mip: {e}", t.offsets.get(f"image {k} mip 0 data"),
                              f"image {k} mip 0 data") from None
    return decode


def import_gif(context, t: tex.Texture, name: str):
    """A texture holding a GIF file as an image sequence of its frames (gif.py)."""
    return import_frames(context, gif.frames(tex.mip_bytes(t)), name, "gif")


def import_frames(context, frames: list[tuple[float, np.ndarray]], name: str, kind: str):
    """(seconds, (h, w, 4) uint8) frames as an image sequence at the scene's frame rate."""
    if not frames:
        raise FormatError("sprite sheet without frames", None, "frame count")
    fps = scene_fps(context.scene)
    plan = sheet.schedule([time for time, _ in frames], fps, MAX_FILES)  # checked before the lists are made
    folder = cache_folder(name)
    stem = safe_file_name(name).replace("#", "_")  # Blender reads # in a path as a frame number
    crcs = []
    for (_, px), numbers in zip(frames, plan):
        png = encode_png(px, level=1)
        crcs.append(zlib.crc32(png))
        first = _frame_path(folder, stem, numbers[0])
        _write(first, png)
        for n in numbers[1:]:
            _link(first, _frame_path(folder, stem, n), png)
    img = bpy.data.images.load(_frame_path(folder, stem, 0), check_existing=False)
    img.source = "SEQUENCE"
    img.name = name
    img[FRAMES_PROP] = json.dumps({"kind": kind, "fps": fps, "stem": stem, "files": plan, "crc": crcs})
    return img


def sheet_info(img) -> dict | None:
    """The image's frame record (see FRAMES_PROP), or None for an image that is no imported sheet or whose
    record was edited out of shape (it is then written as any image is)."""
    try:
        info = json.loads(img.get(FRAMES_PROP, ""))
    except (TypeError, ValueError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("stem"), str):
        return None
    files, crc = info.get("files"), info.get("crc")
    if not (isinstance(files, list) and isinstance(crc, list) and len(files) == len(crc) and
            all(isinstance(n, list) and all(isinstance(j, int) for j in n) for n in files)):
        return None
    return info


def use_sequence(image_user, img, scene) -> None:
    """An image user (an Image Texture node's) playing `img`'s cycle from the scene's first frame, looped;
    nothing for an image that is not an imported sheet."""
    info = sheet_info(img)
    if info is None:
        return
    image_user.frame_duration = sum(len(n) for n in info["files"])
    image_user.frame_start = scene.frame_start
    image_user.frame_offset = -1  # Blender shows file `offset + 1` at frame_start; our files count from 0
    image_user.use_cyclic = True
    image_user.use_auto_refresh = True


def _png_rgba(path: str) -> np.ndarray:
    """(h, w, 4) uint8 rows top first of an image file, read by Blender (any format a painter saves in);
    ExportError when Blender reads no picture from it."""
    name = os.path.basename(path)
    img = bpy.data.images.load(path, check_existing=False)
    try:
        w, h = img.size
        if not (w and h):
            raise ExportError(f"{name} is not an image Blender reads")
        px = np.empty(w * h * 4, np.float32)
        img.pixels.foreach_get(px)
    finally:
        bpy.data.images.remove(img)
    return np.clip(np.round(px.reshape(h, w, 4)[::-1] * 255), 0, 255).astype(np.uint8)


def file_rgba(data: bytes) -> np.ndarray:
    """(h, w, 4) uint8 rows top first of an image file's bytes (PNG, JPEG, ...), as Blender reads it."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "image")
        _write(path, data)
        return _png_rgba(path)


def sheet_bytes(img, raw: bytes) -> tuple[bytes, list[str]]:
    """The `.tex` of a sheet imported by `import_sheet` (see the module note)."""
    info = sheet_info(img)
    folder = os.path.dirname(bpy.path.abspath(img.filepath))
    stem = info["stem"]
    warnings = []
    if img.is_dirty:
        warnings.append(f"image {img.name!r}: painted frames not saved to their files are not written "
                        "(Image › Save first)")
    new: dict[int, np.ndarray] = {}
    missing = 0
    for k, numbers in enumerate(info["files"]):
        for n in numbers:
            path = _frame_path(folder, stem, int(n))
            if not os.path.isfile(path):
                missing += 1
                continue
            if zlib.crc32(read_bytes(path)) != info["crc"][k]:
                new[k] = _png_rgba(path)
                break
    if missing:
        warnings.append(f"image {img.name!r}: {missing} frame files missing in {folder}: those frames are "
                        "written as imported")
    if not new:
        return raw, warnings
    t = tex.read(raw)
    if info.get("kind") == "gif":
        old = gif.frames(tex.mip_bytes(t))
        frames = [(time, new.get(k, px)) for k, (time, px) in enumerate(old)]
        warnings.append(f"image {img.name!r}: GIF frames changed: written as a sprite sheet (RGBA8888, the "
                        "GIF's frame times), as Wallpaper Engine stores an imported GIF")
        out = sheet.from_frames(frames, t.flags & ~tex.FLAG_VIDEO)
        return tex.write(out), warnings
    frames = [new.get(k, px) for k, (_, px) in enumerate(tex.sprite_frames(t, decoder(t)))]
    out, more = sheet.rebuild(t, frames, decoder(t))
    return tex.write(out), warnings + [f"image {img.name!r}: {w}" for w in more]
