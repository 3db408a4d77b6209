"""Hostile GR2 files made from a real one (the shared glaive animation): its sections decompressed, changed, and
compressed again with our own Oodle1 encoder (`io_mdb/gr2/oodle1.py` `compress`), so the file is the game's
in every byte but the one lie each case tells (issue 45, items 1-3):

- `bomb`: the glaive's sections, then sections that each claim 64 times their data and share it (a stream of
  long copies that really expands that far, padded to a 64th of its claim);
- `empty_loop`: the root's last member made an inline array of 2^31 - 1 items of an empty type;
- `many_structs`: the root's last member made a reference to an array of 16.7 million structs of one null
  reference each, in a section of zeros.

`sections_of` and `pack` are the surgery the fuzzer's seeds use too (`hostile_gr2.seeds`): a file's sections
as bytes, and sections written back as a file (compressed or stored), with the relocations and marshallings.
"""
from __future__ import annotations

import functools
import pathlib
import struct
import zlib
from dataclasses import dataclass, field, replace

import numpy as np

from skinbridge.io_mdb.gr2 import MAGIC, gr2, oodle1

TESTDATA = pathlib.Path(__file__).resolve().parents[3].parent / "shared" / "testdata"
GLAIVE = TESTDATA / "gr2" / "ovr_p_hhf_glaive01.GR2"
LOOP_COUNT = (1 << 31) - 1  # the largest count an i32 array length holds
MANY = 1 << 24


@dataclass
class Part:
    """One section as the forge holds it: its decompressed bytes and tables, and how it is written."""
    data: bytes
    relocations: np.ndarray = field(default_factory=lambda: np.zeros(0, gr2.RELOCATION))
    marshallings: np.ndarray = field(default_factory=lambda: np.zeros(0, gr2.MARSHALLING))
    stops: tuple[int, int] | None = None  # None: the whole section in the first run
    compressed: bool = True
    stored: bytes | None = None  # the bytes written (default: compressed or stored `data`)
    claims: int | None = None  # the decompressed size written (default: len(data))
    shares: int | None = None  # no data of its own: the data of part `shares`


def sections_of(data: bytes) -> tuple[gr2.Gr2File, list[Part]]:
    """The file read, and its sections as parts keeping their own compressed bytes (so `pack` writes them
    unchanged until a part's `data` is replaced and `stored` dropped)."""
    f = gr2.read(data)
    parts = [Part(s.data, s.relocations, s.marshallings, s.stops, s.compression == 2,
                  data[s.data_offset:s.data_offset + s.data_size]) for s in f.sections]
    return f, parts


def pack(parts: list[Part], root_type: gr2.Ref, root: gr2.Ref, tag: int = 0x80000015) -> bytes:
    """A version 6 file of `parts` (sections in order), each section's data followed by its tables."""
    table_at = gr2.HEADER_SIZE + gr2.INFO_SIZE
    at = table_at + gr2.SECTION_SIZE * len(parts)
    body, rows, placed = bytearray(), [], []
    for p in parts:
        stored = _stored(p)
        if p.shares is None:
            placed.append((at + len(body), len(stored)))
            body += stored + bytes(-len(stored) % 4)
        else:
            placed.append(placed[p.shares])
    for p, (data_at, data_size) in zip(parts, placed):
        size = len(p.data) if p.claims is None else p.claims
        stops = p.stops or (size, size)
        rel_at = at + len(body)
        body += p.relocations.astype(gr2.RELOCATION).tobytes()
        mar_at = at + len(body)
        body += p.marshallings.astype(gr2.MARSHALLING).tobytes()
        rows.append(struct.pack("<11I", 2 if p.compressed else 0, data_at, data_size, size, 4, *stops, rel_at,
                                len(p.relocations), mar_at, len(p.marshallings)))
    after_info = b"".join(rows) + bytes(body)
    size = table_at + len(after_info)
    header = MAGIC + struct.pack("<4I", table_at + gr2.SECTION_SIZE * len(parts), 0, 0, 0)
    info = struct.pack("<5I2I2I5I", 6, size, zlib.crc32(after_info) & 0xFFFFFFFF, gr2.INFO_SIZE, len(parts),
                       *root_type, *root, tag, 0, 0, 0, 0)
    return header + info + after_info


def _stored(p: Part) -> bytes:
    if p.stored is not None:
        return p.stored
    if not p.compressed:
        return p.data
    if not p.data:
        return b""
    stream = oodle1.compress(p.data, p.stops)  # padded to what the reader lets a section expand from
    return stream + bytes(max(-(-len(p.data) // gr2.MAX_EXPANSION) - len(stream), 0))


def repack(data: bytes, compressed: bool) -> bytes:
    """The same file with every section compressed again by our encoder, or stored."""
    f, parts = sections_of(data)
    parts = [replace(p, compressed=compressed and bool(p.data), stored=None,
                     stops=p.stops if compressed and p.data else None) for p in parts]
    return pack(parts, f.root_type_ref, f.root_ref, f.tag)


@functools.lru_cache(maxsize=None)
def _expanding(size: int) -> bytes:
    return oodle1.compress(bytes(size))


def bomb(claim: int = 64 << 20, sections: int = gr2.MAX_SECTIONS, source=GLAIVE) -> bytes:
    """The sections of `source` (the glaive), then sections up to `sections` that each claim `claim` bytes from one
    shared stream padded to `claim` / 64 bytes (64 of them: a 1.1 MB file claiming 3.6 GiB). With a skeleton as
    `source` its root keeps a Skeletons pointer, so the skeleton search decompresses it (an animation's bomb it
    passes over unread)."""
    f, parts = sections_of(source.read_bytes())
    stream = _expanding(claim)
    stored = stream + bytes(-(-claim // gr2.MAX_EXPANSION) - len(stream))
    first = len(parts)
    parts.append(Part(b"", stored=stored, claims=claim))
    parts += [Part(b"", claims=claim, shares=first) for _ in range(sections - len(parts))]
    return pack(parts, f.root_type_ref, f.root_ref, f.tag)


def _last_root_member(f: gr2.Gr2File) -> tuple[gr2.Member, int]:
    """The root type's last member (ExtendedData in the game's files) and its offset in the root object."""
    d = gr2.Decoder(f)
    members = d.type_at(f.root_type_ref, "root type")
    return members[-1], f.root_ref[1] + sum(d.member_size(m) for m in members[:-1])


def _retyped(parts: list[Part], member: gr2.Member, kind: int, length: int, type_at: int,
             object_slots: tuple[int, ...] = ()) -> None:
    """Section 0 with `member` made of `kind` and `length`, its type pointer to `type_at` (section 0) and no
    pointer left in the object's `object_slots`."""
    s, o = member.at
    assert s == 0
    data = bytearray(parts[0].data)
    struct.pack_into("<i", data, o, kind)
    struct.pack_into("<i", data, o + 12, length)
    rel = parts[0].relocations
    rel = rel[~np.isin(rel["offset"], [o + 8, *object_slots])]
    rel = np.append(rel, np.array([(o + 8, 0, type_at)], gr2.RELOCATION))
    parts[0] = replace(parts[0], data=bytes(data), relocations=np.sort(rel, order="offset"), stored=None)


def empty_loop(count: int = LOOP_COUNT, base: bytes | None = None) -> bytes:
    """The glaive (or `base`) with its root's last member an inline array of `count` items of an empty type (the
    type pointer names the end record of the root type's own member list)."""
    f, parts = sections_of(GLAIVE.read_bytes() if base is None else base)
    member, _ = _last_root_member(f)
    _retyped(parts, member, gr2.INLINE, count, member.at[1] + gr2.MEMBER_SIZE)
    return pack(parts, f.root_type_ref, f.root_ref, f.tag)


def many_structs(count: int = MANY) -> bytes:
    """The glaive with its root's last member a reference to `count` structs of one null reference (4 bytes
    each, zeros at the end of section 0; its type of one member just before them)."""
    f, parts = sections_of(GLAIVE.read_bytes())
    member, slot = _last_root_member(f)
    data = bytearray(parts[0].data)
    data += bytes(-len(data) % 4)
    type_at = len(data)
    data += struct.pack("<iIIi16x", gr2.REFERENCE, 0, 0, 0) + bytes(gr2.MEMBER_SIZE)
    array_at = len(data)
    struct.pack_into("<i", data, slot, count)
    parts[0] = replace(parts[0], data=bytes(data) + bytes(4 * count), stops=None)
    _retyped(parts, member, gr2.REFERENCE_TO_ARRAY, 0, type_at, (slot, slot + 4))
    rel = np.append(parts[0].relocations, np.array([(slot + 4, 0, array_at)], gr2.RELOCATION))
    parts[0] = replace(parts[0], relocations=np.sort(rel, order="offset"))
    return pack(parts, f.root_type_ref, f.root_ref, f.tag)
