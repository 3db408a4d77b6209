"""Meshes: core Mesh ⇄ Blender mesh through the attribute API with numpy.

Import keeps one Blender vertex per file vertex (file order), so a file's vertex i is Blender vertex i.
Normals go to a FLOAT_VECTOR `custom_normal` corner attribute (exact, where `normals_split_custom_set`
loses up to 1e-2); every UV set becomes a UV map; colours become FLOAT_COLOR point attributes.
Export reads the evaluated mesh and splits vertices only where corner data (normal, UVs, colour) differ.
"""
from __future__ import annotations

import collections
import itertools
import operator

import bpy
import bmesh  # after bpy: the bmesh module needs bpy loaded first
import numpy as np

from ..core import model as cm
from ..core.skinning import merge_repeated_bones


def _set(attr, prop: str, array, dtype) -> None:
    attr.data.foreach_set(prop, np.ascontiguousarray(array, dtype=dtype).reshape(-1))


def build_mesh(cmesh: cm.Mesh, name: str, created: list, warnings: list[str],
               n_groups: int = 0) -> bpy.types.Mesh:
    """The Blender mesh of `cmesh`; with `n_groups`, also its weights for vertex groups 0 … n_groups − 1
    (the object's groups are made by `add_vertex_groups`)."""
    me = bpy.data.meshes.new(name)
    created.append(me)
    tris = np.asarray(cmesh.triangles, dtype=np.int32).reshape(-1, 3)
    mat_idx = cmesh.material_indices
    degenerate = (tris[:, 0] == tris[:, 1]) | (tris[:, 1] == tris[:, 2]) | (tris[:, 0] == tris[:, 2])
    if degenerate.any():
        warnings.append(f"{name}: {int(degenerate.sum())} degenerate triangles skipped")
        tris = tris[~degenerate]
        if mat_idx is not None:
            mat_idx = np.asarray(mat_idx)[~degenerate]
    me.vertices.add(cmesh.vertex_count)
    _set(me.attributes["position"], "vector", cmesh.positions, np.float32)
    if n_groups and cmesh.weights is not None and cmesh.joints is not None:
        _write_weights(me, cmesh.joints, cmesh.weights, n_groups)  # before the faces: see there
    if tris.size:  # a mesh of lines only has no corner attributes
        me.loops.add(tris.size)
        _set(me.attributes[".corner_vert"], "value", tris, np.int32)
        me.polygons.add(len(tris))
        me.polygons.foreach_set("loop_start", np.arange(0, tris.size, 3, dtype=np.int32))
    if cmesh.edges is not None and len(cmesh.edges):
        me.edges.add(len(cmesh.edges))
        _set(me.attributes[".edge_verts"], "value", cmesh.edges, np.int32)
    me.update(calc_edges=True)
    corners = tris.reshape(-1)
    for uv_name, uv in cmesh.uvs:
        layer = me.uv_layers.new(name=uv_name, do_init=False)
        layer.uv.foreach_set("vector", np.ascontiguousarray(np.asarray(uv, np.float32)[corners]).reshape(-1))
    for col_name, col in cmesh.colors:
        attr = me.color_attributes.new(col_name, "FLOAT_COLOR", "POINT")
        _set(attr, "color", col, np.float32)
    if mat_idx is not None and len(mat_idx):
        _set(me.attributes.new("material_index", "INT", "FACE") if "material_index" not in me.attributes
             else me.attributes["material_index"], "value", mat_idx, np.int32)
    if cmesh.normals is not None:
        if "custom_normal" in me.attributes:
            me.attributes.remove(me.attributes["custom_normal"])
        attr = me.attributes.new("custom_normal", "FLOAT_VECTOR", "CORNER")
        _set(attr, "vector", np.asarray(cmesh.normals, np.float32)[corners], np.float32)
    return me


def _write_weights(me, joints, weights, n_groups: int) -> None:
    """Deform weights of a mesh that has vertices and no faces yet, exactly, each vertex keeping its
    file's influence order; joints outside 0 … n_groups − 1 and weights ≤ 0 are left out.

    Blender has no bulk API for weights, and `VertexGroup.add` costs about 0.5 µs a call, one call per
    weight. A BMesh deform layer takes a weight per item assignment (`dvert[group] = weight`, about
    0.1 µs, driven from C through `map`), and a BMesh of vertices alone converts to and from the mesh in
    milliseconds: so the weights go in through a BMesh before the mesh gets its faces. Assignments go
    slot by slot, so each vertex's influences keep the file's order."""
    j = np.asarray(joints, dtype=np.int64)
    w = np.asarray(weights, dtype=np.float32)
    live = (w > 0) & (j >= 0) & (j < n_groups)
    w = merge_repeated_bones(j, np.where(live, w, np.float32(0)))
    live = w > 0
    if not live.any():
        return
    bm = bmesh.new()
    try:
        bm.from_mesh(me)
        layer = bm.verts.layers.deform.verify()
        dverts = list(map(operator.getitem, bm.verts, itertools.repeat(layer)))
        for k in range(w.shape[1]):
            rows = np.flatnonzero(live[:, k])
            targets = dverts if len(rows) == len(dverts) else list(map(dverts.__getitem__, rows.tolist()))
            collections.deque(map(operator.setitem, targets, j[rows, k].tolist(), w[rows, k].tolist()),
                              maxlen=0)
        del targets, dverts
        bm.to_mesh(me)
    finally:
        bm.free()


def add_vertex_groups(ob, bone_names: list[str]) -> None:
    """The object's vertex groups, one per bone in skeleton order (group i holds the weights that
    `build_mesh` wrote for bone i; export keeps this order)."""
    for n in bone_names:
        ob.vertex_groups.new(name=n)


# ---------------------------------------------------------------------------------------------
# export

def _foreach(collection_or_attr, prop: str, count: int, width: int, dtype) -> np.ndarray:
    out = np.empty(count * width, dtype=dtype)
    if count:
        collection_or_attr.foreach_get(prop, out)
    return out.reshape(count, width) if width > 1 else out


def read_mesh(ob, depsgraph, matrix: np.ndarray, bone_index: dict[str, int], max_influences: int,
              warnings: list[str], tangents: bool = True, isolated: bool = False) -> cm.Mesh | None:
    """The evaluated mesh of `ob` in the space `matrix` maps object space to, split per corner data.
    `isolated`: vertices no face or edge uses are output too, in their place (`_keep_isolated`), for an exporter
    that writes them from its kept records; otherwise they are left out."""
    ob_eval = ob.evaluated_get(depsgraph)
    me = ob_eval.to_mesh(preserve_all_data_layers=True, depsgraph=depsgraph)
    try:
        if me is None or not (len(me.polygons) or len(me.edges)):
            return None
        if len(me.loops) != 3 * len(me.polygons):  # every face has at least 3 corners: all triangles iff equal
            bm = bmesh.new()
            bm.from_mesh(me)
            bmesh.ops.triangulate(bm, faces=bm.faces[:])
            bm.to_mesh(me)
            bm.free()
        return _read_triangulated(ob, me, matrix, bone_index, max_influences, warnings, tangents, isolated)
    finally:
        ob_eval.to_mesh_clear()


def _read_triangulated(ob, me, matrix, bone_index, max_influences, warnings, want_tangents=True,
                       isolated=False) -> cm.Mesh:
    nv, nl, nf = len(me.vertices), len(me.loops), len(me.polygons)
    if bone_index:  # first, while little else is in memory
        # as many columns as the widest vertex needs (a format allowing 32 links pays for the links there are),
        # never fewer than 4 or max_influences
        vertex_joints, vertex_weights = read_weights(ob, me, bone_index, max_influences, warnings,
                                                     min_columns=min(max_influences, 4))
    pos = _foreach(me.attributes["position"].data, "vector", nv, 3, np.float32)
    corner_vert = _foreach(me.attributes[".corner_vert"].data, "value", nl, 1, np.int32) if nl else \
        np.zeros(0, np.int32)
    normals = _foreach(me.corner_normals, "vector", nl, 3, np.float32)
    uv_layers = list(me.uv_layers)
    uvs = [(layer.name, _foreach(layer.uv, "vector", nl, 2, np.float32)) for layer in uv_layers]
    colors = []
    for attr in me.color_attributes:
        prop = "color_srgb" if attr.data_type == "BYTE_COLOR" else "color"
        n = nv if attr.domain == "POINT" else nl
        c = _foreach(attr.data, prop, n, 4, np.float32)
        colors.append((attr.name, c[corner_vert] if attr.domain == "POINT" else c))
    tangents = None
    if want_tangents and uv_layers and nl:
        try:
            me.calc_tangents(uvmap=uv_layers[0].name)
            tangents = (_foreach(me.loops, "tangent", nl, 3, np.float32),  # joined once split, below
                        _foreach(me.loops, "bitangent_sign", nl, 1, np.float32))
        except RuntimeError as e:
            warnings.append(f"{ob.name}: tangents not computed ({e})")
    mat_attr = me.attributes.get("material_index")  # absent: every face uses slot 0
    mat_index = _foreach(mat_attr.data, "value", nf, 1, np.int32) if nf and mat_attr is not None else \
        np.zeros(nf, np.int32)

    # One output vertex per distinct (vertex, normal, UVs, colours); ordered by vertex, then first corner,
    # so an unsplit mesh keeps Blender's vertex order exactly.
    src_corner, corner_to_out = _split_corners([normals] + [uv for _, uv in uvs] + [c for _, c in colors],
                                               corner_vert, nv)

    m = np.asarray(matrix, dtype=np.float64)
    lin = m[:3, :3]
    normal_m = _normal_matrix(lin)
    out_pos = (pos[corner_vert[src_corner]].astype(np.float64) @ lin.T + m[:3, 3]).astype(np.float32)
    out_n = normals[src_corner].astype(np.float64) @ normal_m.T
    out_n /= np.maximum(np.linalg.norm(out_n, axis=1, keepdims=True), 1e-30)
    cmesh = cm.Mesh(name=ob.name, positions=out_pos, triangles=corner_to_out.reshape(-1, 3).astype(np.int32),
                    normals=out_n.astype(np.float32), material_indices=mat_index)
    if np.linalg.det(lin) < 0:
        cmesh.triangles = cmesh.triangles[:, ::-1].copy()
    cmesh.uvs = [(n, uv[src_corner]) for n, uv in uvs]
    cmesh.colors = [(n, c[src_corner]) for n, c in colors]
    if tangents is not None:
        txyz = tangents[0][src_corner].astype(np.float64) @ lin.T
        txyz /= np.maximum(np.linalg.norm(txyz, axis=1, keepdims=True), 1e-30)
        w = tangents[1][src_corner].astype(np.float64) * (-1.0 if np.linalg.det(lin) < 0 else 1.0)
        cmesh.tangents = np.concatenate([txyz, w[:, None]], axis=1).astype(np.float32)
    source = corner_vert[src_corner]
    edges, extra = _loose_edges(me, source)
    if len(extra):  # vertices only loose edges use
        source = _append_cornerless(me, cmesh, source, extra, pos, m, normal_m)
    if len(edges):
        cmesh.edges = edges
    if isolated:
        source = _keep_isolated(me, cmesh, source, pos, m, normal_m)
    if bone_index:
        cmesh.joints = vertex_joints[source]
        cmesh.weights = vertex_weights[source]
    cmesh.extras["source_vertex"] = source
    cmesh.extras["source_vertex_count"] = nv
    return cmesh


def _normal_matrix(lin: np.ndarray) -> np.ndarray:
    """What turns normals as `lin` turns positions: inv(lin)ᵀ, or for a singular `lin` (an object scaled to 0 on
    some axis, as Wallpaper Engine layers may be) its cofactor matrix, the same up to a factor where the
    inverse exists, so normals are still defined (zero where `lin` flattens everything to a line or a point)."""
    try:
        return np.linalg.inv(lin).T
    except np.linalg.LinAlgError:
        c0, c1, c2 = lin[:, 0], lin[:, 1], lin[:, 2]
        return np.column_stack([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)])


def _append_cornerless(me, cmesh: cm.Mesh, source: np.ndarray, verts: np.ndarray, pos: np.ndarray, m: np.ndarray,
                       normal_m: np.ndarray) -> np.ndarray:
    """Blender vertices `verts` that no face corner brought, appended as output vertices: their own normal, zero
    UVs, white, a default tangent. Returns the output vertices' Blender vertex indices."""
    k = len(verts)
    vn = _foreach(me.vertex_normals, "vector", len(me.vertices), 3, np.float32)[verts].astype(np.float64) @ normal_m.T
    vn /= np.maximum(np.linalg.norm(vn, axis=1, keepdims=True), 1e-30)
    placed = (pos[verts].astype(np.float64) @ m[:3, :3].T + m[:3, 3]).astype(np.float32)
    cmesh.positions = np.concatenate([cmesh.positions, placed])
    cmesh.normals = np.concatenate([cmesh.normals, vn.astype(np.float32)])
    cmesh.uvs = [(n, np.concatenate([uv, np.zeros((k, 2), np.float32)])) for n, uv in cmesh.uvs]
    cmesh.colors = [(n, np.concatenate([c, np.ones((k, 4), np.float32)])) for n, c in cmesh.colors]
    if cmesh.tangents is not None:
        cmesh.tangents = np.concatenate([cmesh.tangents, np.tile(np.float32([1, 0, 0, 1]), (k, 1))])
    return np.concatenate([source, verts]).astype(np.int32)


def _keep_isolated(me, cmesh: cm.Mesh, source: np.ndarray, pos: np.ndarray, m: np.ndarray,
                   normal_m: np.ndarray) -> np.ndarray:
    """Vertices no face or edge uses (a file's unreferenced vertices) are output vertices too, and every output
    vertex is put in Blender's vertex order (stable: a vertex split by its corners keeps its copies' order), so
    that the indices after such a vertex do not shift. Returns the output vertices' Blender vertex indices."""
    nv = len(me.vertices)
    used = np.zeros(nv, bool)
    used[source] = True
    isolated = np.flatnonzero(~used)
    if not len(isolated):
        return source
    source = _append_cornerless(me, cmesh, source, isolated, pos, m, normal_m)
    order = np.argsort(source, kind="stable")
    new_index = np.empty(len(order), np.int64)
    new_index[order] = np.arange(len(order))
    cmesh.positions, cmesh.normals = cmesh.positions[order], cmesh.normals[order]
    cmesh.uvs = [(n, uv[order]) for n, uv in cmesh.uvs]
    cmesh.colors = [(n, c[order]) for n, c in cmesh.colors]
    if cmesh.tangents is not None:
        cmesh.tangents = cmesh.tangents[order]
    cmesh.triangles = new_index[cmesh.triangles].astype(np.int32)
    if cmesh.edges is not None and len(cmesh.edges):
        cmesh.edges = new_index[cmesh.edges].astype(np.int32)
    return source[order]


def _split_corners(columns: list[np.ndarray], corner_vert: np.ndarray, nv: int) -> tuple[np.ndarray, np.ndarray]:
    """(first corner of each output vertex, output vertex of each corner) for one output vertex per distinct
    (vertex, bytes of every column at the corner), ordered by vertex, then first corner.

    When every vertex's corners carry the same bytes (meshes imported from game formats, and any mesh without
    seams or sharp edges) the answer follows from the vertex of each corner alone: each column is compared
    with its value at the vertex's first corner, chunk by chunk, and no key is built or sorted."""
    nl = len(corner_vert)
    if not nl:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    bits = [np.ascontiguousarray(c).reshape(nl, -1).view(np.uint8) for c in columns]
    first_of = np.full(nv, nl, np.int64)
    np.minimum.at(first_of, corner_vert, np.arange(nl))
    step = 1 << 18  # corners compared per chunk, to bound the temporary copies
    if all(np.array_equal(b[a:a + step], b[first_of[corner_vert[a:a + step]]])
           for a in range(0, nl, step) for b in bits):
        used = first_of < nl
        out_of_vertex = np.cumsum(used) - 1
        return first_of[used], out_of_vertex[corner_vert]
    keys = np.ascontiguousarray(np.concatenate(
        [corner_vert.astype(np.int64).reshape(nl, 1).view(np.uint8)] + bits, axis=1))
    void = keys.view(np.dtype((np.void, keys.shape[1]))).reshape(-1)
    _, first, inverse = np.unique(void, return_index=True, return_inverse=True)
    order = np.lexsort((first, corner_vert[first]))
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order], rank[inverse.reshape(-1)]


def _loose_edges(me, source: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges no face uses, as (E, 2) output vertex indices, and the Blender vertices they need that the faces'
    corners did not bring (appended after the split vertices, in this order)."""
    ne, nl = len(me.edges), len(me.loops)
    if not ne:
        return np.zeros((0, 2), np.int32), np.zeros(0, np.int64)
    edge_verts = _foreach(me.attributes[".edge_verts"].data, "value", ne, 2, np.int32)
    in_face = np.zeros(ne, bool)
    if nl:
        in_face[_foreach(me.attributes[".corner_edge"].data, "value", nl, 1, np.int32)] = True
    loose = edge_verts[~in_face]
    if not len(loose):
        return np.zeros((0, 2), np.int32), np.zeros(0, np.int64)
    first_out = np.full(len(me.vertices), -1, np.int64)
    uniq, first = np.unique(source, return_index=True)
    first_out[uniq] = first
    needed = np.unique(loose)
    extra = needed[first_out[needed] < 0]
    first_out[extra] = len(source) + np.arange(len(extra))
    return first_out[loose].astype(np.int32), extra


def deform_items(me) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(influence count per vertex, group index and weight of every influence, vertex by vertex in Blender's
    stored order).

    No bulk API reads vertex weights. A BMesh deform layer hands each vertex's influences over as two lists
    (`keys()`, `values()`), driven from C through `map` and flattened by `np.fromiter`: about three times
    cheaper per vertex than two `foreach_get` calls on `MeshVertex.groups`, which pays for the BMesh
    conversion from a few tens of thousands of vertices on."""
    nv = len(me.vertices)
    bm = bmesh.new()
    try:
        bm.from_mesh(me, face_normals=False, vertex_normals=False)  # normals are not read here
        layer = bm.verts.layers.deform.active
        if layer is None or not nv:
            return np.zeros(nv, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32)
        dverts = list(map(operator.getitem, bm.verts, itertools.repeat(layer)))
        counts = np.fromiter(map(len, dverts), np.int64, count=nv)
        total = int(counts.sum())
        kind = type(dverts[0])
        groups = np.fromiter(itertools.chain.from_iterable(map(kind.keys, dverts)), np.int32, count=total)
        weights = np.fromiter(itertools.chain.from_iterable(map(kind.values, dverts)), np.float32, count=total)
        del dverts
        return counts, groups, weights
    finally:
        bm.free()


def read_weights(ob, me, bone_index, max_influences, warnings, min_columns: int | None = None):
    """Per-vertex (joints, weights), influences in Blender's stored order; over `max_influences` keeps the
    largest and renormalises them, with a warning. The arrays have `max_influences` columns, or, given
    `min_columns`, only as many as the vertex with the most stored influences needs (at least `min_columns`).

    The influences come flattened from `deform_items`, and are cut into one (vertices, n) block per
    influence count n. Rows whose n influences are all live and within the limit are copied as they are;
    the others (zero weights, groups that are no bone, more than `max_influences`) go through the general
    path, flattened."""
    group_to_bone = np.full(max(len(ob.vertex_groups), 1), -1, dtype=np.int64)
    for g in ob.vertex_groups:
        group_to_bone[g.index] = bone_index.get(g.name, -1)
    nv = len(me.vertices)
    counts, flat_g, flat_w = deform_items(me) if nv else (np.zeros(0, np.int64), None, None)
    if min_columns is not None:
        max_influences = max(min_columns, min(max_influences, int(counts.max(initial=0))), 1)
    joints = np.zeros((nv, max_influences), dtype=np.int32)
    weights = np.zeros((nv, max_influences), dtype=np.float32)
    if not nv:
        return joints, weights
    starts = np.cumsum(counts) - counts
    n_groups = len(group_to_bone)
    rest_v, rest_g, rest_w = [], [], []  # rows that need the general path, flattened
    for n in np.unique(counts[counts > 0]).tolist():
        rows = np.flatnonzero(counts == n)
        if len(rows) == nv:  # one influence count for every vertex: the flat lists are the block
            block_w, block_g = flat_w.reshape(nv, n), flat_g.reshape(nv, n)
        else:
            at = starts[rows][:, None] + np.arange(n)
            block_w, block_g = flat_w[at], flat_g[at]
        bone = group_to_bone[np.clip(block_g, 0, n_groups - 1)]
        bone[(block_g < 0) | (block_g >= n_groups)] = -1
        # rows whose every influence is live, within the limit: copied as they are stored
        plain = ((block_w > 0) & (bone >= 0)).all(axis=1) if n <= max_influences else np.zeros(len(rows), bool)
        if len(rows) == nv and plain.all():
            joints[:, :n] = bone
            weights[:, :n] = block_w
        elif plain.any():
            joints[rows[plain], :n] = bone[plain]
            weights[rows[plain], :n] = block_w[plain]
        if not plain.all():
            rest_v.append(np.repeat(rows[~plain], n))
            rest_g.append(bone[~plain].reshape(-1))
            rest_w.append(block_w[~plain].reshape(-1))
    if not rest_v:
        return joints, weights
    vertex, bone, flat_w = np.concatenate(rest_v), np.concatenate(rest_g), np.concatenate(rest_w)
    by_vertex = np.argsort(vertex, kind="stable")  # blocks of different n interleave: back to vertex order
    vertex, bone, flat_w = vertex[by_vertex], bone[by_vertex], flat_w[by_vertex]
    keep = (flat_w > 0) & (bone >= 0)
    vertex, bone, w = vertex[keep], bone[keep], flat_w[keep]
    n_live = np.bincount(vertex, minlength=nv)
    starts = np.cumsum(n_live) - n_live
    slot = np.arange(len(vertex)) - starts[vertex]  # position among the vertex's live influences
    over_v = np.flatnonzero(n_live > max_influences)
    if len(over_v):
        # vertices over the limit: the largest weights (ties: stored order), renormalised
        over = n_live[vertex] > max_influences
        ov, ob_, ow, oslot = vertex[over], bone[over], w[over], slot[over]
        order = np.lexsort((oslot, -ow.astype(np.float64), ov))
        ov, ob_, ow = ov[order], ob_[order], ow[order]
        rank = np.arange(len(ov)) - (np.cumsum(n_live[over_v]) - n_live[over_v])[np.searchsorted(over_v, ov)]
        top = rank < max_influences
        ov, ob_, ow, rank = ov[top], ob_[top], ow[top], rank[top]
        sums = np.zeros(nv, np.float64)
        np.add.at(sums, ov, ow.astype(np.float64))
        joints[ov, rank] = ob_
        weights[ov, rank] = (ow / sums[ov]).astype(np.float32)
        fits = ~over
        vertex, bone, w, slot = vertex[fits], bone[fits], w[fits], slot[fits]
        warnings.append(f"{ob.name}: {len(over_v)} vertices had more than {max_influences} influences; "
                        "the largest were kept and renormalised")
    joints[vertex, slot] = bone
    weights[vertex, slot] = w
    return joints, weights


def evaluated_world_positions(ob) -> np.ndarray:
    """World-space vertex positions of the object as Blender evaluates it now (modifiers, pose, shape keys)."""
    dg = bpy.context.evaluated_depsgraph_get()
    ev = ob.evaluated_get(dg)
    me = ev.to_mesh()
    co = np.empty(len(me.vertices) * 3, np.float32)
    me.attributes["position"].data.foreach_get("vector", co)
    ev.to_mesh_clear()
    m = np.array(ob.matrix_world)
    return co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]
