"""What an edit changed in a `.mdl`, read with our codec only: the file before and after one-vertex moves is
"only the edit" when the moved vertices' positions changed and nothing else did but what is derived from them
(the normals and tangents of vertices sharing a primitive with a moved one, the bounding box where a moved vertex
now bounds it, the collision data of bones a moved vertex is weighted to). Used by the Urho3D edit tests and by
the whole-collection measure (docs/urho.md §7, "Edited")."""
from __future__ import annotations

import numpy as np

from skinbridge.io_urhox.model import umd2

ONLY_THE_EDIT, LOST, OTHER = "only the edit", "lost", "something else changed"
DERIVED = {"NORMAL0", "TANGENT0", "BINORMAL0"}  # per vertex, from the faces around it


def first_primitive_vertex(model: umd2.Model) -> int:
    """The vertex of vertex buffer 0 that the first index of geometry 0's LOD 0 names (a vertex the mesh uses)."""
    lod = model.geometries[0].lods[0]
    return int(model.index_buffers[lod.index_buffer].indices[lod.index_start])


def touching(model: umd2.Model, rows) -> np.ndarray:
    """`rows` of vertex buffer 0 and every vertex sharing a triangle or line (any geometry, any LOD) with one."""
    rows = np.asarray(sorted(set(int(r) for r in rows)), np.int64)
    n = len(model.vertex_buffers[0].vertices)
    near = np.zeros(n, bool)
    near[rows] = True
    for g in model.geometries:
        for lod in g.lods:
            if lod.vertex_buffer:
                continue
            idx = model.index_buffers[lod.index_buffer].indices[lod.index_start:lod.index_start + lod.index_count]
            width = {0: 3, 1: 2}.get(lod.primitive_type, 1)
            prims = idx[: len(idx) - len(idx) % width].reshape(-1, width).astype(np.int64)
            hit = np.isin(prims, rows).any(axis=1)
            near[prims[hit].reshape(-1)] = True
    return np.flatnonzero(near)


def _rows_differing(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a).reshape(len(a), -1).view(np.uint8)
    b = np.ascontiguousarray(b).reshape(len(b), -1).view(np.uint8)
    return np.flatnonzero((a != b).any(axis=1))


def mirrored_z(before: umd2.Model, after: umd2.Model, near) -> bool:
    """The positions other than `near` written with z negated (a model written in the other profile's axes)."""
    a = before.vertex_buffers[0].vertices["POSITION0"].astype(np.float64)
    b = after.vertex_buffers[0].vertices["POSITION0"].astype(np.float64)
    keep = np.setdiff1d(np.arange(min(len(a), len(b))), near)
    a, b = a[keep], b[keep]
    return bool(len(a)) and np.abs(a[:, 2]).max() > 0 and np.allclose(b * [1, 1, -1], a, atol=1e-6, equal_nan=True)


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return np.asarray(a).tobytes() == np.asarray(b).tobytes()


def _vertex_buffers(before: umd2.Model, after: umd2.Model, moved: np.ndarray, near: np.ndarray) -> str | None:
    if len(before.vertex_buffers) != len(after.vertex_buffers):
        return f"vertex buffer count {len(before.vertex_buffers)} → {len(after.vertex_buffers)}"
    for k, (x, y) in enumerate(zip(before.vertex_buffers, after.vertex_buffers)):
        if [e.descriptor for e in x.elements] != [e.descriptor for e in y.elements]:
            return f"vertex buffer {k} elements {[e.field_name for e in x.elements]} → " \
                   f"{[e.field_name for e in y.elements]}"
        if len(x.vertices) != len(y.vertices):
            return f"vertex buffer {k} vertex count {len(x.vertices)} → {len(y.vertices)}"
        if (x.morph_range_start, x.morph_range_count) != (y.morph_range_start, y.morph_range_count):
            return f"vertex buffer {k} morph range"
        for name in x.vertices.dtype.names:
            rows = _rows_differing(x.vertices[name], y.vertices[name])
            allowed = (moved if name == "POSITION0" else near if name in DERIVED else np.zeros(0, np.int64)) \
                if k == 0 else np.zeros(0, np.int64)
            extra = np.setdiff1d(rows, allowed)
            if len(extra):
                return f"vertex buffer {k} {name} of {len(extra)} vertices (first: vertex {int(extra[0])})"
    return None


def _bounds_follow(before: umd2.Model, after: umd2.Model) -> bool:
    """Each bound is the file's or the extreme of the written positions on its axis."""
    pos = after.vertex_buffers[0].vertices["POSITION0"].astype(np.float32)
    lows, highs = pos.min(axis=0), pos.max(axis=0)
    return bool(np.all((after.bbox_min == before.bbox_min) | (after.bbox_min == lows))
                and np.all((after.bbox_max == before.bbox_max) | (after.bbox_max == highs))
                and np.all(after.bbox_min <= lows) and np.all(after.bbox_max >= highs))


def _bones(before: umd2.Model, after: umd2.Model, moved: np.ndarray) -> str | None:
    if len(before.bones) != len(after.bones):
        return f"bone count {len(before.bones)} → {len(after.bones)}"
    vb = before.vertex_buffers[0].vertices
    weighted = set()  # the bones the moved vertices are weighted to, through the mappings of the geometries using them
    if "BLENDINDICES0" in vb.dtype.names and len(moved):
        local = {int(b) for b in vb["BLENDINDICES0"][moved][vb["BLENDWEIGHTS0"][moved] > 0]}
        for g in before.geometries:
            uses = any(np.isin(moved, before.index_buffers[lod.index_buffer].indices[
                lod.index_start:lod.index_start + lod.index_count]).any() for lod in g.lods if not lod.vertex_buffer)
            if uses:
                weighted |= {int(g.bone_mapping[k]) if len(g.bone_mapping) else k for k in local
                             if not len(g.bone_mapping) or k < len(g.bone_mapping)}
    for i, (x, y) in enumerate(zip(before.bones, after.bones)):
        for field in ("name", "parent", "position", "rotation", "scale", "offset"):
            if not _same(getattr(x, field), getattr(y, field)):
                return f"bone {i} ({x.name}) {field}"
        if i not in weighted and not all(_same(getattr(x, f), getattr(y, f))
                                         for f in ("collision_mask", "radius", "bbox")):
            return f"bone {i} ({x.name}) collision data"
    return None


def classify(before: umd2.Model, after: umd2.Model, moved) -> tuple[str, str]:
    """(ONLY_THE_EDIT, "") | (LOST, what) | (OTHER, the first field that differs) for vertices `moved` (rows of
    vertex buffer 0) moved between `before` and `after`."""
    moved = np.asarray(sorted(set(int(r) for r in moved)), np.int64)
    near = touching(before, moved)
    found = _vertex_buffers(before, after, moved, near)
    if found:
        return OTHER, found + (" (mirrored in z)" if mirrored_z(before, after, near) else "")
    if before.magic != after.magic or before.version != after.version:
        return OTHER, f"magic {before.magic} → {after.magic}"
    if len(before.index_buffers) != len(after.index_buffers) or any(
            x.index_size != y.index_size or not _same(x.indices, y.indices)
            for x, y in zip(before.index_buffers, after.index_buffers)):
        return OTHER, "index buffers"
    if len(before.geometries) != len(after.geometries):
        return OTHER, f"geometry count {len(before.geometries)} → {len(after.geometries)}"
    for gi, (x, y) in enumerate(zip(before.geometries, after.geometries)):
        if not _same(x.bone_mapping.astype(np.uint32), y.bone_mapping.astype(np.uint32)):
            return OTHER, f"geometry {gi} bone mapping"
        if [(float(a.distance), a.primitive_type, a.vertex_buffer, a.index_buffer, a.index_start, a.index_count)
                for a in x.lods] != [(float(b.distance), b.primitive_type, b.vertex_buffer, b.index_buffer,
                                      b.index_start, b.index_count) for b in y.lods]:
            return OTHER, f"geometry {gi} LOD levels ({len(x.lods)} → {len(y.lods)})"
    if len(before.morphs) != len(after.morphs) or any(
            a.name != b.name or len(a.buffers) != len(b.buffers)
            or any(not _same(p.vertices, q.vertices) for p, q in zip(a.buffers, b.buffers))
            for a, b in zip(before.morphs, after.morphs)):
        return OTHER, "morphs"
    found = _bones(before, after, moved)
    if found:
        return OTHER, found
    if not _bounds_follow(before, after):
        return OTHER, "bounding box"
    if not _same(np.asarray(before.centers, np.float32), np.asarray(after.centers, np.float32)):
        return OTHER, "geometry centers"
    pos_a = before.vertex_buffers[0].vertices["POSITION0"]
    pos_b = after.vertex_buffers[0].vertices["POSITION0"]
    lost = np.setdiff1d(moved, _rows_differing(pos_a, pos_b))
    if len(lost):
        return LOST, f"vertex {int(lost[0])} did not move"
    return ONLY_THE_EDIT, ""
