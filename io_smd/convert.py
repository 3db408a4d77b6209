"""SMD / VTA records ⇄ core.model.Scene.

Axes: SMD is Z up like Blender, and studiomdl units map to Blender units one to one: no axis change, no scale.
Rotations: a skeleton row's Euler angles (radians) give R = Rz·Ry·Rx (Blender's 'XYZ' order).

Corners: a triangle list gives three corners per triangle. Corners merge into one vertex where the position
and the link list are equal, as Blender Source Tools does; a corner without links (GoldSrc rows, or link
count 0) is weighted 1.0 to its parent bone. Normals and UVs stay per corner (`Mesh.extras["smd"]`), with
the parent-bone column and the link count of every corner so that an export writes the same columns.
Links are kept as written: no 0.05 cut, no renormalisation (`check` reports both).
"""
from __future__ import annotations

import os

import numpy as np

from ..core import model as cm
from ..core.errors import FormatError
from ..core.transforms import matrix3_to_quat, quat_to_matrix3
from . import smd

FPS = 30.0  # studiomdl's default frame rate; the Blender side passes the scene's so that frame = time


# -- rotations -------------------------------------------------------------------------------------------

def euler_to_matrix3(e: np.ndarray) -> np.ndarray:
    """(…, 3, 3) rotation matrices Rz·Ry·Rx of Euler angles (…, 3) in radians."""
    e = np.asarray(e, np.float64)
    cx, cy, cz = np.cos(e[..., 0]), np.cos(e[..., 1]), np.cos(e[..., 2])
    sx, sy, sz = np.sin(e[..., 0]), np.sin(e[..., 1]), np.sin(e[..., 2])
    m = np.empty(e.shape[:-1] + (3, 3))
    m[..., 0, 0] = cz * cy
    m[..., 0, 1] = cz * sy * sx - sz * cx
    m[..., 0, 2] = cz * sy * cx + sz * sx
    m[..., 1, 0] = sz * cy
    m[..., 1, 1] = sz * sy * sx + cz * cx
    m[..., 1, 2] = sz * sy * cx - cz * sx
    m[..., 2, 0] = -sy
    m[..., 2, 1] = cy * sx
    m[..., 2, 2] = cy * cx
    return m


def matrix3_to_euler(m: np.ndarray) -> np.ndarray:
    """Euler angles (x, y, z) with R = Rz·Ry·Rx; at gimbal lock z = 0."""
    m = np.asarray(m, np.float64)
    cy = np.hypot(m[..., 0, 0], m[..., 1, 0])
    lock = cy < 1e-9
    x = np.where(lock, np.arctan2(-m[..., 1, 2], m[..., 1, 1]), np.arctan2(m[..., 2, 1], m[..., 2, 2]))
    y = np.arctan2(-m[..., 2, 0], cy)
    z = np.where(lock, 0.0, np.arctan2(m[..., 1, 0], m[..., 0, 0]))
    return np.stack([x, y, z], axis=-1)


def local_matrices(positions: np.ndarray, rotations: np.ndarray) -> np.ndarray:
    out = np.zeros(positions.shape[:-1] + (4, 4))
    out[..., :3, :3] = euler_to_matrix3(rotations)
    out[..., :3, 3] = positions
    out[..., 3, 3] = 1
    return out


def _short_way(q: np.ndarray) -> np.ndarray:
    """Quaternion keys (F, 4) flipped so that each lies in the hemisphere of the one before."""
    q = q.copy()
    for i in range(1, len(q)):
        if np.dot(q[i], q[i - 1]) < 0:
            q[i] = -q[i]
    return q


# -- skeleton --------------------------------------------------------------------------------------------

def node_index(f: smd.SmdFile) -> dict[int, int]:
    return {n.id: i for i, n in enumerate(f.nodes)}


def frame_table(f: smd.SmdFile) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times (F,), positions (F, N, 3), rotations (F, N, 3)) in node order: a bone missing from a frame keeps
    its value of the frame before, and a bone missing from the first frames takes its first written value."""
    index = node_index(f)
    F, N = len(f.skeleton), len(f.nodes)
    vals = np.zeros((F, N, 6))
    seen = np.zeros((F, N), bool)
    for k, fr in enumerate(f.skeleton):
        cols = _map_ids(index, fr.bones)
        ok = cols >= 0
        vals[k, cols[ok], :3] = fr.positions[ok]
        vals[k, cols[ok], 3:] = fr.rotations[ok]
        seen[k, cols[ok]] = True
    src = np.where(seen, np.arange(F)[:, None], -1)
    src = np.maximum.accumulate(src, axis=0)
    first = np.argmax(seen, axis=0)
    src = np.where(src < 0, first[None, :], src)
    filled = vals[src, np.arange(N)[None, :]]
    times = np.array([fr.time for fr in f.skeleton], np.float64)
    return times, filled[..., :3], filled[..., 3:]


def _map_ids(index: dict[int, int], ids: np.ndarray) -> np.ndarray:
    keys = np.array(sorted(index), np.int64)
    vals = np.array([index[k] for k in keys], np.int64)
    pos = np.clip(np.searchsorted(keys, ids), 0, max(len(keys) - 1, 0))
    return np.where(len(keys) and keys[pos] == ids, vals[pos], -1) if len(keys) else np.full(len(ids), -1)


def skeleton_of(f: smd.SmdFile, warnings: list[str]) -> cm.Skeleton:
    """Bones in node order, rest = the first skeleton frame, bind = its world matrices."""
    index = node_index(f)
    N = len(f.nodes)
    pos = np.zeros((N, 3))
    rot = np.zeros((N, 3))
    if f.skeleton:
        fr = f.skeleton[0]
        cols = _map_ids(index, fr.bones)
        ok = cols >= 0
        pos[cols[ok]] = fr.positions[ok]
        rot[cols[ok]] = fr.rotations[ok]
        missing = sorted(set(range(N)) - set(cols[ok].tolist()))
        if missing:
            warnings.append(f"{len(missing)} nodes have no row in the first skeleton frame (identity rest), first "
                            f"{f.nodes[missing[0]].name!r}")
    local = local_matrices(pos, rot)
    parents = np.array([index[n.parent] if n.parent != -1 else -1 for n in f.nodes], np.int64)
    world = np.empty_like(local)
    done = np.zeros(N, bool)
    for i in range(N):  # nodes need not be parents-first
        chain = []
        j = i
        while j >= 0 and not done[j]:
            chain.append(j)
            j = int(parents[j])
        for k in reversed(chain):
            p = int(parents[k])
            world[k] = local[k] if p < 0 else world[p] @ local[k]
            done[k] = True
    quats = matrix3_to_quat(local[:, :3, :3])
    skel = cm.Skeleton(name="Armature")
    for i, n in enumerate(f.nodes):
        skel.bones.append(cm.Bone(n.name, int(parents[i]), world[i], pos[i].copy(), quats[i], np.ones(3),
                                  extras={"smd": {"id": n.id, "position": pos[i].tolist(),
                                                  "rotation": rot[i].tolist()}}))
    return skel


# -- mesh ------------------------------------------------------------------------------------------------

def corner_links(t: smd.Triangles, index: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(bones (C, K) skeleton indices, weights (C, K)) of every corner: its links, or its parent bone at 1.0."""
    C = len(t.parents)
    K = max(t.link_bones.shape[1], 1)
    bones = np.full((C, K), -1, np.int64)
    weights = np.zeros((C, K))
    if t.link_bones.shape[1]:
        bones[:, :t.link_bones.shape[1]] = t.link_bones
        weights[:, :t.link_bones.shape[1]] = t.link_weights
    plain = t.link_counts <= 0
    bones[plain] = -1
    weights[plain] = 0
    bones[plain, 0] = t.parents[plain]
    weights[plain, 0] = 1.0
    used = bones >= 0
    mapped = _map_ids(index, bones.reshape(-1)).reshape(C, K)
    return np.where(used, mapped, -1), np.where(used, weights, 0.0)


def merge_corners(positions: np.ndarray, bones: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first corner of each vertex, vertex of each corner): one vertex per distinct (position, link list),
    in order of first appearance. -0.0 equals 0.0, as in a tuple comparison."""
    key = np.hstack([positions + 0.0, bones.astype(np.float64), weights + 0.0])
    key = np.ascontiguousarray(key)
    rows = key.view(np.dtype((np.void, key.dtype.itemsize * key.shape[1]))).reshape(-1)
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order], rank[inverse.reshape(-1)]


def mesh_of(f: smd.SmdFile, name: str, skinned: bool, scene: cm.Scene) -> cm.Mesh:
    t = f.triangles
    index = node_index(f)
    bones, weights = corner_links(t, index)
    first, corner_vertex = merge_corners(t.positions, bones, weights)
    names, first_use, inv = np.unique(np.array(t.materials, dtype=str), return_index=True, return_inverse=True)
    rank = np.empty(len(names), np.int64)
    rank[np.argsort(first_use, kind="stable")] = np.arange(len(names))
    per_tri = rank[inv.reshape(-1)].astype(np.int32)
    mat_index = {str(names[i]): int(rank[i]) for i in range(len(names))}
    materials = sorted(mat_index, key=mat_index.get)
    base = len(scene.materials)
    scene.materials += [cm.Material(m) for m in materials]
    mesh = cm.Mesh(
        name=name,
        positions=t.positions[first].astype(np.float32),
        triangles=corner_vertex.reshape(-1, 3).astype(np.int32),
        normals=t.normals[first].astype(np.float32),
        uvs=[("UVMap", t.uvs[first].astype(np.float32))],
        material_indices=per_tri,
        materials=list(range(base, base + len(materials))),
    )
    if skinned:
        order = np.argsort(bones < 0, axis=1, kind="stable")  # used links first, in file order
        mesh.joints = np.take_along_axis(np.maximum(bones, 0), order, 1)[first].astype(np.int32)
        mesh.weights = np.take_along_axis(weights, order, 1)[first].astype(np.float32)
    mesh.extras["smd"] = {
        "corner_vertex": corner_vertex,
        "corner_normals": t.normals,
        "corner_uvs": t.uvs,
        "corner_parents": t.parents,
        "corner_link_counts": t.link_counts,
        "corner_positions": t.positions,
        "corner_bones": bones,
        "corner_weights": weights,
    }
    return mesh


def is_plain(f: smd.SmdFile) -> bool:
    """A reference with one node and no links: a plain mesh, no armature."""
    t = f.triangles
    return len(f.nodes) <= 1 and (t is None or not (t.link_counts > 0).any())


def to_scene(f: smd.SmdFile, name: str) -> tuple[cm.Scene, list[str]]:
    """A reference SMD as a Scene (skeleton + one mesh), or an animation SMD as a Scene with one animation and
    no skeleton. FormatError naming the line for ids that name no node and parent cycles."""
    smd.validate(f)
    warnings = list(f.warnings)
    scene = cm.Scene(name=name)
    if f.kind == "flex":
        raise FormatError("a VTA holds shapes of a reference mesh: import it onto that mesh", None, "vertexanimation")
    if f.triangles is None:
        scene.animations.append(animation_of(f, name, warnings))
        scene.extras["smd"] = {"nodes": [(n.id, n.name, n.parent) for n in f.nodes]}
        return scene, warnings
    plain = is_plain(f)
    if not plain:
        scene.skeleton = skeleton_of(f, warnings)
    scene.meshes.append(mesh_of(f, name, not plain, scene))
    scene.extras["smd"] = {"nodes": [(n.id, n.name, n.parent) for n in f.nodes]}
    if len(f.skeleton) > 1:
        warnings.append(f"{len(f.skeleton)} skeleton frames in a reference: the first is the rest pose")
    return scene, warnings


def animation_of(f: smd.SmdFile, name: str, warnings: list[str], fps: float = FPS) -> cm.Animation:
    """One track per node: keys at every skeleton frame (time / fps seconds), rotations as quaternions."""
    times, pos, rot = frame_table(f)
    if len(times) > 1 and np.any(np.diff(times) <= 0):
        warnings.append("skeleton frames are not in increasing time order")
    seconds = times / fps
    quats = matrix3_to_quat(euler_to_matrix3(rot))  # (F, N, 4)
    anim = cm.Animation(name=name, length=float(seconds.max() - min(seconds.min(), 0)) if len(seconds) else 0.0)
    for i, n in enumerate(f.nodes):
        anim.tracks.append(cm.Track(n.name, seconds.copy(), pos[:, i].copy(), seconds.copy(),
                                    _short_way(quats[:, i]), interpolation="LINEAR"))
    anim.extras["smd"] = {"times": times.tolist()}
    return anim


def load(path: str, data: bytes, with_animations: bool = True) -> tuple[cm.Scene, list[str]]:
    """The `load` capability: a reference → Scene with skeleton and mesh; an animation → Scene with its
    animation; a VTA → FormatError (its shapes need the reference)."""
    name = os.path.splitext(os.path.basename(path))[0] if path else "smd"
    f = smd.read(data)
    scene, warnings = to_scene(f, name)
    if not with_animations:
        scene.animations = []
    return scene, warnings


def semantic(f: smd.SmdFile) -> list[str]:
    """What an import runs after the read (hostile suite): the mapping's FormatError or warnings."""
    if f.kind == "flex":
        smd.validate(f)
        return list(f.warnings)
    return to_scene(f, "hostile")[1]


# -- VTA -------------------------------------------------------------------------------------------------

def flex_shapes(vta: smd.SmdFile, base_positions: np.ndarray, corner_vertex: np.ndarray | None
                ) -> list[cm.ShapeKey]:
    """Shape keys (absolute vertex positions) of a VTA on a mesh whose vertices are `base_positions` (V, 3).

    With the reference's corner map, a VTA vertex id is a corner and moves vertex corner_vertex[id]. Without it
    (or when an id is past it), the corner is found by its frame-0 position within 1e-5. A row that matches
    nothing is refused naming its line."""
    frames = vta.vertex_animation or []
    if not frames:
        return []
    base = next((fr for fr in frames if fr.time == 0), frames[0])
    names = {fr.time: fr.comment for fr in vta.skeleton}
    base_pos = dict(zip(base.vertices.tolist(), range(len(base.vertices))))
    V = len(base_positions)
    # vertex of every frame-0 row
    if corner_vertex is not None and len(base.vertices) and base.vertices.max() < len(corner_vertex) \
            and base.vertices.min() >= 0:
        row_vertex = corner_vertex[base.vertices]
        close = np.abs(base_positions[row_vertex] - base.positions).max(1) <= 1e-5
        if not close.all():
            row_vertex = np.where(close, row_vertex, _match_positions(base_positions, base.positions[~close],
                                                                      base.row_lines[~close], fill=~close))
    else:
        row_vertex = _match_positions(base_positions, base.positions, base.row_lines)
    out = []
    for fr in frames:
        if fr is base:
            continue
        pos = np.array(base_positions, np.float64, copy=True)
        rows = np.array([base_pos.get(int(v), -1) for v in fr.vertices], np.int64)
        missing = np.flatnonzero(rows < 0)
        if missing.size:
            k = int(missing[0])
            line = int(fr.row_lines[k]) if fr.row_lines is not None else k
            raise FormatError(f"line {line}: vertex {int(fr.vertices[k])} has no row in frame 0", None, "vertex id")
        pos[row_vertex[rows]] = fr.positions
        out.append(cm.ShapeKey(names.get(fr.time) or f"Key {fr.time}", pos))
    del V
    return out


def _match_positions(base_positions: np.ndarray, positions: np.ndarray, lines, fill=None) -> np.ndarray:
    """Vertex of each row by position within 1e-5 (sorted search on x, then a check of all three)."""
    order = np.argsort(base_positions[:, 0], kind="stable")
    xs = base_positions[order, 0]
    lo = np.searchsorted(xs, positions[:, 0] - 1e-5, "left")
    hi = np.searchsorted(xs, positions[:, 0] + 1e-5, "right")
    out = np.full(len(positions), -1, np.int64)
    for k in range(len(positions)):
        cand = order[lo[k]:hi[k]]
        if len(cand):
            d = np.abs(base_positions[cand] - positions[k]).max(1)
            j = int(np.argmin(d))
            if d[j] <= 1e-5:
                out[k] = cand[j]
                continue
        line = int(lines[k]) if lines is not None else k
        raise FormatError(f"line {line}: vertex animation row at {positions[k].tolist()} matches no vertex of the "
                          f"mesh", None, "vertex position")
    if fill is not None:
        full = np.full(len(fill), -1, np.int64)
        full[fill] = out
        return full
    return out


# -- export: Scene → SMD ---------------------------------------------------------------------------------

def _nodes_of(skel: cm.Skeleton | None, warnings: list[str]) -> list[smd.Node]:
    if skel is None or not len(skel.bones):
        return [smd.Node(0, "root", -1)]
    ids = [b.extras.get("smd", {}).get("id") for b in skel.bones]
    if any(not isinstance(i, int) for i in ids) or len(set(ids)) != len(ids):
        ids = list(range(len(skel.bones)))
    nodes = []
    for i, b in enumerate(skel.bones):
        if '"' in b.name:
            raise FormatError(f"bone {b.name!r}: a name with a quote cannot be written", None, "bone name")
        nodes.append(smd.Node(ids[i], b.name, ids[b.parent] if b.parent >= 0 else -1))
    return nodes


def rest_rows(skel: cm.Skeleton) -> tuple[np.ndarray, np.ndarray]:
    """Local positions and Euler rotations of the bind pose; the file's own values while they still match."""
    binds = skel.binds()
    n = len(skel.bones)
    local = np.empty((n, 4, 4))
    for i, b in enumerate(skel.bones):
        local[i] = binds[i] if b.parent < 0 else np.linalg.inv(binds[b.parent]) @ binds[i]
    pos = local[:, :3, 3].copy()
    rot = matrix3_to_euler(local[:, :3, :3])
    for i, b in enumerate(skel.bones):
        saved = b.extras.get("smd", {})
        if "position" in saved and "rotation" in saved:
            m = local_matrices(np.array(saved["position"]), np.array(saved["rotation"]))
            if np.abs(m - local[i]).max() <= 1e-5:
                pos[i], rot[i] = saved["position"], saved["rotation"]
    return pos, rot


def reference_of(scene: cm.Scene, warnings: list[str], newline: str = "\n",
                 goldsrc: bool = False) -> smd.SmdFile:
    """One reference SMD of the scene's meshes: a plain scene is one `root` node with link count 0."""
    skel = scene.skeleton
    nodes = _nodes_of(skel, warnings)
    ids = np.array([n.id for n in nodes], np.int64)
    if skel is None or not len(skel.bones):
        rest = smd.Frame(0, ids, np.zeros((1, 3)), np.zeros((1, 3)))
    else:
        pos, rot = rest_rows(skel)
        rest = smd.Frame(0, ids, pos, rot)
    parts = [_triangles_of(m, scene, ids, warnings, skel is not None and len(skel.bones) > 0, goldsrc)
             for m in scene.meshes]
    tri = _concat(parts) if parts else None
    return smd.SmdFile(nodes=nodes, skeleton=[rest], triangles=tri, newline=newline)


def _concat(parts: list[smd.Triangles]) -> smd.Triangles:
    K = max(p.link_bones.shape[1] for p in parts)

    def pad(a, fill):
        return np.hstack([a, np.full((len(a), K - a.shape[1]), fill, a.dtype)])

    return smd.Triangles(
        sum((p.materials for p in parts), []),
        np.concatenate([p.parents for p in parts]),
        np.concatenate([p.positions for p in parts]),
        np.concatenate([p.normals for p in parts]),
        np.concatenate([p.uvs for p in parts]),
        np.concatenate([p.link_counts for p in parts]),
        np.concatenate([pad(p.link_bones, -1) for p in parts]),
        np.concatenate([pad(p.link_weights, 0.0) for p in parts]),
    )


def _triangles_of(m: cm.Mesh, scene: cm.Scene, ids: np.ndarray, warnings: list[str], skinned: bool,
                  goldsrc: bool) -> smd.Triangles:
    corners = m.triangles.reshape(-1).astype(np.int64)
    C = len(corners)
    pos = m.positions.astype(np.float64)[corners]
    nrm = (m.normals.astype(np.float64)[corners] if m.normals is not None else np.zeros((C, 3)))
    uv = (m.uvs[0][1].astype(np.float64)[corners] if m.uvs else np.zeros((C, 2)))
    saved = {k: np.asarray(v) for k, v in m.extras.get("smd", {}).items() if np.ndim(v) and len(v) == C}
    if "corner_normals" in saved:  # a mesh mapped from an SMD keeps its corner data until it is split
        nrm = saved["corner_normals"].astype(np.float64)
    if "corner_uvs" in saved:
        uv = saved["corner_uvs"].astype(np.float64)
    tri_mat = m.material_indices if m.material_indices is not None else np.zeros(len(m.triangles), np.int64)
    names = [scene.materials[m.materials[int(i)]].name if m.materials else "no_material" for i in
             range(len(m.materials) or 1)]
    names = [n or "no_material" for n in names]
    materials = [names[int(i)] for i in tri_mat] if len(names) > 1 else [names[0]] * len(m.triangles)
    if not skinned or m.weights is None:
        return smd.Triangles(materials, np.zeros(C, np.int64) + (ids[0] if len(ids) else 0), pos, nrm, uv,
                             np.full(C, -1 if goldsrc else 0, np.int64), np.zeros((C, 0), np.int64),
                             np.zeros((C, 0)))
    w = m.weights.astype(np.float64)[corners]
    j = m.joints.astype(np.int64)[corners]
    # links in decreasing weight (stable), zero weights dropped
    order = np.argsort(-w, axis=1, kind="stable")
    w = np.take_along_axis(w, order, 1)
    j = np.take_along_axis(j, order, 1)
    count = (w > 0).sum(1)
    K = int(count.max()) if C else 0
    w, j = w[:, :K], np.where(w[:, :K] > 0, ids[np.clip(j[:, :K], 0, len(ids) - 1)], -1)
    w = np.where(j >= 0, w, 0.0)
    parents = np.where(count > 0, j[:, 0] if K else ids[0], ids[0])
    link_counts = count.astype(np.int64)
    if "corner_parents" in saved and "corner_link_counts" in saved:  # the file's columns, while they apply
        sp, sc = saved["corner_parents"].astype(np.int64), saved["corner_link_counts"].astype(np.int64)
        if True:
            parents = sp
            # a corner written without links (or with count 0) keeps that form while it weighs 1.0 on its parent
            plain = (sc <= 0) & (count == 1) & (j[:, 0] == sp) & (np.abs(w[:, 0] - 1.0) <= 1e-6) if K else sc <= 0
            link_counts = np.where(plain, sc, link_counts)
    if goldsrc:
        if (count > 1).any():
            warnings.append(f"GoldSrc SMD: {int((count > 1).sum())} corners weigh on several bones; each is written "
                            f"on its heaviest bone")
        link_counts = np.full(C, -1, np.int64)
    bones = np.where(np.arange(K) < np.maximum(link_counts, 0)[:, None], j, -1)
    weights = np.where(bones >= 0, w, 0.0)
    return smd.Triangles(materials, parents, pos, nrm, uv, link_counts, bones, weights)


def animation_smd(skel: cm.Skeleton, locals_: np.ndarray, times: np.ndarray, warnings: list[str],
                  newline: str = "\n") -> smd.SmdFile:
    """An animation SMD: every bone at every frame; `locals_` (F, N, 4, 4) parent-relative matrices."""
    nodes = _nodes_of(skel, warnings)
    ids = np.array([n.id for n in nodes], np.int64)
    frames = []
    for k, t in enumerate(times):
        pos = locals_[k, :, :3, 3].copy()
        rot = matrix3_to_euler(locals_[k, :, :3, :3])
        frames.append(smd.Frame(int(t), ids, pos, rot))
    return smd.SmdFile(nodes=nodes, skeleton=frames, newline=newline)


def vta_of(ref: smd.SmdFile, shapes: list[tuple[str, np.ndarray]], newline: str = "\n") -> smd.SmdFile:
    """A VTA of `shapes` ((name, positions per corner (C, 3))) in the reference's corner order: frame 0 holds
    every corner, frame k the corners its shape moves (by more than 1e-6)."""
    t = ref.triangles
    C = len(t.parents)
    ids = np.arange(C, dtype=np.int64)
    skeleton = [smd.Frame(0, np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3)))]
    frames = [smd.FlexFrame(0, ids, t.positions.copy(), t.normals.copy())]
    for k, (name, pos) in enumerate(shapes, 1):
        moved = np.flatnonzero(np.abs(pos - t.positions).max(1) > 1e-6)
        skeleton.append(smd.Frame(k, np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3)), name))
        frames.append(smd.FlexFrame(k, moved, pos[moved], t.normals[moved], name))
    return smd.SmdFile(nodes=[smd.Node(0, "root", -1)], skeleton=skeleton, vertex_animation=frames, newline=newline)
