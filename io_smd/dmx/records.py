"""The records of a DMX file (Valve's Data Model eXchange): a graph of typed elements, shared by the binary and
the keyvalues2 codecs (`dmx`, `kv2`). No interpretation here: what a DmeModel means is `convert`'s job.

An element has a type name (its C++ class: "DmeModel"), a name, a 16-byte id and an ordered list of attributes.
An attribute has a name, one of the value types below, and a single value or an array of them. Fixed-size values
are numpy arrays (a single int is a 0-d int32 array, a vector3 array an (n, 3) float32 array), so that a value
read from either encoding writes back with the same bits; strings are str (bytes that are not UTF-8 kept through
surrogateescape), binary blobs bytes, element values an `Element`, None (a null reference) or a `Stub` (a
reference to an element that is not in the file). See docs/source.md ("DMX") for the layouts.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np


class AttrType(IntEnum):
    """Value types, numbered as binary versions 3 to 5 number them (OBJECTID is version 1-2's code 7)."""
    ELEMENT = 1
    INT = 2
    FLOAT = 3
    BOOL = 4
    STRING = 5
    BINARY = 6
    TIME = 7
    COLOR = 8
    VECTOR2 = 9
    VECTOR3 = 10
    VECTOR4 = 11
    QANGLE = 12
    QUATERNION = 13
    VMATRIX = 14
    UINT64 = 15
    UINT8 = 16
    OBJECTID = 17


# dtype and per-item shape of each fixed-size type; TIME is kept as the file's int32 ticks of 1/10000 s
FIXED: dict[AttrType, tuple[str, tuple[int, ...]]] = {
    AttrType.INT: ("<i4", ()),
    AttrType.FLOAT: ("<f4", ()),
    AttrType.BOOL: ("u1", ()),
    AttrType.TIME: ("<i4", ()),
    AttrType.COLOR: ("u1", (4,)),
    AttrType.VECTOR2: ("<f4", (2,)),
    AttrType.VECTOR3: ("<f4", (3,)),
    AttrType.VECTOR4: ("<f4", (4,)),
    AttrType.QANGLE: ("<f4", (3,)),
    AttrType.QUATERNION: ("<f4", (4,)),
    AttrType.VMATRIX: ("<f4", (4, 4)),
    AttrType.UINT64: ("<u8", ()),
    AttrType.UINT8: ("u1", ()),
    AttrType.OBJECTID: ("u1", (16,)),
}

TIME_TICKS = 10000  # binary time values count 1/10000 s


def item_size(t: AttrType) -> int:
    """Bytes of one fixed-size value."""
    dtype, shape = FIXED[t]
    return np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64))


@dataclass(frozen=True)
class Stub:
    """A reference to an element the file does not hold: a binary -2 reference or a text id naming no element
    (`id`), or a binary index past the element table (`index`, kept so that the file writes back)."""
    id: str | None = None
    index: int | None = None


@dataclass(eq=False)
class Attribute:
    name: str
    type: AttrType
    array: bool
    value: Any
    # keyvalues2 only: which element values stood inline (bool, or a list for an array) rather than as a
    # reference; the tokens as read (name, type, values) with the value they gave, reused while unchanged
    inline: Any = None
    raw: tuple[str, ...] | None = None
    seen: Any = None

    def __len__(self) -> int:
        return len(self.value) if self.array else 1


@dataclass(eq=False)
class Element:
    type: str | None
    name: str | None
    id: uuid.UUID | None
    attributes: list[Attribute] = field(default_factory=list)
    # keyvalues2 only: where the name line stood among the attributes (None: right after the id, or no name
    # line when `name` is None) and the header tokens as read (type, id value, name value)
    name_at: int | None = None
    raw: tuple[str | None, str | None, str | None] | None = None

    def get(self, name: str) -> Attribute | None:
        """The first attribute of that name (a file may repeat one: the codec keeps every one)."""
        for a in self.attributes:
            if a.name == name:
                return a
        return None

    def value(self, name: str, default: Any = None) -> Any:
        a = self.get(name)
        return default if a is None else a.value

    def __repr__(self) -> str:
        return f"<{self.type} {self.name!r} {self.id}>"


@dataclass(eq=False)
class GzipWrap:
    """A gzip-compressed file: its bytes, kept with a digest of what they hold so that an unchanged file
    writes back as it was (a compressor other than zlib packed the samples, so recompressing cannot match)."""
    original: bytes
    digest: bytes
    mtime: int


@dataclass(eq=False)
class DmxFile:
    encoding: str                      # "binary", "keyvalues2" or "keyvalues2_noids"
    encoding_version: int              # 0 for the legacy "DMXVersion" header
    format: str                        # what the file holds: "model", "sfm_session", ...
    format_version: int
    elements: list[Element]            # in file order; elements[0] is the root
    prefix: list[list[Attribute]] = field(default_factory=list)  # binary 9's prefix elements (no header)
    strings: list[str | None] | None = None  # binary 2+: the string table as read, reused on write
    unicode: bool = False              # the encoding name has the "unicode_" prefix
    header: str | None = None          # the header comment as read, reused while the fields above match it
    after_header: bytes | None = None  # binary: what follows the comment up to its NUL; text: unused
    tail: bytes = b""                  # binary: bytes after the last element (kept, with a warning)
    top_level: list[Element] | None = None   # keyvalues2: the elements written at the top, in order
    layout: tuple[str, list[str]] | None = None  # keyvalues2: token kinds and the text between tokens
    gzip: GzipWrap | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def root(self) -> Element | None:
        return self.elements[0] if self.elements else None

    @property
    def binary(self) -> bool:
        return self.encoding == "binary"


def references(value: Any, array: bool) -> list[Any]:
    """The element values of an element attribute's value, as a list."""
    return list(value) if array else [value]


def element_refs(elem: Element) -> list[Element]:
    """The elements `elem` refers to, in attribute order (nulls and stubs left out)."""
    out = []
    for a in elem.attributes:
        if a.type == AttrType.ELEMENT:
            out += [e for e in references(a.value, a.array) if isinstance(e, Element)]
    return out


def reachable(dmx: DmxFile) -> list[Element]:
    """The file's elements, then every element reachable from them that the list lacks (an element a caller
    attached to the graph), depth first."""
    out = list(dmx.elements)
    seen = {id(e) for e in out}
    stack = list(reversed(out))
    while stack:
        for child in reversed(element_refs(stack.pop())):
            if id(child) not in seen:
                seen.add(id(child))
                out.append(child)
                stack.append(child)
    return out
