"""`skinbridge info` for UrhoX / Urho3D files: JSON-ready summaries of a model's and an animation's records
(classic UANI, UrhoX UANI or rbfx UAN2)."""
from __future__ import annotations

import os

import numpy as np

from . import uani, umd2



def model_summary(data: bytes) -> dict:
    """Summary of a model's records. Raises FormatError like ``umd2.read``."""
    m = umd2.read(data)
    triangles = 0
    lod_count = 0
    for g in m.geometries:
        lod_count = max(lod_count, len(g.lods))
        if g.lods and g.lods[0].primitive_type == 0:
            triangles += g.lods[0].index_count // 3
    return {
        "format": "UMDL" if m.magic == "UMDL" else m.magic,
        "version": m.version if m.magic == "UMD3" else (1 if m.magic == "UMDL" else 2),
        "vertices": int(sum(len(vb.vertices) for vb in m.vertex_buffers)),
        "triangles": int(triangles),
        "bones": len(m.bones),
        "animations": [],
        "warnings": list(m.warnings),
        "vertex_buffers": [{"vertices": len(vb.vertices),
                            "elements": [f"{e.semantic_name}{e.index}:{umd2.ELEMENT_TYPES[e.type][0]}"
                                         for e in vb.elements],
                            "stride": vb.vertices.dtype.itemsize} for vb in m.vertex_buffers],
        "index_buffers": [{"indices": len(ib.indices), "index_size": ib.index_size} for ib in m.index_buffers],
        "geometries": [{"bone_mapping": len(g.bone_mapping), "lods": [
            {"distance": lod.distance, "primitive": umd2.PRIMITIVE_TYPES[lod.primitive_type]
             if lod.primitive_type < len(umd2.PRIMITIVE_TYPES) else lod.primitive_type,
             "start": lod.index_start, "count": lod.index_count} for lod in g.lods]} for g in m.geometries],
        "morphs": [mo.name for mo in m.morphs],
        "bone_names": [b.name for b in m.bones],
        "bounding_box": [np.asarray(m.bbox_min).tolist(), np.asarray(m.bbox_max).tolist()],
        "geometry_centers": len(m.centers),
    }



def distinct_key_times(anim: uani.Animation) -> int:
    """The number of distinct key times over all bone tracks (NaN counts once)."""
    times = [np.asarray(t.times, np.float32) for t in anim.tracks if len(t.times)]
    if not times:
        return 0
    return int(len(np.unique(np.concatenate(times))))


def animation_summary(data: bytes, name: str | None = None) -> dict:
    """Summary of ``data``; ``name`` replaces the animation name (UrhoX files have none: pass the file
    stem). Raises FormatError like ``uani.read``."""
    anim = uani.read(data)
    length = float(anim.length)
    frames = distinct_key_times(anim)
    summary = {
        "format": "UANI",
        "variant": anim.variant,
        "version": anim.version,
        "length": length,
        "tracks": len(anim.tracks),
        "frames": frames,
        "animations": [{"name": anim.name if name is None else name, "length": length, "frames": frames,
                        "tracks": len(anim.tracks)}],
        "warnings": list(anim.warnings),
    }
    if anim.variant == uani.VARIANT_RBFX:
        summary["variant_tracks"] = len(anim.variant_tracks)
    return summary


def model_info(data: bytes, path: str) -> dict:
    """The registry's `info` of a model file."""
    return model_summary(data)


def animation_info(data: bytes, path: str) -> dict:
    """The registry's `info` of an animation file; UrhoX files carry no name: the file's stem names it."""
    result = animation_summary(data)
    stem = os.path.splitext(os.path.basename(path))[0]
    for anim in result["animations"]:
        anim["name"] = anim["name"] or stem
    return result
