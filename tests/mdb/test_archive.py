"""NWN2 archives as folders (issue 50 item 1; docs/nwn2.md §5.8): ERF packs written by our writer and by an
independent packer here (from BioWare's public ERF description, V1.0 with 16-byte names, and NWN2's V1.1 with
32-byte names as xoreos' erffile.cpp reads them), ZIPs written by Python's zipfile; the shared head inside a pack
finding its skeleton inside another pack and binding as the loose files do; hostile archives refused in one line."""
from __future__ import annotations

import io
import pathlib
import struct
import zipfile

import numpy as np
import pytest

from skinbridge.core.errors import FormatError
from skinbridge.io_mdb.archive import archive
from skinbridge.io_mdb.gr2 import bind
from skinbridge.io_mdb.mdb import convert

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
HEAD = GR2_DIR / "ovr_P_HEF_head83.MDB"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"
TYPES = {"mdb": 4000, "gr2": 4003, "tga": 3}


def independent_erf(members, version=b"V1.1", kind=b"MOD ", description=b"a module", reverse=True) -> bytes:
    """An ERF laid out unlike our writer's: a localized description first, the resource list before the key list,
    the members' bytes in reverse order with padding between them."""
    name_len = 32 if version == b"V1.1" else 16
    loc = struct.pack("<II", 0, len(description)) + description
    off_loc = 160
    off_res = off_loc + len(loc)
    off_keys = off_res + 8 * len(members)
    data_at = off_keys + (name_len + 8) * len(members)
    order = list(reversed(range(len(members)))) if reverse else list(range(len(members)))
    where, blob = {}, b""
    for i in order:
        blob += b"\xee" * 3  # padding the format allows between members
        where[i] = data_at + len(blob)
        blob += members[i][1]
    keys = res = b""
    for i, (name, data) in enumerate(members):
        stem, ext = name.rsplit(".", 1)
        keys += stem.encode().ljust(name_len, b"\0") + struct.pack("<IHH", i, TYPES[ext], 0)
        res += struct.pack("<II", where[i], len(data))
    header = kind + version + struct.pack("<9I", 1, len(loc), len(members), off_loc, off_keys, off_res, 126, 200,
                                          0xFFFFFFFF) + bytes(116)
    return header + loc + res + keys + blob


MEMBERS = [("ovr_P_HEF_skel83.gr2", b"GR2 bytes " * 7), ("a_model_with_a_name_of_32_chars_.mdb", b"NWN2" * 9),
           ("face.tga", b"")]


def _read_all(data: bytes, path="x.hak") -> dict[str, bytes]:
    pack = archive.Archive(path, data)
    return {n: pack.read(n) for n in pack.names()}


def test_our_pack_and_an_independent_one_read_back_to_the_same_members():
    ours = archive.write_erf(MEMBERS)
    assert ours[:8] == b"HAK V1.1"
    theirs = independent_erf(MEMBERS)
    expected = dict(MEMBERS)
    assert _read_all(ours) == expected == _read_all(theirs)
    short = [("skel83.gr2", b"x" * 5), ("head.mdb", b"NWN2")]
    assert _read_all(independent_erf(short, version=b"V1.0", kind=b"HAK ")) == dict(short)


def test_a_zip_of_the_games_data_layout_reads_its_members_by_path_and_by_name():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("lod-merged/ovr_P_HEF_skel83.GR2", SKELETON.read_bytes())
        z.writestr("lod-merged/", b"")
        z.writestr("readme.txt", b"stored", compress_type=zipfile.ZIP_STORED)
    pack = archive.Archive("Data/lod-merged.zip", buf.getvalue())
    assert pack.names() == ["lod-merged/ovr_P_HEF_skel83.GR2", "readme.txt"]
    assert pack.read("ovr_p_hef_skel83.gr2") == SKELETON.read_bytes() == pack.read("lod-merged/ovr_P_HEF_skel83.GR2")
    assert pack.read("readme.txt") == b"stored"


def test_member_names_on_the_command_line():
    assert archive.split_member("mods/heads.hak:P_HEF_head83.mdb") == ("mods/heads.hak", "P_HEF_head83.mdb")
    assert archive.split_member("Data/lod-merged.ZIP:x.gr2") == ("Data/lod-merged.ZIP", "x.gr2")
    assert archive.split_member("C:/models/head.mdb") is None
    assert archive.split_member("head.mdb") is None


def test_a_head_in_a_pack_finds_its_skeleton_in_another_pack_and_binds_as_the_loose_files_do(tmp_path):
    heads = tmp_path / "heads.hak"
    heads.write_bytes(archive.write_erf([("ovr_P_HEF_head83.mdb", HEAD.read_bytes())]))
    skels = tmp_path / "skels.hak"
    skels.write_bytes(independent_erf([("ovr_P_HEF_skel83.gr2", SKELETON.read_bytes())]))
    loose, loose_warnings = convert.load(str(HEAD), HEAD.read_bytes())
    pack, data = archive.read_member(f"{heads}:ovr_P_HEF_head83.mdb")
    assert data == HEAD.read_bytes()
    without, _ = convert.load(f"{heads}:ovr_P_HEF_head83.mdb", data)
    assert without.skeleton is None or not without.skeleton.bones  # nothing in the head's own pack
    packed, warnings = convert.load(f"{heads}:ovr_P_HEF_head83.mdb", data, skeleton_path=str(skels))
    assert warnings == loose_warnings
    assert [b.name for b in packed.skeleton.bones] == [b.name for b in loose.skeleton.bones]
    for a, b in zip(packed.skeleton.bones, loose.skeleton.bones):
        assert a.parent == b.parent and np.array_equal(a.bind, b.bind)
    assert len(packed.meshes) == len(loose.meshes)
    for a, b in zip(packed.meshes, loose.meshes):
        assert np.array_equal(a.positions, b.positions)
        assert np.array_equal(a.joints, b.joints) and np.array_equal(a.weights, b.weights)
    found = bind.find_skeleton("P_HHF_skel", [str(skels)])
    assert found is not None and found[0] == f"{skels}:ovr_P_HEF_skel83.gr2"


# -- hostile archives: each refused in one line, nothing read past them ------------------------------------------

def _zip(entries) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in entries:
            z.writestr(zipfile.ZipInfo(name), data)
    return buf.getvalue()


def _patched(data: bytes, at: int, fmt: str, *values) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, *values)
    return bytes(out)


def _hostile() -> dict[str, tuple[bytes, str]]:
    good = archive.write_erf([("a.mdb", b"NWN2" * 4), ("b.gr2", b"x" * 8)])
    key1 = 160 + 40  # the second key; resource list at 160 + 80
    return {
        "erf name ..": (_patched(good, 160, "<32s", b"..\\..\\evil"), "not a plain file name"),
        "erf name with a slash": (_patched(good, 160, "<32s", b"/etc/passwd"), "not a plain file name"),
        "erf count out of range": (_patched(good, 16, "<I", 1 << 20), "EntryCount"),
        "erf count past the file": (_patched(good, 16, "<I", 1000), "OffsetToKeyList"),
        "erf size past the end": (_patched(good, 240 + 4, "<I", 1 << 30), "past the end"),
        "erf members overlap": (_patched(good, 248, "<I", 160 + 96 + 2), "overlaps"),
        "erf member over the tables": (_patched(good, 240, "<I", 170), "overlaps"),
        "erf twice the same name": (_patched(good, key1, "<32sIH", b"a", 1, 4000), "twice"),
        "erf resource id out of range": (_patched(good, key1 + 32, "<I", 7), "ResID"),
        "erf not ascii": (_patched(good, 160, "<4s", b"\xff\xfe\0\0"), "not ASCII"),
        "erf version": (_patched(good, 4, "<4s", b"V3.0"), "Version"),
        "zip name ..": (_zip([("../../evil.gr2", b"x")]), "not a plain relative path"),
        "zip absolute name": (_zip([("/tmp/evil.gr2", b"x")]), "not a plain relative path"),
        "zip backslash name": (_zip([("..\\evil.gr2", b"x")]), "not a plain file name"),
        "zip twice the same name": (_zip([("a.gr2", b"x"), ("A.GR2", b"y")]), "twice"),
        "zip truncated": (_zip([("a.gr2", b"x" * 100)])[:60], "not a ZIP"),
    }


@pytest.mark.parametrize("kind", sorted(_hostile()))
def test_hostile_archives_are_refused_in_one_line(kind, tmp_path):
    data, words = _hostile()[kind]
    with pytest.raises(FormatError) as e:
        pack = archive.Archive(str(tmp_path / "x.hak"), data)
        for n in pack.names():
            pack.read(n)
    message = str(e.value)
    assert words in message and "\n" not in message, message
    assert list(tmp_path.iterdir()) == []  # the reader writes nothing


def test_zip_members_that_lie_about_their_size_or_overlap_are_refused():
    payload = b"\0" * (1 << 20)
    data = bytearray(_zip([("bomb.gr2", payload)]))
    # the central directory says 10 bytes: the member unpacks to more than it declares
    central = data.rfind(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, 10)
    with pytest.raises(FormatError, match="unpacks to more than"):
        archive.Archive("x.zip", bytes(data)).read("bomb.gr2")
    # two central entries pointing at one local header
    two = bytearray(_zip([("a.gr2", b"x" * 50), ("b.gr2", b"y" * 50)]))
    second = two.rfind(b"PK\x01\x02")
    struct.pack_into("<I", two, second + 42, 0)
    with pytest.raises(FormatError, match="overlaps|CRC|no local header"):
        pack = archive.Archive("x.zip", bytes(two))
        pack.read("b.gr2")
    # a member declaring more than the archive's budget is refused before it is unpacked
    big = bytearray(_zip([("big.gr2", b"z" * 1000)]))
    central = big.rfind(b"PK\x01\x02")
    struct.pack_into("<I", big, central + 24, 1 << 30)
    with pytest.raises(FormatError, match="budget"):
        archive.Archive("x.zip", bytes(big)).read("big.gr2")


def test_the_skeleton_search_passes_over_a_hostile_archive_with_a_warning(tmp_path):
    bad = tmp_path / "bad.hak"
    bad.write_bytes(_hostile()["erf members overlap"][0])
    good = tmp_path / "skels.zip"
    good.write_bytes(_zip([("ovr_P_HEF_skel83.GR2", SKELETON.read_bytes())]))
    warnings: list[str] = []
    found = bind.find_skeleton("P_HHF_skel", [str(bad), str(good)], warnings)
    assert found is not None and found[0].endswith("skels.zip:ovr_P_HEF_skel83.GR2")
    assert len(warnings) == 1 and "bad.hak: archive not read" in warnings[0] and "overlaps" in warnings[0]


def test_our_writer_refuses_names_a_pack_cannot_hold():
    for name in ("x" * 33 + ".mdb", "head.obj", "../head.mdb", ".mdb"):
        with pytest.raises((ValueError, FormatError)):
            archive.write_erf([(name, b"")])
    with pytest.raises(ValueError, match="two members of this name"):
        archive.write_erf([("P_HFF_hair94.mdb", b""), ("p_HFF_hair94.MDB", b"")])  # both in nwn2-override
