"""`skinbridge info` of Granny 2 files (docs/nwn2.md §5): sections, the root's fields, skeletons, animations
(track groups, their bones and curve formats)."""
from __future__ import annotations

from collections import Counter

import numpy as np

from . import animation, gr2, skeleton


def _section_summary(s: gr2.Section) -> dict:
    return {"index": s.index, "compression": gr2.COMPRESSIONS.get(s.compression, str(s.compression)),
            "bytes": s.data_size, "decompressed": s.decompressed_size, "decompressed_read": len(s.data),
            "stops": list(s.stops), "relocations": len(s.relocations), "marshallings": len(s.marshallings)}


def _shown(value) -> object:
    """A root field in a few words: counts of lists, the text of strings, the fields of a reference."""
    if isinstance(value, gr2.Struct):
        return {"fields": list(value)}
    if isinstance(value, (list, np.ndarray)):
        return {"count": len(value)}
    return value


def _root_fields(f: gr2.Gr2File) -> list[dict]:
    root = f.root
    return [{"name": m.name, "kind": gr2.KIND_NAMES.get(m.kind, str(m.kind)), "value": _shown(root.get(m.name))}
            for m in f.root_type]


def _animations(f: gr2.Gr2File) -> list[dict]:
    """Each animation: its duration, frame rate and track groups (tracks per kind, curve formats in use)."""
    out = []
    for a in animation.animations(f):
        groups = []
        for g in a.groups:
            formats = Counter(getattr(t, key).format for t in g.tracks for key, _ in animation.CURVES)
            groups.append({"name": g.name, "transform_tracks": len(g.tracks), "vector_tracks": g.vector_tracks,
                           "text_tracks": g.text_tracks, "bones": [t.name for t in g.tracks],
                           "curve_formats": dict(sorted(formats.items()))})
        out.append({"name": a.name, "duration": a.duration, "time_step": a.time_step,
                    "oversampling": a.oversampling, "fps": a.fps, "frames": len(a.times()),
                    "track_groups": groups})
    return out


def info(data: bytes, path: str = "") -> dict:
    f = gr2.read(data)
    root = f.root
    skeletons = skeleton.skeletons(f)
    exporter = root.get("ExporterInfo")
    return {
        "format": "GR2",
        "version": f.version,
        "crc32": {"stored": f"{f.crc:#010x}", "computed": f"{f.computed_crc:#010x}"},
        "exporter": exporter.get("ExporterName") if isinstance(exporter, dict) else None,
        "from_file": root.get("FromFileName"),
        "sections": [_section_summary(s) for s in f.sections],
        "root": _root_fields(f),
        "skeletons": [{"name": s.name, "units_per_metre": s.units_per_metre, "bones": len(s.bones),
                       "bone_names": s.names, "parents": [b.parent for b in s.bones]} for s in skeletons],
        "animations": _animations(f),
        "warnings": list(f.warnings),
    }
