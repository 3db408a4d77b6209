"""`skinbridge info` for SMD / VTA: kind, flavour, nodes, frames, triangles, links and shapes."""
from __future__ import annotations

import os

import numpy as np

from . import smd


def info(data: bytes, path: str | None = None) -> dict:
    f = smd.read(data)
    stem = os.path.splitext(os.path.basename(path))[0] if path else "animation"
    t = f.triangles
    summary = {
        "format": "VTA" if f.kind == "flex" else "SMD",
        "kind": f.kind,
        "version": f.version,
        "flavour": "GoldSrc" if f.goldsrc else "Source",
        "newline": "CRLF" if f.newline == "\r\n" else "LF",
        "nodes": len(f.nodes),
        "node_names": [n.name for n in f.nodes],
        "frames": len(f.skeleton),
        "triangles": len(t) if t is not None else 0,
        "vertices": len(t.parents) if t is not None else 0,
        "materials": sorted(set(t.materials)) if t is not None else [],
        "max_links": int(max(t.link_counts.max(), 0)) if t is not None and len(t.link_counts) else 0,
        "animations": [],
        "warnings": list(f.warnings),
    }
    if f.kind == "motion":
        times = [fr.time for fr in f.skeleton]
        summary["animations"] = [{"name": stem, "frames": len(f.skeleton),
                                  "first": min(times) if times else 0, "last": max(times) if times else 0,
                                  "bones": len({int(b) for fr in f.skeleton for b in fr.bones})}]
    if f.vertex_animation is not None:
        names = {fr.time: fr.comment for fr in f.skeleton}
        summary["shapes"] = [names.get(fr.time) or f"shape {fr.time}" for fr in f.vertex_animation if fr.time != 0]
        summary["flex_rows"] = int(sum(len(fr.vertices) for fr in f.vertex_animation))
        summary["flex_vertices"] = int(np.unique(np.concatenate(
            [fr.vertices for fr in f.vertex_animation] or [np.zeros(0, np.int64)])).size)
    return summary
