"""MDB records ⇄ core.model.Scene. MDB is Z-up metres like Blender: no axis or unit change. The one
conversion is the texture V: Blender's v = −stored v (nw2fbx writes (u, −v)), and uvw.z (the tangent
handedness) rides as the core tangent's w.

Without a skeleton (names and positions of the bones live only in the GR2 file) a SKIN mesh's joints are its
raw u8 indices and the scene has no skeleton; with the skeleton's bone names the filtered index of the file
(`bones.skin_bone_order`) becomes the skeleton index; `load` finds the GR2 skeleton itself (`gr2/bind.py`).
Everything the core model does not hold (raw 32-byte names and maps, packet order and type, material values,
walk flags, hook/hair/helm/cols records) rides in `extras["mdb"]` as JSON-compatible values, from which
`packet_from_mesh` and `records_from_extras` rebuild the packets.
"""
from __future__ import annotations

import os

import numpy as np

from ...core import model as cm
from ...core.errors import ExportError, FormatError, quiet_float_errors
from ..archive import archive
from ..gr2 import bind
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
RECORDS = "mdb_vertices"  # Mesh.extras key of the packet's vertex records (numpy; not for custom properties)


def walk_material_name(flags: int) -> str:
    """The walk material of a face from its material bit (bits 3–13): the table's name for the exact value,
    else the name of its lowest material bit; `w_Nonwalk` when it has none. (Unchanged faces keep their exact
    flags on export; the name only decides what a face changed to.)"""
    bits = int(flags) & WALK_FLAG_BITS
    for name, value in WALK_SURFACES.items():
        if value == bits:
            return name
    material = bits & 0x3FF8
    if material:
        lowest = material & -material
        return next(n for n, v in WALK_SURFACES.items() if v & 0x3FF8 == lowest)
    return "w_Nonwalk"


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
    mesh.extras[RECORDS] = v  # the file's vertex records, reused by `from_scene` where the mesh still says the same
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


def skins_of(m: mdb.MdbFile):
    """The part's SKIN packets as (positions, joints, weights) through a skeleton of the given bone names: how
    `bind.pair` tells apart several skeleton files of one name (FormatError when an index is beyond them)."""
    packets = [(i, p) for i, p in enumerate(m.packets) if isinstance(p, mdb.MeshPacket) and p.type == "SKIN"]

    def skins(names: list[str]):
        return [(p.vertices["position"], skin_joints(p, f"packet {i} SKIN ({p.name_text})", names),
                 p.vertices["weights"]) for i, p in packets]
    return skins


def skin_skeleton_names(m: mdb.MdbFile) -> list[str]:
    """The skeleton names the SKIN packets give, in packet order without repeats."""
    names = [mdb.text_of(p.skeleton) for p in m.packets if isinstance(p, mdb.MeshPacket) and p.type == "SKIN"]
    return list(dict.fromkeys(n for n in names if n))


@quiet_float_errors
def to_scene(m: mdb.MdbFile, name: str = "mdb", skeleton_names: list[str] | None = None,
             skeleton: cm.Skeleton | None = None) -> tuple[cm.Scene, list[str]]:
    """The records as a core Scene (atomic: everything is checked before anything is returned); with the
    GR2 `skeleton` (gr2/bind.py) the scene holds it and the SKIN joints index it."""
    warnings = [str(f) for f in mdb_check.validate(m)]
    scene = cm.Scene(name, skeleton=skeleton)
    if skeleton is not None:
        skeleton_names = skeleton.names
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
        named = ", ".join(skin_skeleton_names(m)) or "(none named)"
        # without bones a convert target writes the meshes rigid (PMX: on one root bone): say so here, once
        warnings.append(f"{skins} SKIN packet(s) without a skeleton ({named} not found): no bones, so the weights "
                        "stay vertex groups bone_<n> and a convert writes the meshes rigid; bone names and positions "
                        "are only in the GR2 skeleton, found by the name the packets give in the .gr2 files beside "
                        "the MDB or in --skeleton-path DIR (in Blender: the import's Skeleton Path, then the skeleton "
                        "folders of the add-on's preferences)")
    scene.extras["mdb"] = {"points": points, "packets": len(m.packets), "major": m.major, "minor": m.minor,
                           "gaps": [g.hex() for g in m.gaps], "tail": m.tail.hex()}
    return scene, warnings


def semantic(m: mdb.MdbFile) -> list[str]:
    """What an import runs after the read (hostile suite, fuzzing): the mapping, with its warnings."""
    return to_scene(m)[1]


def load(path: str, data: bytes, with_animations: bool = True, motions=(), skeleton_path=None
         ) -> tuple[cm.Scene, list[str]]:
    """The registry's `load`: the file as a core Scene, bound to the GR2 skeleton its SKIN packets name when
    it lies beside the file or in `skeleton_path` (an MDB holds no animation; `motions` are not MDB's)."""
    m = mdb.read(data)
    skeleton, _, found = bind.bind(skin_skeleton_names(m), path, skeleton_path, skins_of=skins_of(m))
    inside = archive.member_of(path)  # "heads.hak:P_HEF_head83.mdb": named after its member
    stem = os.path.splitext(os.path.basename(inside[1] if inside else path))[0]
    scene, warnings = to_scene(m, stem or "mdb", skeleton=skeleton)
    return scene, list(m.warnings) + found + warnings


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


# -- scene → file ------------------------------------------------------------------------------------------

def _packet_type(mesh: cm.Mesh) -> str:
    kept = mesh.extras.get("mdb", {}).get("type")
    if kept in mdb.MESH_TYPES + ("WALK",):
        return kept
    upper = mesh.name.upper()
    for suffix, ptype in (("_C2", "COL2"), ("_C3", "COL3"), ("_W", "WALK")):
        if upper.endswith(suffix):
            return ptype
    return "SKIN" if mesh.weights is not None and mesh.joints is not None else "RIGD"


def _raw(extras: dict, key: str, text: str) -> bytes:
    raw = bytes.fromhex(extras[key]) if extras.get(key) else None
    if raw is not None and mdb.text_of(raw) == text:
        return raw
    return mdb.raw_name(text)


def _walk_packet(mesh: cm.Mesh, extras: dict) -> mdb.WalkPacket:
    n = len(mesh.triangles)
    kept = np.asarray(extras.get("walk_flags", []), np.uint32)
    names = extras.get("walk_materials", [])
    idx = np.asarray(mesh.material_indices if mesh.material_indices is not None else np.zeros(n), np.int64)
    flags = kept.copy() if len(kept) == n else np.full(n, WALK_SURFACES["w_Stone"], np.uint32)
    for slot, name in enumerate(names):
        value = WALK_SURFACES.get(name)
        if value is None:
            continue
        rows = np.flatnonzero(idx == slot)
        if len(kept) == n:
            rows = rows[np.array([walk_material_name(f) != name for f in kept[rows]], bool)] if len(rows) else rows
        flags[rows] = (flags[rows] & ~np.uint32(WALK_FLAG_BITS)) | np.uint32(value)
    faces = np.zeros(n, mdb.WALK_FACE)
    faces["v"] = mesh.triangles
    faces["flags"] = flags
    return mdb.WalkPacket(_raw(extras, "name", mesh.name), int(extras.get("ui_flags", 0)),
                          np.asarray(mesh.positions, np.float32), faces, bytes.fromhex(extras.get("extra", "")))


def _skin_bones(mesh: cm.Mesh, skeleton_names: list[str] | None, head: bool) -> np.ndarray:
    """u8 SKIN indices of the mesh's joints: skeleton indices through the filtered order, or raw indices."""
    joints = np.asarray(mesh.joints, np.int64)
    live = np.asarray(mesh.weights) > 0
    if skeleton_names is not None:
        order = mdb_bones.skin_bone_order(skeleton_names, head)
        lut = np.full(max(len(skeleton_names), 1), -1, np.int64)
        lut[order] = np.arange(len(order))
        joints = np.where((joints >= 0) & (joints < len(lut)), lut[np.clip(joints, 0, len(lut) - 1)], -1)
    bad = np.flatnonzero((live & ((joints < 0) | (joints > 255))).any(axis=1))
    if len(bad):
        v = int(bad[0])
        raise ExportError(f"{mesh.name}: vertex {v} uses a bone with no MDB index (u8, filtered skeleton order)")
    return np.where(live, joints, 0).astype(np.uint8)


def _mesh_packet(mesh: cm.Mesh, ptype: str, scene: cm.Scene, skeleton: str | None) -> mdb.MeshPacket:
    extras = mesh.extras.get("mdb", {})
    material = material_from_extras(extras["material"]) if "material" in extras else mdb.Material()
    if "material" not in extras and mesh.materials and mesh.materials[0] < len(scene.materials):
        source = scene.materials[mesh.materials[0]]
        material.diffuse_color = np.asarray(source.base_color[:3], "<f4")
        if source.base_color_texture is not None:
            texture = source.base_color_texture
            stem = os.path.splitext(os.path.basename(texture.path or texture.name))[0]
            material.diffuse_map = mdb.raw_name(stem.encode("utf-8")[:31].decode("utf-8", "ignore"))
    n = mesh.vertex_count
    normals = np.asarray(mesh.normals if mesh.normals is not None else np.tile(np.float32([0, 0, 1]), (n, 1)),
                         np.float32)
    uv = np.asarray(mesh.uvs[0][1], np.float32) if mesh.uvs else None
    tangents = binormals = sign = None
    if mesh.tangents is not None:
        tangents, binormals, sign = tangent_frame(normals, np.asarray(mesh.tangents, np.float32))
    weights = bones = None
    skeleton_raw = bytes(mdb.NAME_SIZE)
    if ptype == "SKIN":
        names = scene.skeleton.names if scene.skeleton is not None else None
        bones = _skin_bones(mesh, names, mdb_bones.uses_head_bones(material.flags))
        weights = np.asarray(mesh.weights, np.float32)
        if weights.shape[1] < 4:
            pad = 4 - weights.shape[1]
            weights = np.pad(weights, ((0, 0), (0, pad)))
            bones = np.pad(bones, ((0, 0), (0, pad)))
        if weights.shape[1] > 4:
            raise ExportError(f"{mesh.name}: {weights.shape[1]} weights per vertex, an MDB holds 4")
        text = skeleton or (mdb.text_of(bytes.fromhex(extras["skeleton"])) if extras.get("skeleton") else "")
        if not text:
            raise ExportError(f"{mesh.name}: SKIN needs the GR2 skeleton name (--skeleton NAME)")
        skeleton_raw = _raw(extras, "skeleton", text)
    if ptype in ("COL2", "COL3") and sign is None:
        sign = np.zeros(n, np.float32)
    vertices = mesh_vertices(ptype, np.asarray(mesh.positions, np.float32), normals, uv, tangents, binormals, sign,
                             weights, bones)
    kept = mesh.extras.get(RECORDS)
    if kept is not None and len(kept) == n and kept.dtype == vertices.dtype:
        # the file's bytes for every vertex whose fields, as the mesh holds them, are unchanged
        same = np.ones(n, bool)
        for name in ("position", "normal", "weights", "bones"):
            if name in vertices.dtype.names:
                same &= (vertices[name].reshape(n, -1).view(np.uint8) ==
                         kept[name].reshape(n, -1).view(np.uint8)).all(axis=1)
        same &= (vertices["uvw"][:, :2] == kept["uvw"][:, :2]).all(axis=1) | \
            (np.isnan(vertices["uvw"][:, :2]) & np.isnan(kept["uvw"][:, :2])).all(axis=1)
        if "tangent" in vertices.dtype.names:
            same &= (vertices["tangent"].view(np.uint32) == kept["tangent"].view(np.uint32)).all(axis=1)
            same &= vertices["uvw"][:, 2].view(np.uint32) == kept["uvw"][:, 2].view(np.uint32)
        vertices[same] = kept[same]
    return mdb.MeshPacket(ptype, _raw(extras, "name", mesh.name), material, vertices,
                          np.asarray(mesh.triangles).astype(np.uint16), skeleton_raw,
                          bytes.fromhex(extras.get("extra", "")))


@quiet_float_errors
def from_scene(scene: cm.Scene, skeleton: str | None = None) -> tuple[mdb.MdbFile, list[str]]:
    """The core Scene as MDB records: a mesh's kept packet type (else RIGD/SKIN/COL2/COL3/WALK by weights and
    name), kept names and materials, and the file's vertex records wherever the mesh still holds the same."""
    warnings: list[str] = []
    entries = []
    for n, mesh in enumerate(scene.meshes):
        if mesh.vertex_count > 65536:
            raise ExportError(f"{mesh.name}: {mesh.vertex_count} vertices in one packet; u16 faces reach 65,536")
        if len(mesh.name.encode("utf-8")) > mdb.NAME_SIZE and "name" not in mesh.extras.get("mdb", {}):
            raise ExportError(f"{mesh.name}: name over 32 bytes")
        ptype = _packet_type(mesh)
        packet = _walk_packet(mesh, mesh.extras.get("mdb", {})) if ptype == "WALK" else \
            _mesh_packet(mesh, ptype, scene, skeleton)
        kept = mesh.extras.get("mdb", {}).get("packet")
        entries.append(((0, kept) if kept is not None else (1, n), packet))
    model = scene.extras.get("mdb", {})
    for d in model.get("points", []):
        entries.append(((0, d["packet"]), record_from_extras(d)))
    entries.sort(key=lambda e: e[0])
    out = mdb.MdbFile([p for _, p in entries], int(model.get("major", 1)), int(model.get("minor", 12)))
    if model.get("packets") == len(out.packets):
        out.gaps = [bytes.fromhex(g) for g in model.get("gaps", [])]
        out.tail = bytes.fromhex(model.get("tail", ""))
    return out, warnings
