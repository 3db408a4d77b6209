"""SMD / VTA in Blender: reference meshes, animations and flex shapes, both ways.

Import: the whole file is read and mapped before the first datablock is made (atomic).
* A reference becomes an armature (unless it is one node without links: a plain mesh) and a mesh whose
  corners merge per `convert.merge_corners`; normals go to the FLOAT_VECTOR `custom_normal` corner attribute
  and UVs to a UV map, both per corner; the parent-bone column and the link count of every corner go to the
  INT corner attributes `smd_parent` and `smd_links`, so that an export writes the same columns.
* An animation goes onto the target armature (selected or active, else the only one; several: refused naming
  them), matched by bone name, keys at frame = time, LINEAR, quaternion rotations (GENERATED keys where
  Blender's interpolation leaves the slerp path). Only when the scene has no armature is one built from
  frame 0.
* A VTA becomes shape keys of the active mesh, or of the mesh imported from the reference of the same stem
  (equal once a `_ref` / `_flex` suffix is dropped: `cube_ref.smd`, `cube_flex.vta`), through that mesh's
  corner map (VTA vertex ids are corners of the reference's triangle list), falling back
  to frame-0 positions within 1e-5.
Export (`export_target`, the one path of `convert --to smd` and File › Export): the visible meshes and their
armature as a reference SMD (in the flavour it was read in, or the one asked for), shape keys as a VTA in the
reference's corner order, each action of the armature as an animation SMD and a QC naming them, as the smd
spec's options say. Export only reads the scene.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import uuid
from collections.abc import Iterator

import bpy
import numpy as np

from ...blender import action as bact
from ...blender import armature as barm
from ...blender import scene as bscene
from ...blender.ops_common import unmatched_motion
from ...blender.selection import NoTarget, armatures, find_armature, one_model
from ...core import model as cm
from ...core.errors import ExportError, FormatError
from ...core.fileio import read_bytes, write_atomic
from ...core.names import clean, shown
from ...core.naming import NameAllocator, safe_file_name
from ..qc import qc
from . import convert, kept, smd

STEM_PROP = "smd_stem"
FLAVOUR_PROP = "smd_flavour"  # "GoldSrc" when read from a file without link columns
NEWLINE_PROP = "smd_newline"  # "CRLF" when read with CRLF
SOURCE_PROP = "smd_source"  # the file's bytes (kept.py): on the reference's mesh, on an animation's action
VTA_SOURCE_PROP = "smd_vta_source"  # a VTA's bytes, on the mesh its shapes went onto
DROPPED_PROP = "smd_dropped_triangles"  # the reference's triangles Blender could not hold (a repeated vertex)
MATERIAL_PROP = "smd_material"  # on a material an import made: the name the file gives it
ROOT_PROP = "smd_root"  # a plain reference's one node (JSON: id, name, rest position and rotation)
MODEL_PROP = "smd_model"  # on an imported reference's mesh object: which import made it (one token per import)


def stem_of(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _base_stem(stem: str) -> str:
    return re.sub(r"_(ref|reference|flex|vta|anim)$", "", stem, flags=re.I)


# -- import ----------------------------------------------------------------------------------------------

def import_file(context, path: str, options=None, armature=None) -> list[str]:
    """Import one .smd / .vta; returns warnings. FormatError / ExportError on what cannot be imported."""
    f, source = _read(path)
    name = stem_of(path)
    if f.kind == "model":
        return import_reference(context, f, name, source)
    if f.kind == "motion":
        return import_motion(context, f, name, armature, qc_rate(path), source)
    return import_flex(context, f, name, source)


def _read(path: str) -> tuple[smd.SmdFile, bytes | None]:
    """The records and, up to `kept.KEEP_LIMIT`, the file's bytes (written again by an export that makes the
    same records); a larger file's bytes are freed here: the import reuses their memory."""
    data = read_bytes(path)
    f = smd.read(data)
    return f, data if len(data) <= kept.KEEP_LIMIT else None


def _corner_attr(me, name: str, kind: str, values: np.ndarray) -> None:
    if name in me.attributes:
        me.attributes.remove(me.attributes[name])
    attr = me.attributes.new(name, kind, "CORNER")
    if kind == "FLOAT_VECTOR":
        attr.data.foreach_set("vector", np.ascontiguousarray(values, np.float32).reshape(-1))
    else:
        attr.data.foreach_set("value", np.ascontiguousarray(values, np.int32).reshape(-1))


def import_reference(context, f: smd.SmdFile, name: str, source: bytes | None = None) -> list[str]:
    scene, warnings = convert.to_scene(f, name)
    mesh = scene.meshes[0]
    extra = mesh.extras["smd"]
    mesh.normals, mesh.uvs = None, []  # per corner below, not per vertex
    tris = mesh.triangles
    # the bridge skips triangles with a repeated vertex: their corners leave the corner data too
    held = np.repeat(~((tris[:, 0] == tris[:, 1]) | (tris[:, 1] == tris[:, 2]) | (tris[:, 0] == tris[:, 2])), 3)
    held = slice(None) if held.all() else held
    result = bscene.build_scene(context, scene, name)
    try:
        ob = next(o for o in result.objects if o.type == "MESH")
        me = ob.data
        _corner_attr(me, "custom_normal", "FLOAT_VECTOR", extra["corner_normals"][held])
        uv = me.uv_layers.new(name="UVMap", do_init=False)
        uv.uv.foreach_set("vector", np.ascontiguousarray(extra["corner_uvs"][held], np.float32).reshape(-1))
        _corner_attr(me, "smd_parent", "INT", extra["corner_parents"][held])
        _corner_attr(me, "smd_links", "INT", extra["corner_link_counts"][held])
        if result.armature is not None:
            names = [shown(n.name) for n in f.nodes]
            changed = sorted({n for n in names if names.count(n) > 1 or n not in result.armature.data.bones})
            if changed:
                warnings.append(f"node names that Blender cannot keep as bone names (empty, repeated or too long) "
                                f"were changed: {', '.join(repr(n) for n in changed[:10])}")
        ob[STEM_PROP] = name
        ob[MODEL_PROP] = uuid.uuid4().hex
        for mat, k in zip(me.materials, mesh.materials):  # the file's name, for an export after Blender made X.001
            if mat is not None:
                mat[MATERIAL_PROP] = scene.materials[k].name
        if f.goldsrc:
            ob[FLAVOUR_PROP] = "GoldSrc"
        if f.newline == "\r\n":
            ob[NEWLINE_PROP] = "CRLF"
        if source is not None:
            me[SOURCE_PROP] = source
            if not isinstance(held, slice):
                me[DROPPED_PROP] = np.flatnonzero(~held[::3]).astype(np.int32)
        if result.armature is None and len(f.nodes) == 1:
            ob[ROOT_PROP] = json.dumps(_plain_root(f))
        me.update()
    except BaseException:
        created = list(result.objects)
        created += [o.data for o in result.objects if o.data is not None]
        bscene.remove_created(created)
        raise
    return warnings + result.warnings


def _plain_root(f: smd.SmdFile) -> dict:
    """The one node of a plain reference and its rest row (zeros when frame 0 has none)."""
    node = f.nodes[0]
    pos, rot = [0.0] * 3, [0.0] * 3
    if f.skeleton:
        rows = np.flatnonzero(f.skeleton[0].bones == node.id)
        if len(rows):
            pos = [float(x) for x in f.skeleton[0].positions[rows[0]]]
            rot = [float(x) for x in f.skeleton[0].rotations[rows[0]]]
    return {"id": int(node.id), "name": node.name, "position": pos, "rotation": rot}


def target_armature(context):
    """The armature a motion goes onto: selected or active, else the only one; None when the scene has none.
    ExportError naming them when several could be meant."""
    try:
        return find_armature(context, required=True)
    except NoTarget as e:
        if not armatures(context):
            return None
        raise ExportError(f"animation: {e}") from None


def qc_rate(path: str) -> float | None:
    """The fps a QC beside `path` gives the sequence made of it (docs/source.md §7), else None."""
    return qc.sequence_rates(os.path.dirname(os.path.abspath(path))).get(os.path.realpath(path), (None,))[0]


def import_motion(context, f: smd.SmdFile, name: str, armature=None, rate: float | None = None,
                  source: bytes | None = None) -> list[str]:
    """The animation as an action; SMD time t at `rate` frames per second (a QC's fps) lands at t / rate
    seconds, else at scene frame t."""
    _, warnings = convert.to_scene(f, name, with_animation=False)  # refuses bad ids and cycles naming the line
    arm_ob = armature if armature is not None else target_armature(context)
    created = []
    if arm_ob is None:  # nothing to put it on: a skeleton of frame 0
        skel = convert.skeleton_of(f, warnings)
        clean(skel)  # the names were warned about by to_scene
        built = bscene.build_scene(context, cm.Scene(name=name, skeleton=skel), name)
        arm_ob = built.armature
        created = [arm_ob, arm_ob.data]
    own_rig = bool(created)  # made from the file: every track matches
    fps = bact.fps_of(context.scene)
    anim = convert.animation_of(f, name, warnings, rate or fps)
    clean(anim)
    to_frame = fps / (rate or fps)
    try:
        act, more = bact.build_action(arm_ob, anim, fps, name)
        created.append(act)
        if not own_rig and unmatched_motion(arm_ob, [act]):  # the rule of every motion import
            raise ExportError(f"{name}: none of its {len(anim.tracks)} tracks matches a bone of {arm_ob.name}: "
                              "nothing imported (select the armature this motion was made for)")
        act.frame_start = float(min(fr.time for fr in f.skeleton)) * to_frame if f.skeleton else 0.0
        act.frame_end = float(max(fr.time for fr in f.skeleton)) * to_frame if f.skeleton else 0.0
        free_frame_range(act)
        if source is not None:
            act[SOURCE_PROP] = source
        bact.assign(arm_ob, act)
    except BaseException:
        bscene.remove_created(created)
        raise
    return warnings + more


def _key_frames(act) -> list[float]:
    """The first and last key frame of each F-curve of the action (every layer, strip and slot)."""
    out = []
    for layer in act.layers:
        for strip in layer.strips:
            for bag in strip.channelbags:
                out += [k.co[0] for fc in bag.fcurves if len(fc.keyframe_points)
                        for k in (fc.keyframe_points[0], fc.keyframe_points[-1])]
    return out


def free_frame_range(act) -> None:
    """No manual frame range on an imported action whose keys span it (the import makes one): a key the user
    adds after the last frame is then exported. A range the keys do not span (a clip held past its last key)
    stays."""
    frames = _key_frames(act)
    if frames and abs(min(frames) - act.frame_start) <= 1e-3 and abs(max(frames) - act.frame_end) <= 1e-3:
        act.use_frame_range = False


def _mesh_target(context, stem: str):
    active = context.view_layer.objects.active
    if active is not None and active.type == "MESH":
        return active
    meshes = [o for o in context.view_layer.objects if o.type == "MESH"]
    for test in (lambda o: o.get(STEM_PROP) == stem,
                 lambda o: _base_stem(str(o.get(STEM_PROP, ""))) == _base_stem(stem)):
        found = [o for o in meshes if test(o)]
        if len(found) == 1:
            return found[0]
    if len(meshes) == 1:
        return meshes[0]
    raise ExportError(f"{stem}: make the mesh the VTA belongs to active ({len(meshes)} meshes in the scene)")


def import_flex(context, f: smd.SmdFile, name: str, source: bytes | None = None) -> list[str]:
    smd.validate(f)
    ob = _mesh_target(context, name)
    me = ob.data
    n = len(me.vertices)
    base = np.empty(n * 3, np.float32)
    me.vertices.foreach_get("co", base)
    base = base.reshape(n, 3).astype(np.float64)
    corner_vertex = None
    if len(me.loops) == 3 * len(me.polygons):
        corner_vertex = np.empty(len(me.loops), np.int32)
        me.loops.foreach_get("vertex_index", corner_vertex)
    shapes = convert.flex_shapes(f, base, corner_vertex)
    created, replaced = [], []
    try:
        if me.shape_keys is None or not len(me.shape_keys.key_blocks):
            created.append(ob.shape_key_add(name="Basis", from_mix=False))
        basis = me.shape_keys.key_blocks[0]
        for s in shapes:
            kb = me.shape_keys.key_blocks.get(s.name)
            if kb is not None and kb != basis:  # the mesh has this shape (its DMX, an earlier VTA): updated
                old = np.empty(len(kb.points) * 3, np.float32)
                kb.points.foreach_get("co", old)
                replaced.append((kb, old))
            else:
                kb = ob.shape_key_add(name=s.name, from_mix=False)
                created.append(kb)
                kb.value = 0.0  # Blender 5 gives a new key 1.0: the mesh would show the basis plus every shape
            kb.points.foreach_set("co", s.positions.astype(np.float32).reshape(-1))
        me.update()
    except BaseException:
        for kb, old in replaced:
            kb.points.foreach_set("co", old)
        for kb in reversed(created):
            ob.shape_key_remove(kb)
        raise
    if source is not None:
        me[VTA_SOURCE_PROP] = source
    return list(f.warnings)


def blender_import(context, path: str, options) -> list[str]:
    return import_file(context, path, options)


def load_motion(context, path: str, armature, options) -> list[str]:
    """An animation SMD onto `armature`, or a VTA's shapes onto the model's mesh."""
    f, source = _read(path)
    if f.kind == "flex":
        return import_flex(context, f, stem_of(path), source)
    if f.kind != "motion":
        raise FormatError(f"{os.path.basename(path)} is a reference SMD, not an animation", None, "triangles")
    return import_motion(context, f, stem_of(path), armature, qc_rate(path), source)


# -- export ----------------------------------------------------------------------------------------------

def _corner_ints(me, name: str) -> np.ndarray | None:
    attr = me.attributes.get(name)
    if attr is None or attr.domain != "CORNER" or attr.data_type != "INT":
        return None
    out = np.empty(len(me.loops), np.int32)
    attr.data.foreach_get("value", out)
    return out


def _file_normals(ob, cmesh: cm.Mesh) -> np.ndarray | None:
    """The `custom_normal` values as imported (a file's normals need not be unit length; Blender's corner
    normals are), while they still point where the mesh's normals do and the object is not rotated or scaled."""
    me = ob.data
    attr = me.attributes.get("custom_normal")
    if attr is None or attr.domain != "CORNER" or attr.data_type != "FLOAT_VECTOR" or cmesh.normals is None:
        return None
    if not np.allclose(np.array(ob.matrix_world)[:3, :3], np.eye(3), atol=1e-7):
        return None
    raw = np.empty(len(me.loops) * 3, np.float32)
    attr.data.foreach_get("vector", raw)
    raw = raw.reshape(-1, 3)
    corners = cmesh.triangles.reshape(-1)
    if len(raw) != len(corners):
        return None
    # float32 is ample for a 1e-4 test, and halves the traffic of a million-corner mesh
    split = np.asarray(cmesh.normals, np.float32)[corners]
    length = np.sqrt(np.einsum("ij,ij->i", raw, raw))[:, None]
    split *= np.where(length > 0, length, np.float32(1))  # unit - split, scaled by the length
    np.subtract(raw, split, out=split)
    np.abs(split, out=split)
    split /= np.where(length > 0, length, np.float32(1))
    if split.max(initial=0) > 1e-4:
        return None
    return raw


def _pieces(made: smd.SmdFile, source, dropped=None, at: int = 0, count: int | None = None
            ) -> bytes | Iterator[bytes]:
    """What a file whose records are `made` holds: `source` (an imported file's bytes, kept.py) when it says
    the same (its triangles `dropped` by the import aside), else the records formatted after the source's
    opening comment lines, with its values where they hold (its mesh's corners from `made`'s corner `at`)."""
    skip = np.asarray(dropped, np.int64) if dropped is not None else None
    source = bytes(source) if isinstance(source, (bytes, bytearray)) else None
    same = kept.source_if_same(source, made, skip)
    if same is not None:
        return same
    kept.source_values(made, source, skip, at, count)  # untouched rows and corners as the file wrote them
    head = kept.leading_comments(source)  # the file's opening comments, kept through an edit
    return itertools.chain([head], smd.write_pieces(made)) if head else smd.write_pieces(made)


def _put_back_dropped(ref: smd.SmdFile, scene: cm.Scene) -> np.ndarray | None:
    """The imported file's triangles Blender could not hold (a repeated vertex) put back into `ref` in their
    places (`kept.with_dropped`); the new corner of each gathered corner when they were, for the VTA."""
    me, at, count = _source_mesh_of(scene)
    dropped = me.get(DROPPED_PROP) if me is not None else None
    if dropped is None or not len(dropped):
        return None
    source = me.get(SOURCE_PROP)
    source = bytes(source) if isinstance(source, (bytes, bytearray)) else None
    return kept.with_dropped(ref, source, np.asarray(dropped, np.int64), at, count)


def _reference_pieces(ref: smd.SmdFile, scene: cm.Scene, put_back: bool = False) -> bytes | Iterator[bytes]:
    """The reference's bytes: its source's while it says the same (kept.py), the triangles Blender dropped
    aside, or (`put_back`: `_put_back_dropped` put them into `ref`) with them. A source whose dropped triangles
    could not be put back is used only when no VTA is written with it: a VTA's vertex ids are the written
    reference's corners. Beside meshes made in Blender, the one imported mesh's source still gives the opening
    comments and the values of its corners."""
    me, at, count = _source_mesh_of(scene)
    if me is None:
        return smd.write_pieces(ref)
    dropped = me.get(DROPPED_PROP)
    if put_back:
        count += len(dropped)
        dropped = None
    elif dropped is not None and len(dropped) and any(m.shape_keys for m in scene.meshes):
        return smd.write_pieces(ref)
    return _pieces(ref, me.get(SOURCE_PROP), dropped, at, count)


def _mesh_data_of(scene: cm.Scene):
    """The mesh datablock of the one mesh an export writes (its kept file bytes belong to that file alone)."""
    ob = bpy.data.objects.get(scene.meshes[0].name) if len(scene.meshes) == 1 else None
    return ob.data if ob is not None and ob.type == "MESH" else None


def _source_mesh_of(scene: cm.Scene):
    """(mesh datablock, its first corner in the written triangles, its triangle count) of the one gathered mesh
    that holds an imported file's bytes; (None, 0, 0) when none or several do."""
    found, at = [], 0
    for m in scene.meshes:
        ob = bpy.data.objects.get(m.name)
        if ob is not None and ob.type == "MESH" and ob.data.get(SOURCE_PROP) is not None:
            found.append((ob.data, at, len(m.triangles)))
        at += 3 * len(m.triangles)
    return found[0] if len(found) == 1 else (None, 0, 0)


def export_objects(context) -> tuple[list, object]:
    """(meshes, armature) an export takes (`bscene.exportable_objects`), one model among several without bones:
    meshes that different reference imports made (`MODEL_PROP`) are different models, as two armatures are, so
    with several of them those of the models the selection touches are taken (with the meshes made in Blender,
    which belong to none); NoTarget names them when the selection touches none. A file imported twice is so
    written as it was, not with its copy."""
    meshes, arm = bscene.exportable_objects(context)
    return one_model(meshes, arm, MODEL_PROP)


def gather_reference(context, flavour: str = "AUTO") -> tuple[cm.Scene, list[str], str, bool]:
    """(scene, warnings, newline, goldsrc) of what a reference export writes in `flavour` (an option of the
    smd spec: AUTO, as the mesh was read, GoldSrc with CRLF else Source with LF; SOURCE; GOLDSRC). ExportError
    when there is no mesh to write."""
    objects = export_objects(context)
    scene, warnings = bscene.gather_scene(context, max_influences=smd.MAX_LINKS, tangents=False, objects=objects)
    if scene.skeleton is not None and objects[1] is not None:
        _moved_heads(scene.skeleton, objects[1])
    if not scene.meshes:
        raise ExportError("nothing to export: no visible mesh")
    for mat in scene.materials:  # an imported material Blender renamed X.001 (a second import): the file's name
        held = bpy.data.materials.get(mat.name)
        was = held.get(MATERIAL_PROP) if held is not None else None
        if isinstance(was, str) and re.sub(r"\.\d{3}$", "", mat.name) == was:
            mat.name = was
    newline, goldsrc = "\n", False
    for cmesh in scene.meshes:
        ob = bpy.data.objects.get(cmesh.name)
        if ob is None:
            continue
        newline = "\r\n" if ob.get(NEWLINE_PROP) == "CRLF" else newline
        goldsrc = goldsrc or ob.get(FLAVOUR_PROP) == "GoldSrc"
        me = ob.data
        if len(me.loops) != 3 * len(cmesh.triangles):
            continue
        saved = {}
        parents, links = _corner_ints(me, "smd_parent"), _corner_ints(me, "smd_links")
        if parents is not None and links is not None:
            saved.update(corner_parents=parents, corner_link_counts=links)
        normals = _file_normals(ob, cmesh)
        if normals is not None:
            saved["corner_normals"] = normals
        root = ob.get(ROOT_PROP)
        if isinstance(root, str):
            try:
                saved["root"] = json.loads(root)
            except ValueError:
                pass
        if saved:
            cmesh.extras["smd"] = saved
    if flavour != "AUTO":
        goldsrc = flavour == "GOLDSRC"
        newline = "\r\n" if goldsrc else "\n"
        for cmesh in scene.meshes:  # a GoldSrc mesh written as Source: links on every line
            saved = cmesh.extras.get("smd", {})
            if not goldsrc and (np.asarray(saved.get("corner_link_counts", [0])) < 0).any():
                saved.pop("corner_parents", None)
                saved.pop("corner_link_counts", None)
    return scene, warnings, newline, goldsrc


def export_reference(context, path: str, vta_path: str | None = None, flavour: str = "AUTO",
                     written: list[str] | None = None) -> list[str]:
    """The reference SMD at `path` in `flavour` (`gather_reference`) and, with `vta_path`, the shape keys as a
    VTA when there are any (its path then goes into `written`)."""
    scene, warnings, newline, goldsrc = gather_reference(context, flavour)
    ref = convert.reference_of(scene, warnings, newline, goldsrc)
    where = _put_back_dropped(ref, scene)
    write_atomic(path, _reference_pieces(ref, scene, where is not None))
    shapes = _shape_names(scene)
    if vta_path is not None and export_vta(context, vta_path, scene, ref, where):
        if written is not None:
            written.append(vta_path)
        new = [n for n in shapes if n not in _imported_shape_names(scene)]
        if new:  # a reference SMD holds no shape: the user is told which file has the keys made in Blender
            warnings.append(f"shape key(s) {', '.join(new[:10])} written to {os.path.basename(vta_path)} beside "
                            f"{os.path.basename(path)}: an SMD reference holds no shape keys (a QC names the VTA "
                            "as the body's flex file)")
    elif shapes:
        warnings.append(f"shape key(s) {', '.join(shapes[:10])} not written: an SMD reference holds no shape keys "
                        "and Shape Keys (VTA) is off")
    return warnings


def _shape_names(scene: cm.Scene) -> list[str]:
    """The shape keys of the gathered meshes, each name once."""
    return list(dict.fromkeys(s.name for m in scene.meshes for s in m.shape_keys))


def _imported_shape_names(scene: cm.Scene) -> set[str]:
    """The shapes of the VTAs imported onto the gathered meshes (their kept bytes)."""
    names: set[str] = set()
    for m in scene.meshes:
        ob = bpy.data.objects.get(m.name)
        source = ob.data.get(VTA_SOURCE_PROP) if ob is not None and ob.type == "MESH" else None
        if not source:
            continue
        try:
            names.update(fr.comment for fr in smd.read(bytes(source)).vertex_animation or [] if fr.comment)
        except (FormatError, ValueError):  # bytes that no longer read: every shape is told about
            continue
    return names


def export_flex_only(context, path: str, flavour: str = "AUTO") -> list[str]:
    """The shape keys alone as the VTA at `path` (File › Export with a .vta file name)."""
    scene, warnings, newline, goldsrc = gather_reference(context, flavour)
    ref = convert.reference_of(scene, warnings, newline, goldsrc)
    if not export_vta(context, path, scene, ref, _put_back_dropped(ref, scene)):
        raise ExportError("no shape keys to write as a VTA")
    return warnings


def export_animations(context, folder: str, arm_ob, names: NameAllocator | None = None,
                      actions=None, sequences: list | None = None, at: dict | None = None
                      ) -> tuple[list[str], list[str]]:
    """One animation SMD per action of `arm_ob` (every bone at every frame of the action's range), sampled at
    `convert.sequence_rate`; `sequences` (when given) gets (action name, path, rate) of each, for the QC. `at`:
    {action name: (path, rate)} of actions a QC project names (its file, its sequence's rate tried first)."""
    names = names or NameAllocator()
    skel = scene_skeleton(arm_ob)
    fps = bact.fps_of(context.scene)
    written, warnings = [], []
    for act in actions if actions is not None else bact.armature_actions(arm_ob):
        anim, more = bact.read_action(context, arm_ob, act)
        path, first = (at or {}).get(act.name, (None, fps))
        rate = convert.sequence_rate(anim, first)
        off = convert.off_frame_warning(anim, rate)
        warnings += more + ([off] if off else [])
        count = int(round(anim.length * rate)) + 1
        locals_ = convert.animation_locals(skel, anim, np.arange(count) / rate)
        _scale_warning(act.name, skel, locals_, warnings)
        f = convert.animation_smd(skel, locals_, np.arange(count), warnings)
        kept.as_source_nodes(f, act.get(SOURCE_PROP), _unmatched_rows(skel, anim, np.arange(count) / rate))
        path = path or os.path.join(folder, names.take(act.name, ".smd") + ".smd")
        write_atomic(path, _pieces(f, act.get(SOURCE_PROP)))
        written.append(path)
        if sequences is not None:
            sequences.append((act.name, path, rate))
    return written, warnings


def _unmatched_rows(skel: cm.Skeleton, anim: cm.Animation, seconds: np.ndarray) -> dict[str, tuple]:
    """name → (positions, rotations) per frame of the action's tracks for bones the armature lacks (a file's
    tracks that matched no bone, kept on the action and written back): the values the file gave, sampled."""
    names = {b.name for b in skel.bones}
    tracks = [t for t in anim.tracks if t.bone not in names]
    if not tracks:
        return {}
    alone = cm.Skeleton(name="unmatched", bones=[cm.Bone(name=t.bone, parent=-1, bind=np.eye(4),
                                                           rest_translation=np.zeros(3),
                                                           rest_rotation=np.array([1.0, 0, 0, 0]),
                                                           rest_scale=np.ones(3)) for t in tracks])
    locals_ = convert.animation_locals(alone, cm.Animation(name=anim.name, length=anim.length, tracks=tracks),
                                       seconds)
    return {t.bone: (locals_[:, i, :3, 3], convert.matrix3_to_euler(locals_[:, i, :3, :3]))
            for i, t in enumerate(tracks)}


SCALE_TOLERANCE = 1e-4  # a bone's scale this close to 1 is float noise of a rotation, not a scale


def _scale_warning(action: str, skel: cm.Skeleton, locals_: np.ndarray, warnings: list[str]) -> None:
    """A warning naming the bones the action scales (a bone row of an SMD holds a position and a rotation only:
    the sampled frames are written without the scale)."""
    scales = np.linalg.norm(locals_[:, :, :3, :3], axis=2)  # (F, N, 3) length of each column
    bad = np.flatnonzero((np.abs(scales - 1.0) > SCALE_TOLERANCE).any(axis=(0, 2)))
    if len(bad):
        names = ", ".join(skel.bones[i].name for i in bad[:5])
        warnings.append(f"animation {action!r}: {len(bad)} bone(s) scaled ({names}): an SMD bone row holds no "
                        "scale, written without it")


def scene_skeleton(arm_ob) -> cm.Skeleton:
    """The armature's skeleton in the bone order a reference export gives it (the first skinned mesh's vertex
    groups first, as `gather_scene` orders it), so that node ids agree between reference and animations."""
    meshes, _ = bscene.exportable_objects(bpy.context)
    skinned = [ob for ob in meshes if any(m.type == "ARMATURE" and m.object == arm_ob for m in ob.modifiers)
               or ob.parent == arm_ob]
    order = [g.name for g in skinned[0].vertex_groups] if skinned else []
    return _moved_heads(barm.read_skeleton(arm_ob, order), arm_ob)


HEAD_TOLERANCE = 1e-5  # times max(1, |head|): float32 keeps a head within 6e-8 of that


def _moved_heads(skel: cm.Skeleton, arm_ob) -> cm.Skeleton:
    """`skel` with each bone's head where Blender has it when it is off the file's bind that `read_skeleton`
    kept (within its 1e-4) by more than float32 explains: a rest moved by 1e-4 in Edit Mode (a bone of 0.5 mm,
    HammerAddons' futbol_physics) is written, not the file's value. The rotation stays the file's."""
    world = np.array(arm_ob.matrix_world, np.float64)
    changed = False
    for b in skel.bones:
        bone = arm_ob.data.bones.get(b.name)
        if bone is None:
            continue
        head = (world @ np.array(bone.matrix_local, np.float64))[:3, 3]
        if np.abs(b.bind[:3, 3] - head).max() > HEAD_TOLERANCE * max(1.0, float(np.abs(head).max())):
            b.bind = b.bind.copy()
            b.bind[:3, 3] = head
            changed = True
    if changed:
        skel.set_rest_from_binds()
    return skel


def export_vta(context, path: str, scene: cm.Scene, ref: smd.SmdFile, where: np.ndarray | None = None) -> bool:
    """Shape keys of the reference's meshes as a VTA in the reference's corner order (`where`: the corner of
    `ref` of each gathered corner, when the file's dropped triangles were put back among them); False when
    none."""
    shapes: dict[str, list[np.ndarray]] = {}
    offset = 0
    corners_total = len(ref.triangles.parents) if ref.triangles is not None else 0
    per_mesh = []
    for m in scene.meshes:
        corners = m.triangles.reshape(-1)
        per_mesh.append((m, corners, offset))
        offset += len(corners)
    keys = []
    for m, _, _ in per_mesh:
        for s in m.shape_keys:
            if s.name not in keys:
                keys.append(s.name)
    if not keys:
        return False
    for name in keys:
        pos = ref.triangles.positions.copy()
        for m, corners, at in per_mesh:
            s = next((s for s in m.shape_keys if s.name == name), None)
            if s is not None:
                rows = np.arange(at, at + len(corners)) if where is None else where[at:at + len(corners)]
                pos[rows] = np.asarray(s.positions, np.float64)[corners]
        shapes[name] = pos
    del corners_total
    me = _mesh_data_of(scene)
    write_atomic(path, _pieces(convert.vta_of(ref, list(shapes.items()), ref.newline),
                               me.get(VTA_SOURCE_PROP) if me is not None else None))
    return True


def export_target(context, outdir: str, name: str, options) -> tuple[list[str], list[str]]:
    """`convert --to smd` and File › Export alike, with the smd spec's options (io_smd/__init__.py): <name>.smd,
    the reference in `options.flavour`; <name>.vta when `options.flex` and there are shape keys; one animation
    SMD per action of the armature when `options.animations`; <name>.qc naming them all with each sequence's
    rate when `options.write_qc`."""
    names = NameAllocator()
    stem = safe_file_name(name)
    meshes, arm_ob = bscene.exportable_objects(context)
    if not meshes and arm_ob is not None and options.animations and bact.armature_actions(arm_ob):
        return _export_motions_alone(context, outdir, stem, arm_ob, names, options)
    ref_path = os.path.join(outdir, names.take(stem, ".smd") + ".smd")
    vta_path = os.path.join(outdir, names.take(stem, ".vta") + ".vta") if options.flex else None
    written = [ref_path]
    warnings = export_reference(context, ref_path, vta_path, options.flavour, written)
    _, arm_ob = bscene.exportable_objects(context)
    sequences: list[tuple[str, str, float]] = []
    if arm_ob is not None and options.animations:
        more_written, more = export_animations(context, outdir, arm_ob, names, sequences=sequences)
        written += more_written
        warnings += more
    if options.write_qc:
        written.append(write_qc(outdir, names.take(stem, ".qc") + ".qc", ref_path,
                                vta_path if vta_path in written else None, sequences, bact.fps_of(context.scene)))
    return written, warnings


def _export_motions_alone(context, outdir: str, stem: str, arm_ob, names: NameAllocator, options
                          ) -> tuple[list[str], list[str]]:
    """An armature with actions and no mesh (Blender Source Tools exports one): its animation SMDs, and a QC
    naming them as sequences (no body)."""
    sequences: list[tuple[str, str, float]] = []
    written, warnings = export_animations(context, outdir, arm_ob, names, sequences=sequences)
    if options.write_qc:
        written.append(write_qc(outdir, names.take(stem, ".qc") + ".qc", None, None, sequences,
                                bact.fps_of(context.scene)))
    return written, warnings


def write_qc(folder: str, file_name: str, ref_path: str | None, vta_path: str | None,
             sequences: list[tuple[str, str, float]], scene_fps: float) -> str:
    """The QC beside the written files: the reference (with its VTA) as the body (none without `ref_path`),
    every sequence with its rate, and the export's settings as comments."""
    stem = os.path.splitext(file_name)[0]
    flex = os.path.basename(vta_path) if vta_path else None
    notes = [f"written by SkinBridge beside the files it names: Z up, 1 unit = 1 Blender unit, scene rate "
             f"{scene_fps:g} fps; a sequence whose keys fall between the scene's frames is sampled at the rate "
             "given"]
    bodies = [(stem, os.path.basename(ref_path), flex)] if ref_path else []  # None: motions alone
    text = qc.write_text(stem + ".mdl", bodies,
                         [(name, os.path.basename(path), rate, False) for name, path, rate in sequences], notes)
    path = os.path.join(folder, file_name)
    write_atomic(path, text.encode("utf-8"))
    return path
