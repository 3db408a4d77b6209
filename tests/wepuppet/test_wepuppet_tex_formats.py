"""The `.tex` pixel formats beyond RGBA8888/DXT/RG88/R8: known values written by our encoder (or hand-built
words of the documented layout) decode exactly in every container; BC7 blocks of every mode decode as an
independent decoder (texture2ddecoder) decodes them; sprite sheets come apart into their frames."""
from __future__ import annotations

import struct

import numpy as np
import pytest
import texture2ddecoder

from skinbridge.core.errors import FormatError
from skinbridge.io_wepuppet.texture import bc7, pixel_formats as tf, tex

from support.bytes_compare import assert_same_bytes


def _texture(fmt: int, w: int, h: int, data: bytes, container: str = "TEXB0003") -> tex.Texture:
    t = tex.Texture(fmt, 0, w, h, w, h, 0, container, -1, images=[[tex.Mip(w, h, data, 0, len(data))]])
    return t


def _through_file(t: tex.Texture) -> tex.Texture:
    data = tex.write(t)
    back = tex.read(data)
    assert_same_bytes(tex.write(back), data, tex.read)
    return back


HALF_VALUES = np.array([0.0, -0.0, 1.0, -2.5, 0.333251953125, 65504.0, 6.103515625e-05, 1000.0], np.float32)


@pytest.mark.parametrize("fmt", sorted(tf.HALF_CHANNELS))
@pytest.mark.parametrize("container", tex.CONTAINERS)
def test_half_float_formats_decode_the_values_written(fmt, container):
    c = tf.CHANNELS[fmt]
    values = np.resize(HALF_VALUES, 3 * 5 * c).reshape(3, 5, c)  # every value is a float16 exactly
    t = _through_file(_texture(fmt, 5, 3, tf.encode_values(values, fmt), container))
    raw = tex.mip_bytes(t)
    assert len(raw) == 3 * 5 * 2 * c
    got = tf.decode_values(raw, 5, 3, fmt)
    assert np.array_equal(got.view(np.uint32), values.view(np.uint32))  # exact, the sign of −0 included
    rgba = tex.mip_pixels(t)
    first = np.clip(np.rint(values[..., 0] * 255), 0, 255)
    assert np.array_equal(rgba[..., 0], first) and np.array_equal(rgba[..., 1 if c < 3 else 0], first)


def test_integer_formats_hand_built_words_decode_as_documented():
    words = struct.pack("<4H", 0xF800, 0x07E0, 0x001F, 0x8410)  # red, green, blue, the 565 middle grey
    assert tex.mip_pixels(_texture(tf.FORMAT_RGB565, 4, 1, words)).tolist() == [
        [[255, 0, 0, 255], [0, 255, 0, 255], [0, 0, 255, 255], [132, 130, 132, 255]]]
    word = 1023 | 0 << 10 | 512 << 20 | 3 << 30
    t = _texture(tf.FORMAT_RGBA1010102, 1, 1, struct.pack("<I", word))
    assert tf.decode_values(tex.mip_bytes(t), 1, 1, t.format).tolist() == [[[1.0, 0.0, np.float32(512 / 1023), 1.0]]]
    assert tex.mip_pixels(t).tolist() == [[[255, 0, 128, 255]]]
    assert tex.mip_pixels(_texture(tf.FORMAT_RGB888, 2, 1, bytes([1, 2, 3, 250, 251, 252]))).tolist() == [
        [[1, 2, 3, 255], [250, 251, 252, 255]]]


@pytest.mark.parametrize("fmt,top", [(tf.FORMAT_RGB565, (31, 63, 31)), (tf.FORMAT_RGBA1010102, (1023,) * 3 + (3,)),
                                     (tf.FORMAT_RGB888, (255,) * 3)])
def test_integer_formats_decode_every_grid_value_written(fmt, top):
    rng = np.random.default_rng(fmt)
    levels = np.stack([rng.integers(0, t + 1, (4, 6)) for t in top], -1)
    levels[0, 0] = 0
    levels[0, 1] = top  # both ends of every channel
    values = (levels / np.array(top, np.float32)).astype(np.float32)
    t = _through_file(_texture(fmt, 6, 4, tf.encode_values(values, fmt)))
    back = tf.decode_values(tex.mip_bytes(t), 6, 4, fmt)
    assert np.array_equal(np.rint(back * np.array(top)), levels)


@pytest.mark.parametrize("fmt", tf.ENCODED)
def test_our_writer_makes_each_format_with_mips_that_decode_to_the_picture(fmt):
    """Opaque pixels on the format's grid: every level decodes to exactly the mip Wallpaper Engine would make."""
    rng = np.random.default_rng(fmt)
    px = rng.integers(0, 256, (16, 24, 4), dtype=np.uint8)
    px[..., 3] = 255
    if tf.CHANNELS[fmt] <= 2:
        px[..., 1] = px[..., 2] = px[..., 0]  # grey: what one or two channels show
        px[..., 3] = rng.integers(0, 256, (16, 24)) if tf.CHANNELS[fmt] == 2 else 255
    if fmt == tf.FORMAT_RGB565:
        px[..., :3] &= np.array([0xF8, 0xFC, 0xF8], np.uint8)  # on the 5-6-5 grid after the round trip below
        px[..., :3] = tex.decode_pixels(tf.encode_values(tf.from_rgba8(px, fmt), fmt), 24, 16, fmt)[..., :3]
    t = _through_file(tex.from_rgba(px, lz4=True, fmt=fmt))
    levels = tex.make_mips(px)
    assert len(t.images[0]) == len(levels) > 1
    for k, level in enumerate(levels):
        if fmt == tf.FORMAT_RGB565 and k:
            break  # a mean of 565 colours is not on the grid again
        assert np.array_equal(tex.mip_pixels(t, 0, k), level), (tf.NAMES[fmt], k)


def _bc7_blocks(n: int) -> np.ndarray:
    """Random blocks, each mode (the lowest set bit of byte 0) equally often."""
    rng = np.random.default_rng(7)
    blocks = rng.integers(0, 256, (n, 16), dtype=np.uint8)
    mode = np.arange(n) % 8
    keep = (0xFF << (mode + 1)) & 0xFF
    blocks[:, 0] = (blocks[:, 0] & keep) | (1 << mode)
    return blocks


def _reference_bc7(data: bytes, w: int, h: int) -> np.ndarray:
    return np.frombuffer(texture2ddecoder.decode_bc7(data, w, h), np.uint8).reshape(h, w, 4)[..., [2, 1, 0, 3]]


def test_bc7_blocks_of_every_mode_decode_as_an_independent_decoder_does():
    blocks = _bc7_blocks(2048)
    data = blocks.tobytes()
    ours = bc7.decode(data, 128, 64)
    assert np.array_equal(ours, _reference_bc7(data, 128, 64))  # BC7 decoding is exact: no error allowed
    t = _through_file(_texture(tf.FORMAT_BC7, 126, 63, data))  # a size that is not whole blocks is cut
    t.images[0][0] = tex.Mip(126, 63, tex.lz4_compress(data), 1, len(data))
    assert np.array_equal(tex.mip_pixels(_through_file(t)), ours[:63, :126])


def test_bc7_known_block_and_short_data():
    """Mode 6, endpoints 0 and full white with their P-bits set, every index at its largest: the anchor (texel 0,
    one bit short) at 7 is weight 30 of 64, (30 · 255 + 32) >> 6 = 120; the others at 15 are white."""
    bits = 1 << 6  # mode 6
    pos = 7
    for _ in range(4):  # R, G, B, A: endpoint 0 = 0, endpoint 1 = 127
        bits |= 127 << (pos + 7)
        pos += 14
    bits |= 0b11 << pos  # P-bits of both endpoints
    pos += 2
    bits |= ((1 << 3) - 1) << pos  # the anchor index: three bits
    bits |= ((1 << 60) - 1) << (pos + 3)
    block = bits.to_bytes(16, "little")
    expected = np.full((4, 4, 4), 255, np.uint8)
    expected[0, 0] = 120
    assert np.array_equal(bc7.decode(block, 4, 4), expected)
    assert np.array_equal(bc7.decode(block, 4, 4), _reference_bc7(block, 4, 4))
    with pytest.raises(FormatError, match="BC7"):
        bc7.decode(block, 8, 4)


def test_sprite_sheet_comes_apart_into_its_frames():
    sheet = np.zeros((8, 16, 4), np.uint8)
    sheet[:, :8] = (200, 10, 10, 255)
    sheet[:, 8:] = (10, 200, 10, 128)
    sheet[2, 3] = (1, 2, 3, 4)
    for tag, kind in (("TEXS0001", int), ("TEXS0002", float), ("TEXS0003", float)):
        t = tex.from_rgba(sheet, levels=1, flags=tex.FLAG_SPRITE)
        t.sprite_tag = tag
        t.frames = [tex.Frame(0, np.float32(0.125), tuple(kind(v) for v in (0, 0, 8, 0, 0, 8))),
                    tex.Frame(0, np.float32(0.5), tuple(kind(v) for v in (8, 0, 8, 0, 0, 8)))]
        frames = tex.sprite_frames(_through_file(t))
        assert [f[0] for f in frames] == [0.125, 0.5]
        assert np.array_equal(frames[0][1], sheet[:, :8]) and np.array_equal(frames[1][1], sheet[:, 8:])
    t.frames[1] = tex.Frame(0, np.float32(0.5), (12.0, 0.0, 8.0, 0.0, 0.0, 8.0))
    with pytest.raises(FormatError, match="outside"):
        tex.sprite_frames(t)
