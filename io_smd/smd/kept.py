"""An SMD / VTA file's own bytes, written again while what an export makes says the same (docs/source.md §5.1).

The codec writes text in one canonical layout (`smd.write`), so a file from another tool (Blender Source Tools'
integer zeros, Crowbar's spacing, comments, indentation) would come back equal token by token but not byte for
byte. Import keeps the file's bytes (up to `KEEP_LIMIT`) with what it made; an export that makes the same
records, within what the file and Blender can hold, writes those bytes instead of formatting its own. "The
same": the same nodes (id, name, parent), skeleton frames (times, bone ids; positions within `TOLERANCE`,
rotations as the same rotation matrix within `TOLERANCE`, so ±π and other Euler twins agree), triangles
(materials, parent bones, positions, normals and UVs within `TOLERANCE`, link counts, bones and weights in
any order),
flex frames (times, shape names, vertex ids, positions, normals), flavour and line ends. No bpy here.
"""
from __future__ import annotations

import re

import numpy as np

from ...core.errors import FormatError
from . import smd
from .convert import euler_to_matrix3

KEEP_LIMIT = 32 << 20  # bytes: a larger file is not kept (its copy would double an import's memory and .blend)
TOLERANCE = 1e-5  # absolute, plus 1e-6 relative: float32 in Blender, six decimals in the file


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= TOLERANCE + 1e-6 * np.abs(a)))


def _same_rows(pa, ra, pb, rb) -> bool:
    return _close(pa, pb) and _close(euler_to_matrix3(np.asarray(ra, np.float64).reshape(-1, 3)),
                                     euler_to_matrix3(np.asarray(rb, np.float64).reshape(-1, 3)))


def _same_frames(a: list[smd.Frame], b: list[smd.Frame]) -> bool:
    """Frame for frame the same times and rows; a row `a` leaves out (Blender Source Tools writes no row for a
    bone at rest) is the same as `b`'s that holds what a reader gives it: the rest (zeros) in the first frame,
    the frame before's value in a later one."""
    if len(a) != len(b):
        return False
    before: dict[int, tuple] = {}
    for fa, fb in zip(a, b):
        if fa.time != fb.time:
            return False
        if np.array_equal(fa.bones, fb.bones):
            if not _same_rows(fa.positions, fa.rotations, fb.positions, fb.rotations):
                return False
        else:
            rows_b = {int(x): k for k, x in enumerate(fb.bones)}
            in_a = {int(x) for x in fa.bones}
            if len(rows_b) != len(fb.bones) or not in_a <= set(rows_b):
                return False
            take = np.array([rows_b[int(x)] for x in fa.bones], np.int64)
            if not _same_rows(fa.positions, fa.rotations, fb.positions[take], fb.rotations[take]):
                return False
            for bone, k in rows_b.items():
                if bone not in in_a:
                    want = before.get(bone, (np.zeros(3), np.zeros(3)))
                    if not _same_rows(want[0], want[1], fb.positions[k], fb.rotations[k]):
                        return False
        before.update({int(x): (fb.positions[k], fb.rotations[k]) for k, x in enumerate(fb.bones)})
    return True


def _links(t: smd.Triangles, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Link bones and weights padded to `k` columns (-1 and 0 past each line's count), each line's links in
    bone order: the order a tool lists them in says nothing (Blender Source Tools' differs from ours)."""
    n = len(t.parents)
    have = t.link_bones.shape[1] if t.link_bones.ndim == 2 else 0
    bones = np.full((n, k), -1, np.int64)
    weights = np.zeros((n, k), np.float64)
    if have:
        bones[:, :have] = t.link_bones
        weights[:, :have] = t.link_weights
    order = np.argsort(np.where(bones < 0, np.iinfo(np.int64).max, bones), axis=1, kind="stable")
    return np.take_along_axis(bones, order, 1), np.take_along_axis(weights, order, 1)


def _same_triangles(a: smd.Triangles | None, b: smd.Triangles | None) -> bool:
    if a is None or b is None:
        return a is b
    if len(a) != len(b) or a.materials != b.materials or not np.array_equal(a.parents, b.parents) \
            or not np.array_equal(a.link_counts, b.link_counts):
        return False
    if not (_close(a.positions, b.positions) and _close(a.normals, b.normals) and _close(a.uvs, b.uvs)):
        return False
    k = max(a.link_bones.shape[1] if a.link_bones.ndim == 2 else 0,
            b.link_bones.shape[1] if b.link_bones.ndim == 2 else 0)
    (ab, aw), (bb, bw) = _links(a, k), _links(b, k)
    return bool(np.array_equal(ab, bb)) and _close(aw, bw)


def _same_flex(a: list[smd.FlexFrame] | None, b: list[smd.FlexFrame] | None) -> bool:
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(
        fa.time == fb.time and (fa.comment or "") == (fb.comment or "") and np.array_equal(fa.vertices, fb.vertices)
        and _close(fa.positions, fb.positions) and _close(fa.normals, fb.normals) for fa, fb in zip(a, b))


def _without(t: smd.Triangles | None, skip: np.ndarray | None) -> smd.Triangles | None:
    """`t` without the triangles `skip` (the ones an import could not hold: a repeated vertex)."""
    if t is None or skip is None or not len(skip):
        return t
    keep = np.ones(len(t), bool)
    keep[skip[(skip >= 0) & (skip < len(t))]] = False
    corners = np.repeat(keep, 3)
    return smd.Triangles([m for m, k in zip(t.materials, keep) if k], t.parents[corners], t.positions[corners],
                         t.normals[corners], t.uvs[corners], t.link_counts[corners], t.link_bones[corners],
                         t.link_weights[corners])


def _rows_by_name(f: smd.SmdFile, names: list[str]) -> list[smd.Frame] | None:
    """`f`'s frames with only the rows of the nodes `names`, in that order, ids renumbered 0…; None when a frame
    lacks one of them."""
    ids = {n.name: n.id for n in f.nodes}
    want = np.array([ids[n] for n in names], np.int64)
    out = []
    for fr in f.skeleton:
        where = {int(b): i for i, b in enumerate(fr.bones)}
        if any(int(w) not in where for w in want):
            return None
        rows = np.array([where[int(w)] for w in want], np.int64)
        out.append(smd.Frame(fr.time, np.arange(len(rows)), fr.positions[rows], fr.rotations[rows]))
    return out


def _same_motion_subset(a: smd.SmdFile, b: smd.SmdFile) -> bool:
    """An animation `a` that names only some of the bones `b` writes (a file made for part of a rig, imported
    onto the whole rig): the same when `a`'s nodes are `b`'s by name with the same parents, their rows agree,
    and each bone only `b` has keeps one value throughout (the action does not move it)."""
    if a.triangles is not None or b.triangles is not None or a.vertex_animation or b.vertex_animation:
        return False
    name_a = {n.id: n.name for n in a.nodes}
    name_b = {n.id: n.name for n in b.nodes}
    parents_b = {n.name: name_b.get(n.parent) for n in b.nodes}
    names = [n.name for n in a.nodes]
    if len(set(names)) != len(names) or len(name_b) != len(b.nodes) \
            or any(parents_b.get(n.name, "") != name_a.get(n.parent) for n in a.nodes):
        return False
    rows_a, rows_b = _rows_by_name(a, names), _rows_by_name(b, names)
    if rows_a is None or rows_b is None or not _same_frames(rows_a, rows_b):
        return False
    extra = [n.name for n in b.nodes if n.name not in set(names)]
    still = _rows_by_name(b, extra)
    if not still:
        return still is not None
    first = still[0]
    return all(_same_frames([fr], [smd.Frame(fr.time, first.bones, first.positions, first.rotations)])
               for fr in still[1:])


def same_content(a: smd.SmdFile, b: smd.SmdFile, skip: np.ndarray | None = None) -> bool:
    """Whether `a` (without its triangles `skip`) and `b` say the same, as the module docstring defines it."""
    if a.newline != b.newline or a.goldsrc != b.goldsrc:
        return False
    if [(n.id, n.name, n.parent) for n in a.nodes] != [(n.id, n.name, n.parent) for n in b.nodes]:
        return _same_motion_subset(a, b)
    return _same_frames(a.skeleton, b.skeleton) and _same_triangles(_without(a.triangles, skip), b.triangles) \
        and _same_flex(a.vertex_animation, b.vertex_animation)


def source_if_same(source: bytes | None, made: smd.SmdFile, skip: np.ndarray | None = None) -> bytes | None:
    """`source` when it reads as a file that says what `made` says (its triangles `skip` aside), else None (also
    when it no longer reads)."""
    if not source:
        return None
    try:
        return source if same_content(smd.read(source), made, skip) else None
    except (FormatError, ValueError):
        return None


_HEAD = re.compile(rb"(?:[ \t]*(?://[^\r\n]*)?\r?\n)*")  # blank and // comment lines


def leading_comments(source: bytes | None) -> bytes:
    """The blank and `//` comment lines before a file's `version` line (Crowbar's `// Created by Crowbar`), for
    an edited write to keep: the records hold no comment, and without them every later line would move."""
    if not source:
        return b""
    head = _HEAD.match(source).group(0)
    return head if source[len(head):].lstrip(b" \t").startswith(b"version") else b""


def source_values(made: smd.SmdFile, source: bytes | None, skip: np.ndarray | None = None, at: int = 0,
                  count: int | None = None) -> None:
    """`made`'s skeleton rows that say what the source's row of the same frame and bone name says (within
    `TOLERANCE`; rotations as the same matrix) take the source's numbers, so that an edited write repeats an
    untouched row as the file had it (its 0 where Blender's float noise gives -0.000000, and the reverse); so
    do its triangles' corner values (`_corner_values`; the source's triangles `skip` left out) from `made`'s
    corner `at` on (where the mesh of the source begins among several; `count`: its triangles)."""
    try:
        old = smd.read(source) if source else None
    except (FormatError, ValueError):
        return
    if old is not None and old.triangles is not None and made.triangles is not None:
        _corner_values(made.triangles, _without(old.triangles, skip), at, count)
    if old is None or not old.skeleton:
        return
    names = {n.id: n.name for n in old.nodes}
    ids = {n.name: n.id for n in made.nodes}
    frames = {fr.time: fr for fr in old.skeleton}
    known = {ids[n.name] for n in old.nodes if n.name in ids}  # made's nodes the source has (by name)
    before: dict[int, tuple] = {}  # a bone's row in made's frame before: what a reader gives a row left out
    for fr in made.skeleton:
        was = frames.get(fr.time)
        rows = {int(b): (fr.positions[k].copy(), fr.rotations[k].copy()) for k, b in enumerate(fr.bones)}
        if was is not None:
            at = {ids.get(names.get(int(b))): k for k, b in enumerate(was.bones)}
            for k, b in enumerate(fr.bones):
                j = at.get(int(b))
                if j is not None and _same_rows(was.positions[j], was.rotations[j], fr.positions[k],
                                                fr.rotations[k]):
                    fr.positions[k], fr.rotations[k] = was.positions[j], was.rotations[j]
            _leave_out_rows(fr, known - set(at), before)
        before.update(rows)


def _leave_out_rows(fr: smd.Frame, absent: set[int], before: dict[int, tuple]) -> None:
    """Rows of `fr` for bones `absent` (the source's frame leaves them out: Blender Source Tools writes no row for
    a bone at rest) that hold what a reader gives a missing row (the rest, zeros, in the first frame; the frame
    before's value later) are left out again."""
    zero = (np.zeros(3), np.zeros(3))
    drop = [k for k, b in enumerate(fr.bones) if int(b) in absent
            and _same_rows(*before.get(int(b), zero), fr.positions[k], fr.rotations[k])]
    if not drop:
        return
    keep = np.ones(len(fr.bones), bool)
    keep[drop] = False
    fr.bones, fr.positions, fr.rotations = fr.bones[keep], fr.positions[keep], fr.rotations[keep]
    if fr.row_lines is not None and len(fr.row_lines) == len(keep):
        fr.row_lines = fr.row_lines[keep]


def _corner_values(made: smd.Triangles, old: smd.Triangles, at: int = 0, count: int | None = None) -> None:
    """Corner by corner from `made`'s corner `at` (an edit that renames or moves a bone, or adds a mesh beside
    the file's, keeps the file's corners in their order; with `count`, the mesh's triangles, fewer than the
    source's, the ones deleted are found by `_deleted`), a position, normal or UV of `made` that is the
    source's within `TOLERANCE` takes the source's numbers: float32 in Blender gives 19.678980 for the file's
    19.678979, which an untouched corner must not change; so do its links (`_link_values`)."""
    held = np.arange(len(old))
    if count is not None and count < len(old) and 3 * count <= len(made.parents) - at:
        deleted = _deleted(old, made, at, count, held)
        if deleted is not None:
            held = np.delete(held, deleted)
    n = min((len(made.parents) - at) // 3, len(held))
    if n <= 0:
        return
    mine, theirs = at + np.arange(3 * n), _corners(held[:n])
    for name in ("positions", "normals", "uvs"):
        a, b = getattr(made, name), getattr(old, name)
        if a.ndim != 2 or a.shape[1] != b.shape[1]:
            continue
        near = np.all(np.abs(a[mine] - b[theirs]) <= TOLERANCE + 1e-6 * np.abs(b[theirs]), axis=1)
        a[mine[near]] = b[theirs[near]]
    _link_values(made, old, mine, theirs)


def _link_values(made: smd.Triangles, old: smd.Triangles, mine: np.ndarray, theirs: np.ndarray) -> None:
    """The links of `made`'s corners `mine` that are the source's corners `theirs` (the same bones and weights,
    in any order) take the source's order and numbers (Blender Source Tools lists `2 1` where ours lists
    `1 2`)."""
    width = [t.link_bones.shape[1] if t.link_bones.ndim == 2 else 0 for t in (made, old)]
    k = max(width)
    if not k or not width[1]:
        return
    same = made.link_counts[mine] == old.link_counts[theirs]
    ours, file = _links(made, k), _links(old, k)
    same &= np.all(ours[0][mine] == file[0][theirs], axis=1) & np.all(
        np.abs(ours[1][mine] - file[1][theirs]) <= TOLERANCE, axis=1)
    if not same.any():
        return
    bones = np.full((len(made.parents), k), -1, np.int64)
    weights = np.zeros((len(made.parents), k), np.float64)
    if width[0]:
        bones[:, :width[0]], weights[:, :width[0]] = made.link_bones, made.link_weights
    rows = np.flatnonzero(same)
    bones[mine[rows]], weights[mine[rows]] = -1, 0.0
    bones[mine[rows], :width[1]] = old.link_bones[theirs[rows]]
    weights[mine[rows], :width[1]] = old.link_weights[theirs[rows]]
    made.link_bones, made.link_weights = bones, weights


def with_dropped(made: smd.SmdFile, source: bytes | None, skip: np.ndarray | None, at: int, count: int
                 ) -> np.ndarray | None:
    """Put the source's triangles `skip` (a repeated vertex: Blender could not hold them) back into `made`, at
    their places, when `made`'s `count` triangles from corner `at` are the source's other triangles one for one
    (an edit that moved vertices or bones) or in their order with some left out (faces deleted: `_deleted`),
    and the nodes are as many as the source's: an edited file keeps them as an unchanged one does. The new
    corner of each of `made`'s corners when they were put back (a VTA's ids follow it), else None."""
    t = made.triangles
    if t is None or skip is None or not len(skip) or not source:
        return None
    try:
        old = smd.read(source)
    except (FormatError, ValueError):
        return None
    if old.triangles is None or len(old.nodes) != len(made.nodes) or at % 3:
        return None
    total = len(old.triangles)
    skip = np.unique(skip[(skip >= 0) & (skip < total)])
    if total - len(skip) < count or 3 * count > len(t.parents) - at:
        return None
    kind = np.zeros(total, np.int8)  # 0: in made, 1: put back, 2: deleted in Blender
    kind[skip] = 1
    if total - len(skip) > count:
        deleted = _deleted(old.triangles, t, at, count, np.flatnonzero(kind == 0))
        if deleted is None:
            return None
        kind[deleted] = 2
    live = kind[kind != 2]
    first, last = at // 3, at // 3 + count
    # where each triangle goes: made's before the mesh, the mesh's around the source's put back, made's after
    tri_made = np.flatnonzero(np.concatenate([np.ones(first, bool), live == 0, np.ones(len(t) - last, bool)]))
    tri_old = first + np.flatnonzero(live == 1)
    n = len(t) + len(skip)
    width = max(t.link_bones.shape[1] if t.link_bones.ndim == 2 else 0,
                old.triangles.link_bones.shape[1] if old.triangles.link_bones.ndim == 2 else 0)
    out = {}
    for name in ("parents", "positions", "normals", "uvs", "link_counts", "link_bones", "link_weights"):
        a, b = getattr(t, name), getattr(old.triangles, name)
        if name in ("link_bones", "link_weights"):
            a, b = _padded(a, width, name == "link_bones"), _padded(b, width, name == "link_bones")
        rows = np.zeros((3 * n,) + a.shape[1:], np.result_type(a, b))
        rows[_corners(tri_made)] = a
        rows[_corners(tri_old)] = b[_corners(skip)]
        out[name] = rows
    materials = [""] * n
    for k, m in zip(tri_made, t.materials):
        materials[k] = m
    for k, j in zip(tri_old, skip):
        materials[k] = old.triangles.materials[j]
    made.triangles = smd.Triangles(materials, **out)
    return _corners(tri_made)


def _deleted(old: smd.Triangles, t: smd.Triangles, at: int, count: int, held: np.ndarray) -> list[int] | None:
    """The triangles of `held` (the source's triangles Blender holds, in order) that `t`'s `count` triangles from
    corner `at` leave out, each other one being the next of `t`'s at the same corner positions (within
    `TOLERANCE`); None when `t`'s are not so a subsequence of them."""
    a = old.positions.reshape(-1, 9)
    b = t.positions[at:at + 3 * count].reshape(-1, 9)
    out, j = [], 0
    for i in held:
        if j < count and np.abs(a[i] - b[j]).max() <= TOLERANCE + 1e-6 * np.abs(a[i]).max():
            j += 1
        else:
            out.append(int(i))
    return out if j == count else None


def _corners(triangles: np.ndarray) -> np.ndarray:
    return (3 * np.asarray(triangles, np.int64)[:, None] + np.arange(3)).reshape(-1)


def _padded(a: np.ndarray, width: int, ids: bool) -> np.ndarray:
    """Link columns `a` (C, K) padded to `width` (-1 ids, 0 weights)."""
    a = a.reshape(len(a), -1)
    if a.shape[1] == width:
        return a
    out = np.full((len(a), width), -1 if ids else 0, np.int64 if ids else np.float64)
    out[:, :a.shape[1]] = a
    return out


def as_source_nodes(made: smd.SmdFile, source: bytes | None, extra: dict[str, tuple] | None = None) -> bool:
    """An edited animation written with the source's nodes (ids, parents, order; names as Blender has them now)
    when `made` (every bone of the armature) says the same of them: the source names part of the rig
    (HammerAddons' Black Mesa chargers: 10 of 11 nodes) and each bone only `made` has keeps one value
    throughout; a node the armature lacks (the file's tracks that matched no bone, kept on the action) takes its
    rows from `extra` (name → positions and rotations per frame); a bone renamed in Blender is the source node
    whose rows it holds (`_renamed`). True when `made` was changed so; else it is left as it was."""
    try:
        old = smd.read(source) if source else None
    except (FormatError, ValueError):
        return False
    if old is None or old.triangles is not None or old.vertex_animation or not made.skeleton:
        return False
    extra = extra or {}
    if [(n.id, n.name, n.parent) for n in old.nodes] == [(n.id, n.name, n.parent) for n in made.nodes]:
        return False
    rows = [{int(b): k for k, b in enumerate(fr.bones)} for fr in made.skeleton]
    mine = {n.name: n for n in made.nodes}
    alias = _renamed(old, made, rows, set(mine) | set(extra))
    if alias is None:
        return False
    mine.update({was: made_node for was, made_node in alias.items()})
    new_name = {was: n.name for was, n in alias.items()}
    name_of = {n.id: n.name for n in made.nodes}
    old_name = {n.id: new_name.get(n.name, n.name) for n in old.nodes}
    for n in old.nodes:
        if n.name in mine:
            if name_of.get(mine[n.name].parent) != old_name.get(n.parent):
                return False
        elif n.name not in extra or len(extra[n.name][0]) != len(made.skeleton):
            return False
    taken = {mine[n.name].id for n in old.nodes if n.name in mine}
    for n in made.nodes:
        if n.id not in taken and not _still(made, rows, n.id):
            return False  # the action moves a bone the file does not name: every bone is written
    frames = []
    for f, (fr, r) in enumerate(zip(made.skeleton, rows)):
        pos, rot = [], []
        for n in old.nodes:
            if n.name in mine:
                if mine[n.name].id not in r:
                    return False
                k = r[mine[n.name].id]
                pos.append(fr.positions[k])
                rot.append(fr.rotations[k])
            else:
                pos.append(np.asarray(extra[n.name][0][f], np.float64))
                rot.append(np.asarray(extra[n.name][1][f], np.float64))
        frames.append(smd.Frame(fr.time, np.array([n.id for n in old.nodes], np.int64), np.array(pos).reshape(-1, 3),
                                np.array(rot).reshape(-1, 3), fr.comment))
    made.nodes = [smd.Node(n.id, old_name[n.id], n.parent) for n in old.nodes]
    made.skeleton = frames
    return True


def _still(made: smd.SmdFile, rows: list[dict], bone: int) -> bool:
    """Whether `bone` has a row in every frame of `made`, each the first one's."""
    if any(bone not in r for r in rows):
        return False
    first, k0 = made.skeleton[0], rows[0][bone]
    return all(_same_rows(first.positions[k0], first.rotations[k0], fr.positions[r[bone]], fr.rotations[r[bone]])
               for fr, r in zip(made.skeleton, rows))


def _renamed(old: smd.SmdFile, made: smd.SmdFile, rows: list[dict], known: set[str]) -> dict | None:
    """source node name → `made`'s node, for each source node whose name `made` lacks (`known`: the names it
    has, bones and kept tracks): the one bone of `made` the source does not name whose rows are that node's in
    every frame (a bone renamed in Blender); None when a source node has no such bone or several."""
    missing = [n for n in old.nodes if n.name not in known]
    if not missing:
        return {}
    if len(old.skeleton) != len(made.skeleton):
        return None
    names = {n.name for n in old.nodes}
    spare = [n for n in made.nodes if n.name not in names]
    at_old = [{int(b): k for k, b in enumerate(fr.bones)} for fr in old.skeleton]
    out = {}
    for n in missing:
        found = [m for m in spare if all(
            n.id in a and m.id in r and _same_rows(fo.positions[a[n.id]], fo.rotations[a[n.id]],
                                                   fm.positions[r[m.id]], fm.rotations[r[m.id]])
            for fo, a, fm, r in zip(old.skeleton, at_old, made.skeleton, rows))]
        if len(found) != 1:
            return None
        out[n.name] = found[0]
        spare.remove(found[0])
    return out
