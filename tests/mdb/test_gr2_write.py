"""GR2 writer: the game's files read and written again (uncompressed) keep their typed data exactly; our own
files read and written again come back byte-identical."""
from __future__ import annotations

import pathlib
import struct
import zlib

import numpy as np
import pytest

from skinbridge.core.check import IDENTICAL, MAX_PER_CHECK, UNREADABLE, Checker
from skinbridge.io_mdb.gr2 import (check as gr2_check, convert as gr2_convert, gr2, skeleton as gr2_skeleton,
                                   write as gr2_write)

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"
ANIMATION = GR2_DIR / "ovr_p_ddf_glaive01.GR2"


def _bone_fields(skeleton: gr2_skeleton.Gr2Skeleton) -> list[tuple]:
    return [(b.name, b.parent, b.flags, b.translation.tobytes(), b.rotation.tobytes(), b.scale_shear.tobytes(),
             b.inverse_world.tobytes()) for b in skeleton.bones]


def test_genasi_skeleton_written_and_read_back_has_the_originals_bones_exactly():
    original = gr2.read(SKELETON.read_bytes())
    data = gr2_write.rewrite(original)
    back = gr2.read(data)
    assert back.warnings == [] and back.crc == back.computed_crc == zlib.crc32(data[88:])
    assert struct.unpack_from("<I", data, 16)[0] == 352 and len(back.sections) == 6
    assert all(s.compression == 0 for s in back.sections)
    (a,), (b,) = gr2_skeleton.skeletons(original), gr2_skeleton.skeletons(back)
    assert b.name == a.name == "P_HHF_skel" and len(b.bones) == 88
    assert _bone_fields(b) == _bone_fields(a)
    assert [m.name for m in back.root_type] == [m.name for m in original.root_type]
    assert back.root["ArtToolInfo"]["UnitsPerMeter"] == 100.0
    # our own file, read and written again: the same bytes
    assert gr2_write.rewrite(back) == data


def test_glaive_animation_written_and_read_back_samples_the_same_keys():
    original = gr2.read(ANIMATION.read_bytes())
    back = gr2.read(gr2_write.rewrite(original))
    before, _ = gr2_convert.core_animations(original, "x")
    after, _ = gr2_convert.core_animations(back, "x")
    assert [(a.name, a.length, len(a.tracks)) for a in after] == [(a.name, a.length, len(a.tracks)) for a in before]
    for a, b in zip(before, after):
        for s, t in zip(a.tracks, b.tracks):
            assert s.bone == t.bone
            assert np.array_equal(s.translations, t.translations) and np.array_equal(s.rotations, t.rotations)
    formats = [c["CurveData"].type[0].name for g in back.root["TrackGroups"] for tr in g["TransformTracks"]
               for c in (tr["PositionCurve"], tr["OrientationCurve"])]
    assert "CurveDataHeader_D4nK8uC7u" in formats and "CurveDataHeader_D3K16uC16u" in formats


def test_a_value_the_type_cannot_hold_is_refused():
    t = gr2_write.TypeDef([gr2_write.Field(gr2.REAL32, "Values", None, 3)])
    with pytest.raises(gr2_write.ExportError, match="Values"):
        gr2_write.write(t, {"Values": np.zeros(4)})


def test_check_compares_the_file_with_our_writers(tmp_path):
    lines: list[str] = []
    assert gr2_check.check(str(SKELETON), SKELETON.read_bytes(), lines.append) == 0
    assert lines[-1].startswith("roundtrip: typed data identical; bytes differ (written uncompressed")
    ours = gr2_write.rewrite(gr2.read(SKELETON.read_bytes()))
    lines = []
    assert gr2_check.check("ours.gr2", ours, lines.append) == 0
    assert lines[-2:] == ["0 error(s), 0 warning(s)", "roundtrip: identical"]
    changed = bytearray(ours)
    at = ours.index(b"Ribcage\0")
    changed[at] = ord("X")  # a bone renamed in a file of our layout: written back byte for byte all the same
    changed[40:44] = struct.pack("<I", zlib.crc32(bytes(changed[88:])))
    (renamed,) = gr2_skeleton.skeletons(gr2.read(bytes(changed)))
    assert "Xibcage" in renamed.names and "Ribcage" not in renamed.names
    assert gr2_check.check.findings(bytes(changed))[1] == IDENTICAL


def test_check_runs_on_the_shared_pipeline():
    """GR2's check is core/check.py's Checker: a curve that does not decode is the reader's fault (the write-back
    not attempted), and a fault of many bones is listed MAX_PER_CHECK times, then counted."""
    assert isinstance(gr2_check.check, Checker)
    f = gr2.read(ANIMATION.read_bytes())
    track = f.root["Animations"][0]["TrackGroups"][0]["TransformTracks"][0]
    track["PositionCurve"]["CurveData"]["CurveDataHeader_D3K16uC16u"]["Degree"] = 7
    lines: list[str] = []
    assert gr2_check.check("bad.gr2", gr2_write.rewrite(f), lines.append) == 1
    assert lines[0].startswith("error: file: ") and lines[-1] == UNREADABLE
    f = gr2.read(SKELETON.read_bytes())
    bones = f.root["Skeletons"][0]["Bones"]
    for b in bones:
        b["InverseWorldTransform"] = b["InverseWorldTransform"] * 2
    lines = []
    assert gr2_check.check("moved.gr2", gr2_write.rewrite(f), lines.append) == 0
    rows = [ln for ln in lines if "InverseWorldTransform" in ln]
    assert len(rows) == MAX_PER_CHECK + 1 and rows[-1].endswith(f"and {len(bones) - MAX_PER_CHECK} more with "
                                                                "the same fault (first listed here)")
    assert lines[-1] == IDENTICAL
