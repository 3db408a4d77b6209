"""GIF textures (a `.tex` whose mip is a GIF file) come in as frames and go back out equal: a hand-built GIF of
the GIF89a layout (interlace, transparency, local colour table, every disposal) and a GIF written by an
independent encoder (Pillow, real LZW compression filling the 4096-code table) decode to their known frames and
times; through Blender the texture is an image sequence, written back byte-identical unchanged and, with a
frame edited, as a sprite sheet of the GIF's frames and times carrying the edit."""
from __future__ import annotations

import io
import os
import struct

import numpy as np
import pytest
from PIL import Image

from skinbridge.core.errors import FormatError
from skinbridge.io_wepuppet.texture import check, gif, tex

GLOBAL = np.array([(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255)], np.uint8)
LOCAL = np.array([(10, 20, 30), (40, 50, 60), (70, 80, 90), (1, 2, 3)], np.uint8)
W, H = 6, 8


def _blocks(data: bytes) -> bytes:
    return b"".join(bytes([len(data[i:i + 255])]) + data[i:i + 255] for i in range(0, len(data), 255)) + b"\0"


def _lzw_plain(indices: np.ndarray) -> bytes:
    """Minimum code size 2 and 3-bit codes throughout: a clear code before every 2 literals keeps the decoder's
    table below 8 entries, so no code ever refers to the table (the 'uncompressed GIF' construction)."""
    flat = [int(v) for v in indices.reshape(-1)]
    codes = []
    for i in range(0, len(flat), 2):
        codes += [4] + flat[i:i + 2]
    codes.append(5)
    acc = sum(c << (3 * k) for k, c in enumerate(codes))
    return b"\x02" + _blocks(acc.to_bytes((3 * len(codes) + 7) // 8, "little"))


def _control(delay: int, disposal: int, transparent: int | None = None) -> bytes:
    flags = disposal << 2 | (transparent is not None)
    return b"\x21\xf9\x04" + struct.pack("<BHB", flags, delay, transparent or 0) + b"\0"


def _image(x: int, y: int, idx: np.ndarray, palette: np.ndarray | None = None, interlace: bool = False) -> bytes:
    h, w = idx.shape
    flags = (0x80 | 1 if palette is not None else 0) | (0x40 if interlace else 0)
    out = b"\x2c" + struct.pack("<HHHHB", x, y, w, h, flags)
    if palette is not None:
        out += palette.tobytes()
    stored = idx[[r for start, step in ((0, 8), (4, 8), (2, 4), (1, 2)) for r in range(start, h, step)]] \
        if interlace else idx
    return out + _lzw_plain(stored)


def _hand_built() -> tuple[bytes, list[tuple[float, np.ndarray]]]:
    """Four frames and what a viewer shows for each, composed here from the specification's rules."""
    yy, xx = np.mgrid[0:H, 0:W]
    a = (xx + yy) % 4
    b = np.array([[0, 3, 1], [2, 3, 0], [1, 1, 3], [3, 2, 2], [0, 1, 2]])  # 3 is transparent
    c = np.array([[2, 0], [1, 3]])
    data = b"GIF89a" + struct.pack("<HHBBB", W, H, 0x80 | 1, 0, 0) + GLOBAL.tobytes()
    data += _control(10, 1) + _image(0, 0, a)
    data += _control(25, 2, 3) + _image(1, 1, b, LOCAL, interlace=True)
    data += _control(0, 3) + _image(0, 0, c)
    data += _control(5, 0) + _image(5, 7, np.array([[1]])) + b"\x3b"

    def rgba(pal, idx):
        return np.concatenate([pal[idx], np.full(idx.shape + (1,), 255, np.uint8)], axis=-1)

    shown_a = rgba(GLOBAL, a)
    shown_b = shown_a.copy()
    keep = b != 3
    shown_b[1:6, 1:4][keep] = rgba(LOCAL, b)[keep]
    after_b = shown_b.copy()
    after_b[1:6, 1:4] = 0  # disposal 2: the rectangle back to the (transparent) background
    shown_c = after_b.copy()
    shown_c[0:2, 0:2] = rgba(GLOBAL, c)
    shown_d = after_b.copy()  # disposal 3: C's drawing undone
    shown_d[7, 5] = rgba(GLOBAL, np.array([[1]]))[0, 0]
    return data, [(0.1, shown_a), (0.25, shown_b), (0.1, shown_c), (0.05, shown_d)]


def _pillow_gif() -> tuple[bytes, list[tuple[float, np.ndarray]]]:
    """Five 96×64 frames of 256 random colours (the LZW table fills and is cleared), each shown a known time."""
    rng = np.random.default_rng(7)
    palette = rng.integers(0, 256, (256, 3), dtype=np.uint8)
    palette[:, 0] = np.arange(256)  # every entry distinct, so the encoder keeps each index
    frames, images = [], []
    for k in range(5):
        idx = rng.integers(0, 256, (64, 96), dtype=np.uint8)
        idx[:8] = 40 * k  # a run, so consecutive frames differ everywhere and compress
        im = Image.fromarray(idx, "P")
        im.putpalette(palette.tobytes())
        images.append(im)
        frames.append(np.concatenate([palette[idx], np.full((64, 96, 1), 255, np.uint8)], axis=-1))
    ms = [100, 200, 50, 70, 30]
    out = io.BytesIO()
    images[0].save(out, "GIF", save_all=True, append_images=images[1:], duration=ms, loop=0, disposal=1,
                   optimize=False)
    return out.getvalue(), [(m / 1000, px) for m, px in zip(ms, frames)]


def _gif_texture(data: bytes) -> tex.Texture:
    t = tex.Texture(tex.FORMAT_RGBA8888, 2, 128, 128, W, H, 0, "TEXB0003", tex.FIF_GIF)
    t.images = [[tex.Mip(W, H, data, 0, len(data))]]
    return tex.read(tex.write(t))


@pytest.mark.parametrize("build", [_hand_built, _pillow_gif])
def test_gif_frames_decode_to_the_known_pixels_and_times(build):
    data, expected = build()
    got = gif.frames(data)
    assert [time for time, _ in got] == [time for time, _ in expected]
    for k, ((_, px), (_, want)) in enumerate(zip(got, expected)):
        assert np.array_equal(px, want), k


def test_a_gif_texture_is_read_not_refused_and_a_cut_one_is_an_error():
    data, _ = _hand_built()
    t = _gif_texture(data)
    assert tex.is_gif(t) and tex.not_decoded(t) is None and tex.mip_bytes(t) == data
    assert check.validate_texture(t) == []
    cut = _gif_texture(data[:40])  # the first image descriptor cut before its height
    findings = [(f.severity, f.element, f.message) for f in check.validate_texture(cut)]
    assert findings == [("error", "image 0 mip 0", "needs 2 bytes, 0 left")]
    with pytest.raises(FormatError, match="LZW code 7 is not in the table of 6"):
        gif.lzw_decode(bytes([0b111100]), 2, 4)  # clear, then code 7 with nothing before it
    with pytest.raises(FormatError, match="LZW minimum code size 9 outside 1..8"):
        gif.lzw_decode(b"\0", 9, 4)


@pytest.mark.blender
def test_a_gif_texture_comes_in_as_frames_and_goes_back_out_equal(clean_scene, tmp_path):
    bpy = pytest.importorskip("bpy")
    from skinbridge.io_wepuppet.texture import blender_io  # noqa: E402  bpy only for this test

    clean_scene.render.fps, clean_scene.render.fps_base = 20, 1.0
    data, expected = _hand_built()
    path = tmp_path / "anim.tex"
    path.write_bytes(tex.write(_gif_texture(data)))
    raw = path.read_bytes()
    img, warnings = blender_io.import_texture(bpy.context, str(path))
    assert warnings == [] and img.source == "SEQUENCE" and tuple(img.size) == (W, H)
    folder = os.path.dirname(bpy.path.abspath(img.filepath))
    files = sorted(f for f in os.listdir(folder) if f.endswith(".png"))
    shown = [0, 0, 1, 1, 1, 1, 1, 2, 2, 3]  # 0.1, 0.25, 0.1, 0.05 s at 20 fps: starts 0, 2, 7, 9, end 10
    assert files == [f"anim_{n:04d}.png" for n in range(len(shown))]
    for j, k in enumerate(shown):
        frame = bpy.data.images.load(os.path.join(folder, files[j]), check_existing=False)
        assert np.array_equal(blender_io.rgba_of(frame), expected[k][1]), j
        bpy.data.images.remove(frame)
    out = tmp_path / "out.tex"
    assert blender_io.export_texture(img, str(out)) == []
    assert out.read_bytes() == raw
    edited = np.zeros((H, W, 4), np.uint8)
    edited[..., 1], edited[..., 3] = 77, 255
    paint = bpy.data.images.load(os.path.join(folder, files[8]), check_existing=False)  # frame 3's second file
    paint.pixels.foreach_set((edited.astype(np.float32) / 255).reshape(-1))
    paint.save()
    bpy.data.images.remove(paint)
    warnings = blender_io.export_texture(img, str(out))
    assert len(warnings) == 1 and "written as a sprite sheet" in warnings[0]
    back = tex.read(out.read_bytes())
    assert back.flags == 2 | tex.FLAG_SPRITE and back.image_format == -1 and back.sprite_tag == "TEXS0003"
    got = tex.sprite_frames(back)
    assert [time for time, _ in got] == [float(np.float32(time)) for time, _ in expected]
    assert np.array_equal(got[2][1], edited)
    assert all(np.array_equal(got[k][1], expected[k][1]) for k in (0, 1, 3))


def test_a_gif_too_big_to_decode_is_refused_before_anything_is_sized_from_it():
    screen = b"GIF89a" + struct.pack("<HHBBB", 65535, 65535, 0, 0, 0)
    with pytest.raises(FormatError, match="screen of 65535×65535 pixels"):
        gif.frames(screen + b"\x3b")
    image = b"\x2c" + struct.pack("<HHHHB", 0, 0, 65535, 65535, 0)
    with pytest.raises(FormatError, match="image of 65535×65535 pixels"):
        gif.frames(b"GIF89a" + struct.pack("<HHBBB", 4, 4, 0, 0, 0) + image)
