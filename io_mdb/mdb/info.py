"""`skinbridge info` for MDB: packets in file order, counts per packet type and the geometry totals."""
from __future__ import annotations

from collections import Counter

from ..gr2 import bind
from . import convert, mdb


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


def _skeleton_files(m: mdb.MdbFile, path: str) -> dict | None:
    """The skeleton files beside the MDB that hold the name its SKIN packets give, the one an import binds
    (docs/nwn2.md §5.4) and each one's bone differences from the part's fit; None when none lies there."""
    names = convert.skin_skeleton_names(m)
    if not names or not path:
        return None
    warnings: list[str] = []
    pairing = bind.pair(names[0], bind.search_folders(path, None), convert.skins_of(m), warnings)
    return None if pairing is None else pairing.summary() | {"warnings": warnings}


def info(data: bytes, path: str = "") -> dict:
    m = mdb.read(data)
    geometry = m.of_type(*mdb.GEOMETRY_TYPES)
    found = _skeleton_files(m, path)
    return {
        "format": "MDB",
        "version": f"{m.major}.{m.minor}",
        "packet_counts": dict(Counter(p.type for p in m.packets)),
        "vertices": sum(len(p.vertices) for p in geometry),
        "triangles": sum(len(p.faces) for p in geometry),
        "skeletons": sorted({mdb.text_of(p.skeleton) for p in m.of_type("SKIN")}),
        "packets": [_packet_summary(p) for p in m.packets],
        "warnings": list(m.warnings),
    } | ({"skeleton_files": found} if found is not None else {})
