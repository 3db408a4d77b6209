"""Urho3D's own evaluation of a `.mdl` + `.ani`, written here from the engine's rules and independent of
io_urhox's mapping: only the codecs' records are used.

A bone's local transform is T·R·S of its track's keys (position and scale interpolated linearly, rotation by
shortest-arc slerp), channels the track lacks and bones without a track keep the model's initial transform;
world = parent world · local; skin matrix = world · offset matrix; a vertex is Σ weight · skin · position.
Everything stays in the file's axes; `urho3d_to_blender` is the left-handed Y-up → Blender point map. Checked by
tests/urho/test_urho3d_engine.py; used by the Urho3D export and Blender tests."""
from __future__ import annotations

import struct

import numpy as np

from support.quaternion import slerp


def urho3d_to_blender(p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, np.float64)
    return p[..., [0, 2, 1]]


def urhox_to_blender(p: np.ndarray) -> np.ndarray:
    """UrhoX's glTF axes (right-handed, Y up) → Blender: (x, y, z) → (x, −z, y)."""
    p = np.asarray(p, np.float64)
    return np.stack([p[..., 0], -p[..., 2], p[..., 1]], axis=-1)


def animation_header(data: bytes) -> tuple[str, float, int]:
    """What Urho3D's `Animation::BeginLoad` reads first of a `.ani`, whatever layout the file has: the id
    "UANI", the animation's name (a C string), its length (f32) and its track count (u32). A UrhoX UANI v2 file
    reads as the one-character name "\\x02" and a track count made of its length's and count's bytes."""
    assert data[:4] == b"UANI", data[:4]
    end = data.index(b"\0", 4)
    length, count = struct.unpack_from("<fI", data, end + 1)
    return data[4:end].decode("utf-8", "replace"), float(length), int(count)


def _quat_matrix(q: np.ndarray) -> np.ndarray:
    w, x, y, z = np.asarray(q, np.float64) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _at(times: np.ndarray, t: float) -> tuple[int, int, float]:
    if t <= times[0] or len(times) == 1:
        return 0, 0, 0.0
    if t >= times[-1]:
        return len(times) - 1, len(times) - 1, 0.0
    i = int(np.searchsorted(times, t, side="right")) - 1
    return i, i + 1, (t - times[i]) / (times[i + 1] - times[i])


def trs(t, q, s) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = _quat_matrix(q) * np.asarray(s, np.float64)[None, :]
    m[:3, 3] = t
    return m


class Engine:
    """One model's skeleton and skinned vertices, from `umd2` records."""

    def __init__(self, model):
        self.model = model
        n = len(model.bones)
        self.names = [b.name for b in model.bones]
        self.parents = [-1 if b.parent == i else b.parent for i, b in enumerate(model.bones)]
        self.initial = [(np.asarray(b.position, np.float64), np.asarray(b.rotation, np.float64),
                         np.asarray(b.scale, np.float64)) for b in model.bones]
        self.offsets = np.tile(np.eye(4), (n, 1, 1))
        for i, b in enumerate(model.bones):
            self.offsets[i, :3, :] = np.asarray(b.offset, np.float64).reshape(3, 4)
        vb = model.vertex_buffers[0]
        self.positions = vb.vertices["POSITION0"].astype(np.float64)
        if n and "BLENDWEIGHTS0" in vb.vertices.dtype.names:
            self.weights = vb.vertices["BLENDWEIGHTS0"].astype(np.float64)
            local = vb.vertices["BLENDINDICES0"].astype(np.int64)
            self.joints = local.copy()
            for g in model.geometries:  # a geometry's blend indices go through its bone mapping
                if not len(g.bone_mapping):
                    continue
                lod = g.lods[0]
                ib = model.index_buffers[lod.index_buffer].indices
                used = np.unique(ib[lod.index_start:lod.index_start + lod.index_count].astype(np.int64))
                self.joints[used] = np.asarray(g.bone_mapping, np.int64)[local[used]]
        else:
            self.weights = self.joints = None

    def bind_is_clean(self, i: int, tol: float = 1e-5) -> bool:
        """A bind that is a rotation with uniform scale (its columns orthogonal and of one length)."""
        bind = np.linalg.inv(self.offsets[i])[:3, :3]
        g = bind.T @ bind
        return bool(np.abs(g - np.eye(3) * np.trace(g) / 3).max() <= tol * np.trace(g) / 3)

    def local(self, i: int, track, t: float) -> np.ndarray:
        pos, rot, scale = self.initial[i]
        if track is not None and track.key_count:
            times = np.asarray(track.times, np.float64)
            a, b, f = _at(times, t)
            if track.positions is not None:
                pa, pb = track.positions[a].astype(np.float64), track.positions[b].astype(np.float64)
                pos = pa + (pb - pa) * f
            if track.rotations is not None:
                rot = slerp(track.rotations[a].astype(np.float64), track.rotations[b].astype(np.float64), f)
            if track.scales is not None:
                sa, sb = track.scales[a].astype(np.float64), track.scales[b].astype(np.float64)
                scale = sa + (sb - sa) * f
        return trs(pos, rot, scale)

    def worlds(self, animation, t: float) -> np.ndarray:
        tracks = {tr.name: tr for tr in animation.tracks} if animation is not None else {}
        n = len(self.names)
        out = np.zeros((n, 4, 4))
        done = np.zeros(n, bool)

        def world(i):
            if not done[i]:
                local = self.local(i, tracks.get(self.names[i]), t)
                p = self.parents[i]
                out[i] = local if p < 0 else world(p) @ local
                done[i] = True
            return out[i]

        for i in range(n):
            world(i)
        return out

    def skin(self, animation, t: float) -> np.ndarray:
        """Skinned vertex positions (file axes) at time t."""
        skin = self.worlds(animation, t) @ self.offsets
        out = np.zeros_like(self.positions)
        p = np.concatenate([self.positions, np.ones((len(self.positions), 1))], axis=1)
        for k in range(self.weights.shape[1]):
            w = self.weights[:, k]
            live = w > 0
            m = skin[self.joints[live, k]]
            out[live] += w[live, None] * np.einsum("nij,nj->ni", m[:, :3, :], p[live])
        return out


def diagonal(points: np.ndarray) -> float:
    return float(np.linalg.norm(np.ptp(points, axis=0)))


def correspondence(a_rest: np.ndarray, b_rest: np.ndarray, tol: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (b vertex, a vertex) of two models whose rest positions agree within `tol` of the diagonal (an
    export may split or reorder vertices, and Blender's evaluation of the rest pose moves them by float round
    off); every vertex of b must have a partner in a."""
    a_rest = np.asarray(a_rest, np.float64)
    b_rest = np.asarray(b_rest, np.float64)
    limit = tol * diagonal(a_rest)
    bs, as_ = [], []
    for start in range(0, len(b_rest), 256):
        chunk = b_rest[start:start + 256]
        d = np.linalg.norm(chunk[:, None, :] - a_rest[None, :, :], axis=2)
        assert d.min(axis=1).max() <= limit, d.min(axis=1).max()
        bi, ai = np.nonzero(d <= limit)
        bs.append(bi + start)
        as_.append(ai)
    return np.concatenate(bs), np.concatenate(as_)


def matched_difference(pairs: tuple[np.ndarray, np.ndarray], a_posed: np.ndarray, b_posed: np.ndarray) -> float:
    """Largest distance between a posed vertex of b and the nearest posed vertex among its partners in a."""
    bi, ai = pairs
    d = np.linalg.norm(b_posed[bi] - a_posed[ai], axis=1)
    best = np.full(len(b_posed), np.inf)
    np.minimum.at(best, bi, d)
    return float(best.max())
