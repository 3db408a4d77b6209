"""VMD codec: byte-identical round trips of the real motions, their facts checked against an independent
struct-based walk, files cut after an optional group, the interpolation block layout, names, `info`, a
generated motion parsed by babylon-mmd, and bad input (truncations and byte flips) per docs/architecture.md §7.1."""
from __future__ import annotations

import json
import pathlib
import random
import struct
import tracemalloc

import numpy as np
import pytest

from skinbridge.core.errors import FormatError
from skinbridge.io_pmx.motion import vmd
from skinbridge.io_pmx.motion import info as vmd_info
from support import tools
from support.bytes_compare import assert_same_bytes, round_trip

SAMPLES = ("babylonmmd_physics_toggle_test_yyb10th.vmd", "mlibgo_shagamu.vmd")
PHYSICS = "babylonmmd_physics_toggle_test_yyb10th.vmd"
SHAGAMU = "mlibgo_shagamu.vmd"

# the control bones every MMD motion keys (standard bone names of a PMX model)
CONTROL_BONES = {"全ての親", "センター", "グルーブ", "腰", "上半身", "上半身2", "下半身", "首", "頭", "両目",
                 "左目", "右目", "左肩", "右肩", "左腕", "右腕", "左ひじ", "右ひじ", "左手首", "右手首", "左足",
                 "右足", "左ひざ", "右ひざ",
                 "左足首", "右足首", "左足ＩＫ", "右足ＩＫ", "左つま先ＩＫ", "右つま先ＩＫ", "左足IK親", "右足IK親"}


def sample_bytes(testdata, name: str) -> bytes:
    return (testdata / "pmx" / name).read_bytes()


# ------------------------------------------------------------------------------------------------------------
# An independent walk over the layout of docs/mmd.md §3, with struct only (no numpy, no codec code)

def walk(data: bytes) -> dict:
    """Every section of a well-formed VMD, key by key. Raises struct.error / AssertionError on bad input."""
    assert data[:25] == b"Vocaloid Motion Data 0002"
    out = {"model": data[30:50], "bones": [], "morphs": [], "cameras": [], "lights": [], "shadows": [],
           "properties": [], "groups": 0}
    pos = 50

    def u32() -> int:
        nonlocal pos
        (v,) = struct.unpack_from("<I", data, pos)
        pos += 4
        return v

    for _ in range(u32()):
        name, frame = data[pos:pos + 15], struct.unpack_from("<I", data, pos + 15)[0]
        position = struct.unpack_from("<3f", data, pos + 19)
        rotation = struct.unpack_from("<4f", data, pos + 31)
        out["bones"].append((name, frame, position, rotation, data[pos + 47:pos + 111]))
        pos += 111
    for _ in range(u32()):
        out["morphs"].append((data[pos:pos + 15], struct.unpack_from("<I", data, pos + 15)[0],
                              struct.unpack_from("<f", data, pos + 19)[0]))
        pos += 23
    if pos < len(data):
        for _ in range(u32()):
            out["cameras"].append(struct.unpack_from("<I", data, pos)[0])
            pos += 61
        for _ in range(u32()):
            out["lights"].append(struct.unpack_from("<I", data, pos)[0])
            pos += 28
        out["groups"] = 1
    if pos < len(data):
        for _ in range(u32()):
            out["shadows"].append(struct.unpack_from("<I", data, pos)[0])
            pos += 9
        out["groups"] = 2
    if pos < len(data):
        for _ in range(u32()):
            frame, visible, k = struct.unpack_from("<IBI", data, pos)
            pos += 9
            states = [(data[pos + 21 * j:pos + 21 * j + 20], data[pos + 21 * j + 20]) for j in range(k)]
            pos += 21 * k
            out["properties"].append((frame, visible, states))
        out["groups"] = 3
    assert pos <= len(data), "walk ran past the end"
    out["morph_end"] = 58 + 111 * len(out["bones"]) + 23 * len(out["morphs"])
    out["trailing"] = len(data) - pos
    return out


def count_offsets(data: bytes) -> list[int]:
    """Offsets of every count field of a well-formed file (property keys' IK state counts included)."""
    w = walk(data)
    at = [50, 54 + 111 * len(w["bones"])]
    pos = w["morph_end"]
    for size, n in ((61, len(w["cameras"])), (28, len(w["lights"])), (9, len(w["shadows"]))):
        at.append(pos)
        pos += 4 + size * n
    at.append(pos)
    pos += 4
    for _, _, states in w["properties"]:
        at.append(pos + 5)
        pos += 9 + 21 * len(states)
    return at


def cp932_text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("cp932", "replace")


def test_samples_listed_are_all_the_samples(testdata):
    assert sorted(p.name for p in (testdata / "pmx").glob("*.vmd")) == sorted(SAMPLES)


# ------------------------------------------------------------------------------------------------------------
# Real files

@pytest.mark.parametrize("name", SAMPLES)
def test_sample_reads_and_writes_back_byte_identical(testdata, name):
    m = round_trip(sample_bytes(testdata, name), vmd.read, vmd.write)
    assert m.version == "Vocaloid Motion Data 0002"


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_counts_match_the_independent_walk(testdata, name):
    data = sample_bytes(testdata, name)
    m, w = vmd.read(data), walk(data)
    assert len(m.bone_keys) == len(w["bones"])
    assert len(m.morph_keys) == len(w["morphs"])
    assert (len(m.camera_keys), len(m.light_keys), len(m.shadow_keys)) == \
        (len(w["cameras"]), len(w["lights"]), len(w["shadows"]))
    assert len(m.property_keys) == len(w["properties"])
    assert m.tail_groups == w["groups"] and len(m.trailing) == w["trailing"]
    assert m.model_name_raw == w["model"]
    # key by key, in file order
    assert [bytes(n).ljust(15, b"\0") for n in m.bone_keys["name"]] == [b[0] for b in w["bones"]]
    assert m.bone_keys["frame"].tolist() == [b[1] for b in w["bones"]]
    assert [bytes(r) for r in m.bone_keys["interpolation"]] == [b[4] for b in w["bones"]]
    np.testing.assert_array_equal(m.bone_keys["position"], np.float32([b[2] for b in w["bones"]]).reshape(-1, 3))
    np.testing.assert_array_equal(m.bone_keys["rotation"], np.float32([b[3] for b in w["bones"]]).reshape(-1, 4))
    assert vmd.key_names(m.bone_keys["name"]) == [cp932_text(b[0]) for b in w["bones"]]
    assert vmd.key_names(m.morph_keys["name"]) == [cp932_text(k[0]) for k in w["morphs"]]
    assert m.morph_keys["frame"].tolist() == [k[1] for k in w["morphs"]]
    for key, (frame, visible, states) in zip(m.property_keys, w["properties"]):
        assert (key.frame, key.visible, len(key.ik)) == (frame, visible, len(states))
        assert [vmd.decode_name(s["name"]) for s in key.ik] == [cp932_text(s[0]) for s in states]
        assert key.ik["enabled"].tolist() == [s[1] for s in states]
    # curves read from row c agree with the byte offsets of the reference table
    ip = np.frombuffer(b"".join(b[4] for b in w["bones"]), np.uint8).reshape(-1, 64)
    c = vmd.curves(m.bone_keys["interpolation"])
    for ch in range(4):
        np.testing.assert_array_equal(c[:, ch], ip[:, [16 * ch, 16 * ch + 4, 16 * ch + 8, 16 * ch + 12]])


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_blocks_are_written_as_mmd_writes_them(testdata, name):
    """Every block of the real files is the shifted-row layout; rebuilt from its curves and toggle bytes it
    is identical."""
    keys = vmd.read(sample_bytes(testdata, name)).bone_keys
    ip = keys["interpolation"]
    rebuilt = vmd.build_interpolation(vmd.curves(ip), physics=vmd.physics_bytes(ip))
    np.testing.assert_array_equal(rebuilt, ip)


def test_physics_toggle_file_facts(testdata):
    """../shared/testdata/README.md and docs/mmd.md §3: full control-bone set, 100 morph keys, an IK on/off
    key, 9 keys with physics bytes 0x63,0x0F. Each fact is taken from the independent walk, then from the codec."""
    data = sample_bytes(testdata, PHYSICS)
    w, m = walk(data), vmd.read(data)
    walk_bones = {cp932_text(b[0]) for b in w["bones"]}
    assert CONTROL_BONES <= walk_bones
    assert len(w["morphs"]) == 100
    assert len(w["properties"]) == 1
    (frame, visible, states) = w["properties"][0]
    assert [cp932_text(s[0]) for s in states] == ["右足ＩＫ", "右つま先ＩＫ", "左足ＩＫ", "左つま先ＩＫ"]
    toggles = [b[4][2:4] for b in w["bones"]]
    assert toggles.count(b"\x63\x0f") == 9
    assert toggles.count(b"\x00\x00") == len(toggles) - 9

    bones, index = vmd.distinct_names(m.bone_keys["name"])
    assert set(bones) == walk_bones and len(bones) == 439
    assert len(m.bone_keys) == 454
    assert len(m.morph_keys) == 100 and len(vmd.distinct_names(m.morph_keys["name"])[0]) == 100
    assert vmd.physics_off(m.bone_keys["interpolation"]).sum() == 9
    off = np.nonzero(vmd.physics_off(m.bone_keys["interpolation"]))[0]
    assert [b[4][2:4] for i, b in enumerate(w["bones"]) if i in set(off.tolist())] == [b"\x63\x0f"] * 9
    (key,) = m.property_keys
    assert [vmd.decode_name(s) for s in key.ik["name"]] == ["右足ＩＫ", "右つま先ＩＫ", "左足ＩＫ", "左つま先ＩＫ"]
    assert m.model_name == "YYB式初音ミク_10th_v"


def test_shagamu_model_name_cut_mid_character(testdata):
    data = sample_bytes(testdata, SHAGAMU)
    raw = walk(data)["model"]
    assert len(raw) == 20 and b"\0" not in raw
    with pytest.raises(UnicodeDecodeError):
        raw.decode("cp932")  # the last byte is the lead byte of a double-byte character
    m = vmd.read(data)
    assert m.model_name_raw == raw
    assert m.model_name == raw.decode("cp932", "replace")
    assert m.model_name.startswith("Tda式初音ミク") and m.model_name.endswith("\ufffd")
    assert m.warnings == []
    names = {cp932_text(b[0]) for b in walk(data)["bones"]}
    assert len(names) == len(m.bone_keys) == 70
    assert {"全ての親", "センター", "グルーブ", "左足ＩＫ", "右足ＩＫ", "上半身", "下半身"} <= names


@pytest.mark.parametrize("name", SAMPLES)
def test_info_matches_the_walk(testdata, name):
    data = sample_bytes(testdata, name)
    w = walk(data)
    got = vmd_info.info(data)
    frames = [b[1] for b in w["bones"]] + [k[1] for k in w["morphs"]] + w["cameras"] + w["lights"] + \
        w["shadows"] + [p[0] for p in w["properties"]]
    bones = {cp932_text(b[0]) for b in w["bones"]}
    morphs = {cp932_text(k[0]) for k in w["morphs"]}
    assert got["format"] == "VMD" and got["version"] == "Vocaloid Motion Data 0002"
    assert got["model"] == w["model"].split(b"\0", 1)[0].decode("cp932", "replace")
    assert (got["bone_keys"], got["morph_keys"], got["camera_keys"], got["light_keys"], got["shadow_keys"],
            got["ik_keys"]) == (len(w["bones"]), len(w["morphs"]), len(w["cameras"]), len(w["lights"]),
                                len(w["shadows"]), len(w["properties"]))
    assert (got["bones"], got["morphs"]) == (len(bones), len(morphs))
    assert got["animations"] == [{"name": got["model"], "length": max(frames) / 30, "frames": len(set(frames)),
                                  "tracks": len(bones) + len(morphs)}]
    assert got["warnings"] == []
    json.dumps(got)


def test_info_on_the_samples_states_the_known_figures(testdata):
    phys = vmd_info.info(sample_bytes(testdata, PHYSICS))
    assert (phys["bone_keys"], phys["bones"], phys["morph_keys"], phys["ik_keys"]) == (454, 439, 100, 1)
    assert phys["animations"][0]["frames"] == 7 and phys["animations"][0]["length"] == pytest.approx(100 / 30)
    shag = vmd_info.info(sample_bytes(testdata, SHAGAMU))
    assert (shag["bone_keys"], shag["bones"], shag["morph_keys"], shag["ik_keys"]) == (70, 70, 0, 0)
    assert shag["animations"][0]["frames"] == 1 and shag["animations"][0]["length"] == 0


# ------------------------------------------------------------------------------------------------------------
# Optional groups

@pytest.mark.parametrize("name", SAMPLES)
@pytest.mark.parametrize("groups", [0, 1, 2])
def test_copy_cut_after_an_optional_group_reads_with_a_warning(testdata, name, groups):
    data = sample_bytes(testdata, name)
    w = walk(data)
    end = w["morph_end"]
    if groups >= 1:
        end += 8 + 61 * len(w["cameras"]) + 28 * len(w["lights"])
    if groups >= 2:
        end += 4 + 9 * len(w["shadows"])
    cut = data[:end]
    m = vmd.read(cut)
    assert m.tail_groups == groups
    assert len(m.warnings) == 1
    assert "ends after the" in m.warnings[0] and "kept" in m.warnings[0]
    if groups == 0:
        assert "after the morph keys" in m.warnings[0]
    assert_same_bytes(vmd.write(m), cut, vmd.read)
    assert len(m.bone_keys) == len(w["bones"]) and len(m.morph_keys) == len(w["morphs"])


def test_cut_inside_an_optional_group_is_a_format_error(testdata):
    data = sample_bytes(testdata, PHYSICS)
    end = walk(data)["morph_end"]
    for extra in (1, 2, 3, 5, 7):  # a partial count: the group is started, not complete
        with pytest.raises(FormatError):
            vmd.read(data[:end + extra])


def test_trailing_bytes_are_kept_with_a_warning(testdata):
    data = sample_bytes(testdata, SHAGAMU) + b"\x01\x02\x03"
    m = vmd.read(data)
    assert m.trailing == b"\x01\x02\x03"
    assert m.warnings == ["3 bytes after the last group (kept)"]
    assert_same_bytes(vmd.write(m), data, vmd.read)


def test_writer_emits_every_group_up_to_the_last_with_keys(testdata):
    data = sample_bytes(testdata, SHAGAMU)
    m = vmd.read(data[:walk(data)["morph_end"]])
    assert m.tail_groups == 0
    m.shadow_keys = np.zeros(1, vmd.SHADOW_KEY)
    out = vmd.write(m)
    again = vmd.read(out)
    assert again.tail_groups == 2 and len(again.shadow_keys) == 1 and len(again.warnings) == 1
    assert len(vmd.write(vmd.Motion())) == 50 + 4 * 6  # a new motion holds every group, as MMD writes


# ------------------------------------------------------------------------------------------------------------
# Interpolation blocks and names

def test_build_interpolation_layout_by_hand():
    # X = (1, 2, 3, 4), Y = (5, 6, 7, 8), Z = (9, 10, 11, 12), R = (13, 14, 15, 16): x1, y1, x2, y2 each
    c = np.arange(1, 17).reshape(4, 4)
    seq = [1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 4, 8, 12, 16]  # X_x1 Y_x1 Z_x1 R_x1 X_y1 ...
    expect = seq + seq[1:] + [0] + seq[2:] + [0, 0] + seq[3:] + [0, 0, 0]
    expect_on = expect.copy()
    expect_on[2:4] = [0, 0]
    assert vmd.build_interpolation(c).tolist() == expect_on
    off = vmd.build_interpolation(c, physics_off=True)
    assert off[:2].tolist() == [1, 5] and off[2:4].tolist() == [0x63, 0x0F] and off[4:].tolist() == expect[4:]
    assert vmd.build_interpolation(c, physics=(7, 8))[2:4].tolist() == [7, 8]
    assert vmd.curves(off).tolist() == c.tolist()
    assert vmd.physics_off(off) and not vmd.physics_off(vmd.build_interpolation(c))
    assert vmd.physics_bytes(off).tolist() == [0x63, 0x0F]
    with pytest.raises(ValueError):
        vmd.build_interpolation(np.full((4, 4), 128))


def test_build_interpolation_in_bulk():
    rng = np.random.default_rng(1)
    c = rng.integers(0, 128, (50, 4, 4))
    flags = rng.random(50) < 0.3
    blocks = vmd.build_interpolation(c, physics_off=flags)
    assert blocks.shape == (50, 64) and blocks.dtype == np.uint8
    np.testing.assert_array_equal(vmd.curves(blocks), c)
    np.testing.assert_array_equal(vmd.physics_off(blocks), flags)
    for i in range(50):
        np.testing.assert_array_equal(blocks[i], vmd.build_interpolation(c[i], physics_off=bool(flags[i])))


def test_names_decode_and_encode():
    assert vmd.decode_name(b"\x83Z\x83\x93\x83^\x81[\0\xfd\xfd\xfd\xfd\xfd\xfd") == "センター"
    assert vmd.decode_name(b"\x83Z\x83\x93\x83^\x81[\0garbage") == "センター"
    assert vmd.decode_name(bytes(15)) == ""
    assert vmd.decode_name(b"\0\xb6?_0_1\0\0\0\0\0\0\0\0") == "\ufffdｶ?_0_1"  # MMD's "not encodable" mark
    assert vmd.decode_name("右腕捩れ補助".encode("cp932")[:11]) == "右腕捩れ補\ufffd"
    assert vmd.encode_name("左つま先ＩＫ") == "左つま先ＩＫ".encode("cp932") + b"\0\0\0"
    long_name = "右腕捩れ補助テスト"
    assert vmd.encode_name(long_name) == long_name.encode("cp932")[:15]
    assert vmd.name_problem(long_name) is not None and vmd.name_problem("首") is None
    assert vmd.encode_name("a\u00e9b")[:1] == b"\0"
    raw, warnings = vmd.encode_names(["首", long_name, long_name, "首"])
    assert raw.dtype == np.dtype("S15") and len(raw) == 4
    assert len(warnings) == 1 and long_name in warnings[0] and "18 cp932 bytes" in warnings[0]
    raw, warnings = vmd.encode_names(["あいうえおかきくけこ"], vmd.MODEL_NAME_SIZE, "model")
    assert warnings == [] and vmd.decode_name(raw[0].ljust(20, b"\0")) == "あいうえおかきくけこ"
    m = vmd.Motion()
    m.model_name = "巡音ルカ"
    assert m.model_name == "巡音ルカ" and len(m.model_name_raw) == 20


def test_distinct_names_keep_padding_and_order():
    names = np.array([b"B", b"A\0\xfd", b"A", b"B", b"\x82"], "S15")
    texts, index = vmd.distinct_names(names)
    assert texts == ["B", "A", "\ufffd"] and index.tolist() == [0, 1, 1, 0, 2]
    m = vmd.Motion(bone_keys=vmd.new_bone_keys(3))
    m.bone_keys["name"] = [b"A\0\xfd\xfd", b"A", b"B"]
    assert vmd.read(vmd.write(m)).bone_keys["name"].view("V15").tolist() == m.bone_keys["name"].view("V15").tolist()


# ------------------------------------------------------------------------------------------------------------
# A generated motion, parsed by babylon-mmd

LUKA_BONES = ("センター", "左足", "左ひざ", "上半身", "首")


def generated_motion(seed: int = 9) -> vmd.Motion:
    """5 keys for each of 5 bones, 7–30 frames apart, stored unsorted; every block with distinct non-linear
    X/Y/Z/R curves; two keys with physics bytes 0x63,0x0F; plus morph, camera, light, shadow and IK keys."""
    rng = np.random.default_rng(seed)
    n = 5 * len(LUKA_BONES)
    keys = vmd.new_bone_keys(n)
    names, warnings = vmd.encode_names([b for b in LUKA_BONES for _ in range(5)])
    assert warnings == []
    keys["name"] = names
    keys["frame"] = np.concatenate([np.cumsum(rng.integers(7, 31, 5)) - 7 for _ in LUKA_BONES])
    keys["position"][:5] = rng.uniform(-30, 30, (5, 3))  # センター moves; the others only rotate
    q = rng.normal(size=(n, 4))
    keys["rotation"] = q / np.linalg.norm(q, axis=1, keepdims=True)
    curves = np.empty((n, 4, 4), np.int64)
    for i in range(n):
        while True:
            c = rng.integers(0, 128, (4, 4))
            if len({tuple(r) for r in c}) == 4 and not any(tuple(r) == vmd.LINEAR_CURVE for r in c):
                break
        curves[i] = c
    flags = np.zeros(n, bool)
    flags[[3, 17]] = True
    keys["interpolation"] = vmd.build_interpolation(curves, physics_off=flags)
    order = rng.permutation(n)
    m = vmd.Motion(bone_keys=keys[order])
    m.model_name = "巡音ルカ"
    morphs = np.zeros(4, vmd.MORPH_KEY)
    morphs["name"] = vmd.encode_names(["あ", "あ", "まばたき", "笑い"], what="morph")[0]
    morphs["frame"] = [30, 0, 12, 5]
    morphs["weight"] = [0, 1, 0.5, 0.25]
    m.morph_keys = morphs
    m.camera_keys = np.zeros(2, vmd.CAMERA_KEY)
    m.camera_keys["frame"] = [10, 0]
    m.camera_keys["distance"] = -45
    m.camera_keys["view_angle"] = 30
    m.camera_keys["interpolation"] = np.tile([20, 107, 20, 107], 6)
    m.light_keys = np.zeros(1, vmd.LIGHT_KEY)
    m.light_keys["color"] = 0.6
    m.light_keys["direction"] = (-0.5, -1, 0.5)
    m.shadow_keys = np.zeros(1, vmd.SHADOW_KEY)
    m.shadow_keys["mode"] = 1
    ik = np.zeros(2, vmd.IK_STATE)
    ik["name"] = vmd.encode_names(["左足ＩＫ", "右足ＩＫ"], vmd.IK_NAME_SIZE, "IK")[0]
    ik["enabled"] = [0, 1]
    m.property_keys = [vmd.PropertyKey(frame=20, visible=1, ik=ik)]
    return m


def babylon_parse(paths: list[pathlib.Path]) -> dict[str, dict]:
    """What babylon-mmd read from each file (tests/js/vmd_counts.mjs), by path."""
    return tools.babylon_parse("vmd_counts.mjs", paths)


def expected_counts(m: vmd.Motion) -> dict:
    return {"boneKeys": len(m.bone_keys), "morphKeys": len(m.morph_keys), "cameraKeys": len(m.camera_keys),
            "lightKeys": len(m.light_keys), "selfShadowKeys": len(m.shadow_keys)}


def check_against_babylon(m: vmd.Motion, r: dict) -> None:
    assert "error" not in r, r.get("error")
    assert r["warnings"] == []
    assert {k: r[k] for k in expected_counts(m)} == expected_counts(m)
    names = vmd.key_names(m.bone_keys["name"])
    assert [(b["name"], b["frame"], b["interpolation"]) for b in r["bones"]] == \
        list(zip(names, m.bone_keys["frame"].tolist(), m.bone_keys["interpolation"].tolist()))
    assert [(k["name"], k["frame"]) for k in r["morphs"]] == \
        list(zip(vmd.key_names(m.morph_keys["name"]), m.morph_keys["frame"].tolist()))
    assert [(p["frame"], p["visible"], [[n, bool(e)] for n, e in p["ikStates"]]) for p in r["propertyKeys"]] == \
        [(k.frame, bool(k.visible), [[vmd.decode_name(s["name"]), bool(s["enabled"])] for s in k.ik])
         for k in m.property_keys]
    # babylon-mmd's loader: per track, keys sorted by frame, its own reading of the curves and physics bytes
    curves = vmd.curves(m.bone_keys["interpolation"])
    off = vmd.physics_off(m.bone_keys["interpolation"])
    assert sorted(t["name"] for t in r["tracks"]) == sorted(set(names))
    for t in r["tracks"]:
        mine = [i for i in np.argsort(m.bone_keys["frame"], kind="stable") if names[i] == t["name"]]
        assert t["frames"] == m.bone_keys["frame"][mine].tolist()
        c = curves[mine]  # (keys, channel, x1 y1 x2 y2); babylon orders x1 x2 y1 y2
        assert t["positionInterpolations"] == c[:, :3][:, :, [0, 2, 1, 3]].reshape(-1).tolist()
        assert t["rotationInterpolations"] == c[:, 3][:, [0, 2, 1, 3]].reshape(-1).tolist()
        assert t["physicsToggles"] == [0 if o else 1 for o in off[mine]]


def test_generated_motion_is_parsed_by_babylon_mmd(tmp_path):
    m = generated_motion()
    data = vmd.write(m)
    assert not np.all(np.diff(m.bone_keys["frame"].astype(np.int64)) >= 0)  # stored unsorted
    back = vmd.read(data)
    assert back.warnings == []
    assert_same_bytes(vmd.write(back), data, vmd.read)
    np.testing.assert_array_equal(back.bone_keys.view(np.uint8), m.bone_keys.view(np.uint8))
    assert vmd.physics_off(back.bone_keys["interpolation"]).sum() == 2
    w = walk(data)
    assert (len(w["bones"]), len(w["morphs"]), len(w["properties"]), w["groups"]) == (25, 4, 1, 3)
    path = tmp_path / "generated.vmd"
    path.write_bytes(data)
    r = babylon_parse([path])[str(path)]
    check_against_babylon(m, r)
    assert sum(t["physicsToggles"].count(0) for t in r["tracks"]) == 2
    assert {t["name"] for t in r["morphTracks"]} == {"あ", "まばたき", "笑い"}


def test_babylon_agrees_with_our_reader_on_the_samples(testdata, tmp_path):
    paths = []
    for name in SAMPLES:
        written = tmp_path / name  # what our writer produces from what our reader kept
        written.write_bytes(vmd.write(vmd.read(sample_bytes(testdata, name))))
        paths.append(written)
    results = babylon_parse(paths)
    for path in paths:
        m = vmd.read(path.read_bytes())
        check_against_babylon(m, results[str(path)])
    phys = results[str(tmp_path / PHYSICS)]
    assert sum(t["physicsToggles"].count(0) for t in phys["tracks"]) == 9


# ------------------------------------------------------------------------------------------------------------
# Bad input

def _read_or_format_error(data: bytes) -> vmd.Motion | None:
    try:
        m = vmd.read(data)
    except FormatError:
        return None
    assert_same_bytes(vmd.write(m), data, vmd.read)  # whatever reads, writes back as it was
    return m


@pytest.mark.parametrize("name", SAMPLES)
def test_truncations_read_or_raise_format_error(testdata, name):
    data = sample_bytes(testdata, name)
    for k in range(64):
        _read_or_format_error(data[:len(data) * k // 64])


@pytest.mark.parametrize("name", SAMPLES)
def test_random_byte_flips_read_or_raise_format_error(testdata, name):
    data = sample_bytes(testdata, name)
    rng = random.Random(f"vmd-flips-{name}")
    tracemalloc.start()
    try:
        for _ in range(1000):
            b = bytearray(data)
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            _read_or_format_error(bytes(b))
        for at in count_offsets(data):  # random flips rarely hit the few count bytes: hit each one directly
            for _ in range(20):
                b = bytearray(data)
                b[at + rng.randrange(4)] = rng.randrange(256)
                _read_or_format_error(bytes(b))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * len(data) + (4 << 20), f"peak allocation {peak} bytes for a {len(data)}-byte file"


def test_counts_are_checked_against_the_bytes_left(testdata):
    data = sample_bytes(testdata, SHAGAMU)
    header = data[:50]
    with pytest.raises(FormatError) as e:
        vmd.read(header + struct.pack("<I", 0xFFFFFFFF))
    assert e.value.offset == 50 and e.value.field == "bone keys count"
    with pytest.raises(FormatError) as e:
        vmd.read(header + struct.pack("<II", 0, 0x7FFFFFFF))
    assert e.value.offset == 54 and e.value.field == "morph keys count"
    ik_count_at = 50 + 4 * 6 + 5
    prop = header + struct.pack("<IIIIII", 0, 0, 0, 0, 0, 1) + struct.pack("<IBI", 0, 1, 0xFFFFFFF0)
    with pytest.raises(FormatError) as e:
        vmd.read(prop)
    assert e.value.offset == ik_count_at and "IK state count" in e.value.field
    with pytest.raises(FormatError) as e:
        vmd.read(header + struct.pack("<IIIIII", 0, 0, 0, 0, 0, 0xFFFFFFFF))
    assert e.value.field == "property key count"


def test_not_a_vmd(testdata):
    with pytest.raises(FormatError):
        vmd.read(b"")
    with pytest.raises(FormatError):
        vmd.read(b"Vocaloid Motion Data file\0\0\0\0\0" + bytes(30))  # version 1 (10-byte model name)
    with pytest.raises(FormatError):
        vmd.read((testdata / "pmx" / "mlibgo_sample_pmx21_utf8.pmx").read_bytes())


def test_a_random_signature_is_quoted_short_and_escaped():
    noise = bytes(np.random.default_rng(7).integers(1, 256, 30, dtype=np.uint8))
    with pytest.raises(FormatError) as e:
        vmd.read(b"\x1b[2J" + noise + bytes(60))
    text = str(e.value)
    assert "found '\\x1b[2J" in text and "…" in text and len(text) < 200
    assert all(c.isprintable() for c in text) and "\ufffd" not in text
