"""`skinbridge diff A B` (README "diff", docs/architecture.md §6.5): per record, what differs between two files of
one format.

For each format with a shared sample, the sample's bytes are copied and one field is changed at an offset worked
out here (from the layout, or by finding the value's bytes in the file); diff must name that record and field at
that offset in both files, with both values, and exit 1. Identical files exit 0, files of two formats or an
unreadable file exit 2 in one line. Bpy-free: the command reads with the codecs only.
"""
from __future__ import annotations

import dataclasses
import json
import re
import struct

import numpy as np

from skinbridge import cli, formats
from skinbridge.core.diff import diff_files, diff_records
from skinbridge.io_mdb.gr2 import gr2, write as gr2_write
from skinbridge.io_mdb.mdb import mdb
from skinbridge.io_wepuppet.puppet import mdl
from support.pmx_offsets import luka_vertex_offsets


def _diff(capfd, *args) -> tuple[int, list[str], list[str]]:
    code = cli.main(["diff", *(str(a) for a in args)])
    out, err = capfd.readouterr()
    return code, out.splitlines(), err.splitlines()


def _planted(tmp_path, name: str, data: bytes, at: int, new: bytes) -> tuple:
    """Files A (the sample's bytes) and B (the same with `new` at `at`) in tmp_path."""
    assert data[at:at + len(new)] != new, "the planted bytes must change the file"
    a, b = tmp_path / f"a_{name}", tmp_path / f"b_{name}"
    a.write_bytes(data)
    b.write_bytes(data[:at] + new + data[at + len(new):])
    return a, b


def _assert_names(capfd, a, b, record: str, field: str, at: int) -> list[str]:
    """diff exits 1 and its first difference is `record: field @ at / at`; the summary counts one."""
    code, out, err = _diff(capfd, a, b)
    assert code == 1, (out, err)
    lines = out[2:]
    assert lines[0].startswith(f"{record}: {field} @ {at} / {at}: "), lines
    assert lines[-1].startswith("1 difference(s) in 1 record(s)"), lines
    return lines


def _find(data: bytes, value: bytes, start: int = 0) -> int:
    at = data.find(value, start)
    assert at >= 0 and data.find(value, at + 1) != at
    return at


def test_umd2_vertex_position(capfd, tmp_path, testdata):
    data = (testdata / "urho3d/Box.mdl").read_bytes()
    # UMDL: magic, buffer count, vertex count, element mask, morph range start and count: the first vertex at 24
    assert data[:4] == b"UMDL" and struct.unpack_from("<I", data, 4)[0] == 1
    at = 24 + 4  # vertex 0, POSITION0 y
    a, b = _planted(tmp_path, "Box.mdl", data, at, struct.pack("<f", 7.25))
    lines = _assert_names(capfd, a, b, "vertex_buffers[0].vertices[0]", "POSITION0", 24)
    assert "→ [-0.5, 7.25, " in lines[0]


def test_uani_key_time(capfd, tmp_path, testdata):
    data = (testdata / "urho3d/Ninja_Walk.ani").read_bytes()
    # a track: name and its 0, channel mask (1 byte), key count (4), then the keys (time first)
    at = _find(data, b"\0Joint2\0") + len(b"\0Joint2\0") + 1 + 4
    a, b = _planted(tmp_path, "Walk.ani", data, at, struct.pack("<f", 9.5))
    lines = _assert_names(capfd, a, b, "tracks[1] (Joint2)", "times[0]", at)
    assert lines[0].endswith("→ 9.5")


def test_pmx_vertex_position(capfd, tmp_path, testdata):
    data = (testdata / "pmx/mmdtools_megurine_luka.pmx").read_bytes()
    _, at = luka_vertex_offsets(data, 5)
    a, b = _planted(tmp_path, "luka.pmx", data, at, struct.pack("<f", 7.25))
    lines = _assert_names(capfd, a, b, "vertices[5]", "position", at)
    assert "→ [7.25, " in lines[0]


def test_vmd_key_frame(capfd, tmp_path, testdata):
    data = (testdata / "pmx/mlibgo_shagamu.vmd").read_bytes()
    # signature 30, model name 20, bone key count 4; a key: name 15, frame 4, position 12, rotation 16, curves 64
    at = 30 + 20 + 4 + 2 * 111 + 15
    a, b = _planted(tmp_path, "shagamu.vmd", data, at, struct.pack("<I", 999))
    lines = _assert_names(capfd, a, b, r"bone_keys[2] (" + data[54 + 222:54 + 222 + 15].split(b"\0")[0].decode(
        "cp932") + ")", "frame", at)
    assert lines[0].endswith("→ 999")


def test_wepuppet_vertex_position(capfd, tmp_path, testdata):
    data = (testdata / "wepuppet/blacryu_goose_t_puppet.mdl").read_bytes()
    first = mdl.read(data).meshes[0].vertices["position"][0]
    at = _find(data, first.tobytes())
    a, b = _planted(tmp_path, "goose.mdl", data, at, struct.pack("<f", 9.5))
    lines = _assert_names(capfd, a, b, "meshes[0].vertices[0]", "position", at)
    assert "→ [9.5, " in lines[0]


def test_mdb_vertex_position(capfd, tmp_path, testdata):
    data = (testdata / "mdb/ovr_w_rapr221_b.mdb").read_bytes()
    packet = mdb.read(data).packets[0]
    at = _find(data, packet.vertices["position"][1].tobytes())
    a, b = _planted(tmp_path, "rapr.mdb", data, at, struct.pack("<f", 9.5))
    lines = _assert_names(capfd, a, b, "packets[0].vertices[1]", "position", at)
    assert "→ [9.5, " in lines[0]


def test_gr2_bone_name(capfd, tmp_path, testdata):
    # the game's sections are compressed: our writer's uncompressed copy of the skeleton, then one name byte
    data = gr2_write.rewrite(gr2.read((testdata / "gr2/ovr_P_HEF_skel83.GR2").read_bytes()))
    at = _find(data, b"LLegAnkle\0")
    a, b = _planted(tmp_path, "skel.gr2", data, at, b"Q")
    code, out, _ = _diff(capfd, a, b)
    assert code == 1
    assert re.match(rf"root\.Skeletons\[0\].*\.Bones\[3\] \(LLegAnkle\): Name @ {at} / {at}: 'LLegAnkle' → "
                    r"'QLegAnkle'$", out[2]), out


def test_smd_vertex_position(capfd, tmp_path, testdata):
    data = (testdata / "smd/bst_Cube_Armature_ref.smd").read_bytes()
    line = data.index(b"\n", data.index(b"triangles") + len(b"triangles\n")) + 1  # the first vertex line
    at = line + data[line:].index(b"-1.000000")  # after the bone index: position x
    a, b = _planted(tmp_path, "cube.smd", data, at + 1, b"7")
    lines = _assert_names(capfd, a, b, "triangles", "positions[0]", at + 1)
    assert lines[0].endswith("→ [-7, -1, 1]")


def test_same_records_in_other_bytes(capfd, tmp_path, testdata):
    data = (testdata / "smd/bst_Cube_Armature_ref.smd").read_bytes()
    at = data.index(b"\nnodes") + 1
    a, b = tmp_path / "a.smd", tmp_path / "b.smd"
    a.write_bytes(data)
    b.write_bytes(data[:at] + b"nodes  " + data[at + len(b"nodes"):])  # the keyword line, with trailing spaces
    code, out, _ = _diff(capfd, a, b)
    assert code == 1 and out[2] == f"file: bytes @ {at + 5} / {at + 5}: '{len(data)} bytes' → '{len(data) + 2} bytes'"


def test_dmx_element_name(capfd, tmp_path, testdata):
    data = (testdata / "dmx/bst_Cube_NoArmature.dmx").read_bytes()
    at = _find(data, b"\0Cube\0") + 1  # binary DMX: the name in the string table, which its elements share
    a, b = _planted(tmp_path, "cube.dmx", data, at, b"T")
    code, out, _ = _diff(capfd, a, b)
    assert code == 1
    assert out[2] == f"strings[1] @ {at} / {at}: 'Cube' → 'Tube'", out
    renamed = [line for line in out[3:-1]
               if re.match(r"elements\[\d+\] \(Cube\): name @ \? / \?: 'Cube' → 'Tube'$", line)]
    assert len(renamed) == len(out) - 4 == 5, out


def test_identical_and_refusals(capfd, tmp_path, testdata):
    sample = testdata / "urho3d/Box.mdl"
    copy = tmp_path / "copy.mdl"
    copy.write_bytes(sample.read_bytes())
    assert _diff(capfd, sample, copy)[:2] == (0, [f"A: {sample} (UrhoX / Urho3D model, 1436 bytes)",
                                                f"B: {copy} (1436 bytes)", "identical"])
    assert _diff(capfd, testdata / "gltf/Fox.glb", testdata / "gltf/Fox.glb")[1][-1] == "identical"
    code, out, err = _diff(capfd, testdata / "gltf/Fox.glb", testdata / "urho3d/Box.mdl")
    assert code == 2 and not out and len(err) == 1
    fox = (testdata / "gltf/Fox.glb").read_bytes()
    (tmp_path / "fox.glb").write_bytes(fox[:-1] + bytes([fox[-1] ^ 1]))
    code, out, err = _diff(capfd, testdata / "gltf/Fox.glb", tmp_path / "fox.glb")
    assert code == 2 and not out and err == [f"error: {testdata / 'gltf/Fox.glb'}: glTF 2.0 files have no record "
                                             "reader to diff"]
    code, out, err = _diff(capfd, sample, testdata / "urho3d/Ninja_Walk.ani")
    assert code == 2 and not out and len(err) == 1 and "two files of one format" in err[0]
    cut = tmp_path / "cut.vmd"
    cut.write_bytes((testdata / "pmx/mlibgo_shagamu.vmd").read_bytes()[:100])
    code, out, err = _diff(capfd, testdata / "pmx/mlibgo_shagamu.vmd", cut)
    assert code == 2 and not out and len(err) == 1 and err[0].startswith(f"error: {cut}: offset 50")
    code, _, err = _diff(capfd, sample, tmp_path / "missing.mdl")
    assert code == 2 and len(err) == 1 and "no such file" in err[0]


def test_limit_json_and_added_records(capfd, testdata):
    a, b = testdata / "urho3d/Ninja.mdl", testdata / "urho3d/Kachujin.mdl"
    code, out, _ = _diff(capfd, a, b, "--limit", "3")
    assert code == 1 and len(out) == 2 + 3 + 2
    assert re.match(r"and \d+ more$", out[-2]) and re.search(r"\d+ record\(s\) added", out[-1])
    code, out, _ = _diff(capfd, a, b, "--limit", "2", "--json")
    result = json.loads("\n".join(out))
    assert code == 1 and len(result["differences"]) == 2 and result["total"] > 2 and result["added"] > 0
    assert result["differences"][0]["record"] == "vertex_buffers[0].vertices[0]"


def test_structured_result_for_tools(testdata):
    """What a tool such as an edit campaign calls: every difference, with offsets and values."""
    data = (testdata / "pmx/mlibgo_shagamu.vmd").read_bytes()
    spec = formats.identify(data[:formats.head_size()], "x.vmd")
    at = 30 + 20 + 4 + 15
    changed = data[:at] + struct.pack("<I", 12345) + data[at + 4:]
    result = diff_files(spec, data, changed, limit=None)
    assert not result.identical and result.total == 1 and (result.added, result.removed) == (0, 0)
    d = result.differences[0]
    assert (d.field, d.offset_a, d.offset_b, int(np.asarray(d.value_b))) == ("frame", at, at, 12345)
    assert d.record.startswith("bone_keys[0]")
    assert diff_files(spec, data, data).identical
    curve = 30 + 20 + 4 + 111 + 15 + 4 + 12 + 16 + 20  # key 1's interpolation byte 20
    result = diff_files(spec, data, data[:curve] + bytes([data[curve] ^ 1]) + data[curve + 1:])
    d = result.differences[0]
    assert (result.total, d.field, d.offset_a, int(d.value_b)) == (1, "interpolation[20]", curve, data[curve] ^ 1)


def _project(folder, puppet: bytes, zoom: str) -> None:
    """A Wallpaper Engine project made here: project.json, scene.json (one model layer) and the puppet."""
    (folder / "models").mkdir(parents=True)
    (folder / "models/goose.mdl").write_bytes(puppet)
    (folder / "project.json").write_text(json.dumps({"file": "scene.json", "title": "goose", "type": "scene"}))
    scene = {"camera": {"center": "0 0 0", "eye": "0 0 1", "up": "0 1 0", "zoom": zoom},
             "general": {"orthogonalprojection": {"width": 1920, "height": 1080}},
             "objects": [{"id": 1, "name": "goose", "image": "models/goose.json", "origin": "960 540 0"}]}
    (folder / "scene.json").write_text(json.dumps(scene, indent=1))


def test_project_names_each_file(capfd, tmp_path, testdata):
    """A project stands for its folder: diff compares its files one by one, each with its own format (the puppet's
    records, scene.json's JSON), and names the file, the record and the field; a file in one folder only is one
    record added."""
    data = (testdata / "wepuppet/blacryu_goose_t_puppet.mdl").read_bytes()
    first = mdl.read(data).meshes[0].vertices["position"][0]
    at = _find(data, first.tobytes())
    edited = data[:at] + struct.pack("<f", 9.5) + data[at + 4:]
    _project(tmp_path / "a", data, "1")
    _project(tmp_path / "b", edited, "2")
    (tmp_path / "b/notes.txt").write_text("new")
    _project(tmp_path / "c", data, "1")
    assert formats.identify_file(str(tmp_path / "a/project.json")).has("members")
    code, out, err = _diff(capfd, tmp_path / "a/project.json", tmp_path / "c/project.json")
    assert (code, out[2:]) == (0, ["identical"]), (out, err)
    code, out, err = _diff(capfd, tmp_path / "a/project.json", tmp_path / "b/project.json")
    assert code == 1, (out, err)
    lines = out[2:]
    assert lines[0].startswith(f"models/goose.mdl » meshes[0].vertices[0]: position @ {at} / {at}: "), lines
    assert "→ [9.5, " in lines[0]
    assert lines[1].startswith("notes.txt » notes.txt: file @ ? / ?: (none) → '3 bytes'"), lines
    assert lines[2].startswith("scene.json » camera: ") and "'1' → '2'" in lines[2], lines
    assert lines[-1].startswith("3 difference(s) in 3 record(s); 1 record(s) added, 0 removed"), lines


def test_records_added_or_removed_are_named():
    """A list or array with more records in one file: its count's line names the first records added (or
    removed) when they have names, so a key added at the end of a table of every bone's keys says whose it is."""
    keys = np.zeros(2, [("name", "S15"), ("frame", "<u4")])
    keys["name"] = [b"center", b"\x83Z\x83\x93\x83^\x81["]  # センター in Shift-JIS
    more = np.concatenate([keys, keys[1:]])
    more["frame"][2] = 99
    got = diff_records({"keys": keys}, {"keys": more}, b"a", b"b")
    assert [(d.record, d.field, d.value_a, d.value_b) for d in got.differences] == [
        ("keys (added: センター)", "count", 2, 3)]
    assert got.added == 1
    bones = [{"name": "hips"}, {"name": "spine"}, {"name": "neck"}, {"name": "head"}, {"name": "jaw"}, {"name": ""}]
    got = diff_records({"bones": bones}, {"bones": bones[:1]}, b"a", b"b")
    assert [(d.record, d.field) for d in got.differences] == [("bones (removed: spine, neck, head, …)", "count")]
    assert got.removed == 5


def test_a_named_record_inserted_is_one_record_added():
    """Named records (GR2's tracks sorted by name, a bone list) with one inserted in the middle: one record added,
    named, and the records after it compared with their own (a change in one of them still found there)."""
    tracks = [{"name": n, "keys": [0.0, 1.0]} for n in ("Hips", "Neck", "Spine")]
    more = tracks[:1] + [{"name": "Jaw", "keys": [2.0]}] + [dict(t) for t in tracks[1:]]
    more[3] = {"name": "Spine", "keys": [0.0, 5.0]}
    got = diff_records({"tracks": tracks}, {"tracks": more}, b"a", b"b")
    assert [(d.record, d.field, d.value_a, d.value_b) for d in got.differences] == [
        ("tracks[2] (Spine).keys[1]", "", 1.0, 5.0), ("tracks (added: Jaw)", "count", 3, 4)]
    assert (got.total, got.added) == (2, 1)


def test_a_record_removed_among_named_and_one_of_a_kind_records():
    """MDB's packets: named mesh packets (names as bytes) and one collision packet without a name; a mesh
    deleted in the middle is one record removed, and the collision packet is compared with its own (it was
    compared with the packet that took its index: every later packet changed)."""
    @dataclasses.dataclass
    class Mesh:
        name: bytes
        offset: int

    @dataclasses.dataclass
    class Cols:
        spheres: int

    a = [Mesh(b"Hair\0\0", 52), Mesh(b"Hair_L02\0", 900), Cols(3)]
    b = [Mesh(b"Hair\0\0", 44), Cols(3)]
    got = diff_records({"packets": a}, {"packets": b}, b"a", b"b")
    assert [(d.record, d.field, d.value_a, d.value_b) for d in got.differences] == [
        ("packets[0]", "offset", 52, 44), ("packets (removed: Hair_L02)", "count", 3, 2)]
