"""`skinbridge info` for UrhoX / Urho3D models (UMD2, UMDL, UMD3): a JSON-ready summary of the records."""
from __future__ import annotations

import numpy as np

from . import umd2


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


def info(data: bytes, path: str) -> dict:
    """The registry's `info` of a model file."""
    return model_summary(data)
