"""`skinbridge info` for PMX: counts, version, encoding, bones and a summary of the IK table."""
from __future__ import annotations

import os

from ...core.fileio import read_bytes
from . import pmx


def _bone_name(m: pmx.PmxModel, i: int) -> str | None:
    return m.bones[i].name if 0 <= i < len(m.bones) else None


def _limit(link: pmx.PmxIKLink) -> dict | None:
    if not link.has_limit:
        return None
    return {"lower": [float(x) for x in link.lower], "upper": [float(x) for x in link.upper]}


def info(path_or_bytes: str | os.PathLike | bytes | bytearray, path: str | None = None) -> dict:
    """The summary of a file (its path, or its bytes with `path` naming it: the registry's `info(data, path)`)."""
    data = path_or_bytes if isinstance(path_or_bytes, (bytes, bytearray)) else read_bytes(path_or_bytes)
    m = pmx.read(data)
    return {
        "format": "PMX",
        "version": round(float(m.version), 4),
        "encoding": "UTF-8" if m.encoding == pmx.ENCODING_UTF8 else "UTF-16LE",
        "name": m.name,
        "name_e": m.name_e,
        "index_sizes": {k: m.index_sizes.of(k) for k in pmx.INDEX_KINDS},
        "additional_uvs": m.additional_uvs,
        "vertices": len(m.vertices),
        "deform_types": {name: int((m.vertices["deform"] == t).sum()) for t, name in enumerate(pmx.DEFORM_NAMES)},
        "triangles": len(m.indices) // 3,
        "textures": len(m.textures),
        "materials": len(m.materials),
        "bones": len(m.bones),
        "bone_names": [b.name for b in m.bones],
        "morphs": len(m.morphs),
        "display_frames": len(m.display_frames),
        "rigid_bodies": len(m.rigid_bodies),
        "joints": len(m.joints),
        "soft_bodies": len(m.soft_bodies),
        "animations": [],
        "warnings": list(m.warnings),
        "ik": [
            {
                "bone": b.name,
                "target": _bone_name(m, b.ik.target),
                "links": [_bone_name(m, link.bone) for link in b.ik.links],
                "limits": [_limit(link) for link in b.ik.links],
                "loop": b.ik.loop,
                "limit_angle": float(b.ik.limit_angle),
            }
            for b in m.bones if b.ik is not None
        ],
    }
