"""PMX codec: byte-identical round trips of the real samples, a generated model with every record kind, index
sizes and versions on write, and bad input (truncations and byte flips) per docs/architecture.md §7.1."""
from __future__ import annotations

import dataclasses
import random
import struct

import numpy as np
import pytest

from skinbridge.core.errors import ExportError, FormatError
from skinbridge.io_pmx.model import info as pmx_info
from skinbridge.io_pmx.model import pmx
from support.bytes_compare import assert_same_bytes, round_trip
from support.pmx_samples import LUKA, SAMPLES, build_full_model, build_vertices


def sample_bytes(testdata, name: str) -> bytes:
    return (testdata / "pmx" / name).read_bytes()


def test_samples_listed_are_all_the_samples(testdata):
    assert sorted(p.name for p in (testdata / "pmx").glob("*.pmx")) == sorted(SAMPLES)


# ------------------------------------------------------------------------------------------------------------
# Real files

@pytest.mark.parametrize("name", SAMPLES)
def test_sample_reads_and_writes_back_byte_identical(testdata, name):
    round_trip(sample_bytes(testdata, name), pmx.read, pmx.write)


def test_luka_facts_from_the_reference(testdata):
    """Facts stated by ../shared/testdata/README.md and docs/mmd.md §5.2, §5.3 about Luka."""
    m = pmx.read(sample_bytes(testdata, LUKA))
    assert m.version == np.float32(2.0)
    assert m.encoding == pmx.ENCODING_UTF16
    assert m.additional_uvs == 4
    assert m.index_sizes.bone == 2
    assert len(m.bones) == 188
    names = [b.name for b in m.bones]
    assert "上半身2" in names
    left_ik = m.bones[names.index("左足ＩＫ")]
    assert names[left_ik.ik.target] == "左足首"
    assert left_ik.ik.loop == 40
    assert [names[link.bone] for link in left_ik.ik.links] == ["左ひざ", "左足"]
    knee = left_ik.ik.links[0]
    # IK limits are the raw float3 of the file, in PMX semantics: lower (-π,0,0), upper (-0.5°,0,0)
    np.testing.assert_array_equal(knee.lower, np.array([-np.pi, 0, 0], np.float32))
    np.testing.assert_allclose(knee.upper, [-0.0087266, 0, 0], atol=1e-7)
    assert not left_ik.ik.links[1].has_limit
    toe_ik = m.bones[names.index("左つま先ＩＫ")]
    assert (toe_ik.ik.loop, round(float(toe_ik.ik.limit_angle), 5)) == (10, 2.0)


def test_pmx21_utf8_sample(testdata):
    data = sample_bytes(testdata, "mlibgo_sample_pmx21_utf8.pmx")
    m = pmx.read(data)
    assert data[4:8] == bytes.fromhex("66660640")  # 2.0999999, as the README says
    assert m.is_pmx21 and m.encoding == pmx.ENCODING_UTF8
    assert len(m.soft_bodies) == 1
    assert m.soft_bodies[0].name == "新規SoftBody1"


def test_bone_flag_sample(testdata):
    m = pmx.read(sample_bytes(testdata, "babylonmmd_bone_flag_test.pmx"))
    assert len(m.vertices) == 0
    assert sorted(b.flags for b in m.bones if b.flags & 0x300) == [0x31A, 0x39A]
    assert all(b.append_ratio is not None for b in m.bones if b.flags & 0x300)


def test_info_luka(testdata):
    d = pmx_info.info(testdata / "pmx" / LUKA)
    assert d["format"] == "PMX" and d["version"] == 2.0 and d["encoding"] == "UTF-16LE"
    assert d["bones"] == 188 and d["additional_uvs"] == 4 and d["soft_bodies"] == 0
    assert d["animations"] == [] and d["warnings"] == []
    for key in ("vertices", "triangles", "materials", "morphs", "rigid_bodies", "joints"):
        assert isinstance(d[key], int)
    ik = {row["bone"]: row for row in d["ik"]}
    assert set(ik) == {"左足ＩＫ", "右足ＩＫ", "左つま先ＩＫ", "右つま先ＩＫ"}
    assert ik["右足ＩＫ"]["target"] == "右足首"
    assert ik["右足ＩＫ"]["links"] == ["右ひざ", "右足"]
    assert ik["右足ＩＫ"]["loop"] == 40
    assert ik["右つま先ＩＫ"]["links"] == ["右足首"]


def test_info_pmx21(testdata):
    d = pmx_info.info((testdata / "pmx" / "mlibgo_sample_pmx21_utf8.pmx").read_bytes())
    assert (d["version"], d["encoding"], d["soft_bodies"], d["ik"]) == (2.1, "UTF-8", 1, [])


# ------------------------------------------------------------------------------------------------------------
# A generated model that uses every record kind

def assert_same(a, b, path: str = "model") -> None:
    """Field by field, floats compared by their float32 bits."""
    if dataclasses.is_dataclass(a):
        assert type(a) is type(b), path
        for f in dataclasses.fields(a):
            if f.name in ("at", "version", "index_sizes", "warnings", "vertex_offsets"):
                continue
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, f"{path}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        assert a.tobytes() == b.tobytes(), f"{path}: {a} != {b}"
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for k, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{k}]")
    elif isinstance(a, (float, np.floating)) or isinstance(b, (float, np.floating)):
        assert np.float32(a).tobytes() == np.float32(b).tobytes(), f"{path}: {a} != {b}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


@pytest.mark.parametrize("encoding", [pmx.ENCODING_UTF16, pmx.ENCODING_UTF8])
def test_full_model_pmx21_written_and_read_back_equal(encoding):
    model = build_full_model(encoding)
    data = pmx.write(model)
    assert data[:4] == b"PMX "
    assert data[4:8] == bytes.fromhex("66660640")  # 2.1: the model holds QDEF, flip, impulse, soft body
    assert data[8] == 8 and data[9] == encoding and data[10] == 2
    assert list(data[11:17]) == [1, 1, 1, 1, 1, 1]  # every count is small
    back = pmx.read(data)
    assert back.warnings == []
    assert_same(model, back)
    assert_same_bytes(pmx.write(back), data, pmx.read)
    assert np.bincount(back.vertices["deform"], minlength=5).tolist() == [2, 2, 2, 2, 2]
    assert sorted(mo.kind for mo in back.morphs) == list(range(11))


def test_model_without_21_data_is_written_as_20():
    model = build_full_model(pmx21=False)
    data = pmx.write(model)
    assert struct.unpack_from("<f", data, 4)[0] == 2.0
    back = pmx.read(data)
    assert_same(model, back)
    assert back.soft_bodies == []


def test_vertex_gather_keeps_order_across_chunks(monkeypatch):
    monkeypatch.setattr(pmx, "_GATHER_CHUNK", 7)
    rng = np.random.default_rng(1)
    m = pmx.PmxModel(bones=[pmx.PmxBone(f"b{i}", tail_bone=-1, flags=1) for i in range(5)])
    m.vertices = build_vertices(rng, list(rng.integers(0, 5, 300)), 5, additional_uvs=1)
    back = pmx.read(pmx.write(m))
    assert_same(m.vertices, back.vertices)


def minimal_model(n_vertices: int, n_bones: int) -> pmx.PmxModel:
    m = pmx.PmxModel(bones=[pmx.PmxBone(f"b{i}", tail_bone=-1, flags=1) for i in range(n_bones)])
    v = np.zeros(n_vertices, pmx.vertex_dtype(0))
    v["bones"] = -1
    v["bones"][:, 0] = 0
    v["weights"][:, 0] = 1
    m.vertices = v
    return m


@pytest.mark.parametrize("n_vertices, n_bones, vertex_size, bone_size", [
    (255, 127, 1, 1), (256, 128, 2, 2), (65535, 32767, 2, 2), (65536, 32768, 4, 4),
])
def test_index_sizes_are_the_smallest_the_counts_allow(n_vertices, n_bones, vertex_size, bone_size):
    m = minimal_model(n_vertices, 1)
    m.bones = [pmx.PmxBone("b", tail_bone=-1, flags=1)] * n_bones
    data = pmx.write(m)
    assert (data[11], data[14]) == (vertex_size, bone_size)
    assert list(data[12:14]) == [1, 1] and list(data[15:17]) == [1, 1]  # no texture, material, morph, body


def test_vertex_indices_are_unsigned_and_bone_indices_signed():
    m = minimal_model(200, 1)
    m.vertices["bones"][:, 0] = -1  # BDEF1 with no bone: kept as -1 (0xFF)
    m.indices = np.array([199, 198, 0], np.int32)
    data = pmx.write(m)
    # header 17 bytes + 4 empty texts = 33; vertex count at 33; 200 BDEF1 vertices of 32+1+1+4 bytes
    vertex0 = 37
    assert data[vertex0 + 32:vertex0 + 34] == bytes([0, 0xFF])
    indices_at = vertex0 + 200 * 38 + 4
    assert struct.unpack_from("<i", data, indices_at - 4)[0] == 3
    assert data[indices_at:indices_at + 3] == bytes([199, 198, 0])
    back = pmx.read(data)
    assert back.indices.tolist() == [199, 198, 0]
    assert back.vertices["bones"][0].tolist() == [-1, -1, -1, -1]


def test_kept_index_sizes_are_reused_and_grown_when_needed(testdata):
    data = sample_bytes(testdata, "babylonmmd_constraint_test.pmx")
    m = pmx.read(data)
    assert list(data[11:17]) == [1] * 6
    m.index_sizes = pmx.IndexSizes(4, 4, 4, 4, 4, 4)  # a file that used 4-byte indices keeps them
    assert list(pmx.write(m)[11:17]) == [4] * 6
    m = pmx.read(data)
    m.bones += [pmx.PmxBone(f"extra{i}", tail_bone=-1, flags=1) for i in range(200)]
    m.bones[-1].parent = len(m.bones) - 2  # 200 does not fit a signed byte
    out = pmx.write(m)
    assert out[14] == 2 and list(out[11:14]) == [1, 1, 1]
    assert pmx.read(out).bones[-1].parent == len(m.bones) - 2


def test_version_is_compared_with_a_tolerance(testdata):
    data = bytearray(sample_bytes(testdata, "babylonmmd_constraint_test.pmx"))
    struct.pack_into("<f", data, 4, 2.0000002)
    assert pmx.write(pmx.read(bytes(data))) == bytes(data)
    struct.pack_into("<f", data, 4, 2.2)
    with pytest.raises(FormatError) as e:
        pmx.read(bytes(data))
    assert (e.value.offset, e.value.field) == (4, "version")


def test_writer_refuses_what_it_cannot_encode():
    m = build_full_model(pmx21=False)
    m.bones[4].ik = None  # IK flag set, no IK data
    with pytest.raises(ExportError, match="bone 4"):
        pmx.write(m)
    m = build_full_model(pmx21=False)
    m.vertices["deform"][3] = 7
    with pytest.raises(ExportError, match="vertex 3"):
        pmx.write(m)


# ------------------------------------------------------------------------------------------------------------
# Bad input (docs/architecture.md §7.1): every cut and flip either reads or raises FormatError

def _read_or_format_error(data: bytes) -> pmx.PmxModel | None:
    try:
        return pmx.read(data)
    except FormatError:
        return None


@pytest.mark.parametrize("name", SAMPLES)
def test_truncations_read_or_raise_format_error(testdata, name):
    data = sample_bytes(testdata, name)
    cuts = sorted({len(data) * k // 64 for k in range(64)} | {len(data) - 1})
    for cut in cuts:
        assert _read_or_format_error(data[:cut]) is None, f"cut at {cut} read without error"


@pytest.mark.parametrize("name", SAMPLES)
@pytest.mark.slow
def test_byte_flips_read_or_raise_format_error(testdata, name):
    from skinbridge.io_pmx.model.validate import validate

    data = sample_bytes(testdata, name)
    rnd = random.Random(f"pmx-flips-{name}")
    n = 200 if len(data) > 100_000 else 300
    for trial in range(n):
        corrupt = bytearray(data)
        # half anywhere, half in the last fifth, where the variable-length records are in Luka
        low = 0 if trial % 2 == 0 else len(data) * 4 // 5
        for _ in range(rnd.randint(1, 3)):
            corrupt[rnd.randrange(low, len(data))] ^= rnd.randrange(1, 256)
        corrupt = bytes(corrupt)
        model = _read_or_format_error(corrupt)
        if model is not None:
            validate(model, for_export=False)  # never raises for bad values
            assert_same_bytes(pmx.write(model), corrupt, pmx.read,
                              what=f"trial {trial}: read but did not write back identical")


def test_extra_globals_and_trailing_bytes_are_kept_with_a_warning(testdata):
    data = sample_bytes(testdata, "babylonmmd_constraint_test.pmx")
    odd = data[:8] + bytes([9]) + data[9:17] + b"\x07" + data[17:] + b"tail"
    m = pmx.read(odd)
    assert m.extra_globals == b"\x07" and m.trailing == b"tail"
    assert len(m.warnings) == 2
    assert_same_bytes(pmx.write(m), odd, pmx.read)


@pytest.mark.parametrize("offset, value, field", [
    (8, 7, "globals count"), (9, 2, "encoding"), (10, 5, "additional UV count"), (14, 3, "bone index size"),
])
def test_layout_selecting_header_values_out_of_range(testdata, offset, value, field):
    data = bytearray(sample_bytes(testdata, "babylonmmd_constraint_test.pmx"))
    data[offset] = value
    with pytest.raises(FormatError) as e:
        pmx.read(bytes(data))
    assert (e.value.offset, e.value.field) == (offset, field)
