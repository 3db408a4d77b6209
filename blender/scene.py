"""Import and export orchestration: core Scene ⇄ bpy, atomic import, read-only export.

Import: the caller has already parsed and mapped the whole file; `build_scene` then creates datablocks and,
if anything fails, removes every datablock it created, so a failed import leaves `bpy.data` as it was.
Export: `gather_scene` reads the evaluated depsgraph with the armature switched to Rest Position, and puts
back everything it touched in `finally`.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import bpy
import numpy as np

from ..core import model as cm
from . import armature as barm
from . import material as bmat
from . import mesh as bmesh_
from .progress import Progress
from .props import MODEL_DATA_PROP, json_prop  # noqa: F401  (json_prop re-exported for the format packages)
from .selection import NoTarget, armature_of

# Failure injection for tests: set to a callable(stage: str) that may raise.
fail_hook = None

LOD_PROP = "skinbridge_lod"  # object custom property: the LOD level an imported object holds


def failure_point(name: str) -> None:
    if fail_hook is not None:
        fail_hook(name)


@dataclass
class ImportResult:
    objects: list = field(default_factory=list)
    armature: object = None
    warnings: list[str] = field(default_factory=list)


ID_COLLECTIONS = ("objects", "meshes", "armatures", "materials", "images", "collections", "node_groups", "actions")


def snapshot_ids(collections=ID_COLLECTIONS) -> dict[str, set[int]]:
    """The datablocks that exist now, per `bpy.data` collection: what `remove_new` keeps."""
    return {name: {x.as_pointer() for x in getattr(bpy.data, name)} for name in collections}


def remove_new(before: dict[str, set[int]]) -> None:
    """Remove every datablock created since `before` (objects first): the rollback of a failed import."""
    for name in before:
        new = [x for x in getattr(bpy.data, name) if x.as_pointer() not in before[name]]
        if new:
            bpy.data.batch_remove(new)


def remove_created(created: list) -> None:
    """Remove every datablock of `created` that still exists (objects first)."""
    ids = [x for x in created if isinstance(x, bpy.types.ID)]
    alive = []
    for x in ids:
        try:
            x.name  # raises ReferenceError if already gone
            alive.append(x)
        except ReferenceError:
            pass
    objects = [x for x in alive if isinstance(x, bpy.types.Object)]
    if objects:
        bpy.data.batch_remove(objects)
    rest = [x for x in alive if not isinstance(x, bpy.types.Object)]
    if rest:
        bpy.data.batch_remove(rest)


def build_scene(context, scene: cm.Scene, name: str, base_dir: str | None = None) -> ImportResult:
    """Create Blender data for a mapped scene; atomic."""
    result = ImportResult()
    created: list = []
    collection = context.view_layer.active_layer_collection.collection
    if context.mode != "OBJECT" and context.view_layer.objects.active is not None:
        bpy.ops.object.mode_set(mode="OBJECT")
    progress = Progress(f"building {name}", len(scene.meshes) + 1)
    try:
        arm_ob = None
        names: list[str] = []
        if scene.skeleton is not None and len(scene.skeleton.bones):
            arm_ob = barm.build_armature(context, scene.skeleton, name, collection, created)
            names = [b.name for b in arm_ob.data.bones]
            order = barm_names(arm_ob)
            names = order or names
            result.armature = arm_ob
            result.objects.append(arm_ob)
        failure_point("armature")
        progress.update(1)
        materials = []
        for mat in scene.materials:
            materials.append(bmat.build_material(mat, created, base_dir, result.warnings))
        failure_point("materials")
        lod_collection = None
        hidden = []
        for cmesh in scene.meshes:
            me = bmesh_.build_mesh(cmesh, cmesh.name, created, result.warnings,
                                   len(names) if arm_ob is not None else 0)
            for slot in cmesh.materials:
                me.materials.append(materials[slot])
            ob = bpy.data.objects.new(cmesh.name, me)
            created.append(ob)
            if cmesh.lod_level is not None:  # every LOD level in one collection; levels above 0 hidden
                if lod_collection is None:
                    lod_collection = bpy.data.collections.new(f"{name}_LODs")
                    created.append(lod_collection)
                    collection.children.link(lod_collection)
                lod_collection.objects.link(ob)
                ob[LOD_PROP] = int(cmesh.lod_level)
                ob[LOD_PROP + "_distance"] = float(cmesh.lod_distance)
            else:
                collection.objects.link(ob)
            if arm_ob is not None and cmesh.weights is not None:
                ob.parent = arm_ob
                bmesh_.add_vertex_groups(ob, names)
                mod = ob.modifiers.new("Armature", "ARMATURE")
                mod.object = arm_ob
            elif arm_ob is not None:
                ob.parent = arm_ob
            if cmesh.shape_keys:
                _add_shape_keys(ob, cmesh)
            if cmesh.lod_level is not None and cmesh.lod_level > 0:
                hidden.append(ob)
            result.objects.append(ob)
            progress.update(len(result.objects) + (arm_ob is None))
        if hidden:
            context.view_layer.update()  # newly linked objects join the view layer on update
            for ob in hidden:
                ob.hide_set(True)
        failure_point("mesh")
        if arm_ob is not None:
            arm_ob["skinbridge_source"] = name
        failure_point("done")
    except BaseException:
        remove_created(created)
        raise
    finally:
        progress.end()
    return result


def barm_names(arm_ob) -> list[str]:
    names = json_prop(arm_ob.data, barm.PROP).get("names", [])
    return list(names) if isinstance(names, list) else []


def _add_shape_keys(ob, cmesh: cm.Mesh) -> None:
    """A Basis key and one relative key per core shape key, at its default weight (Blender 5 gives new keys
    value 1.0)."""
    basis = ob.shape_key_add(name="Basis", from_mix=False)
    basis.interpolation = "KEY_LINEAR"
    for sk in cmesh.shape_keys:
        kb = ob.shape_key_add(name=sk.name, from_mix=False)
        kb.points.foreach_set("co", np.ascontiguousarray(sk.positions, dtype=np.float32).reshape(-1))
        kb.value = float(sk.default_weight)


# ---------------------------------------------------------------------------------------------
# export

def _hidden_collections(view_layer) -> set[str]:
    """Names of the collections excluded, hidden in the view layer or disabled, with everything under them:
    one walk of the layer collections (per export, not per object: a scene of thousands of objects and
    collections stays linear)."""
    hidden: set[str] = set()
    stack = [(view_layer.layer_collection, False)]
    while stack:
        lc, under_hidden = stack.pop()
        if under_hidden or lc.exclude or lc.hide_viewport or lc.collection.hide_viewport:
            hidden.add(lc.collection.name)
            under_hidden = True
        stack.extend((c, under_hidden) for c in lc.children)
    return hidden


def _collections_visible(ob, hidden: set[str]) -> bool:
    """False if any collection holding the object is in `hidden` (`_hidden_collections`)."""
    return not any(c.name in hidden for c in ob.users_collection)


def _armature_of(ob):
    for mod in ob.modifiers:
        if mod.type == "ARMATURE" and mod.object is not None and mod.show_viewport:
            return mod.object
    return None


# What the running export operator was asked to take (ops_common.export_reporting sets it): a collection name
# (Collection Exporters) and/or selected objects only. None outside an operator.
_export_scope: tuple[str | None, bool] | None = None


@contextlib.contextmanager
def export_scope(collection: str | None = None, selected_only: bool = False):
    """Every `exportable_objects` inside the block takes only `collection`'s objects (when given) and only
    selected ones (when `selected_only`)."""
    global _export_scope
    saved = _export_scope
    _export_scope = (collection or None, bool(selected_only))
    try:
        yield
    finally:
        _export_scope = saved


def _names(obs) -> str:
    return ", ".join(sorted(o.name for o in obs))


def _physics_shape(ob) -> bool:
    """A rigid body's collision shape (MMD physics): model data of its own, never a mesh to export."""
    return ob.rigid_body is not None or bool(ob.get(MODEL_DATA_PROP))


def exportable_objects(context, selected_only: bool = False) -> tuple[list, object]:
    """(meshes, armature) an export takes. In a Collection Exporter's scope: the meshes of that collection
    (and its children) and the armature deforming them. Otherwise the visible meshes, never objects in
    excluded or hidden collections; with several rigged models, those of the selected one (its armature or
    any of its objects selected) only, and NoTarget naming the armatures when none or several are selected."""
    collection, scoped_selection = _export_scope or (None, False)
    selected_only = selected_only or scoped_selection
    view_layer = context.view_layer
    view_layer.update()  # objects linked since the last update are not in view_layer.objects until it syncs
    if collection is not None:
        coll = bpy.data.collections.get(collection)
        if coll is None:
            raise NoTarget(f"the collection {collection!r} does not exist")
        pool = list(coll.all_objects)
        meshes = [ob for ob in pool if ob.type == "MESH" and not _physics_shape(ob)
                  and (not selected_only or ob.select_get())]
        arms = []
        for ob in meshes + [ob for ob in pool if ob.type == "ARMATURE"]:
            arm = armature_of(ob)
            if arm is not None and arm not in arms:
                arms.append(arm)
        if len(arms) > 1:
            raise NoTarget(f"the collection {collection} holds {len(arms)} rigged models ({_names(arms)}): "
                           "put one model in a collection")
        return meshes, (arms[0] if arms else None)
    meshes, armatures = [], []
    hidden = _hidden_collections(view_layer)
    for ob in view_layer.objects:
        if ob.type != "MESH" or _physics_shape(ob) or not _collections_visible(ob, hidden):
            continue
        if selected_only and not ob.select_get():
            continue
        arm = _armature_of(ob)
        if arm is not None or ob.visible_get():
            meshes.append(ob)
            if arm is not None and arm not in armatures:
                armatures.append(arm)
    if len(armatures) > 1:  # several rigged models: the user's choice decides, never the view layer's order
        chosen = []
        for ob in view_layer.objects:
            if ob.select_get():
                arm = armature_of(ob)
                if arm is not None and arm in armatures and arm not in chosen:
                    chosen.append(arm)
        if len(chosen) != 1:
            among = chosen or armatures
            raise NoTarget(f"{len(among)} rigged models could be exported ({_names(among)}): select one "
                           "(its armature or a mesh of it)")
        armatures = chosen
        meshes = [ob for ob in meshes if armature_of(ob) == chosen[0]]
    if not armatures:
        armatures = [ob for ob in view_layer.objects if ob.type == "ARMATURE" and _collections_visible(ob, hidden)
                     and (not selected_only or ob.select_get())][:1]
    return meshes, (armatures[0] if armatures else None)


def gather_scene(context, selected_only: bool = False, max_influences: int = 4,
                 deform_only: bool = False, tangents: bool = True, objects: tuple | None = None,
                 isolated: bool = False, bones_alone: bool = False) -> tuple[cm.Scene, list[str]]:
    """Read what would be exported into a core Scene (world space, Blender axes); `tangents=False` for formats
    that do not store them (they cost a MikkTSpace pass). Read-only for the user:
    the armature is switched to Rest Position and meshes with shape keys to their basis key (shape key
    lock) while reading, and both are put back in `finally`. `objects`: the (meshes, armature) of
    `exportable_objects`, when the caller has them already. `isolated`: meshes keep the vertices no face or edge
    uses, in their place (`mesh.read_mesh`). `bones_alone`: with no mesh to export, the armature's skeleton is
    still read (a format that holds a model of bones only: PMX)."""
    warnings: list[str] = []
    meshes, arm_ob = objects if objects is not None else exportable_objects(context, selected_only)
    lod_levels = [ob for ob in meshes if int(ob.get(LOD_PROP, 0)) > 0]
    if lod_levels:
        meshes = [ob for ob in meshes if ob not in lod_levels]
        warnings.append("LOD level objects not exported (only LOD 0 is written): "
                        + ", ".join(ob.name for ob in lod_levels))
    scene = cm.Scene(name=context.scene.name)
    if not meshes:
        if bones_alone and arm_ob is not None:
            scene.skeleton = barm.read_skeleton(arm_ob)
            return scene, warnings
        return scene, warnings + ["nothing to export: no visible mesh"]
    skinned = [ob for ob in meshes if arm_ob is not None and _armature_of(ob) == arm_ob]
    saved_pose_position = arm_ob.data.pose_position if arm_ob is not None else None
    keyed = [ob for ob in meshes if ob.data.shape_keys is not None and len(ob.data.shape_keys.key_blocks) > 1]
    saved_keys = [(ob, ob.show_only_shape_key, ob.active_shape_key_index) for ob in keyed]
    progress = Progress(f"reading {context.scene.name}", len(meshes))
    try:
        changed = False
        if arm_ob is not None and arm_ob.data.pose_position != "REST":
            arm_ob.data.pose_position = "REST"
            changed = True
        for ob in keyed:  # evaluate the basis shape alone
            if not ob.show_only_shape_key or ob.active_shape_key_index != 0:
                ob.show_only_shape_key = True
                ob.active_shape_key_index = 0
                changed = True
        if changed:
            context.view_layer.update()
        if arm_ob is not None:
            order = [g.name for g in skinned[0].vertex_groups] if skinned else []
            scene.skeleton = barm.read_skeleton(arm_ob, order)
        failure_point("skeleton")
        depsgraph = context.evaluated_depsgraph_get()
        bone_index = {}
        if scene.skeleton is not None:
            bone_index = {b.name: i for i, b in enumerate(scene.skeleton.bones) if b.deform}
        material_index: dict[str, int] = {}
        for done, ob in enumerate(meshes, 1):
            progress.update(done - 1)
            is_skinned = ob in skinned
            matrix = np.array(ob.matrix_world, dtype=np.float64)
            cmesh = bmesh_.read_mesh(ob, depsgraph, matrix, bone_index if is_skinned else {}, max_influences,
                                     warnings, tangents, isolated)
            if cmesh is None:
                continue
            if scene.skeleton is not None and not is_skinned:
                _rigid_weights(ob, cmesh, scene.skeleton, warnings)
            slots = []
            for slot in ob.material_slots:
                mat = slot.material
                key = mat.name if mat else ""
                if key not in material_index:
                    material_index[key] = len(scene.materials)
                    scene.materials.append(bmat.read_material(mat))
                slots.append(material_index[key])
            if not slots:
                if "" not in material_index:
                    material_index[""] = len(scene.materials)
                    scene.materials.append(bmat.read_material(None))
                slots = [material_index[""]]
            cmesh.materials = slots
            cmesh.material_indices = np.clip(cmesh.material_indices, 0, len(slots) - 1)
            if ob in keyed:
                cmesh.shape_keys = _read_shape_keys(ob, cmesh, matrix, warnings)
            scene.meshes.append(cmesh)
        if deform_only and scene.skeleton is not None:
            _keep_deforming_bones(scene, warnings)
        failure_point("meshes")
    finally:
        progress.end()
        restore = False
        for ob, only, active in saved_keys:
            if ob.show_only_shape_key != only or ob.active_shape_key_index != active:
                ob.show_only_shape_key = only
                ob.active_shape_key_index = active
                restore = True
        if arm_ob is not None and arm_ob.data.pose_position != saved_pose_position:
            arm_ob.data.pose_position = saved_pose_position
            restore = True
        if restore:
            context.view_layer.update()
    return scene, warnings


def _read_shape_keys(ob, cmesh: cm.Mesh, matrix: np.ndarray, warnings: list[str]) -> list[cm.ShapeKey]:
    """Shape keys as absolute positions of the exported (split) vertices: the evaluated basis plus each key's
    offset from its relative key, in the export space."""
    key_blocks = ob.data.shape_keys.key_blocks
    n = len(ob.data.vertices)
    source = cmesh.extras.get("source_vertex")
    if source is None or cmesh.extras.get("source_vertex_count") != n:
        warnings.append(f"{ob.name}: shape keys not exported (modifiers change the vertex count): "
                        + ", ".join(kb.name for kb in key_blocks[1:]))
        return []
    co = {}

    def coords(kb):
        if kb.name not in co:
            buf = np.empty(n * 3, np.float32)
            kb.points.foreach_get("co", buf)
            co[kb.name] = buf.reshape(n, 3).astype(np.float64)
        return co[kb.name]

    lin = np.asarray(matrix, np.float64)[:3, :3]
    out = []
    for kb in key_blocks[1:]:
        delta = coords(kb) - coords(kb.relative_key)
        positions = cmesh.positions.astype(np.float64) + delta[source] @ lin.T
        # float64, so that the deltas the writer takes back out are not rounded to the absolute positions
        out.append(cm.ShapeKey(kb.name, positions, default_weight=float(kb.value)))
    return out


def _rigid_weights(ob, cmesh: cm.Mesh, skel: cm.Skeleton, warnings: list[str]) -> None:
    """A mesh in a skinned export that the armature does not deform follows its parent bone, or the root."""
    target = None
    if ob.parent_type == "BONE" and ob.parent_bone:
        try:
            target = skel.index(ob.parent_bone)
        except KeyError:
            target = None
    if target is None:
        target = next(i for i, b in enumerate(skel.bones) if b.parent < 0)
        warnings.append(f"{ob.name}: not deformed by the armature; weighted fully to bone {skel.bones[target].name}")
    n = cmesh.vertex_count
    cmesh.joints = np.zeros((n, 4), np.int32)
    cmesh.joints[:, 0] = target
    cmesh.weights = np.zeros((n, 4), np.float32)
    cmesh.weights[:, 0] = 1.0


def _keep_deforming_bones(scene: cm.Scene, warnings: list[str]) -> None:
    """`--deform-only`: drop bones that deform nothing (no weighted vertex) and have no deforming descendant,
    renumbering the joints. Kept bones keep their parents (an ancestor of a kept bone is kept)."""
    skel = scene.skeleton
    n = len(skel.bones)
    keep = np.zeros(n, bool)
    for m in scene.meshes:
        if m.weights is not None:
            keep[np.unique(m.joints[m.weights > 0])] = True
    parents = skel.parents
    for i in np.flatnonzero(keep):
        p = parents[i]
        while p >= 0 and not keep[p]:
            keep[p] = True
            p = parents[p]
    if keep.all():
        return
    new_index = np.cumsum(keep) - 1
    dropped = [b.name for b, k in zip(skel.bones, keep) if not k]
    bones = []
    for i in np.flatnonzero(keep):
        b = skel.bones[i]
        b.parent = int(new_index[b.parent]) if b.parent >= 0 else -1
        bones.append(b)
    skel.bones = bones
    for m in scene.meshes:
        if m.weights is not None:
            m.joints = np.where(m.weights > 0, new_index[m.joints], 0).astype(np.int32)
    warnings.append(f"--deform-only: {len(dropped)} bones dropped: " + ", ".join(dropped))
