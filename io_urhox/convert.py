"""Mapping between UMD2/UMDL/UMD3 records and the neutral core model.

Axes, stated once: the UrhoX profile (the seed's glb2mdl) keeps glTF axes, right-handed and Y up, with
counter-clockwise front faces and the UV origin at the top left. Into Blender's axes a point goes
(x, y, z) → (x, −z, y) (`GLTF_TO_BLENDER`, a signed permutation, so exact on float32). Bone-local axes
are kept as the file has them, so a bone's world matrix is `C · W_file` and parent-relative transforms
are unchanged except at the roots. UV v is stored flipped (v → 1 − v) in the core model.

The file's exact values are kept in `extras["urho"]` (initial pose, offset matrix, collision data) and
written again while the skeleton still matches them, so import → export keeps the bytes of the bones.
"""
from __future__ import annotations

import numpy as np

from ..core import model as cm
from ..core.errors import ExportError, FormatError
from ..core.transforms import (
    BLENDER_TO_GLTF, GLTF_TO_BLENDER, affine_inverse, matrix_to_trs, quat_angle, trs_to_matrix,
)
from . import umd2
from .umd2 import SEM, TYPE, VertexElement

URHOX_MAX_BONES = 64
PROFILES = ("urhox",)

# Tolerances for "the skeleton in Blender still matches the file's exact values".
_MATCH_POSITION = 1e-4  # relative to the larger of 1 and the value
_MATCH_ANGLE = 1e-4  # radians
_MATCH_SCALE = 1e-4


def _basis(profile: str) -> tuple[np.ndarray, np.ndarray]:
    if profile != "urhox":
        raise ValueError(f"unknown profile {profile!r}; expected one of {PROFILES}")
    return GLTF_TO_BLENDER, BLENDER_TO_GLTF


def offset_to_matrix(offset) -> np.ndarray:
    m = np.eye(4)
    m[:3, :] = np.asarray(offset, dtype=np.float64).reshape(3, 4)
    return m


# ---------------------------------------------------------------------------------------------
# file → core

def to_scene(model: umd2.Model, name: str = "Model", profile: str = "urhox") -> tuple[cm.Scene, list[str]]:
    """Map records to a core Scene. Raises FormatError for what would index out of range or loop."""
    to_core, _ = _basis(profile)
    warnings = list(model.warnings)
    scene = cm.Scene(name=name)
    if model.bones:
        scene.skeleton = _skeleton_to_core(model, to_core, name)
    n_bones = len(model.bones)

    for vb_index, vb in enumerate(model.vertex_buffers):
        geoms = [(gi, g) for gi, g in enumerate(model.geometries) if g.lods and g.lods[0].vertex_buffer == vb_index]
        if not geoms:
            continue
        with np.errstate(all="ignore"):
            mesh = _vertex_buffer_to_mesh(vb, vb_index, to_core, f"{name}" if vb_index == 0 else f"{name}.{vb_index}")
        for label, arr in (("position", mesh.positions), ("normal", mesh.normals), ("tangent", mesh.tangents)):
            if arr is not None:
                bad = np.flatnonzero(~np.isfinite(arr).all(axis=1))
                if len(bad):
                    warnings.append(f"vertex buffer {vb_index}: {len(bad)} vertices with a non-finite {label} "
                                    f"(first: vertex {int(bad[0])})")
        tris, mats, joints = [], [], None
        if vb.has("BLENDINDICES0"):
            joints = np.zeros((len(vb.vertices), 4), dtype=np.int32)
        for slot, (gi, g) in enumerate(geoms):
            lod = g.lods[0]
            if len(g.lods) > 1:
                warnings.append(f"geometry {gi}: LOD 0 of {len(g.lods)} imported")
            if lod.index_buffer >= len(model.index_buffers):
                raise FormatError(f"index buffer {lod.index_buffer} of {len(model.index_buffers)}", None,
                                  f"geometry {gi} LOD 0 index buffer")
            ib = model.index_buffers[lod.index_buffer]
            if lod.index_start + lod.index_count > len(ib.indices):
                raise FormatError(f"indices {lod.index_start}+{lod.index_count} beyond the {len(ib.indices)} stored",
                                  None, f"geometry {gi} LOD 0 index range")
            idx = ib.indices[lod.index_start:lod.index_start + lod.index_count].astype(np.int64)
            if len(idx) and idx.max() >= len(vb.vertices):
                raise FormatError(f"vertex index {int(idx.max())} ≥ vertex count {len(vb.vertices)}", None,
                                  f"geometry {gi} indices")
            if lod.primitive_type != 0:
                warnings.append(f"geometry {gi}: primitive type "
                                f"{umd2.PRIMITIVE_TYPES[lod.primitive_type] if lod.primitive_type < 6 else lod.primitive_type}"
                                " is not imported")
                continue
            if len(idx) % 3:
                warnings.append(f"geometry {gi}: {len(idx) % 3} trailing indices ignored")
                idx = idx[: len(idx) - len(idx) % 3]
            t = idx.reshape(-1, 3)
            tris.append(t)
            mats.append(np.full(len(t), slot, dtype=np.int32))
            scene.materials.append(cm.Material(name=f"{name}_{gi}", extras={"urho": {"geometry": gi}}))
            mesh.materials.append(len(scene.materials) - 1)
            if joints is not None:
                mapping = g.bone_mapping.astype(np.int64)
                local = vb.vertices["BLENDINDICES0"][np.unique(t)].astype(np.int64)
                used = np.unique(t)
                if len(mapping):
                    if local.max(initial=0) >= len(mapping):
                        raise FormatError(f"blend index {int(local.max())} ≥ bone mapping size {len(mapping)}", None,
                                          f"geometry {gi} blend indices")
                    glob = mapping[local]
                else:
                    glob = local
                if glob.size and glob.max() >= max(n_bones, 1):
                    raise FormatError(f"bone index {int(glob.max())} ≥ bone count {n_bones}", None,
                                      f"geometry {gi} bone mapping")
                joints[used] = glob
        mesh.triangles = np.concatenate(tris).astype(np.int32) if tris else np.zeros((0, 3), np.int32)
        mesh.material_indices = np.concatenate(mats) if mats else np.zeros(0, np.int32)
        if joints is not None and vb.has("BLENDWEIGHTS0"):
            mesh.joints = joints
            mesh.weights = vb.vertices["BLENDWEIGHTS0"].astype(np.float32)
        scene.meshes.append(mesh)
    return scene, warnings


def _skeleton_to_core(model: umd2.Model, to_core: np.ndarray, name: str) -> cm.Skeleton:
    n = len(model.bones)
    skel = cm.Skeleton(name=name)
    for i, b in enumerate(model.bones):
        parent = -1 if b.parent == i else b.parent
        if parent < -1 or parent >= n:
            raise FormatError(f"parent {b.parent} outside 0..{n - 1}", model.bone_offsets[i] if model.bone_offsets else None,
                              f"bone {i} ({b.name}) parent")
        offset = offset_to_matrix(b.offset)
        try:
            bind_file = np.linalg.inv(offset)
        except np.linalg.LinAlgError:
            raise FormatError("offset matrix is singular", model.bone_offsets[i] if model.bone_offsets else None,
                              f"bone {i} ({b.name}) offset matrix") from None
        local = trs_to_matrix(b.position, b.rotation, b.scale)
        if parent < 0:
            local = to_core @ local
        t, r, s = matrix_to_trs(local)
        extras = {"index": i, "initial": [float(x) for x in (*b.position, *b.rotation, *b.scale)],
                  "offset": [float(x) for x in b.offset], "collision_mask": int(b.collision_mask)}
        if b.radius is not None:
            extras["radius"] = float(b.radius)
        if b.bbox is not None:
            extras["bbox"] = [float(x) for x in b.bbox]
        skel.bones.append(cm.Bone(name=b.name, parent=parent, bind=to_core @ bind_file, rest_translation=t,
                                  rest_rotation=r, rest_scale=s, extras={"urho": extras}))
    try:
        skel.topological_order()
    except ValueError as e:
        raise FormatError(str(e), None, "bone parents") from None
    return skel


def _vertex_buffer_to_mesh(vb: umd2.VertexBuffer, vb_index: int, to_core: np.ndarray, name: str) -> cm.Mesh:
    v = vb.vertices
    r3 = to_core[:3, :3]
    if not vb.has("POSITION0"):
        raise FormatError("vertex buffer has no POSITION element", None, f"vertex buffer {vb_index} elements")
    mesh = cm.Mesh(name=name, positions=(v["POSITION0"].astype(np.float64) @ r3.T).astype(np.float32),
                   triangles=np.zeros((0, 3), np.int32))
    if vb.has("NORMAL0"):
        mesh.normals = (v["NORMAL0"].astype(np.float64) @ r3.T).astype(np.float32)
    if vb.has("TANGENT0") and v.dtype["TANGENT0"].shape == (4,):
        t = v["TANGENT0"].astype(np.float64)
        mesh.tangents = np.concatenate([t[:, :3] @ r3.T, t[:, 3:]], axis=1).astype(np.float32)
    for e in vb.elements:
        if e.semantic == SEM["TEXCOORD"] and e.type == TYPE["VECTOR2"]:
            uv = v[e.field_name].astype(np.float32).copy()
            uv[:, 1] = 1.0 - uv[:, 1]
            mesh.uvs.append(("UVMap" if e.index == 0 else f"UVMap{e.index}", uv))
        elif e.semantic == SEM["COLOR"] and e.type == TYPE["UBYTE4_NORM"]:
            mesh.colors.append(("Color" if e.index == 0 else f"Color{e.index}",
                                v[e.field_name].astype(np.float32) / 255.0))
    mesh.extras["urho"] = {"elements": [e.descriptor for e in vb.elements], "vertex_buffer": vb_index}
    return mesh


# ---------------------------------------------------------------------------------------------
# core → file

def from_scene(scene: cm.Scene, profile: str = "urhox") -> tuple[umd2.Model, list[str]]:
    """Build UMD2 records from a core Scene. Raises ExportError naming what cannot be written."""
    _, to_file = _basis(profile)
    warnings: list[str] = []
    skel = scene.skeleton
    n_bones = len(skel.bones) if skel else 0
    if n_bones > 255:
        raise ExportError(f"{n_bones} bones: UBYTE4 blend indices address at most 256")
    model = umd2.Model(magic="UMD2")
    if skel:
        model.bones = _bones_to_file(skel, to_file)

    meshes = [m for m in scene.meshes if len(m.triangles)]
    if not meshes:
        raise ExportError("nothing to export: no mesh with triangles")
    skinned = skel is not None and any(m.weights is not None for m in meshes)
    elements = _elements_for(meshes, skinned)
    dt = umd2.vertex_dtype(elements)
    total = sum(m.vertex_count for m in meshes)
    verts = np.zeros(total, dtype=dt)
    index_parts, geometries, centers = [], [], []
    base, index_start = 0, 0
    r3 = to_file[:3, :3]
    all_pos = []
    for m in meshes:
        _check_mesh(m, n_bones)
        sl = slice(base, base + m.vertex_count)
        pos = m.positions.astype(np.float64) @ r3.T
        all_pos.append(pos)
        verts["POSITION0"][sl] = pos
        if "NORMAL0" in dt.names:
            if m.normals is not None:
                verts["NORMAL0"][sl] = m.normals.astype(np.float64) @ r3.T
        if "COLOR0" in dt.names:
            verts["COLOR0"][sl] = 255
            if m.colors:
                verts["COLOR0"][sl] = np.clip(np.rint(m.colors[0][1] * 255.0), 0, 255).astype(np.uint8)
        for e in elements:
            if e.semantic == SEM["TEXCOORD"]:
                if e.index < len(m.uvs):
                    uv = m.uvs[e.index][1].astype(np.float32).copy()
                    uv[:, 1] = 1.0 - uv[:, 1]
                    verts[e.field_name][sl] = uv
        if "TANGENT0" in dt.names and m.tangents is not None:
            t = m.tangents.astype(np.float64)
            verts["TANGENT0"][sl] = np.concatenate([t[:, :3] @ r3.T, t[:, 3:]], axis=1)
        if skinned and m.weights is not None:
            k = min(4, m.weights.shape[1])
            verts["BLENDWEIGHTS0"][sl, :k] = m.weights[:, :k]
            j = np.where(m.weights[:, :k] > 0, m.joints[:, :k], 0)
            verts["BLENDINDICES0"][sl, :k] = j.astype(np.uint8)
        mat_idx = m.material_indices if m.material_indices is not None else np.zeros(len(m.triangles), np.int32)
        for slot in np.unique(mat_idx):
            tris = m.triangles[mat_idx == slot].astype(np.int64) + base
            index_parts.append(tris.reshape(-1))
            count = tris.size
            mapping = np.arange(n_bones, dtype=np.uint32) if skinned else np.zeros(0, np.uint32)
            geometries.append(umd2.Geometry(mapping, [umd2.LodLevel(0.0, 0, 0, 0, index_start, count)]))
            used = np.unique(tris)
            centers.append(verts["POSITION0"][used].astype(np.float64).mean(axis=0))
            index_start += count
        if m.shape_keys:
            warnings.append(f"{m.name}: shape keys not written (UrhoX morph count is 0): "
                            + ", ".join(k.name for k in m.shape_keys))
        base += m.vertex_count
    indices = np.concatenate(index_parts)
    size = 2 if total <= 65535 else 4
    model.vertex_buffers = [umd2.VertexBuffer(elements, verts)]
    model.index_buffers = [umd2.IndexBuffer(size, indices.astype(np.uint16 if size == 2 else np.uint32))]
    model.geometries = geometries
    pos = verts["POSITION0"]
    model.bbox_min = pos.min(axis=0).astype(np.float32)
    model.bbox_max = pos.max(axis=0).astype(np.float32)
    model.centers = np.array(centers, dtype=np.float32).reshape(-1, 3)
    return model, warnings


def _elements_for(meshes: list[cm.Mesh], skinned: bool) -> list[VertexElement]:
    """The seed's element order: position, normal, colour, texcoords, tangent, weights, indices."""
    n_uv = max(1, max(len(m.uvs) for m in meshes))
    els = [VertexElement(TYPE["VECTOR3"], SEM["POSITION"], 0), VertexElement(TYPE["VECTOR3"], SEM["NORMAL"], 0),
           VertexElement(TYPE["UBYTE4_NORM"], SEM["COLOR"], 0)]
    els += [VertexElement(TYPE["VECTOR2"], SEM["TEXCOORD"], i) for i in range(n_uv)]
    els.append(VertexElement(TYPE["VECTOR4"], SEM["TANGENT"], 0))
    if skinned:
        els += [VertexElement(TYPE["VECTOR4"], SEM["BLENDWEIGHTS"], 0),
                VertexElement(TYPE["UBYTE4"], SEM["BLENDINDICES"], 0)]
    return els


def _check_mesh(m: cm.Mesh, n_bones: int) -> None:
    """Invariants checked before writing; violations name the mesh and vertex."""
    for label, arr in (("position", m.positions), ("normal", m.normals), ("tangent", m.tangents),
                       ("weight", m.weights)):
        if arr is not None:
            bad = ~np.isfinite(np.asarray(arr, dtype=np.float64)).all(axis=-1)
            if bad.any():
                raise ExportError(f"mesh {m.name}: vertex {int(np.argmax(bad))} has a non-finite {label}")
    if m.triangles.size and (m.triangles.min() < 0 or m.triangles.max() >= m.vertex_count):
        raise ExportError(f"mesh {m.name}: a triangle indexes outside 0..{m.vertex_count - 1}")
    if m.weights is not None:
        used = m.weights > 0
        if used.any() and (m.joints[used].min() < 0 or m.joints[used].max() >= n_bones):
            v = int(np.argwhere(used & ((m.joints < 0) | (m.joints >= n_bones)))[0][0])
            raise ExportError(f"mesh {m.name}: vertex {v} is weighted to a bone outside 0..{n_bones - 1}")


def _bones_to_file(skel: cm.Skeleton, to_file: np.ndarray) -> list[umd2.BoneRecord]:
    try:
        skel.topological_order()
    except ValueError as e:
        raise ExportError(str(e)) from None
    out = []
    binds = skel.binds()
    for i, b in enumerate(skel.bones):
        if not np.isfinite(b.bind).all():
            raise ExportError(f"bone {i} ({b.name}) has a non-finite bind matrix")
        bind_file = to_file @ b.bind
        offset = affine_inverse(bind_file)[:3, :].reshape(-1)
        local = b.rest_local if b.parent >= 0 else to_file @ b.rest_local
        t, r, s = matrix_to_trs(local)
        raw = b.extras.get("urho", {})
        rec = umd2.BoneRecord(name=b.name, parent=i if b.parent < 0 else b.parent,
                              position=t.astype(np.float32), rotation=r.astype(np.float32),
                              scale=s.astype(np.float32), offset=offset.astype(np.float32))
        if "offset" in raw and _bind_matches(bind_file, raw["offset"]):
            rec.offset = np.array(raw["offset"], dtype=np.float32)
        if "initial" in raw and _initial_matches(t, r, s, raw["initial"]):
            ini = np.array(raw["initial"], dtype=np.float32)
            rec.position, rec.rotation, rec.scale = ini[:3], ini[3:7], ini[7:10]
        if "collision_mask" in raw:
            rec.collision_mask = int(raw["collision_mask"])
            rec.radius = raw.get("radius")
            rec.bbox = np.array(raw["bbox"], dtype=np.float32) if "bbox" in raw else None
        out.append(rec)
    del binds
    return out


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
