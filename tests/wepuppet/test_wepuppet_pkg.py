"""Wallpaper Engine packages (`scene.pkg`) without Blender: a package made by a packer written here from the layout
RePKG's PackageReader reads (an int32-length-prefixed magic `PKGV####`, an int32 count, per entry an int32-length-
prefixed path, an int32 offset from the end of the header and an int32 size, then the data) reads back to its
files byte for byte and in its order; ours is read by a reader written here; a project folder holding scene.pkg
is read (info, members) as its unpacked folder; each kind of hostile package is refused in one line naming the
offset and the field, and nothing is written outside the output."""
from __future__ import annotations

import os
import struct

import pytest

from skinbridge import formats
from skinbridge.core.errors import FormatError
from skinbridge.io_wepuppet.project import info as project_info
from skinbridge.io_wepuppet.project import pkg, project

PROJECT = (b'{"file": "scene.json", "preview": "preview.jpg", "title": "Packed", "type": "scene", '
           b'"general": {"properties": {}}}')
SCENE = b'{"camera": {"center": "0 0 0"}, "general": {"orthogonalprojection": {"width": 64, "height": 32}}, ' \
        b'"objects": [{"id": 1, "name": "plate", "image": "models/plate.json", "origin": "32 16 0"}]}'
FILES = [("scene.json", SCENE),
         ("models/plate.json", b'{"material": "materials/plate.json"}'),
         ("materials/plate.json", b'{"passes": [{"textures": ["plate"]}]}'),
         ("materials/plate.tex", bytes(range(256)) * 3),
         ("empty.txt", b"")]


def s32(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<i", len(raw)) + raw


def independent_pack(files, magic=b"PKGV0009", order=None) -> bytes:
    """The layout above, written here: entries listed in `order` (default: as given), data in the files' order."""
    offsets, at = {}, 0
    for path, data in files:
        offsets[path] = (at, len(data))
        at += len(data)
    listed = order or [p for p, _ in files]
    head = s32(magic) + struct.pack("<i", len(listed))
    for path in listed:
        head += s32(path) + struct.pack("<ii", *offsets[path])
    return head + b"".join(d for _, d in files)


def independent_read(data: bytes) -> tuple[bytes, list[tuple[str, int, int]], dict[str, bytes]]:
    n = struct.unpack_from("<i", data)[0]
    magic, at = data[4:4 + n], 4 + n
    count = struct.unpack_from("<i", data, at)[0]
    at += 4
    entries = []
    for _ in range(count):
        k = struct.unpack_from("<i", data, at)[0]
        path = data[at + 4:at + 4 + k].decode()
        offset, size = struct.unpack_from("<ii", data, at + 4 + k)
        entries.append((path, offset, size))
        at += 12 + k
    return magic, entries, {p: data[at + o:at + o + s] for p, o, s in entries}


def test_a_package_of_an_independent_packer_reads_back_to_its_files_in_its_order():
    order = [p for p, _ in FILES][::-1]  # listed in another order than the data lies
    data = independent_pack(FILES, order=order)
    package, members = pkg.read(data)
    assert package.magic == "PKGV0009" and list(members) == order
    assert {p: bytes(v) for p, v in members.items()} == dict(FILES)
    assert package.data_start == len(data) - sum(len(d) for _, d in FILES)


def test_our_package_reads_with_the_independent_reader_laid_out_in_order():
    data = pkg.pack(FILES, "PKGV0019")
    magic, entries, members = independent_read(data)
    assert magic == b"PKGV0019" and [p for p, _, _ in entries] == [p for p, _ in FILES]
    assert members == dict(FILES)
    ends = [0] + [o + s for _, o, s in entries]
    assert [o for _, o, _ in entries] == ends[:-1]  # each entry right after the one before
    assert len(data) == 4 + 8 + 4 + sum(12 + len(p) for p, _ in FILES) + sum(len(d) for _, d in FILES)
    assert pkg.pack(((p, v) for p, v in pkg.read(data)[1].items()), "PKGV0019") == data


def test_a_package_is_told_by_its_first_bytes_as_a_project():
    data = independent_pack(FILES)
    assert formats.identify(data[:64], "scene.pkg").name == "weproject"
    assert formats.identify(data[:64], "").name == "weproject"


def _workshop_folder(tmp_path, files=FILES, packer=independent_pack):
    folder = tmp_path / "workshop"
    folder.mkdir()
    (folder / "project.json").write_bytes(PROJECT)
    (folder / "preview.jpg").write_bytes(b"\xff\xd8 not a real jpeg")
    (folder / "scene.pkg").write_bytes(packer(files))
    return folder


def test_a_folder_holding_scene_pkg_reads_as_its_unpacked_folder(tmp_path):
    folder = _workshop_folder(tmp_path)
    for given in ("project.json", "scene.pkg"):
        out = project_info.info((folder / given).read_bytes(), str(folder / given))
        assert (out["title"], out["size"], out["layers"], out["warnings"]) == ("Packed", [64.0, 32.0], 1, [])
    alone = project_info.info_bytes((folder / "scene.pkg").read_bytes())
    assert (alone["format"], alone["magic"], alone["entries"], alone["data_bytes"]) == \
        ("scene.pkg", "PKGV0009", len(FILES), sum(len(d) for _, d in FILES))
    held = pkg.members(str(folder / "project.json"))
    expect = {**dict(FILES), "project.json": PROJECT, "preview.jpg": b"\xff\xd8 not a real jpeg"}
    assert {rel: open(path, "rb").read() for rel, path in held.items()} == expect
    assert pkg.members(str(folder / "scene.pkg")).keys() == expect.keys()


def test_a_file_beside_the_package_of_the_same_path_is_shadowed_with_a_warning(tmp_path):
    folder = _workshop_folder(tmp_path)
    (folder / "scene.json").write_bytes(b'{"objects": []}')
    _, _, warnings = project.read_path(str(folder / "project.json"))
    assert warnings == ["1 file beside scene.pkg differ from its entries of the same path (the package's are "
                        "read): scene.json"]


def _entry_field(data: bytes, k: int) -> int:
    """The offset of entry `k`'s int32 offset field, walked independently."""
    at = 4 + struct.unpack_from("<i", data)[0] + 4
    for _ in range(k):
        at += 12 + struct.unpack_from("<i", data, at)[0]
    return at + 4 + struct.unpack_from("<i", data, at)[0]


def _hostile() -> dict[str, tuple[bytes, int, str]]:
    good = independent_pack(FILES)
    cases = {}
    climbing = [("../outside.txt", b"x")] + FILES[:1]
    cases["climbs"] = (independent_pack(climbing), 4 + 8 + 4 + 4, "entry 0 path")
    inner = [("models/../../outside.txt", b"x")]
    cases["climbs inside"] = (independent_pack(inner), 4 + 8 + 4 + 4, "entry 0 path")
    cases["absolute"] = (independent_pack([("/tmp/outside.txt", b"x")]), 20, "entry 0 path")
    cases["drive"] = (independent_pack([("C:\\outside.txt", b"x")]), 20, "entry 0 path")
    at = _entry_field(good, 2)
    far = good[:at] + struct.pack("<i", 10 ** 8) + good[at + 4:]
    cases["offset out of range"] = (far, at, "entry offset")
    big = good[:at + 4] + struct.pack("<i", 10 ** 8) + good[at + 8:]
    cases["size out of range"] = (big, at + 4, "entry size")
    neg = good[:at + 4] + struct.pack("<i", -1) + good[at + 8:]
    cases["negative size"] = (neg, at + 4, "entry 2 size")
    # entry 2 made to start inside entry 1's bytes
    o1, s1 = struct.unpack_from("<ii", good, _entry_field(good, 1))
    lap = good[:at] + struct.pack("<i", o1 + s1 - 4) + good[at + 4:]
    cases["overlap"] = (lap, at, "entry offset")
    count_at = 4 + 8
    cases["count too large"] = (good[:count_at] + struct.pack("<i", 10 ** 6) + good[count_at + 4:], count_at,
                                "entry count")
    cases["negative count"] = (good[:count_at] + struct.pack("<i", -3) + good[count_at + 4:], count_at,
                               "entry count")
    cases["cut in the magic"] = (good[:7], 4, "magic")
    last = _entry_field(good, len(FILES) - 1)
    cases["cut in an entry"] = (good[:last + 6], last + 4, f"entry {len(FILES) - 1} size")
    cases["not PKGV"] = (s32("ABCD0001") + good[12:], 4, "magic")
    cases["duplicate"] = (independent_pack([("a.json", b"1"), ("A.json", b"2")]), 4 + 8 + 4 + 18 + 4,
                          "entry 1 path")
    cases["file and folder"] = (independent_pack([("a", b"1"), ("a/b", b"2")]), 20, "entry path")
    return cases


@pytest.mark.parametrize("kind", list(_hostile()))
def test_a_hostile_package_is_refused_in_one_line_naming_offset_and_field(kind, tmp_path):
    data, offset, field = _hostile()[kind]
    with pytest.raises(FormatError) as e:
        pkg.read_index(data)
    assert (e.value.offset, e.value.field) == (offset, field)
    assert "\n" not in str(e.value) and str(e.value).startswith(f"offset {offset} (0x{offset:x}), field {field}: ")
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "project.json").write_bytes(PROJECT)
    (folder / "scene.pkg").write_bytes(data)
    with pytest.raises(FormatError, match=rf"^scene.pkg: offset {offset} \(0x"):
        pkg.unpacked(str(folder))
    assert sorted(os.listdir(tmp_path)) == ["project"] and sorted(os.listdir(folder)) == ["project.json",
                                                                                          "scene.pkg"]


def test_an_entry_clashing_with_a_folder_beside_the_package_is_refused_in_one_line(tmp_path):
    folder = _workshop_folder(tmp_path)
    (folder / "scene.json").mkdir()  # a folder where the package holds a file
    (folder / "scene.json" / "x").write_bytes(b"x")
    with pytest.raises(FormatError) as e:
        pkg.unpacked(str(folder))
    assert str(e.value).startswith("scene.pkg: offset 20 (0x14), field entry path: 'scene.json' cannot be unpacked")
    assert (e.value.offset, e.value.field) == (20, "entry path")
    assert "\n" not in str(e.value)
