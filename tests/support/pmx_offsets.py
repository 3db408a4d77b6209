"""Byte offsets in Luka's PMX file (mmdtools_megurine_luka.pmx: UTF-16 text, 2-byte bone indices, 4 additional
UVs) worked out by hand from the layout in docs/mmd.md §2, never taken from the reader: where to corrupt a copy
so that the validator and `check` must name that field."""
from __future__ import annotations

import struct

LUKA_BONES = 188  # testdata README: "2-byte bone indices (188 bones)"
LUKA_ADD_UVS = 4  # testdata README: "4 additional UVs"
BONE_SIZE = 2


def textbuf(s: str) -> bytes:
    raw = s.encode("utf-16-le")
    return struct.pack("<i", len(raw)) + raw


def skip_text(data: bytes, at: int) -> int:
    return at + 4 + struct.unpack_from("<i", data, at)[0]


def bone_field_offsets(data: bytes, name: str) -> dict[str, int]:
    """Walk one bone record of Luka (UTF-16, 2-byte bone indices) found by its name, per docs/mmd.md §2.5."""
    start = data.find(textbuf(name))
    assert start > 0
    at = skip_text(data, skip_text(data, start))
    out = {"record": start, "position": at, "parent": at + 12}
    at += 12 + BONE_SIZE + 4
    flags = struct.unpack_from("<H", data, at)[0]
    at += 2
    at += BONE_SIZE if flags & 0x0001 else 12
    if flags & 0x0300:
        at += BONE_SIZE + 4
    if flags & 0x0400:
        at += 12
    if flags & 0x0800:
        at += 24
    if flags & 0x2000:
        at += 4
    if flags & 0x0020:
        out["ik.target"] = at
        at += BONE_SIZE + 4 + 4 + 4  # target, loop, unit angle, link count
        out["ik.links[0].bone"] = at
        assert data[at + BONE_SIZE] == 1  # the first link has a limit
        out["ik.links[0].lower"] = at + BONE_SIZE + 1
        out["ik.links[0].upper"] = at + BONE_SIZE + 1 + 12
    return out


def luka_vertex_offsets(data: bytes, up_to: int) -> tuple[int, int]:
    """(offset of the vertex count, offset of vertex `up_to`) by walking the header and vertex records."""
    assert data[8] == 8 and data[10] == LUKA_ADD_UVS and data[14] == BONE_SIZE
    at = 17
    for _ in range(4):  # model name, English name, comment, English comment
        at = skip_text(data, at)
    count_at = at
    at += 4
    head = 32 + 16 * LUKA_ADD_UVS
    deform_size = {0: BONE_SIZE, 1: 2 * BONE_SIZE + 4, 2: 4 * BONE_SIZE + 16, 3: 2 * BONE_SIZE + 40,
                   4: 4 * BONE_SIZE + 16}
    for _ in range(up_to):
        at += head + 1 + deform_size[data[at + head]] + 4
    return count_at, at
