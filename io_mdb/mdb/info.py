"""`skinbridge info` for MDB: packets in file order, counts per packet type and the geometry totals."""
from __future__ import annotations

from collections import Counter

from . import mdb


def _packet_summary(p) -> dict:
    out = {"type": p.type, "offset": p.offset}
    if isinstance(p, (mdb.MeshPacket, mdb.WalkPacket, mdb.PointPacket)):
        out["name"] = p.name_text
    if isinstance(p, (mdb.MeshPacket, mdb.WalkPacket)):
        out["vertices"] = len(p.vertices)
        out["triangles"] = len(p.faces)
    if isinstance(p, mdb.MeshPacket):
        m = p.material
        out["material"] = {which: m.map_name(which) for which in mdb.Material.MAPS}
        out["material"]["flags"] = int(m.flags)
        if p.type == "SKIN":
            out["skeleton"] = mdb.text_of(p.skeleton)
    if isinstance(p, mdb.WalkPacket):
        flags = Counter(int(f) for f in p.faces["flags"])
        out["walk_flags"] = {f"0x{k:x}": n for k, n in sorted(flags.items())}
    if isinstance(p, mdb.ColsPacket):
        out["spheres"] = len(p.spheres)
    if isinstance(p, mdb.PointPacket):
        out["kind"] = int(p.kind)
    if isinstance(p, mdb.RawPacket):
        out["bytes"] = len(p.body)
    return out


def info(data: bytes, path: str = "") -> dict:
    m = mdb.read(data)
    geometry = m.of_type(*mdb.GEOMETRY_TYPES)
    return {
        "format": "MDB",
        "version": f"{m.major}.{m.minor}",
        "packet_counts": dict(Counter(p.type for p in m.packets)),
        "vertices": sum(len(p.vertices) for p in geometry),
        "triangles": sum(len(p.faces) for p in geometry),
        "skeletons": sorted({mdb.text_of(p.skeleton) for p in m.of_type("SKIN")}),
        "packets": [_packet_summary(p) for p in m.packets],
        "warnings": list(m.warnings),
    }
