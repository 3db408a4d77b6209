"""Mapping between UMD2/UMDL/UMD3 records and the neutral core model, for two profiles.

Axes, stated once (`_Axes` applies them; `basis` gives the point bases, shared with the animations' mapping,
io_urhox/motion/convert.py):

* ``urhox`` (UrhoX's glb2mdl, docs/urho.md §5.2) keeps glTF axes: right-handed, Y up, counter-clockwise front faces.
  A point goes (x, y, z) → (x, −z, y) into Blender (`GLTF_TO_BLENDER`, a rotation). Bone-local axes are kept
  as the file has them, so a bone's world matrix is `A · W_file` and parent-relative transforms are unchanged
  except at the roots.
* ``urho3d`` (Urho3D's own tools): left-handed, Y up, clockwise front faces. A point goes (x, y, z) →
  (x, z, y) (`URHO3D_TO_BLENDER`, a mirror). A mirror cannot be a bone's rotation, so every bone transform is
  conjugated: `A · W_file · A⁻¹` (quaternion (w, x, y, z) → (w, −x, −z, −y), scale (sx, sz, sy)), and each
  triangle's winding is reversed ((a, b, c) ⇄ (a, c, b)). A tangent's xyz maps like a normal and its w is
  kept: the mirror flips the bitangent's handedness, and Urho3D's shaders take cross(T, N)·w where glTF and
  Blender take cross(N, T)·w, so the two sign changes cancel.

Both profiles store UV v flipped (v → 1 − v) in the core model (the files put the origin top left).
Both signed permutations are exact on float32.

Import (`to_scene`): LOD 0 of every geometry becomes one mesh per vertex buffer (file vertex i = mesh vertex i),
a geometry per material slot; on request every LOD level becomes its own mesh (`Mesh.lod_level`, `Mesh.lod_distance`).
Blend indices go through each geometry's bone mapping (empty = identity). Line lists and strips become loose
edges, strips and fans triangles. Morphs (absolute vertex indices, deltas added) become shape keys.

Export (`from_scene`): ``urhox`` writes morph count 0 (shape keys dropped with a warning naming them), every
mapping lists bones 0…N−1 and more than 64 bones are refused; collision mask 0. ``urho3d`` writes morphs,
splits a geometry that uses more than `max_bones` bones into geometries whose mappings list only the bones they
use (when every deforming bone fits, each mapping lists all bones, or all deforming bones), and gives each
bone with weighted vertices collision mask 3 with a radius and bone-local box.

The file's exact values are kept in `extras["urho"]` and written again while what they describe still holds:
a bone's offset matrix and its initial position, rotation and scale (the initial pose is the file's own data,
not derived from the bind) while the bone's bind still matches; a mesh's vertex elements, geometry centres
(per material slot) and UMDL magic (in Urho3D's axes, while the elements have a legacy mask: in a model without
bones the magic is what tells Urho3D's axes from UrhoX's), edited or not; its vertex records (given by the
Blender side while its vertices are the file's one to one) per vertex and field where Blender still holds
their values (file_rows.py), and with them the bounds, LOD levels, bone mappings and collision data as far as
the edit leaves them true. So import → export keeps the bytes, and an edit changes only what it touched.
"""
from __future__ import annotations

import numpy as np

from ...core import model as cm
from ...core import names
from ...core.errors import ExportError, FormatError, quiet_float_errors
from ...core.transforms import (
    BLENDER_TO_GLTF, GLTF_TO_BLENDER, affine_inverse, matrix_to_trs, quat_angle, trs_to_matrix,
)
from . import file_rows, umd2
from .umd2 import SEM, TYPE, VertexElement

URHOX_MAX_BONES = 64
PROFILES = ("urhox", "urho3d")
URHO3D_TO_BLENDER = np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1]], dtype=np.float64)
"""Urho3D (left-handed, Y up): (x, y, z) → (x, z, y); its own inverse."""

# Tolerances for "the skeleton in Blender still matches the file's exact values".
_MATCH_POSITION = 1e-4  # relative to the larger of 1 and the value
_MATCH_ANGLE = 1e-4  # radians
_MATCH_SCALE = 1e-4


def basis(profile: str) -> tuple[np.ndarray, np.ndarray]:
    """(file → Blender, Blender → file) point bases of a profile, 4×4."""
    if profile == "urhox":
        return GLTF_TO_BLENDER, BLENDER_TO_GLTF
    if profile == "urho3d":
        return URHO3D_TO_BLENDER, URHO3D_TO_BLENDER.copy()
    raise ValueError(f"unknown profile {profile!r}; expected one of {PROFILES}")


def detect_profile(model: umd2.Model) -> str:
    """The profile a file most likely follows: UMDL and UMD3 come from Urho3D/rbfx tools; a UMD2 file is
    Urho3D's when it carries what UrhoX's writer never writes (collision extras, morphs), else UrhoX's."""
    if model.magic in ("UMDL", "UMD3"):
        return "urho3d"
    if model.morphs or any(b.collision_mask for b in model.bones):
        return "urho3d"
    return "urhox"


def resolve_profile(model: umd2.Model, profile: str) -> str:
    return detect_profile(model) if profile == "auto" else profile


class _Axes:
    """A profile's conversions, in one place: points, directions, bone transforms, winding."""

    def __init__(self, profile: str):
        self.profile = profile
        self.to_core, self.to_file = basis(profile)
        self.mirror = bool(np.linalg.det(self.to_core[:3, :3]) < 0)

    # directions (positions are points about the origin, so the same)
    def vectors_to_core(self, v) -> np.ndarray:
        return np.asarray(v, dtype=np.float64) @ self.to_core[:3, :3].T

    def vectors_to_file(self, v) -> np.ndarray:
        return np.asarray(v, dtype=np.float64) @ self.to_file[:3, :3].T

    def tangents_to_core(self, t) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        return np.concatenate([self.vectors_to_core(t[:, :3]), t[:, 3:]], axis=1)

    def tangents_to_file(self, t) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        return np.concatenate([self.vectors_to_file(t[:, :3]), t[:, 3:]], axis=1)

    def winding(self, tris: np.ndarray) -> np.ndarray:
        """File ⇄ core triangle corners (an involution)."""
        return tris[:, [0, 2, 1]] if self.mirror else tris

    # bone transforms: world_core = A · W · F, F = I under a rotation, A⁻¹ under a mirror
    def world_to_core(self, w) -> np.ndarray:
        return self.to_core @ w @ (self.to_file if self.mirror else np.eye(4))

    def world_to_file(self, w) -> np.ndarray:
        return self.to_file @ w @ (self.to_core if self.mirror else np.eye(4))

    def local_to_core(self, local, root: bool) -> np.ndarray:
        return self.world_to_core(local) if (root or self.mirror) else local

    def local_to_file(self, local, root: bool) -> np.ndarray:
        return self.world_to_file(local) if (root or self.mirror) else local


def offset_to_matrix(offset) -> np.ndarray:
    m = np.eye(4)
    m[:3, :] = np.asarray(offset, dtype=np.float64).reshape(3, 4)
    return m


# ---------------------------------------------------------------------------------------------
# file → core

class _Primitives:
    """One geometry's LOD level, checked and turned into triangles / edges (file vertex indices)."""

    def __init__(self, vertex_buffer: int, triangles: np.ndarray, edges: np.ndarray):
        self.vertex_buffer = vertex_buffer
        self.triangles = triangles
        self.edges = edges

    def used(self, count: int) -> np.ndarray:
        """The file vertex indices the primitives use, ascending, of a buffer of `count` vertices (a mask rather
        than a sort: 0.24 s → 0.01 s for 1.2 M indices)."""
        return np.flatnonzero(self.mask(count))

    def mask(self, count: int) -> np.ndarray:
        mask = np.zeros(count, bool)
        mask[self.triangles.reshape(-1)] = True
        mask[self.edges.reshape(-1)] = True
        return mask


def _lod_primitives(model: umd2.Model, gi: int, level: int, ax: _Axes, warnings: list[str]) -> _Primitives:
    lod = model.geometries[gi].lods[level]
    f = f"geometry {gi} LOD {level}"
    if lod.vertex_buffer >= len(model.vertex_buffers):
        raise FormatError(f"vertex buffer {lod.vertex_buffer} of {len(model.vertex_buffers)}", None,
                          f"{f} vertex buffer")
    if lod.index_buffer >= len(model.index_buffers):
        raise FormatError(f"index buffer {lod.index_buffer} of {len(model.index_buffers)}", None, f"{f} index buffer")
    ib = model.index_buffers[lod.index_buffer]
    if lod.index_start + lod.index_count > len(ib.indices):
        raise FormatError(f"indices {lod.index_start}+{lod.index_count} beyond the {len(ib.indices)} stored",
                          None, f"{f} index range")
    n_vertices = len(model.vertex_buffers[lod.vertex_buffer].vertices)
    idx = ib.indices[lod.index_start:lod.index_start + lod.index_count].astype(np.int64)
    if len(idx) and idx.max() >= n_vertices:
        raise FormatError(f"vertex index {int(idx.max())} ≥ vertex count {n_vertices}", None, f"{f} indices")
    tris = np.zeros((0, 3), np.int64)
    edges = np.zeros((0, 2), np.int64)
    kind = lod.primitive_type
    if kind == 0:  # TRIANGLE_LIST
        if len(idx) % 3:
            warnings.append(f"{f}: {len(idx) % 3} trailing indices ignored")
        tris = idx[: len(idx) - len(idx) % 3].reshape(-1, 3)
    elif kind == 1:  # LINE_LIST
        if len(idx) % 2:
            warnings.append(f"{f}: 1 trailing index ignored")
        edges = idx[: len(idx) - len(idx) % 2].reshape(-1, 2)
    elif kind == 2:  # POINT_LIST: the vertices are kept as loose vertices
        pass
    elif kind == 3 and len(idx) >= 3:  # TRIANGLE_STRIP: every other triangle flips to keep one winding
        i = np.arange(len(idx) - 2)
        odd = (i % 2).astype(bool)
        tris = np.stack([np.where(odd, idx[i + 1], idx[i]), np.where(odd, idx[i], idx[i + 1]), idx[i + 2]], axis=1)
        tris = tris[(tris[:, 0] != tris[:, 1]) & (tris[:, 1] != tris[:, 2]) & (tris[:, 0] != tris[:, 2])]
    elif kind == 4 and len(idx) >= 2:  # LINE_STRIP
        edges = np.stack([idx[:-1], idx[1:]], axis=1)
    elif kind == 5 and len(idx) >= 3:  # TRIANGLE_FAN
        tris = np.stack([np.full(len(idx) - 2, idx[0]), idx[1:-1], idx[2:]], axis=1)
    elif kind > 5:
        warnings.append(f"{f}: unknown primitive type {kind}; its indices are not imported")
    return _Primitives(lod.vertex_buffer, ax.winding(tris), edges)


_FIELD_OF = {"position": "POSITION0", "normal": "NORMAL0", "tangent": "TANGENT0"}


def vertex_list(rows, shown: int = 8) -> str:
    """"vertex 3", "vertices 3, 18, 33", or the first `shown` and how many in all."""
    rows = [int(r) for r in rows]
    if len(rows) == 1:
        return f"vertex {rows[0]}"
    more = f", … ({len(rows)} in all)" if len(rows) > shown else ""
    return "vertices " + ", ".join(str(r) for r in rows[:shown]) + more


def non_finite_fields(model: umd2.Model) -> list[str]:
    """Warnings naming the non-finite values the layout allows (kept as read; positions, normals, tangents,
    morph deltas and offset matrices are reported where they are mapped)."""
    out = []
    mapped_elsewhere = {"POSITION0", "NORMAL0", "TANGENT0"}
    with np.errstate(all="ignore"):
        for vi, vb in enumerate(model.vertex_buffers):
            for name in vb.vertices.dtype.names:
                col = vb.vertices[name]
                if name in mapped_elsewhere or col.dtype.base.kind != "f" or not len(col):
                    continue
                bad = np.flatnonzero(~np.isfinite(col.reshape(len(col), -1)).all(axis=1))
                if len(bad):
                    out.append(f"vertex buffer {vi}: non-finite {name} at {vertex_list(bad)}")
        for gi, g in enumerate(model.geometries):
            for k, lod in enumerate(g.lods):
                if not np.isfinite(lod.distance):
                    out.append(f"geometry {gi} LOD {k}: non-finite distance")
        for i, b in enumerate(model.bones):
            for label, value in (("initial position", b.position), ("initial rotation", b.rotation),
                                 ("initial scale", b.scale), ("collision radius", b.radius),
                                 ("collision box", b.bbox)):
                if value is not None and not np.isfinite(np.asarray(value, np.float64)).all():
                    out.append(f"bone {i} ({b.name}): non-finite {label}")
        if not (np.isfinite(model.bbox_min).all() and np.isfinite(model.bbox_max).all()):
            out.append("non-finite bounding box")
        bad = np.flatnonzero(~np.isfinite(np.asarray(model.centers, np.float64)).all(axis=1))
        if len(bad):
            out.append(f"non-finite geometry center {int(bad[0])}")
    return out


def _name_places(model: umd2.Model) -> dict[str, int | str]:
    """File offsets of the bone and morph names that are not UTF-8 (for `names.cleaned`)."""
    places: dict[str, int | str] = {}
    for i, b in enumerate(model.bones):
        if names.bad_byte(b.name) is not None and i < len(model.bone_offsets):
            places.setdefault(b.name, model.bone_offsets[i])
    for i, m in enumerate(model.morphs):
        if names.bad_byte(m.name) is not None and f"morph {i}" in model.offsets:
            places.setdefault(m.name, model.offsets[f"morph {i}"])
    return places


@names.cleaned(_name_places)
@quiet_float_errors
def to_scene(model: umd2.Model, name: str = "Model", profile: str = "urhox",
             all_lods: bool = False) -> tuple[cm.Scene, list[str]]:
    """Map records to a core Scene. `profile` may be "auto" (`detect_profile`). Raises FormatError for what
    would index out of range or loop; warns for the rest."""
    profile = resolve_profile(model, profile)
    ax = _Axes(profile)
    warnings = list(model.warnings) + non_finite_fields(model)
    scene = cm.Scene(name=name)
    scene.extras["urho"] = {"profile": profile, "magic": model.magic}
    if model.bones:
        scene.skeleton = _skeleton_to_core(model, ax, name)
    n_bones = len(model.bones)
    for gi, g in enumerate(model.geometries):
        scene.materials.append(cm.Material(name=f"{name}_{gi}", extras={"urho": {"geometry": gi}}))
        if not g.lods:
            warnings.append(f"geometry {gi} has no LOD levels")
    max_levels = max((len(g.lods) for g in model.geometries), default=0)
    if max_levels > 1 and not all_lods:
        warnings.append(f"LOD 0 of {max_levels} levels imported")
    levels = range(max_levels if all_lods else min(max_levels, 1))
    prims = {(gi, k): _lod_primitives(model, gi, k, ax, warnings)
             for gi, g in enumerate(model.geometries) for k in levels if k < len(g.lods)}
    for k in levels:
        for vb_index, vb in enumerate(model.vertex_buffers):
            parts = [(gi, p) for (gi, kk), p in prims.items() if kk == k and p.vertex_buffer == vb_index]
            if not parts:
                continue
            base = name if vb_index == 0 else f"{name}.{vb_index}"
            rows = None
            if k > 0:  # LOD levels other than 0 keep only the vertices they use
                rows = np.flatnonzero(np.logical_or.reduce([p.mask(len(vb.vertices)) for _, p in parts]))
                base = f"{base}_LOD{k}"
            mesh = _vertex_buffer_to_mesh(vb, vb_index, ax, base, rows, warnings)
            remap = None
            if rows is not None:
                remap = np.full(len(vb.vertices), -1, np.int64)
                remap[rows] = np.arange(len(rows))
            _add_primitives(model, mesh, parts, remap, n_bones, scene, warnings)
            if all_lods and max_levels > 1:
                lod0 = [model.geometries[gi].lods[k] for gi, _ in parts]
                mesh.lod_level, mesh.lod_distance = k, float(max(level.distance for level in lod0))
            _add_morphs(model, mesh, vb_index, rows, ax, warnings)
            if k == 0:  # the file's geometry centres, per material slot, written again, edited or not
                mesh.extras["urho"]["magic"] = model.magic
                mesh.extras["urho"]["axes"] = profile
                mesh.extras["urho"]["centers"] = [
                    [float(x) for x in model.centers[gi]] if gi < len(model.centers) else None
                    for gi in mesh.materials]
                # an empty bone mapping (blend indices are the model's bone indices) and the file's bounds are
                # written again while the vertices are the file's (the bounds following moved ones)
                mesh.extras["urho"]["global_blend"] = all(len(model.geometries[gi].bone_mapping) == 0
                                                          for gi in mesh.materials)
                mesh.extras["urho"]["mappings"] = [[int(b) for b in model.geometries[gi].bone_mapping]
                                                   for gi in mesh.materials]
                mesh.extras["urho"]["bbox"] = [[float(x) for x in model.bbox_min], [float(x) for x in model.bbox_max]]
                if not all_lods:
                    mesh.extras["urho"].update(_file_lods(model, mesh.materials))
            scene.meshes.append(mesh)
    if any("lod_levels" in m.extras["urho"] for m in scene.meshes):
        warnings = [w + " (the others are kept: an export writes them again while LOD 0's triangles are the file's)"
                    if w == f"LOD 0 of {max_levels} levels imported" else w for w in warnings]
    return scene, warnings


def _file_lods(model: umd2.Model, geometries: list[int]) -> dict:
    """The file's LOD levels above 0, written again while LOD 0's triangles are the file's (import reads LOD 0):
    `lod_levels` (the index size and, per geometry, every level as [distance, primitive type, index start,
    index count]) and `lod_indices` (the whole index buffer), when there is something to keep and the file is
    laid out as export writes LOD 0: one vertex buffer, one index buffer and every geometry in this mesh, in
    order (Urho3D's stock Jack and Mushroom models). Otherwise nothing."""
    geoms = model.geometries
    if len(model.vertex_buffers) != 1 or len(model.index_buffers) != 1 or geometries != list(range(len(geoms))) \
            or max((len(g.lods) for g in geoms), default=0) < 2 \
            or any(lod.vertex_buffer or lod.index_buffer for g in geoms for lod in g.lods):
        return {}
    ib = model.index_buffers[0]
    levels = [[[float(lod.distance), int(lod.primitive_type), int(lod.index_start), int(lod.index_count)]
               for lod in g.lods] for g in geoms]
    return {"lod_levels": {"index_size": int(ib.index_size), "geometries": levels}, "lod_indices": ib.indices}


def _kept_lods(model: umd2.Model, meshes: list[cm.Mesh], kept_records: bool) -> list[str]:
    """Give `model` the file's LOD levels above 0 (`_file_lods`) while the one mesh that held them holds the
    file's vertices (`kept_records`: moved or not) and the LOD 0 written is the file's own, index for index; a
    warning when levels were kept but cannot be written."""
    kept = [m.extras.get("urho", {}) for m in meshes if m.extras.get("urho", {}).get("lod_levels")]
    if not kept:
        return []
    levels, indices = kept[0]["lod_levels"], kept[0].get("lod_indices")
    built = model.index_buffers[0].indices
    same = len(meshes) == 1 and kept_records and indices is not None \
        and len(levels["geometries"]) == len(model.geometries) and all(
            len(file_lods) and (lod.primitive_type, lod.index_start, lod.index_count) == tuple(file_lods[0][1:])
            and lod.index_start + lod.index_count <= len(indices)
            and np.array_equal(built[lod.index_start:lod.index_start + lod.index_count],
                               indices[lod.index_start:lod.index_start + lod.index_count])
            for g, file_lods in zip(model.geometries, levels["geometries"]) for lod in g.lods[:1])
    if not same:
        return [f"{meshes[0].name if len(meshes) == 1 else 'the model'}: the file's LOD levels above 0 not written "
                "(only LOD 0: its triangles or geometries differ from the file's)"]
    dtype = np.uint16 if levels["index_size"] == 2 else np.uint32
    model.index_buffers = [umd2.IndexBuffer(levels["index_size"], np.asarray(indices).astype(dtype))]
    for g, file_lods in zip(model.geometries, levels["geometries"]):
        g.lods = [umd2.LodLevel(np.float32(d), kind, 0, 0, start, count) for d, kind, start, count in file_lods]
    return []


def _add_primitives(model, mesh: cm.Mesh, parts, remap, n_bones: int, scene: cm.Scene, warnings) -> None:
    vb_index = parts[0][1].vertex_buffer
    vb = model.vertex_buffers[vb_index]
    rows = np.arange(len(vb.vertices)) if remap is None else np.flatnonzero(remap >= 0)
    skin_warnings = warnings if remap is None else None
    skinned = (n_bones > 0
               and _column_type(vb, "BLENDINDICES0", f"vertex buffer {vb_index}", skin_warnings) == TYPE["UBYTE4"]
               and _column_type(vb, "BLENDWEIGHTS0", f"vertex buffer {vb_index}", skin_warnings) == TYPE["VECTOR4"])
    joints = np.zeros((len(rows), 4), np.int32) if skinned else None
    assigned = np.full(len(rows), -1, np.int64) if joints is not None else None
    tris, mats, edges = [], [], []
    for slot, (gi, p) in enumerate(parts):
        local_tris = p.triangles if remap is None else remap[p.triangles]
        local_edges = p.edges if remap is None else remap[p.edges]
        tris.append(local_tris)
        mats.append(np.full(len(local_tris), slot, dtype=np.int32))
        edges.append(local_edges)
        mesh.materials.append(gi)
        if joints is None:
            continue
        used = p.used(len(vb.vertices))
        if not len(used):
            continue
        mapping = model.geometries[gi].bone_mapping.astype(np.int64)
        local = vb.vertices["BLENDINDICES0"][used].astype(np.int64)
        live = vb.vertices["BLENDWEIGHTS0"][used] > 0
        if len(mapping):
            if live.any() and local[live].max() >= len(mapping):
                raise FormatError(f"blend index {int(local[live].max())} ≥ bone mapping size {len(mapping)}", None,
                                  f"geometry {gi} blend indices")
            glob = np.where(live, mapping[np.minimum(local, len(mapping) - 1)], 0)
        else:
            glob = np.where(live, local, 0)
        if live.any() and glob[live].max() >= n_bones:
            raise FormatError(f"bone index {int(glob[live].max())} ≥ bone count {n_bones}", None,
                              f"geometry {gi} bone mapping")
        at = used if remap is None else remap[used]
        seen = assigned[at] >= 0
        if seen.any() and (joints[at[seen]] != glob[seen]).any():
            warnings.append(f"geometry {gi}: vertices shared with another geometry map to other bones there; "
                            "the last geometry's bones were kept")
        joints[at] = glob
        assigned[at] = gi
    mesh.triangles = np.concatenate(tris).astype(np.int32)
    mesh.material_indices = np.concatenate(mats)
    all_edges = np.concatenate(edges)
    if len(all_edges):
        mesh.edges = all_edges.astype(np.int32)
    if joints is not None:
        mesh.joints = joints
        mesh.weights = vb.vertices["BLENDWEIGHTS0"][rows].astype(np.float32)


def _add_morphs(model: umd2.Model, mesh: cm.Mesh, vb_index: int, rows, ax: _Axes, warnings) -> None:
    """Shape keys of the morphs touching this vertex buffer: base + delta, per morph (deltas of several
    buffers of one morph add up)."""
    vb = model.vertex_buffers[vb_index]
    n = len(vb.vertices)
    for mi, morph in enumerate(model.morphs):
        pos_delta = None
        nrm_delta = None
        for bi, buf in enumerate(morph.buffers):
            f = f"morph {mi} ({morph.name}) buffer {bi}"
            if buf.vertex_buffer >= len(model.vertex_buffers):
                raise FormatError(f"vertex buffer {buf.vertex_buffer} of {len(model.vertex_buffers)}", None,
                                  f"{f} vertex buffer")
            if buf.vertex_buffer != vb_index or not len(buf.vertices):
                continue
            idx = buf.vertices["index"].astype(np.int64)
            if idx.max() >= n:
                raise FormatError(f"vertex index {int(idx.max())} ≥ vertex count {n}", None, f"{f} vertex index")
            start, count = vb.morph_range_start, vb.morph_range_count
            if rows is None and (idx.min() < start or idx.max() >= start + count):
                warnings.append(f"{f}: vertices outside the vertex buffer's morph range {start}+{count} "
                                "(Urho3D does not morph those)")
            if pos_delta is None:
                pos_delta = np.zeros((n, 3))
                nrm_delta = np.zeros((n, 3))
            for key, acc in (("position", pos_delta), ("normal", nrm_delta)):
                if key in buf.vertices.dtype.names:
                    d = buf.vertices[key].astype(np.float64)
                    if not np.isfinite(d).all():
                        warnings.append(f"{f}: non-finite {key} deltas")
                    np.add.at(acc, idx, d)
        if pos_delta is None:
            continue
        pos_delta = ax.vectors_to_core(pos_delta if rows is None else pos_delta[rows])
        nrm_delta = ax.vectors_to_core(nrm_delta if rows is None else nrm_delta[rows])
        key = cm.ShapeKey(morph.name, (mesh.positions + pos_delta).astype(np.float32),
                          default_weight=float(morph.default_weight) if morph.default_weight is not None else 0.0)
        if mesh.normals is not None:
            key.normals = (mesh.normals + nrm_delta).astype(np.float32)
        mesh.shape_keys.append(key)


def _skeleton_to_core(model: umd2.Model, ax: _Axes, name: str) -> cm.Skeleton:
    n = len(model.bones)
    skel = cm.Skeleton(name=name)
    for i, b in enumerate(model.bones):
        at = model.bone_offsets[i] if model.bone_offsets else None
        parent = -1 if b.parent == i else b.parent
        if parent < -1 or parent >= n:
            raise FormatError(f"parent {b.parent} outside 0..{n - 1}", at, f"bone {i} ({b.name}) parent")
        offset = offset_to_matrix(b.offset)
        if not np.isfinite(offset).all():
            raise FormatError("offset matrix is not finite", at, f"bone {i} ({b.name}) offset matrix")
        try:
            bind_file = np.linalg.inv(offset)
        except np.linalg.LinAlgError:
            raise FormatError("offset matrix is singular", at, f"bone {i} ({b.name}) offset matrix") from None
        local = ax.local_to_core(trs_to_matrix(b.position, b.rotation, b.scale), parent < 0)
        t, r, s = matrix_to_trs(local)
        extras = {"index": i, "initial": [float(x) for x in (*b.position, *b.rotation, *b.scale)],
                  "offset": [float(x) for x in b.offset], "collision_mask": int(b.collision_mask),
                  "profile": ax.profile}
        if b.radius is not None:
            extras["radius"] = float(b.radius)
        if b.bbox is not None:
            extras["bbox"] = [float(x) for x in b.bbox]
        skel.bones.append(cm.Bone(name=b.name, parent=parent, bind=ax.world_to_core(bind_file), rest_translation=t,
                                  rest_rotation=r, rest_scale=s, extras={"urho": extras}))
    try:
        skel.topological_order()
    except ValueError as e:
        raise FormatError(str(e), None, "bone parents") from None
    return skel


_EXPECTED_TYPE = {"NORMAL0": "VECTOR3", "TANGENT0": "VECTOR4", "BLENDWEIGHTS0": "VECTOR4",
                  "BLENDINDICES0": "UBYTE4"}


def _column_type(vb: umd2.VertexBuffer, name: str, where: str = "", warnings: list[str] | None = None):
    """The element type of a column, or None; a column of an unexpected type is skipped with a warning."""
    e = next((e for e in vb.elements if e.field_name == name), None)
    if e is None:
        return None
    expected = _EXPECTED_TYPE.get(name)
    if expected is not None and e.type != TYPE[expected] and warnings is not None:
        warnings.append(f"{where}: {name} is {umd2.ELEMENT_TYPES[e.type][0]}, expected {expected}; not imported")
        return None
    return e.type


def _vertex_buffer_to_mesh(vb: umd2.VertexBuffer, vb_index: int, ax: _Axes, name: str, rows,
                           warnings: list[str]) -> cm.Mesh:
    v = vb.vertices if rows is None else vb.vertices[rows]
    f = f"vertex buffer {vb_index}"
    if _column_type(vb, "POSITION0") != TYPE["VECTOR3"]:
        raise FormatError("no VECTOR3 POSITION element", None, f"{f} elements")
    with np.errstate(all="ignore"):
        mesh = cm.Mesh(name=name, positions=ax.vectors_to_core(v["POSITION0"]).astype(np.float32),
                       triangles=np.zeros((0, 3), np.int32))
        if _column_type(vb, "NORMAL0", f, warnings) == TYPE["VECTOR3"]:
            mesh.normals = ax.vectors_to_core(v["NORMAL0"]).astype(np.float32)
        if _column_type(vb, "TANGENT0", f, warnings) == TYPE["VECTOR4"]:
            mesh.tangents = ax.tangents_to_core(v["TANGENT0"]).astype(np.float32)
        for e in vb.elements:
            if e.semantic == SEM["TEXCOORD"] and e.type == TYPE["VECTOR2"]:
                uv = v[e.field_name].astype(np.float32).copy()
                uv[:, 1] = 1.0 - uv[:, 1]
                mesh.uvs.append(("UVMap" if e.index == 0 else f"UVMap{e.index}", uv))
            elif e.semantic == SEM["COLOR"] and e.type == TYPE["UBYTE4_NORM"]:
                mesh.colors.append(("Color" if e.index == 0 else f"Color{e.index}",
                                    v[e.field_name].astype(np.float32) / 255.0))
    if rows is None:
        for label, arr in (("position", mesh.positions), ("normal", mesh.normals), ("tangent", mesh.tangents)):
            if arr is not None:
                bad = np.flatnonzero(~np.isfinite(arr).all(axis=1))
                if len(bad):
                    warnings.append(f"vertex buffer {vb_index}: non-finite {label} ({_FIELD_OF[label]}) at "
                                    f"{vertex_list(bad)} (kept: an export writes them again while those vertices "
                                    "are left as they are)")
    mesh.extras["urho"] = {"elements": [e.descriptor for e in vb.elements], "vertex_buffer": vb_index}
    return mesh


# ---------------------------------------------------------------------------------------------
# core → file

def from_scene(scene: cm.Scene, profile: str = "urhox", max_bones: int = 64) -> tuple[umd2.Model, list[str]]:
    """Build UMD2 records from a core Scene. Raises ExportError naming what cannot be written."""
    warnings: list[str] = []
    skel = scene.skeleton
    ax = _Axes(_kept_axes(scene, profile, warnings))
    n_bones = len(skel.bones) if skel else 0
    _check_bone_count(scene, profile, max_bones, n_bones)
    meshes = [m for m in scene.meshes if len(m.triangles) or (m.edges is not None and len(m.edges))]
    if not meshes:
        raise ExportError("nothing to export: no mesh with triangles or edges")
    for m in meshes:
        _check_mesh(m, n_bones, _has_records(m))
    skinned = skel is not None and any(m.weights is not None for m in meshes)
    elements = _file_elements(meshes, skinned)
    if elements is None:
        elements = _elements_for(meshes, skinned)
        added = [m.name for m in meshes if _added(m)]
        if added and _file_elements([m for m in meshes if not _added(m)], skinned) is not None:
            warnings.append(f"{', '.join(added)}: added in Blender without what the file's vertex elements need "
                            "(a UV map, normals, tangents or weights): the vertex layout is computed again, not the "
                            "file's")
    full, joints, weights, parts, file_position = _gather_vertices(meshes, elements, skinned, ax)
    # every mesh holds the file's records row for row in the axes written: the file's model-wide values hold
    kept_records = file_position is not None
    file_centers = [_file_center(meshes, origin) for *_, origin in parts]
    origins = [origin for *_, origin in parts]
    parts = [part[:3] for part in parts]
    model = umd2.Model(magic="UMD2")
    if skel:
        model.bones = _bones_to_file(skel, ax)
        if profile == "urho3d" and skinned:
            _collision_to_file(model.bones, full["POSITION0"], joints, weights,
                               [b.extras.get("urho", {}) for b in skel.bones], file_position)
        elif profile == "urhox":
            for b in model.bones:
                b.collision_mask, b.radius, b.bbox = 0, None, None

    # Geometries: one per (mesh, material slot); under urho3d split at max_bones when the bones do not fit.
    shared = _shared_bones(profile, max_bones, n_bones, joints, weights) if skinned else np.zeros(0, np.int64)
    if shared is None:
        src, verts, geoms = _split_geometries(parts, full, joints, weights, max_bones, n_bones)
        geom_centers = [None] * len(geoms)
    else:
        src, verts = np.arange(len(full)), full
        geoms = _shared_geometries(parts, verts, joints, weights, shared, n_bones, skinned)
        geom_centers = file_centers
        if skinned and kept_records and len(shared) == n_bones and \
                all(m.extras.get("urho", {}).get("global_blend") for m in meshes if not _added(m)):
            geoms = [(material, kind, tris, np.zeros(0, np.uint32)) for material, kind, tris, _ in geoms]
        kept_maps = _kept_mappings(meshes, origins, geoms, verts, joints, weights) if skinned and kept_records \
            else None
        if kept_maps is not None:
            geoms = kept_maps
        elif skinned:
            _kept_unweighted_indices(meshes, verts)
    indices, centers = _geometries_to_file(model, geoms, geom_centers, verts, ax)
    size = 2 if len(verts) <= 65535 else 4
    vb = umd2.VertexBuffer(elements, verts)
    if profile == "urho3d" or _morphs_kept(meshes, n_bones):
        model.morphs = _morphs_to_file(meshes, src, ax, vb, warnings)
    else:
        dropped = [f"{m.name}: " + ", ".join(k.name for k in m.shape_keys) for m in meshes if m.shape_keys]
        if dropped:
            warnings.append("shape keys not written (the urhox profile writes morph count 0; use --profile urho3d "
                            "to write morphs): " + "; ".join(dropped))
    model.vertex_buffers = [vb]
    if ax.profile == "urho3d" and {m.extras.get("urho", {}).get("magic") for m in meshes} - {None} == {"UMDL"}:
        # a legacy file stays legacy while its elements allow it, meshes added in Blender (no magic) or not: its
        # magic is what tells Urho3D's axes apart from UrhoX's in a model without bones (whose axes are the
        # file's under either profile, `_kept_axes`)
        try:
            vb.legacy_mask = umd2.legacy_mask_of(elements)
            model.magic = "UMDL"
        except ValueError:
            pass
    model.index_buffers = [umd2.IndexBuffer(size, indices.astype(np.uint16 if size == 2 else np.uint32))]
    pos = verts["POSITION0"]
    model.bbox_min = pos.min(axis=0).astype(np.float32)
    model.bbox_max = pos.max(axis=0).astype(np.float32)
    model.centers = np.array(centers, dtype=np.float32).reshape(-1, 3)
    warnings += _kept_lods(model, meshes, kept_records)
    kept_box = _kept_bounds(meshes, kept_records)
    if kept_box is not None:
        model.bbox_min, model.bbox_max = file_rows.edited_bounds(
            kept_box, np.concatenate([m.extras["urho"]["records"]["POSITION0"] for m in meshes
                                      if not _added(m)]), pos,
            not file_position.all())
        if all(c is None for m in meshes for c in m.extras.get("urho", {}).get("centers") or [0]):
            model.centers = np.zeros((0, 3), np.float32)  # a file from before geometry centers: it stays so
    return model, warnings


def _kept_axes(scene: cm.Scene, profile: str, warnings: list[str]) -> str:
    """The axes the points are written in: a model without bones whose imported meshes were all read with one
    profile's axes (`extras["urho"]["axes"]`, edited or not) keeps them, since nothing in a bone-less UMD2 file
    tells Urho3D's axes from UrhoX's and a profile change would mirror it; else the profile's."""
    if scene.skeleton is not None and scene.skeleton.bones:
        return profile
    kept = {m.extras.get("urho", {}).get("axes") for m in scene.meshes} - {None}  # a mesh added in Blender: none
    if len(kept) != 1 or (axes := kept.pop()) not in PROFILES or axes == profile:
        return profile
    warnings.append(f"model without bones written with the axes it was read with ({axes}), not the {profile} "
                    "profile's, so that it is not mirrored")
    return axes


def _check_bone_count(scene: cm.Scene, profile: str, max_bones: int, n_bones: int) -> None:
    if profile == "urhox" and n_bones > URHOX_MAX_BONES:
        weighted = np.zeros(n_bones, bool)  # a bone deforms when vertices are weighted to it, whatever its flag
        for m in scene.meshes:
            if m.weights is not None:
                live = m.joints[m.weights > 0]
                weighted[live[(live >= 0) & (live < n_bones)]] = True
        n_deform = int(weighted.sum())
        raise ExportError(f"{n_bones} bones ({n_deform} deforming): UrhoX allows at most {URHOX_MAX_BONES} bones per "
                          "model; use --deform-only to drop bones that deform nothing, or --profile urho3d to "
                          "split geometries at --max-bones")
    if not 1 <= max_bones <= 255:
        raise ExportError(f"--max-bones {max_bones} is outside 1..255")


def _shared_bones(profile: str, max_bones: int, n_bones: int, joints: np.ndarray,
                  weights: np.ndarray) -> np.ndarray | None:
    """The bones every geometry of a skinned model maps (all of them, else the deforming ones), or None when
    they do not fit in `max_bones` under urho3d and the geometries must be split."""
    if profile == "urhox" or n_bones <= max_bones:
        return np.arange(n_bones)
    # ascending, as np.unique gives it, without sorting every influence
    deforming = np.flatnonzero(np.bincount(joints[weights > 0], minlength=n_bones))
    return deforming if len(deforming) <= max_bones else None


def _shared_geometries(parts: list, verts: np.ndarray, joints: np.ndarray, weights: np.ndarray,
                       shared: np.ndarray, n_bones: int, skinned: bool) -> list:
    """One geometry per (material, kind, triangles), all mapping the `shared` bones (bone indices of
    `verts` set local to that list): the geometries (material, kind, triangles, bone mapping)."""
    if skinned:
        lookup = np.zeros(n_bones, np.int64)
        lookup[shared] = np.arange(len(shared))
        verts["BLENDINDICES0"] = np.where(weights > 0, lookup[joints], 0).astype(np.uint8)
    mapping = np.asarray(shared, np.uint32)
    return [(material, kind, tris, mapping) for material, kind, tris in parts]


def _split_geometries(parts: list, full: np.ndarray, joints: np.ndarray, weights: np.ndarray, max_bones: int,
                      n_bones: int) -> tuple[np.ndarray, np.ndarray, list]:
    """Each (material, kind, triangles) split into geometries of at most `max_bones` bones, each with its
    own copy of the vertices it uses (bone indices local to it): the source row of every written vertex,
    the written vertices and the geometries (material, kind, triangles, bone mapping)."""
    chunks = []
    for material, kind, tris in parts:
        for tri_rows, bones in _split_by_bones(tris, joints, weights, max_bones):
            chunks.append((material, kind, tris[tri_rows], bones))
    used_of = []  # the vertices each chunk uses, ascending (a mask, not a sort: O(vertices))
    for _, _, tris, _ in chunks:
        mask = np.zeros(len(full), bool)
        mask[tris] = True
        used_of.append(np.flatnonzero(mask))
    src = np.concatenate(used_of)
    verts = full[src]
    geoms = []
    start = 0
    renumber = np.zeros(len(full), np.int64)
    for (material, kind, tris, bones), used in zip(chunks, used_of):
        lookup = np.full(n_bones, 0, np.int64)
        lookup[bones] = np.arange(len(bones))
        rows = slice(start, start + len(used))
        live = weights[used] > 0
        verts["BLENDINDICES0"][rows] = np.where(live, lookup[joints[used]], 0).astype(np.uint8)
        renumber[used] = np.arange(start, start + len(used))
        geoms.append((material, kind, renumber[tris], np.asarray(bones, np.uint32)))
        start += len(used)
    return src, verts, geoms


def _geometries_to_file(model: umd2.Model, geoms: list, geom_centers: list, verts: np.ndarray,
                        ax: _Axes) -> tuple[np.ndarray, list]:
    """Appends the geometries (one LOD each) and their materials to `model`: the index buffer's indices and
    each geometry's center (the file's where kept, else the mean of the vertices it uses)."""
    index_parts, centers = [], []
    model.geometry_materials = []
    index_start = 0
    for (material, kind, prims, mapping), kept in zip(geoms, geom_centers):
        prims = np.asarray(prims, np.int64)
        flat = (ax.winding(prims) if kind == 0 else prims).reshape(-1)
        index_parts.append(flat)
        model.geometries.append(umd2.Geometry(mapping, [umd2.LodLevel(0.0, kind, 0, 0, index_start, len(flat))]))
        model.geometry_materials.append(material)
        if kept is not None:
            centers.append(kept)
        else:
            touched = np.zeros(len(verts), bool)
            touched[flat] = True
            centers.append(verts["POSITION0"][touched].astype(np.float64).mean(axis=0))
        index_start += len(flat)
    return np.concatenate(index_parts), centers


def _gather_vertices(meshes: list[cm.Mesh], elements, skinned: bool, ax: _Axes):
    """All meshes' vertices in one structured array (file axes), with global joints/weights (V, 4), the
    primitives of every (mesh, material slot) as (material index, primitive type, (N, 3|2) global rows,
    (mesh, slot, primitive type)): triangle lists (core winding) per slot, then the mesh's loose edges as one
    line list drawn with its first slot; and which rows keep the file's position when every mesh holds the
    file's records in the axes written (`_file_records`), else None."""
    dt = umd2.vertex_dtype(elements)
    total = sum(m.vertex_count for m in meshes)
    verts = np.zeros(total, dtype=dt)
    joints = np.zeros((total, 4), np.int64)
    weights = np.zeros((total, 4), np.float32)
    parts = []
    base = 0
    file_position = np.zeros(total, bool)
    aligned = True
    for mi, m in enumerate(meshes):
        sl = slice(base, base + m.vertex_count)
        verts["POSITION0"][sl] = ax.vectors_to_file(m.positions)
        if m.normals is not None and "NORMAL0" in dt.names:
            verts["NORMAL0"][sl] = ax.vectors_to_file(m.normals)
        for e in elements:
            if e.semantic == SEM["TEXCOORD"] and e.index < len(m.uvs):
                uv = m.uvs[e.index][1].astype(np.float32).copy()
                uv[:, 1] = 1.0 - uv[:, 1]
                verts[e.field_name][sl] = uv
            elif e.semantic == SEM["COLOR"]:
                verts[e.field_name][sl] = 255
                if e.index < len(m.colors):
                    verts[e.field_name][sl] = np.clip(np.rint(m.colors[e.index][1] * 255.0), 0, 255).astype(np.uint8)
        if m.tangents is not None and "TANGENT0" in dt.names:
            verts["TANGENT0"][sl] = ax.tangents_to_file(m.tangents)
        if skinned and m.weights is not None:
            k = min(4, m.weights.shape[1])
            weights[sl, :k] = m.weights[:, :k]
            joints[sl, :k] = np.where(m.weights[:, :k] > 0, m.joints[:, :k], 0)
            verts["BLENDWEIGHTS0"][sl] = weights[sl]
            verts["BLENDINDICES0"][sl] = joints[sl].astype(np.uint8)
        same_axes = _file_records(m, verts, sl, ax, file_position)
        aligned &= same_axes or _added(m)  # an added mesh's rows are new ones (file_position False)
        mat_idx = m.material_indices if m.material_indices is not None else np.zeros(len(m.triangles), np.int32)
        one_slot = len(mat_idx) and mat_idx.min() == mat_idx.max()
        for slot in (mat_idx[:1] if one_slot else np.unique(mat_idx)):
            material = m.materials[slot] if slot < len(m.materials) else None
            tris = m.triangles if one_slot else m.triangles[mat_idx == slot]
            parts.append((material, 0, tris.astype(np.int64) + base, (mi, int(slot), 0)))
        if m.edges is not None and len(m.edges):
            parts.append((m.materials[0] if m.materials else None, 1, m.edges.astype(np.int64) + base, (mi, 0, 1)))
        base += m.vertex_count
    aligned &= not all(_added(m) for m in meshes)
    return verts, joints, weights, parts, file_position if aligned else None


def _morphs_kept(meshes: list[cm.Mesh], n_bones: int) -> bool:
    """Shape keys of a model without bones read from a file are written as morphs under either profile: the
    file's body is Urho3D's (docs/urho.md §5.5), written in the axes it was read with (`_kept_axes`), and a
    profile that dropped them would lose the edit."""
    return not n_bones and any(m.shape_keys for m in meshes) and all(not _added(m) for m in meshes) \
        and {m.extras["urho"].get("magic") for m in meshes} <= {"UMDL", "UMD2"}


def _added(m: cm.Mesh) -> bool:
    """A mesh added in Blender: import gave it none of the file's values."""
    return not m.extras.get("urho")


def _kept_mappings(meshes: list[cm.Mesh], origins: list, geoms: list, verts: np.ndarray, joints: np.ndarray,
                   weights: np.ndarray) -> list | None:
    """The file's own bone mapping per geometry (kept per material slot), and its blend records, when every
    geometry's vertices still name through it the bones they are weighted to: a file whose geometries map bone
    lists of their own (Jack.mdl: 52 and 5 bones) is written with them again. None when any does not hold."""
    bases = np.cumsum([0] + [m.vertex_count for m in meshes])
    out = []
    for (material, kind, tris, computed), (mi, slot, _) in zip(geoms, origins):
        if _added(meshes[mi]):  # a mesh added in Blender: the mapping computed for it
            out.append((material, kind, tris, computed))
            continue
        urho = meshes[mi].extras.get("urho", {})
        maps, records = urho.get("mappings"), urho.get("records")
        if records is None or not isinstance(maps, list) or slot >= len(maps):
            return None
        mapping = np.asarray(maps[slot], np.int64)
        mask = np.zeros(len(weights), bool)
        mask[np.asarray(tris, np.int64).reshape(-1)] = True  # a mask, not np.unique: 0.2 s → 5 ms at 400k triangles
        used = np.flatnonzero(mask)
        local = records["BLENDINDICES0"][used - bases[mi]].astype(np.int64)
        live = weights[used] > 0
        if not len(mapping) or (live.any() and local[live].max() >= len(mapping)):
            return None
        if not np.array_equal(mapping[np.where(live, local, 0)][live], joints[used][live]) or \
                not np.array_equal(records["BLENDWEIGHTS0"][used - bases[mi]], weights[used]):
            return None
        out.append((material, kind, tris, mapping.astype(np.uint32)))
    for mi, m in enumerate(meshes):
        if _added(m):
            continue
        sl = slice(bases[mi], bases[mi + 1])
        verts["BLENDINDICES0"][sl] = m.extras["urho"]["records"]["BLENDINDICES0"]
        verts["BLENDWEIGHTS0"][sl] = m.extras["urho"]["records"]["BLENDWEIGHTS0"]
    return out


def _kept_unweighted_indices(meshes: list[cm.Mesh], verts: np.ndarray) -> None:
    """The file's blend weights and indices of a mesh holding its records (edited or not, either axes), for each
    vertex whose slots hold the same influences (bone and weight) as what was computed: a file may order a
    vertex's slots its own way and hold any index in a slot of weight 0 (the engine multiplies it by 0)."""
    base = 0
    for m in meshes:
        sl = slice(base, base + m.vertex_count)
        base += m.vertex_count
        urho = m.extras.get("urho", {})
        records = urho.get("records")
        if records is None or records.dtype != verts.dtype or len(records) != sl.stop - sl.start:
            continue  # (weights and bone indices are the same in either profile's axes)
        (bone_a, weight_a), (bone_b, weight_b) = _influences(records), _influences(verts[sl])
        same = (bone_a == bone_b).all(axis=1) & (weight_a == weight_b).all(axis=1)  # per vertex: an edit stays its own
        for name in ("BLENDWEIGHTS0", "BLENDINDICES0"):
            verts[name][sl][same] = records[name][same]


def _influences(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each vertex's (bone, weight) pairs of weight > 0, slots sorted by bone (-1, 0 for the empty ones)."""
    w = rows["BLENDWEIGHTS0"]
    live = w > 0
    bone = np.where(live, rows["BLENDINDICES0"].astype(np.int64), -1)
    order = np.argsort(bone, axis=1, kind="stable")
    return np.take_along_axis(bone, order, 1), np.take_along_axis(np.where(live, w, 0), order, 1)


def _kept_bounds(meshes: list[cm.Mesh], kept_records: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """The file's bounding box (which may be larger than its vertices) while every mesh wrote the file's own
    vertex records and all name the same box; else None."""
    boxes = [m.extras.get("urho", {}).get("bbox") for m in meshes if not _added(m)]
    if not kept_records or not boxes or any(b != boxes[0] for b in boxes):
        return None
    try:
        lo, hi = (np.asarray(v, np.float32).reshape(3) for v in boxes[0])
    except (TypeError, ValueError):
        return None
    return lo, hi


def _file_records(m: cm.Mesh, verts: np.ndarray, sl: slice, ax: _Axes, file_position: np.ndarray) -> bool:
    """The file's own vertex records (`extras["urho"]["records"]`, kept by the Blender side) written again row by
    row where what the mesh holds is still the file's (io_urhox/model/file_rows.py), blend data aside (it follows
    the geometries' bone mappings); records read with the other profile's axes are mapped into these. Marks the
    rows that keep the file's position in `file_position`; True when the records were read in these axes."""
    urho = m.extras.get("urho", {})
    records = urho.get("records")
    axes = urho.get("axes")
    if records is None or axes not in PROFILES or records.dtype != verts.dtype or len(records) != sl.stop - sl.start:
        return False
    if axes != ax.profile:
        records = file_rows.in_axes(records, ax.to_file[:3, :3] @ basis(axes)[0][:3, :3])
    file_position[sl] = file_rows.merge(m.name, verts[sl], records, m.triangles)
    return axes == ax.profile

def _split_by_bones(tris: np.ndarray, joints: np.ndarray, weights: np.ndarray, max_bones: int):
    """Triangles (or edges) grouped so that each group uses at most `max_bones` bones: [(triangle rows, sorted bones)].

    Triangles with the same bone set are taken together (sorted by that set, so neighbours share bones); the
    groups are packed greedily in that order."""
    small = int(joints.max(initial=0)) < np.iinfo(np.int16).max
    dtype = np.int16 if small else np.int32  # int16 keys: half the memory, and numpy sorts them by radix
    none = np.iinfo(dtype).max
    if not len(tris):
        return []
    # The work is done on distinct sets, not on triangles: first each vertex's set of live bones, then each
    # distinct combination of its corners' sets (far fewer than triangles in a real mesh).
    vertex_sets, vertex_set_of = _distinct_rows(_bone_sets(np.where(weights > 0, joints, -1).astype(dtype), none))
    corner_sets = np.sort(vertex_set_of[tris], axis=1)
    combos, combo_of = _distinct_rows(corner_sets)
    combo_bones = _bone_sets(vertex_sets[combos].reshape(len(combos), -1), none)
    sets, set_of_combo = _distinct_rows(combo_bones)  # lexicographic: the order the groups are packed in
    set_of = set_of_combo[combo_of]
    counts = (sets != none).sum(axis=1)
    if counts.max(initial=0) > max_bones:
        t = int(np.argmax(counts[set_of]))
        raise ExportError(f"{'triangle' if tris.shape[1] == 3 else 'edge'} {t} uses {int(counts[set_of[t]])} "
                          f"bones, more than --max-bones {max_bones}")
    sets = sets[:, :max(int(counts.max()), 1)]
    order, bounds = _runs_of(set_of)  # triangles of each set together, in their own order
    groups = []
    current: set[int] = set()
    members: list[int] = []
    for s, row in enumerate(sets):
        bones = {int(b) for b in row if b != none}
        if members and len(current | bones) > max_bones:
            groups.append((members, current))
            current, members = set(), []
        current |= bones
        members.append(s)
    if members:
        groups.append((members, current))
    out = []
    for members, bones in groups:  # a group's sets are consecutive: its rows are one slice of `order`
        take = np.zeros(len(tris), bool)
        take[order[bounds[members[0]]:bounds[members[-1] + 1]]] = True
        out.append((np.flatnonzero(take), np.array(sorted(bones), dtype=np.int64)))
    return out


def _bone_sets(bones: np.ndarray, none: int) -> np.ndarray:
    """Each row's distinct bones (≥ 0) in ascending order, padded with `none` at the end."""
    bones = np.sort(bones, axis=1)
    dup = np.zeros(bones.shape, bool)
    dup[:, 1:] = bones[:, 1:] == bones[:, :-1]
    out = np.where(dup | (bones < 0), none, bones)
    out.sort(axis=1)
    return out


def _distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct rows in lexicographic order, the index of each row's among them)."""
    order = np.lexsort(rows.T[::-1])
    ordered = rows[order]
    new = np.r_[True, (ordered[1:] != ordered[:-1]).any(axis=1)] if len(rows) else np.zeros(0, bool)
    distinct = ordered[new]
    which = np.empty(len(rows), np.int16 if len(distinct) < np.iinfo(np.int16).max else np.int32)
    which[order] = np.cumsum(new) - 1  # int16 where it fits: later sorts of these run by radix
    return distinct, which


def _runs_of(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stable order that sorts non-negative integers `values`, and where each run of equal values starts
    in that order (with the total length appended)."""
    values = np.asarray(values)
    small = values.max(initial=0) < (1 << 16)
    order = np.argsort(values.astype(np.uint16) if small else values, kind="stable")  # uint16: a radix sort
    ordered = values[order]
    return order, np.r_[np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]), len(ordered)]


KEEP_COLLISION = 1e-5  # relative: a recomputed radius or box this close to the file's is the file's (float rounding)


def _collision_to_file(bones: list[umd2.BoneRecord], positions, joints, weights, kept: list[dict],
                       file_position: np.ndarray | None = None) -> None:
    """Mask 3 with radius and bone-local box (file space, through the offset matrix) on every bone that has
    weighted vertices; 0 on the others. The file's own mask, radius and box (`kept`, the bones' extras) are
    written again while the bone keeps its offset matrix and the vertices are the file's (`file_position`, per
    row, None when they are not): as they are while no vertex weighted to the bone moved, grown to take in the
    moved ones otherwise (the file's tool may have left light influences out, so they are not recomputed). Without
    them, the recomputed values, or the file's where those agree within float rounding."""
    n = len(bones)
    radius = np.zeros(n)
    lo = np.full((n, 3), np.inf)
    hi = np.full((n, 3), -np.inf)
    moved = np.zeros(n, bool)  # per bone: a vertex weighted to it moved; their radius and bone-local box
    moved_radius = np.zeros(n)
    moved_lo = np.full((n, 3), np.inf)
    moved_hi = np.full((n, 3), -np.inf)
    weighted = np.zeros(n, bool)
    live_v, live_k = np.nonzero(weights > 0)
    bone = joints[live_v, live_k]
    order, cuts = _runs_of(bone)
    vertex_of, bone = live_v[order], bone[order]
    px, py, pz = (np.ascontiguousarray(positions[:, k], np.float64) for k in range(3))
    for a, e in zip(cuts[:-1].tolist(), cuts[1:].tolist()):  # one bone at a time, bounding the temporaries
        i = int(bone[a])
        m = offset_to_matrix(bones[i].offset)
        rows = vertex_of[a:e]
        x, y, z = px[rows], py[rows], pz[rows]
        local = [x * m[k, 0] + y * m[k, 1] + z * m[k, 2] + m[k, 3] for k in range(3)]  # one row of m at a time
        length = np.sqrt(local[0] * local[0] + local[1] * local[1] + local[2] * local[2])
        radius[i] = length.max()
        lo[i] = [c.min() for c in local]
        hi[i] = [c.max() for c in local]
        weighted[i] = True
        if file_position is not None and not file_position[rows].all():
            new = ~file_position[rows]
            moved[i] = True
            moved_radius[i] = length[new].max()
            moved_lo[i] = [c[new].min() for c in local]
            moved_hi[i] = [c[new].max() for c in local]
    for i, b in enumerate(bones):
        own = kept[i] if i < len(kept) else {}
        # the file's box is in the bone's own space: only while the bone keeps the file's offset matrix
        same = file_position is not None and own.get("offset") is not None and "collision_mask" in own and \
            np.asarray(own["offset"], np.float32).tobytes() == np.asarray(b.offset, np.float32).tobytes()
        if same:  # the file's own collision data, whatever rule made it (Urho3D's importer skips light weights)
            b.collision_mask = int(own["collision_mask"])
            b.radius = None if own.get("radius") is None else np.float32(own["radius"])
            b.bbox = None if own.get("bbox") is None else np.asarray(own["bbox"], np.float32)
            if moved[i] and b.radius is not None:
                b.radius = np.float32(max(float(b.radius), moved_radius[i]))
            if moved[i] and b.bbox is not None:
                b.bbox = np.concatenate([np.minimum(b.bbox[:3], moved_lo[i]),
                                         np.maximum(b.bbox[3:], moved_hi[i])]).astype(np.float32)
        elif weighted[i] and not (file_position is not None and own.get("collision_mask") == 0):
            # (a bone the file gave no collision data keeps none while the vertices are the file's)
            b.collision_mask = umd2.BONECOLLISION_SPHERE | umd2.BONECOLLISION_BOX
            b.radius = np.float32(_kept_close(radius[i], own.get("radius")))
            b.bbox = _kept_close(np.concatenate([lo[i], hi[i]]), own.get("bbox")).astype(np.float32)
        else:
            b.collision_mask, b.radius, b.bbox = 0, None, None


def _kept_close(value, kept):
    """`kept` (the file's value) where it agrees with the recomputed `value` within KEEP_COLLISION, else
    `value`."""
    if kept is None:
        return np.asarray(value, np.float64)
    try:
        k = np.asarray(kept, np.float64).reshape(np.shape(value))
    except (TypeError, ValueError):
        return np.asarray(value, np.float64)
    v = np.asarray(value, np.float64)
    close = np.abs(v - k) <= KEEP_COLLISION * np.maximum(1.0, np.abs(k))
    return k if bool(np.all(close)) else v


def _morphs_to_file(meshes: list[cm.Mesh], src: np.ndarray, ax: _Axes, vb: umd2.VertexBuffer,
                    warnings: list[str]) -> list[umd2.Morph]:
    """One morph per shape-key name: position deltas (file axes) of the written vertices that move, by their
    absolute index in the vertex buffer; the vertex buffer's morph range covers them all."""
    names: list[str] = []
    for m in meshes:
        names += [k.name for k in m.shape_keys if k.name not in names]
    if not names:
        return []
    bases = np.cumsum([0] + [m.vertex_count for m in meshes])
    total = bases[-1]
    morphs = []
    lo, hi = None, None
    for name in names:
        delta = np.zeros((total, 3))
        default = 0.0
        for m, base in zip(meshes, bases[:-1]):
            key = next((k for k in m.shape_keys if k.name == name), None)
            if key is None:
                continue
            if key.positions.shape != m.positions.shape:
                warnings.append(f"{m.name}: shape key {name} has {len(key.positions)} positions for "
                                f"{m.vertex_count} vertices; not written")
                continue
            d = key.positions.astype(np.float64) - m.positions.astype(np.float64)
            if not np.isfinite(d).all():
                raise ExportError(f"mesh {m.name}: shape key {name} has a non-finite position at vertex "
                                  f"{int(np.argmax(~np.isfinite(d).all(axis=1)))}")
            delta[base:base + m.vertex_count] = ax.vectors_to_file(d)
            default = key.default_weight
        out_delta = delta[src].astype(np.float32)
        moving = np.flatnonzero((out_delta != 0).any(axis=1))
        morph = umd2.Morph(name, [], None)
        if len(moving):
            rec = np.zeros(len(moving), umd2.morph_dtype(umd2.MORPH_POSITION))
            rec["index"] = moving
            rec["position"] = out_delta[moving]
            morph.buffers.append(umd2.MorphBuffer(0, umd2.MORPH_POSITION, rec))
            lo = int(moving[0]) if lo is None else min(lo, int(moving[0]))
            hi = int(moving[-1]) if hi is None else max(hi, int(moving[-1]))
        if default:
            warnings.append(f"shape key {name}: value {default:g} not written (UMD2 morphs carry no weight)")
        morphs.append(morph)
    if lo is not None:
        vb.morph_range_start, vb.morph_range_count = lo, hi - lo + 1
    return morphs


def elements_of(descriptors) -> list[VertexElement]:
    """Vertex elements from their descriptors (`extras["urho"]["elements"]`); TypeError/ValueError if not ints."""
    return [VertexElement(int(d) & 0xFF, (int(d) >> 8) & 0xFF, (int(d) >> 16) & 0xFF) for d in descriptors]


def _file_elements(meshes: list[cm.Mesh], skinned: bool) -> list[VertexElement] | None:
    """The file's own vertex elements (`extras["urho"]["elements"]`), when every mesh came from one element
    list and the export can fill every element of it from the meshes' data; else None (computed ones)."""
    # a mesh added in Blender (no elements kept) takes the imported meshes' list when it can fill it
    stored = [x for m in meshes if (x := m.extras.get("urho", {}).get("elements")) is not None]
    if not stored or any(x != stored[0] for x in stored):
        return None
    try:
        els = elements_of(stored[0])
    except (TypeError, ValueError):
        return None
    names = [e.field_name for e in els]
    if len(set(names)) != len(names) or names[:1] != ["POSITION0"] or els[0].type != TYPE["VECTOR3"]:
        return None
    fits = {
        "NORMAL0": (TYPE["VECTOR3"], all(m.normals is not None for m in meshes)),
        "TANGENT0": (TYPE["VECTOR4"], all(m.tangents is not None for m in meshes)),
        "BLENDWEIGHTS0": (TYPE["VECTOR4"], skinned),
        "BLENDINDICES0": (TYPE["UBYTE4"], skinned),
    }
    for e in els[1:]:
        if e.field_name in fits:
            kind, ok = fits[e.field_name]
            if e.type != kind or not ok:
                return None
        elif e.semantic == SEM["TEXCOORD"]:
            if e.type != TYPE["VECTOR2"] or any(e.index >= len(m.uvs) for m in meshes):
                return None
        elif e.semantic == SEM["COLOR"]:  # an added mesh without colours is written white, as a new model is
            if e.type != TYPE["UBYTE4_NORM"] or any(e.index >= len(m.colors) for m in meshes
                                                    if m.extras.get("urho", {}).get("elements") is not None):
                return None
        else:
            return None
    # nothing the meshes hold may be left out
    if skinned and "BLENDWEIGHTS0" not in names:
        return None
    if any(len(m.uvs) > sum(e.semantic == SEM["TEXCOORD"] for e in els) for m in meshes):
        return None
    if any(len(m.colors) > sum(e.semantic == SEM["COLOR"] for e in els) for m in meshes):
        return None
    return els


def _file_center(meshes: list[cm.Mesh], origin) -> np.ndarray | None:
    """The file's centre of the geometry a (mesh, slot, primitive type) part came from, if kept."""
    mi, slot, kind = origin
    centers = meshes[mi].extras.get("urho", {}).get("centers")
    if kind != 0 or not isinstance(centers, list) or slot >= len(centers) or centers[slot] is None:
        return None
    return np.asarray(centers[slot], np.float64)


def _elements_for(meshes: list[cm.Mesh], skinned: bool) -> list[VertexElement]:
    """glb2mdl's element order (docs/urho.md §5.2): position, normal, colour, texcoords, tangent, weights, indices."""
    n_uv = max(1, max(len(m.uvs) for m in meshes))
    els = [VertexElement(TYPE["VECTOR3"], SEM["POSITION"], 0), VertexElement(TYPE["VECTOR3"], SEM["NORMAL"], 0),
           VertexElement(TYPE["UBYTE4_NORM"], SEM["COLOR"], 0)]
    els += [VertexElement(TYPE["VECTOR2"], SEM["TEXCOORD"], i) for i in range(n_uv)]
    els.append(VertexElement(TYPE["VECTOR4"], SEM["TANGENT"], 0))
    if skinned:
        els += [VertexElement(TYPE["VECTOR4"], SEM["BLENDWEIGHTS"], 0),
                VertexElement(TYPE["UBYTE4"], SEM["BLENDINDICES"], 0)]
    return els


def _has_records(m: cm.Mesh) -> bool:
    """The mesh carries the file's vertex records, row for row (the Blender side keeps them while its vertices are
    the file's, edited or not)."""
    urho = m.extras.get("urho", {})
    records = urho.get("records")
    return records is not None and urho.get("axes") in PROFILES and len(records) == m.vertex_count

def _check_mesh(m: cm.Mesh, n_bones: int, kept: bool = False) -> None:
    """Invariants checked before writing; violations name the mesh and vertex. A mesh that holds the file's own
    vertex records (`kept`) has its positions, normals and tangents checked where it does not write the file's
    (`file_rows.merge`): a non-finite value the file had is written again."""
    for label, arr in (("position", m.positions), ("normal", m.normals), ("tangent", m.tangents),
                       ("weight", m.weights)):
        if arr is not None and not (kept and label != "weight"):
            bad = ~np.isfinite(np.asarray(arr, dtype=np.float64)).all(axis=-1)
            if bad.any():
                raise ExportError(f"mesh {m.name}: vertex {int(np.argmax(bad))} has a non-finite {label}")
    if m.triangles.size and (m.triangles.min() < 0 or m.triangles.max() >= m.vertex_count):
        raise ExportError(f"mesh {m.name}: a triangle indexes outside 0..{m.vertex_count - 1}")
    if m.edges is not None and m.edges.size and (m.edges.min() < 0 or m.edges.max() >= m.vertex_count):
        raise ExportError(f"mesh {m.name}: an edge indexes outside 0..{m.vertex_count - 1}")
    if m.weights is not None:
        used = m.weights > 0
        if used.any() and (m.joints[used].min() < 0 or m.joints[used].max() >= n_bones):
            v = int(np.argwhere(used & ((m.joints < 0) | (m.joints >= n_bones)))[0][0])
            raise ExportError(f"mesh {m.name}: vertex {v} is weighted to a bone outside 0..{n_bones - 1}")


def _bones_to_file(skel: cm.Skeleton, ax: _Axes) -> list[umd2.BoneRecord]:
    try:
        skel.topological_order()
    except ValueError as e:
        raise ExportError(str(e)) from None
    out = []
    for i, b in enumerate(skel.bones):
        if not np.isfinite(b.bind).all():
            raise ExportError(f"bone {i} ({b.name}) has a non-finite bind matrix")
        bind_file = ax.world_to_file(b.bind)
        offset = affine_inverse(bind_file)[:3, :].reshape(-1)
        t, r, s = matrix_to_trs(ax.local_to_file(b.rest_local, b.parent < 0))
        raw = b.extras.get("urho", {})
        rec = umd2.BoneRecord(name=names.file_name(b.name, b.extras), parent=i if b.parent < 0 else b.parent,
                              position=t.astype(np.float32), rotation=r.astype(np.float32),
                              scale=s.astype(np.float32), offset=offset.astype(np.float32))
        # a rest moved in Blender (`rest_moved`, set by the Blender side) is the user's: never the file's again
        unchanged = "offset" in raw and not raw.get("rest_moved") and _bind_matches(bind_file, raw["offset"])
        if unchanged:
            rec.offset = np.array(raw["offset"], dtype=np.float32)
        # the initial pose is the file's own data, not derived from the bind: it stays while the bone does
        if "initial" in raw and not raw.get("parent_moved") and \
                (unchanged or not raw.get("rest_moved") and _initial_matches(t, r, s, raw["initial"])):
            ini = np.array(raw["initial"], dtype=np.float32)
            rec.position, rec.rotation, rec.scale = ini[:3], ini[3:7], ini[7:10]
        elif raw.get("rest_moved") or raw.get("parent_moved"):
            moved = _moved_initial(skel, i, ax)
            if moved is not None:
                rec.position, rec.rotation, rec.scale = moved
        out.append(rec)
    return out


def _moved_initial(skel: cm.Skeleton, i: int, ax: _Axes):
    """The file's initial pose of bone `i` with the move of its rest (or its parent's) applied: the file's pose
    times the change of the bone's parent-relative bind (the initial pose need not be the bind's, docs/urho.md
    §3.6, so it is not recomputed); None without the file's values."""
    b = skel.bones[i]
    raw = b.extras.get("urho", {})
    parent = skel.bones[b.parent].extras.get("urho", {}) if b.parent >= 0 else None
    if "initial" not in raw or "offset" not in raw or (parent is not None and "offset" not in parent):
        return None

    def local(bind, parent_bind):
        return bind if parent_bind is None else affine_inverse(parent_bind) @ bind

    old = local(np.linalg.inv(offset_to_matrix(raw["offset"])),
                None if parent is None else np.linalg.inv(offset_to_matrix(parent["offset"])))
    new = local(ax.world_to_file(b.bind), None if parent is None else ax.world_to_file(skel.bones[b.parent].bind))
    ini = np.asarray(raw["initial"], np.float64)
    t, r, s = matrix_to_trs(trs_to_matrix(ini[:3], ini[3:7], ini[7:10]) @ affine_inverse(old) @ new)
    if np.dot(r, ini[3:7]) < 0:  # the file's hemisphere
        r = -r
    return t.astype(np.float32), r.astype(np.float32), s.astype(np.float32)


def _bind_matches(bind_file: np.ndarray, raw_offset) -> bool:
    raw_bind = np.linalg.inv(offset_to_matrix(raw_offset))
    scale = max(1.0, float(np.abs(raw_bind[:3, 3]).max()))
    return (np.abs(raw_bind[:3, :3] - bind_file[:3, :3]).max() < _MATCH_SCALE * 10
            and np.abs(raw_bind[:3, 3] - bind_file[:3, 3]).max() < _MATCH_POSITION * scale)


def _initial_matches(t, r, s, raw) -> bool:
    raw = np.asarray(raw, dtype=np.float64)
    scale = max(1.0, float(np.abs(raw[:3]).max()))
    return (np.abs(raw[:3] - t).max() < _MATCH_POSITION * scale
            and float(quat_angle(raw[3:7], r)) < _MATCH_ANGLE * 10
            and np.abs(raw[7:10] - s).max() < _MATCH_SCALE * max(1.0, float(np.abs(raw[7:10]).max())))


def semantic(model) -> list[str]:
    """What an import runs after the read: the mapping of every LOD (its warnings)."""
    _, warnings = to_scene(model, "model", "auto", all_lods=True)
    return warnings
