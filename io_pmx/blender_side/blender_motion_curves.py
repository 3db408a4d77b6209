"""F-curves of VMD motions: channel keys written with their Bézier handles and key types (`new_fcurve`), read
back (`Curve`: values, and segments as Bézier control points), checked against what import made of the file
(`unchanged`, `unchanged_channel`), and the whole 30-fps frames a VMD holds keys on (`whole_frames`).
"""
from __future__ import annotations

import bpy
import numpy as np

from ...blender import compat
from ..motion import vmd
from ..motion import channels

KEY = bpy.types.Keyframe.bl_rna.properties
INTERP = {k: v.value for k, v in KEY["interpolation"].enum_items.items()}
KEYTYPE = {k: v.value for k, v in KEY["type"].enum_items.items()}
HANDLE = {k: v.value for k, v in KEY["handle_left_type"].enum_items.items()}
WHOLE = 1e-3  # VMD frames: a Blender key this close to a whole 30-fps frame is on it


def new_fcurve(cb, path: str, index: int, group: str, ck: channels.ChannelKeys, interpolation: str = "BEZIER"):
    fc = compat.new_fcurve(cb, path, index=index, group_name=group)
    n = len(ck.x)
    kp = fc.keyframe_points
    kp.add(n)
    co = np.empty((n, 2), np.float32)
    co[:, 0], co[:, 1] = ck.x, ck.y
    kp.foreach_set("co", co.ravel())
    kp.foreach_set("interpolation", np.full(n, INTERP[interpolation], np.int32))
    if interpolation == "BEZIER":
        kp.foreach_set("handle_left_type", np.full(n, HANDLE["FREE"], np.int32))
        kp.foreach_set("handle_right_type", np.full(n, HANDLE["FREE"], np.int32))
        kp.foreach_set("handle_left", ck.hl.astype(np.float32).ravel())
        kp.foreach_set("handle_right", ck.hr.astype(np.float32).ravel())
    if ck.generated.any():
        kp.foreach_set("type", np.where(ck.generated, KEYTYPE["GENERATED"], KEYTYPE["KEYFRAME"]).astype(np.int32))
    fc.update()
    return fc


def simple_keys(x, y) -> channels.ChannelKeys:
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    return channels.ChannelKeys(x, y, np.stack([x - 1, y], 1), np.stack([x + 1, y], 1), np.zeros(len(x), bool),
                          np.arange(len(x)))


class Curve:
    def __init__(self, fc):
        kp = fc.keyframe_points
        n = len(kp)
        co, hl, hr = (np.empty(2 * n, np.float32) for _ in range(3))
        kp.foreach_get("co", co)
        kp.foreach_get("handle_left", hl)
        kp.foreach_get("handle_right", hr)
        interp, types = np.empty(n, np.int32), np.empty(n, np.int32)
        kp.foreach_get("interpolation", interp)
        kp.foreach_get("type", types)
        order = np.argsort(co[0::2], kind="stable")
        self.fc = fc
        self.x = co[0::2][order].astype(np.float64)
        self.y = co[1::2][order].astype(np.float64)
        self.hl = hl.reshape(-1, 2)[order].astype(np.float64)
        self.hr = hr.reshape(-1, 2)[order].astype(np.float64)
        self.interp = interp[order]
        self.generated = types[order] == KEYTYPE["GENERATED"]

    def value(self, x: float) -> float:
        i = np.searchsorted(self.x, x)
        if i < len(self.x) and abs(self.x[i] - x) <= 1e-6:
            return float(self.y[i])
        return float(self.fc.evaluate(x))

    def values(self, xs: np.ndarray) -> np.ndarray:
        """`value` at every x: the key's own value where a key sits there, the curve's elsewhere."""
        xs = np.asarray(xs, np.float64)
        out = np.empty(len(xs))
        i = np.searchsorted(self.x, xs)
        hit = i < len(self.x)
        hit[hit] = np.abs(self.x[i[hit]] - xs[hit]) <= 1e-6
        out[hit] = self.y[i[hit]]
        out[~hit] = [self.fc.evaluate(float(x)) for x in xs[~hit]]
        return out

    def inside(self, xa: float, xb: float) -> bool:
        """Whether a key lies strictly between frames xa and xb."""
        return bool(np.any((self.x > xa + 1e-6) & (self.x < xb - 1e-6)))

    def segment(self, xa: float, xb: float):
        """The curve on [xa, xb] as Bézier control points (4, 2); 'constant', 'other' (an easing MMD lacks), or
        None when a key lies inside."""
        if self.inside(xa, xb) or len(self.x) < 2:
            return None
        i = int(np.clip(np.searchsorted(self.x, xa + 1e-6) - 1, 0, len(self.x) - 2))
        if xa < self.x[0] - 1e-6 or xb > self.x[-1] + 1e-6:
            ya, yb = self.value(xa), self.value(xb)
            return np.array([[xa, ya], [xa + (xb - xa) / 3, ya], [xb - (xb - xa) / 3, yb], [xb, yb]])
        kind = self.interp[i]
        p0, p3 = np.array([self.x[i], self.y[i]]), np.array([self.x[i + 1], self.y[i + 1]])
        if kind == INTERP["CONSTANT"]:
            return "constant" if self.y[i] != self.y[i + 1] else np.array([p0, p0, p3, p3])
        if kind == INTERP["LINEAR"]:
            p = np.array([p0, p0 + (p3 - p0) / 3, p0 + 2 * (p3 - p0) / 3, p3])
        elif kind == INTERP["BEZIER"]:
            p = np.array([p0, self.hr[i], self.hl[i + 1], p3])
        else:
            return "other"
        if abs(xa - p0[0]) <= 1e-6 and abs(xb - p3[0]) <= 1e-6:
            return p
        ua = float(channels.solve_axis(p, 0, np.array([xa]))[0]) if xa > p0[0] + 1e-6 else 0.0
        ub = float(channels.solve_axis(p, 0, np.array([xb]))[0]) if xb < p3[0] - 1e-6 else 1.0
        return channels.split_bezier(p, ua, ub)


    SEGMENT, KEY_INSIDE, UNHELD = 0, 1, 2  # `segments` status: Bézier, None, 'constant' / 'other'

    def segments(self, xa: np.ndarray, xb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`segment` for many spans at once: control points (N, 4, 2) and a status per span (SEGMENT,
        KEY_INSIDE for None, UNHELD for 'constant' and 'other')."""
        return segments_of([self], xa, xb)[0]

    def _segments_uncut(self, xa: np.ndarray, xb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`segments` before the spans that start or end inside a key segment are cut out of it: (control
        points, status, which spans still need the cut)."""
        xa, xb = np.asarray(xa, np.float64), np.asarray(xb, np.float64)
        count = len(xa)
        out = np.zeros((count, 4, 2))
        status = np.full(count, self.SEGMENT, np.int8)
        x, y, nk = self.x, self.y, len(self.x)
        if nk < 2:
            status[:] = self.KEY_INSIDE
            return out, status, np.zeros(count, bool)
        inside = np.searchsorted(x, xb - 1e-6, "left") - np.searchsorted(x, xa + 1e-6, "right") > 0
        outside = (xa < x[0] - 1e-6) | (xb > x[-1] + 1e-6)
        i = np.clip(np.searchsorted(x, xa + 1e-6) - 1, 0, nk - 2)
        kind = self.interp[i]
        p0 = np.stack([x[i], y[i]], 1)
        p3 = np.stack([x[i + 1], y[i + 1]], 1)
        d = p3 - p0
        out[:, 0], out[:, 3] = p0, p3
        out[:, 1], out[:, 2] = p0 + d / 3, p0 + 2 * d / 3  # LINEAR
        bez = kind == INTERP["BEZIER"]
        out[bez, 1], out[bez, 2] = self.hr[i[bez]], self.hl[i[bez] + 1]
        const = kind == INTERP["CONSTANT"]
        out[const, 1], out[const, 2] = p0[const], p3[const]
        status[const & (y[i] != y[i + 1])] = self.UNHELD
        status[~(bez | const | (kind == INTERP["LINEAR"]))] = self.UNHELD
        cut = (status == self.SEGMENT) & ((np.abs(xa - p0[:, 0]) > 1e-6) | (np.abs(xb - p3[:, 0]) > 1e-6))
        cut &= ~outside & ~inside
        far = outside & ~inside
        if far.any():
            ya, yb = self.values(xa[far]), self.values(xb[far])
            dx = xb[far] - xa[far]
            out[far] = np.stack([np.stack([xa[far], ya], 1), np.stack([xa[far] + dx / 3, ya], 1),
                                 np.stack([xb[far] - dx / 3, yb], 1), np.stack([xb[far], yb], 1)], 1)
            status[far] = self.SEGMENT
        status[inside] = self.KEY_INSIDE
        return out, status, cut


def segments_of(curves: list[Curve], xa: np.ndarray, xb: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """`Curve.segments` of several curves over the same spans, the Bézier cuts of all of them solved in one
    array pass."""
    xa, xb = np.asarray(xa, np.float64), np.asarray(xb, np.float64)
    parts = [c._segments_uncut(xa, xb) for c in curves]
    pcs = [out[cut] for out, _, cut in parts]
    if sum(len(p) for p in pcs):
        pc = np.concatenate(pcs)
        a_ = np.concatenate([xa[cut] for _, _, cut in parts])
        b_ = np.concatenate([xb[cut] for _, _, cut in parts])
        both = channels.solve_many(np.concatenate([pc, pc]), 0, np.concatenate([a_, b_]))
        ua = np.where(a_ > pc[:, 0, 0] + 1e-6, both[:len(pc)], 0.0)
        ub = np.where(b_ < pc[:, 3, 0] - 1e-6, both[len(pc):], 1.0)
        split = channels.split_many(pc, ua, ub)
        at = 0
        for out, _, cut in parts:
            n = int(cut.sum())
            out[cut] = split[at:at + n]
            at += n
    return [(out, status) for out, status, _ in parts]


def close(a, b, scale=1.0) -> bool:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= 2e-5 * np.maximum(scale, np.abs(b)) + 1e-6))


def unchanged(actual: Curve, expected: channels.ChannelKeys, xa: float | None, xb: float) -> bool:
    """Whether the keys of a channel in (xa, xb] (just the key at xb when xa is None) and the handles of the
    segment leading to xb are what import made."""
    tol = 1e-3

    def pick(x):
        if xa is None:
            return np.flatnonzero(np.abs(x - xb) <= tol)
        return np.flatnonzero((x > xa + tol) & (x <= xb + tol))

    ia, ie = pick(actual.x), pick(expected.x)
    if len(ia) != len(ie) or not len(ia):
        return False
    if not (close(actual.x[ia], expected.x[ie]) and close(actual.y[ia], expected.y[ie])):
        return False
    if xa is None:
        return True
    rel = lambda h, x, y, i: h[i] - np.stack([x[i], y[i]], 1)  # noqa: E731
    if not close(rel(actual.hl, actual.x, actual.y, ia), rel(expected.hl, expected.x, expected.y, ie)):
        return False
    ja = np.flatnonzero(np.abs(actual.x - xa) <= tol)
    je = np.flatnonzero(np.abs(expected.x - xa) <= tol)
    if len(ja) != 1 or len(je) != 1:
        return False
    ha = np.concatenate([ja, ia[:-1]])
    he = np.concatenate([je, ie[:-1]])
    return close(rel(actual.hr, actual.x, actual.y, ha), rel(expected.hr, expected.x, expected.y, he))


def unchanged_channel(actual: Curve | None, expected: channels.ChannelKeys, xk: np.ndarray) -> np.ndarray | None:
    """`unchanged` for every key frame `xk` at once when the whole channel is as import made it (the common case:
    keys, values and handle offsets all equal); None otherwise, and then each key is checked alone."""
    if actual is None or len(actual.x) != len(expected.x) or not len(xk):
        return None

    def offsets(c, h):
        return h - np.stack([c.x, c.y], 1)

    if not (close(actual.x, expected.x) and close(actual.y, expected.y)
            and close(offsets(actual, actual.hl), offsets(expected, expected.hl))
            and close(offsets(actual, actual.hr), offsets(expected, expected.hr))):
        return None
    tol = 1e-3
    x = np.sort(np.asarray(expected.x, np.float64))
    xk = np.asarray(xk, np.float64)
    at = np.searchsorted(x, xk + tol, "right") - np.searchsorted(x, xk - tol, "left")  # keys at each frame
    after_previous = np.searchsorted(x, np.r_[-np.inf, xk[:-1] + tol], "right")
    inside = np.searchsorted(x, xk + tol, "right") - after_previous  # keys in (previous + tol, this + tol]
    ok = np.empty(len(xk), bool)
    ok[0] = at[0] > 0
    ok[1:] = (inside[1:] > 0) & (at[:-1] == 1)
    return ok


def channelbags(act, slot):
    for layer in act.layers:
        for strip in layer.strips:
            cb = strip.channelbag(slot) if slot is not None else None
            if cb is not None:
                yield cb


def vmd_frames(x: np.ndarray, fps: float) -> np.ndarray:
    return np.asarray(x, np.float64) * vmd.FPS / fps


def whole_frames(xs: np.ndarray, fps: float) -> tuple[np.ndarray, bool]:
    """Whole VMD frames for Blender key frames: keys on a whole frame stay, a key between two is replaced by
    the whole frames around it. Returns (frames, whether any key was resampled)."""
    v = vmd_frames(xs, fps)
    r = np.round(v)
    whole = np.abs(v - r) <= WHOLE
    out = set(r[whole].astype(np.int64).tolist())
    out |= set(np.floor(v[~whole]).astype(np.int64).tolist()) | set(np.ceil(v[~whole]).astype(np.int64).tolist())
    return np.array(sorted(f for f in out if f >= 0), np.int64), bool((~whole).any())
