"""UANI / UAN2 codec, trigger sidecars and `info`: round trips, exact values, variant detection, bad input.

Expected values come from the files themselves (through a minimal struct parser written here) or from
bytes this test builds with `struct`, never from the code under test.
"""
from __future__ import annotations

import json
import random
import struct

import numpy as np
import pytest

from skinbridge.core.errors import FormatError
from skinbridge.io_urhox.motion import info, triggers, uani
from support.bytes_compare import assert_same_bytes

NINJA_FILES = ("Ninja_Walk.ani", "Ninja_Idle1.ani")


# -- independent builders and parser ----------------------------------------------------------------

def _cstr(s: str) -> bytes:
    return s.encode() + b"\0"


def _lstr(s: str) -> bytes:
    raw = s.encode()
    return struct.pack("<I", len(raw)) + raw


def _channels(mask: int) -> int:
    return 3 * bool(mask & 1) + 4 * bool(mask & 2) + 3 * bool(mask & 4)


def _key_floats(n_keys: int, n_floats: int, seed: int) -> list[list[float]]:
    """Deterministic float32-exact key values: time first, increasing."""
    rng = random.Random(seed)
    rows = []
    for k in range(n_keys):
        rows.append([k * 0.25] + [rng.randint(-4000, 4000) / 64.0 for _ in range(n_floats)])
    return rows


def build_classic(name: str, length: float, tracks, magic=b"UANI", version=None, weights=None,
                  variant_tracks: bytes | None = None) -> bytes:
    """tracks: [(name, mask, rows)] where rows are [time, *channels]; weights: per track tuple or None."""
    out = magic + (struct.pack("<I", version) if version is not None else b"")
    out += _cstr(name) + struct.pack("<fI", length, len(tracks))
    for i, (tname, mask, rows) in enumerate(tracks):
        out += _cstr(tname) + struct.pack("<B", mask)
        if weights is not None:
            out += struct.pack(f"<{len(weights[i])}f", *weights[i])
        out += struct.pack("<I", len(rows))
        for row in rows:
            out += struct.pack(f"<{len(row)}f", *row)
    if variant_tracks is not None:
        out += variant_tracks
    return out


def build_urhox(length: float, tracks, version=2, trigger_count=0, metadata_count=0, tail=b"") -> bytes:
    """tracks: [(name, interpolation, rows)] where rows are [time, px, py, pz, rw, rx, ry, rz, sx, sy, sz]."""
    out = b"UANI" + struct.pack("<IfI", version, length, len(tracks))
    for tname, interp, rows in tracks:
        out += _lstr(tname) + struct.pack("<BI", interp, len(rows))
        for row in rows:
            out += struct.pack("<11f", *row)
    return out + struct.pack("<II", trigger_count, metadata_count) + tail


def parse_classic_struct(data: bytes) -> dict:
    """A minimal Urho3D/rbfx bone-track parser, independent of the codec."""
    if data[:4] == b"UAN2":
        (version,), p = struct.unpack_from("<I", data, 4), 8
    else:
        version, p = None, 4
    end = data.index(b"\0", p)
    name, p = data[p:end].decode(), end + 1
    length, count = struct.unpack_from("<fI", data, p)
    p += 8
    n_weights = 0 if version is None or version < 3 else (1 if version == 3 else 3)
    tracks = []
    for _ in range(count):
        end = data.index(b"\0", p)
        tname, p = data[p:end].decode(), end + 1
        mask = data[p]
        p += 1
        weights = struct.unpack_from(f"<{n_weights}f", data, p)
        p += 4 * n_weights
        (keys,) = struct.unpack_from("<I", data, p)
        p += 4
        n = 1 + _channels(mask)
        rows = [struct.unpack_from(f"<{n}f", data, p + 4 * n * k) for k in range(keys)]
        p += 4 * n * keys
        tracks.append({"name": tname, "mask": mask, "weights": weights, "rows": rows})
    return {"version": version, "name": name, "length": length, "tracks": tracks, "end": p}


def _rows_of(track: uani.Track) -> list[tuple]:
    parts = [track.times[:, None]]
    for arr in (track.positions, track.rotations, track.scales):
        if arr is not None:
            parts.append(arr)
    return [tuple(float(v) for v in row) for row in np.hstack(parts)]


# -- generated files ----------------------------------------------------------------------------------

CLASSIC_TRACKS = [
    ("pos_only", 1, _key_floats(3, 3, 1)),
    ("rot_only", 2, _key_floats(5, 4, 2)),
    ("pos_rot", 3, _key_floats(2, 7, 3)),
    ("all", 7, _key_floats(4, 10, 4)),
    ("scale_only", 4, _key_floats(1, 3, 5)),
    ("no_keys", 7, []),
]

URHOX_TRACKS = [
    ("Hips", 1, _key_floats(4, 10, 11)),
    ("骨骼_左腿", 0, _key_floats(3, 10, 12)),   # step interpolation, UTF-8 name
    ("Spine", 1, _key_floats(1, 10, 13)),
    ("Empty", 0, []),
]


def _variant_tracks_v2() -> tuple[bytes, int]:
    # one FLOAT track (type 3), linear, two keys
    vt = _cstr("light/brightness") + struct.pack("<BBf", 3, 1, 0.0) + struct.pack("<I", 2)
    vt += struct.pack("<ff", 0.0, 1.0) + struct.pack("<ff", 0.5, 2.0)
    return struct.pack("<I", 1) + vt, 1


def _variant_tracks_v3() -> tuple[bytes, int]:
    # STRING track (type 9), step; VECTOR3 track (type 5), tangent spline (3) with in/out tangents
    a = _cstr("label") + struct.pack("<BBff", 9, 0, 0.0, 1.0) + struct.pack("<I", 2)
    a += struct.pack("<f", 0.0) + _cstr("start") + struct.pack("<f", 0.75) + _cstr("")
    b = _cstr("offset") + struct.pack("<BBff", 5, 3, 0.5, 0.75) + struct.pack("<I", 2)
    b += struct.pack("<f3f", 0.0, 1, 2, 3) + struct.pack("<f3f", 1.0, 4, 5, 6)
    b += struct.pack("<3f3f", 0, 0, 1, 0, 0, 1) * 2
    return struct.pack("<I", 2) + a + b, 2


def _variant_tracks_v4() -> tuple[bytes, int]:
    # VARIANTVECTOR (14) holding an INT and a STRING; BUFFER (10); RESOURCEREF (12)
    a = _cstr("vec") + struct.pack("<BBff", 14, 1, 0.0, 1.0) + struct.pack("<I", 1)
    a += struct.pack("<f", 0.0) + bytes([2]) + bytes([1]) + struct.pack("<i", -7) + bytes([9]) + _cstr("x")
    b = _cstr("buf") + struct.pack("<BBff", 10, 0, 0.0, 1.0) + struct.pack("<I", 1)
    b += struct.pack("<f", 0.0) + bytes([3]) + b"\x01\x02\x03"
    c = _cstr("ref") + struct.pack("<BBff", 12, 0, 0.0, 0.5) + struct.pack("<I", 1)
    c += struct.pack("<fI", 0.25, 0xDEADBEEF) + _cstr("Textures/a.png")
    return struct.pack("<I", 3) + a + b + c, 3


RBFX_VARIANTS = {2: _variant_tracks_v2, 3: _variant_tracks_v3, 4: _variant_tracks_v4}
RBFX_WEIGHTS = {2: None, 3: [(0.5,), (1.0,)], 4: [(1.0, 0.5, 0.25), (0.0, 1.0, 1.0)]}
RBFX_TRACKS = [("Root", 3, _key_floats(3, 7, 21)), ("Arm", 2, _key_floats(2, 4, 22))]


def build_rbfx(version: int) -> tuple[bytes, bytes, int]:
    variant_bytes, count = RBFX_VARIANTS[version]()
    data = build_classic("Armature", 1.5, RBFX_TRACKS, magic=b"UAN2", version=version,
                         weights=RBFX_WEIGHTS[version], variant_tracks=variant_bytes)
    return data, variant_bytes, count


def _all_files(testdata) -> dict[str, bytes]:
    files = {name: (testdata / "urho3d" / name).read_bytes() for name in NINJA_FILES}
    files["classic"] = build_classic("Gen", 2.0, CLASSIC_TRACKS)
    files["urhox"] = build_urhox(0.75, URHOX_TRACKS)
    for version in (2, 3, 4):
        files[f"rbfx{version}"] = build_rbfx(version)[0]
    return files


# -- Ninja files --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,anim_name,length",
                         [("Ninja_Walk.ani", "Walk", 1.08333), ("Ninja_Idle1.ani", "Idle1", 1.75)])
def test_ninja_reads_as_the_file_holds(testdata, name, anim_name, length):
    data = (testdata / "urho3d" / name).read_bytes()
    ref = parse_classic_struct(data)
    assert ref["end"] == len(data)

    anim = uani.read(data)
    assert anim.variant == "urho3d" and anim.version is None
    assert anim.warnings == []
    assert anim.name == anim_name == ref["name"]
    assert struct.pack("<f", anim.length) == struct.pack("<f", ref["length"])
    assert float(anim.length) == pytest.approx(length, abs=1e-5)
    assert len(anim.tracks) == len(ref["tracks"]) == 24
    for track, rt in zip(anim.tracks, ref["tracks"]):
        assert track.name == rt["name"]
        assert track.channel_mask == rt["mask"] == 3
        assert track.scales is None and track.weights is None and track.interpolation is None
        assert track.key_count == len(rt["rows"])
        assert _rows_of(track) == [tuple(r) for r in rt["rows"]]
    assert_same_bytes(uani.write(anim), data, uani.read)


def test_ninja_facts(testdata):
    """What the add-on's reader gives for Urho3D's stock Ninja clips: the records the independent walk of the
    classic layout (docs/urho.md §4.1, `parse_classic_struct`) finds, track for track and key for key, and on
    those records the facts of the clips: every track keys position and rotation (mask 3) from time 0 to the
    animation's length in time order, its rotations are unit quaternions, and the hands' end joints (Joint9,
    Joint22) have no track."""
    for name in NINJA_FILES:
        data = (testdata / "urho3d" / name).read_bytes()
        ref = parse_classic_struct(data)
        anim = uani.read(data)
        assert (anim.name, len(anim.tracks)) == (ref["name"], len(ref["tracks"]))
        assert [(t.name, t.channel_mask) for t in anim.tracks] == [(t["name"], t["mask"]) for t in ref["tracks"]]
        assert [_rows_of(t) for t in anim.tracks] == [[tuple(r) for r in t["rows"]] for t in ref["tracks"]]
        for track in anim.tracks:
            times = np.asarray(track.times)
            assert track.channel_mask == 3 and track.scales is None
            assert times[0] == 0.0 and times[-1] == anim.length, track.name
            assert (np.diff(times) >= 0).all(), track.name
            assert np.allclose(np.linalg.norm(track.rotations, axis=1), 1.0, atol=1e-6), track.name
        assert not {"Joint9", "Joint22"} & {t.name for t in anim.tracks}


def test_ninja_info(testdata):
    for name in NINJA_FILES:
        data = (testdata / "urho3d" / name).read_bytes()
        ref = parse_classic_struct(data)
        distinct = {r[0] for t in ref["tracks"] for r in t["rows"]}
        out = info.animation_summary(data)
        assert out["format"] == "UANI" and out["variant"] == "urho3d" and out["version"] is None
        assert out["tracks"] == 24 and out["frames"] == len(distinct)
        assert out["length"] == ref["length"]
        assert out["animations"] == [{"name": ref["name"], "length": ref["length"], "frames": len(distinct),
                                      "tracks": 24}]
        assert out["warnings"] == []
        json.dumps(out)


# -- generated classic / UrhoX ------------------------------------------------------------------------

def test_generated_classic_masks():
    data = build_classic("Gen", 2.0, CLASSIC_TRACKS)
    anim = uani.read(data)
    assert anim.variant == "urho3d" and anim.name == "Gen" and float(anim.length) == 2.0
    assert [(t.name, t.channel_mask, t.key_count) for t in anim.tracks] == \
           [(n, m, len(rows)) for n, m, rows in CLASSIC_TRACKS]
    for track, (_, mask, rows) in zip(anim.tracks, CLASSIC_TRACKS):
        assert (track.positions is not None) == bool(mask & 1)
        assert (track.rotations is not None) == bool(mask & 2)
        assert (track.scales is not None) == bool(mask & 4)
        assert _rows_of(track) == [tuple(r) for r in rows]
    assert_same_bytes(uani.write(anim), data, uani.read)


def test_generated_urhox():
    data = build_urhox(0.75, URHOX_TRACKS)
    anim = uani.read(data)
    assert anim.variant == "urhox" and anim.version == 2 and anim.name == ""
    assert float(anim.length) == 0.75 and anim.warnings == []
    assert [(t.name, t.interpolation, t.key_count) for t in anim.tracks] == \
           [(n, i, len(rows)) for n, i, rows in URHOX_TRACKS]
    for track, (_, _, rows) in zip(anim.tracks, URHOX_TRACKS):
        assert track.channel_mask == 7
        assert _rows_of(track) == [tuple(r) for r in rows]
        # rotation columns are w, x, y, z as in the file
        if rows:
            assert track.rotations[0, 0] == rows[0][4]
    assert anim.trigger_count == anim.metadata_count == 0 and anim.trigger_data == b""
    assert_same_bytes(uani.write(anim), data, uani.read)
    out = info.animation_summary(data, name="Walk")
    assert out["variant"] == "urhox" and out["version"] == 2 and out["tracks"] == 4
    assert out["frames"] == 4  # times 0, .25, .5, .75
    assert out["animations"][0]["name"] == "Walk"


def test_urhox_trigger_counts_keep_the_rest_raw():
    tail = b"\x05\0\0\0whatever follows is unknown"
    data = build_urhox(1.0, URHOX_TRACKS[:1], trigger_count=1, metadata_count=0, tail=tail)
    anim = uani.read(data)
    assert "UrhoX trigger layout unknown" in anim.warnings
    assert anim.trigger_count == 1 and anim.metadata_count == 0 and anim.trigger_data == tail
    assert_same_bytes(uani.write(anim), data, uani.read)
    data = build_urhox(1.0, URHOX_TRACKS[:1], trigger_count=0, metadata_count=2)
    anim = uani.read(data)
    assert anim.warnings == ["UrhoX trigger layout unknown"] and anim.trigger_data == b""
    assert_same_bytes(uani.write(anim), data, uani.read)


def test_nan_and_odd_bytes_are_kept():
    rows = [[0.0, 1, 2, 3, 1, 0, 0, 0, 1, 1, 1]]
    data = bytearray(build_urhox(1.0, [("a", 1, rows)]))
    # UANI, version, length at 8, track count; track: name length + "a" at 16, interpolation 21, key count
    # 22, then key 0 at 26: time, position x at 30
    data[8:12] = b"\x01\x00\x80\x7f"   # length: a signalling NaN (packing it through Python quietens it)
    data[30:34] = b"\x00\x00\xc0\xff"  # position x: a negative quiet NaN
    data = bytes(data)
    anim = uani.read(data)
    assert np.isnan(anim.length) and np.isnan(anim.tracks[0].positions[0, 0])
    assert anim.tracks[0].positions[0, 1] == 2.0
    assert_same_bytes(uani.write(anim), data, uani.read)
    problems = uani.check(anim)
    assert any("length" in p for p in problems) and any("'a' key 0: non-finite position" in p for p in problems)
    # interpolation byte outside 0/1 and a classic mask with high bits: kept, written back
    odd = bytearray(build_urhox(1.0, [("a", 1, rows)]))
    odd[4 + 12 + 4 + 1] = 9
    anim = uani.read(bytes(odd))
    assert anim.tracks[0].interpolation == 9 and any("interpolation byte 9" in w for w in anim.warnings)
    assert_same_bytes(uani.write(anim), bytes(odd), uani.read)
    high = build_classic("m", 1.0, [("t", 0x83, _key_floats(2, 7, 9))])
    anim = uani.read(high)
    assert anim.tracks[0].channel_mask == 0x83 and anim.tracks[0].scales is None
    assert_same_bytes(uani.write(anim), high, uani.read)


def test_trailing_bytes_kept_with_warning():
    data = build_classic("Gen", 2.0, CLASSIC_TRACKS[:2]) + b"\xaa\xbb"
    anim = uani.read(data)
    assert anim.trailing == b"\xaa\xbb" and anim.warnings == ["2 bytes after the end of the animation kept raw"]
    assert_same_bytes(uani.write(anim), data, uani.read)


# -- variant detection --------------------------------------------------------------------------------

def test_variant_detection():
    assert uani.detect_variant(build_urhox(1.0, [])) == "urhox"
    assert uani.detect_variant(build_classic("", 1.0, [])) == "urho3d"        # empty name: data[4] == 0
    assert uani.detect_variant(build_classic("Walk", 1.0, [])) == "urho3d"
    # a one-character control name is classic as long as the length's low bytes are not both zero
    # (with length 1.0, bytes 00 00 80 3f, the heuristic of docs/urho.md §4.4 would take it for UrhoX)
    weird = build_classic("\x02", 1.1, [("t", 1, _key_floats(1, 3, 1))])
    assert weird[5:8] != b"\0\0\0"
    anim = uani.read(weird)
    assert anim.variant == "urho3d" and anim.name == "\x02"
    assert_same_bytes(uani.write(anim), weird, uani.read)
    assert uani.detect_variant(build_rbfx(2)[0]) == "rbfx"
    with pytest.raises(FormatError) as e:
        uani.read(b"UMDL\0\0\0\0")
    assert e.value.offset == 0 and e.value.field == "magic"
    with pytest.raises(FormatError):
        uani.read(b"")


# -- rbfx UAN2 ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [2, 3, 4])
def test_rbfx_versions(version):
    data, variant_bytes, count = build_rbfx(version)
    anim = uani.read(data)
    assert anim.variant == "rbfx" and anim.version == version and anim.name == "Armature"
    assert [(t.name, t.channel_mask, t.key_count) for t in anim.tracks] == [("Root", 3, 3), ("Arm", 2, 2)]
    for track, (_, _, rows), weights in zip(anim.tracks, RBFX_TRACKS, RBFX_WEIGHTS[version] or [None] * 2):
        assert _rows_of(track) == [tuple(r) for r in rows]
        if weights is None:
            assert track.weights is None
        else:
            assert track.weights.tolist() == list(weights)
    assert len(anim.variant_tracks) == count
    assert f"{count} variant tracks skipped" in anim.warnings
    assert struct.pack("<I", count) + b"".join(v.raw for v in anim.variant_tracks) == variant_bytes
    assert_same_bytes(uani.write(anim), data, uani.read)
    out = info.animation_summary(data)
    assert out["variant"] == "rbfx" and out["version"] == version and out["variant_tracks"] == count


def test_rbfx_variant_track_details():
    anim = uani.read(build_rbfx(3)[0])
    assert [(v.name, v.variant_type, v.interpolation, v.key_count) for v in anim.variant_tracks] == \
           [("label", 9, 0, 2), ("offset", 5, 3, 2)]


def test_rbfx_version_1_has_no_weights_or_variant_tracks():
    data = build_classic("Legacy", 1.0, RBFX_TRACKS, magic=b"UAN2", version=1)
    anim = uani.read(data)
    assert anim.variant == "rbfx" and anim.version == 1 and anim.warnings == []
    assert [t.key_count for t in anim.tracks] == [3, 2] and anim.variant_tracks == []
    assert_same_bytes(uani.write(anim), data, uani.read)


def test_rbfx_bad_version_and_variant_type():
    data, _, _ = build_rbfx(2)
    bad = data[:4] + struct.pack("<I", 5) + data[8:]
    with pytest.raises(FormatError) as e:
        uani.read(bad)
    assert e.value.offset == 4 and e.value.field == "version"
    # variant type 200 is out of range
    vt = struct.pack("<I", 1) + _cstr("x") + struct.pack("<BBf", 200, 0, 0.0) + struct.pack("<I", 0)
    data = build_classic("A", 1.0, [], magic=b"UAN2", version=2, variant_tracks=vt)
    with pytest.raises(FormatError) as e:
        uani.read(data)
    assert e.value.field == "variant track 0 type" and e.value.offset == len(data) - 10


# -- counts and structural faults ---------------------------------------------------------------------

def test_huge_counts_refused_before_allocation():
    data = b"UANI" + _cstr("A") + struct.pack("<fI", 1.0, 0xFFFFFFFF)
    with pytest.raises(FormatError) as e:
        uani.read(data)
    assert e.value.offset == 10 and e.value.field == "track count"
    data = b"UANI" + _cstr("A") + struct.pack("<fI", 1.0, 1) + _cstr("t") + struct.pack("<BI", 7, 0x7FFFFFFF)
    with pytest.raises(FormatError) as e:
        uani.read(data)
    assert e.value.offset == 17 and e.value.field == "track 0 key count"
    data = b"UANI" + struct.pack("<IfI", 2, 1.0, 1) + struct.pack("<I", 0xFFFFFF00) + bytes(8)
    with pytest.raises(FormatError) as e:
        uani.read(data)
    assert e.value.offset == 16 and e.value.field == "track 0 name"
    with pytest.raises(FormatError) as e:
        uani.read(b"UANI" + b"NoTerminator")
    assert e.value.offset == 4 and e.value.field == "animation name"


def test_write_refuses_inconsistent_records():
    anim = uani.read(build_classic("Gen", 2.0, CLASSIC_TRACKS))
    anim.tracks[1].rotations = None
    with pytest.raises(ValueError, match="rot_only"):
        uani.write(anim)
    anim = uani.read(build_urhox(1.0, URHOX_TRACKS))
    anim.tracks[0].scales = anim.tracks[0].scales[:1]
    with pytest.raises(ValueError, match="Hips"):
        uani.write(anim)
    anim = uani.read(build_rbfx(4)[0])
    anim.tracks[0].weights = None
    with pytest.raises(ValueError, match="Root"):
        uani.write(anim)


def _assert_reads_or_format_error(data: bytes) -> None:
    try:
        anim = uani.read(data)
    except FormatError:
        return
    assert_same_bytes(uani.write(anim), data, uani.read)


def test_truncation(testdata):
    for name, data in _all_files(testdata).items():
        for i in range(64):
            cut = data[:len(data) * i // 64]
            # every generated and real file here ends exactly where its last count says: any cut is a fault
            with pytest.raises(FormatError):
                uani.read(cut)
    raw_tail = build_urhox(1.0, URHOX_TRACKS[:1], trigger_count=1, tail=b"0123456789")
    for i in range(64):
        _assert_reads_or_format_error(raw_tail[:len(raw_tail) * i // 64])


@pytest.mark.slow
def test_random_byte_flips(testdata):
    rng = random.Random(20240517)
    for name, data in _all_files(testdata).items():
        for _ in range(1000):
            mutated = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                mutated[rng.randrange(len(mutated))] ^= rng.randint(1, 255)
            _assert_reads_or_format_error(bytes(mutated))


# -- trigger sidecars ---------------------------------------------------------------------------------

SIDECAR = [(0.0, "footstep_left"), (0.5, 'quote " & <tag>\nline'), (0.75, 3), (1.0, 2.5), (1.25, True),
           (1.5, None), (2.0, triggers.RawValue("Vector3", "1 2 3"))]


@pytest.mark.parametrize("fmt", ["xml", "json"])
def test_sidecar_round_trip(fmt, tmp_path):
    text = triggers.write_triggers(SIDECAR, fmt)
    assert triggers.read_triggers(text, 10.0) == SIDECAR
    path = tmp_path / f"Walk.{fmt}"
    path.write_text(text, encoding="utf-8")
    assert triggers.read_triggers(path, 10.0) == SIDECAR
    assert triggers.read_triggers(str(path), 10.0) == SIDECAR
    assert triggers.read_triggers(text.encode("utf-8"), 10.0) == SIDECAR


def test_sidecar_xml_as_urho_writes_it():
    text = """<?xml version="1.0"?>
<animation>
\t<trigger time="0.1" type="String" value="Step" />
\t<trigger normalizedtime="0.5" type="String" value="Mid" />
\t<trigger type="String" value="no time: skipped" />
\t<other time="9" />
</animation>
"""
    assert triggers.read_triggers(text, 2.0) == [(0.1, "Step"), (1.0, "Mid")]


def test_sidecar_json_as_urho_reads_it():
    text = json.dumps({"triggers": [{"normalizedTime": 0.25, "type": "String", "value": "A"},
                                    {"time": 0.3, "type": "Int", "value": 4},
                                    {"type": "String", "value": "skipped"}]})
    assert triggers.read_triggers(text, 2.0) == [(0.5, "A"), (0.3, 4)]


def test_sidecar_hostile_input(tmp_path):
    bomb = ('<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x "xxxxxxxxxx"><!ENTITY y "&x;&x;&x;&x;&x;">]>'
            '<animation><trigger time="0" type="String" value="&y;"/></animation>')
    with pytest.raises(FormatError, match="document type"):
        triggers.read_triggers(bomb, 1.0)
    external = '<!DOCTYPE a SYSTEM "file:///etc/passwd"><animation/>'
    with pytest.raises(FormatError):
        triggers.read_triggers(external, 1.0)
    with pytest.raises(FormatError):
        triggers.read_triggers("<animation><trigger time='x'/></animation>", 1.0)
    with pytest.raises(FormatError):
        triggers.read_triggers("<animation><trigger", 1.0)
    with pytest.raises(FormatError):
        triggers.read_triggers("{" * 100000, 1.0)
    with pytest.raises(FormatError):
        triggers.read_triggers('{"triggers": 3}', 1.0)
    big = tmp_path / "big.xml"
    big.write_bytes(b"<animation>" + b" " * (5 << 20) + b"</animation>")
    with pytest.raises(FormatError) as e:
        triggers.read_triggers(big, 1.0)
    assert e.value.field == "file size"
    with pytest.raises(ValueError):
        triggers.write_triggers([(0.0, "bell\x07")])


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_rbfx_records_through_the_core_model_keep_version_weights_and_attribute_tracks(testdata, version):
    """An rbfx UAN2 of every version, with track weights (v3: one, v4: three) and a colour attribute track (v2+):
    to the core model and back with the rbfx format keeps the version, each track's weights and the attribute
    track's bytes (the bone keys are what the core model resamples)."""
    # numpy-only module, imported where the rbfx path is tested
    from skinbridge.io_urhox.motion import convert as motion_convert

    anim = uani.read((testdata / "urho3d" / "Ninja_Walk.ani").read_bytes())
    anim.variant, anim.version = uani.VARIANT_RBFX, version
    weights = uani.weight_count(version)
    for i, t in enumerate(anim.tracks):
        t.weights = np.full(weights, 0.25 + 0.01 * i, "<f4") if weights else None
    if version >= uani.RBFX_VARIANT_TRACK_VERSION:
        raw = (b"Color\0" + bytes([8, 1]) + np.float32(0.5).tobytes()
               + (np.float32(1).tobytes() if version >= uani.RBFX_TRACK_WEIGHT_VERSION else b"")
               + np.uint32(1).tobytes() + np.float32(0).tobytes() + np.float32([1, 0, 0, 1]).tobytes())
        anim.variant_tracks = [uani.VariantTrack("Color", 8, 1, 1, raw)]
    original = uani.read(uani.write(anim))
    core, _ = motion_convert.to_core(original, "walk")
    back = uani.read(uani.write(motion_convert.from_core(core, "urho3d", fmt="rbfx")[0]))
    assert (back.variant, back.version, back.name) == (uani.VARIANT_RBFX, version, original.name)
    assert [None if t.weights is None else t.weights.tolist() for t in back.tracks] == \
        [None if t.weights is None else t.weights.tolist() for t in original.tracks]
    assert [vt.raw for vt in back.variant_tracks] == [vt.raw for vt in original.variant_tracks]
