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

from ...core import model as cm
from ...core import names
from ...core import skinning
from ...core.errors import FormatError, quiet_float_errors
from ...core.fileio import read_bytes
from ...core.transforms import affine_inverse, matrix3_to_quat, matrix_to_trs, slerp, trs_to_matrix
from ..qc import qc
from . import smd

# An SMD holds frame numbers, no rate (a .qc's `fps` gives it; studiomdl's default is 30). Without Blender,
# frames are read and written at Blender's default scene rate, the rate our exports are sampled at; inside
# Blender the scene's rate is used, so that a key's frame equals its SMD time.
FPS = 24.0
# rates an exported sequence may take when the scene's rate misses its keys (film, PAL, NTSC and their multiples)
SEQUENCE_RATES = (24.0, 25.0, 30.0, 48.0, 50.0, 60.0, 100.0, 120.0, 240.0)
PIECE = 1 << 16  # rows per piece where whole-array temporaries would cost fresh memory


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
    return np.stack([x, y, z], axis=-1) + 0.0  # an exact -0 (arctan2 of -0: the identity's y) written as 0


def local_matrices(positions: np.ndarray, rotations: np.ndarray) -> np.ndarray:
    out = np.zeros(positions.shape[:-1] + (4, 4))
    out[..., :3, :3] = euler_to_matrix3(rotations)
    out[..., :3, 3] = positions
    out[..., 3, 3] = 1
    return out


def _short_way(q: np.ndarray) -> np.ndarray:
    """Quaternion keys (F, 4) flipped so that each lies in the hemisphere of the one before."""
    q = np.array(q, np.float64)
    if len(q) > 1:
        d = np.sum(q[1:] * q[:-1], axis=-1)
        flips = np.concatenate([np.ones((1,) + d.shape[1:]), np.cumprod(np.where(d < 0, -1.0, 1.0), axis=0)])
        q *= flips[..., None]
    return q


# -- skeleton --------------------------------------------------------------------------------------------

def node_index(f: smd.SmdFile) -> dict[int, int]:
    return {n.id: i for i, n in enumerate(f.nodes)}


def frame_table(f: smd.SmdFile) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times (F,), positions (F, N, 3), rotations (F, N, 3)) in node order: a bone missing from a frame keeps
    its value of the frame before, and a bone missing from the first frames takes its first written value."""
    index = node_index(f)
    F, N = len(f.skeleton), len(f.nodes)
    if F == 0 or N == 0:
        return np.array([fr.time for fr in f.skeleton], np.float64), np.zeros((F, N, 3)), np.zeros((F, N, 3))
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
    if len(keys) and keys[-1] - keys[0] < 1 << 16:  # ids in a small range: a lookup table
        span = int(keys[-1] - keys[0]) + 1
        table = np.full(span + 1, -1, np.int64)  # table[span]: every id outside the range
        table[keys - keys[0]] = vals
        at = np.asarray(ids, np.int64) - keys[0]  # a new array: changed in place below
        at[(at < 0) | (at >= span)] = span
        return table[at]
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
    """(bones (C, K) int32 skeleton indices, -1 past the links; weights (C, K)) of every corner: its links, or its
    parent bone at 1.0."""
    C = len(t.parents)
    K = max(t.link_bones.shape[1], 1)
    plain = t.link_counts <= 0
    if t.link_bones.shape[1] and not plain.any():  # every line has its links: nothing to fill in
        bones, weights = t.link_bones, t.link_weights
    else:
        bones = np.full((C, K), -1, np.int64)
        weights = np.zeros((C, K))
        if t.link_bones.shape[1]:
            bones[:, :t.link_bones.shape[1]] = t.link_bones
            weights[:, :t.link_bones.shape[1]] = t.link_weights
        bones[plain] = -1
        weights[plain] = 0
        bones[plain, 0] = t.parents[plain]
        weights[plain, 0] = 1.0
    # a piece of rows at a time: the temporaries stay small and are reused (fresh memory costs more than the
    # arithmetic here)
    mapped = np.empty((C, K), np.int32)  # half of int64's fresh memory; indices of at most 2^20 nodes
    loose = False  # a link written with a negative bone, carrying weight
    for a in range(0, C, PIECE):
        part = bones[a:a + PIECE]
        unused = part < 0
        m = _map_ids(index, part.reshape(-1)).reshape(part.shape)
        m[unused] = -1
        mapped[a:a + PIECE] = m
        loose = loose or bool((weights[a:a + PIECE][unused] != 0).any())
    if loose:
        weights = np.where(bones < 0, 0.0, weights)
    return mapped, weights


def merge_corners(positions: np.ndarray, bones: np.ndarray, weights: np.ndarray, *more: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(first corner of each vertex, vertex of each corner): one vertex per distinct (position, link list,
    `more` columns), in order of first appearance. -0.0 equals 0.0, as in a tuple comparison.

    The key is never laid out as one matrix: the passes below read the corner arrays as they are (a table of
    C rows × 11 columns would be fresh memory the size of the whole import's data)."""
    arrays = [positions, bones, weights, *more]
    C = len(positions)
    if not C:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # one 64-bit hash per row, of its position alone (corners at one position but with other links are few);
    # the rows are compared in full afterwards, so a collision only costs time
    h = np.zeros(C, np.uint64)
    for j in range(3):
        h ^= np.add(positions[:, j], 0.0, dtype=np.float64).view(np.uint64)  # + 0.0: -0.0 hashes as 0.0
        h *= np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
    # the hash's top bits pick a bucket in a table two to four times the corner count; the table holds each
    # bucket's first corner (no sort). A corner equal to its bucket's first corner has found its vertex; the
    # few that are not (two distinct rows in one bucket) are sorted out among themselves
    k = int(C).bit_length() + 1
    bucket = (h >> np.uint64(64 - k)).astype(np.intp)
    del h
    index_type = np.int32 if C < 2 ** 31 else np.int64
    first_of = np.full(1 << k, C, index_type)
    np.minimum.at(first_of, bucket, np.arange(C, dtype=index_type))
    src = first_of[bucket].astype(np.intp)
    del first_of, bucket
    # compared by value (-0.0 equals 0.0; a NaN differs even from itself and goes to the exact comparison
    # below, which compares bits): row by row where the array is stored by rows, else column by column
    differ = np.zeros(C, bool)
    for a in arrays:
        a2 = a.reshape(C, -1)
        if a2.flags.c_contiguous:  # whole rows gathered (cheaper than one strided column at a time), by pieces
            for lo in range(0, C, PIECE):
                hi = min(lo + PIECE, C)
                ne = np.take(a2, src[lo:hi], axis=0) != a2[lo:hi]
                if ne.shape[1] in (1, 2, 4, 8):  # a row of flags is one integer
                    ne = ne.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[ne.shape[1]])[:, 0] != 0
                    differ[lo:hi] |= ne
                else:
                    differ[lo:hi] |= ne.any(axis=1)
        else:
            for j in range(a2.shape[1]):
                differ |= np.take(a2[:, j], src) != a2[:, j]
    if differ.any():
        sub = np.flatnonzero(differ)
        rows = np.concatenate([a.reshape(C, -1)[sub] for a in arrays], axis=1).astype(np.float64) + 0.0
        rows = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).reshape(-1)
        _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
        src[sub] = sub[first[inverse.reshape(-1)]]
    # vertices numbered in order of first appearance: a corner that is its own first corner opens one
    opens = src == np.arange(C)
    number = np.cumsum(opens) - 1
    return np.flatnonzero(opens), number[src]


def _material_slots(names: list[str]) -> tuple[list[str], np.ndarray]:
    """(distinct material names in order of first use, slot of each triangle)."""
    distinct = list(dict.fromkeys(names))
    if any("\0" in n for n in distinct):  # as a numpy string array sees them: trailing NULs dropped
        distinct = list(dict.fromkeys(n.rstrip("\0") for n in names))
        names = [n.rstrip("\0") for n in names]
    if len(distinct) <= 1:
        return distinct, np.zeros(len(names), np.int32)
    slot = {n: i for i, n in enumerate(distinct)}
    return distinct, np.fromiter(map(slot.__getitem__, names), np.int32, count=len(names))


def mesh_of(f: smd.SmdFile, name: str, skinned: bool, scene: cm.Scene, split: bool = False) -> cm.Mesh:
    """The triangles as one mesh. Corners merge on position and links (Blender's vertices, with normals and UVs
    per corner in `extras["smd"]`), or with `split` also on normal and UV (a core mesh whose vertices carry
    one normal and one UV each, as other formats' meshes do)."""
    t = f.triangles
    index = node_index(f)
    bones, weights = corner_links(t, index)
    first, corner_vertex = merge_corners(t.positions, bones, weights, *((t.normals, t.uvs) if split else ()))
    materials, per_tri = _material_slots(t.materials)
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
        vb, vw = bones[first], weights[first]
        order = np.argsort(vb < 0, axis=1, kind="stable")  # used links first, in file order
        mesh.joints = np.take_along_axis(np.maximum(vb, 0), order, 1).astype(np.int32)
        mesh.weights = np.take_along_axis(vw, order, 1).astype(np.float32)
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


def _name_places(f: smd.SmdFile) -> dict[str, int | str]:
    """Lines of the node names that are not UTF-8 (for `names.cleaned`)."""
    return {n.name: f"line {n.line}" for n in f.nodes if names.bad_byte(n.name) is not None and n.line}


@names.cleaned(_name_places)
@quiet_float_errors
def to_scene(f: smd.SmdFile, name: str, with_animation: bool = True, split: bool = False
             ) -> tuple[cm.Scene, list[str]]:
    """A reference SMD as a Scene (skeleton + one mesh), or an animation SMD as a Scene with one animation and
    no skeleton. FormatError naming the line for ids that name no node and parent cycles; a warning naming
    the line for numbers that are not finite or do not fit a float32."""
    smd.validate(f)
    warnings = list(f.warnings) + _number_warnings(f)
    scene = cm.Scene(name=name)
    if f.kind == "flex":
        raise FormatError("a VTA holds shapes of a reference mesh: import it onto that mesh", None, "vertexanimation")
    if f.triangles is None:
        if with_animation:
            scene.animations.append(animation_of(f, name, warnings))
        scene.extras["smd"] = {"nodes": [(n.id, n.name, n.parent) for n in f.nodes]}
        return scene, warnings
    plain = is_plain(f)
    if not plain:
        scene.skeleton = skeleton_of(f, warnings)
    scene.meshes.append(mesh_of(f, name, not plain, scene, split))
    scene.extras["smd"] = {"nodes": [(n.id, n.name, n.parent) for n in f.nodes]}
    if len(f.skeleton) > 1:
        warnings.append(f"{len(f.skeleton)} skeleton frames in a reference: the first is the rest pose")
    return scene, warnings


def _number_warnings(f: smd.SmdFile) -> list[str]:
    out = []
    blocks = [(fr.row_lines, [fr.positions, fr.rotations], "bone row") for fr in f.skeleton]
    if f.triangles is not None:
        t = f.triangles
        blocks.append((t.lines, [t.positions, t.normals, t.uvs, t.link_weights], "vertex line"))
    limit = np.finfo(np.float32).max
    for lines, parts, what in blocks:
        if all(not p.size or (abs(p.max()) <= limit and abs(p.min()) <= limit) for p in parts):  # NaN fails
            continue
        values = np.hstack(parts)
        bad = ~(np.abs(values) <= limit).all(1)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            line = int(lines[k]) if lines is not None else k
            out.append(f"line {line}: {what} has a number that is not finite or too large for a float32 "
                       f"({int(bad.sum())} such lines)")
    return out


def animation_of(f: smd.SmdFile, name: str, warnings: list[str], fps: float = FPS) -> cm.Animation:
    """One track per node: keys at every skeleton frame (time / fps seconds), rotations as quaternions."""
    times, pos, rot = frame_table(f)
    if len(times) > 1 and np.any(np.diff(times) <= 0):
        warnings.append("skeleton frames are not in increasing time order")
    seconds = times / fps
    quats = matrix3_to_quat(euler_to_matrix3(rot))  # (F, N, 4)
    anim = cm.Animation(name=name, length=float(seconds.max() - min(seconds.min(), 0)) if len(seconds) else 0.0)
    quats = _short_way(quats)
    for i, n in enumerate(f.nodes):
        anim.tracks.append(cm.Track(n.name, seconds.copy(), pos[:, i].copy(), seconds.copy(), quats[:, i].copy(),
                                    interpolation="LINEAR"))
    anim.extras["smd"] = {"times": times.tolist()}
    return anim


def load(path: str, data: bytes, with_animations: bool = True, motions=()) -> tuple[cm.Scene, list[str]]:
    """The `load` capability: a reference → Scene with skeleton and mesh (plus the animation SMDs `motions`,
    and the shapes of a VTA among them); an animation → Scene with its animation; a VTA alone →
    FormatError (its shapes need the reference)."""
    name = os.path.splitext(os.path.basename(path))[0] if path else "smd"
    f = smd.read(data)
    scene, warnings = to_scene(f, name, with_animations, split=True)
    rates: dict[str, dict[str, tuple[float, bool]]] = {}  # per folder: a QC there gives its sequences' fps
    for motion in motions:
        other = smd.read(read_bytes(motion))
        stem = os.path.splitext(os.path.basename(motion))[0]
        if other.kind == "flex" and scene.meshes:
            m = scene.meshes[0]
            m.shape_keys = flex_shapes(other, m.positions.astype(np.float64), m.extras["smd"]["corner_vertex"])
        elif other.kind == "motion" and with_animations:
            smd.validate(other)
            folder = os.path.dirname(os.path.abspath(motion))
            if folder not in rates:
                rates[folder] = qc.sequence_rates(folder)
            fps = rates[folder].get(os.path.realpath(motion), (FPS,))[0]
            scene.animations.append(animation_of(other, stem, warnings, fps))
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
        parent = ids[b.parent] if b.parent >= 0 else -1
        nodes.append(smd.Node(ids[i], names.file_name(b.name, b.extras), parent))
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
        root = _plain_root(scene)
        if root is not None:  # the file's one node, which Blender has no object for
            nodes = [smd.Node(root["id"], root["name"], -1)]
            ids = np.array([root["id"]], np.int64)
            rest = smd.Frame(0, ids, np.array([root["position"]], np.float64),
                             np.array([root["rotation"]], np.float64))
    else:
        pos, rot = rest_rows(skel)
        rest = smd.Frame(0, ids, pos, rot)
    parts = [_triangles_of(m, scene, ids, warnings, skel is not None and len(skel.bones) > 0, goldsrc)
             for m in scene.meshes]
    tri = _concat(parts) if parts else None
    return smd.SmdFile(nodes=nodes, skeleton=[rest], triangles=tri, newline=newline)


def _plain_root(scene: cm.Scene) -> dict | None:
    """The one node of a plain reference as read (`extras["smd"]["root"]`: id, name, rest position and
    rotation), when the meshes of the scene that came from an import came from that file (a mesh added beside
    them goes under that node too); else None (a `root` node is made)."""
    roots = [r for r in (m.extras.get("smd", {}).get("root") for m in scene.meshes) if r is not None]
    root = roots[0] if roots else None
    ok = isinstance(root, dict) and all(r == root for r in roots) and isinstance(root.get("id"), int) \
        and isinstance(root.get("name"), str) and '"' not in root["name"] \
        and all(isinstance(root.get(k), list) and len(root[k]) == 3 for k in ("position", "rotation"))
    return root if ok else None


def _concat(parts: list[smd.Triangles]) -> smd.Triangles:
    if len(parts) == 1:
        return parts[0]
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
        nrm = np.asarray(saved["corner_normals"], np.float64)
    if "corner_uvs" in saved:
        uv = np.asarray(saved["corner_uvs"], np.float64)
    tri_mat = m.material_indices if m.material_indices is not None else np.zeros(len(m.triangles), np.int64)
    names = [scene.materials[m.materials[int(i)]].name if m.materials else "no_material" for i in
             range(len(m.materials) or 1)]
    names = [n or "no_material" for n in names]
    materials = (np.array(names, object)[np.asarray(tri_mat, np.int64)].tolist() if len(names) > 1
                 else [names[0]] * len(m.triangles))
    if not skinned or m.weights is None:
        return smd.Triangles(materials, np.zeros(C, np.int64) + (ids[0] if len(ids) else 0), pos, nrm, uv,
                             np.full(C, -1 if goldsrc else 0, np.int64), np.zeros((C, 0), np.int64),
                             np.zeros((C, 0)))
    # links in decreasing weight (stable), zero weights dropped: worked out once per vertex, then per corner
    vw = m.weights.astype(np.float64)
    order = np.argsort(-vw, axis=1, kind="stable")
    vw = np.take_along_axis(vw, order, 1)
    vj = np.take_along_axis(m.joints.astype(np.int64), order, 1)
    vcount = (vw > 0).sum(1)
    count = vcount[corners]
    K = int(count.max()) if C else 0
    vw = vw[:, :K]
    vj = np.where(vw > 0, ids[np.clip(vj[:, :K], 0, len(ids) - 1)], -1)
    vw = np.where(vj >= 0, vw, 0.0)
    w, j = vw[corners], vj[corners]  # past its count, a corner's links are -1 with weight 0
    parents = np.where(count > 0, j[:, 0] if K else ids[0], ids[0])
    link_counts = count.astype(np.int64)
    if "corner_parents" in saved and "corner_link_counts" in saved:  # the file's columns, while they apply
        sp, sc = saved["corner_parents"].astype(np.int64), saved["corner_link_counts"].astype(np.int64)
        parents = sp
        # a corner written without links (or with count 0) keeps that form while it weighs 1.0 on its parent
        plain = (sc <= 0) & (count == 1) & (j[:, 0] == sp) & (np.abs(w[:, 0] - 1.0) <= 1e-6) if K else sc <= 0
        link_counts = np.where(plain, sc, link_counts)
    if goldsrc:  # the parent column is all there is: the heaviest bone
        if (count > 1).any():
            warnings.append(f"GoldSrc SMD: {int((count > 1).sum())} corners weigh on several bones; each is written "
                            f"on its heaviest bone")
        if K:
            parents = np.where(count > 0, j[:, 0], parents)
        link_counts = np.full(C, -1, np.int64)
    if not np.array_equal(link_counts, count):  # fewer links written than the corner has
        j = np.where(np.arange(K) < np.maximum(link_counts, 0)[:, None], j, -1)
        w = np.where(j >= 0, w, 0.0)
    return smd.Triangles(materials, parents, pos, nrm, uv, link_counts, j, w)


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


# -- sampling an animation at whole frames ---------------------------------------------------------------

STEP_SNAP = 1e-6  # seconds: a sample this little before a step (two keys at one time) is taken at the step


def _sample(times, values, t: np.ndarray, rotation: bool, step: bool) -> np.ndarray:
    times = np.asarray(times, np.float64)
    values = np.asarray(values, np.float64)
    if len(times) == 1:
        return np.repeat(values[:1], len(t), axis=0)
    steps = times[1:][np.diff(times) <= 0]
    if len(steps) and not step:  # a frame on a step's time (up to float32 rounding) takes the step's second key
        k = np.minimum(np.searchsorted(steps, t), len(steps) - 1)
        t = np.where((steps[k] >= t) & (steps[k] - t <= STEP_SNAP), steps[k], t)
    i = np.clip(np.searchsorted(times, t, "right") - 1, 0, len(times) - 1)
    if step:
        return values[i]
    i = np.minimum(i, len(times) - 2)
    span = times[i + 1] - times[i]
    f = np.clip((t - times[i]) / np.where(span > 0, span, 1.0), 0.0, 1.0)
    if rotation:
        return slerp(values[i], values[i + 1], f)
    return values[i] + (values[i + 1] - values[i]) * f[:, None]


def rest_locals(skel: cm.Skeleton) -> np.ndarray:
    binds = skel.binds()
    out = np.empty_like(binds)
    for i, b in enumerate(skel.bones):
        out[i] = binds[i] if b.parent < 0 else affine_inverse(binds[b.parent]) @ binds[i]
    return out


def _key_frames(anim: cm.Animation, fps: float) -> np.ndarray:
    times = np.concatenate([np.asarray(t, np.float64) for tr in anim.tracks
                            for t in (tr.translation_times, tr.rotation_times, tr.scale_times)
                            if t is not None and len(t)] + [np.array([anim.length], np.float64)])
    return times * fps


def sequence_rate(anim: cm.Animation, fps: float) -> float:
    """The rate an animation SMD is sampled at: `fps` (the scene's) while every key and the end fall on its
    whole frames, else the smallest common rate that holds them all (a QC beside the files gives it), else
    `fps` (`off_frame_warning` says so)."""
    for rate in (fps, *SEQUENCE_RATES):
        frames = _key_frames(anim, rate)
        if not (np.abs(frames - np.round(frames)) > 1e-3).any():
            return float(rate)
    return float(fps)


def off_frame_warning(anim: cm.Animation, fps: float, steps: bool = True) -> str | None:
    """A warning when keys or the end of `anim` fall between whole frames of `fps`: an SMD holds whole frame
    numbers only (its rate comes from a .qc), so such keys are sampled at the frames around them and the
    length grows to a whole frame. ``steps``: also say what the steps (`step_warning`) lose."""
    frames = _key_frames(anim, fps)
    off = np.abs(frames - np.round(frames)) > 1e-3
    found = [step_warning(anim, fps)] if steps else []
    if off.any():
        first = float(np.min(frames[off]))
        found.insert(0, f"animation {anim.name!r}: {int(np.unique(frames[off]).size)} key times fall between whole "
                        f"frames at {fps:g} fps (first at frame {first:.4g}); an SMD holds whole frames only, so "
                        "they are sampled at the frames around them")
    return "; ".join(w for w in found if w) or None


def _step_jumps(times, values, rotation: bool) -> tuple[np.ndarray, np.ndarray]:
    """(times, sizes) of a channel's steps: the distance (rotation: angle, radians) from a step's first key to the
    next."""
    times = np.asarray(times, np.float64)
    values = np.asarray(values, np.float64)
    k = np.flatnonzero(np.diff(times) <= 0)
    if not len(k):
        return np.zeros(0), np.zeros(0)
    a, b = values[k], values[k + 1]
    if rotation:
        a = a / np.linalg.norm(a, axis=1, keepdims=True)
        b = b / np.linalg.norm(b, axis=1, keepdims=True)
        size = 2 * np.arccos(np.clip(np.abs(np.sum(a * b, axis=1)), 0.0, 1.0))
    else:
        size = np.linalg.norm(b - a, axis=1)
    return times[k], size


def step_warning(anim: cm.Animation, fps: float) -> str | None:
    """A warning naming the steps (two keys at one time, the engine's jump) of `anim`'s linear tracks: an SMD
    holds one pose per whole frame, so a step's frame takes its second key and the frames before it blend into
    it; the step's first key is lost, by as much as the step's jump (the largest of each channel named, with its
    bone and time). Jumps below 1e-6 (float rounding) are none."""
    jumps = []  # (size, kind, bone, time)
    for tr in anim.tracks:
        if tr.interpolation == "STEP":
            continue
        for kind, t, v in (("position", tr.translation_times, tr.translations),
                           ("rotation", tr.rotation_times, tr.rotations), ("scale", tr.scale_times, tr.scales)):
            if v is not None and t is not None and len(t) > 1:
                times, sizes = _step_jumps(t, v, kind == "rotation")
                jumps += [(float(sz), kind, tr.bone, float(tm)) for sz, tm in zip(sizes, times) if sz > 1e-6]
    if not jumps:
        return None
    tracks = len({bone for _, _, bone, _ in jumps})
    count = len({round(tm * fps, 3) for _, _, _, tm in jumps})
    parts = []
    for kind, unit in (("position", " units"), ("rotation", "°"), ("scale", "")):
        found = [j for j in jumps if j[1] == kind]
        if found:
            size, _, bone, tm = max(found)
            size = np.degrees(size) if kind == "rotation" else size
            parts.append(f"{kind} {size:.3g}{unit} ({bone!r} at {tm:.4g} s, frame {tm * fps:.4g})")
    return (f"animation {anim.name!r}: {tracks} track(s) step (two keys at one time) at {count} time(s) at {fps:g} "
            "fps: an SMD holds one pose per whole frame, so each step's frame takes its second key and the frame "
            f"before it blends into it; the first key of each step is lost, by up to {', '.join(parts)}")


def animation_locals(skel: cm.Skeleton, anim: cm.Animation, seconds: np.ndarray) -> np.ndarray:
    """(F, N, 4, 4) parent-relative matrices of every bone at `seconds`; a bone or channel without keys keeps
    its bind-pose value. Translation and scale interpolate linearly, rotation by slerp."""
    rest = rest_locals(skel)
    out = np.repeat(rest[None], len(seconds), axis=0)
    index = {b.name: i for i, b in enumerate(skel.bones)}
    F = len(seconds)
    for tr in anim.tracks:
        i = index.get(tr.bone)
        if i is None:
            continue
        t0, r0, s0 = matrix_to_trs(rest[i])
        step = tr.interpolation == "STEP"
        t = (_sample(tr.translation_times, tr.translations, seconds, False, step)
             if tr.translations is not None and len(tr.translations) else np.repeat(t0[None], F, 0))
        r = (_sample(tr.rotation_times, tr.rotations, seconds, True, step)
             if tr.rotations is not None and len(tr.rotations) else np.repeat(r0[None], F, 0))
        sc = (_sample(tr.scale_times, tr.scales, seconds, False, step)
              if tr.scales is not None and len(tr.scales) else np.repeat(s0[None], F, 0))
        out[:, i] = trs_to_matrix(t, r, sc)
    return out


def skinned_corners(ref: smd.SmdFile, anim: smd.SmdFile | None, frame: int) -> np.ndarray:
    """Corner positions of a reference posed by frame `frame` (an index) of an animation SMD, by linear blend
    skinning (core/skinning.py); the rest positions without an animation. Bones match by node id."""
    t = ref.triangles
    if anim is None:
        return t.positions.copy()
    skel = skeleton_of(ref, [])
    bones, weights = corner_links(t, node_index(ref))
    _, pos, rot = frame_table(anim)
    rest_pos = np.array([b.rest_translation for b in skel.bones]).reshape(-1, 3)
    rest_rot = np.array(ref_rows_rotation(ref, skel))
    at = node_index(anim)
    cols = np.array([at.get(n.id, -1) for n in ref.nodes], np.int64)
    p = np.where((cols >= 0)[:, None], pos[frame][np.maximum(cols, 0)], rest_pos)
    r = np.where((cols >= 0)[:, None], rot[frame][np.maximum(cols, 0)], rest_rot)
    world = skinning.world_matrices(skel.parents, local_matrices(p, r))
    return skinning.skin(t.positions, np.maximum(bones, 0), weights, skinning.skin_matrices(world, skel.binds()))


def ref_rows_rotation(ref: smd.SmdFile, skel: cm.Skeleton) -> list:
    return [b.extras["smd"]["rotation"] for b in skel.bones]
