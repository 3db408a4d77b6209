"""Valve DMX codec: bytes ⇄ `DmxFile` (an element graph), in every encoding Valve's tools and Blender Source Tools
write: binary versions 1 to 5 and 9, keyvalues2 text (`kv2`), either one gzip-compressed. A file read and
written back unchanged gives the same bytes.

Binary layout (little-endian; docs/source.md, "DMX", has the table with its sources):

    header comment "<!-- dmx encoding binary N format F M -->", a newline, a NUL
    version 9: i32 prefix element count, each an i32 attribute count and attributes whose names are inline
    version 2+: the string table: a count (i16 in 2-3, i32 in 4+) and NUL-terminated strings
    i32 element count, then each element's header: type (table index: i16 in 2-4, i32 in 5+; version 1 inline),
        name (table index in 4+, inline before), 16-byte id
    each element's attributes: i32 count, then name (table index, inline in 1), u8 type code, value
    values: element i32 index (-1 null, -2 followed by the id text of a missing one); string a table index in
        4+ for a single value, inline otherwise (arrays always inline); binary an i32 size and the bytes;
        fixed-size values packed; arrays an i32 count first. Type codes 1-14 with arrays +14 (versions 1-2: 7 is
        an object id, 3-5: a time), version 9 adds 15 uint64 and 16 uint8 with arrays +32.
"""
from __future__ import annotations

import hashlib
import re
import uuid
import zlib
from typing import Any

import numpy as np

from ...core.binary import Reader, Writer
from ...core.budget import Budget
from ...core.errors import FormatError
from . import kv2
from .records import (FIXED, AttrType, Attribute, DmxFile, Element, GzipWrap, Stub, item_size,  # noqa: F401
                          reachable)

VERSIONS = {"binary": (0, 1, 2, 3, 4, 5, 9), "keyvalues2": (0, 1), "keyvalues2_noids": (1,)}  # 0: legacy header
GZIP_MAGIC = b"\x1f\x8b"
MAX_HEADER = 1024  # bytes searched for the end of the header comment
I16_MAX = 32767  # strings a binary 2-4 table can index
GZIP_STEP = 1 << 20  # bytes a gzip stream is unpacked (and read) by, each step counted against the budget
_HEADER = re.compile(r"<!--\s*dmx\s+encoding\s+(unicode_)?(\S+)\s+(\d+)\s+format\s+(\S+)\s+(\d+)\s*-->")
# numbers and bytes of one value of each fixed-size type (per value read: np.prod each time cost walkn 0.05 s)
_ITEM_COUNT = {t: int(np.prod(shape, dtype=np.int64)) for t, (_, shape) in FIXED.items()}
_ITEM_SIZE = {t: item_size(t) for t in FIXED}
_LEGACY = re.compile(r"<!--\s*DMXVersion\s+(\w+?)_v(\w+)\s*-->")


def sniff(head: bytes) -> bool:
    """A DMX header comment at the start, or a gzip stream whose first bytes unpack to one."""
    if head.startswith(GZIP_MAGIC):
        try:
            head = zlib.decompressobj(31).decompress(head, 64)
        except zlib.error:
            return False
    return head.startswith(b"<!--") and (b"dmx" in head[:64] or b"DMXVersion" in head[:64])


# -- header and gzip --------------------------------------------------------------------------------------------

def _parse_header(data: bytes) -> tuple[str, int, dict]:
    """The header comment, where it ends, and its fields."""
    end = data.find(b"-->", 0, MAX_HEADER)
    if not data.startswith(b"<!--") or end < 0:
        raise FormatError("no DMX header comment '<!-- dmx encoding ... -->' at the start", 0, "header")
    text = data[:end + 3].decode("utf-8", "surrogateescape")
    m = _HEADER.fullmatch(text)
    if m:
        fields = {"unicode": bool(m.group(1)), "encoding": m.group(2), "encoding_version": int(m.group(3)),
                  "format": m.group(4), "format_version": int(m.group(5))}
    else:
        m = _LEGACY.fullmatch(text)
        if m is None:
            raise FormatError(f"header {text!r} is not '<!-- dmx encoding E N format F M -->'", 0, "header")
        fields = {"unicode": False, "encoding": "keyvalues2" if m.group(1) == "keyvalues2" else "binary",
                  "encoding_version": 0, "format": m.group(1), "format_version": 0}
    if fields["encoding_version"] not in VERSIONS.get(fields["encoding"], ()):
        raise FormatError(f"encoding {fields['encoding']} {fields['encoding_version']} is not one of "
                          f"{VERSIONS}", 0, "header")
    return text, end + 3, fields


def header_text(dmx: DmxFile) -> str:
    """The header comment: the one read while it still says what the records say."""
    if dmx.header is not None:
        try:
            _, _, fields = _parse_header(dmx.header.encode("utf-8", "surrogateescape"))
        except (FormatError, UnicodeEncodeError):
            fields = None
        if fields == {"unicode": dmx.unicode, "encoding": dmx.encoding, "encoding_version": dmx.encoding_version,
                      "format": dmx.format, "format_version": dmx.format_version}:
            return dmx.header
    prefix = "unicode_" if dmx.unicode else ""
    return (f"<!-- dmx encoding {prefix}{dmx.encoding} {dmx.encoding_version} "
            f"format {dmx.format} {dmx.format_version} -->")


def _gunzip(data: bytes, budget: Budget) -> tuple[bytes, GzipWrap]:
    """One gzip member, unpacked `GZIP_STEP` bytes at a time, each step counted against the file's budget
    (docs/architecture.md §7.1 "Budgets"); refused when it would unpack past the budget or past the size its
    trailer declares (a bomb), or is cut short."""
    if len(data) < 18:
        raise FormatError(f"gzip stream of {len(data)} bytes is shorter than its header and trailer", 0, "gzip")
    declared = int.from_bytes(data[-4:], "little")
    if declared > budget.bytes_limit - budget.bytes_used:  # refused before a byte is unpacked
        budget.unpack(declared, len(data) - 4, "gzip size")
    d = zlib.decompressobj(31)
    pieces, total, pos, tail = [], 0, 0, b""
    try:
        while not d.eof:
            if not tail and pos < len(data):  # the input in steps too: what zlib leaves over is copied each call
                tail = data[pos:pos + GZIP_STEP]
                pos += len(tail)
            before = len(tail)
            piece = d.decompress(tail, min(GZIP_STEP, declared + 1 - total))  # one byte past it: a lie shows
            tail = d.unconsumed_tail
            if not piece and len(tail) == before and (tail or pos >= len(data)):
                break  # nothing more comes out: the input ends before the stream does
            total += len(piece)
            if total > declared:
                raise FormatError(f"gzip stream unpacks to more than the {declared} bytes it declares",
                                  len(data) - 4, "gzip size")
            budget.unpack(len(piece), pos - len(tail), "gzip")
            pieces.append(piece)
    except zlib.error as e:
        raise FormatError(f"gzip stream is corrupt ({e})", pos - len(tail), "gzip") from None
    if not d.eof:
        raise FormatError("gzip stream ends before its end marker", len(data), "gzip")
    if d.unused_data or pos < len(data):
        extra = len(d.unused_data) + len(data) - pos
        raise FormatError(f"{extra} bytes follow the gzip stream", len(data) - extra, "gzip")
    out = b"".join(pieces)
    del pieces
    mtime = int.from_bytes(data[4:8], "little")
    return out, GzipWrap(original=data, digest=hashlib.blake2b(out).digest(), mtime=mtime)


def _gzip(payload: bytes, wrap: GzipWrap) -> bytes:
    if hashlib.blake2b(payload).digest() == wrap.digest:
        return wrap.original
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = c.compress(payload) + c.flush()
    head = GZIP_MAGIC + b"\x08\x00" + (wrap.mtime & 0xFFFFFFFF).to_bytes(4, "little") + b"\x02\xff"
    return head + body + zlib.crc32(payload).to_bytes(4, "little") + (len(payload) & 0xFFFFFFFF).to_bytes(4, "little")


# -- read -------------------------------------------------------------------------------------------------------

def read(data: bytes) -> DmxFile:
    """Any DMX: binary or keyvalues2, gzip-compressed or not. What it may unpack and build is bounded by the
    file's size (one `Budget` for the whole read): a bomb is refused in one FormatError naming the field."""
    budget = Budget(len(data), "DMX file")
    wrap = None
    if data.startswith(GZIP_MAGIC):
        data, wrap = _gunzip(data, budget)
    header, end, fields = _parse_header(data)
    if fields["encoding"] == "binary":
        dmx = _read_binary(data, end, fields, budget)
    else:
        dmx = kv2.read(data, end, fields, budget)
    dmx.header = header
    dmx.gzip = wrap
    return dmx


class _Layout:
    """The sizes of one binary version."""

    def __init__(self, version: int):
        self.version = version
        self.table = version >= 2
        self.count_size = 4 if version >= 4 else 2           # string table count
        self.index_size = 4 if version >= 5 else 2            # string table index
        self.names_in_table = version >= 4                    # element names and single string values
        self.array_base = 32 if version >= 9 else 14
        last = AttrType.UINT8 if version >= 9 else AttrType.VMATRIX
        self.codes = {int(t): (AttrType.OBJECTID if version <= 2 and t == AttrType.TIME else t)
                      for t in AttrType if t <= last}
        self.code_of = {t: c for c, t in self.codes.items()}


class _BinaryReader:
    def __init__(self, data: bytes, start: int, layout: _Layout, budget: Budget):
        self.r = Reader(data, start)
        self.lay = layout
        self.budget = budget
        self.strings: list[str] | None = None
        self.fixups: list[tuple[Attribute, list[int | Stub]]] = []  # element values resolved at the end

    def table_string(self, field: str) -> str | None:
        at = self.r.pos
        i = self.r.i32(field) if self.lay.index_size == 4 else self.r.i16(field)
        if i == -1:
            return None
        if not 0 <= i < len(self.strings):
            raise FormatError(f"string index {i} outside the table of {len(self.strings)}", at, field)
        return self.strings[i]

    def name(self, field: str, in_table: bool) -> str | None:
        return self.table_string(field) if in_table and self.lay.table else self.r.cstring(field)

    def string_table(self) -> list[str]:
        at = self.r.pos
        n = self.r.i32("string count") if self.lay.count_size == 4 else self.r.i16("string count")
        if n < 0 or n > self.r.remaining():
            raise FormatError(f"string count {n} exceeds the {self.r.remaining()} bytes left", at, "string count")
        self.budget.objects(n, at, "string count")
        strings, seen = [], {}
        for k in range(n):
            where = self.r.pos
            text = self.r.cstring("string table")
            if text in seen:  # every index names one string: a writer could not say which copy a value used
                raise FormatError(f"string table entry {k} repeats entry {seen[text]} ({text[:40]!r})", where,
                                  "string table")
            seen[text] = k
            strings.append(text)
        return strings

    def count(self, field: str, item: int, objects: bool = True) -> int:
        """A count checked against the bytes left and (`objects`: each item becomes a Python object) against
        the file's budget, before anything is built."""
        at = self.r.pos
        n = self.r.count(field, item, signed=True)
        if objects:
            self.budget.objects(n, at, field)
        return n

    def attributes(self, where: str, in_table: bool) -> list[Attribute]:
        name_size = self.lay.index_size if in_table and self.lay.table else 1
        n = self.count(f"{where} attribute count", name_size + 1)
        return [self.attribute(where, in_table) for _ in range(n)]

    def attribute(self, where: str, in_table: bool) -> Attribute:
        name = self.name(f"{where} attribute name", in_table)
        field = f"{where} attribute {name!r}"
        at = self.r.pos
        code = self.r.u8(f"{field} type")
        array = code > self.lay.array_base  # the highest single code plus the base is an array's
        t = self.lay.codes.get(code - self.lay.array_base if array else code)
        if t is None:
            raise FormatError(f"type code {code} is none of binary {self.lay.version}'s", at, f"{field} type")
        attr = Attribute(name, t, array, None)
        attr.value = self.value(attr, field, in_table)
        return attr

    def value(self, attr: Attribute, field: str, in_table: bool) -> Any:
        t, r = attr.type, self.r
        if t in FIXED:
            dtype, shape = FIXED[t]
            n = self.count(f"{field} count", _ITEM_SIZE[t], objects=False) if attr.array else 1
            out = r.array(dtype, n * _ITEM_COUNT[t], field)
            return out.reshape((n,) + shape) if attr.array else out.reshape(shape)
        if t == AttrType.STRING:
            if attr.array:
                return [r.cstring(field) for _ in range(self.count(f"{field} count", 1))]
            return self.table_string(field) if in_table and self.lay.names_in_table else r.cstring(field)
        if t == AttrType.BINARY:
            blobs = [r.bytes(self.count(f"{field} size", 1, objects=False), field)
                     for _ in range(self.count(f"{field} count", 4) if attr.array else 1)]
            return blobs if attr.array else blobs[0]
        refs = [self.reference(field) for _ in range(self.count(f"{field} count", 4) if attr.array else 1)]
        self.fixups.append((attr, refs))
        return None

    def reference(self, field: str) -> int | Stub:
        i = self.r.i32(field)
        return Stub(id=self.r.cstring(f"{field} missing element id")) if i == -2 else i

    def resolve(self, elements: list[Element]) -> None:
        def one(ref: int | Stub) -> Element | Stub | None:
            if isinstance(ref, Stub) or ref == -1:
                return None if ref == -1 else ref
            return elements[ref] if 0 <= ref < len(elements) else Stub(index=ref)

        for attr, refs in self.fixups:
            attr.value = [one(x) for x in refs] if attr.array else one(refs[0])


def _read_binary(data: bytes, start: int, fields: dict, budget: Budget) -> DmxFile:
    nul = data.find(b"\0", start, start + 16)
    if nul < 0 or data[start:nul].strip(b" \t\r\n"):
        raise FormatError("the header comment is not followed by a newline and a NUL", start, "header end")
    lay = _Layout(fields["encoding_version"])
    b = _BinaryReader(data, nul + 1, lay, budget)
    prefix = []
    if lay.version >= 9:
        prefix = [b.attributes(f"prefix {k}", False) for k in range(b.count("prefix element count", 4))]
    strings = None
    if lay.table:
        strings = b.strings = b.string_table()
    head = (lay.index_size if lay.table else 1) + (lay.index_size if lay.names_in_table else 1) + 16
    elements = []
    for k in range(b.count("element count", head)):
        etype = b.name(f"element {k} type", True)
        name = b.name(f"element {k} name", lay.names_in_table)
        elements.append(Element(etype, name, uuid.UUID(bytes_le=b.r.bytes(16, f"element {k} id"))))
    for k, e in enumerate(elements):
        e.attributes = b.attributes(f"element {k} ({e.name})", True)
    b.resolve(elements)
    dmx = DmxFile(fields["encoding"], lay.version, fields["format"], fields["format_version"], elements,
                  prefix=prefix, strings=strings, unicode=fields["unicode"], after_header=data[start:nul + 1],
                  tail=data[b.r.pos:])
    if dmx.tail:
        dmx.warnings.append(f"{len(dmx.tail)} bytes follow the last element (kept)")
    if not elements:
        dmx.warnings.append("the file holds no element")
    return dmx


# -- write ------------------------------------------------------------------------------------------------------

def write(dmx: DmxFile) -> bytes:
    """The file's bytes in its encoding (`dmx.encoding`, `dmx.encoding_version`), gzip-compressed if it was."""
    if dmx.encoding_version not in VERSIONS.get(dmx.encoding, ()):
        raise ValueError(f"cannot write DMX encoding {dmx.encoding} {dmx.encoding_version}")
    header = header_text(dmx)
    if dmx.binary:
        payload = header.encode("utf-8", "surrogateescape") + (dmx.after_header or b"\n\0") + _write_binary(dmx)
    else:
        payload = kv2.write(dmx, header)
    return _gzip(payload, dmx.gzip) if dmx.gzip is not None else payload


class _BinaryWriter:
    def __init__(self, dmx: DmxFile, layout: _Layout, elements: list[Element]):
        self.w = Writer()
        self.lay = layout
        self.index = {id(e): i for i, e in enumerate(elements)}
        self.strings: dict[str, int] = {}

    def table(self, dmx: DmxFile, elements: list[Element]) -> list[str | None]:
        """The table as read, with any string it lacks added in sorted order."""
        table = list(dmx.strings or [])
        have = set(table)
        wanted = set()
        for e in elements:
            wanted.add(e.type)
            if self.lay.names_in_table:
                wanted.add(e.name)
            for a in e.attributes:
                wanted.add(a.name)
                if self.lay.names_in_table and a.type == AttrType.STRING and not a.array:
                    wanted.add(a.value)
        table += sorted(s for s in wanted - have if s is not None)
        for i, s in enumerate(table):
            self.strings.setdefault(s, i)
        return table

    def table_string(self, s: str | None) -> None:
        i = -1 if s is None else self.strings[s]
        (self.w.i32 if self.lay.index_size == 4 else self.w.i16)(i)

    def name(self, s: str | None, in_table: bool) -> None:
        if in_table and self.lay.table:
            self.table_string(s)
        else:
            self.w.cstring(s or "")

    def attributes(self, attrs: list[Attribute], in_table: bool) -> None:
        self.w.i32(len(attrs))
        for a in attrs:
            self.name(a.name, in_table)
            code = self.lay.code_of.get(a.type)
            if code is None:
                raise ValueError(f"attribute {a.name!r}: type {a.type.name} cannot be written in binary "
                                 f"{self.lay.version}")
            self.w.u8(code + (self.lay.array_base if a.array else 0))
            self.value(a, in_table)

    def value(self, a: Attribute, in_table: bool) -> None:
        w = self.w
        if a.type in FIXED:
            dtype, shape = FIXED[a.type]
            v = np.asarray(a.value)
            if a.array:
                w.i32(len(v))
            w.array(v.reshape((-1,) + shape) if a.array else v.reshape(shape), dtype)
        elif a.type == AttrType.STRING:
            if a.array:
                w.i32(len(a.value))
                for s in a.value:
                    w.cstring(s or "")
            elif in_table and self.lay.names_in_table:
                self.table_string(a.value)
            else:
                w.cstring(a.value or "")
        elif a.type == AttrType.BINARY:
            blobs = a.value if a.array else [a.value]
            if a.array:
                w.i32(len(blobs))
            for blob in blobs:
                w.i32(len(blob))
                w.bytes(bytes(blob))
        else:
            refs = a.value if a.array else [a.value]
            if a.array:
                w.i32(len(refs))
            for ref in refs:
                self.reference(ref)

    def reference(self, ref: Element | Stub | None) -> None:
        if ref is None:
            self.w.i32(-1)
        elif isinstance(ref, Stub):
            if ref.index is not None:
                self.w.i32(ref.index)
            else:
                self.w.i32(-2)
                self.w.cstring(ref.id or "")
        else:
            self.w.i32(self.index[id(ref)])


def _write_binary(dmx: DmxFile) -> bytes:
    lay = _Layout(dmx.encoding_version)
    elements = reachable(dmx)
    b = _BinaryWriter(dmx, lay, elements)
    if lay.version >= 9:
        b.w.i32(len(dmx.prefix))
        for attrs in dmx.prefix:
            b.attributes(attrs, False)
    if lay.table:
        table = b.table(dmx, elements)
        if min(lay.count_size, lay.index_size) == 2 and len(table) > I16_MAX:
            raise ValueError(f"{len(table)} distinct names: binary {lay.version}'s string table holds at most "
                             f"{I16_MAX} (16-bit indices)")
        (b.w.i32 if lay.count_size == 4 else b.w.i16)(len(table))
        for s in table:
            b.w.cstring(s or "")
    b.w.i32(len(elements))
    for e in elements:
        b.name(e.type, True)
        b.name(e.name, lay.names_in_table)
        b.w.bytes((e.id or uuid.uuid4()).bytes_le)
    for e in elements:
        b.attributes(e.attributes, True)
    b.w.bytes(dmx.tail)
    return b.w.getvalue()
