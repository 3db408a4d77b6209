"""Granny 2 writer (docs/nwn2.md §5.6): a typed tree (types as `TypeDef`, objects as mappings, lists and numpy
arrays, the shapes `gr2.Gr2File.root` gives) laid out as an uncompressed little-endian 32-bit GR2 file.

Layout: the header, info and section table of the game's files (version 6, six sections, 4-byte alignment);
every object in section 0, breadth first from the root (each object once, however often it is referenced, so
shared and cyclic references survive), then the strings, then the type tree (32-byte members ending with a
zero member); sections 1–5 empty. Every pointer slot has a relocation; null pointers have none. The files are in
the reader's byte order, so no marshalling is written. `types_of` turns a file's own type tree into TypeDefs,
so a file read and written keeps its member names, kinds, order and array lengths (`rewrite`).
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...core.errors import ExportError
from . import MAGIC, gr2

VERSION = 6
SECTIONS = 6  # what the game's exporter writes: the objects, then vertex, index and texture sections
ALIGNMENT = 4
HEADER_SIZE = gr2.HEADER_SIZE + gr2.INFO_SIZE + SECTIONS * gr2.SECTION_SIZE
TAG = 0x80000015  # the type tag of every public NWN2 file (Granny 2.6)


@dataclass(eq=False)
class Field:
    kind: int
    name: str
    type: TypeDef | None = None
    length: int = 0

    @property
    def count(self) -> int:
        return max(self.length, 1)


@dataclass(eq=False)
class TypeDef:
    """A Granny type: its members in order (filled after creation, so types may refer to each other)."""
    fields: list[Field] = field(default_factory=list)

    def size(self) -> int:
        return sum(_field_size(f) for f in self.fields)


def _field_size(f: Field) -> int:
    if f.kind in gr2.SCALARS:
        return np.dtype(gr2.SCALARS[f.kind]).itemsize * f.count
    if f.kind == gr2.TRANSFORM:
        return gr2.TRANSFORM_DTYPE.itemsize * f.count
    if f.kind == gr2.INLINE:
        return f.type.size() * f.count if f.type is not None else 0
    return gr2.POINTER_SIZES[f.kind] * f.count


class FileTypes:
    """A file's own type tree as TypeDefs, made on first use by where each type lies: `root`, and `of(obj)` for
    an object the reader decoded (a variant's object names its type only through its members' places)."""

    def __init__(self, f: gr2.Gr2File) -> None:
        self._decoder = gr2.Decoder(f)
        self._made: dict[gr2.Ref, TypeDef] = {}
        self.root = self.make(f.root_type_ref)

    def make(self, ref: gr2.Ref | None) -> TypeDef | None:
        if ref is None:
            return None
        if ref not in self._made:
            made = self._made[ref] = TypeDef()
            made.fields = [Field(m.kind, m.name, self.make(m.type_ref), m.length)
                           for m in self._decoder.type_at(ref, "type")]
        return self._made[ref]

    def of(self, obj) -> TypeDef:
        members = getattr(obj, "type", None)
        if not members:
            raise ExportError("a variant's object has a type without members: where it lies is unknown")
        return self.make(members[0].at)


@dataclass
class _Pending:
    slot: int                 # where the pointer goes
    what: str                 # "object", "array", "pointers", "string", "type"
    type: TypeDef | None
    value: object


class _Layout:
    """Section 0 being written: the bytes, the relocations, and where each object, string and type lies."""

    def __init__(self, variant_type: Callable[[object], TypeDef]) -> None:
        self.data = bytearray()
        self.relocations: list[tuple[int, int]] = []
        self.placed: dict[tuple, int] = {}
        self.queue: list[_Pending] = []
        self.variant_type = variant_type  # the TypeDef of a variant's object

    def allocate(self, size: int) -> int:
        self.data += b"\0" * (-len(self.data) % ALIGNMENT)
        at = len(self.data)
        self.data += b"\0" * size
        return at

    def pointer(self, slot: int, what: str, type_: TypeDef | None, value: object) -> None:
        if value is None or (what in ("array", "pointers") and not len(value)):
            return
        self.queue.append(_Pending(slot, what, type_, value))

    def struct(self, type_: TypeDef, value: object, at: int, where: str) -> None:
        for f in type_.fields:
            item = value.get(f.name) if isinstance(value, dict) else None
            self.member(f, item, at, f"{where}.{f.name}")
            at += _field_size(f)

    def member(self, f: Field, value: object, at: int, where: str) -> None:
        kind = f.kind
        if kind in gr2.SCALARS or kind == gr2.TRANSFORM:
            dtype = np.dtype(gr2.SCALARS[kind]) if kind in gr2.SCALARS else gr2.TRANSFORM_DTYPE
            raw = _numbers(value, dtype, f.count, where)
            self.data[at:at + len(raw)] = raw
        elif kind == gr2.INLINE and f.type is not None:
            items = value if f.length else [value]
            size = f.type.size()
            for i in range(f.count):
                self.struct(f.type, items[i] if items is not None and i < len(items) else None, at + i * size,
                            where)
        elif kind in (gr2.REFERENCE, gr2.STRING):
            self.pointer(at, "object" if kind == gr2.REFERENCE else "string", f.type, value)
        elif kind == gr2.VARIANT_REFERENCE:
            if value is not None:
                variant = self.variant_type(value)
                self.pointer(at, "type", None, variant)
                self.pointer(at + 4, "object", variant, value)
        elif kind in (gr2.REFERENCE_TO_ARRAY, gr2.ARRAY_OF_REFERENCES):
            items = [] if value is None else value
            struct.pack_into("<i", self.data, at, len(items))
            self.pointer(at + 4, "array" if kind == gr2.REFERENCE_TO_ARRAY else "pointers", f.type, items)
        elif kind == gr2.REFERENCE_TO_VARIANT_ARRAY:
            items = [] if value is None else value
            struct.pack_into("<i", self.data, at + 4, len(items))
            if len(items):
                variant = self.variant_type(items[0])
                self.pointer(at, "type", None, variant)
                self.pointer(at + 8, "array", variant, items)
        elif kind not in (gr2.EMPTY_REFERENCE, gr2.INLINE):
            raise ExportError(f"{where}: member kind {kind} cannot be written")

    def place(self, p: _Pending) -> int:
        """Where the target of a pending pointer lies, writing it first if it is new."""
        value = p.value
        key = _key(p)
        if key in self.placed:
            return self.placed[key]
        if p.what == "string":
            raw = value.encode("utf-8", "surrogateescape") + b"\0"
            at = self.placed[key] = self.allocate(len(raw))
            self.data[at:at + len(raw)] = raw
        elif p.what == "object":
            if p.type is None:
                raise ExportError("a reference without a type cannot be written")
            at = self.placed[key] = self.allocate(p.type.size())
            self.struct(p.type, value, at, "object")
        elif p.what == "array":
            size = p.type.size()
            at = self.placed[key] = self.allocate(size * len(value))
            if isinstance(value, np.ndarray):
                raw = value.tobytes()
                if len(raw) != size * len(value):
                    raise ExportError(f"an array of {len(value)} items is not {size} bytes each")
                self.data[at:at + len(raw)] = raw
            else:
                for i, item in enumerate(value):
                    self.struct(p.type, item, at + i * size, "array")
        elif p.what == "pointers":
            at = self.placed[key] = self.allocate(4 * len(value))
            for i, item in enumerate(value):
                self.pointer(at + 4 * i, "object", p.type, item)
        else:
            at = self.placed[key] = self.type_def(value)
        return at

    def type_def(self, t: TypeDef) -> int:
        at = self.allocate(gr2.MEMBER_SIZE * (len(t.fields) + 1))
        self.placed[("type", id(t))] = at
        for i, f in enumerate(t.fields):
            slot = at + gr2.MEMBER_SIZE * i
            struct.pack_into("<i", self.data, slot, f.kind)
            struct.pack_into("<i", self.data, slot + 12, f.length)
            self.pointer(slot + 4, "string", None, f.name)
            self.pointer(slot + 8, "type", None, f.type)
        return at

    def run(self) -> None:
        while self.queue:
            p = self.queue.pop(0)
            target = self.place(p)
            self.relocations.append((p.slot, target))


def _key(p: _Pending) -> tuple:
    """Objects and types are placed once per identity (shared and cyclic references), strings per text."""
    if p.what == "string":
        return ("string", p.value)
    if p.what == "type":
        return ("type", id(p.value))
    return (p.what, id(p.value), id(p.type))


def _numbers(value, dtype: np.dtype, count: int, where: str) -> bytes:
    if value is None:
        return b"\0" * (dtype.itemsize * count)
    if dtype == gr2.TRANSFORM_DTYPE and isinstance(value, dict):
        value = (value["flags"], value["translation"], value["rotation"], value["scale_shear"])
        value = np.array([value], dtype)
    array = np.asarray(value).astype(dtype) if dtype.names is None else np.asarray(value, dtype)
    if array.size != count:
        raise ExportError(f"{where}: {array.size} values where the type holds {count}")
    return array.tobytes()


def write(root_type: TypeDef, root: dict, variant_type: Callable[[object], TypeDef] | None = None,
          tag: int = TAG) -> bytes:
    """The file of `root` (laid out by `root_type`). `variant_type(value)` gives the TypeDef of a variant
    reference's object (by default its `gr2_type` attribute or key)."""
    layout = _Layout(variant_type or _own_type)
    root_at = layout.allocate(root_type.size())
    layout.struct(root_type, root, root_at, "root")
    layout.run()
    type_at = layout.placed.get(("type", id(root_type)))
    if type_at is None:
        type_at = layout.type_def(root_type)
        layout.run()
    return _file(bytes(layout.data), layout.relocations, (0, type_at), (0, root_at), tag)


def _own_type(value) -> TypeDef:
    t = getattr(value, "gr2_type", None) or (value.get("__type__") if isinstance(value, dict) else None)
    if not isinstance(t, TypeDef):
        raise ExportError("a variant reference's object carries no type")
    return t


def _file(section: bytes, relocations: list[tuple[int, int]], root_type: gr2.Ref, root: gr2.Ref,
          tag: int) -> bytes:
    relocations = sorted(relocations)
    table = np.array([(s, 0, t) for s, t in relocations], gr2.RELOCATION).tobytes()
    data_at = HEADER_SIZE
    relocations_at = data_at + len(section)
    end = relocations_at + len(table)
    sections = [struct.pack("<11I", 0, data_at, len(section), len(section), ALIGNMENT, len(section), len(section),
                            relocations_at, len(relocations), end, 0)]
    sections += [struct.pack("<11I", 0, end, 0, 0, ALIGNMENT, 0, 0, end, 0, end, 0)] * (SECTIONS - 1)
    body = b"".join(sections) + section + table
    info_tail = struct.pack("<III", SECTIONS, *root_type) + struct.pack("<II", *root) + struct.pack("<I4I", tag,
                                                                                                   0, 0, 0, 0)
    crc = zlib.crc32(body) & 0xFFFFFFFF
    header = MAGIC + struct.pack("<4I", HEADER_SIZE, 0, 0, 0)
    info = struct.pack("<IIII", VERSION, HEADER_SIZE + len(section) + len(table), crc, gr2.INFO_SIZE) + info_tail
    return header + info + body


def rewrite(f: gr2.Gr2File) -> bytes:
    """A file read by `gr2.read` written again by this writer: the same typed tree, types and tag."""
    types = FileTypes(f)
    return write(types.root, f.root, types.of, f.tag)
