"""Two UMD2 models deform alike: both posed by the same bone rotations (by bone name), skinned by
core/skinning.py, and their LOD-0 triangles paired by rest corners; for the 100-bone split and the files written
through Blender (item 3 of the Urho3D breadth tests)."""
from __future__ import annotations

import numpy as np

from skinbridge.core import skinning
from skinbridge.core.transforms import quat_multiply, trs_to_matrix
from skinbridge.io_urhox.model import convert, umd2


def pose_deltas(names, seed=9) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for n in names:
        axis = rng.normal(size=3)
        a = rng.uniform(0.1, 0.6) / 2
        out[n] = np.r_[np.cos(a), np.sin(a) * axis / np.linalg.norm(axis)]
    return out


def posed_triangles(model: umd2.Model, deltas: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(rest, posed) corner positions (T, 3, 3) of every LOD-0 triangle, in file space, skinned with
    core/skinning.py at the file's initial pose turned by `deltas` (per bone name)."""
    parents = [-1 if b.parent == i else b.parent for i, b in enumerate(model.bones)]
    rot = [quat_multiply(b.rotation, deltas.get(b.name, [1, 0, 0, 0])) for b in model.bones]
    world = skinning.world_matrices(parents, trs_to_matrix([b.position for b in model.bones], rot,
                                                           [b.scale for b in model.bones]))
    bind = np.array([np.linalg.inv(convert.offset_to_matrix(b.offset)) for b in model.bones])
    mats = skinning.skin_matrices(world, bind)
    rest, posed = [], []
    for g in model.geometries:
        lod = g.lods[0]
        vb = model.vertex_buffers[lod.vertex_buffer].vertices
        idx = model.index_buffers[lod.index_buffer].indices[lod.index_start:lod.index_start + lod.index_count]
        local = vb["BLENDINDICES0"][idx].astype(np.int64)
        glob = g.bone_mapping.astype(np.int64)[local] if len(g.bone_mapping) else local
        p = vb["POSITION0"][idx].astype(np.float64)
        rest.append(p.reshape(-1, 3, 3))
        posed.append(skinning.skin(p, glob, vb["BLENDWEIGHTS0"][idx], mats).reshape(-1, 3, 3))
    return np.concatenate(rest), np.concatenate(posed)


def match_triangles(rest_a: np.ndarray, rest_b: np.ndarray) -> np.ndarray:
    """For each triangle of a, the triangle of b with the nearest rest corners (files written through Blender
    differ from their source by float32 rounding)."""
    fa = rest_a.reshape(len(rest_a), -1)
    fb = rest_b.reshape(len(rest_b), -1)
    out = np.empty(len(fa), np.int64)
    for s in range(0, len(fa), 256):
        d = ((fa[s:s + 256, None, :] - fb[None, :, :]) ** 2).sum(axis=2)
        out[s:s + 256] = d.argmin(axis=1)
    return out


def assert_same_deformation(a: umd2.Model, b: umd2.Model, tol: float, deltas=None) -> float:
    """Both files posed alike (bone rotations by name) and skinned by core/skinning.py; triangles matched by
    their rest corners. Returns the largest posed difference over the bounding-box diagonal."""
    deltas = pose_deltas([x.name for x in a.bones]) if deltas is None else deltas
    rest_a, posed_a = posed_triangles(a, deltas)
    rest_b, posed_b = posed_triangles(b, deltas)
    assert rest_a.shape == rest_b.shape
    flat = rest_a.reshape(-1, 3)
    diag = float(np.linalg.norm(flat.max(0) - flat.min(0)))
    match = match_triangles(rest_a, rest_b)
    assert len(np.unique(match)) == len(match)
    assert np.abs(rest_a - rest_b[match]).max() <= 1e-6 * diag
    if deltas:
        assert np.abs(posed_a - rest_a).max() > 0.05 * diag  # the pose really moves the mesh
    err = float(np.abs(posed_a - posed_b[match]).max()) / diag
    assert err <= tol
    return err
