"""DMX meshes in Blender as the file shares them (inside Blender only): the import's triangles (one Blender vertex
per DMX vertex, as the shared bridge builds every format) joined back into the file's polygons, and its DMX
vertices of one position value welded into one Blender vertex, so that BST's Cube (8 positions, 6 quads) is 8
vertices and 6 quads; the export's polygons read back from the Blender mesh (docs/source.md §6.6).
"""
from __future__ import annotations

import bpy  # noqa: F401  (loaded before bmesh, which needs it)
import bmesh  # after bpy: the bmesh module needs bpy loaded first
import json

import numpy as np


FIELDS_PROP = "dmx_fields"  # on the mesh: JSON [[field name, DMX type name]] of the corner attributes kept
ATTRIBUTE_TYPES = {"FLOAT": "FLOAT", "VECTOR2": "FLOAT2", "VECTOR3": "FLOAT_VECTOR", "VECTOR4": "FLOAT_COLOR"}
WIDTH = {"FLOAT": 1, "VECTOR2": 2, "VECTOR3": 3, "VECTOR4": 4}


def _prop(kind: str) -> str:
    return "color" if kind == "VECTOR4" else "value" if kind == "FLOAT" else "vector"


def keep_fields(me, fields: list[tuple]) -> None:
    """The DMX vertex fields the mapping does not read (cloth, vertex paint and balance maps) as corner
    attributes of the mesh as built (one Blender vertex per DMX vertex, before `share`), named as the file
    names them, and their names on the mesh for the export."""
    if not fields or not len(me.loops):
        return
    corner_vert = np.empty(len(me.loops), np.int32)
    me.attributes[".corner_vert"].data.foreach_get("value", corner_vert)
    kept = []
    for name, t, values in fields:
        kind = t.name
        if name in me.attributes:
            continue
        attr = me.attributes.new(name, ATTRIBUTE_TYPES[kind], "CORNER")
        attr.data.foreach_set(_prop(kind), np.ascontiguousarray(values[corner_vert], np.float32).reshape(-1))
        kept.append([name, kind])
    if kept:
        me[FIELDS_PROP] = json.dumps(kept)


def read_fields(ob, loop_vertex: np.ndarray, count: int) -> list[tuple[str, str, np.ndarray]]:
    """The kept fields of `ob` (`keep_fields`) as a value per core vertex: `loop_vertex` is the core vertex of
    each corner of the mesh (`count` core vertices)."""
    try:
        kept = json.loads(ob.data.get(FIELDS_PROP, "[]"))
    except (TypeError, ValueError):
        return []
    out = []
    for item in kept if isinstance(kept, list) else []:
        if not (isinstance(item, list) and len(item) == 2 and item[1] in ATTRIBUTE_TYPES):
            continue
        name, kind = item
        attr = ob.data.attributes.get(name)
        if attr is None or attr.domain != "CORNER" or len(attr.data) != len(loop_vertex):
            continue
        raw = np.empty(len(attr.data) * WIDTH[kind], np.float32)
        attr.data.foreach_get(_prop(kind), raw)
        values = np.zeros((count, WIDTH[kind]), np.float32)
        values[loop_vertex] = raw.reshape(-1, WIDTH[kind])
        out.append((name, kind, values[:, 0] if kind == "FLOAT" else values))
    return out


def share(me, topology: dict) -> bool:
    """Join the fan triangles `convert` made of each polygon back into one face and weld the DMX vertices of one
    position value, keeping corner data (UVs, normals), weights and shape keys; faces in the file's polygon
    order, vertices in its position order. False (the mesh as built) when the triangles are not the fans
    `topology` names (the bridge skipped a degenerate one)."""
    pos_index = np.asarray(topology.get("position", ()), np.int64)
    sizes = np.asarray(topology.get("polygons", ()), np.int64)
    if len(me.vertices) != len(pos_index) or len(me.polygons) != int((sizes - 2).sum()):
        return False
    if (sizes == 3).all() and len(np.unique(pos_index)) == len(pos_index):
        return True  # triangles with a position each: as built
    bm = bmesh.new()
    try:
        bm.from_mesh(me)
        bm.faces.ensure_lookup_table()
        bm.verts.ensure_lookup_table()
        faces = bm.faces[:]
        rank: dict = {}
        start = 0
        for p, n in enumerate(sizes.tolist()):
            fan = faces[start:start + n - 2]
            start += n - 2
            joined = bmesh.utils.face_join(fan) if n > 3 else None
            for f in [joined] if joined is not None else fan:
                rank[f] = p
        verts = bm.verts[:]
        first = np.full(int(pos_index.max(initial=-1)) + 1, -1, np.int64)
        order = np.arange(len(pos_index))
        first[pos_index[::-1]] = order[::-1]  # the first DMX vertex of each position value
        target = first[pos_index]
        weld = {verts[i]: verts[t] for i, t in enumerate(target.tolist()) if t != i}
        vert_rank = {v: pos_index[i] for i, v in enumerate(verts)}
        if weld:
            bmesh.ops.weld_verts(bm, targetmap=weld)
        bm.faces.sort(key=lambda f: rank.get(f, len(sizes)))
        bm.verts.sort(key=lambda v: vert_rank[v])
        bm.to_mesh(me)
    finally:
        bm.free()
    me.update()
    return True


def polygons(ob, cmesh, depsgraph) -> dict | None:
    """The Blender polygons of `ob` as the core mesh `cmesh` (read by the shared bridge, triangulated) holds
    them: the corner count of each (`sizes`), their corners as `cmesh` vertices (`corners`) and their material
    slot (`slots`), in Blender's order; None for a mesh
    of triangles alone (its triangles are its polygons) or when the triangles do not match the polygons."""
    ob_eval = ob.evaluated_get(depsgraph)
    me = ob_eval.to_mesh()
    try:
        n = len(me.polygons)
        sizes = np.empty(n, np.int32)
        me.polygons.foreach_get("loop_total", sizes)
        if not n:
            return None
        corner_vert = np.empty(len(me.loops), np.int32)
        me.attributes[".corner_vert"].data.foreach_get("value", corner_vert)
        if (sizes == 3).all():
            return _triangles(ob, cmesh, corner_vert)
        bm = bmesh.new()
        try:  # the triangulation the bridge's reading makes (mesh.read_mesh), each triangle tagged by its polygon
            bm.from_mesh(me)
            layer = bm.faces.layers.int.new("skinbridge_polygon")
            for k, f in enumerate(bm.faces):
                f[layer] = k
            bmesh.ops.triangulate(bm, faces=bm.faces[:])
            tri_poly = np.fromiter((f[layer] for f in bm.faces), np.int64, len(bm.faces))
        finally:
            bm.free()
    finally:
        ob_eval.to_mesh_clear()
    tris = np.asarray(cmesh.triangles, np.int64)
    source = np.asarray(cmesh.extras.get("source_vertex", ()), np.int64)
    if len(tri_poly) != len(tris) or not len(source) or np.bincount(tri_poly, minlength=n).tolist() != \
            (sizes - 2).tolist():
        return None
    split = {(p, v): s for p, v, s in zip(np.repeat(tri_poly, 3).tolist(), source[tris.reshape(-1)].tolist(),
                                          tris.reshape(-1).tolist())}
    poly_of = np.repeat(np.arange(n), sizes).tolist()
    try:
        corners = np.array([split[(p, v)] for p, v in zip(poly_of, corner_vert.tolist())], np.int32)
    except KeyError:  # a polygon corner no triangle of it holds
        return None
    loop_vertex = corners
    if ob.matrix_world.determinant() < 0:  # the bridge turned the triangles: the polygons turn with them
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        corners = np.concatenate([corners[s:s + k][::-1] for s, k in zip(starts, sizes)])
    slots = np.zeros(n, np.int64)
    if cmesh.material_indices is not None and len(cmesh.material_indices) == len(tri_poly):
        slots[tri_poly] = np.asarray(cmesh.material_indices)
    return {"sizes": sizes, "corners": corners, "slots": slots, "loop_vertex": loop_vertex}


def _triangles(ob, cmesh, corner_vert: np.ndarray) -> dict | None:
    """`polygons` of a mesh of triangles: no polygons to write (None) unless its corners are wanted for the
    kept fields (`loop_vertex` alone)."""
    if not ob.data.get(FIELDS_PROP):
        return None
    tris = np.asarray(cmesh.triangles, np.int32)
    if tris.size != len(corner_vert):
        return None
    if ob.matrix_world.determinant() < 0:
        tris = tris[:, ::-1]
    return {"loop_vertex": tris.reshape(-1)}
