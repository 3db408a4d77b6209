"""Compare two core Scenes, across formats: skeletons, meshes and animations.

* Skeleton, bone by bone (matched by name): presence, parent (by name), rest head position and orientation
  (the bind matrix: what Blender shows in Rest Position) and the default pose (the skeleton's initial pose,
  which formats such as Urho3D store apart from the bind).
* Meshes: counts (meshes, vertices once duplicates by position and links are merged, triangles), bounds, and
  the largest distance from a vertex to its match in the other scene (all meshes pooled; the same vertex order
  when it fits within the tolerance, else the nearest vertex, both ways).
* Animations (matched by name, then ignoring case): presence, length, tracks, and the largest difference of
  the posed skeletons at every key time of either animation and half-way between: bone heads and the rotation
  each bone applies to its skin (World · Bind⁻¹), so bone-local axis conventions of the two formats do not
  matter.

Tolerances: positions against `tol` × the bounding-box diagonal of A (meshes, else bone heads), orientations
and rotations by the angle between quaternions (up to sign) against `rot_tol` radians, lengths against
`time_tol` seconds.

Motions without a model (`compare_motions`: two scenes with no skeleton and no mesh, such as two `.vmd` or two
`.ani` files) are compared channel by channel: each bone's translation, rotation and scale and each morph's
weight, sampled by each side's own interpolation at every key time of either side and half-way between.
Positions against an absolute `pos_tol` in file units (an animation's `extras[FILE_UNIT_KEY]`: scene units per
file unit, 1 when absent), rotations against `rot_tol` radians, scales and morph weights against their own
absolute tolerances. Every difference names the bone or morph and the frame (seconds when the animation
states no `extras["fps"]`). A track may carry `extras[TIMING_KEY]`: (K, 4, 4) MMD timing curves (x1, y1,
x2, y2 in 0..127) of the segment ending at each key, for translation channels 0–2 and the rotation (see
`skinning.mmd_bezier`); it is then sampled as MMD plays it.

Pure numpy; no Blender.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import model as cm
from .naming import safe_file_name
from .skinning import evaluate_animation, mmd_bezier, rest_pose
from .transforms import matrix3_to_quat, quat_angle, quat_normalize, slerp

DEFAULT_TOL = 1e-4
DEFAULT_ROT_TOL = 1e-4
DEFAULT_TIME_TOL = 1e-4
DEFAULT_SCALE_TOL = 1e-4  # motions: absolute, unitless
DEFAULT_WEIGHT_TOL = 1e-6  # motions: absolute morph weight (a float32 weight of 1 is exact to 6e-8)
MAX_SAMPLES = 2000  # pose samples per animation


@dataclass
class Difference:
    part: str  # skeleton | mesh | animation
    element: str  # bone, mesh or animation (and bone) it concerns
    field: str  # presence, parent, rest head, rest orientation, default pose head, ..., vertex distance, length
    message: str
    value: float | None = None
    limit: float | None = None

    def __str__(self) -> str:
        return f"{self.part}: {self.element}: {self.field}: {self.message}"


@dataclass
class Comparison:
    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was compared and the largest figures found
    diagonal: float = 1.0
    position_limit: float = 0.0
    rotation_limit: float = 0.0

    @property
    def same(self) -> bool:
        return not self.differences

    def lines(self) -> list[str]:
        return self.notes + [f"difference: {d}" for d in self.differences]


# ------------------------------------------------------------------------------------------------------------
# helpers

def _fmt(x: float) -> str:
    return f"{x:.3g}"


def diagonal(scene: cm.Scene) -> float:
    """Bounding-box diagonal of the meshes (finite positions), else of the bone heads; 1 if empty or flat."""
    pts = [np.asarray(m.positions, np.float64).reshape(-1, 3) for m in scene.meshes if m.vertex_count]
    if not pts and scene.skeleton is not None and len(scene.skeleton):
        pts = [scene.skeleton.binds()[:, :3, 3]]
    if not pts:
        return 1.0
    p = np.concatenate(pts)
    p = p[np.isfinite(p).all(axis=1)]
    if not len(p):
        return 1.0
    d = float(np.linalg.norm(p.max(axis=0) - p.min(axis=0)))
    return d if d > 0 else 1.0


def _rotations(m: np.ndarray) -> np.ndarray:
    """Unit quaternions of the rotation part of matrices (…, 4, 4), scale divided out."""
    r = np.asarray(m, np.float64)[..., :3, :3]
    n = np.linalg.norm(r, axis=-2, keepdims=True)
    return matrix3_to_quat(r / np.where(n > 0, n, 1))


def _worst(values: np.ndarray) -> int:
    v = np.where(np.isnan(values), np.inf, values)
    return int(np.argmax(v))


# ------------------------------------------------------------------------------------------------------------
# skeleton

def matched_names(s: cm.Skeleton, view: dict | None, other: cm.Skeleton) -> list[str]:
    """The names `s`'s bones are matched by: a format's own view (`scene.extras[COMPARE_KEY]["match"]`, a list
    of names per bone, e.g. a PMX's English name then its name) picks the first the other skeleton has."""
    names = list(s.names)
    match = (view or {}).get("match")
    if not match or len(match) != len(names):
        return names
    known = set(other.names)
    return [next((n for n in alias if n in known), names[i]) for i, alias in enumerate(match)]


def compare_skeletons(a: cm.Skeleton | None, b: cm.Skeleton | None, pos: float, rot: float, out: Comparison,
                      views: tuple = (None, None)) -> None:
    """`views`: each side's `scene.extras.get(COMPARE_KEY)`: how its bones are matched (`match`) and which
    skeleton fields its format does not hold (`skipped`: "rest orientation", "default pose orientation")."""
    if a is None or b is None or not len(a) or not len(b):
        na, nb = (0 if s is None else len(s) for s in (a, b))
        if na or nb:
            out.differences.append(Difference("skeleton", "skeleton", "presence", f"{na} bones in A, {nb} in B"))
        else:
            out.notes.append("skeleton: none in either")
        return
    names_a = matched_names(a, views[0], b)
    names_b = matched_names(b, views[1], a)
    ia = {n: i for i, n in enumerate(names_a)}
    ib = {n: i for i, n in enumerate(names_b)}
    _presence("skeleton", "bone", names_a, names_b, "", out)
    common = [n for n in names_a if n in ib]
    skipped = sorted({f for v in views if v for f in v.get("skipped", ())})
    if skipped:
        out.notes.append(f"skeleton: {', '.join(skipped)} not compared (not held by the file)")
    out.notes.append(f"skeleton: {len(a)} bones in A, {len(b)} in B, {len(common)} by the same name")
    if not common:
        return

    def parent_name(s: cm.Skeleton, names: list[str], i: int) -> str:
        p = s.bones[i].parent
        return "(root)" if p < 0 else names[p]

    for n in common:
        pa, pb = parent_name(a, names_a, ia[n]), parent_name(b, names_b, ib[n])
        if pa != pb:
            out.differences.append(Difference("skeleton", f"bone {n}", "parent", f"{pa} in A, {pb} in B"))
    sel_a = np.array([ia[n] for n in common])
    sel_b = np.array([ib[n] for n in common])
    for label, wa, wb in (("rest", a.binds(), b.binds()), ("default pose", _safe_rest_pose(a), _safe_rest_pose(b))):
        if wa is None or wb is None:
            out.notes.append(f"skeleton: {label} not compared (parent cycle or index out of range)")
            continue
        wa, wb = wa[sel_a], wb[sel_b]
        dist = np.linalg.norm(wa[:, :3, 3] - wb[:, :3, 3], axis=1)
        ang = quat_angle(_rotations(wa), _rotations(wb))
        k, j = _worst(dist), _worst(ang)
        out.notes.append(f"skeleton: largest {label} head distance {_fmt(dist[k])} ({common[k]}), "
                         f"largest {label} orientation difference {_fmt(ang[j])} rad ({common[j]})")
        for i in np.flatnonzero(~(dist <= pos)):
            out.differences.append(Difference(
                "skeleton", f"bone {common[i]}", f"{label} head",
                f"moved by {_fmt(dist[i])} (limit {_fmt(pos)}): A {np.round(wa[i, :3, 3], 6).tolist()}, "
                f"B {np.round(wb[i, :3, 3], 6).tolist()}", float(dist[i]), pos))
        for i in np.flatnonzero(~(ang <= rot)) if f"{label} orientation" not in skipped else ():
            out.differences.append(Difference(
                "skeleton", f"bone {common[i]}", f"{label} orientation",
                f"turned by {_fmt(ang[i])} rad (limit {_fmt(rot)})", float(ang[i]), rot))


def _safe_rest_pose(s: cm.Skeleton) -> np.ndarray | None:
    try:
        return rest_pose(s)
    except ValueError:
        return None


# ------------------------------------------------------------------------------------------------------------
# meshes

def _pooled(scene: cm.Scene) -> tuple[np.ndarray, list[tuple[str, int]]]:
    parts = [np.asarray(m.positions, np.float64).reshape(-1, 3) for m in scene.meshes]
    starts = []
    at = 0
    for m in scene.meshes:
        starts.append((m.name, at))
        at += m.vertex_count
    return (np.concatenate(parts) if parts else np.zeros((0, 3))), starts


def _which(starts: list[tuple[str, int]], i: int) -> str:
    name, first = starts[0]
    for n, s in starts:
        if s <= i:
            name, first = n, s
    return f"mesh {name} vertex {i - first}"


def nearest_distances(p: np.ndarray, q: np.ndarray, radius: float) -> np.ndarray:
    """Distance from every point of `p` to its nearest point of `q`, exact when it is at most `radius`,
    `inf` otherwise (a uniform grid of cell `radius`: every point within `radius` lies in one of the 27
    cells around a point's own)."""
    p = np.asarray(p, np.float64)
    q = np.asarray(q, np.float64)
    best = np.full(len(p), np.inf)
    if not len(p) or not len(q) or not radius > 0:
        return best
    origin = np.minimum(p.min(axis=0), q.min(axis=0)) - radius
    kq = np.floor((q - origin) / radius).astype(np.int64)
    kp = np.floor((p - origin) / radius).astype(np.int64)
    span = np.maximum(kq.max(axis=0), kp.max(axis=0)) + 3
    if float(np.prod(span.astype(np.float64))) > 2.0 ** 62:
        raise OverflowError("grid too fine for these points")

    def key(k):
        return (k[:, 0] * span[1] + k[:, 1]) * span[2] + k[:, 2]

    order = np.argsort(key(kq), kind="stable")
    sorted_keys = key(kq)[order]
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            for dz in (-1, 0, 1):
                kk = key(kp + np.array([dx, dy, dz]))
                lo = np.searchsorted(sorted_keys, kk, "left")
                hi = np.searchsorted(sorted_keys, kk, "right")
                counts = hi - lo
                for j in range(int(counts.max(initial=0))):
                    sel = np.flatnonzero(counts > j)
                    d = np.linalg.norm(p[sel] - q[order[lo[sel] + j]], axis=1)
                    best[sel] = np.minimum(best[sel], d)
    best[best > radius] = np.inf
    return best


def match_distances(p: np.ndarray, q: np.ndarray, limit: float, scale: float) -> np.ndarray:
    """Nearest distances from p to q: exact within `limit`, then by growing grids; for points still without a
    match once the grid reaches the whole model, a brute-force search (in chunks)."""
    d = np.full(len(p), np.inf)
    radius = max(limit, scale * 1e-9, 1e-12)
    todo = np.arange(len(p))
    while len(todo) and radius < 4 * scale:
        found = nearest_distances(p[todo], q, radius)
        d[todo] = found
        todo = todo[~np.isfinite(found)]
        radius *= 8
    for start in range(0, len(todo), 256):
        chunk = todo[start:start + 256]
        diff = p[chunk, None, :] - q[None, :, :]
        d[chunk] = np.sqrt((diff * diff).sum(axis=2)).min(axis=1)
    return d


def _vertex_columns(m: cm.Mesh) -> np.ndarray:
    """(V, n) float64: a vertex's position and its links (slot order and unused slots ignored). Normals, UVs,
    colours and tangents are corner data: formats split a vertex by them where the file needs it (glTF) or
    keep them per corner (SMD; Blender), and a file writing 6 decimals merges two that differ by a rounding."""
    V = m.vertex_count
    cols = [np.asarray(m.positions, np.float64).reshape(V, 3)]
    if m.joints is not None and m.weights is not None:
        w = np.asarray(m.weights, np.float64).reshape(V, -1)
        j = np.where(w > 0, np.asarray(m.joints, np.float64).reshape(V, -1), -1.0)
        order = np.lexsort((-w, j))
        cols += [np.take_along_axis(j, order, 1), np.take_along_axis(np.where(w > 0, w, 0.0), order, 1)]
    return np.hstack(cols) + 0.0  # + 0.0: -0.0 equals 0.0


def distinct_vertex_count(m: cm.Mesh) -> int:
    """Vertices once duplicates are merged: equal in position and links (`_vertex_columns`) within the fidelity
    tolerance max(1e-5, 4 float32 ulps). Rows are sorted on values rounded to that tolerance and a row merges
    with the one before it."""
    V = m.vertex_count
    if V < 2:
        return V
    x = _vertex_columns(m)
    close = np.maximum(1e-5, 4 * np.spacing(np.abs(x).astype(np.float32)).astype(np.float64))
    keys = np.round(x / 1e-5)
    order = np.lexsort(keys.T[::-1])
    x, close = x[order], close[order]
    same = (np.abs(x[1:] - x[:-1]) <= np.maximum(close[1:], close[:-1])).all(axis=1)
    return int(V - same.sum())


def compare_meshes(a: cm.Scene, b: cm.Scene, pos: float, out: Comparison) -> None:
    merged_a = sum(distinct_vertex_count(m) for m in a.meshes)
    merged_b = sum(distinct_vertex_count(m) for m in b.meshes)
    counts_a = (len(a.meshes), merged_a, a.triangle_count)
    counts_b = (len(b.meshes), merged_b, b.triangle_count)
    out.notes.append(f"meshes: A {counts_a[0]} meshes, {counts_a[1]} vertices, {counts_a[2]} triangles; "
                     f"B {counts_b[0]}, {counts_b[1]}, {counts_b[2]} (vertices by position and links; before merging "
                     f"A {a.vertex_count}, B {b.vertex_count})")
    for label, x, y in zip(("mesh count", "vertex count", "triangle count"), counts_a, counts_b):
        if x != y:
            out.differences.append(Difference("mesh", "meshes", label, f"{x} in A, {y} in B"))
    pa, starts_a = _pooled(a)
    pb, starts_b = _pooled(b)
    if not len(pa) or not len(pb):
        return
    fa, fb = pa[np.isfinite(pa).all(axis=1)], pb[np.isfinite(pb).all(axis=1)]
    if len(fa) and len(fb):
        for label, va, vb in (("bounds min", fa.min(axis=0), fb.min(axis=0)), ("bounds max", fa.max(axis=0),
                                                                                fb.max(axis=0))):
            delta = float(np.abs(va - vb).max())
            if not delta <= pos:
                out.differences.append(Difference(
                    "mesh", "meshes", label, f"A {np.round(va, 6).tolist()}, B {np.round(vb, 6).tolist()} "
                    f"(apart by {_fmt(delta)}, limit {_fmt(pos)})", delta, pos))
    if len(pa) == len(pb):
        in_order = np.linalg.norm(pa - pb, axis=1)
        if (in_order <= pos).all():
            k = _worst(in_order)
            out.notes.append(f"meshes: largest vertex distance {_fmt(in_order[k])} ({_which(starts_a, k)}, "
                             "same vertex order)")
            return
    scale = max(out.diagonal, 1e-12)
    da = match_distances(pa, pb, pos, scale)
    db = match_distances(pb, pa, pos, scale)
    ka, kb = _worst(da), _worst(db)
    if da[ka] >= db[kb]:
        worst, where = da[ka], f"{_which(starts_a, ka)} of A"
    else:
        worst, where = db[kb], f"{_which(starts_b, kb)} of B"
    out.notes.append(f"meshes: largest vertex distance {_fmt(worst)} ({where}, nearest vertex)")
    if not worst <= pos:
        far = int((~(da <= pos)).sum() + (~(db <= pos)).sum())
        out.differences.append(Difference("mesh", where, "vertex distance",
                                          f"{_fmt(worst)} from the nearest vertex of the other scene (limit "
                                          f"{_fmt(pos)}); {far} vertices beyond the limit", float(worst), pos))


# ------------------------------------------------------------------------------------------------------------
# animations

def _key_times(anim: cm.Animation) -> np.ndarray:
    parts = [np.asarray(t, np.float64) for tr in anim.tracks
             for t in (tr.translation_times, tr.rotation_times, tr.scale_times) if t is not None and len(t)]
    return np.concatenate(parts) if parts else np.zeros(0)


def _match_animations(a: list[cm.Animation], b: list[cm.Animation]):
    pairs, used = [], set()
    for rule in (lambda n: n, lambda n: n.lower(), lambda n: safe_file_name(n).lower()):
        for x in a:
            if any(x is p[0] for p in pairs):
                continue
            for j, y in enumerate(b):
                if j not in used and rule(x.name) == rule(y.name):
                    pairs.append((x, y))
                    used.add(j)
                    break
    only_a = [x for x in a if not any(x is p[0] for p in pairs)]
    only_b = [y for j, y in enumerate(b) if j not in used]
    return pairs, only_a, only_b


def _unpaired_animations(only_a: list[cm.Animation], only_b: list[cm.Animation], out: Comparison) -> None:
    for x in only_a:
        out.differences.append(Difference("animation", f"animation {x.name}", "presence", "in A only"))
    for y in only_b:
        out.differences.append(Difference("animation", f"animation {y.name}", "presence", "in B only"))


def compare_animations(a: cm.Scene, b: cm.Scene, pos: float, rot: float, time_tol: float, out: Comparison) -> None:
    pairs, only_a, only_b = _match_animations(a.animations, b.animations)
    out.notes.append(f"animations: {len(a.animations)} in A, {len(b.animations)} in B, {len(pairs)} by name")
    _unpaired_animations(only_a, only_b, out)
    if not pairs:
        return
    sa, sb = a.skeleton, b.skeleton
    if sa is None or sb is None:
        out.notes.append("animations: not posed (a scene has no skeleton)")
        return
    ib = {x.name: i for i, x in enumerate(sb.bones)}
    common = [n for n in sa.names if n in ib]
    sel_a = np.array([sa.index(n) for n in common], dtype=np.int64)
    sel_b = np.array([ib[n] for n in common], dtype=np.int64)
    inv_a = np.linalg.inv(sa.binds()[sel_a])
    inv_b = np.linalg.inv(sb.binds()[sel_b])
    for x, y in pairs:
        element = f"animation {x.name}" if x.name == y.name else f"animation {x.name} / {y.name}"
        if not abs(x.length - y.length) <= time_tol:
            out.differences.append(Difference("animation", element, "length",
                                              f"{x.length:.7g} s in A, {y.length:.7g} s in B", abs(x.length - y.length),
                                              time_tol))
        ta, tb = {t.bone for t in x.tracks}, {t.bone for t in y.tracks}
        note = f"{element}: {len(ta)} tracks in A, {len(tb)} in B"
        if ta != tb:
            only_a, only_b = ", ".join(sorted(ta - tb)) or "-", ", ".join(sorted(tb - ta)) or "-"
            note += f" (only in A: {only_a}; only in B: {only_b}; compared through the poses they give)"
        times = np.unique(np.concatenate([_key_times(x), _key_times(y)]))
        end = max(x.length, y.length)
        times = times[np.isfinite(times) & (times >= 0) & (times <= end + time_tol)]
        if len(times) > 1:
            times = np.unique(np.concatenate([times, (times[1:] + times[:-1]) / 2]))
        if not len(times):
            times = np.zeros(1)
        if len(times) > MAX_SAMPLES:
            times = times[np.linspace(0, len(times) - 1, MAX_SAMPLES).round().astype(int)]
        worst_d, worst_a = (0.0, "", 0.0), (0.0, "", 0.0)
        for t in times:
            try:
                wa = evaluate_animation(sa, x, float(t))[sel_a]
                wb = evaluate_animation(sb, y, float(t))[sel_b]
            except ValueError as e:
                out.notes.append(f"{element}: not posed ({e})")
                break
            dist = np.linalg.norm(wa[:, :3, 3] - wb[:, :3, 3], axis=1)
            ang = quat_angle(_rotations(wa @ inv_a), _rotations(wb @ inv_b))
            k, j = _worst(dist), _worst(ang)
            if not dist[k] <= worst_d[0]:
                worst_d = (float(dist[k]), common[k], float(t))
            if not ang[j] <= worst_a[0]:
                worst_a = (float(ang[j]), common[j], float(t))
        note += (f"; {len(times)} pose samples: largest head distance {_fmt(worst_d[0])}"
                 f"{f' ({worst_d[1]} at {worst_d[2]:.4g} s)' if worst_d[1] else ''}, largest rotation difference "
                 f"{_fmt(worst_a[0])} rad{f' ({worst_a[1]} at {worst_a[2]:.4g} s)' if worst_a[1] else ''}")
        out.notes.append(note)
        if not worst_d[0] <= pos:
            out.differences.append(Difference("animation", f"{element} bone {worst_d[1]}", "pose head",
                                              f"{_fmt(worst_d[0])} apart at {worst_d[2]:.4g} s (limit {_fmt(pos)})",
                                              worst_d[0], pos))
        if not worst_a[0] <= rot:
            out.differences.append(Difference("animation", f"{element} bone {worst_a[1]}", "pose rotation",
                                              f"{_fmt(worst_a[0])} rad apart at {worst_a[2]:.4g} s (limit {_fmt(rot)})",
                                              worst_a[0], rot))


# ------------------------------------------------------------------------------------------------------------

def compare_scenes(a: cm.Scene, b: cm.Scene, tol: float = DEFAULT_TOL, rot_tol: float = DEFAULT_ROT_TOL,
                   rest: bool = False, time_tol: float = DEFAULT_TIME_TOL, pos_tol: float | None = None) -> Comparison:
    """Every difference between A and B beyond the tolerances (`rest`: skeletons and meshes only; `pos_tol`:
    absolute position tolerance in file units for motions compared without a skeleton). Two motions without a
    model (`is_motion`) go to `compare_motions` (`pos_tol` default `DEFAULT_TOL`)."""
    if is_motion(a) and is_motion(b):
        return compare_motions(a, b, DEFAULT_TOL if pos_tol is None else pos_tol, rot_tol, time_tol=time_tol)
    out = Comparison(diagonal=diagonal(a))
    out.position_limit = tol * out.diagonal
    out.rotation_limit = rot_tol
    out.notes.append(f"tolerances: positions {_fmt(out.position_limit)} ({tol:g} × diagonal {_fmt(out.diagonal)}), "
                     f"rotations {rot_tol:g} rad")
    compare_skeletons(a.skeleton, b.skeleton, out.position_limit, rot_tol, out,
                      (a.extras.get(cm.COMPARE_KEY), b.extras.get(cm.COMPARE_KEY)))
    compare_meshes(a, b, out.position_limit, out)
    if rest:
        out.notes.append("animations: not compared (--rest)")
    else:
        compare_animations(a, b, out.position_limit, rot_tol, time_tol, out)
    return out


# ------------------------------------------------------------------------------------------------------------
# motions without a model: channel by channel

def is_motion(scene: cm.Scene) -> bool:
    """A scene that is only animations: no skeleton bones and no mesh."""
    return (scene.skeleton is None or not len(scene.skeleton)) and not scene.meshes and bool(scene.animations)


def _segments(key_times: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sample time: the key before (i), the key after (k) and the fraction between them (0 on a key, held
    before the first and after the last)."""
    i = np.clip(np.searchsorted(key_times, times, side="right") - 1, 0, len(key_times) - 1)
    k = np.minimum(i + 1, len(key_times) - 1)
    span = np.where(k > i, key_times[k] - key_times[i], 1.0)
    f = np.where(k > i, (times - key_times[i]) / span, 0.0)
    f = np.where(times <= key_times[0], 0.0, np.clip(f, 0.0, 1.0))
    return i, k, f


def _timing(track: cm.Track, key_times: np.ndarray, k: np.ndarray, f: np.ndarray, channel: int) -> np.ndarray:
    """The fraction of the way a channel has gone: `f` itself, 0/1 for STEP, or the track's MMD curve."""
    if track.interpolation == "STEP":
        return np.where(f >= 1.0, 1.0, 0.0)
    curves = (track.extras or {}).get(cm.TIMING_KEY)
    if curves is None or len(curves) != len(key_times):
        return f
    s = mmd_bezier(np.asarray(curves, np.float64)[k, channel], f)
    return np.where(f <= 0.0, 0.0, np.where(f >= 1.0, 1.0, s))


def sample_track(track: cm.Track, times: np.ndarray) -> dict[str, np.ndarray | None]:
    """Translation (T, 3), rotation (T, 4, w x y z) and scale (T, 3) of one track at `times`; None for a
    channel without keys."""
    times = np.asarray(times, np.float64)
    out: dict[str, np.ndarray | None] = {}
    for name, key_times, values, width in (("translation", track.translation_times, track.translations, 3),
                                           ("rotation", track.rotation_times, track.rotations, 4),
                                           ("scale", track.scale_times, track.scales, 3)):
        if values is None or not len(values):
            out[name] = None
            continue
        kt = np.asarray(key_times, np.float64)
        v = np.asarray(values, np.float64).reshape(len(kt), width)
        i, k, f = _segments(kt, times)
        if name == "rotation":
            out[name] = slerp(v[i], v[k], _timing(track, kt, k, f, 3))
        elif name == "translation":
            s = np.stack([_timing(track, kt, k, f, c) for c in range(3)], axis=1)
            out[name] = v[i] + (v[k] - v[i]) * s
        else:  # scale: no MMD curve
            s = np.where(f >= 1.0, 1.0, 0.0) if track.interpolation == "STEP" else f
            out[name] = v[i] + (v[k] - v[i]) * s[:, None]
    return out


def rotation_angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angles (radians) between rotations, up to the quaternion's sign; exactly 0 for equal quaternions (the
    chord formula 4·asin(|a − b| / 2), which keeps its precision near 0 where acos of the dot does not)."""
    a, b = quat_normalize(a), quat_normalize(b)
    chord = np.minimum(np.linalg.norm(a - b, axis=-1), np.linalg.norm(a + b, axis=-1))
    return 4.0 * np.arcsin(np.clip(chord / 2.0, 0.0, 1.0))


def _sample_times(*time_arrays) -> np.ndarray:
    parts = [np.asarray(t, np.float64) for t in time_arrays if t is not None and len(t)]
    times = np.unique(np.concatenate(parts)) if parts else np.zeros(1)
    times = times[np.isfinite(times)]
    if len(times) > 1:
        times = np.unique(np.concatenate([times, (times[1:] + times[:-1]) / 2]))
    return times if len(times) else np.zeros(1)


def _when(anim: cm.Animation, t: float) -> str:
    fps = (anim.extras or {}).get("fps")  # A's: both sides sample at the same times
    return f"frame {t * float(fps):.6g}" if fps else f"{t:.6g} s"


_IDENTITY = {"translation": np.zeros(3), "rotation": np.array([1.0, 0, 0, 0]), "scale": np.ones(3)}


def _channel_differences(label: str, element: str, anim: cm.Animation, times: np.ndarray, sa: dict, sb: dict,
                         limits: dict[str, float], unit: float, worst: dict, out: Comparison) -> None:
    for channel in ("translation", "rotation", "scale"):
        va, vb = sa[channel], sb[channel]
        if va is None and vb is None:
            continue
        va = np.broadcast_to(_IDENTITY[channel], (len(times), len(_IDENTITY[channel]))) if va is None else va
        vb = np.broadcast_to(_IDENTITY[channel], (len(times), len(_IDENTITY[channel]))) if vb is None else vb
        if channel == "translation":
            d = np.linalg.norm(va - vb, axis=1) / unit
        elif channel == "rotation":
            d = rotation_angles(va, vb)
        else:
            d = np.abs(va - vb).max(axis=1)
        j = _worst(d)
        if not d[j] <= worst[channel][0]:
            worst[channel] = (float(d[j]), f"{element} at {_when(anim, times[j])}")
        limit = limits[channel]
        beyond = int((~(d <= limit)).sum())
        if beyond:
            what = {"translation": "apart", "rotation": "rad apart", "scale": "apart"}[channel]
            out.differences.append(Difference(
                "animation", f"animation {label} {element}", channel,
                f"{_fmt(d[j])} {what} at {_when(anim, times[j])} (limit {_fmt(limit)}; {beyond} of {len(times)} "
                f"samples beyond it)", float(d[j]), limit))


def _pair_motions(a: list[cm.Animation], b: list[cm.Animation]):
    pairs, only_a, only_b = _match_animations(a, b)
    if len(only_a) == 1 and len(only_b) == 1 and not pairs:  # one motion per file: named after the files
        return [(only_a[0], only_b[0])], [], []
    return pairs, only_a, only_b


def compare_motions(a: cm.Scene, b: cm.Scene, pos_tol: float = DEFAULT_TOL, rot_tol: float = DEFAULT_ROT_TOL,
                    scale_tol: float = DEFAULT_SCALE_TOL, weight_tol: float = DEFAULT_WEIGHT_TOL,
                    time_tol: float = DEFAULT_TIME_TOL) -> Comparison:
    """Every difference between the animations of two motion scenes beyond the absolute tolerances (see the
    module docstring): per bone translation (`pos_tol`, file units), rotation (`rot_tol`, radians) and scale
    (`scale_tol`), per morph weight (`weight_tol`), lengths (`time_tol`, seconds). Animations pair by name, or
    the only one of each side with the other."""
    out = Comparison()
    out.position_limit, out.rotation_limit = pos_tol, rot_tol
    out.notes.append(f"tolerances: positions {pos_tol:g} file units, rotations {rot_tol:g} rad, scales "
                     f"{scale_tol:g}, morph weights {weight_tol:g}")
    pairs, only_a, only_b = _pair_motions(a.animations, b.animations)
    out.notes.append(f"animations: {len(a.animations)} in A, {len(b.animations)} in B, {len(pairs)} paired")
    _unpaired_animations(only_a, only_b, out)
    for x, y in pairs:
        _compare_motion(x, y, pos_tol, rot_tol, scale_tol, weight_tol, time_tol, out)
    return out


def _presence(kind: str, where: str, names_a, names_b, what: str, out: Comparison) -> None:
    """A difference for each name A has and B lacks ("`what`in A only"), then each B has and A lacks."""
    in_a, in_b = set(names_a), set(names_b)
    for name in names_a:
        if name not in in_b:
            out.differences.append(Difference(kind, f"{where} {name}", "presence", f"{what}in A only"))
    for name in names_b:
        if name not in in_a:
            out.differences.append(Difference(kind, f"{where} {name}", "presence", f"{what}in B only"))


def _compare_motion(x: cm.Animation, y: cm.Animation, pos_tol: float, rot_tol: float, scale_tol: float,
                    weight_tol: float, time_tol: float, out: Comparison) -> None:
    label = x.name if x.name == y.name else f"{x.name} / {y.name}"
    unit = float((x.extras or {}).get(cm.FILE_UNIT_KEY, 1.0)) or 1.0
    unit_b = float((y.extras or {}).get(cm.FILE_UNIT_KEY, 1.0)) or 1.0
    if unit_b != unit:
        out.notes.append(f"animation {label}: file units differ ({unit:g} in A, {unit_b:g} in B); positions "
                         "compared in A's")
    if not abs(x.length - y.length) <= time_tol:
        out.differences.append(Difference("animation", f"animation {label}", "length",
                                          f"{x.length:.7g} s in A, {y.length:.7g} s in B",
                                          abs(x.length - y.length), time_tol))
    tracks_a = {t.bone: t for t in x.tracks}
    tracks_b = {t.bone: t for t in y.tracks}
    _presence("animation", f"animation {label} bone", tracks_a, tracks_b, "track ", out)
    limits = {"translation": pos_tol, "rotation": rot_tol, "scale": scale_tol}
    worst = {c: (0.0, "") for c in limits}
    common = [n for n in tracks_a if n in tracks_b]
    for name in common:
        ta, tb = tracks_a[name], tracks_b[name]
        times = _sample_times(ta.translation_times, ta.rotation_times, ta.scale_times, tb.translation_times,
                              tb.rotation_times, tb.scale_times)
        _channel_differences(label, f"bone {name}", x, times, sample_track(ta, times), sample_track(tb, times),
                             limits, unit, worst, out)
    morphs_a = {t.shape_key: t for t in x.morph_tracks}
    morphs_b = {t.shape_key: t for t in y.morph_tracks}
    _presence("animation", f"animation {label} morph", morphs_a, morphs_b, "track ", out)
    worst_w = (0.0, "")
    for name in [n for n in morphs_a if n in morphs_b]:
        ma, mb = morphs_a[name], morphs_b[name]
        times = _sample_times(ma.times, mb.times)
        wa = np.interp(times, np.asarray(ma.times, np.float64), np.asarray(ma.weights, np.float64)) \
            if len(ma.times) else np.zeros(len(times))
        wb = np.interp(times, np.asarray(mb.times, np.float64), np.asarray(mb.weights, np.float64)) \
            if len(mb.times) else np.zeros(len(times))
        d = np.abs(wa - wb)
        j = _worst(d)
        if not d[j] <= worst_w[0]:
            worst_w = (float(d[j]), f"morph {name} at {_when(x, times[j])}")
        beyond = int((~(d <= weight_tol)).sum())
        if beyond:
            out.differences.append(Difference(
                "animation", f"animation {label} morph {name}", "weight",
                f"{_fmt(d[j])} apart at {_when(x, times[j])} (limit {_fmt(weight_tol)}; {beyond} of {len(times)} "
                f"samples beyond it)", float(d[j]), weight_tol))
    note = (f"animation {label}: {len(tracks_a)} bone tracks in A, {len(tracks_b)} in B, {len(common)} by name; "
            f"{len(morphs_a)} morph tracks in A, {len(morphs_b)} in B")
    for channel, unit_text in (("translation", " file units"), ("rotation", " rad"), ("scale", "")):
        value, where = worst[channel]
        note += f"; largest {channel} difference {_fmt(value)}{unit_text}{f' ({where})' if where else ''}"
    note += f"; largest morph weight difference {_fmt(worst_w[0])}{f' ({worst_w[1]})' if worst_w[1] else ''}"
    out.notes.append(note)
