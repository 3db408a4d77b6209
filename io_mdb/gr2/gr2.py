"""Granny 2 `.gr2` files (skeletons and animations of Neverwinter Nights 2): bytes → sections → typed data
(docs/nwn2.md §5).

```
header (32)        u8 magic[16]; u32 header size (header, info and section table); u32 format; u32 reserved[2]
info (56)          u32 version (6); u32 file size; u32 CRC-32 of the bytes after the info;
                   u32 section table offset (from the info); u32 section count;
                   ref root type; ref root object; u32 type tag; u32 extra[4]          (ref = u32 section, u32 offset)
section (44)       u32 compression (0 none, 1 Oodle0, 2 Oodle1); u32 data offset; u32 data size;
                   u32 decompressed size; u32 alignment; u32 first16bit; u32 first8bit (Oodle1's stops);
                   u32 relocations offset, count; u32 marshallings offset, count
relocation (12)    u32 offset in this section; ref target          (a pointer slot of 4 bytes)
marshalling (16)   u32 count; u32 offset in this section; ref type (what a reader of the other byte order swaps)
```

The root object and every pointer target are laid out by a type tree the file carries (a "member" is 32 bytes:
i32 kind, string pointer name, pointer to the member list of its type, i32 array length, 16 reserved bytes;
a list ends at kind 0). `Gr2File.root` decodes it into `Struct` mappings, lists and numpy arrays.

All public NWN2 files are little-endian with 32-bit pointers (the magic says so); their byte order is ours, so
the marshalling table is only bounds-checked. Pointer slots without a relocation are null.

One reading budget (`core.budget.Budget`, docs/architecture.md §7.1 "Budgets") covers the whole file: every
section's decompressed size is counted against it before the first section is decompressed, and every
relocation and every object the decoder builds (array items, loop turns, empty items counted as one) before it
is built. Sections' data may not overlap, so no stream is decoded twice (docs/nwn2.md §5.1).
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

from ...core.budget import Budget, fits
from ...core.errors import FormatError
from . import MAGIC as MAGIC_LE32, oodle1

HEADER_SIZE = 32
INFO_SIZE = 56
SECTION_SIZE = 44
RELOCATION = np.dtype([("offset", "<u4"), ("section", "<u4"), ("target", "<u4")])
MARSHALLING = np.dtype([("count", "<u4"), ("offset", "<u4"), ("section", "<u4"), ("target", "<u4")])
COMPRESSIONS = {0: "none", 1: "Oodle0", 2: "Oodle1"}
MAX_SECTIONS = 64  # public files have 6 to 8; a count above this is not a section table
MAX_EXPANSION = 64  # Oodle1 output per compressed byte that a declared size may claim (files show < 16)
MAX_TYPE_DEPTH = 32

# member kinds (Granny's member types) and their sizes with 32-bit pointers; None: size of the member's type
END, INLINE, REFERENCE, REFERENCE_TO_ARRAY, ARRAY_OF_REFERENCES, VARIANT_REFERENCE = range(6)
REFERENCE_TO_VARIANT_ARRAY, STRING, TRANSFORM, REAL32 = 7, 8, 9, 10
EMPTY_REFERENCE = 22
KIND_NAMES = {0: "end", 1: "inline", 2: "reference", 3: "reference_to_array", 4: "array_of_references",
              5: "variant_reference", 7: "reference_to_variant_array", 8: "string", 9: "transform",
              10: "real32", 11: "int8", 12: "uint8", 13: "binormal_int8", 14: "normal_uint8", 15: "int16",
              16: "uint16", 17: "binormal_int16", 18: "normal_uint16", 19: "int32", 20: "uint32", 21: "real16",
              22: "empty_reference"}
SCALARS = {10: "<f4", 11: "i1", 12: "u1", 13: "i1", 14: "u1", 15: "<i2", 16: "<u2", 17: "<i2", 18: "<u2",
           19: "<i4", 20: "<u4", 21: "<f2"}
# one scalar (not an array) read with struct: the same Python value as numpy's `.item()`, without an array
SCALAR_STRUCTS = {k: struct.Struct("<" + np.dtype(v).char) for k, v in SCALARS.items()}
POINTER_SIZES = {REFERENCE: 4, REFERENCE_TO_ARRAY: 8, ARRAY_OF_REFERENCES: 8, VARIANT_REFERENCE: 8,
                 REFERENCE_TO_VARIANT_ARRAY: 12, STRING: 4, EMPTY_REFERENCE: 4}
TRANSFORM_DTYPE = np.dtype([("flags", "<u4"), ("translation", "<f4", (3,)), ("rotation", "<f4", (4,)),
                            ("scale_shear", "<f4", (3, 3))])
MEMBER_SIZE = 32
_MEMBER_KIND_LENGTH = struct.Struct("<i8xi")  # a member's kind (@0) and array length (@12)

Ref = tuple[int, int]  # (section, offset)


@dataclass
class Section:
    index: int
    compression: int
    data_offset: int
    data_size: int
    decompressed_size: int
    alignment: int
    stops: tuple[int, int]
    relocations_offset: int
    relocations: np.ndarray       # RELOCATION records
    marshallings_offset: int
    marshallings: np.ndarray      # MARSHALLING records
    data: bytes = b""             # decompressed
    pointers: dict[int, Ref] = field(default_factory=dict)  # slot offset → target


@dataclass(frozen=True)
class Member:
    """One entry of a type: its kind, name, array length and (inline, references) the members of its type."""
    kind: int
    name: str
    length: int
    type_ref: Ref | None      # where the members of its type lie (None: no type)
    at: Ref

    @property
    def count(self) -> int:
        return max(self.length, 1)


class Struct(dict):
    """An object of the file: member name → value, with its type and where it lies."""

    def __init__(self, type_: tuple[Member, ...], at: Ref | None):
        super().__init__()
        self.type = type_
        self.at = at


@dataclass
class Gr2File:
    magic: bytes
    header_size: int
    format: int
    version: int
    file_size: int
    crc: int
    computed_crc: int
    sections: list[Section]
    root_type_ref: Ref
    root_ref: Ref
    tag: int
    extra: tuple[int, ...]
    warnings: list[str] = field(default_factory=list)
    budget: Budget = field(default_factory=lambda: Budget(0, "GR2 file"))  # what its decoding may still build
    _root: Struct | None = None

    @property
    def root_type(self) -> tuple[Member, ...]:
        return Decoder(self).type_at(self.root_type_ref, "root type")

    @property
    def root(self) -> Struct:
        """The root object (a file info: art tool, exporter, skeletons, models, animations, ...), decoded once."""
        if self._root is None:
            self._root = Decoder(self).struct(self.root_type_ref, self.root_ref, 0)
        return self._root


def _header(data: bytes) -> tuple:
    if len(data) < HEADER_SIZE + INFO_SIZE:
        raise FormatError(f"{len(data)} bytes cannot hold the 88-byte header", 0, "header")
    magic = data[:16]
    if magic != MAGIC_LE32:
        raise FormatError(f"magic {magic.hex()} is not a little-endian 32-bit Granny 2 file (the only kind NWN2 "
                          "uses)", 0, "magic")
    return struct.unpack_from("<4I14I", data, 16)


def _section(data: bytes, index: int, at: int, n_sections: int) -> Section:
    (compression, data_offset, data_size, size, alignment, stop1, stop2, rel_at, rel_n, mar_at,
     mar_n) = struct.unpack_from("<11I", data, at)
    name = f"section[{index}]"
    if compression not in (0, 2):
        what = COMPRESSIONS.get(compression, "unknown")
        raise FormatError(f"compression {compression} ({what}) is not supported (NWN2 files use 0 or 2)",
                          at, f"{name}.compression")
    if data_offset + data_size > len(data):
        raise FormatError(f"data {data_offset}+{data_size} beyond the file's {len(data)} bytes", at + 4,
                          f"{name}.data_offset")
    limit = data_size if compression == 0 else data_size * MAX_EXPANSION
    if size > limit or (compression == 0 and size != data_size):
        raise FormatError(f"decompressed size {size} cannot come from {data_size} bytes", at + 12,
                          f"{name}.decompressed_size")
    tables = []
    for rel, (offset, count, dtype, what) in enumerate(((rel_at, rel_n, RELOCATION, "relocations"),
                                                        (mar_at, mar_n, MARSHALLING, "marshallings"))):
        if offset + count * dtype.itemsize > len(data):
            raise FormatError(f"{count} {what} at {offset} run beyond the file's {len(data)} bytes",
                              at + 28 + 8 * rel, f"{name}.{what}_offset")
        tables.append(np.frombuffer(data, dtype, count, offset).copy())
    return Section(index, compression, data_offset, data_size, size, alignment, (stop1, stop2), rel_at,
                   tables[0], mar_at, tables[1])


def _pointers(sections: list[Section]) -> None:
    """Each section's relocations as slot → target, checked against the sections' sizes."""
    sizes = np.array([s.decompressed_size for s in sections], np.int64)
    for s in sections:
        rel = s.relocations
        if not len(rel):
            continue
        slot_bad = rel["offset"].astype(np.int64) + 4 > s.decompressed_size
        section_bad = rel["section"] >= len(sections)
        target_bad = ~section_bad & (rel["target"] > sizes[np.minimum(rel["section"], len(sections) - 1)])
        bad = np.flatnonzero(slot_bad | section_bad | target_bad)
        if len(bad):
            k = int(bad[0])
            r = rel[k]
            raise FormatError(f"relocation {k} of section {s.index} (slot {r['offset']} → section {r['section']}"
                              f" offset {r['target']}) lies outside the sections", s.relocations_offset + 12 * k,
                              f"section[{s.index}].relocations")
        s.pointers = dict(zip(rel["offset"].tolist(), zip(rel["section"].tolist(), rel["target"].tolist())))


def _marshallings(sections: list[Section]) -> None:
    for s in sections:
        m = s.marshallings
        bad = np.flatnonzero((m["offset"] > s.decompressed_size) | (m["section"] >= len(sections)))
        if len(bad):
            k = int(bad[0])
            raise FormatError(f"marshalling {k} of section {s.index} lies outside the sections",
                              s.marshallings_offset + 16 * k, f"section[{s.index}].marshallings")


def _claims(sections: list[Section], table_at: int, budget: Budget) -> None:
    """Every section's decompressed size and relocations counted against the file's budget, and no two sections
    sharing data, before anything is decompressed or built."""
    ends: list[tuple[int, int, int]] = []
    for s in sections:
        at = HEADER_SIZE + table_at + s.index * SECTION_SIZE
        budget.unpack(s.decompressed_size, at + 12, f"section[{s.index}].decompressed_size")
        budget.objects(len(s.relocations), s.relocations_offset, f"section[{s.index}].relocations")
        if s.data_size:
            ends.append((s.data_offset, s.data_offset + s.data_size, s.index))
    ends.sort()
    for (_, end, first), (start, _, second) in zip(ends, ends[1:]):
        if start < end:
            raise FormatError(f"data at {start} overlap section {first}'s, which end at {end} (sections share "
                              "no bytes)", HEADER_SIZE + table_at + second * SECTION_SIZE + 4,
                              f"section[{second}].data_offset")


def decompress_section(data: bytes, s: Section) -> bytes:
    raw = data[s.data_offset:s.data_offset + s.data_size]
    if s.compression == 0:
        return raw
    return oodle1.decompress(raw, s.stops, s.decompressed_size)


def read(data: bytes) -> Gr2File:
    """The file's header, sections (decompressed) and pointer table; the typed data decode on first use of
    `root`."""
    data = bytes(data)
    fields = _header(data)
    header_size, fmt, _r0, _r1, version, file_size, crc, table_at, n_sections = fields[:9]
    root_type_ref, root_ref, tag, extra = fields[9:11], fields[11:13], fields[13], fields[14:18]
    warnings = []
    if version != 6:
        raise FormatError(f"version {version}; NWN2's Granny files are version 6", HEADER_SIZE, "version")
    if file_size > len(data):
        raise FormatError(f"the header says {file_size} bytes, the file has {len(data)}", HEADER_SIZE + 4,
                          "file_size")
    if file_size < len(data):
        warnings.append(f"{len(data) - file_size} bytes after the size the header gives, ignored")
    data = data[:file_size]
    if n_sections > MAX_SECTIONS or HEADER_SIZE + table_at + n_sections * SECTION_SIZE > len(data):
        raise FormatError(f"{n_sections} sections at {table_at} do not fit the file", HEADER_SIZE + 16,
                          "section_count")
    computed = zlib.crc32(data[HEADER_SIZE + INFO_SIZE:]) & 0xFFFFFFFF
    if computed != crc:
        warnings.append(f"CRC-32 {crc:#010x} in the header, {computed:#010x} computed")
    sections = [_section(data, i, HEADER_SIZE + table_at + i * SECTION_SIZE, n_sections) for i in range(n_sections)]
    budget = Budget(len(data), "GR2 file")
    _claims(sections, table_at, budget)
    for s in sections:
        s.data = decompress_section(data, s)
    _pointers(sections)
    _marshallings(sections)
    for name, ref, at in (("root type", root_type_ref, 52), ("root", root_ref, 60)):
        if ref[0] >= n_sections or ref[1] >= max(sections[ref[0]].decompressed_size, 1):
            raise FormatError(f"{name} reference {ref} is outside the sections", at, name)
    return Gr2File(data[:16], header_size, fmt, version, file_size, crc, computed, sections, tuple(root_type_ref),
                   tuple(root_ref), tag, tuple(extra), warnings, budget)


NWN2_TAG = 0x80000015  # the type tag of every public NWN2 file (Granny 2.6): it fixes the root's layout
SKELETONS_SLOT = 32  # that root's Skeletons pointer (after 3 references and the Textures and Materials arrays)


def may_hold_skeletons(data: bytes) -> bool:
    """False when the file surely holds no skeleton, known without decompressing it: its tag is NWN2's type
    library, whose root (FileInfo) keeps the Skeletons array's pointer at byte 32, and the root's section has no
    relocation for that slot (a null pointer: no skeletons; the game's and the public animations are so).
    True for anything else, a file that does not parse included (its full read says why)."""
    try:
        fields = _header(data)
        table_at, n_sections = fields[7], fields[8]
        (section, offset), tag = fields[11:13], fields[13]
        if tag != NWN2_TAG or section >= n_sections or n_sections > MAX_SECTIONS:
            return True
        s = _section(data, section, HEADER_SIZE + table_at + section * SECTION_SIZE, n_sections)
    except (FormatError, struct.error):
        return True
    return bool((s.relocations["offset"] == offset + SKELETONS_SLOT).any())


class Decoder:
    """Type tree and objects of one file. A member's type is looked up when used (types may refer to each other
    in cycles: a material's maps hold materials); types and objects are memoised by where they lie, so shared
    and cyclic references are decoded once, and the total work is bounded by the file's bytes."""

    def __init__(self, f: Gr2File):
        self.f = f
        self.types: dict[Ref, tuple[Member, ...]] = {}
        self.sizes: dict[Ref | None, int] = {None: 0}
        self.dtypes: dict[Ref | None, np.dtype | None] = {}
        self.objects: dict[tuple, object] = {}
        self.strings: dict[Ref, str] = {}

    def _spend(self, n: int, at: Ref, what: str) -> None:
        """Count `n` more objects (or loop turns) against the file's budget before making them."""
        self.f.budget.objects(n, at[1], f"section[{at[0]}] {what}")

    def pointer(self, at: Ref) -> Ref | None:
        return self.f.sections[at[0]].pointers.get(at[1])

    def bytes_at(self, at: Ref, size: int, what: str) -> bytes:
        data = self.f.sections[at[0]].data
        if at[1] + size > len(data):
            raise FormatError(f"{what} needs {size} bytes, section {at[0]} has {len(data) - at[1]} left", at[1],
                              f"section[{at[0]}] {what}")
        return data[at[1]:at[1] + size]

    def string(self, at: Ref | None, what: str) -> str | None:
        if at is None:
            return None
        known = self.strings.get(at)  # member names repeat: "Name" in every type
        if known is not None:
            return known
        data = self.f.sections[at[0]].data
        end = data.find(b"\0", at[1])
        if end < 0:
            raise FormatError("string has no NUL before the end of its section", at[1], f"section[{at[0]}] {what}")
        self.strings[at] = text = data[at[1]:end].decode("utf-8", "surrogateescape")
        return text

    def type_at(self, at: Ref | None, what: str) -> tuple[Member, ...]:
        """The members of the type at `at` (none for a null type pointer)."""
        if at is None:
            return ()
        found = self.types.get(at)
        if found is not None:
            return found
        members = []
        s, o = at
        section = self.f.sections[s]
        data, pointers = section.data, section.pointers  # read in place: a type is read once, member by member
        while True:
            if o + MEMBER_SIZE > len(data):
                raise FormatError(f"{what} member needs {MEMBER_SIZE} bytes, section {s} has {len(data) - o} left",
                                  o, f"section[{s}] {what} member")
            kind, length = _MEMBER_KIND_LENGTH.unpack_from(data, o)
            if kind == END:
                break
            if kind not in KIND_NAMES or length < 0:
                raise FormatError(f"member kind {kind} / length {length} is not a Granny member", o,
                                  f"section[{s}] {what} member")
            self._spend(1, (s, o), what)
            name = self.string(pointers.get(o + 4), f"{what} member name") or ""
            members.append(Member(kind, name, length, pointers.get(o + 8), (s, o)))
            o += MEMBER_SIZE
        self.types[at] = found = tuple(members)
        return found

    def type_size(self, ref: Ref | None, depth: int = 0) -> int:
        if ref in self.sizes:
            return self.sizes[ref]
        if depth > MAX_TYPE_DEPTH:
            raise FormatError(f"inline members nest deeper than {MAX_TYPE_DEPTH}", ref[1], f"section[{ref[0]}] type")
        size = sum(self.member_size(m, depth) for m in self.type_at(ref, "type"))
        self.sizes[ref] = size
        return size

    def member_size(self, m: Member, depth: int = 0) -> int:
        if m.kind in SCALARS:
            return SCALAR_STRUCTS[m.kind].size * m.count
        if m.kind == TRANSFORM:
            return TRANSFORM_DTYPE.itemsize * m.count
        if m.kind == INLINE:
            return self.type_size(m.type_ref, depth + 1) * m.count
        return POINTER_SIZES[m.kind] * m.count

    def numeric_dtype(self, ref: Ref | None, depth: int = 0) -> np.dtype | None:
        """The numpy dtype of a type made of numbers (and inline types of numbers) only, else None."""
        if ref in self.dtypes:
            return self.dtypes[ref]
        self.dtypes[ref] = None  # an inline type that contains itself is not plain numbers
        fields = []
        for m in self.type_at(ref, "type"):
            if m.kind in SCALARS or m.kind == TRANSFORM:
                base = np.dtype(SCALARS[m.kind]) if m.kind in SCALARS else TRANSFORM_DTYPE
            elif m.kind == INLINE and depth < MAX_TYPE_DEPTH:
                base = self.numeric_dtype(m.type_ref, depth + 1)
                if base is None:
                    return None
            else:
                return None
            fields.append((m.name, base, (m.length,)) if m.length else (m.name, base))
        names = [f[0] for f in fields]
        if fields and len(set(names)) == len(names) and "" not in names:
            self.dtypes[ref] = np.dtype(fields)
        return self.dtypes[ref]

    def struct(self, ref: Ref | None, at: Ref, depth: int) -> Struct:
        key = (at, ref)
        if key in self.objects:
            return self.objects[key]
        if depth > MAX_TYPE_DEPTH * 4:
            raise FormatError("objects nest too deep", at[1], f"section[{at[0]}] object")
        type_ = self.type_at(ref, "type")
        out = Struct(type_, at)
        self.objects[key] = out
        s, o = at
        for m in type_:
            out[m.name] = self.value(m, (s, o), depth)
            o += self.member_size(m)
        return out

    def value(self, m: Member, at: Ref, depth: int):
        kind = m.kind
        self._spend(1, at, m.name)
        if kind in SCALARS and not m.length:
            one = SCALAR_STRUCTS[kind]
            return one.unpack(self.bytes_at(at, one.size, m.name))[0]
        if kind in SCALARS or kind == TRANSFORM:
            dtype = np.dtype(SCALARS[kind]) if kind in SCALARS else TRANSFORM_DTYPE
            values = np.frombuffer(self.bytes_at(at, dtype.itemsize * m.count, m.name), dtype, m.count).copy()
            return values if m.length else values[0].item() if kind in SCALARS else values[0]
        if kind == INLINE:
            size = self.type_size(m.type_ref)
            if m.length:  # an array: its items counted (an empty one as one byte) before the loop
                fits(m.count, size, len(self.f.sections[at[0]].data) - at[1], at[1], f"section[{at[0]}] {m.name}")
                self._spend(m.count, at, m.name)
            items = [self.struct(m.type_ref, (at[0], at[1] + i * size), depth + 1) for i in range(m.count)]
            return items if m.length else items[0]
        if kind == STRING:
            return self.string(self.pointer(at), m.name)
        if kind == EMPTY_REFERENCE:
            return None
        if kind == REFERENCE:
            target = self.pointer(at)
            return None if target is None else self.struct(m.type_ref, target, depth + 1)
        if kind == VARIANT_REFERENCE:
            type_ref, target = self.pointer(at), self.pointer((at[0], at[1] + 4))
            return None if type_ref is None or target is None else self.struct(type_ref, target, depth + 1)
        if kind == REFERENCE_TO_ARRAY:
            return self.array(m.type_ref, self.count(at, m.name), self.pointer((at[0], at[1] + 4)), m, depth)
        if kind == REFERENCE_TO_VARIANT_ARRAY:
            count = self.count((at[0], at[1] + 4), m.name)
            return self.array(self.pointer(at), count, self.pointer((at[0], at[1] + 8)), m, depth)
        if kind == ARRAY_OF_REFERENCES:
            count, target = self.count(at, m.name), self.pointer((at[0], at[1] + 4))
            if target is None or count == 0:
                return []
            self.bytes_at(target, 4 * count, m.name)
            self._spend(count, target, m.name)
            return [None if (p := self.pointer((target[0], target[1] + 4 * i))) is None
                    else self.struct(m.type_ref, p, depth + 1) for i in range(count)]
        raise FormatError(f"member kind {kind} cannot be read", at[1], f"section[{at[0]}] {m.name}")

    def count(self, at: Ref, what: str) -> int:
        n = struct.unpack("<i", self.bytes_at(at, 4, what))[0]
        if n < 0:
            raise FormatError(f"negative count {n}", at[1], f"section[{at[0]}] {what}")
        return n

    def array(self, ref: Ref | None, count: int, target: Ref | None, m: Member, depth: int):
        """`count` objects of the type at `ref` at `target`: a numpy structured array when the type is plain
        numbers, else a list of Structs."""
        if target is None or count == 0:
            return []
        size = self.type_size(ref)
        self.bytes_at(target, max(size, 1) * count, f"{m.name}[{count}]")
        key = (target, ref, count)
        if key in self.objects:
            return self.objects[key]
        dtype = self.numeric_dtype(ref)
        if dtype is not None:
            self._spend(1, target, m.name)
            out = np.frombuffer(self.bytes_at(target, size * count, m.name), dtype, count).copy()
        else:
            self._spend(count, target, m.name)
            out = [self.struct(ref, (target[0], target[1] + i * size), depth + 1) for i in range(count)]
        self.objects[key] = out
        return out
