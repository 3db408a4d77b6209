"""MDB records ⇄ core.model.Scene. MDB is Z-up metres like Blender: no axis or unit change. The one
conversion is the texture V: Blender's v = −stored v (nw2fbx writes (u, −v)), and uvw.z (the tangent
handedness) rides as the core tangent's w.

Without a skeleton (names and positions of the bones live only in the GR2 file) a SKIN mesh's joints are its
raw u8 indices and the scene has no skeleton; with the skeleton's bone names the filtered index of the file
(`bones.skin_bone_order`) becomes the skeleton index. Everything the core model does not hold (raw 32-byte
names and maps, packet order and type, material values, walk flags, hook/hair/helm/cols records) rides in
`extras["mdb"]` as JSON-compatible values, from which `packet_from_mesh` and `records_from_extras` rebuild
the packets.
"""
from __future__ import annotations

import os

import numpy as np

from ..core import model as cm
from ..core.errors import FormatError, quiet_float_errors
from . import bones as mdb_bones
from . import check as mdb_check
from . import mdb

WALK_SURFACES = {  # walk material name → face flags (bit 0 walkable, bits 3–13 the surface)
    "w_Nonwalk": 0x0, "w_Dirt": 0x9, "w_Grass": 0x11, "w_Stone": 0x21, "w_Wood": 0x41, "w_Carpet": 0x81,
    "w_Metal": 0x101, "w_Swamp": 0x201, "w_Mud": 0x401, "w_Leaves": 0x801, "w_Water": 0x1001, "w_Puddles": 0x2001,
}
WALK_FLAG_BITS = 0x3FF9  # bits 0 and 3–13: what a walk material sets
WALK_SENTINEL_Z = -1_000_000.0  # link vertices
WALK_SENTINEL_SHOWN_Z = -20.0  # where they show in Blender, as nw2fbx puts them


def walk_material_name(flags: int) -> str:
    """The walk material of a face: the table's name for its material bits, `w_Nonwalk` when not walkable."""
    bits = int(flags) & WALK_FLAG_BITS
    for name, value in WALK_SURFACES.items():
        if value == bits:
            return name
    return f"w_0x{bits:x}"


def lod_level(name: str) -> int:
    """0 for the full mesh, 1 / 2 for `*_L01` / `*_L02`."""
    stem = name.rsplit("_", 1)
    if len(stem) == 2 and len(stem[1]) == 3 and stem[1][0] in "Ll" and stem[1][1:].isdigit():
        return int(stem[1][1:])
    return 0


# -- JSON-compatible copies of raw fields -------------------------------------------------------------------

def material_extras(m: mdb.Material) -> dict:
    return {
        "maps": {w: getattr(m, w).hex() for w in mdb.Material.MAPS},
        "diffuse_color": [float(x) for x in m.diffuse_color],
        "specular_color": [float(x) for x in m.specular_color],
        "specular_level": float(m.specular_level),
        "specular_power": float(m.specular_power),
        "flags": int(m.flags),
    }


def material_from_extras(d: dict) -> mdb.Material:
    maps = d.get("maps", {})
    return mdb.Material(
        *[bytes.fromhex(maps[w]) if w in maps else bytes(mdb.NAME_SIZE) for w in mdb.Material.MAPS],
        np.asarray(d.get("diffuse_color", (1, 1, 1)), "<f4"), np.asarray(d.get("specular_color", (1, 1, 1)), "<f4"),
        np.float32(d.get("specular_level", 1.0)), np.float32(d.get("specular_power", 20.0)), int(d.get("flags", 0)))


def point_extras(p) -> dict:
    if isinstance(p, mdb.ColsPacket):
        return {"type": "COLS", "bones": [int(b) for b in p.spheres["bone"]],
                "radii": [float(r) for r in p.spheres["radius"]], "extra": p.extra.hex()}
    if isinstance(p, mdb.PointPacket):
        return {"type": p.type, "name": p.name.hex(), "kind": int(p.kind), "size": int(p.size),
                "position": [float(x) for x in p.position], "orientation": [float(x) for x in p.orientation.ravel()],
                "extra": p.extra.hex()}
    return {"type": p.type, "body": p.body.hex()}


def record_from_extras(d: dict):
    t = d["type"]
    if t == "COLS":
        spheres = np.zeros(len(d["bones"]), mdb.COLS_SPHERE)
        spheres["bone"], spheres["radius"] = d["bones"], d["radii"]
        return mdb.ColsPacket(spheres, bytes.fromhex(d.get("extra", "")))
    if t in mdb.POINT_TYPES:
        return mdb.PointPacket(t, bytes.fromhex(d["name"]), int(d["kind"]), int(d.get("size", 0)),
                               np.asarray(d["position"], "<f4"), np.asarray(d["orientation"], "<f4").reshape(3, 3),
                               bytes.fromhex(d.get("extra", "")))
    return mdb.RawPacket(t, bytes.fromhex(d["body"]))


# -- file → scene ------------------------------------------------------------------------------------------

def _check_faces(label: str, faces: np.ndarray, n: int, offset: int | None) -> None:
    bad = np.flatnonzero((faces >= n).any(axis=1))
    if len(bad):
        f = int(bad[0])
        raise FormatError(f"{label}: face {f} uses vertex {int(faces[f].max())}, the packet has {n} vertices",
                          offset, "faces")


def skin_joints(p: mdb.MeshPacket, label: str, skeleton_names: list[str] | None) -> np.ndarray:
    """(V, 4) joints of a SKIN packet: raw u8 indices, or skeleton indices through the filtered bone order."""
    raw = p.vertices["bones"].astype(np.int32)
    if skeleton_names is None:
        return raw
    order = np.asarray(mdb_bones.skin_bone_order(skeleton_names, mdb_bones.uses_head_bones(p.material.flags)),
                       np.int32)
    used = p.vertices["weights"] > 0
    bad = np.flatnonzero((used & (raw >= len(order))).any(axis=1))
    if len(bad):
        v = int(bad[0])
        raise FormatError(f"{label}: vertex {v} uses bone index {int(raw[v].max())}, beyond the "
                          f"{len(order)} bones of the skeleton's filtered list", p.offset, "bones")
    if not len(order):
        return np.full_like(raw, -1)
    return np.where(raw < len(order), order[np.minimum(raw, len(order) - 1)], -1).astype(np.int32)


def _mesh(p, index: int, skeleton_names) -> cm.Mesh:
    label = f"packet {index} {p.type} ({p.name_text})"
    if isinstance(p, mdb.WalkPacket):
        faces = p.faces["v"].astype(np.int32)
        _check_faces(label, faces, len(p.vertices), p.offset)
        positions = p.vertices.astype(np.float32)
        names = [walk_material_name(f) for f in p.faces["flags"]]
        slots = list(dict.fromkeys(names))
        mesh = cm.Mesh(p.name_text, positions, faces,
                       material_indices=np.array([slots.index(n) for n in names], np.int32))
        mesh.extras["mdb"] = {"type": "WALK", "packet": index, "name": p.name.hex(), "ui_flags": int(p.ui_flags),
                              "walk_flags": [int(f) for f in p.faces["flags"]], "walk_materials": slots,
                              "extra": p.extra.hex()}
        return mesh
    v = p.vertices
    faces = p.faces.astype(np.int32)
    _check_faces(label, faces, len(v), p.offset)
    uv = np.stack([v["uvw"][:, 0], -v["uvw"][:, 1]], axis=1).astype(np.float32)
    mesh = cm.Mesh(p.name_text, v["position"].astype(np.float32), faces, normals=v["normal"].astype(np.float32),
                   uvs=[("UVMap", uv)])
    if "tangent" in v.dtype.names:
        mesh.tangents = np.concatenate([v["tangent"], v["uvw"][:, 2:3]], axis=1).astype(np.float32)
    if p.type == "SKIN":
        mesh.joints = skin_joints(p, label, skeleton_names)
        mesh.weights = v["weights"].astype(np.float32)
    mesh.extras["mdb"] = {"type": p.type, "packet": index, "name": p.name.hex(), "skeleton": p.skeleton.hex(),
                          "material": material_extras(p.material), "lod": lod_level(p.name_text),
                          "extra": p.extra.hex()}
    return mesh


def _material(p: mdb.MeshPacket, name: str) -> cm.Material:
    m = p.material
    mat = cm.Material(name, base_color=(*[float(x) for x in m.diffuse_color], 1.0),
                      alpha_mode="CLIP" if m.flags & mdb.ALPHA_TEST else "BLEND" if m.flags & mdb.ALPHA_BLEND
                      else "OPAQUE")
    diffuse = m.map_name("diffuse_map")
    if diffuse:
        mat.base_color_texture = cm.Texture(diffuse, diffuse)
    normal = m.map_name("normal_map")
    if normal:
        mat.normal_texture = cm.Texture(normal, normal)
    mat.extras["mdb"] = material_extras(m)
    return mat


@quiet_float_errors
def to_scene(m: mdb.MdbFile, name: str = "mdb", skeleton_names: list[str] | None = None
             ) -> tuple[cm.Scene, list[str]]:
    """The records as a core Scene (atomic: everything is checked before anything is returned)."""
    warnings = [str(f) for f in mdb_check.validate(m)]
    scene = cm.Scene(name)
    points = []
    skins = 0
    for i, p in enumerate(m.packets):
        if isinstance(p, (mdb.MeshPacket, mdb.WalkPacket)):
            mesh = _mesh(p, i, skeleton_names)
            if isinstance(p, mdb.MeshPacket):
                mesh.materials = [len(scene.materials)]
                mesh.material_indices = np.zeros(len(mesh.triangles), np.int32)
                scene.materials.append(_material(p, p.name_text or f"packet_{i}"))
                skins += p.type == "SKIN"
            scene.meshes.append(mesh)
        else:
            d = point_extras(p)
            d["packet"] = i
            points.append(d)
    if skins and skeleton_names is None:
        warnings.append(f"{skins} SKIN packet(s) without a skeleton: weights kept as vertex groups bone_<n>; "
                        "bone names and positions are only in the GR2 skeleton")
    scene.extras["mdb"] = {"points": points, "packets": len(m.packets), "major": m.major, "minor": m.minor,
                           "gaps": [g.hex() for g in m.gaps], "tail": m.tail.hex()}
    return scene, warnings


def semantic(m: mdb.MdbFile) -> list[str]:
    """What an import runs after the read (hostile suite, fuzzing): the mapping, with its warnings."""
    return to_scene(m)[1]


def load(path: str, data: bytes, with_animations: bool = True, motions=()) -> tuple[cm.Scene, list[str]]:
    """The registry's `load`: the file as a core Scene (an MDB holds no animation; `motions` are not MDB's)."""
    m = mdb.read(data)
    scene, warnings = to_scene(m, os.path.splitext(os.path.basename(path))[0] or "mdb")
    return scene, list(m.warnings) + warnings


# -- packets from mesh data --------------------------------------------------------------------------------

@quiet_float_errors
def tangent_frame(normals: np.ndarray, tangents4: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The frame the real files have: tangent (MikkTSpace), binormal = −(n × t), uvw.z = MikkTSpace's sign."""
    n = np.asarray(normals, np.float32)
    t = np.asarray(tangents4[:, :3], np.float32)
    sign = np.asarray(tangents4[:, 3], np.float32)
    return t, (-np.cross(n, t)).astype(np.float32), sign


def mesh_vertices(ptype: str, positions, normals, uv, tangents=None, binormals=None, uvw_z=None,
                  weights=None, bones=None, bone_count=None) -> np.ndarray:
    """A packet's vertex records from per-vertex arrays (Blender's uv: stored v = −v)."""
    n = len(positions)
    v = np.zeros(n, mdb.VERTEX_DTYPES[ptype])
    v["position"] = positions
    v["normal"] = normals
    uvw = np.zeros((n, 3), np.float32)
    if uv is not None:
        uvw[:, 0] = uv[:, 0]
        uvw[:, 1] = -np.asarray(uv[:, 1], np.float32)
    if uvw_z is not None:
        uvw[:, 2] = uvw_z
    elif ptype in ("COL2", "COL3"):
        uvw[:, 2] = 0
    v["uvw"] = uvw
    if "tangent" in v.dtype.names:
        v["tangent"] = 0 if tangents is None else tangents
        v["binormal"] = 0 if binormals is None else binormals
    if ptype == "SKIN":
        v["weights"] = weights
        v["bones"] = bones
        v["bone_count"] = 4.0 if bone_count is None else bone_count
    return v
