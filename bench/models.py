"""Synthetic benchmark models, built in code (numpy + core model only, no bpy).

Each model is a closed tube (a cylinder of `rows` rings of `cols` vertices, plus one seam column that repeats
the first column's positions with u = 1, as a UV seam does in a real character), skinned to a skeleton whose
bones stand along the tube. A vertex is weighted to four distinct bones near its ring, with random float32
weights summing to 1 (so nearly every weight value is distinct, the worst case for vertex groups). The action
keys every bone on every frame in translation, rotation and scale.

    S   28,000 vertices, 200 bones, 8 morphs, 250 frames
    L   200,000 vertices, 100 bones, 250 frames
    XL  1,000,000 vertices, 300 bones, 250 frames
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import model as cm
from ..core.transforms import quat_normalize

FPS = 24.0  # Blender's default scene rate: key times fall on whole frames, so no importer resamples


@dataclass(frozen=True)
class Spec:
    name: str
    rows: int
    cols: int  # vertices per ring, the seam column included
    bones: int
    morphs: int = 0
    frames: int = 250

    @property
    def vertices(self) -> int:
        return self.rows * self.cols


SIZES = {
    "S": Spec("S", rows=140, cols=200, bones=200, morphs=8),
    "L": Spec("L", rows=400, cols=500, bones=100),
    "XL": Spec("XL", rows=1000, cols=1000, bones=300),
}


def _tube(spec: Spec) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Positions (V, 3), normals (V, 3), UVs (V, 2) and triangles (T, 3) of the tube, counter-clockwise."""
    rows, cols = spec.rows, spec.cols
    u = np.arange(cols) / (cols - 1)  # the last column is the seam: angle 2π, same place as column 0
    v = np.arange(rows) / (rows - 1)
    angle = 2 * np.pi * u
    height = 2.0 * v
    radius = 0.25 + 0.03 * np.sin(6 * np.pi * v)
    x = radius[:, None] * np.cos(angle)[None, :]
    y = radius[:, None] * np.sin(angle)[None, :]
    z = np.broadcast_to(height[:, None], (rows, cols))
    pos = np.stack([x, y, z], axis=-1).reshape(-1, 3).astype(np.float32)
    nrm = np.stack([np.cos(angle)[None, :].repeat(rows, 0), np.sin(angle)[None, :].repeat(rows, 0),
                    np.zeros((rows, cols))], axis=-1).reshape(-1, 3).astype(np.float32)
    uv = np.stack(np.broadcast_arrays(u[None, :], v[:, None]), axis=-1).reshape(-1, 2).astype(np.float32)
    a = (np.arange(rows - 1)[:, None] * cols + np.arange(cols - 1)[None, :]).ravel()
    tris = np.concatenate([np.stack([a, a + 1, a + cols + 1], 1), np.stack([a, a + cols + 1, a + cols], 1)])
    return pos, nrm, uv, tris.astype(np.int32)


def _skeleton(spec: Spec) -> cm.Skeleton:
    """Bones up the tube's axis; bone i's parent is (i - 1) // 3, a tree about five levels deep."""
    skel = cm.Skeleton("Rig")
    for i in range(spec.bones):
        bind = np.eye(4)
        bind[:3, 3] = (0.0, 0.0, 2.0 * i / spec.bones)
        skel.bones.append(cm.Bone(f"bone{i:03d}", (i - 1) // 3 if i else -1, bind, np.zeros(3),
                                  np.array([1.0, 0, 0, 0]), np.ones(3)))
    skel.set_rest_from_binds()
    return skel


def _skin(spec: Spec, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Four distinct bones per vertex, near its ring, in a random slot order; random float32 weights."""
    ring = np.repeat(np.arange(spec.rows), spec.cols)
    base = (ring * spec.bones) // spec.rows
    window = rng.permuted(np.tile(np.arange(4), (spec.vertices, 1)), axis=1)
    joints = ((base[:, None] + window) % spec.bones).astype(np.int32)
    weights = rng.random((spec.vertices, 4), dtype=np.float32) + np.float32(0.01)
    weights /= weights.sum(axis=1, keepdims=True)
    return joints, weights.astype(np.float32)


def _animation(spec: Spec, skel: cm.Skeleton, rng: np.random.Generator) -> cm.Animation:
    times = np.arange(spec.frames) / FPS
    anim = cm.Animation("Wave", (spec.frames - 1) / FPS)
    for b in skel.bones:
        t = b.rest_translation[None, :] + np.cumsum(rng.normal(0, 0.002, (spec.frames, 3)), axis=0)
        walk = np.cumsum(rng.normal(0, 0.01, (spec.frames, 3)), axis=0)
        r = quat_normalize(np.concatenate([np.ones((spec.frames, 1)), walk], axis=1))
        s = 1 + 0.05 * np.sin(times[:, None] * np.array([1.0, 2.0, 3.0]) + rng.random(3))
        anim.tracks.append(cm.Track(b.name, times, t, times.copy(), r, times.copy(), s))
    return anim


def _morphs(spec: Spec, pos: np.ndarray, nrm: np.ndarray, rng: np.random.Generator) -> list[cm.ShapeKey]:
    """Each morph pushes a band of rings outwards (about an eighth of the vertices)."""
    ring = np.repeat(np.arange(spec.rows), spec.cols)
    keys = []
    for k in range(spec.morphs):
        lo = rng.integers(0, spec.rows - spec.rows // 8)
        band = (ring >= lo) & (ring < lo + spec.rows // 8)
        moved = pos.astype(np.float64)
        moved[band] += 0.02 * nrm[band] * rng.random((int(band.sum()), 1))
        keys.append(cm.ShapeKey(f"morph{k}", moved.astype(np.float32)))
    return keys


def build(size: str, seed: int = 11) -> cm.Scene:
    """The core Scene of model `size` (S, L or XL), with its one animation."""
    spec = SIZES[size]
    rng = np.random.default_rng(seed)
    pos, nrm, uv, tris = _tube(spec)
    skel = _skeleton(spec)
    joints, weights = _skin(spec, rng)
    mesh = cm.Mesh(f"Bench{size}", pos, tris, normals=nrm, uvs=[("UVMap", uv)], joints=joints, weights=weights,
                   material_indices=np.zeros(len(tris), np.int32), materials=[0])
    mesh.shape_keys = _morphs(spec, pos, nrm, rng)
    scene = cm.Scene(f"Bench{size}", skel, [mesh], [cm.Material("Skin", base_color=(0.8, 0.6, 0.5, 1.0))])
    scene.animations = [_animation(spec, skel, rng)]
    return scene


def describe(scene: cm.Scene) -> str:
    m = scene.meshes[0]
    distinct = len(np.unique(m.weights[m.weights > 0]))
    frames = len(scene.animations[0].tracks[0].translation_times) if scene.animations else 0
    return (f"{m.vertex_count:,} vertices, {len(m.triangles):,} triangles, {len(scene.skeleton.bones)} bones, "
            f"{m.weights.shape[1]} weights/vertex ({distinct:,} distinct), {len(m.shape_keys)} morphs, "
            f"{frames} frames")
