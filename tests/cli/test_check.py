"""`skinbridge check` for every format with a codec.

Corrupted copies give exactly one error naming the bone or vertex, its byte offset and field, and exit 1.
Offsets are worked out from the layouts (docs/urho.md §3, docs/mmd.md §2) by tests/support/umd2_offsets.py and
pmx_offsets.py, never taken from our readers.
"""
from __future__ import annotations

import re
import struct

import pytest

from conftest import run_cli
from support.pmx_offsets import LUKA_BONES, bone_field_offsets, luka_vertex_offsets
from support.umd2_offsets import fox_layout

pytestmark = pytest.mark.blender

def check(*paths) -> tuple[int, dict[str, list[str]]]:
    """Exit status and the lines printed for each file."""
    r = run_cli("check", *paths)
    blocks: dict[str, list[str]] = {}
    current = None
    for line in r.stdout.splitlines():
        if not line.startswith("  "):
            current = line.rstrip(":")
            blocks[current] = []
        else:
            blocks[current].append(line.strip())
    return r.returncode, blocks


def error_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("error:")]


def parse_error(line: str) -> tuple[str, int, str]:
    """(element, offset, field) of a finding line `error: ELEMENT: FIELD @ OFFSET (0x..): MESSAGE`."""
    m = re.match(r"error: (.+?): (.+?) @ (\d+) \(0x[0-9a-f]+\): ", line)
    assert m, line
    return m.group(1), int(m.group(3)), m.group(2)


def test_real_files_have_no_error(testdata):
    files = sorted((testdata / "urho3d").iterdir()) + sorted((testdata / "pmx").glob("*.pmx"))
    status, blocks = check(*files)
    assert status == 0, blocks
    for path, lines in blocks.items():
        assert error_lines(lines) == [] and lines[-2].startswith("0 error(s)"), (path, lines)
    rt = {p.rsplit("/", 1)[-1]: lines[-1] for p, lines in blocks.items()}
    assert rt["MaterialPreview.mdl"] == rt["Ninja_Walk.ani"] == rt["Ninja_Idle1.ani"] == "roundtrip: identical"
    # every variant the codec writes is written back: UMDL models and rbfx UAN2 animations too
    assert rt["Ninja.mdl"] == rt["Box.mdl"] == rt["Kachujin.mdl"] == "roundtrip: identical"
    assert rt["Kachujin_Walk.ani"] == "roundtrip: identical"
    assert rt["mmdtools_megurine_luka.pmx"] == "roundtrip: identical"


def test_vmd_files(testdata):
    status, blocks = check(*sorted((testdata / "pmx").glob("*.vmd")))
    assert status == 0, blocks
    for path, lines in blocks.items():
        assert error_lines(lines) == [] and lines[-1] == "roundtrip: identical", (path, lines)


def test_unknown_content_is_unsupported(tmp_path):
    path = tmp_path / "thing.mdl"
    path.write_bytes(b"ZZZV0013" + bytes(56))
    status, blocks = check(path)
    assert status == 2
    [line] = blocks[str(path)]
    assert "unsupported format" in line and "ZZZV0013" in line and ".mdl" in line


def test_corrupted_fox_models(fox_mdl, tmp_path):
    data = fox_mdl.read_bytes()
    lay = fox_layout(data)
    out = {}

    def copy(name: str, edit) -> str:
        b = bytearray(data)
        edit(b)
        path = tmp_path / f"{name}.mdl"
        path.write_bytes(bytes(b))
        out[name] = str(path)
        return str(path)

    # a NaN position: vertex 7
    nan_at = lay["vertex_data"] + 7 * lay["stride"] + lay["position"]
    copy("nan", lambda b: struct.pack_into("<f", b, nan_at + 4, float("nan")))
    # a bone index equal to the bone count: bone 5's parent
    name5, _, parent5 = lay["bones"][5]
    copy("parent", lambda b: struct.pack_into("<i", b, parent5, lay["n_bones"]))
    # a vertex count beyond its data: the smallest count whose vertices need more bytes than the file has left
    # (a count only a little too large reads the next sections' bytes as vertices and fails further on)
    beyond = (len(data) - lay["vertex_data"]) // lay["stride"] + 1
    copy("count", lambda b: struct.pack_into("<I", b, lay["count_at"], beyond))
    status, blocks = check(*out.values())
    assert status == 1
    expected = {"nan": ("vertex buffer 0 vertex 7", nan_at, "POSITION0"),
                "parent": (f"bone 5 ({name5})", parent5, "parent"),
                "count": ("vertex buffer 0", lay["count_at"], "vertex count")}
    for name, (element, offset, field) in expected.items():
        lines = blocks[out[name]]
        [line] = error_lines(lines)
        assert parse_error(line) == (element, offset, field), line
        assert lines[-2].startswith("1 error(s)")
    assert blocks[out["nan"]][-1] == "roundtrip: identical"  # the codec keeps the NaN


def test_corrupted_luka_and_animation(testdata, tmp_path):
    luka = (testdata / "pmx" / "mmdtools_megurine_luka.pmx").read_bytes()
    at = bone_field_offsets(luka, "左足ＩＫ")
    lower, upper = at["ik.links[0].lower"], at["ik.links[0].upper"]
    swapped = bytearray(luka)
    swapped[lower:lower + 12], swapped[upper:upper + 12] = luka[upper:upper + 12], luka[lower:lower + 12]
    (tmp_path / "knee.pmx").write_bytes(bytes(swapped))
    # vertex 3's first bone index = the bone count (2-byte indices; 32 + 16·4 bytes before the deform byte)
    _, v3 = luka_vertex_offsets(luka, 3)
    bone_at = v3 + 32 + 16 * 4 + 1
    bad_bone = bytearray(luka)
    struct.pack_into("<h", bad_bone, bone_at, LUKA_BONES)
    (tmp_path / "bone.pmx").write_bytes(bytes(bad_bone))
    # classic UANI: a NaN in track 2's key 1 rotation (cstring name, f32 length, u32 tracks; per track cstring,
    # u8 mask, u32 key count, keys of time + the masked channels)
    ani = (testdata / "urho3d" / "Ninja_Walk.ani").read_bytes()
    pos = ani.index(b"\0", 4) + 1 + 8
    for track in range(3):
        name_end = ani.index(b"\0", pos)
        name = ani[pos:name_end].decode()
        mask = ani[name_end + 1]
        keys = name_end + 2 + 4
        key_size = 4 + (12 if mask & 1 else 0) + (16 if mask & 2 else 0) + (12 if mask & 4 else 0)
        if track < 2:
            pos = keys + struct.unpack_from("<I", ani, keys - 4)[0] * key_size
    assert mask & 2
    rot_at = keys + key_size + 4 + (12 if mask & 1 else 0)
    bad_ani = bytearray(ani)
    struct.pack_into("<f", bad_ani, rot_at + 4, float("inf"))
    (tmp_path / "walk.ani").write_bytes(bytes(bad_ani))
    status, blocks = check(tmp_path / "knee.pmx", tmp_path / "bone.pmx", tmp_path / "walk.ani")
    assert status == 1
    expected = {"knee.pmx": ("左足ＩＫ link 0 (左ひざ)", lower, "ik.links[0].lower"),
                "bone.pmx": ("vertex 3", bone_at, "bones[0]"),
                "walk.ani": (f"track 2 ({name}) key 1", rot_at, "rotation")}
    for file, triple in expected.items():
        [line] = error_lines(blocks[str(tmp_path / file)])
        assert parse_error(line) == triple, line
