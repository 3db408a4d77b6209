"""Textured puppets import without reading pixels back: a puppet whose `.tex` is DXT5 with LZ4 (made by our
writer) comes in with its image not yet decoded by Blender, keeping the `.tex`; exported untouched it is that file;
with a pixel edited it carries the edit; with the edit undone it is that file again. The fast LZ4 decoder agrees
with the checked one on valid and damaged blocks."""
from __future__ import annotations

import json

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.io_wepuppet.puppet import blender_io, convert, sample  # noqa: E402
from skinbridge.io_wepuppet.texture import blender_io as texture_io, tex  # noqa: E402
from skinbridge.io_wepuppet.texture.material import material_doc  # noqa: E402

pytestmark = pytest.mark.blender

SIDE = 64


def _dxt5_texture() -> bytes:
    """A 64² DXT5 texture, LZ4-packed: 256 blocks drawn from 24 random ones (so LZ4 finds matches), the first
    block fully transparent."""
    rng = np.random.default_rng(7)
    palette = rng.integers(0, 256, (24, 16), dtype=np.uint8)
    palette[0, :8] = 0  # alpha end points 0, 0: every pixel transparent
    blocks = palette[rng.integers(0, 24, (SIDE // 4) ** 2)]
    blocks[0] = palette[0]
    raw = blocks.tobytes()
    t = tex.Texture(tex.FORMAT_DXT5, 2, SIDE, SIDE, SIDE, SIDE, 0, "TEXB0003", -1,
                    images=[[tex.Mip(SIDE, SIDE, tex.lz4_compress(raw), 1, len(raw))]])
    assert len(t.images[0][0].data) < len(raw)
    return tex.write(t)


def _project(tmp_path) -> tuple[str, bytes]:
    model, _ = sample.wave_puppet(width=SIDE, height=SIDE, image=False)
    (tmp_path / "models").mkdir()
    (tmp_path / "materials").mkdir()
    (tmp_path / "materials" / "wave.json").write_text(json.dumps(material_doc("wave")))
    data = _dxt5_texture()
    (tmp_path / "materials" / "wave.tex").write_bytes(data)
    path = tmp_path / "models" / "wave_puppet.mdl"
    path.write_bytes(convert.write_model(model))
    return str(path), data


def _image():
    images = [i for i in bpy.data.images if texture_io.TEX_PROP in i]
    assert len(images) == 1
    return images[0]


def _blender_rgba(img) -> np.ndarray:
    px = np.empty(img.size[0] * img.size[1] * 4, np.float32)
    img.pixels.foreach_get(px)
    return np.round(px.reshape(img.size[1], img.size[0], 4)[::-1] * 255).astype(np.uint8)


def _set_rgba(img, rgba: np.ndarray) -> None:
    img.pixels.foreach_set((rgba[::-1].astype(np.float32) / 255).reshape(-1))


def test_puppet_texture_imports_undecoded_and_edits_are_still_seen(clean_scene, tmp_path):
    path, data = _project(tmp_path)
    blender_io.import_wepuppet(bpy.context, path)
    img = _image()
    assert not img.has_data  # Blender has not decoded the image: nothing read its pixels
    assert img[texture_io.TEX_PROP] == data and img.packed_file is not None
    assert texture_io.texture_bytes(img) == (data, [])
    assert not img.has_data  # an untouched image is written without decoding it either

    before = _blender_rgba(img)
    assert before.shape == (SIDE, SIDE, 4) and (before[:4, :4, 3] == 0).all()  # block 0: transparent
    assert texture_io.texture_bytes(img) == (data, [])  # decoded, not edited: still the file

    edited = before.copy()
    edited[0, 0] = (10, 200, 30, 255)  # the top-left pixel (row 0 of the `.tex`)
    _set_rgba(img, edited)
    assert img.is_dirty
    out, warnings = texture_io.texture_bytes(img)
    assert out != data and len(warnings) == 1 and "DXT5" in warnings[0]
    back = tex.read(out)
    assert back.format == tex.FORMAT_RGBA8888 and back.flags == 2 and back.images[0][0].lz4 == 1
    assert np.array_equal(tex.mip_pixels(back), edited)

    _set_rgba(img, before)  # the edit undone: the pixels are the file's again
    assert texture_io.texture_bytes(img) == (data, [])


def test_a_repacked_image_is_compared_by_its_pixels(clean_scene, tmp_path):
    path, data = _project(tmp_path)
    blender_io.import_wepuppet(bpy.context, path)
    img = _image()
    rgba = _blender_rgba(img)
    rgba[5, 7] = (1, 2, 3, 4)
    _set_rgba(img, rgba)
    img.pack()  # the edit kept in the .blend: the image is clean again but holds another file
    assert not img.is_dirty and texture_io._file_key(img) != img[texture_io.TEX_KEY_PROP]
    out, _ = texture_io.texture_bytes(img)
    assert np.array_equal(tex.mip_pixels(tex.read(out))[5, 7], (1, 2, 3, 4))


def test_fast_lz4_agrees_with_the_checked_decoder_on_damaged_blocks():
    rng = np.random.default_rng(3)
    raw = bytes(rng.integers(0, 4, 3000, dtype=np.uint8)) + b"\0" * 700 + bytes(range(256)) * 3
    block = tex.lz4_compress(raw)
    assert tex._lz4_fast(block, len(raw)) == raw
    outcomes = {"same": 0, "refused": 0}
    for _ in range(400):
        bad = bytearray(block)
        size = len(raw)
        kind = rng.integers(0, 3)
        if kind == 0:  # a byte changed: a literal (still valid) or a token, offset or length (mostly not)
            bad[rng.integers(0, len(bad))] = rng.integers(0, 256)
        elif kind == 1:  # the block cut short
            del bad[rng.integers(len(bad) // 2, len(bad)):]
        else:  # a declared size a little off
            size += int(rng.choice([-3, -1, 1, 2]))
        cut = bytes(bad)
        try:
            want = tex._lz4_checked(cut, size, "lz4 data", 0)
        except tex.FormatError:
            want = None
        got = tex._lz4_fast(cut, size)
        assert got == want
        outcomes["same" if want is not None else "refused"] += 1
    assert outcomes["same"] and outcomes["refused"]  # both kinds of block were tried
