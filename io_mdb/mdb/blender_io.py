"""NWN2 MDB ⇄ Blender: import (atomic) and export (read-only, atomic write).

Import puts the model in a collection named after the file: RIGD/SKIN meshes with materials, COL2/COL3/WALK
meshes, LOD packets (`*_L01`, `*_L02`) in a child collection `LODs` hidden in the viewport, HOOK/HAIR/HELM
empties and COLS sphere empties. What the file holds beyond Blender's data is kept for export while it is
unchanged: raw 32-byte names and maps (object/material JSON property `nwn2_mdb`), packet order and type,
normals (`custom_normal`), tangents, binormals, uvw.z, SKIN slots and bone counts (point attributes), walk
flags (face attribute) and link-vertex z (point attribute), the stored 3×3 of point empties; in the JSON
property, what Blender cannot hold: faces that repeat a vertex (put back while Blender's faces are those of the
import), the normal and uv of vertices no face uses, and vertex records with NaN/Inf. A moved object (no
mirror) writes its world-space positions with the rest of its kept vertex data (vectors keep their length).

Export writes every MDB object of the chosen collection (its `LODs` child included although hidden), or of the
view layer: packets in their kept order first, then new objects by type and name (`*_C2` COL2, `*_C3` COL3,
`*_W` WALK, armature-deformed SKIN, other meshes RIGD, one packet per material slot in use; empties `HP_*` HOOK,
`COLS_*` COLS, HAIR/HELM by kept type or name). Before writing, the records go through `check.validate`: NaN/Inf
from Blender and indices out of range are refused naming the packet and vertex (a vertex record that is still
the file's, bytes and all, is written again with its non-finite values: `check` reports them).
"""
from __future__ import annotations

import dataclasses
import json
import os
import zlib

import bpy
import numpy as np
from mathutils import Matrix

from ...blender import armature as barmature
from ...blender import mesh as bmesh_
from ...blender import scene as bscene
from ...core import model as cm
from ...core.errors import ExportError, FormatError
from ...core.skinning import merge_repeated_bones
from ...core.fileio import output_path, write_atomic
from ..archive import archive
from ..gr2 import bind
from ..gr2 import blender_io as gr2_blender
from ..gr2 import export as gr2_export
from ..gr2.bind import SKELETON_PROP
from . import bones as mdb_bones
from . import check as mdb_check
from . import convert, mdb

PROP = "nwn2_mdb"  # JSON of the raw fields of the packet an object (or a model collection) came from
LODS = "LODs"
# what an object without a kept packet is exported as: a mesh by its name's ending, an empty by its name's start,
# or a hair or helm point by its property (or the packet type in its name)
MESH_SUFFIXES = (("_C2", "COL2"), ("_C3", "COL3"), ("_W", "WALK"))
EMPTY_PREFIXES = (("HP_", "HOOK"), ("COLS_", "COLS"))
POINT_PROPS = (("nwn2_shortening", "HAIR"), ("nwn2_hiding", "HELM"))
A_TANGENT, A_BINORMAL, A_UVW_Z = "nwn2_tangent", "nwn2_binormal", "nwn2_uvw_z"
A_BONES, A_BONE_COUNT = "nwn2_bones", "nwn2_bone_count"
A_WEIGHTS = tuple(f"nwn2_weight_{k}" for k in range(4))  # one FLOAT each: a FLOAT_COLOR would pass for colours
A_WALK_FLAGS, A_WALK_Z = "nwn2_walk_flags", "nwn2_walk_z"
A_POSITION = "nwn2_position"  # the file's position of each vertex: the vertices an edit moved are those that differ
MATERIAL_PROPS = ("nwn2_diffuse_color", "nwn2_specular_color", "nwn2_specular_level", "nwn2_specular_power",
                  "nwn2_flags")
MAP_EXTENSIONS = (".dds", ".tga", ".png")
MATRIX_TOLERANCE = 1e-6
WEIGHT_SUM_TOLERANCE = 1e-4
MAX_VERTICES = 65536
UNMAPPED = 1 << 20  # bone index of a vertex group that names no MDB bone
MAX_READ_INFLUENCES = 16  # influences read per vertex before the 4-weight rule is applied
ROW_ORDER = [1, 0, 2]  # nw2fbx reads the stored 3×3 with rows 1 and 0 swapped


# -- small helpers ------------------------------------------------------------------------------------------

def _positions_digest(positions: np.ndarray) -> int:
    return zlib.crc32(np.ascontiguousarray(positions, np.float32).tobytes())


def _get(attr, prop: str, n: int, width: int, dtype) -> np.ndarray:
    out = np.empty(n * width, dtype)
    if n:  # a mesh without vertices has no position attribute at all
        attr.data.foreach_get(prop, out)
    return out.reshape(n, width) if width > 1 else out


def _put(me, name: str, data_type: str, domain: str, prop: str, values) -> None:
    attr = me.attributes.new(name, data_type, domain)
    attr.data.foreach_set(prop, np.ascontiguousarray(values).reshape(-1))


# on an armature an MDB import built from a GR2 skeleton: its bones' names and rest matrices as built (JSON), so
# that the export can say what of an edited skeleton the MDB cannot hold (the GR2 import keeps the same)
SKELETON_REST_PROP = gr2_blender.REST_PROP
REST_TOLERANCE = 1e-5
BUILT_PROP = "skinbridge_mdb_built"  # on a point empty: its matrix as import built it (row-major)

def _same_floats(a, b, tolerance: float = 0.0) -> bool:
    """Equal within `tolerance`, NaN matching NaN and an infinity itself."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    with np.errstate(invalid="ignore"):
        close = (a == b) | (np.abs(a - b) <= tolerance) | (np.isnan(a) & np.isnan(b))
    return bool(np.all(close))


def _point_matrix(position, orientation) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = np.asarray(orientation, np.float64).reshape(3, 3)[ROW_ORDER]
    m[:3, 3] = np.asarray(position, np.float64)
    return m


def _find_map(base_dir: str, name: str) -> str | None:
    if not name or not base_dir or not os.path.isdir(base_dir):
        return None
    wanted = {(name + ext).lower() for ext in MAP_EXTENSIONS}
    for entry in sorted(os.listdir(base_dir)):
        path = os.path.join(base_dir, entry)
        if entry.lower() in wanted and os.path.isfile(path):  # a FIFO or device by that name would block Blender
            return path
    return None


# -- import -------------------------------------------------------------------------------------------------

def _material(packet_extras: dict, name: str, base_dir: str, created: list) -> bpy.types.Material:
    d = packet_extras["material"]
    mat = bpy.data.materials.new(name)
    created.append(mat)
    if mat.node_tree is None:
        mat.use_nodes = True
    nt = mat.node_tree
    bsdf = next(n for n in nt.nodes if n.type == "BSDF_PRINCIPLED")
    kd = [float(x) for x in d["diffuse_color"]]
    ks = [float(x) for x in d["specular_color"]]
    bsdf.inputs["Base Color"].default_value = (*kd, 1.0)
    if "Specular Tint" in bsdf.inputs:
        bsdf.inputs["Specular Tint"].default_value = (*ks, 1.0)
    flags = int(d["flags"])
    mat["nwn2_diffuse_color"] = kd
    mat["nwn2_specular_color"] = ks
    mat["nwn2_specular_level"] = float(d["specular_level"])
    mat["nwn2_specular_power"] = float(d["specular_power"])
    mat["nwn2_flags"] = flags
    for which in mdb.Material.MAPS:
        text = mdb.text_of(bytes.fromhex(d["maps"][which]))
        mat[f"nwn2_{which}"] = text
    for which, y in (("diffuse_map", 300), ("normal_map", 0), ("tint_map", -300), ("glow_map", -600)):
        path = _find_map(base_dir, mat[f"nwn2_{which}"])
        if path is None:
            continue
        known = set(bpy.data.images)
        img = bpy.data.images.load(path, check_existing=True)
        if img not in known:
            created.append(img)
        node = nt.nodes.new("ShaderNodeTexImage")
        node.image = img
        node.label = which
        node.location = (-500, y)
        if which == "diffuse_map":
            nt.links.new(node.outputs["Color"], bsdf.inputs["Base Color"])
            if flags & (mdb.ALPHA_TEST | mdb.ALPHA_BLEND):
                nt.links.new(node.outputs["Alpha"], bsdf.inputs["Alpha"])
        elif which == "normal_map":
            img.colorspace_settings.name = "Non-Color"
            nmap = nt.nodes.new("ShaderNodeNormalMap")
            nmap.location = (-200, y)
            nt.links.new(node.outputs["Color"], nmap.inputs["Color"])
            nt.links.new(nmap.outputs["Normal"], bsdf.inputs["Normal"])
        elif which == "glow_map" and flags & mdb.GLOW and "Emission Color" in bsdf.inputs:
            nt.links.new(node.outputs["Color"], bsdf.inputs["Emission Color"])
    if flags & mdb.ALPHA_TEST and hasattr(mat, "blend_method"):
        mat.blend_method = "CLIP" if "CLIP" in type(mat).bl_rna.properties["blend_method"].enum_items else "HASHED"
    return mat


def _walk_materials(names: list[str], created: list) -> list:
    out = []
    for n in names:
        mat = bpy.data.materials.get(n)
        if mat is None:
            mat = bpy.data.materials.new(n)
            created.append(mat)
            mat["nwn2_walk_flags"] = convert.WALK_SURFACES.get(n, 0)
        out.append(mat)
    return out


def _skin_groups(packet: mdb.MeshPacket, cmesh: cm.Mesh, arm_ob) -> list[str]:
    """Vertex group names of a SKIN mesh, one per bone that carries weight (armature bones in `armature.bones`
    order, else `bone_<n>` by u8 index); rewrites `cmesh.joints` to group positions."""
    live = packet.vertices["weights"] > 0
    if arm_ob is not None:
        names = [b.name for b in arm_ob.data.bones]
        index = np.asarray(cmesh.joints, np.int32)  # skeleton indices (convert.skin_joints)
    else:
        names = [f"bone_{n}" for n in range(256)]
        index = packet.vertices["bones"].astype(np.int32)
    used = np.unique(index[live & (index >= 0)])
    lut = np.full(len(names), -1, np.int32)
    lut[used] = np.arange(len(used))
    cmesh.joints = np.where(live & (index >= 0), lut[np.clip(index, 0, len(names) - 1)], -1).astype(np.int32)
    return [names[int(n)] for n in used]


def _rows_extras(records: np.ndarray, rows: np.ndarray) -> dict:
    """Some of a packet's records as JSON: their indices and their file bytes."""
    return {"rows": rows.tolist(), "raw": np.ascontiguousarray(records[rows]).tobytes().hex()}


def _rows_from_extras(d: dict, dtype) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(d["rows"], np.int64), np.frombuffer(bytes.fromhex(d["raw"]), dtype)


def _degenerate(tris: np.ndarray) -> np.ndarray:
    """The faces Blender cannot hold (a vertex index repeated), as `bmesh.build_mesh` skips them."""
    tris = np.asarray(tris).reshape(-1, 3)
    return (tris[:, 0] == tris[:, 1]) | (tris[:, 1] == tris[:, 2]) | (tris[:, 0] == tris[:, 2])


def _non_finite_rows(records: np.ndarray) -> np.ndarray:
    """Vertex records holding a NaN or an infinity (a sum per field first: real files have none)."""
    bad = np.zeros(len(records), bool)
    for name in records.dtype.names:
        column = records[name]
        if column.dtype.kind == "f" and not np.isfinite(column.sum(dtype=np.float64)):
            bad |= ~np.isfinite(column.reshape(len(records), -1)).all(axis=1)
    return np.flatnonzero(bad)


def _file_only_extras(packet, extras: dict, faces_kept: np.ndarray) -> None:
    """What the file holds that the Blender mesh cannot: faces with a repeated vertex (with their places in the
    face list and a digest of the faces Blender holds instead), the normal and uv of vertices no face uses,
    and vertex records with non-finite values (written again while Blender still holds the same)."""
    records = packet.faces if packet.type == "WALK" else packet.vertices
    dropped = np.flatnonzero(~faces_kept)
    if len(dropped):
        extras["dropped"] = _rows_extras(packet.faces, dropped)
        kept_v = packet.faces["v"][faces_kept] if packet.type == "WALK" else packet.faces[faces_kept]
        extras["faces_digest"] = zlib.crc32(np.ascontiguousarray(kept_v, np.int32).tobytes())
    if packet.type == "WALK":
        return
    used = np.zeros(len(records), bool)
    used[packet.faces[faces_kept].reshape(-1)] = True
    if not used.all():
        extras["loose"] = _rows_extras(records, np.flatnonzero(~used))
    bad = _non_finite_rows(records)
    if len(bad):
        extras["non_finite"] = _rows_extras(records, bad)


def _mesh_object(packet, cmesh: cm.Mesh, arm_ob, base_dir: str, created: list, warnings: list[str]):
    extras = dict(cmesh.extras["mdb"])
    faces_kept = ~_degenerate(cmesh.triangles)
    _file_only_extras(packet, extras, faces_kept)
    groups: list[str] = []
    if packet.type == "SKIN":
        groups = _skin_groups(packet, cmesh, arm_ob)
    walk = packet.type == "WALK"
    shown = cmesh
    if walk:  # link vertices at z = −1,000,000 show at −20, as nw2fbx puts them
        positions = cmesh.positions.copy()
        positions[positions[:, 2] == np.float32(convert.WALK_SENTINEL_Z), 2] = convert.WALK_SENTINEL_SHOWN_Z
        shown = cm.Mesh(cmesh.name, positions, cmesh.triangles, material_indices=cmesh.material_indices)
    if len(shown.positions):
        me = bmesh_.build_mesh(shown, packet.name_text or packet.type, created, warnings, len(groups))
    else:  # nothing for the bridge to build; the packet's other fields still ride on the object
        me = bpy.data.meshes.new(packet.name_text or packet.type)
        created.append(me)
    nv = len(cmesh.positions)
    if "non_finite" in extras:
        rows = extras["non_finite"]["rows"]
        listed = ", ".join(str(r) for r in rows[:5]) + (f" and {len(rows) - 5} more" if len(rows) > 5 else "")
        warnings.append(f"{packet.name_text}: the file has values that are not finite numbers (a NaN or infinite "
                        f"normal or other value) at vertex {listed}: written as the file has them while the vertex "
                        "is not edited; once it or a vertex of its faces moves, its normal is made from its faces")
    if not faces_kept.all():
        warnings.append(f"{packet.name_text}: its {int((~faces_kept).sum())} faces with a repeated vertex are kept "
                        "for export while the mesh is unchanged")
    ob = bpy.data.objects.new(packet.name_text or packet.type, me)
    created.append(ob)
    if walk:
        for mat in _walk_materials(extras["walk_materials"], created):
            me.materials.append(mat)
        _put(me, A_WALK_FLAGS, "INT", "FACE", "value", packet.faces["flags"][faces_kept].view(np.int32))
        _put(me, A_WALK_Z, "FLOAT", "POINT", "value", packet.vertices[:, 2].astype(np.float32))
    else:
        v = packet.vertices
        if "tangent" in v.dtype.names:
            _put(me, A_TANGENT, "FLOAT_VECTOR", "POINT", "vector", v["tangent"])
            _put(me, A_BINORMAL, "FLOAT_VECTOR", "POINT", "vector", v["binormal"])
        _put(me, A_UVW_Z, "FLOAT", "POINT", "value", np.ascontiguousarray(v["uvw"][:, 2]))
        if nv:  # the positions as Blender holds them after the build
            _put(me, A_POSITION, "FLOAT_VECTOR", "POINT", "vector",
                 _get(me.attributes["position"], "vector", nv, 3, np.float32))
        if packet.type == "SKIN":
            _put(me, A_BONES, "INT", "POINT", "value", np.ascontiguousarray(v["bones"]).view(np.int32).reshape(-1))
            for k, name in enumerate(A_WEIGHTS):
                _put(me, name, "FLOAT", "POINT", "value", np.ascontiguousarray(v["weights"][:, k]))
            _put(me, A_BONE_COUNT, "FLOAT", "POINT", "value", v["bone_count"])
            skeleton = mdb.text_of(packet.skeleton)
            ob[SKELETON_PROP] = skeleton
        if packet.type in ("RIGD", "SKIN"):
            me.materials.append(_material(extras, packet.name_text or packet.type, base_dir, created))
    extras["digest"] = _positions_digest(cmesh.positions if not walk else shown.positions)
    extras["vertices"] = nv
    ob[PROP] = json.dumps(extras)
    if groups:
        bmesh_.add_vertex_groups(ob, groups)
    return ob


def _point_object(d: dict, created: list):
    t = d["type"]
    ob = bpy.data.objects.new(mdb.text_of(bytes.fromhex(d["name"])) or t, None)
    created.append(ob)
    ob.empty_display_type = "ARROWS"
    ob.empty_display_size = 0.25
    m = _point_matrix(d["position"], d["orientation"])
    ob.matrix_world = Matrix([list(r) for r in m])
    # what Blender made of the file's matrix (a sheared or degenerate orientation becomes a rotation and scale):
    # while the object still has it, export writes the file's packet
    ob[BUILT_PROP] = [float(x) for row in ob.matrix_basis for x in row]
    if t == "HAIR":
        ob["nwn2_shortening"] = mdb.HAIR_SHORTENING[d["kind"]] if d["kind"] < 3 else str(d["kind"])
    elif t == "HELM":
        ob["nwn2_hiding"] = mdb.HELM_HIDING[d["kind"]] if d["kind"] < 4 else str(d["kind"])
    ob[PROP] = json.dumps(d)
    return [ob]


def _followed_bones(scene: cm.Scene, names: list[str] | None) -> dict[int, str]:
    """Point packet → the bone it follows (bind.point_bone), read from the SKIN joints before the build
    renumbers them into vertex groups; empty without bones."""
    out = {}
    for d in scene.extras["mdb"]["points"] if names else ():
        if d["type"] in mdb.POINT_TYPES:
            bone = bind.point_bone(mdb.text_of(bytes.fromhex(d["name"])), names, scene.meshes)
            if bone is not None:
                out[d["packet"]] = names[bone]
    return out


def _follow_bone(ob, arm_ob, bone_name: str) -> None:
    """Parent a point empty to the bone it follows (bind.point_bone), its world matrix unchanged: Blender
    places a bone child at the bone's tail, which the parent inverse takes out."""
    world = ob.matrix_world.copy()
    ob.parent = arm_ob
    ob.parent_type = "BONE"
    ob.parent_bone = bone_name
    b = arm_ob.data.bones[bone_name]
    tail = Matrix.Translation((0.0, b.length, 0.0))
    ob.matrix_parent_inverse = (arm_ob.matrix_world @ b.matrix_local @ tail).inverted()
    ob.matrix_basis = world


def _cols_objects(d: dict, arm_ob, created: list):
    out = []
    names = [b.name for b in arm_ob.data.bones] if arm_ob is not None else []
    for k, (bone, radius) in enumerate(zip(d["bones"], d["radii"])):
        label = names[bone] if bone < len(names) else str(bone)
        ob = bpy.data.objects.new(f"COLS_{label}", None)
        created.append(ob)
        ob.empty_display_type = "SPHERE"
        ob.empty_display_size = float(radius) if np.isfinite(radius) and radius > 0 else 0.01
        ob[PROP] = json.dumps({"type": "COLS", "packet": d["packet"], "sphere": k, "bone": int(bone),
                               "radius": float(radius), "shown": float(ob.empty_display_size),
                               "extra": d.get("extra", "") if k == 0 else ""})
        if arm_ob is not None and bone < len(names):
            ob.parent = arm_ob
            ob.parent_type = "BONE"
            ob.parent_bone = names[bone]
            ob.matrix_parent_inverse.identity()
            bone_ob = arm_ob.data.bones[names[bone]]
            ob.matrix_world = arm_ob.matrix_world @ bone_ob.matrix_local
        out.append(ob)
    return out


def _armature(armature):
    if armature is None or armature == "":
        return None
    if isinstance(armature, str):
        ob = bpy.data.objects.get(armature)
        if ob is None or ob.type != "ARMATURE":
            raise ValueError(f"no armature named {armature!r}")
        return ob
    return armature


def import_mdb(context, path: str, armature=None, skeleton_path=None) -> bscene.ImportResult:
    """Import the MDB at `path`; `armature` (object or name): its bones name the SKIN groups (filtered order).
    Without one, the GR2 skeleton the SKIN packets name, beside the file or in `skeleton_path` (gr2/bind.py),
    becomes a new armature the SKIN meshes are parented to."""
    arm_ob = _armature(armature)
    data = archive.read_input(path)  # a file, or a member of a pack ("heads.hak:P_HEF_head83.mdb")
    m = mdb.read(data)
    inside = archive.member_of(path)
    stem = os.path.splitext(os.path.basename(inside[1] if inside else path))[0]
    skeleton, skeleton_file, found, source = None, None, [], {}
    if arm_ob is None:  # the skeleton's file read and decompressed once, for the bones and for keep_source
        skeleton, skeleton_file, found = bind.bind(convert.skin_skeleton_names(m), path, skeleton_path, source,
                                                   convert.skins_of(m))
    names = [b.name for b in arm_ob.data.bones] if arm_ob is not None else None
    scene, warnings = convert.to_scene(m, stem, names, skeleton)  # every check before the first datablock
    result = bscene.ImportResult(warnings=list(m.warnings) + found + list(warnings))
    followed = _followed_bones(scene, skeleton.names if skeleton is not None else names)
    # a packed part: named after its member (above), its textures looked for beside the pack
    base_dir = os.path.dirname(os.path.abspath(inside[0] if inside else path))
    created: list = []
    if context.mode != "OBJECT" and context.view_layer.objects.active is not None:
        bpy.ops.object.mode_set(mode="OBJECT")
    try:
        parent = context.view_layer.active_layer_collection.collection
        coll = bpy.data.collections.new(stem)
        created.append(coll)
        parent.children.link(coll)
        # packets no object stands for (TRRN, unknown types, COLS without spheres) ride on the collection
        raw = [d for d in scene.extras["mdb"]["points"]
               if d["type"] not in ("COLS",) + mdb.POINT_TYPES or (d["type"] == "COLS" and not d["bones"])]
        coll[PROP] = json.dumps({k: v for k, v in scene.extras["mdb"].items() if k != "points"} | {"raw": raw})
        if skeleton is not None:
            arm_ob = barmature.build_armature(context, skeleton, skeleton.name, coll, created)
            gr2_blender.keep_source(arm_ob, source["data"], skeleton.name, gr2_export.file_header(source["file"]))
            result.objects.append(arm_ob)
        lods = None
        meshes = iter(scene.meshes)
        for i, p in enumerate(m.packets):
            if isinstance(p, (mdb.MeshPacket, mdb.WalkPacket)):
                cmesh = next(meshes)
                ob = _mesh_object(p, cmesh, arm_ob, base_dir, created, result.warnings)
                obs = [ob]
                if arm_ob is not None and p.type == "SKIN":
                    ob.parent = arm_ob
                    mod = ob.modifiers.new("Armature", "ARMATURE")
                    mod.object = arm_ob
                level = cmesh.extras["mdb"].get("lod", 0)
            else:
                d = next(x for x in scene.extras["mdb"]["points"] if x["packet"] == i)
                if d["type"] == "COLS":
                    obs = _cols_objects(d, arm_ob, created)
                elif d["type"] in mdb.POINT_TYPES:
                    obs = _point_object(d, created)
                    if followed.get(i) is not None:
                        _follow_bone(obs[0], arm_ob, followed[i])
                else:
                    continue
                level = 0
            for ob in obs:
                if level:
                    if lods is None:
                        lods = bpy.data.collections.new(LODS)
                        created.append(lods)
                        coll.children.link(lods)
                    lods.objects.link(ob)
                else:
                    coll.objects.link(ob)
                result.objects.append(ob)
        if lods is not None:
            context.view_layer.update()
            layer = _layer_collection(context.view_layer.layer_collection, lods)
            if layer is not None:
                layer.hide_viewport = True
        bscene.failure_point("done")
    except BaseException:
        bscene.remove_created(created)
        raise
    result.armature = arm_ob
    return result


def _layer_collection(layer, coll):
    if layer.collection == coll:
        return layer
    for child in layer.children:
        found = _layer_collection(child, coll)
        if found is not None:
            return found
    return None


def blender_import(context, path: str, options) -> list[str]:
    """The registry's `blender_import`: options may name an armature (`armature`) or skeleton folders
    (`skeleton_path`)."""
    return import_mdb(context, path, getattr(options, "armature", None),
                      getattr(options, "skeleton_path", None)).warnings


# -- export -------------------------------------------------------------------------------------------------

def _kept(ob) -> dict | None:
    raw = ob.get(PROP)
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _packet_name(ob, kept: dict | None, warnings: list[str]) -> bytes:
    if kept and "name" in kept:
        raw = bytes.fromhex(kept["name"])
        if mdb.text_of(raw) == ob.name or mdb.text_of(raw) == ob.name.rsplit(".", 1)[0] and \
                ob.name.rsplit(".", 1)[-1].isdigit():
            return raw
    text = ob.name
    size = len(text.encode("utf-8"))
    if size > mdb.NAME_SIZE:
        raise ExportError(f"{ob.name}: name is {size} bytes, an MDB name holds 32")
    if size > mdb.NAME_SIZE - 1:
        warnings.append(f"{ob.name}: 32-byte name written without a terminator")
    return mdb.raw_name(text)


def _packet_type(ob, kept: dict | None) -> str | None:
    if kept and kept.get("type") in mdb.KNOWN_TYPES:
        return kept["type"]
    upper = ob.name.upper()
    if ob.type == "MESH":
        named = next((t for suffix, t in MESH_SUFFIXES if upper.endswith(suffix)), None)
        if named:
            return named
        deformed = any(mod.type == "ARMATURE" and mod.object is not None for mod in ob.modifiers) or \
            (ob.parent is not None and ob.parent.type == "ARMATURE" and len(ob.vertex_groups))
        return "SKIN" if deformed else "RIGD"
    if ob.type == "EMPTY":
        named = next((t for prefix, t in EMPTY_PREFIXES if upper.startswith(prefix)), None)
        return named or next((t for prop, t in POINT_PROPS if prop in ob or t in upper), None)
    return None


def _map_name(text: str, ob, warnings: list[str]) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) > mdb.NAME_SIZE - 1:  # fbx2nw's rule: 31 characters
        cut = raw[:mdb.NAME_SIZE - 1].decode("utf-8", "ignore")
        warnings.append(f"{ob.name}: texture name {text!r} cut to {cut!r} (31 bytes)")
        text = cut
    return mdb.raw_name(text)


def _plain_material(mat, ob, warnings: list[str]) -> mdb.Material:
    """An MDB material from a Blender material SkinBridge did not import: base colour and the diffuse and
    normal images' names (file stems, as the game looks maps up by name)."""
    out = mdb.Material()
    if mat is None or mat.node_tree is None:
        return out
    bsdf = next((n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED"), None)
    if bsdf is None:
        return out
    base = bsdf.inputs["Base Color"]
    out.diffuse_color = np.asarray(base.default_value[:3], "<f4")
    for socket, which in ((base, "diffuse_map"), (bsdf.inputs["Normal"], "normal_map")):
        node = socket.links[0].from_node if socket.is_linked else None
        if node is not None and node.type == "NORMAL_MAP" and node.inputs["Color"].is_linked:
            node = node.inputs["Color"].links[0].from_node
        if node is not None and node.type == "TEX_IMAGE" and node.image is not None:
            image = node.image
            stem = os.path.splitext(os.path.basename(bpy.path.abspath(image.filepath) or image.name))[0] \
                or os.path.splitext(image.name)[0]
            setattr(out, which, _map_name(stem, ob, warnings))
    return out


def _mesh_material(ob, kept: dict | None, warnings: list[str] | None = None, mat=None) -> mdb.Material:
    mat = mat if mat is not None else ob.active_material if ob.type == "MESH" else None
    if not (kept and "material" in kept) and (mat is None or "nwn2_flags" not in mat):
        return _plain_material(mat, ob, warnings if warnings is not None else [])
    base = convert.material_from_extras(kept["material"]) if kept and "material" in kept else mdb.Material()
    if mat is None or "nwn2_flags" not in mat:
        return base
    out = mdb.Material(base.diffuse_map, base.normal_map, base.tint_map, base.glow_map)
    kd = np.asarray(mat["nwn2_diffuse_color"], "<f4")
    ks = np.asarray(mat["nwn2_specular_color"], "<f4")
    level = np.float32(mat["nwn2_specular_level"])
    power = np.float32(mat["nwn2_specular_power"])
    # the file's values (NaN payloads included) while the properties still say the same
    out.diffuse_color = base.diffuse_color if _same_floats(kd, base.diffuse_color) else kd
    out.specular_color = base.specular_color if _same_floats(ks, base.specular_color) else ks
    out.specular_level = base.specular_level if _same_floats(level, base.specular_level) else level
    out.specular_power = base.specular_power if _same_floats(power, base.specular_power) else power
    out.flags = int(mat["nwn2_flags"])
    for which in mdb.Material.MAPS:
        text = str(mat.get(f"nwn2_{which}", ""))
        if mdb.text_of(getattr(base, which)) != text:
            try:
                setattr(out, which, mdb.raw_name(text))
            except ValueError:
                raise ExportError(f"{ob.name}: material {which} {text!r} is over 32 bytes") from None
    return out


class _Options:
    def __init__(self, skeleton: str | None, limit_weights: bool, armature):
        self.skeleton = skeleton
        self.limit_weights = limit_weights
        self.armature = armature


def _bone_index(ob, arm_ob, head: bool) -> dict[str, int]:
    """Vertex group name → MDB bone index: `bone_<n>` → n; armature bones → their filtered index."""
    out = {}
    if arm_ob is not None:
        now = [b.name for b in arm_ob.data.bones]
        # the order is the GR2's (its names on disk): a bone renamed since the import keeps its index
        built = _built_names(arm_ob)
        names = built if built is not None and len(built) == len(now) else now
        index = {n: i for i, n in enumerate(names)}
        out.update({now[index[n]]: i for i, n in enumerate(mdb_bones.skin_bone_names(names, head))})
    for g in ob.vertex_groups:
        stem, _, n = g.name.partition("_")
        if stem == "bone" and n.isdigit():
            out.setdefault(g.name, int(n))
    return out


def _built_names(arm_ob) -> list[str] | None:
    """The bone names of the GR2 skeleton an import built the armature from (`SKELETON_REST_PROP`), or None."""
    try:
        built = json.loads(arm_ob.get(SKELETON_REST_PROP, ""))
        return [str(name) for name, _ in built]
    except (ValueError, TypeError):
        return None


def _armature_of(ob):
    for mod in ob.modifiers:
        if mod.type == "ARMATURE" and mod.object is not None:
            return mod.object
    if ob.parent is not None and ob.parent.type == "ARMATURE":
        return ob.parent
    return None


def _skin_slots(ob, me, opts: _Options, head: bool, warnings: list[str]):
    """(weights (V,4), bones (V,4) u8) of a mesh from its vertex groups, refusing what an MDB cannot hold."""
    arm_ob = opts.armature if opts.armature is not None else _armature_of(ob)
    index = _bone_index(ob, arm_ob, head)
    nv = len(me.vertices)
    # every group is read; one that maps to no MDB index reads as UNMAPPED, refused below if it carries weight
    by_group = {g.name: index.get(g.name, UNMAPPED) for g in ob.vertex_groups}
    joints, weights = bmesh_.read_weights(ob, me, by_group, MAX_READ_INFLUENCES, [], min_columns=4)
    unmapped = np.flatnonzero(((joints == UNMAPPED) & (weights > 0)).any(axis=1))
    if len(unmapped):
        v = int(unmapped[0])
        names = sorted(n for n, i in by_group.items() if i == UNMAPPED)
        raise ExportError(f"{ob.name}: vertex {v} has weight in group(s) {names} that map to no MDB bone index "
                          "(name groups bone_<n> or after the armature's bones)")
    if (joints > 255).any():
        v = int(np.flatnonzero((joints > 255).any(axis=1))[0])
        raise ExportError(f"{ob.name}: vertex {v} uses bone index {int(joints[v].max())}; MDB bone indices are u8")
    live = weights > 0
    count = live.sum(axis=1)
    none = np.flatnonzero(count == 0)
    if len(none):
        raise ExportError(f"{ob.name}: vertex {int(none[0])} has no weight ({len(none)} such vertices)")
    sums = weights.astype(np.float64).sum(axis=1)
    over = count > 4
    off = np.abs(sums - 1.0) > WEIGHT_SUM_TOLERANCE
    if (over | off).any():
        if not opts.limit_weights:
            v = int(np.flatnonzero(over | off)[0])
            why = f"{int(count[v])} weights, at most 4" if over[v] else f"weights sum to {sums[v]:.6g}, not 1"
            raise ExportError(f"{ob.name}: vertex {v} has {why} (turn on \"Limit and normalise weights\")")
        order = np.argsort(-weights, axis=1, kind="stable")[:, :4]
        rows = np.arange(nv)[:, None]
        joints, weights = joints[rows, order], weights[rows, order]
        weights = (weights / weights.astype(np.float64).sum(axis=1, keepdims=True)).astype(np.float32)
        warnings.append(f"{ob.name}: {int((over | off).sum())} vertices limited to 4 weights and renormalised")
    elif live[:, 4:].any() or (~live[:, :-1] & live[:, 1:]).any():  # live slots not all first
        order = np.argsort(~live, axis=1, kind="stable")[:, :4]
        rows = np.arange(nv)[:, None]
        joints, weights = joints[rows, order], weights[rows, order]
    else:  # the live slots come first (as read_weights gives them): the first four hold them all
        joints, weights = joints[:, :4], weights[:, :4]
    joints = np.where(weights > 0, joints, 0)
    return weights[:, :4].astype(np.float32), joints[:, :4].astype(np.uint8)


def _first_corner(me) -> np.ndarray:
    nl = len(me.loops)
    corner_vert = _get(me.attributes.get(".corner_vert"), "value", nl, 1, np.int32)
    first = np.full(len(me.vertices), -1, np.int64)
    first[corner_vert[::-1]] = np.arange(nl)[::-1]
    return first


def _placement(ob) -> np.ndarray | None:
    """The object's world matrix when its kept vertex data can follow it; None for a projection or a mirror
    (a mirrored object's faces turn over: the new-object way handles that)."""
    m = np.array(ob.matrix_world, np.float64)
    if not np.array_equal(m[3], (0, 0, 0, 1)) or np.linalg.det(m[:3, :3]) <= 0:
        return None
    return m


def _placed(m: np.ndarray, positions: np.ndarray, normals=None, tangents=None, binormals=None) -> tuple:
    """Positions, normals, tangents and binormals of a moved object in world space: a vector keeps the length
    the file stored (some files store non-unit normals), and under a translation alone its bytes."""
    positions = (positions.astype(np.float64) @ m[:3, :3].T + m[:3, 3]).astype(np.float32)
    linear = m[:3, :3]
    if np.array_equal(linear, np.eye(3)):
        return positions, normals, tangents, binormals

    def turn(vectors, matrix):
        if vectors is None:
            return None
        before = vectors.astype(np.float64)
        after = before @ matrix.T
        old = np.linalg.norm(before, axis=1, keepdims=True)
        new = np.linalg.norm(after, axis=1, keepdims=True)
        return (after * np.divide(old, new, out=np.zeros_like(old), where=new > 0)).astype(np.float32)

    return positions, turn(normals, np.linalg.inv(linear).T), turn(tangents, linear), turn(binormals, linear)


def _kept_faces(ob, faces: np.ndarray, records: np.ndarray, kept: dict, warnings: list[str]) -> np.ndarray:
    """The face records to write: the file's faces with a repeated vertex put back in their places while the
    faces Blender holds are those of the import; once the mesh changed, Blender's faces (and a warning)."""
    dropped = kept.get("dropped")
    if not dropped:
        return records
    at, raw = _rows_from_extras(dropped, records.dtype)
    if zlib.crc32(np.ascontiguousarray(faces, np.int32).tobytes()) == kept.get("faces_digest"):
        return np.insert(records, at - np.arange(len(at)), raw.reshape(len(at), *records.shape[1:]), axis=0)
    warnings.append(f"{ob.name}: the mesh changed; the file's {len(at)} faces with a repeated vertex are not "
                    "written")
    return records


def _shown_keys(ob) -> list[tuple]:
    """(shape key, the value Blender mixes it with) of a mesh, the basis left out: 0 for a muted key, an
    absolute key (Blender's to evaluate) or one hidden by "shape key lock"."""
    keys = ob.data.shape_keys if ob.type == "MESH" else None
    if keys is None:
        return []
    out = []
    for kb in keys.key_blocks:
        if kb == keys.reference_key:
            continue
        value = 0.0 if kb.mute or not keys.use_relative else float(kb.value)
        if ob.show_only_shape_key:
            value = 1.0 if kb == ob.active_shape_key else 0.0
        out.append((kb, value))
    return out


def _shape_key_warnings(ob) -> list[str]:
    """An MDB holds no shape keys: each one is named; one that changes the shape Blender shows is baked."""
    out = []
    for kb, value in _shown_keys(ob):
        if value == 0.0:
            out.append(f"{ob.name}: shape key {kb.name!r} is not written: an MDB has no shape keys (apply it to "
                       "the mesh to keep its shape)")
        else:
            out.append(f"{ob.name}: shape key {kb.name!r} is not written as a shape key (an MDB has none): the "
                       f"mesh is written as shown, with its value {value:g} baked in")
    return out


def _shape_key_mix(ob, pos: np.ndarray) -> np.ndarray:
    """The positions Blender shows: the basis plus each relative key's offset times its value (and vertex group
    weight), as the evaluated mesh of a new object has them."""
    nv = len(pos)
    out = pos
    for kb, value in _shown_keys(ob):
        if value == 0.0:
            continue
        co = np.empty(nv * 3, np.float32)
        kb.data.foreach_get("co", co)
        base = np.empty(nv * 3, np.float32)
        (kb.relative_key or ob.data.shape_keys.reference_key).data.foreach_get("co", base)
        weight = np.ones(nv, np.float64)
        group = ob.vertex_groups.get(kb.vertex_group) if kb.vertex_group else None
        if group is not None:  # the key's vertex group, read in bulk (0 where a vertex is not in it)
            counts, groups, weights = bmesh_.deform_items(ob.data)
            rows = np.repeat(np.arange(nv), counts)
            mine = groups == group.index
            weight = np.zeros(nv, np.float64)
            weight[rows[mine]] = weights[mine]
        delta = (co - base).reshape(nv, 3).astype(np.float64) * (value * weight)[:, None]
        if np.any(delta):
            out = (out.astype(np.float64) + delta).astype(np.float32)
    return out


def _corner_data(me, faces: np.ndarray, ptype: str, kept: dict) -> tuple | None:
    """(first corner of each vertex, normals, uv, vertices without a face) of an imported mesh, one value per
    vertex; None when a vertex's corners now differ (a new seam) or the vertices no face uses are not the
    file's. Such a vertex has no corner in Blender: its normal and uv are the file's."""
    nv, nl = len(me.vertices), len(me.loops)
    first = _first_corner(me)
    loose = np.flatnonzero(first < 0)
    file_loose = None
    if len(loose):
        if "loose" not in kept or kept.get("vertices") != nv:
            return None
        rows, file_loose = _rows_from_extras(kept["loose"], mdb.VERTEX_DTYPES[ptype])
        if not np.array_equal(rows, loose):
            return None
    nrm_attr = me.attributes.get("custom_normal")
    if nrm_attr is not None and nrm_attr.data_type == "FLOAT_VECTOR" and nrm_attr.domain == "CORNER":
        corner_normals = _get(nrm_attr, "vector", nl, 3, np.float32)
    else:
        corner_normals = np.empty(nl * 3, np.float32)
        me.corner_normals.foreach_get("vector", corner_normals)
        corner_normals = corner_normals.reshape(nl, 3)
    corner_uv = None
    if me.uv_layers:
        corner_uv = np.empty(nl * 2, np.float32)
        me.uv_layers[0].uv.foreach_get("vector", corner_uv)
        corner_uv = corner_uv.reshape(nl, 2)
    first_of_corner = first[faces.reshape(-1)]
    for corner_data in (corner_normals, corner_uv):
        if corner_data is None:
            continue
        rows = np.ascontiguousarray(corner_data).view(np.dtype((np.void, corner_data.itemsize * corner_data.shape[1])))
        rows = rows.reshape(-1)  # one opaque value per corner: compared bit for bit
        if not (rows == np.take(rows, first_of_corner)).all():
            return None  # a vertex whose corners now differ (a new seam): split the new-object way
    normals = corner_normals[first] if nl else np.zeros((nv, 3), np.float32)
    uv = None if corner_uv is None else corner_uv[first] if nl else np.zeros((nv, 2), np.float32)
    if file_loose is not None:
        normals[loose] = file_loose["normal"]
        if uv is not None:
            uv[loose] = np.stack([file_loose["uvw"][:, 0], -file_loose["uvw"][:, 1]], axis=1)
    return first, normals, uv, loose


def _edited_vertices(me, pos: np.ndarray, faces: np.ndarray, kept: dict) -> np.ndarray:
    """Per vertex: was it moved, or does it share a face with a moved vertex (its normal and tangent follow the
    faces around it)? Moved: its position differs, bit for bit, from the file's (`A_POSITION`); a mesh imported
    before that attribute existed counts every vertex once its positions' digest changed."""
    nv = len(pos)
    attr = me.attributes.get(A_POSITION)
    if attr is None or attr.domain != "POINT" or attr.data_type != "FLOAT_VECTOR":
        return np.full(nv, _positions_digest(pos) != kept.get("digest"))
    before = _get(attr, "vector", nv, 3, np.float32)
    moved = (np.ascontiguousarray(before).view(np.uint32) != np.ascontiguousarray(pos).view(np.uint32)).any(axis=1)
    if not moved.any() or not len(faces):
        return moved
    around = faces[moved[faces].any(axis=1)].reshape(-1)
    moved[around] = True
    return moved


def _face_normals(pos: np.ndarray, faces: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Unit normals of vertices `rows` from the faces around them (area-weighted), for a vertex whose stored normal
    is not a finite number once it is edited; (0, 0, 1) for a vertex on no face of area."""
    p = pos.astype(np.float64)
    n = np.cross(p[faces[:, 1]] - p[faces[:, 0]], p[faces[:, 2]] - p[faces[:, 0]])
    acc = np.zeros((len(pos), 3))
    for k in range(3):
        np.add.at(acc, faces[:, k], n)
    out = acc[rows]
    length = np.linalg.norm(out, axis=1, keepdims=True)
    out = np.where(length > 0, out / np.where(length > 0, length, 1), [0.0, 0.0, 1.0])
    return out.astype(np.float32)


def _uv_tangents(pos: np.ndarray, faces: np.ndarray, uv: np.ndarray, normals: np.ndarray, rows: np.ndarray):
    """(tangent, sign) of vertices `rows` from the UV gradients of the faces around them, orthogonal to their
    normals: where MikkTSpace gave no finite tangent (Blender's normal there was the file's NaN)."""
    p = pos.astype(np.float64)
    w = np.asarray(uv, np.float64)
    e1, e2 = p[faces[:, 1]] - p[faces[:, 0]], p[faces[:, 2]] - p[faces[:, 0]]
    d1, d2 = w[faces[:, 1]] - w[faces[:, 0]], w[faces[:, 2]] - w[faces[:, 0]]
    r = d1[:, 0] * d2[:, 1] - d2[:, 0] * d1[:, 1]
    r = np.where(np.abs(r) > 1e-20, 1.0 / np.where(r == 0, 1, r), 0.0)[:, None]
    ft = (e1 * d2[:, 1:2] - e2 * d1[:, 1:2]) * r
    fb = (e2 * d1[:, 0:1] - e1 * d2[:, 0:1]) * r
    t_acc, b_acc = np.zeros((len(p), 3)), np.zeros((len(p), 3))
    for k in range(3):
        np.add.at(t_acc, faces[:, k], ft)
        np.add.at(b_acc, faces[:, k], fb)
    n = normals[rows].astype(np.float64)
    t = t_acc[rows] - n * (n * t_acc[rows]).sum(axis=1, keepdims=True)
    length = np.linalg.norm(t, axis=1, keepdims=True)
    t = np.where(length > 0, t / np.where(length > 0, length, 1), [1.0, 0.0, 0.0])
    sign = np.where((np.cross(n, t) * b_acc[rows]).sum(axis=1) < 0, -1.0, 1.0)
    return np.concatenate([t, sign[:, None]], axis=1).astype(np.float32)


def _kept_frame(me, ptype: str, normals: np.ndarray, uv, first: np.ndarray, redo: np.ndarray,
                pos: np.ndarray, faces: np.ndarray) -> tuple:
    """(tangents, binormals, uvw.z): the kept ones; MikkTSpace's for the vertices `redo` (moved, or sharing a face
    with a moved one) that have a corner (a vertex without one keeps the file's)."""
    nv, nl = len(me.vertices), len(me.loops)
    uvw_z = _get(me.attributes[A_UVW_Z], "value", nv, 1, np.float32)
    if ptype not in ("RIGD", "SKIN"):
        return None, None, uvw_z
    tangents = _get(me.attributes[A_TANGENT], "vector", nv, 3, np.float32)
    binormals = _get(me.attributes[A_BINORMAL], "vector", nv, 3, np.float32)
    if redo.any() and uv is not None and nl:
        me.calc_tangents(uvmap=me.uv_layers[0].name)
        t = np.empty(nl * 3, np.float32)
        me.loops.foreach_get("tangent", t)
        s = np.empty(nl, np.float32)
        me.loops.foreach_get("bitangent_sign", s)
        me.free_tangents()
        has = (first >= 0) & redo
        t4 = np.concatenate([t.reshape(nl, 3)[first[has]], s[first[has], None]], axis=1)
        bad = ~np.isfinite(t4).all(axis=1)
        if bad.any():
            t4[bad] = _uv_tangents(pos, faces, uv, normals, np.flatnonzero(has)[bad])
        tangents[has], binormals[has], uvw_z[has] = convert.tangent_frame(normals[has], t4)
    return tangents, binormals, uvw_z


def _kept_walk_packet(ob, me, kept: dict, pos: np.ndarray, faces: np.ndarray, matrix: np.ndarray | None,
                      warnings: list[str]) -> mdb.WalkPacket:
    """A WALK packet from its mesh: link vertices (shown at z = −20) back at z = −1,000,000, moved or not."""
    link = np.zeros(len(pos), bool)
    if A_WALK_Z in me.attributes:
        kept_z = _get(me.attributes[A_WALK_Z], "value", len(pos), 1, np.float32)
        link = (pos[:, 2] == np.float32(convert.WALK_SENTINEL_SHOWN_Z)) & \
            (kept_z == np.float32(convert.WALK_SENTINEL_Z))
    if matrix is not None:
        pos = _placed(matrix, pos)[0]
    pos[link, 2] = np.float32(convert.WALK_SENTINEL_Z)
    wf = np.zeros(len(faces), mdb.WALK_FACE)
    wf["v"] = faces
    wf["flags"] = _walk_flags(ob, me, len(faces))
    return mdb.WalkPacket(_packet_name(ob, kept, warnings), int(kept.get("ui_flags", 0)), pos,
                          _kept_faces(ob, faces, wf, kept, warnings), bytes.fromhex(kept.get("extra", "")))


def _kept_mesh_packet(ob, kept: dict, ptype: str, opts: _Options, warnings: list[str]):
    """The packet of an imported mesh object, from its own vertices 1:1 (None when its data no longer fits); a
    moved object's vertices go to world space with the rest of their kept data."""
    me = ob.data
    nv, nf, nl = len(me.vertices), len(me.polygons), len(me.loops)
    if nl != 3 * nf or (ptype != "WALK" and A_UVW_Z not in me.attributes):
        return None
    matrix = _placement(ob)
    if matrix is None:
        return None
    moved = None if np.array_equal(matrix, np.eye(4)) else matrix
    pos = _shape_key_mix(ob, _get(me.attributes.get("position"), "vector", nv, 3, np.float32))
    faces = _get(me.attributes.get(".corner_vert"), "value", nl, 1, np.int32).reshape(-1, 3)
    if nv > MAX_VERTICES:
        raise ExportError(f"{ob.name}: {nv} vertices in one packet; u16 faces reach 65,536")
    if ptype == "WALK":
        return _kept_walk_packet(ob, me, kept, pos, faces, moved, warnings)
    corners = _corner_data(me, faces, ptype, kept)
    if corners is None:
        return None
    first, normals, uv, _ = corners
    redo = _edited_vertices(me, pos, faces, kept)
    lost = np.flatnonzero(redo & ~np.isfinite(normals).all(axis=1))
    if len(lost):  # the file's own NaN normal, at a vertex an edit touched: made again from its faces
        normals = normals.copy()
        normals[lost] = _face_normals(pos, faces, lost)
    tangents, binormals, uvw_z = _kept_frame(me, ptype, normals, uv, first, redo, pos, faces)
    material = _mesh_material(ob, kept, warnings)
    skeleton = bytes(mdb.NAME_SIZE)
    weights = bones = count = None
    if ptype == "SKIN":
        skeleton = _skeleton(ob, kept, opts)
        weights, bones = _skin_slots(ob, me, opts, mdb_bones.uses_head_bones(material.flags), warnings)
        if A_BONES in me.attributes and all(a in me.attributes for a in A_WEIGHTS):
            kept_b = _get(me.attributes[A_BONES], "value", nv, 1, np.int32).view(np.uint8).reshape(nv, 4)
            kept_w = np.stack([_get(me.attributes[a], "value", nv, 1, np.float32) for a in A_WEIGHTS], axis=1)
            same = _same_influences(kept_b, kept_w, bones, weights)
            bones = np.where(same[:, None], kept_b, bones)
            weights = np.where(same[:, None], kept_w, weights)
            count = np.where(same, _get(me.attributes[A_BONE_COUNT], "value", nv, 1, np.float32), np.float32(4))
    if moved is not None:
        pos, normals, tangents, binormals = _placed(moved, pos, normals, tangents, binormals)
    vertices = convert.mesh_vertices(ptype, pos, normals, uv, tangents, binormals, uvw_z, weights, bones, count)
    return mdb.MeshPacket(ptype, _packet_name(ob, kept, warnings), material, vertices,
                          _kept_faces(ob, faces, faces.astype(np.uint16), kept, warnings), skeleton,
                          bytes.fromhex(kept.get("extra", "")))


def _file_values(packet, kept: dict) -> np.ndarray:
    """Vertices whose record holds the file's non-finite values, bytes and all (an element Blender left
    unchanged: written again, not refused)."""
    d = kept.get("non_finite")
    if not d or not isinstance(packet, mdb.MeshPacket) or kept.get("vertices") != len(packet.vertices):
        return np.zeros(0, np.int64)
    rows, raw = _rows_from_extras(d, packet.vertices.dtype)
    now = np.ascontiguousarray(packet.vertices[rows]).view(np.uint8).reshape(len(rows), -1)
    return rows[(now == raw.view(np.uint8).reshape(len(rows), -1)).all(axis=1)]


def _without_file_values(m: mdb.MdbFile, file_values: list) -> mdb.MdbFile:
    """The records as checked before writing: the file's own non-finite values (see `_file_values`) read as 0,
    so that the refusal applies to values that come from Blender."""
    swapped = {}
    for packet, rows in file_values:
        vertices = packet.vertices.copy()
        for name in vertices.dtype.names:
            column = vertices[name]
            if column.dtype.kind == "f":
                part = column[rows]
                part[~np.isfinite(part)] = 0
                column[rows] = part
        swapped[id(packet)] = dataclasses.replace(packet, vertices=vertices)
    return mdb.MdbFile([swapped.get(id(p), p) for p in m.packets], m.major, m.minor) if swapped else m


def _same_influences(kb, kw, b, w) -> np.ndarray:
    """Per vertex: do the kept slots describe the same (bone, weight) set as the groups (zero slots ignored)?"""
    def canon(bones, weights):
        weights = merge_repeated_bones(bones.astype(np.int64), np.where(weights > 0, weights, np.float32(0)))
        key = np.where(weights > 0, bones.astype(np.int64), 1 << 20)
        order = np.argsort(key, axis=1, kind="stable")
        rows = np.arange(len(bones))[:, None]
        return key[rows, order], np.where(weights > 0, weights, 0)[rows, order]
    # slot for slot equal (an unchanged import) is the same set; only the other rows are put in canonical form
    same = (kb == b).all(axis=1) & (kw == w).all(axis=1)
    rest = np.flatnonzero(~same)
    if len(rest):
        k1, w1 = canon(kb[rest], kw[rest])
        k2, w2 = canon(b[rest], w[rest])
        same[rest] = (k1 == k2).all(axis=1) & (w1 == w2).all(axis=1)
    return same


def _skeleton(ob, kept: dict | None, opts: _Options) -> bytes:
    kept_raw = bytes.fromhex(kept["skeleton"]) if kept and kept.get("skeleton") else None
    text = opts.skeleton or str(ob.get(SKELETON_PROP, "")) or (mdb.text_of(kept_raw) if kept_raw else "")
    arm = _armature_of(ob)
    if not text and arm is not None:
        text = str(arm.get(SKELETON_PROP, ""))
    if not text:
        raise ExportError(f"{ob.name}: SKIN needs the GR2 skeleton name (--skeleton NAME, or the object's "
                          f"'{SKELETON_PROP}' property)")
    if kept_raw is not None and mdb.text_of(kept_raw) == text:
        return kept_raw
    try:
        return mdb.raw_name(text)
    except ValueError:
        raise ExportError(f"{ob.name}: skeleton name {text!r} is over 32 bytes") from None


def _walk_flags(ob, me, nf: int) -> np.ndarray:
    attr = me.attributes.get(A_WALK_FLAGS)
    flags = _get(attr, "value", nf, 1, np.int32).view(np.uint32).copy() if attr is not None and \
        attr.domain == "FACE" else np.zeros(nf, np.uint32)
    mats = [m.name if m is not None else "" for m in me.materials]
    if not mats:
        return flags
    mat_attr = me.attributes.get("material_index")
    idx = _get(mat_attr, "value", nf, 1, np.int32) if mat_attr is not None else np.zeros(nf, np.int32)
    idx = np.clip(idx, 0, len(mats) - 1)
    for slot, name in enumerate(mats):
        base = name.rsplit(".", 1)[0] if name.rsplit(".", 1)[-1].isdigit() else name
        value = convert.WALK_SURFACES.get(base)
        if value is None:
            mat = me.materials[slot]
            value = int(mat.get("nwn2_walk_flags", -1)) if mat is not None else -1
            if value < 0:
                continue
        rows = np.flatnonzero(idx == slot)
        current = np.array([convert.walk_material_name(f) for f in flags[rows]])
        changed = rows[current != base] if len(rows) else rows
        flags[changed] = (flags[changed] & ~np.uint32(convert.WALK_FLAG_BITS)) | np.uint32(value)
    return flags


def _new_walk_flags(ob, material_indices, n: int) -> np.ndarray:
    """Face flags of a new walk mesh from its materials' names (the walk table) or their `nwn2_walk_flags`;
    a face with neither gets w_Stone (0x21), the flag the format notes give as the usual default."""
    values = []
    for mat in ob.data.materials:
        name = "" if mat is None else mat.name
        base = name.rsplit(".", 1)[0] if name.rsplit(".", 1)[-1].isdigit() else name
        value = convert.WALK_SURFACES.get(base)
        if value is None and mat is not None and "nwn2_walk_flags" in mat:
            value = int(mat["nwn2_walk_flags"])
        values.append(convert.WALK_SURFACES["w_Stone"] if value is None else value)
    if not values:
        return np.full(n, convert.WALK_SURFACES["w_Stone"], np.uint32)
    idx = np.clip(np.asarray(material_indices if material_indices is not None else np.zeros(n), np.int64), 0,
                  len(values) - 1)
    return np.asarray(values, np.uint32)[idx]


def _slot_name(ob, slot: int, warnings: list[str]) -> bytes:
    """`<object>_<slot>`: the packet of one material slot of a mesh split by material (one material a packet)."""
    tail = f"_{slot}"
    base = ob.name
    while len((base + tail).encode("utf-8")) > mdb.NAME_SIZE - 1:
        base = base[:-1]
    if base != ob.name:
        warnings.append(f"{ob.name}: packet of material slot {slot} named {base + tail!r} (31 bytes)")
    return mdb.raw_name(base + tail)


def _new_mesh_packets(context, ob, ptype: str, opts: _Options, warnings: list[str], kept: dict | None = None) -> list:
    """The packets of a mesh object without kept vertex data (new, moved, or with new seams): its world-space
    evaluated mesh split per corner, tangents by MikkTSpace, one packet per material slot in use (an MDB packet
    has one material); the kept name, material and skeleton still apply."""
    if kept and kept.get("dropped"):
        warnings.append(f"{ob.name}: the mesh changed; the file's {len(kept['dropped']['rows'])} faces with a "
                        "repeated vertex are not written")
    depsgraph = context.evaluated_depsgraph_get()
    matrix = np.array(ob.matrix_world, np.float64)
    cmesh = bmesh_.read_mesh(ob, depsgraph, matrix, {}, 4, warnings, tangents=ptype in ("RIGD", "SKIN"))
    if cmesh is None:
        return []
    nv = cmesh.vertex_count
    faces = cmesh.triangles.astype(np.int64)
    mat_idx = np.asarray(cmesh.material_indices if cmesh.material_indices is not None else np.zeros(len(faces)),
                         np.int64)
    slots = np.unique(mat_idx).tolist() if ptype != "WALK" and len(faces) else [None]
    single = len(slots) == 1
    if single and nv > MAX_VERTICES:
        raise ExportError(f"{ob.name}: {nv} vertices in one packet; u16 faces reach 65,536")
    if ptype == "WALK":
        wf = np.zeros(len(faces), mdb.WALK_FACE)
        wf["v"] = faces
        wf["flags"] = _new_walk_flags(ob, cmesh.material_indices, len(faces))
        return [mdb.WalkPacket(_packet_name(ob, kept, warnings), int(kept.get("ui_flags", 0)) if kept else 0,
                               cmesh.positions, wf)]
    uv = cmesh.uvs[0][1] if cmesh.uvs else None
    tangents = binormals = uvw_z = None
    if cmesh.tangents is not None:
        tangents, binormals, uvw_z = convert.tangent_frame(cmesh.normals, cmesh.tangents)
    if ptype in ("COL2", "COL3"):
        uvw_z = np.zeros(nv, np.float32)
    skeleton = bytes(mdb.NAME_SIZE)
    slot_weights: dict[bool, tuple] = {}
    if ptype == "SKIN":
        skeleton = _skeleton(ob, kept, opts)
        if cmesh.extras["source_vertex_count"] != len(ob.data.vertices):
            raise ExportError(f"{ob.name}: its modifiers change the vertex count; apply them before an MDB export "
                              "(weights are read from the mesh's own vertices)")
    out = []
    for slot in slots:
        if single:
            used, tris = np.arange(nv), faces
        else:
            rows = faces[mat_idx == slot]
            used, inverse = np.unique(rows, return_inverse=True)
            tris = inverse.reshape(-1, 3)
            if len(used) > MAX_VERTICES:
                raise ExportError(f"{ob.name}: material slot {slot} has {len(used)} vertices in one packet; u16 "
                                  "faces reach 65,536")
        mat = ob.material_slots[slot].material if slot is not None and 0 <= slot < len(ob.material_slots) else None
        material = _mesh_material(ob, kept, warnings, mat)
        weights = bones = None
        if ptype == "SKIN":
            head = mdb_bones.uses_head_bones(material.flags)
            if head not in slot_weights:
                slot_weights[head] = _skin_slots(ob, ob.data, opts, head, warnings)
            w, b = slot_weights[head]
            source = cmesh.extras["source_vertex"][used]
            weights, bones = w[source], b[source]
        uv_, tangents_, binormals_, uvw_z_ = (None if a is None else a[used] for a in (uv, tangents, binormals, uvw_z))
        vertices = convert.mesh_vertices(ptype, cmesh.positions[used], cmesh.normals[used], uv_, tangents_,
                                         binormals_, uvw_z_, weights, bones)
        name = _packet_name(ob, kept, warnings) if single else _slot_name(ob, slot, warnings)
        out.append(mdb.MeshPacket(ptype, name, material, vertices, tris.astype(np.uint16), skeleton))
    return out


def _point_packet(ob, ptype: str, kept: dict | None, warnings: list[str]):
    m = np.array(ob.matrix_world, np.float64)
    if kept and kept.get("type") == ptype:
        built = _point_matrix(kept["position"], kept["orientation"])
        as_built = ob.get(BUILT_PROP)
        held = as_built is not None and len(as_built) == 16 and \
            _same_floats(np.asarray(as_built, np.float64).reshape(4, 4), m, MATRIX_TOLERANCE)
        if held or _same_floats(built, m, MATRIX_TOLERANCE):
            d = dict(kept)
            if mdb.text_of(bytes.fromhex(d["name"])) != ob.name:
                d["name"] = _packet_name(ob, d, warnings).hex()  # "name.001" of a second import: the raw name
            return convert.record_from_extras(d)
    rot = m[:3, :3] / np.maximum(np.linalg.norm(m[:3, :3], axis=0, keepdims=True), 1e-30)
    orientation = np.empty((3, 3))
    orientation[ROW_ORDER] = rot
    kind = int(kept.get("kind", 0)) if kept else 0
    if ptype == "HAIR" and "nwn2_shortening" in ob and ob["nwn2_shortening"] in mdb.HAIR_SHORTENING:
        kind = mdb.HAIR_SHORTENING.index(ob["nwn2_shortening"])
    if ptype == "HELM" and "nwn2_hiding" in ob and ob["nwn2_hiding"] in mdb.HELM_HIDING:
        kind = mdb.HELM_HIDING.index(ob["nwn2_hiding"])
    size = int(kept.get("size", 0)) if kept else 0
    return mdb.PointPacket(ptype, _packet_name(ob, kept if kept and "name" in kept else None, warnings), kind, size,
                           m[:3, 3].astype("<f4"), orientation.astype("<f4"))


def _collection_objects(coll) -> list:
    out = list(coll.objects)
    for child in coll.children:
        out += [o for o in _collection_objects(child) if o not in out]
    return out


def _export_objects(context, collection) -> tuple[list, list]:
    """(objects, model collections): the collection's objects (children included), or every visible object of
    the view layer plus those in `LODs` collections."""
    if collection is not None:
        return _collection_objects(collection), [collection]
    layer = context.view_layer
    layer.update()
    obs, models = [], []
    for ob in layer.objects:
        in_lods = any(c.name.split(".")[0] == LODS for c in ob.users_collection)
        if ob.visible_get() or in_lods:
            obs.append(ob)
    meshes, _ = bscene.exportable_objects(context)  # with several models, the one the user chose
    chosen = set(meshes)
    obs = [ob for ob in obs if ob.type != "MESH" or ob in chosen
           or any(c.name.split(".")[0] == LODS for c in ob.users_collection)]
    for c in bpy.data.collections:
        if PROP in c and any(o in obs for o in c.objects):
            models.append(c)
    if len(models) > 1:  # the same file imported twice, or two models: the one the user chose, as it was
        chosen = _chosen_model(context, models)
        others = {o.as_pointer() for c in models if c != chosen for o in _collection_objects(c)}
        obs = [ob for ob in obs if ob.as_pointer() not in others]
        models = [chosen]
    return obs, models


def _chosen_model(context, models: list):
    """Of several MDB model collections, the one holding the active object, else the only one holding selected
    objects; ExportError naming them when that does not decide."""
    members = [{o.as_pointer() for o in _collection_objects(c)} for c in models]
    active = context.view_layer.objects.active
    if active is not None:
        hit = [c for c, m in zip(models, members) if active.as_pointer() in m]
        if len(hit) == 1:
            return hit[0]
    selected = {o.as_pointer() for o in context.view_layer.objects if o.select_get()}
    hit = [c for c, m in zip(models, members) if m & selected]
    if len(hit) == 1:
        return hit[0]
    names = ", ".join(c.name for c in (hit or models))
    raise ExportError(f"{len(hit or models)} MDB models could be exported ({names}): select one (an object of it), "
                      "or export a collection")


def gather(context, collection=None, skeleton: str | None = None, limit_weights: bool = False,
           armature=None) -> tuple[mdb.MdbFile, list[str]]:
    m, warnings, _ = _gather(context, collection, skeleton, limit_weights, armature)
    return m, warnings


def _skeleton_edits(arm_ob, skeleton: str) -> list[str]:
    """What of the skeleton an MDB import built (`SKELETON_REST_PROP`) the user changed, which the MDB cannot hold:
    its SKIN packets name the GR2 skeleton and index its bones; the names and rest poses live in the GR2 file."""
    try:
        built = json.loads(arm_ob.get(SKELETON_REST_PROP, ""))
    except ValueError:
        return []
    bones = list(arm_ob.data.bones)
    where = f"the skeleton {skeleton or arm_ob.name} (a GR2 file): export the armature as GR2 to write it"
    if len(built) != len(bones):
        return [f"{arm_ob.name}: {len(bones)} bones where the GR2 skeleton had {len(built)}; an MDB holds no bones, "
                f"they live in {where}"]
    out = []
    renamed = [(old, b.name) for (old, _), b in zip(built, bones) if old != b.name]
    moved = [b.name for (_, m), b in zip(built, bones)
             if not np.allclose(np.asarray(m, np.float64).reshape(4, 4), np.array(b.matrix_local, np.float64),
                                rtol=0, atol=REST_TOLERANCE)]
    if renamed:
        listed = ", ".join(f"{old!r} → {new!r}" for old, new in renamed[:5]) + (" …" if len(renamed) > 5 else "")
        out.append(f"{arm_ob.name}: bone renamed ({listed}); the MDB's SKIN packets hold bone indices, not names "
                   f"(written as before), the names live in {where}")
    if moved:
        listed = ", ".join(repr(n) for n in moved[:5]) + (" …" if len(moved) > 5 else "")
        out.append(f"{arm_ob.name}: rest pose of bone {listed} changed; not written: an MDB holds no rest pose, it "
                   f"lives in {where}")
    return out


def _gather(context, collection, skeleton: str | None, limit_weights: bool, armature) -> tuple:
    """(records, warnings, [(packet, vertices holding the file's own non-finite values)])."""
    warnings: list[str] = []
    file_values = []
    opts = _Options(skeleton, limit_weights, _armature(armature))
    context.view_layer.update()  # matrices of objects moved since the last update
    objects, models = _export_objects(context, collection)
    kept_model = {}
    for c in models:
        try:
            kept_model = json.loads(c[PROP])
            break
        except (ValueError, KeyError):
            continue
    entries = []  # (sort key, packet)
    cols_groups: dict = {}
    arm_poses = []
    skin_armatures: dict = {}  # armature name → (armature, the skeleton its SKIN packets name)
    for ob in objects:
        arm = _armature_of(ob) if ob.type == "MESH" else None
        if arm is not None and arm.data.pose_position != "REST":
            arm_poses.append(arm)
    try:
        for arm in arm_poses:
            arm.data.pose_position = "REST"
        if arm_poses:
            context.view_layer.update()
        for n, ob in enumerate(sorted(objects, key=lambda o: o.name)):
            kept = _kept(ob)
            ptype = _packet_type(ob, kept)
            if ptype is None:
                continue
            order = (0, kept["packet"]) if kept and "packet" in kept else (1, n)
            if ptype == "COLS":
                key = kept["packet"] if kept and "packet" in kept else "new"
                cols_groups.setdefault(key, []).append((kept.get("sphere", n) if kept else n, ob, kept, order))
                continue
            if ob.type == "EMPTY" and ptype in mdb.POINT_TYPES:
                entries.append((order, _point_packet(ob, ptype, kept, warnings)))
                continue
            if ob.type != "MESH":
                continue
            same_type = kept if kept and kept.get("type") == ptype else None
            warnings += _shape_key_warnings(ob)
            packet = _kept_mesh_packet(ob, kept, ptype, opts, warnings) if same_type else None
            if packet is not None and kept.get("non_finite"):
                file_values.append((packet, _file_values(packet, kept)))
            packets = [packet] if packet is not None else \
                _new_mesh_packets(context, ob, ptype, opts, warnings, same_type)
            for k, packet in enumerate(packets):
                entries.append(((*order, k), packet))
            arm = _armature_of(ob)
            if ptype == "SKIN" and packets and arm is not None:
                skin_armatures.setdefault(arm.name, (arm, mdb.text_of(packets[0].skeleton)))
    finally:
        for arm in arm_poses:
            arm.data.pose_position = "POSE"
    for arm, skeleton_name in skin_armatures.values():
        warnings += _skeleton_edits(arm, skeleton_name)
    for key, items in cols_groups.items():
        items.sort(key=lambda x: (x[0], x[1].name))
        spheres = np.zeros(len(items), mdb.COLS_SPHERE)
        extra = b""
        names = [b.name for b in opts.armature.data.bones] if opts.armature is not None else []
        for k, (_, ob, kept, _) in enumerate(items):
            label = ob.name[5:] if ob.name.upper().startswith("COLS_") else ob.name
            parent_names = [b.name for b in ob.parent.data.bones] if ob.parent is not None and \
                ob.parent.type == "ARMATURE" else names
            if ob.parent_type == "BONE" and ob.parent_bone in parent_names:
                bone = parent_names.index(ob.parent_bone)  # COLS indexes the unfiltered skeleton
            elif kept and "bone" in kept:
                bone = int(kept["bone"])
            elif label in names:
                bone = names.index(label)
            elif label.isdigit():
                bone = int(label)
            else:
                raise ExportError(f"{ob.name}: a COLS empty needs a bone index or bone name after COLS_, or a "
                                  "bone parent")
            if not 0 <= bone <= 0xFFFFFFFF:
                raise ExportError(f"{ob.name}: COLS bone index {bone} does not fit a u32")
            shown = np.float32(ob.empty_display_size)
            radius = kept["radius"] if kept and np.float32(kept.get("shown", kept["radius"])) == shown else shown
            spheres[k] = (bone, radius)
            if kept and kept.get("extra"):
                extra = bytes.fromhex(kept["extra"])
        entries.append((items[0][3], mdb.ColsPacket(spheres, extra)))
    for d in kept_model.get("raw", []):
        entries.append(((0, d["packet"]), convert.record_from_extras(d)))
    entries.sort(key=lambda e: e[0])
    out = mdb.MdbFile([p for _, p in entries], int(kept_model.get("major", 1)), int(kept_model.get("minor", 12)))
    if kept_model and kept_model.get("packets") == len(out.packets):
        out.gaps = [bytes.fromhex(g) for g in kept_model.get("gaps", [])]
        out.tail = bytes.fromhex(kept_model.get("tail", ""))
    return out, warnings, file_values


def export_mdb(context, path: str, collection=None, skeleton: str | None = None, limit_weights: bool = False,
               armature=None, hak: str | None = None) -> list[str]:
    """Write the scene's MDB objects as `path`; with `hak` (`--hak NAME.hak`), that MDB packed into NAME.hak
    beside it too."""
    m, warnings, file_values = _gather(context, collection, skeleton, limit_weights, armature)
    if not m.packets and (collection is None or PROP not in collection):
        raise ExportError("nothing to export: no mesh or MDB empty is visible")
    errors = [f for f in mdb_check.validate(_without_file_values(m, file_values)) if f.severity == "error"]
    if errors:  # NaN/Inf and indices out of range: refused, never written (docs/architecture.md §7.4)
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ExportError(f"{errors[0].element}: {errors[0].field}: {errors[0].message}{more}")
    pieces = mdb.write_pieces(m)
    hak_path = hak_target(os.path.dirname(path) or ".", hak) if hak else None  # a bad name: refused first
    write_atomic(path, pieces)
    if hak_path is not None:
        data = b"".join(bytes(p) for p in pieces)
        try:
            packed = archive.write_erf([(os.path.basename(path), data)])
        except (ValueError, FormatError) as e:
            raise ExportError(f"--hak {hak}: {e}") from None
        write_atomic(hak_path, packed)
    return warnings


def hak_name(hak: str) -> str:
    """The file `--hak NAME.hak` writes in the output folder (docs/nwn2.md §5.8); ExportError for a name that is
    not a plain file name."""
    name = hak if hak.lower().endswith(".hak") else hak + ".hak"
    if os.path.basename(name) != name or name.startswith(".") or ".." in name or ":" in name or "\\" in name:
        raise ExportError(f"--hak {hak}: give a file name (the pack is written in the output folder)")
    return name


def hak_target(folder: str, hak: str) -> str:
    """FOLDER/NAME.hak, asked of the output guard like every file written."""
    return output_path(folder, hak_name(hak))


def export_target(context, outdir: str, name: str, options) -> tuple[list[str], list[str]]:
    """`convert --to mdb`: OUTDIR/NAME.mdb (static meshes as RIGD, skinned as SKIN with `--skeleton NAME`), and
    with `--hak NAME.hak` that file packed into OUTDIR/NAME.hak too."""
    path = output_path(outdir, name + ".mdb")
    hak = getattr(options, "hak", None)
    warnings = export_mdb(context, path, skeleton=options.skeleton,
                          limit_weights=bool(options.limit_weights), hak=hak)
    return [path] + ([os.path.join(os.path.dirname(path), hak_name(hak))] if hak else []), warnings
