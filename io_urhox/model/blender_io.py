"""UrhoX / Urho3D model import and export in Blender: file → records → core → bpy and back (the package around
the model, with its textures, materials and animations: io_urhox/blender_io.py).

Shared by the operators and the command line. Import parses and maps the whole file before the first
datablock is created; export writes to a temporary file and renames it into place.
"""
from __future__ import annotations

import json
import os
import uuid

import numpy as np

from ...blender import action as baction
from ...blender import armature as barm
from ...blender import scene as bscene
from ...blender.props import json_prop
from ...blender.selection import NoTarget, one_model
from ...core import model as cm
from ...core.errors import ExportError
from ...core.fileio import read_bytes, write_atomic
from . import convert, umd2

# on an imported armature: the profile whose axes its file used (motion/blender_io.py reads its motions so)
AXES_PROP = "skinbridge_axes"
MESH_PROP = "skinbridge_urho"  # on an imported mesh: the file's vertex elements, geometry centres, magic, axes

_KEPT = ("elements", "centers", "magic", "axes", "global_blend", "bbox", "mappings", "lod_levels")
RECORDS_PROP = "skinbridge_urho_vertices"  # the file's vertex records (int32 words), written again where they hold
LOD_INDICES_PROP = "skinbridge_urho_lod_indices"  # the file's index buffer when it holds LOD levels import left out
PRIMITIVES_PROP = "skinbridge_urho_triangles"  # the file's triangles and their slots, when Blender dropped some
REST_PROP = "skinbridge_urho_rest"  # on an imported armature's data: each bone's rest matrix as import made it
MODEL_PROP = "skinbridge_urho_model"  # on an imported mesh object: which import made it (one token per import)
ROW_ATTR = "skinbridge_urho_row"  # per vertex of an imported mesh: its row in the file's vertex buffer


def import_mdl(context, path: str, profile: str = "auto", all_lods: bool = False) -> bscene.ImportResult:
    """`profile` "auto" picks the file's likely axes (`convert.detect_profile`): urho3d for UMDL/UMD3 and for
    UMD2 files with collision extras or morphs, urhox otherwise. `all_lods` imports every LOD level."""
    data = read_bytes(path)
    model = umd2.read(data)
    name = os.path.splitext(os.path.basename(path))[0]
    core_scene, warnings = convert.to_scene(model, name, profile, all_lods=all_lods)
    result = bscene.build_scene(context, core_scene, name, os.path.dirname(path))
    objects = [o for o in result.objects if o.type == "MESH"]
    token = f"{name}:{uuid.uuid4().hex}"
    for ob, cmesh in zip(objects, core_scene.meshes):  # build_scene makes one object per core mesh, in order
        ob[MODEL_PROP] = token
        kept = {k: cmesh.extras.get("urho", {}).get(k) for k in _KEPT}
        if kept["magic"] is not None:  # LOD 0: the mesh holds its vertex buffer whole, in file order
            _keep_file_data(ob, cmesh, model.vertex_buffers[cmesh.extras["urho"]["vertex_buffer"]])
        ob.data[MESH_PROP] = json.dumps(kept)
    if result.armature is not None:  # motions loaded onto this armature later read with the same axes
        result.armature[AXES_PROP] = convert.resolve_profile(model, profile)
        result.armature.data[REST_PROP] = _rest_matrices(result.armature)
        if not _binds_are_similarities(core_scene.skeleton):
            # the initial pose through binds Blender cannot hold exactly is measured as the animations' keys are
            warnings += baction.deformation_warning(result.armature, cm.Animation(f"{name} initial pose", 0.0),
                                                    baction.bone_frames(result.armature), {},
                                                    context.scene.render.fps)
    result.warnings[:0] = warnings
    return result


def _rest_matrices(arm_ob) -> np.ndarray:
    """Every bone's rest matrix (armature space, float32, bones in order), one array."""
    bones = arm_ob.data.bones
    out = np.empty(16 * len(bones), np.float32)
    for i, b in enumerate(bones):
        out[16 * i:16 * i + 16] = np.asarray(b.matrix_local, np.float32).reshape(-1)
    return out


def _moved_rests(core_scene, arm_ob) -> None:
    """Mark the bones whose rest moved since import (`REST_PROP`, compared bit for bit, bones in order: a rename
    is no move) and those whose parent's did: the file's offset matrix and initial pose are not kept for them
    however close the new ones are (docs/urho.md §7), so that a small move is not lost."""
    skel = core_scene.skeleton
    kept = arm_ob.data.get(REST_PROP) if arm_ob is not None else None
    if skel is None or kept is None:
        return
    kept = np.asarray(kept, np.float32)
    now = _rest_matrices(arm_ob)
    if kept.shape != now.shape:
        return
    moved_at = {b.name for b, was, is_ in zip(arm_ob.data.bones, kept.reshape(-1, 16), now.reshape(-1, 16))
                if was.tobytes() != is_.tobytes()}
    if not moved_at:
        return
    index = {bone.name: i for i, bone in enumerate(arm_ob.data.bones)}
    world = np.array(arm_ob.matrix_world, dtype=np.float64)
    for b in skel.bones:
        parent = skel.bones[b.parent].name if b.parent >= 0 else None
        urho = b.extras.setdefault("urho", {})
        urho["rest_moved"] = b.name in moved_at
        urho["parent_moved"] = parent in moved_at
        if urho["rest_moved"]:  # the file's bind (else Blender's rest at import) moved as Blender's rest moved
            i = index[b.name]
            was = kept[16 * i:16 * i + 16].reshape(4, 4).astype(np.float64)
            is_ = now[16 * i:16 * i + 16].reshape(4, 4).astype(np.float64)
            exact = barm.file_bind(arm_ob.data.bones[b.name])
            base = exact if exact is not None and np.allclose(world, np.eye(4)) \
                else world @ was  # (read_skeleton's rule for the file's bind)
            b.bind = base @ np.linalg.inv(was) @ is_
    skel.set_rest_from_binds()


def _binds_are_similarities(skel: cm.Skeleton) -> bool:
    """Every bind a rotation with uniform scale: then Blender holds the initial pose exactly and measuring it
    (a per-bone walk) is skipped."""
    m = np.array([b.bind for b in skel.bones], np.float64).reshape(-1, 4, 4)[:, :3, :3]
    gram = np.einsum("nji,njk->nik", m, m)
    s2 = np.trace(gram, axis1=1, axis2=2)[:, None, None] / 3.0
    return bool(np.all(np.abs(gram - s2 * np.eye(3)) <= 1e-6 * np.maximum(s2, 1e-30)))


def _keep_file_data(ob, cmesh, vb: umd2.VertexBuffer) -> None:
    """The file's vertex records (tangents, the normals and UVs of line vertices, exact floats) and, when Blender
    could not hold every triangle (degenerate ones), the file's triangles with their slots."""
    records = np.ascontiguousarray(vb.vertices)
    if records.dtype.itemsize % 4 == 0 and len(records) == len(ob.data.vertices):
        ob.data[RECORDS_PROP] = records.view(np.int32).reshape(-1)
        # which record each vertex is: Blender carries the attribute through deleted faces and vertices
        rows = ob.data.attributes.new(ROW_ATTR, "INT", "POINT")
        rows.data.foreach_set("value", np.arange(len(records), dtype=np.int32))
    lod_indices = cmesh.extras["urho"].get("lod_indices")
    if lod_indices is not None:  # int32 words: ID properties hold no unsigned arrays
        ob.data[LOD_INDICES_PROP] = np.asarray(lod_indices, np.uint32).view(np.int32)
    if len(ob.data.polygons) != len(cmesh.triangles):
        mats = cmesh.material_indices if cmesh.material_indices is not None else \
            np.zeros(len(cmesh.triangles), np.int32)
        ob.data[PRIMITIVES_PROP] = np.concatenate([cmesh.triangles.reshape(-1), mats]).astype(np.int32)


def _restore_file_data(ob, cmesh, elements) -> None:
    """Give a gathered mesh the file data `_keep_file_data` kept, while its vertices are the file's own, one to
    one and in order (moved or not: the export writes the file's values where they still hold); after vertices
    were deleted, the records of the rows the vertices left still are (`ROW_ATTR`), the rest not."""
    n = cmesh.vertex_count
    source = cmesh.extras.get("source_vertex")
    if source is None or len(source) != n:
        return
    kept = _file_records(ob, elements)
    rows = _file_rows_of(ob, source)
    if kept is not None and rows is not None and not (len(kept) == n and np.array_equal(rows, np.arange(n))):
        # vertices deleted (faces deleted in Edit Mode): the ones left are still their file rows
        if (rows < len(kept)).all():
            cmesh.extras["urho"]["records"] = kept[rows]
        return
    if not np.array_equal(source, np.arange(n)):
        return
    if kept is not None and len(kept) == n:
        cmesh.extras["urho"]["records"] = kept
    lod_indices = ob.data.get(LOD_INDICES_PROP)
    if lod_indices is not None:
        cmesh.extras["urho"]["lod_indices"] = np.asarray(lod_indices, np.int32).view(np.uint32)
    flat = ob.data.get(PRIMITIVES_PROP)
    if flat is not None:
        flat = np.asarray(flat, np.int32)
        t = len(flat) // 4
        tris, mats = flat[:3 * t].reshape(t, 3), flat[3 * t:]
        proper = (tris[:, 0] != tris[:, 1]) & (tris[:, 1] != tris[:, 2]) & (tris[:, 0] != tris[:, 2])
        gathered = cmesh.material_indices if cmesh.material_indices is not None else \
            np.zeros(len(cmesh.triangles), np.int32)
        # the file's triangles while Blender's are the file's proper ones, corner for corner
        if len(flat) == 4 * t and (tris < n).all() and np.array_equal(tris[proper], cmesh.triangles) \
                and np.array_equal(mats[proper], gathered):
            cmesh.triangles, cmesh.material_indices = tris, mats


def _file_rows_of(ob, source: np.ndarray) -> np.ndarray | None:
    """The file row of each gathered vertex (`ROW_ATTR` through `source`, the gathered vertex's Blender vertex),
    when every Blender vertex still names a row of its own and every gathered vertex is a Blender vertex once
    (vertices deleted, none added or merged); else None."""
    attr = ob.data.attributes.get(ROW_ATTR)
    nv = len(ob.data.vertices)
    if attr is None or attr.domain != "POINT" or attr.data_type != "INT" or len(source) != nv:
        return None
    rows = np.empty(nv, np.int32)
    attr.data.foreach_get("value", rows)
    if len(np.unique(rows)) != nv or (rows < 0).any() or len(np.unique(source)) != nv:
        return None
    return rows[np.asarray(source, np.int64)].astype(np.int64)


def _file_records(ob, elements) -> np.ndarray | None:
    """The file's vertex records `_keep_file_data` kept on the mesh, as structured rows."""
    words = ob.data.get(RECORDS_PROP)
    if words is None or elements is None:
        return None
    try:
        dtype = umd2.vertex_dtype(convert.elements_of(elements))
    except (TypeError, ValueError):
        return None
    kept = np.asarray(words, np.int32)
    return None if kept.nbytes % dtype.itemsize else kept.view(dtype)


def export_objects(context, selected_only: bool = False) -> tuple[list, object]:
    """(meshes, armature) an export takes (`bscene.exportable_objects`), one model without bones among several:
    meshes that different imports made (`MODEL_PROP`) are different models, as two armatures are, so with
    several of them those of the models the selection touches are taken (with the meshes added in Blender,
    which belong to none), and NoTarget names them when the selection touches none. A model imported twice is
    so written as it was, not merged with its copy."""
    meshes, arm = bscene.exportable_objects(context, selected_only)
    return one_model(meshes, arm, MODEL_PROP)


def export_mdl(context, path: str, profile: str = "urhox", selected_only: bool = False,
               deform_only: bool = False, max_bones: int = 64) -> list[str]:
    # a file's unreferenced vertices come back in their place: its kept vertex records cover them
    objects = export_objects(context, selected_only)
    core_scene, warnings = bscene.gather_scene(context, deform_only=deform_only, isolated=True, objects=objects)
    _moved_rests(core_scene, objects[1])
    if not core_scene.meshes:
        raise ExportError("nothing to export: no visible mesh with faces")
    _file_values_of_imported_meshes(context, core_scene)
    model, more = convert.from_scene(core_scene, profile, max_bones=max_bones)
    data = umd2.write(model)
    bscene.failure_point("write")
    write_atomic(path, data)
    return warnings + more


def _file_values_of_imported_meshes(context, core_scene) -> None:
    """Give each gathered mesh that import made the file's values (vertex elements, axes, magic, geometry
    centres, bone mappings, bounds, LOD levels) and, while its vertices are the file's one to one, its vertex
    records, edited or not: the export writes them again where they still hold (model/file_rows.py), so that
    an edit changes only what it touched."""
    objects = {o.name: o for o in context.view_layer.objects if o.type == "MESH"}
    for cmesh in core_scene.meshes:
        ob = objects.get(cmesh.name)
        raw = ob.data.get(MESH_PROP) if ob is not None else None
        if not raw:
            continue
        try:
            kept = json.loads(raw)
        except (TypeError, ValueError):
            continue
        if not isinstance(kept, dict):
            continue
        urho = cmesh.extras.setdefault("urho", {})
        for key in _KEPT:
            if kept.get(key) is not None:
                urho[key] = kept[key]
        _restore_file_data(ob, cmesh, kept.get("elements"))

def imported_profile(context, selected_only: bool = False) -> str | None:
    """The profile whose axes the model an export would take was imported with: its armature's, else the one its
    imported meshes agree on; None for a model import did not make (or several models to choose from)."""
    try:
        meshes, arm = export_objects(context, selected_only)
    except NoTarget:
        return None
    if arm is not None and arm.get(AXES_PROP) in convert.PROFILES:
        return arm[AXES_PROP]
    found = {json_prop(ob.data, MESH_PROP).get("axes") for ob in meshes} - {None}
    return found.pop() if len(found) == 1 and next(iter(found)) in convert.PROFILES else None


def blender_import(context, path: str, options) -> list[str]:
    """`convert`, `render` and drag and drop: the file with its own axes (or the profile the options name)."""
    profile = getattr(options, "import_profile", None) or "auto"
    return import_mdl(context, path, profile).warnings
