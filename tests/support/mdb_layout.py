"""MDB files built field by field from the layout table of docs/nwn2.md §2, with struct
only (never with our writer), for the packets the test data lacks (HOOK, HELM, COLS, TRRN) and for SKIN
packets with chosen bone indices."""
from __future__ import annotations

import struct


def name32(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return raw.ljust(32, b"\0")[:32]


def material(diffuse=b"", normal=b"", tint=b"", glow=b"", kd=(1, 1, 1), ks=(0.5, 0.5, 0.5), level=1.0,
             power=10.0, flags=0) -> bytes:
    out = name32(diffuse) + name32(normal) + name32(tint) + name32(glow)
    out += struct.pack("<3f3f2fI", *kd, *ks, level, power, flags)
    assert len(out) == 164
    return out


def packet(ptype: bytes, body: bytes) -> bytes:
    return ptype + struct.pack("<I", len(body)) + body


def hook(name: str, point_type: int, point_size: int, pos, rows) -> bytes:
    return packet(b"HOOK", name32(name) + struct.pack("<HH3f9f", point_type, point_size, *pos,
                                                      *[x for r in rows for x in r]))


def hair_or_helm(ptype: bytes, name: str, value: int, pos, rows) -> bytes:
    return packet(ptype, name32(name) + struct.pack("<I3f9f", value, *pos, *[x for r in rows for x in r]))


def cols(spheres) -> bytes:
    return packet(b"COLS", struct.pack("<I", len(spheres)) + b"".join(struct.pack("<If", b, r) for b, r in spheres))


def skin(name: str, skeleton: str, vertices, faces, flags=0) -> bytes:
    """vertices: (position, normal, weights[4], bones[4], tangent, binormal, uvw, bone_count)"""
    body = name32(name) + name32(skeleton) + material(flags=flags) + struct.pack("<II", len(vertices), len(faces))
    for pos, nrm, w, b, t, bn, uvw, count in vertices:
        body += struct.pack("<3f3f4f4B3f3f3ff", *pos, *nrm, *w, *b, *t, *bn, *uvw, count)
    body += b"".join(struct.pack("<3H", *f) for f in faces)
    return packet(b"SKIN", body)


def rigd(name: str | bytes, vertices, faces, mat: bytes | None = None) -> bytes:
    """vertices: (position, normal, tangent, binormal, uvw)"""
    body = name32(name) + (mat or material()) + struct.pack("<II", len(vertices), len(faces))
    for v in vertices:
        body += struct.pack("<15f", *[x for part in v for x in part])
    body += b"".join(struct.pack("<3H", *f) for f in faces)
    return packet(b"RIGD", body)


def walk(name: str, positions, faces) -> bytes:
    """faces: (a, b, c, flags)"""
    body = name32(name) + struct.pack("<III", 0, len(positions), len(faces))
    body += b"".join(struct.pack("<3f", *p) for p in positions)
    body += b"".join(struct.pack("<3HI", *f) for f in faces)
    return packet(b"WALK", body)


def mdb_file(*packets: bytes) -> bytes:
    head = b"NWN2" + struct.pack("<HHI", 1, 12, len(packets))
    at = len(head) + 8 * len(packets)
    keys = b""
    for p in packets:
        keys += p[:4] + struct.pack("<I", at)
        at += len(p)
    return head + keys + b"".join(packets)


IDENTITY = ((1, 0, 0), (0, 1, 0), (0, 0, 1))
