"""DMX meshes in Blender as the file shares them (inside Blender only): the import's triangles (one Blender vertex
per DMX vertex, as the shared bridge builds every format) joined back into the file's polygons, and its DMX
vertices of one position value welded into one Blender vertex, so that BST's Cube (8 positions, 6 quads) is 8
vertices and 6 quads; the export's polygons read back from the Blender mesh (docs/source.md §6.6).
"""
from __future__ import annotations

import bpy  # noqa: F401  (loaded before bmesh, which needs it)
import bmesh  # after bpy: the bmesh module needs bpy loaded first
import numpy as np


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
        if not n or (sizes == 3).all():
            return None
        corner_vert = np.empty(len(me.loops), np.int32)
        me.attributes[".corner_vert"].data.foreach_get("value", corner_vert)
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
    if ob.matrix_world.determinant() < 0:  # the bridge turned the triangles: the polygons turn with them
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        corners = np.concatenate([corners[s:s + k][::-1] for s, k in zip(starts, sizes)])
    slots = np.zeros(n, np.int64)
    if cmesh.material_indices is not None and len(cmesh.material_indices) == len(tri_poly):
        slots[tri_poly] = np.asarray(cmesh.material_indices)
    return {"sizes": sizes, "corners": corners, "slots": slots}
