"""Urho3D-convention models generated for the tests (records built directly from the layout tables):
a 100-bone, 4-weight tube and a UMD3 model with morphs."""
from __future__ import annotations

import numpy as np

from skinbridge.core import skinning
from skinbridge.core.transforms import matrix_to_trs, trs_to_matrix
from skinbridge.io_urhox.model import convert, umd2
from skinbridge.io_urhox.model.umd2 import SEM, TYPE, VertexElement


# The skinned vertex: position, normal, uv, 4 bone weights and their 4 bone indices.
SKINNED = [VertexElement(TYPE["VECTOR3"], SEM["POSITION"], 0), VertexElement(TYPE["VECTOR3"], SEM["NORMAL"], 0),
           VertexElement(TYPE["VECTOR2"], SEM["TEXCOORD"], 0), VertexElement(TYPE["VECTOR4"], SEM["BLENDWEIGHTS"], 0),
           VertexElement(TYPE["UBYTE4"], SEM["BLENDINDICES"], 0)]


def skinned_vertices(pos, normals, uv, weights, joints) -> np.ndarray:
    """Vertex records of the SKINNED elements."""
    v = np.zeros(len(pos), umd2.vertex_dtype(SKINNED))
    v["POSITION0"] = pos
    v["NORMAL0"] = normals
    v["TEXCOORD0"] = uv
    v["BLENDWEIGHTS0"] = weights
    v["BLENDINDICES0"] = joints
    return v


def one_mesh(m: umd2.Model, buffer: umd2.VertexBuffer, pos: np.ndarray, tris: list, bone_map: np.ndarray) -> umd2.Model:
    """`m` with the one vertex buffer `buffer` (positions `pos`), the triangles `tris` as one 16-bit index buffer
    drawn whole by one geometry of one LOD (bone map `bone_map`), and the bounding box and centre of `pos`."""
    idx = np.array(tris, dtype=np.uint16).reshape(-1)
    m.vertex_buffers = [buffer]
    m.index_buffers = [umd2.IndexBuffer(2, idx)]
    m.geometries = [umd2.Geometry(bone_map, [umd2.LodLevel(0.0, 0, 0, 0, 0, len(idx))])]
    m.bbox_min = pos.min(0).astype(np.float32)
    m.bbox_max = pos.max(0).astype(np.float32)
    m.centers = pos.mean(0, keepdims=True).astype(np.float32)
    return m


def _axis_angle(axis, radians):
    v = np.asarray(axis, dtype=np.float64)
    v = v / np.linalg.norm(v)
    return np.array([np.cos(radians / 2), *(np.sin(radians / 2) * v)])


def _skeleton(binds: np.ndarray, parents: list[int], names: list[str]) -> list[umd2.BoneRecord]:
    bones = []
    for i, p in enumerate(parents):
        local = binds[i] if p == i else np.linalg.inv(binds[p]) @ binds[i]
        t, q, s = matrix_to_trs(local)
        offset = np.linalg.inv(binds[i])[:3, :].reshape(-1)
        bones.append(umd2.BoneRecord(names[i], p, t.astype(np.float32), q.astype(np.float32), s.astype(np.float32),
                                     offset.astype(np.float32)))
    return bones


def many_bones_model(n_bones: int = 100, rings_per_bone: int = 2, seed: int = 5) -> umd2.Model:
    """UMDL, left-handed Y up: a chain of `n_bones` bones along +Y (bind frames turned a little), and a
    hexagonal tube around it whose every vertex carries 4 weights on the 4 bones nearest its ring."""
    rng = np.random.default_rng(seed)
    step = 0.1
    binds = np.array([trs_to_matrix((0.05 * np.sin(i), i * step, 0.0), _axis_angle((0.3, 1, 0.2), 0.1 * i),
                                    np.ones(3)) for i in range(n_bones)])
    parents = [0] + list(range(n_bones - 1))
    bones = _skeleton(binds, parents, [f"bone{i:03d}" for i in range(n_bones)])
    rings = n_bones * rings_per_bone
    sides = 6
    angle = np.arange(sides) * 2 * np.pi / sides
    pos, joints, weights = [], [], []
    for r in range(rings):
        y = r * step / rings_per_bone
        centre = int(round(y / step))
        ring_pos = np.stack([0.2 * np.cos(angle), np.full(sides, y), 0.2 * np.sin(angle)], axis=1)
        pos.append(ring_pos + rng.normal(0, 0.01, ring_pos.shape))
        near = np.clip(centre + np.array([-1, 0, 1, 2]), 0, n_bones - 1)
        near = np.unique(near)
        while len(near) < 4:  # at the chain's ends: other distinct bones
            near = np.unique(np.r_[near, rng.integers(0, n_bones, 4 - len(near))])
        for _ in range(sides):
            w = rng.uniform(0.1, 1.0, 4)
            joints.append(rng.permutation(near))
            weights.append(w / w.sum())
    pos = np.concatenate(pos)
    nrm = pos * np.array([1, 0, 1])
    uv = np.stack([np.tile(np.arange(sides) / sides, rings), np.repeat(np.arange(rings) / rings, sides)], 1)
    v = skinned_vertices(pos, nrm / np.linalg.norm(nrm, axis=1, keepdims=True), uv, np.array(weights),
                         np.array(joints))
    tris = []
    for r in range(rings - 1):
        for s in range(sides):
            a, b = r * sides + s, r * sides + (s + 1) % sides
            c, d = a + sides, b + sides
            tris += [(a, c, b), (b, c, d)]  # clockwise seen from outside (left-handed files)
    m = umd2.Model(magic="UMDL")
    m.bones = bones
    return one_mesh(m, umd2.VertexBuffer(SKINNED, v, legacy_mask=0x30B), pos, tris, np.zeros(0, np.uint32))


MORPHS = [("Smile", 0.0, umd2.MORPH_POSITION), ("Blink", 0.25, umd2.MORPH_POSITION | umd2.MORPH_NORMAL),
          ("Puff", 1.0, umd2.MORPH_POSITION | umd2.MORPH_NORMAL | umd2.MORPH_TANGENT)]


def morph_model(seed: int = 11) -> umd2.Model:
    """UMD3 version 2 (morph default weights): a static 8×8 grid with three morphs on parts of it, one of them
    split over two buffers of the same vertex buffer; the morph range covers every morphed vertex."""
    rng = np.random.default_rng(seed)
    n = 8
    xs, zs = np.meshgrid(np.linspace(-1, 1, n), np.linspace(-1, 1, n))
    pos = np.stack([xs.ravel(), np.zeros(n * n), zs.ravel()], axis=1)
    elements = [VertexElement(TYPE["VECTOR3"], SEM["POSITION"], 0), VertexElement(TYPE["VECTOR3"], SEM["NORMAL"], 0),
                VertexElement(TYPE["VECTOR2"], SEM["TEXCOORD"], 0), VertexElement(TYPE["VECTOR4"], SEM["TANGENT"], 0)]
    v = np.zeros(len(pos), umd2.vertex_dtype(elements))
    v["POSITION0"] = pos
    v["NORMAL0"] = (0, 1, 0)
    v["TEXCOORD0"] = (pos[:, [0, 2]] + 1) / 2
    v["TANGENT0"] = (1, 0, 0, 1)
    tris = []
    for r in range(n - 1):
        for c in range(n - 1):
            a = r * n + c
            tris += [(a, a + n, a + 1), (a + 1, a + n, a + n + 1)]
    m = one_mesh(umd2.Model(magic="UMD3", version=2),
                 umd2.VertexBuffer(elements, v, morph_range_start=3, morph_range_count=len(pos) - 3), pos, tris,
                 np.zeros(0, np.uint32))
    for k, (name, weight, mask) in enumerate(MORPHS):
        chosen = np.sort(rng.choice(np.arange(3, len(pos)), 12 + 4 * k, replace=False))
        halves = [chosen] if k != 1 else [chosen[:6], chosen[6:]]
        buffers = []
        for part in halves:
            rec = np.zeros(len(part), umd2.morph_dtype(mask))
            rec["index"] = part
            rec["position"] = rng.normal(0, 0.1, (len(part), 3))
            if mask & umd2.MORPH_NORMAL:
                rec["normal"] = rng.normal(0, 0.05, (len(part), 3))
            if mask & umd2.MORPH_TANGENT:
                rec["tangent"] = rng.normal(0, 0.05, (len(part), 3))
            buffers.append(umd2.MorphBuffer(0, mask, rec))
        m.morphs.append(umd2.Morph(name, buffers, weight))
    return m


def initial_pose_positions(model) -> np.ndarray:
    """The first vertex buffer's positions (file axes) skinned by core skinning at the model's initial bone
    transforms, the blend indices read through the first geometry's bone mapping (every geometry shares it)."""
    parents = [-1 if b.parent == i else b.parent for i, b in enumerate(model.bones)]
    world = skinning.world_matrices(parents, trs_to_matrix([b.position for b in model.bones],
                                                           [b.rotation for b in model.bones],
                                                           [b.scale for b in model.bones]))
    bind = np.array([np.linalg.inv(convert.offset_to_matrix(b.offset)) for b in model.bones])
    v = model.vertex_buffers[0].vertices
    joints = v["BLENDINDICES0"].astype(np.int64)
    mapping = model.geometries[0].bone_mapping.astype(np.int64)
    assert all(np.array_equal(g.bone_mapping, mapping) for g in model.geometries)
    if len(mapping):
        joints = mapping[joints]
    return skinning.skin(v["POSITION0"], joints, v["BLENDWEIGHTS0"], skinning.skin_matrices(world, bind))

