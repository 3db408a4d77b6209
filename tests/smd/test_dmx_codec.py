"""DMX codec: the six samples write back byte-identical, hold the elements and attributes srctools (an independent
reader, test-only) reads from them, binary 1-5 files made by srctools open the same way, every value type goes
through every encoding, and structural faults are FormatErrors naming offset and field."""
from __future__ import annotations

import gzip
import io
import pathlib
import struct
import uuid

import numpy as np
import pytest

from skinbridge import formats
from skinbridge.core.errors import FormatError
from skinbridge.io_smd.dmx import dmx
from skinbridge.io_smd.dmx import check as dmx_check
from skinbridge.io_smd.dmx.records import AttrType, Attribute, DmxFile, Element, Stub, element_refs

try:
    import srctools.dmx as srctools_dmx
except ImportError:  # the independent reader is test-only: only the tests that use it skip without it
    srctools_dmx = None
needs_srctools = pytest.mark.skipif(srctools_dmx is None, reason="srctools (tools/requirements*.txt) missing")

DMX_DIR = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "dmx"
FILES = sorted(p.name for p in DMX_DIR.glob("*"))
KV2 = ["bst_cloth_test_simple.dmx", "bst_flex_scout_morphs_low.dmx"]

_SRCTOOLS_TYPES = {"element": AttrType.ELEMENT, "int": AttrType.INT, "float": AttrType.FLOAT, "bool": AttrType.BOOL,
                   "string": AttrType.STRING, "binary": AttrType.BINARY, "time": AttrType.TIME,
                   "color": AttrType.COLOR, "vector2": AttrType.VECTOR2, "vector3": AttrType.VECTOR3,
                   "vector4": AttrType.VECTOR4, "qangle": AttrType.QANGLE, "quaternion": AttrType.QUATERNION,
                   "vmatrix": AttrType.VMATRIX}


def _read(name: str) -> bytes:
    return (DMX_DIR / name).read_bytes()


def _srctools(data: bytes):
    root, fmt, version = srctools_dmx.Element.parse(io.BytesIO(data))
    return root


def _srctools_elements(root) -> list:
    """Every element reachable from srctools' root, stubs and nulls left out."""
    out, seen = [root], {root.uuid}
    for e in out:
        for a in e.values():
            if a.type.value == "element":
                for child in (a._value if a.is_array else [a._value]):
                    if not child.is_stub and not child.is_null and child.uuid not in seen:
                        seen.add(child.uuid)
                        out.append(child)
    return out


def _their_value(a, ours: Attribute):
    """srctools' value in our representation."""
    items = list(a._value) if a.is_array else [a._value]
    t = ours.type
    if t == AttrType.ELEMENT:
        return [None if e.is_null or e.is_stub else e.uuid for e in items]
    if t in (AttrType.STRING, AttrType.BINARY):
        return items
    if t == AttrType.TIME:
        return np.array([x.value for x in items])
    if t == AttrType.VMATRIX:
        return np.array([[[m[r, c] for c in range(3)] for r in range(3)] for m in items], np.float32)
    if t == AttrType.COLOR:
        return np.array([[c.r, c.g, c.b, c.a] for c in items], np.uint8)
    shape = np.asarray(ours.value).shape[1 if ours.array else 0:]
    values = np.array([tuple(x) if hasattr(x, "__iter__") else x for x in items])
    return values.astype(np.asarray(ours.value).dtype).reshape((len(items),) + shape)


def _our_value(ours: Attribute):
    items = list(ours.value) if ours.array else [ours.value]
    if ours.type == AttrType.ELEMENT:
        return [e.id if isinstance(e, Element) else None for e in items]
    if ours.type in (AttrType.STRING, AttrType.BINARY):
        return items
    v = np.asarray(ours.value).reshape((len(items),) + np.asarray(ours.value).shape[1 if ours.array else 0:])
    if ours.type == AttrType.TIME:
        return v / 10000
    return v[:, :3, :3] if ours.type == AttrType.VMATRIX else v


def assert_same_as_srctools(d: DmxFile, root) -> tuple[int, int]:
    """Our records equal srctools' tree element by element, attribute by attribute; the counts compared."""
    theirs = {e.uuid: e for e in _srctools_elements(root)}
    ours = _reachable(d.root)
    assert len(theirs) == len(ours)
    assert d.root.id == root.uuid
    attributes = 0
    for e in ours:
        t = theirs[e.id]
        assert (t.type, t.name) == (e.type, e.name or "")
        assert sorted(a.name.casefold() for a in e.attributes) == sorted(k for k in t.keys() if k != "name")
        for a in e.attributes:
            ta = t[a.name]
            assert _SRCTOOLS_TYPES[ta.type.value] == a.type and ta.is_array == a.array, (e, a.name)
            mine, other = _our_value(a), _their_value(ta, a)
            if isinstance(mine, np.ndarray):
                assert mine.shape == other.shape and np.array_equal(mine, other), (e, a.name)
            else:
                assert mine == other, (e, a.name)
            attributes += 1
    return len(ours), attributes


def _reachable(root: Element) -> list[Element]:
    out, seen = [root], {id(root)}
    for e in out:
        for child in element_refs(e):
            if id(child) not in seen:
                seen.add(id(child))
                out.append(child)
    return out


def test_every_sample_is_in_the_list():
    assert FILES == ["bst_ActionFilter_X_Axis.dmx", "bst_Cube_NoArmature.dmx", "bst_Curve_Armature_BezierCurve.dmx",
                     "bst_cloth_test_simple.dmx", "bst_flex_scout_morphs_low.dmx", "bst_walkn.dmx.gz"]


@pytest.mark.parametrize("name", FILES)
def test_sample_writes_back_byte_identical(name):
    data = _read(name)
    d = dmx.read(data)
    assert (d.encoding, d.encoding_version) == (("keyvalues2", 1) if name in KV2 else ("binary", 9))
    assert d.warnings == []
    assert dmx.write(d) == data


def test_gzip_payload_is_written_by_our_writer():
    """The kept gzip bytes are reused only when the payload we write is the one unpacked."""
    data = _read("bst_walkn.dmx.gz")
    d = dmx.read(data)
    payload = gzip.decompress(data)
    d.gzip = None
    assert dmx.write(d) == payload
    d.gzip = dmx.read(data).gzip
    d.elements[1].name = "renamed"
    changed = dmx.write(d)
    assert changed != data and dmx.read(gzip.decompress(changed)).elements[1].name == "renamed"


@needs_srctools
@pytest.mark.parametrize("name", FILES)
def test_sample_holds_what_srctools_reads(name):
    """srctools reads keyvalues2 and binary 1-5 but not binary 9: a binary 9 sample is given to it as the binary 5
    file our writer makes of it (same element graph; the prefix attributes have no place in binary 5)."""
    d = dmx.read(_read(name))
    data = _read(name) if name in KV2 else _as_version(d, 5)
    elements, attributes = assert_same_as_srctools(d, _srctools(data))
    # walkn holds one element that nothing refers to: we keep it, srctools (reading from the root) cannot see it
    assert elements == len(d.elements) - (name == "bst_walkn.dmx.gz")
    assert attributes == sum(len(e.attributes) for e in _reachable(d.root)) > 0


def _as_version(d: DmxFile, version: int) -> bytes:
    d2 = dmx.read(dmx.write(d))
    d2.encoding, d2.encoding_version, d2.strings, d2.header, d2.after_header, d2.gzip = (
        "binary", version, None, None, None, None)
    d2.prefix = []
    return dmx.write(d2)


@needs_srctools
@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("name", ["bst_cloth_test_simple.dmx", "bst_flex_scout_morphs_low.dmx",
                                  "bst_Cube_NoArmature.dmx"])
def test_srctools_binary_sample_opens(name, version):
    """srctools writes the sample as binary `version`; we read that file, write it back byte-identical, and hold
    what srctools reads from it. (Binary 1-2 have no time type: the Cube has none.)"""
    root = _srctools(_read(name) if name in KV2 else _as_version(dmx.read(_read(name)), 5))
    out = io.BytesIO()
    root.export_binary(out, version=version, fmt_name="model", fmt_ver=22)
    data = out.getvalue()
    d = dmx.read(data)
    assert (d.encoding, d.encoding_version) == ("binary", version)
    assert dmx.write(d) == data
    assert_same_as_srctools(d, _srctools(data))


def _every_type() -> DmxFile:
    child = Element("DmeChild", "child", uuid.UUID(int=2), [Attribute("n", AttrType.INT, False, np.int32(7))])
    values = {
        AttrType.INT: np.array([1, -2, 2**31 - 1], "<i4"), AttrType.FLOAT: np.array([0.1, -1e30, 3.5], "<f4"),
        AttrType.BOOL: np.array([0, 1, 1], "u1"), AttrType.TIME: np.array([0, 12345, -10000], "<i4"),
        AttrType.COLOR: np.array([[1, 2, 3, 255]] * 3, "u1"), AttrType.VECTOR2: np.arange(6, dtype="<f4").reshape(3, 2),
        AttrType.VECTOR3: np.arange(9, dtype="<f4").reshape(3, 3) / 7,
        AttrType.VECTOR4: np.arange(12, dtype="<f4").reshape(3, 4),
        AttrType.QANGLE: np.arange(9, dtype="<f4").reshape(3, 3) * 10,  # srctools keeps angles in 0-360
        AttrType.QUATERNION: np.tile(np.array([0, 0, 0, 1], "<f4"), (3, 1)),
        AttrType.VMATRIX: np.tile(np.eye(4, dtype="<f4") * 2, (3, 1, 1)),
        AttrType.UINT64: np.array([0, 2**64 - 1, 5], "<u8"), AttrType.UINT8: np.array([0, 200, 255], "u1"),
        AttrType.OBJECTID: np.tile(np.arange(16, dtype="u1"), (3, 1)),
    }
    attrs = [Attribute("child", AttrType.ELEMENT, False, child), Attribute("none", AttrType.ELEMENT, False, None),
             Attribute("kids", AttrType.ELEMENT, True, [child, None, Stub(id=str(uuid.UUID(int=9)))]),
             Attribute("s", AttrType.STRING, False, 'a "quoted"\tname'),
             Attribute("ss", AttrType.STRING, True, ["x", "", "y z"]),
             Attribute("b", AttrType.BINARY, False, b"\x00\xff\x10"),
             Attribute("bb", AttrType.BINARY, True, [b"", b"\x01\x02"])]
    for t, v in values.items():
        attrs += [Attribute(t.name.lower(), t, False, v[1]), Attribute(t.name.lower() + "s", t, True, v)]
    root = Element("DmElement", "root", uuid.UUID(int=1), attrs)
    return DmxFile("binary", 9, "model", 22, [root, child])


@pytest.mark.parametrize("encoding", [("binary", 9), ("binary", 5), ("binary", 4), ("binary", 3), ("binary", 2),
                                      ("binary", 1), ("keyvalues2", 1)])
def test_every_type_through_every_encoding(encoding):
    """What an encoding can hold comes back equal (binary 1-2: no time; uint64/uint8 only in binary 9 and text;
    object ids only in binary 1-2 and text), and the file written writes back byte-identical."""
    d = _every_type()
    d.encoding, d.encoding_version = encoding
    allowed = {t for t in AttrType}
    if encoding[0] == "binary":
        allowed -= {AttrType.OBJECTID} if encoding[1] >= 3 else {AttrType.TIME}
        allowed -= set() if encoding[1] >= 9 else {AttrType.UINT64, AttrType.UINT8}
    for e in d.elements:
        e.attributes = [a for a in e.attributes if a.type in allowed]
    data = dmx.write(d)
    back = dmx.read(data)
    assert dmx.write(back) == data
    assert [e.id for e in back.elements] == [e.id for e in d.elements]
    for e, f in zip(d.elements, back.elements):
        assert [(a.name, a.type, a.array) for a in e.attributes] == [(a.name, a.type, a.array) for a in f.attributes]
        for a, b in zip(e.attributes, f.attributes):
            assert _our_value(a) == _our_value(b) if a.type in (AttrType.ELEMENT, AttrType.STRING, AttrType.BINARY) \
                else np.array_equal(_our_value(a), _our_value(b)), a.name
    assert back.root.value("kids")[2] == Stub(id=str(uuid.UUID(int=9)))


@needs_srctools
def test_every_srctools_type_reads_as_srctools_reads_it():
    """Our binary 5 and keyvalues2 writes of every type srctools knows read the same in srctools. (srctools
    takes binary type code 14, a single vmatrix, for an array: that one is compared through the text only.)"""
    for encoding in (("binary", 5), ("keyvalues2", 1)):
        d = _every_type()
        for e in d.elements:
            e.attributes = [a for a in e.attributes
                            if a.type not in (AttrType.UINT64, AttrType.UINT8, AttrType.OBJECTID)
                            and not (a.type == AttrType.ELEMENT and a.array)
                            and not (a.type == AttrType.VMATRIX and not a.array and encoding[0] == "binary")]
        d.encoding, d.encoding_version = encoding
        assert_same_as_srctools(d, _srctools(dmx.write(d)))


def test_edited_text_value_is_written_anew_and_the_rest_kept():
    data = _read("bst_cloth_test_simple.dmx")
    d = dmx.read(data)
    joint = next(e for e in d.elements if e.type == "DmeTransform" and e.name == "left")
    joint.get("position").value = np.array([1.5, 2, 3], np.float32)
    out = dmx.write(d)
    assert out.replace(b'"1.5 2.0 3.0"', b"", 1) == data.replace(
        b'"16.949430465698242 -1.9706785678863525e-06 2.5593171812943183e-06"', b"", 1)
    assert np.array_equal(next(e for e in dmx.read(out).elements if e.id == joint.id).value("position"), [1.5, 2, 3])


def test_text_with_other_layout_and_comments_writes_back():
    text = (b'<!-- dmx encoding keyvalues2 1 format model 1 -->\r\n// made by hand\r\n"DmElement" {\r\n'
            b'  "id" "elementid" "{00000000-0000-0000-0000-00000000000A}"  "name" "string" "r"\r\n'
            b'  "a" "int_array" [ "1" , "2" ]  "e" "element" "00000000-0000-0000-0000-00000000000a"\r\n'
            b'  "v" "vector3" "1e0 2 3" "n" "element" ""\r\n}\r\n')
    d = dmx.read(text)
    assert dmx.write(d) == text
    assert d.root.value("e") is d.root and d.root.value("n") is None
    assert d.root.value("v").tolist() == [1, 2, 3]


def _binary_cube() -> bytes:
    return dmx.write(dmx.read(_read("bst_Cube_NoArmature.dmx")))


@pytest.mark.parametrize("cut", [10, 60, 200, 1000, 2000])
def test_a_cut_file_is_a_format_error_naming_offset_and_field(cut):
    with pytest.raises(FormatError) as e:
        dmx.read(_binary_cube()[:cut])
    assert e.value.offset is not None and e.value.field


def test_a_huge_count_is_refused_before_allocating():
    data = bytearray(_binary_cube())
    at = data.index(b"\0", data.index(b"-->")) + 1 + 4  # after the prefix count: the string count
    struct.pack_into("<i", data, at, 2**31 - 1)
    with pytest.raises(FormatError, match="string count"):
        dmx.read(bytes(data))
    d = dmx.read(_binary_cube())
    element_count_at = len(_binary_cube()) - len(dmx.write(d)) + _element_count_offset(d)
    data = bytearray(_binary_cube())
    struct.pack_into("<i", data, element_count_at, 10**9)
    with pytest.raises(FormatError, match="element count") as e:
        dmx.read(bytes(data))
    assert e.value.offset == element_count_at


def _element_count_offset(d: DmxFile) -> int:
    head = len(dmx.header_text(d)) + len(d.after_header) + 4 + 4
    return head + sum(len(s.encode()) + 1 for s in d.strings)


def test_a_gzip_bomb_and_bad_headers_are_refused():
    data = gzip.compress(_binary_cube())
    bomb = data[:-4] + struct.pack("<I", 100)
    with pytest.raises(FormatError, match="more than the 100 bytes"):
        dmx.read(bomb)
    with pytest.raises(FormatError, match="header"):
        dmx.read(b"<!-- dmx encoding binary 7 format model 1 -->\n\0")
    with pytest.raises(FormatError, match="header"):
        dmx.read(b"<!-- not a dmx")
    with pytest.raises(FormatError, match="unterminated"):
        dmx.read(b'<!-- dmx encoding keyvalues2 1 format model 1 -->\n"DmElement" { "name" "string" "x }')
    assert dmx.read(data).gzip is not None and dmx.write(dmx.read(data)) == data


def test_an_index_past_the_element_table_is_kept():
    d = dmx.read(_binary_cube())
    d.root.get("model").value = Stub(index=99)
    data = dmx.write(d)
    back = dmx.read(data)
    assert back.root.value("model") == Stub(index=99) and dmx.write(back) == data


@pytest.mark.parametrize("name", FILES)
def test_registry_info_and_check(name):
    """The registry names each sample DMX by its content (gzip too); `info` counts what srctools counts; `check`
    finds nothing and writes back identical."""
    path = DMX_DIR / name
    spec = formats.identify_file(path)
    assert spec.name == "dmx"
    data = path.read_bytes()
    summary = spec.get("info")(data, str(path))
    d = dmx.read(data)
    assert summary["elements"] == len(d.elements) == sum(summary["element_types"].values())
    assert summary["root"] == {"type": d.root.type, "name": d.root.name}
    assert summary["gzip"] == name.endswith(".gz")
    assert summary["encoding"] == ("keyvalues2 1" if name in KV2 else "binary 9")
    lines = []
    assert spec.get("check")(str(path), data, lines.append) == 0
    assert lines[-1].strip() == "roundtrip: identical" and "0 error(s), 0 warning(s)" in lines[-2]


def test_check_names_a_dangling_reference_and_a_changed_write_back():
    d = dmx.read(_binary_cube())
    d.root.get("model").value = Stub(index=99)
    data = dmx.write(d)
    lines = []
    assert dmx_check.check("x.dmx", data, lines.append) == 1
    assert any("element 0 (DmElement 'Scene')" in line and "past the 15" in line for line in lines), lines
    text = _read("bst_flex_scout_morphs_low.dmx")
    changed = text.replace(b"DmElement", b"DmElemenx")
    assert "differs at line 2" in dmx_check.check.differs(text, changed, dmx.read(text))
