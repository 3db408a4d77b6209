"""GR2 reader, Oodle1 decompressor and skeletons on the shared samples (read in place), and hostile headers.

The skeleton invariant is the file's own: world transforms composed from the local transforms must agree with
the inverse world transforms the exporter stored, which our code only reads.
"""
from __future__ import annotations

import pathlib
import struct
import zlib

import numpy as np
import pytest

from skinbridge import formats
from skinbridge.core.errors import FormatError
from skinbridge.io_mdb.gr2 import check as gr2_check, gr2, info as gr2_info, oodle1, skeleton as gr2_skeleton

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"
ANIMATION = GR2_DIR / "ovr_p_ddf_glaive01.GR2"
SAMPLES = [SKELETON, ANIMATION]
SECTION_TABLE = 88  # header (32) and info (56)


def _section_headers(data: bytes) -> list[tuple[int, ...]]:
    count = struct.unpack_from("<I", data, 48)[0]
    return [struct.unpack_from("<11I", data, SECTION_TABLE + 44 * i) for i in range(count)]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sections_decompress_to_the_sizes_and_checksum_the_file_carries(path):
    data = path.read_bytes()
    assert zlib.crc32(data[SECTION_TABLE:]) == struct.unpack_from("<I", data, 40)[0]
    headers = _section_headers(data)
    assert any(h[0] == 2 and h[2] > 0 for h in headers)  # Oodle1 sections with data
    f = gr2.read(data)
    assert f.warnings == [] and f.crc == f.computed_crc
    for h, s in zip(headers, f.sections, strict=True):
        assert len(s.data) == h[3]
        # every relocation slot and target lies in the decompressed sections
        assert all(o + 4 <= h[3] for o in s.pointers)


def test_decompressed_bytes_hold_the_files_names():
    f = gr2.read(SKELETON.read_bytes())
    text = b"".join(s.data for s in f.sections)
    for name in (b"P_HHF_skel\0", b"Ribcage\0", b"ap_hand_left\0", b"3D Studio MAX\0"):
        assert name in text


def test_skeleton_names_and_count_are_the_roots():
    f = gr2.read(SKELETON.read_bytes())
    root_bones = f.root["Skeletons"][0]["Bones"]
    (skeleton,) = gr2_skeleton.skeletons(f)
    assert skeleton.name == "P_HHF_skel" == f.root["Skeletons"][0]["Name"]
    assert len(skeleton.bones) == len(root_bones) == 88
    assert skeleton.names == [b["Name"] for b in root_bones]
    assert skeleton.names[0] == "P_HHF_skel" and "Ribcage" in skeleton.names
    assert skeleton.units_per_metre == 100.0
    parents = [b.parent for b in skeleton.bones]
    assert parents[0] == -1 and all(-1 <= p < i for i, p in enumerate(parents))


def test_world_transforms_agree_with_the_stored_inverse_world_transforms():
    (skeleton,) = gr2_skeleton.skeletons(gr2.read(SKELETON.read_bytes()))
    world = skeleton.world_matrices()
    stored_world = np.linalg.inv(np.stack([b.inverse_world for b in skeleton.bones]).astype(np.float64))
    assert np.abs(world[:, :3, :3] - stored_world[:, :3, :3]).max() < 1e-3
    extent = np.abs(stored_world[:, :3, 3]).max()
    assert 100 < extent < 300  # centimetres: a character
    assert np.abs(world[:, :3, 3] - stored_world[:, :3, 3]).max() < 1e-4 * extent
    assert np.allclose(stored_world[:, 3], [0, 0, 0, 1], atol=1e-6)


def test_animation_file_has_no_skeleton_and_one_animation():
    f = gr2.read(ANIMATION.read_bytes())
    assert gr2_skeleton.skeletons(f) == []
    (animation,) = f.root["Animations"]
    assert animation["Duration"] > 0 and len(animation["TrackGroups"]) >= 1
    assert gr2_skeleton.semantic(f) == []


def test_registry_info_and_check(capsys):
    assert formats.identify_file(SKELETON).name == "gr2"
    summary = gr2_info.info(SKELETON.read_bytes(), str(SKELETON))
    assert [s["decompressed"] for s in summary["sections"]] == [h[3] for h in _section_headers(SKELETON.read_bytes())]
    assert summary["crc32"]["stored"] == summary["crc32"]["computed"]
    assert "Skeletons" in [r["name"] for r in summary["root"]]
    assert summary["skeletons"][0]["bones"] == 88
    for path in SAMPLES:
        lines: list[str] = []
        assert gr2_check.check(str(path), path.read_bytes(), lines.append) == 0
        assert lines[-2] == "0 error(s), 0 warning(s)"


def _with_crc(data: bytearray) -> bytes:
    struct.pack_into("<I", data, 40, zlib.crc32(bytes(data[SECTION_TABLE:])))
    return bytes(data)


def test_hostile_headers_raise_format_errors_naming_the_field():
    data = bytearray(SKELETON.read_bytes())
    bigger = bytearray(data)
    struct.pack_into("<I", bigger, SECTION_TABLE + 12, 0x7FFFFFFF)  # section 0's decompressed size
    with pytest.raises(FormatError, match="decompressed_size"):
        gr2.read(_with_crc(bigger))
    outside = bytearray(data)
    h = _section_headers(data)[0]
    struct.pack_into("<I", outside, h[7] + 4, 99)  # relocation 0 targets section 99
    with pytest.raises(FormatError, match="relocations"):
        gr2.read(_with_crc(outside))
    with pytest.raises(FormatError, match="magic"):
        gr2.read(b"\0" * 100)
    lines: list[str] = []
    assert gr2_check.check("cut.gr2", bytes(data[:5000]), lines.append) == 1
    assert lines[-1] == "roundtrip: not attempted (unreadable)"


def test_crc_mismatch_is_a_warning():
    data = bytearray(SKELETON.read_bytes())
    data[-1] ^= 0xFF
    f = gr2.read(bytes(data))
    assert len(f.warnings) == 1 and "CRC-32" in f.warnings[0]


def test_a_corrupt_stream_ends_in_a_format_error_not_a_hang():
    data = SKELETON.read_bytes()
    h = _section_headers(data)[0]
    stream = bytearray(data[h[1]:h[1] + h[2]])
    stream[40:] = bytes(len(stream) - 40)  # parameters kept, coded symbols zeroed
    for body in (bytes(stream), bytes(stream[:200])):
        try:
            out = oodle1.decompress(body, (h[5], h[6]), h[3])
        except FormatError:
            continue
        assert len(out) == h[3]
    with pytest.raises(FormatError):
        oodle1.decompress(b"\xff" * 20, (0, 0), 100)
