"""A sprite sheet whose mips are PNG files (TEXB0003 image format 13) comes in as frames: a sheet our writer makes
(known pixels per frame, known frame times, PNG mips from our encoder) imports as an image sequence whose frame
files carry each frame for its time; exported unchanged it is byte-identical; with a frame edited it is a sheet
of PNG mips carrying the new pixels in the same layout and timings (decoded here by Pillow, an independent
reader)."""
from __future__ import annotations

import os

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.core.png import encode_png  # noqa: E402
from skinbridge.io_wepuppet.texture import blender_io, tex  # noqa: E402

from support.png_decode import decode_png  # noqa: E402

pytestmark = pytest.mark.blender

TIMES = (0.1, 0.2, 0.05)  # at 20 fps: 2, 4 and 1 scene frames
FPS = 20
FW, FH = 16, 8  # one frame; the sheet is a 32 × 16 page: frames 0, 1 in the top row, frame 2 below left


def _frame(k: int) -> np.ndarray:
    yy, xx = np.mgrid[0:FH, 0:FW]
    px = np.empty((FH, FW, 4), np.uint8)
    px[..., 0] = 70 * k + xx
    px[..., 1] = 220 - 40 * k + yy
    px[..., 2] = (xx * yy + 23 * k) % 256
    px[..., 3] = 250 - 20 * k - yy
    return px


def _page() -> np.ndarray:
    page = np.full((2 * FH, 2 * FW, 4), 77, np.uint8)  # the cell no frame uses stays 77
    for k in range(3):
        x, y = FW * (k % 2), FH * (k // 2)
        page[y:y + FH, x:x + FW] = _frame(k)
    return page


def _png_sheet() -> bytes:
    levels = [_page(), _page()[::2, ::2]]  # a second level whose pixels no frame is cut from
    t = tex.Texture(tex.FORMAT_RGBA8888, tex.FLAG_SPRITE | 2, 2 * FW, 2 * FH, 2 * FW, 2 * FH, 0, "TEXB0003",
                    tex.FIF_PNG)
    t.images = [[tex.Mip(px.shape[1], px.shape[0], encode_png(px), 0, 0) for px in levels]]
    t.sprite_tag, t.sprite_size = "TEXS0003", (FW, FH)
    t.frames = [tex.Frame(0, np.float32(time), (FW * (k % 2), FH * (k // 2), FW, 0, 0, FH))
                for k, time in enumerate(TIMES)]
    return tex.write(t)


def _load_rgba(path: str) -> np.ndarray:
    img = bpy.data.images.load(path, check_existing=False)
    try:
        return blender_io.rgba_of(img)
    finally:
        bpy.data.images.remove(img)


def test_png_mip_sheet_imports_as_a_sequence_and_writes_back_identical(clean_scene, tmp_path):
    clean_scene.render.fps, clean_scene.render.fps_base = FPS, 1.0
    path = tmp_path / "blink.tex"
    data = _png_sheet()
    path.write_bytes(data)
    img, warnings = blender_io.import_texture(bpy.context, str(path))
    assert warnings == [] and img.source == "SEQUENCE" and tuple(img.size) == (FW, FH)
    folder = os.path.dirname(bpy.path.abspath(img.filepath))
    files = sorted(f for f in os.listdir(folder) if f.endswith(".png"))
    assert files == [f"blink_{n:04d}.png" for n in range(7)]
    for j, k in enumerate([0, 0, 1, 1, 1, 1, 2]):
        assert np.array_equal(_load_rgba(os.path.join(folder, files[j])), _frame(k)), j
    out = tmp_path / "out.tex"
    assert blender_io.export_texture(img, str(out)) == []
    assert out.read_bytes() == data

    edited = np.zeros((FH, FW, 4), np.uint8)
    edited[..., 1], edited[..., 3] = np.arange(FW) * 15, 255
    os.remove(os.path.join(folder, "blink_0006.png"))  # frame 2's only file, replaced as an outside editor does
    with open(os.path.join(folder, "blink_0006.png"), "wb") as f:
        f.write(encode_png(edited))
    assert blender_io.export_texture(img, str(out)) == []
    back = tex.read(out.read_bytes())
    assert (back.image_format, back.flags, back.sprite_tag, back.sprite_size) == (tex.FIF_PNG, tex.FLAG_SPRITE | 2,
                                                                                 "TEXS0003", (FW, FH))
    assert [(f.image, f.time, tuple(f.values)) for f in back.frames] == \
        [(f.image, f.time, tuple(f.values)) for f in tex.read(data).frames]
    want = _page()
    want[FH:, :FW] = edited
    top, second = (decode_png(tex.mip_bytes(back, 0, j)) for j in (0, 1))
    assert np.array_equal(top, want)
    half = (want.astype(np.uint16).reshape(FH, 2, FW, 2, 4).sum(axis=(1, 3)) >> 2).astype(np.uint8)
    assert np.array_equal(second, half)  # the level below made again from the new page, as §5 makes mips


def test_png_mip_of_another_size_than_its_record_shows_the_sheet_as_its_whole_image(clean_scene, tmp_path):
    t = tex.read(_png_sheet())
    t.images[0][0].data = encode_png(np.zeros((4, 4, 4), np.uint8))  # the record still says 32 × 16
    path = tmp_path / "bad.tex"
    path.write_bytes(tex.write(t))
    img, warnings = blender_io.import_texture(bpy.context, str(path))
    assert img.source != "SEQUENCE"
    at = t.offsets["image 0 mip 0"]
    assert warnings == [f"sprite sheet shown as its whole image, not as frames: offset {at} ({at:#x}), field image 0 "
                        "mip 0 size: image 0's file holds 4×4 pixels, its mip record 32×16"]
