"""tests/support/bytes_compare.py: a one-byte change planted in a real PMX and a real VMD is reported with the field
the codec reads at that offset (core/binary.py `trace_reads`), and tracing leaves Reader as it was."""
from __future__ import annotations

import pytest

from skinbridge.core import binary
from skinbridge.io_pmx.model import pmx
from skinbridge.io_pmx.motion import vmd
from support.bytes_compare import assert_same_bytes


def _planted(data: bytes, offset: int) -> bytes:
    out = bytearray(data)
    out[offset] ^= 0x40
    return bytes(out)


def _message(got: bytes, want: bytes, layout) -> str:
    with pytest.raises(AssertionError) as failed:
        assert_same_bytes(got, want, layout)
    return str(failed.value)


def test_a_bone_position_byte_is_named_with_its_bone_and_component(testdata):
    want = (testdata / "pmx" / "mmdtools_megurine_luka.pmx").read_bytes()
    bone = pmx.read(want).bones[7]
    at = bone.at["position"] + 4 + 3  # the top byte of y
    message = _message(_planted(want, at), want, pmx.read)
    assert f"bytes differ first at offset {at} " in message
    assert "field 'bone 7' .position[1]" in message, message
    assert f"bytes {at - 3}..{at}" in message, message


def test_a_vmd_rotation_byte_is_named_with_its_key_and_component(testdata):
    want = (testdata / "pmx" / "mlibgo_shagamu.vmd").read_bytes()
    first_key = 30 + 20 + 4  # signature, model name, bone key count (docs/mmd.md §3.1)
    at = first_key + 5 * vmd.BONE_KEY.itemsize + vmd.BONE_KEY.fields["rotation"][1] + 2 * 4
    message = _message(_planted(want, at), want, vmd.read)
    assert "field 'bone keys' item 5 .rotation[2]" in message, message


def test_a_vmd_interpolation_byte_is_named_with_its_index(testdata):
    want = (testdata / "pmx" / "mlibgo_shagamu.vmd").read_bytes()
    at = 30 + 20 + 4 + vmd.BONE_KEY.fields["interpolation"][1] + 17
    assert "field 'bone keys' item 0 .interpolation[17]" in _message(_planted(want, at), want, vmd.read)


def test_bytes_the_codec_reads_without_reader_name_the_field_before(testdata):
    want = (testdata / "pmx" / "mmdtools_megurine_luka.pmx").read_bytes()
    at = pmx.read(want).at["vertices"] + 1  # the vertex walk indexes the buffer directly
    message = _message(_planted(want, at), want, pmx.read)
    assert "in no field" in message and "after field 'vertex count'" in message, message


def test_equal_bytes_pass_and_a_longer_or_shorter_file_is_told(testdata):
    want = (testdata / "pmx" / "mlibgo_shagamu.vmd").read_bytes()
    assert_same_bytes(bytes(want), want, vmd.read)
    assert "got has 2 bytes more, after the end of want" in _message(want + b"\0\0", want, vmd.read)
    short = _message(want[:-3], want, vmd.read)
    assert f"got {len(want) - 3} bytes, want {len(want)}: field 'property key count'" in short, short


def test_tracing_is_off_outside_its_block():
    plain = binary.Reader.need, binary.Reader.array, binary.Reader.cstring
    with binary.trace_reads() as reads:
        r = binary.Reader(b"\x01\x00abc\0" + bytes(8))
        r.u16("count"), r.cstring("name"), r.array("<f4", 2, "pair")
    assert [(x.offset, x.size, x.field) for x in reads] == [(0, 2, "count"), (2, 4, "name"), (6, 8, "pair")]
    assert (binary.Reader.need, binary.Reader.array, binary.Reader.cstring) == plain
    binary.Reader(bytes(4)).u32("after")
    assert len(reads) == 3
