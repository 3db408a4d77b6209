"""Wallpaper Engine `.mdl` / `.tex` codecs on the real files: structure, counts, byte-exact write-back,
texture mips as Wallpaper Engine makes them, DXT decoding, and bad input."""
from __future__ import annotations

import random
import struct

import numpy as np
import pytest

from skinbridge.core.errors import FormatError
from skinbridge.io_wepuppet.puppet import check, info, mdl
from skinbridge.io_wepuppet.texture import check as tex_check, tex
from support.bytes_compare import assert_same_bytes

MODELS = ["blacryu_goose_t_puppet.mdl", "blacryu_d2r_Hood_puppet.mdl", "blacryu_d2r_Wanderer_4096_DXT5_puppet.mdl",
          "blacryu_Arwing_static.mdl", "blacryu_ps2_cone_low_static_v4.mdl"]
GOOSE_TEX = "blacryu_goose_t.tex"


def _data(testdata, name) -> bytes:
    return (testdata / "wepuppet" / name).read_bytes()


def _section_spans(data: bytes) -> list[tuple[str, int, int]]:
    """(tag, start, stored end) of every tagged section, walked by the tags' end offsets only (not the codec)."""
    m = mdl.read(data)
    spans = []
    for i, s in enumerate(m.sections):
        start = m.offsets[f"section {i}"]
        end = struct.unpack_from("<I", data, start + len(s.tag) + 1)[0]
        spans.append((s.tag, start, end))
    return spans


@pytest.mark.parametrize("name", MODELS)
def test_every_model_reads_each_section_to_its_end_and_writes_back_identical(testdata, name):
    data = _data(testdata, name)
    m = mdl.read(data)
    spans = _section_spans(data)
    for (tag, start, end), nxt in zip(spans, spans[1:] + [(None, None, None)]):
        # the parsed section ends where the next tag (or the end tag) begins
        following = nxt[1] if nxt[0] else len(data) - len(m.tail) - 1
        assert end == following, (tag, end, following)
    assert_same_bytes(mdl.write(m), data, mdl.read)
    if m.version >= 13:
        assert m.end_tag and len(data) == 1 << 20 and m.tail == bytes(len(m.tail))
    else:
        assert not m.tail and len(data) == 1185907


EXPECTED = {
    "blacryu_goose_t_puppet.mdl": (239, 412, 24, [("Animation 1", 2.0, 31, 24)], 1),
    "blacryu_d2r_Hood_puppet.mdl": (859, 1481, 39, [("Wind Right", 8.0, 40, 39), ("Wind Left", 8.0, 40, 39)], 1),
    "blacryu_d2r_Wanderer_4096_DXT5_puppet.mdl": (446, 762, 0, [], 1),
    "blacryu_Arwing_static.mdl": (467, 178, 0, [], 15),
    "blacryu_ps2_cone_low_static_v4.mdl": (20673, 32256, 0, [], 1),
}


@pytest.mark.parametrize("name", MODELS)
def test_info_counts(testdata, name):
    d = info.info(_data(testdata, name), name)
    vertices, triangles, bones, clips, meshes = EXPECTED[name]
    assert (d["vertices"], d["triangles"], d["bones"], len(d["meshes"])) == (vertices, triangles, bones, meshes)
    assert [(c["name"], c["length"], c["frames"], c["tracks"]) for c in d["animations"]] == clips
    if name.endswith("_v4.mdl"):
        assert d["format"] == "MDLV0004" and d["padding"] == 0 and not d["end_tag"]


def test_goose_vertex_layout_has_explicit_u32_bone_indices(testdata):
    m = mdl.read(_data(testdata, "blacryu_goose_t_puppet.mdl"))
    v = m.meshes[0].vertices
    assert v.dtype.itemsize == 52 and v.dtype.fields["joints"][1] == 12 and v.dtype.fields["weights"][1] == 28
    assert v.dtype.fields["uv0"][1] == 44
    assert v["position"][0].tolist() == [-55.0, 47.5, 0.0]
    assert v["joints"][0].tolist() == [14, 8, 0, 0] and v["weights"][0].tolist() == [1, 0, 0, 0]
    assert [b.name for b in m.skeleton.bones[:2]] == ["Root", "Neck 1"]
    assert all(b.parent < i for i, b in enumerate(m.skeleton.bones))


@pytest.mark.parametrize("name", MODELS + [GOOSE_TEX])
def test_check_is_clean_and_reports_identical_roundtrip(testdata, name):
    lines = []
    checker = tex_check.check if name == GOOSE_TEX else check.check
    assert checker(name, _data(testdata, name), lines.append) == 0
    assert lines[-2:] == ["0 error(s), 0 warning(s)", "roundtrip: identical"]


# -- textures -----------------------------------------------------------------------------------------------

def _floor_mean_2x2(a: np.ndarray) -> np.ndarray:
    h, w = a.shape[0] // 2, a.shape[1] // 2
    out = np.zeros((h, w, a.shape[2]), np.uint8)
    for y in range(h):  # deliberately the plain definition, one block at a time
        for x in range(w):
            block = a[2 * y:2 * y + 2, 2 * x:2 * x + 2].reshape(4, -1).astype(int)
            out[y, x] = block.sum(axis=0) // 4
    return out


def test_goose_texture_mips_are_floor_means_and_our_writer_makes_them_identical(testdata):
    data = _data(testdata, GOOSE_TEX)
    t = tex.read(data)
    assert (t.container, t.format, t.image_format) == ("TEXB0003", tex.FORMAT_RGBA8888, -1)
    mips = t.images[0]
    assert [(m.width, m.height) for m in mips] == [(150, 150), (75, 75), (37, 37), (18, 18), (9, 9)]
    assert [m.lz4 for m in mips] == [1, 1, 0, 0, 0]
    levels = [tex.mip_pixels(t, 0, k) for k in range(5)]
    for above, level in zip(levels, levels[1:]):
        assert np.array_equal(level, _floor_mean_2x2(above))
    ours = tex.from_rgba(levels[0])
    assert len(ours.images[0]) == 5
    for k in range(1, 5):
        assert ours.images[0][k].data == tex.mip_bytes(t, 0, k)
    assert_same_bytes(tex.write(t), data, tex.read)
    again = tex.read(tex.write(tex.from_rgba(levels[0], lz4=True)))
    assert [m.lz4 for m in again.images[0]][:2] == [1, 1]
    assert np.array_equal(tex.mip_pixels(again, 0, 0), levels[0])


def test_lz4_overlapping_matches_and_long_lengths():
    rng = np.random.default_rng(3)
    data = bytes(rng.integers(0, 4, 5000, dtype=np.uint8)) + b"ab" * 700 + bytes(300) + b"xyz"
    packed = tex.lz4_compress(data)
    assert len(packed) < len(data)
    assert tex.lz4_decompress(packed, len(data)) == data
    # hand-made: 1 literal 'a', then a match of offset 1, length 4 + 15 + 255 + 3 = 277, then literals 'END!!'
    block = bytes([0x1F]) + b"a" + b"\x01\x00" + bytes([255, 3]) + bytes([0x50]) + b"END!!"
    assert tex.lz4_decompress(block, 1 + 277 + 5) == b"a" * 278 + b"END!!"
    with pytest.raises(FormatError):
        tex.lz4_decompress(block, 100)  # more output than declared
    with pytest.raises(FormatError):
        tex.lz4_decompress(b"\x10a\x05\x00", 10)  # offset beyond what was written


def _dxt_blocks(fmt: int, count: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    size = 8 if fmt == tex.FORMAT_DXT1 else 16
    blocks = rng.integers(0, 256, (count, size), dtype=np.uint8)
    if fmt == tex.FORMAT_DXT1:
        blocks[: count // 2, [0, 1, 2, 3]] = blocks[: count // 2, [2, 3, 0, 1]]  # both colour orders
    else:
        blocks[: count // 2, [0, 1]] = blocks[: count // 2, [1, 0]]
    return blocks.tobytes()


def _dds(data: bytes, w: int, h: int, fourcc: bytes) -> bytes:
    header = struct.pack("<4s7I44x", b"DDS ", 124, 0x1 | 0x2 | 0x4 | 0x1000 | 0x80000, h, w, len(data), 0, 1)
    pixel_format = struct.pack("<2I4s5I", 32, 0x4, fourcc, 0, 0, 0, 0, 0)
    caps = struct.pack("<5I", 0x1000, 0, 0, 0, 0)
    return header + pixel_format + caps + data


@pytest.mark.parametrize("fmt,fourcc", [(tex.FORMAT_DXT1, b"DXT1"), (tex.FORMAT_DXT3, b"DXT3"),
                                        (tex.FORMAT_DXT5, b"DXT5")])
@pytest.mark.blender
def test_dxt_decoding_matches_blenders_dds_loader(tmp_path, fmt, fourcc):
    bpy = pytest.importorskip("bpy")
    w, h = 128, 64
    data = _dxt_blocks(fmt, (w // 4) * (h // 4), seed=fmt)
    ours = tex.decode_dxt(data, w, h, fmt)
    path = tmp_path / f"blocks_{fourcc.decode()}.dds"
    path.write_bytes(_dds(data, w, h, fourcc))
    img = bpy.data.images.load(str(path))
    try:
        theirs = np.empty(w * h * 4, np.float32)
        img.pixels.foreach_get(theirs)
    finally:
        bpy.data.images.remove(img)
    theirs = np.round(theirs.reshape(h, w, 4) * 255).astype(np.int16)[::-1]  # Blender: bottom row first
    assert np.array_equal(ours, theirs)


def test_narrow_formats_decode():
    rg = bytes([10, 200, 30, 40])
    assert tex.decode_pixels(rg, 2, 1, tex.FORMAT_RG88).tolist() == [[[10, 10, 10, 200], [30, 30, 30, 40]]]
    assert tex.decode_pixels(b"\x05\x06", 1, 2, tex.FORMAT_R8).tolist() == [[[5, 5, 5, 255]], [[6, 6, 6, 255]]]


def test_sprite_frames_and_texb_versions_round_trip():
    t = tex.from_rgba(np.zeros((8, 8, 4), np.uint8), levels=2, flags=tex.FLAG_SPRITE)
    t.sprite_tag = "TEXS0003"
    t.sprite_size = (4, 4)
    t.frames = [tex.Frame(0, np.float32(0.1), (0.0, 0.0, 4.0, 0.0, 0.0, 4.0)),
                tex.Frame(0, np.float32(0.1), (4.0, 0.0, 4.0, 0.0, 0.0, 4.0))]
    for container in tex.CONTAINERS[1:]:
        t.container = container
        data = tex.write(t)
        back = tex.read(data)
        assert len(back.frames) == 2 and back.sprite_size == (4, 4)
        assert_same_bytes(tex.write(back), data, tex.read)
        assert back.frames[1].values[0] == 4.0


# -- bad input ----------------------------------------------------------------------------------------------

def _boundaries(data: bytes) -> list[int]:
    m = mdl.read(data)
    return sorted({at for key, at in m.offsets.items() if at is not None and 0 < at < len(data) - len(m.tail)})


@pytest.mark.parametrize("name", MODELS)
def test_model_cut_at_every_record_boundary_is_refused(testdata, name):
    """Cut at the start of every mesh, vertex/index block, bone, clip, track block and section, and one byte
    into each: refused with offset and field, except a cut exactly between two sections (the sections are
    optional), which reads with a warning."""
    data = _data(testdata, name)
    m = mdl.read(data)
    end_tag_at = len(data) - len(m.tail) - (1 if m.end_tag else 0)
    section_starts = {m.offsets[f"section {i}"] for i in range(len(m.sections))}
    cuts = sorted({c for at in _boundaries(data) for c in (at, at + 1)} | {end_tag_at - 1})
    refused = 0
    for at in cuts:
        if at >= end_tag_at and m.version >= 13:
            continue
        if at in section_starts:
            cut = mdl.read(data[:at])
            assert not cut.end_tag and cut.warnings
            assert_same_bytes(mdl.write(cut), data[:at], mdl.read)
            continue
        with pytest.raises(FormatError) as e:
            mdl.read(data[:at])
        assert e.value.offset is not None and e.value.field
        refused += 1
    assert refused > 5


@pytest.mark.parametrize("name", MODELS[:4])
def test_model_cut_inside_the_padding_or_at_the_end_tag_reads(testdata, name):
    data = _data(testdata, name)
    m = mdl.read(data)
    end = len(data) - len(m.tail)
    for at in (end, end + 1, end + 4096, len(data) - 1):
        cut = mdl.read(data[:at])
        assert cut.end_tag and len(cut.tail) == at - end
        assert_same_bytes(mdl.write(cut), data[:at], mdl.read)
    missing = mdl.read(data[:end - 1])
    assert not missing.end_tag and missing.warnings
    assert_same_bytes(mdl.write(missing), data[:end - 1], mdl.read)


def _flip_cases(data: bytes, end: int, count: int, seed: int):
    rng = random.Random(seed)
    for _ in range(count):
        b = bytearray(data)
        for _ in range(rng.choice((1, 1, 2, 4))):
            at = rng.randrange(end)
            b[at] ^= 1 << rng.randrange(8) if rng.random() < 0.7 else rng.randrange(1, 256)
        yield bytes(b)


@pytest.mark.parametrize("name", MODELS[:4])
def test_model_byte_flips_before_the_end_tag_read_or_raise_format_error(testdata, name):
    data = _data(testdata, name)
    m = mdl.read(data)
    end = len(data) - len(m.tail)
    read = refused = 0
    for bad in _flip_cases(data, end, 300, seed=len(name)):
        try:
            back = mdl.read(bad)
        except FormatError:
            refused += 1
            continue
        read += 1
        assert_same_bytes(mdl.write(back), bad, mdl.read)
        lines = []
        check.check(name, bad, lines.append)
        assert lines[-1] == "roundtrip: identical"
    assert read and refused


def test_texture_cut_at_every_mip_and_flipped_bytes(testdata):
    data = _data(testdata, GOOSE_TEX)
    t = tex.read(data)
    for key, at in t.offsets.items():
        with pytest.raises(FormatError):
            tex.read(data[:at + 1])
    for bad in _flip_cases(data, len(data), 300, seed=5):
        try:
            back = tex.read(bad)
        except FormatError:
            continue
        assert_same_bytes(tex.write(back), bad, tex.read)
        for k in range(len(back.images[0])):
            try:
                tex.mip_pixels(back, 0, k)
            except FormatError:
                pass


def test_layout_selecting_values_out_of_range_are_refused(testdata):
    data = bytearray(_data(testdata, "blacryu_goose_t_puppet.mdl"))
    for patch, field in ((lambda d: d.__setitem__(slice(4, 8), b"0024"), "version"),
                         (lambda d: struct.pack_into("<I", d, 9, 0x80000009), "format"),
                         (lambda d: struct.pack_into("<I", d, 17, 1 << 30), "mesh count")):
        bad = bytearray(data)
        patch(bad)
        with pytest.raises(FormatError) as e:
            mdl.read(bytes(bad))
        assert field in e.value.field
    spans = _section_spans(bytes(data))
    tag, start, end = spans[0]
    for wrong in (end - 1, end + 1, start, len(data) + 1):
        bad = bytearray(data)
        struct.pack_into("<I", bad, start + len(tag) + 1, wrong)
        with pytest.raises(FormatError):
            mdl.read(bytes(bad))


def _small_tex(**fields) -> tex.Texture:
    t = tex.from_rgba(np.full((4, 4, 4), 9, np.uint8), levels=1)
    for k, v in fields.items():
        setattr(t, k, v)
    return t


def test_check_reports_a_header_width_of_minus_one():
    data = tex.write(_small_tex(texture_width=-1))
    t = tex.read(data)  # read keeps it (write-back is byte-identical); check names it
    errors = [f for f in tex_check.validate_texture(t) if f.severity == "error"]
    assert [(f.field, f.offset) for f in errors] == [("texture width", t.offsets["format"] + 8)]
    assert struct.unpack_from("<i", data, errors[0].offset)[0] == -1
    assert "-1 is outside" in errors[0].message
    assert tex_check.check("w.tex", data, lambda line: None) == 1


@pytest.mark.parametrize("fields,reason", [
    ({"container": "TEXB0004", "video": 1}, "video texture"),
    ({"container": "TEXB0004", "flags": tex.FLAG_VIDEO}, "video texture")])
def test_video_textures_are_kept_and_named_not_decoded(fields, reason):
    """Their mips are an MP4 file: no LZ4 error about sizes, one line saying what the texture is."""
    t = _small_tex(**fields)
    t.images[0][0].data = b"\x00\x00\x00\x20ftypisom"
    data = tex.write(t)
    back = tex.read(data)
    assert tex.write(back) == data
    with pytest.raises(FormatError, match=reason) as e:
        tex.mip_bytes(back, 0, 0)
    assert "\n" not in str(e.value) and "LZ4" not in str(e.value)
    findings = tex_check.validate_texture(back)
    assert [(f.severity, f.message) for f in findings] == [("warning", tex.not_decoded(back))]
    assert reason in findings[0].message
