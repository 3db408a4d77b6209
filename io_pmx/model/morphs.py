"""What MMD morphs do at given weights, on PMX records in MMD axes and units (no bpy).

docs/mmd.md §4.7 ("Morph sliders"). The slider of each morph has a weight; `effective_weights` adds what
group and flip morphs pass on to their members, and the other functions give the effect of every morph kind
at those weights:

* group (0): each member gets weight × its ratio (groups may not hold groups; a deeper chain is cut at
  `MAX_DEPTH` and never loops);
* flip (9, PMX 2.1): one member, index int((count + 1) · weight) − 1 (none below 0; weight 1 picks the
  last member), gets its ratio;
* bone (2): translation × weight added to the bone's own, rotation slerp(identity, q, weight) after it, in
  the bone's parent axes (MMD bones have no orientation), several morphs composed in file order;
* material (8): per field, multiply (op 0) scales by 1 + (value − 1) · weight, add (op 1) adds value ×
  weight; the products of all multiply morphs apply before the sum of the adds; material −1 is every
  material;
* UV (3) and additional UV 1–4 (4–7): offset × weight added to the vertex's (u, v, z, w) of that set;
* vertex (1): Blender's shape keys do it; impulse (10) acts on the physics only (kept, shown, not played).
"""
from __future__ import annotations

import numpy as np

from ...core.transforms import quat_multiply_xyzw
from . import pmx

MAX_DEPTH = 4  # group → flip → member: a legal chain is 2 deep; anything deeper is cut, never looped
MATERIAL_FIELDS = ("diffuse", "specular", "specular_power", "ambient", "edge_color", "edge_size",
                   "texture_tint", "sphere_tint", "toon_tint")
UV_KINDS = tuple(range(pmx.MORPH_UV, pmx.MORPH_UV4 + 1))


def effective_weights(morphs: list[pmx.PmxMorph], weights) -> np.ndarray:
    """Per morph, its slider weight plus what group and flip morphs pass on to it."""
    own = np.asarray(weights, np.float64).reshape(len(morphs))
    out = own.copy()
    n = len(morphs)

    def pass_on(k: int, w: float, depth: int) -> None:
        morph = morphs[k]
        if depth >= MAX_DEPTH or w == 0 or morph.kind not in (pmx.MORPH_GROUP, pmx.MORPH_FLIP):
            return
        o = morph.offsets
        if morph.kind == pmx.MORPH_GROUP:
            pairs = zip(o["morph"].tolist(), o["ratio"].tolist())
        else:
            pick = min(int((len(o) + 1) * w) - 1, len(o) - 1)  # weight 1 picks the last member
            pairs = [(int(o["morph"][pick]), float(o["ratio"][pick]))] if 0 <= pick < len(o) else []
            w = 1.0
        for member, ratio in pairs:
            if 0 <= member < n and member != k:
                out[member] += w * ratio
                pass_on(member, w * ratio, depth + 1)

    for k in range(n):
        pass_on(k, float(own[k]), 0)
    return out


def _slerp_from_identity(q_xyzw: np.ndarray, w: float) -> np.ndarray:
    q = np.asarray(q_xyzw, np.float64)
    norm = float(np.linalg.norm(q))
    if norm == 0:  # an all-zero quaternion is identity, as MMD reads it
        return np.array([0.0, 0, 0, 1])
    q = q / norm
    if q[3] < 0:
        q = -q
    angle = 2 * np.arccos(min(1.0, q[3]))
    s = np.sin(angle / 2)
    if s < 1e-12:
        return np.array([0.0, 0, 0, 1])
    axis = q[:3] / s
    half = angle * w / 2
    return np.concatenate([axis * np.sin(half), [np.cos(half)]])


def bone_offsets(morphs: list[pmx.PmxMorph], weights: np.ndarray, n_bones: int
                 ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Bone index → (translation (3,), rotation x,y,z,w (4,)) in MMD axes and units, for the bones some bone
    morph with a non-zero weight moves."""
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for morph, w in zip(morphs, weights):
        if morph.kind != pmx.MORPH_BONE or w == 0:
            continue
        o = morph.offsets
        for b, t, q in zip(o["bone"].tolist(), o["translation"], o["rotation"]):
            if not 0 <= b < n_bones:
                continue
            t0, q0 = out.get(b, (np.zeros(3), np.array([0.0, 0, 0, 1])))
            out[b] = (t0 + np.asarray(t, np.float64) * w, quat_multiply_xyzw(q0, _slerp_from_identity(q, float(w))))
    return out


def material_values(materials: list[pmx.PmxMaterial], morphs: list[pmx.PmxMorph], weights: np.ndarray
                    ) -> list[dict[str, np.ndarray]]:
    """Per material, each field of MATERIAL_FIELDS after the material morphs (texture, sphere and toon tints
    start at 1, as MMD multiplies the textures by them)."""
    n = len(materials)
    base = []
    for m in materials:
        values = {f: np.atleast_1d(np.asarray(getattr(m, f), np.float64)).copy()
                  for f in MATERIAL_FIELDS if not f.endswith("_tint")}
        values.update({f: np.ones(4) for f in MATERIAL_FIELDS if f.endswith("_tint")})
        base.append(values)
    mul = [{f: np.ones_like(v) for f, v in b.items()} for b in base]
    add = [{f: np.zeros_like(v) for f, v in b.items()} for b in base]
    for morph, w in zip(morphs, weights):
        if morph.kind != pmx.MORPH_MATERIAL or w == 0:
            continue
        for rec in morph.offsets:
            targets = range(n) if int(rec["material"]) < 0 else [int(rec["material"])]
            for t in targets:
                if not 0 <= t < n:
                    continue
                for f in MATERIAL_FIELDS:
                    value = np.atleast_1d(np.asarray(rec[f], np.float64))
                    if int(rec["operation"]) == 0:
                        mul[t][f] *= 1 + (value - 1) * w
                    else:
                        add[t][f] += value * w
    return [{f: base[t][f] * mul[t][f] + add[t][f] for f in MATERIAL_FIELDS} for t in range(n)]


def uv_offsets(morphs: list[pmx.PmxMorph], weights: np.ndarray, n_vertices: int) -> dict[int, np.ndarray]:
    """Morph kind (3 UV, 4-7 additional UV 1-4) → (n_vertices, 4) offsets in the file's UV axes, for the
    kinds some morph with a non-zero weight moves."""
    out: dict[int, np.ndarray] = {}
    for morph, w in zip(morphs, weights):
        if morph.kind not in UV_KINDS or w == 0:
            continue
        o = morph.offsets
        idx = o["vertex"].astype(np.int64)
        ok = (idx >= 0) & (idx < n_vertices)
        acc = out.setdefault(morph.kind, np.zeros((n_vertices, 4)))
        np.add.at(acc, idx[ok], o["offset"][ok].astype(np.float64) * w)
    return out
