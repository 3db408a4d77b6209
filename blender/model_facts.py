"""What a model in the scene is, as the SkinBridge sidebar shows it: where it came from, its counts, and the
file data kept on it for write-back with how much of it the user has left as imported.

The model is the armature the user means (`selection.find_armature`) with the meshes it deforms, or the active
mesh on its own. Counts are Blender's: a file's vertex split at import (by normals or UVs) shows here.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import bpy
import numpy as np

from . import action as bact
from . import armature as barm
from .mesh import deform_items
from .selection import armature_of, find_armature

SOURCE_PATH_PROP = "skinbridge_file"  # on an imported object: the absolute path of the file it came from
SOURCE_NAME_PROP = "skinbridge_source"  # on an imported armature: the model's name (blender/scene.py sets it)
SOURCE_PROPS = (SOURCE_PATH_PROP, SOURCE_NAME_PROP)


@dataclass
class KeptData:
    """One custom property of file data on the model: where it sits and on how many data-blocks."""
    prop: str
    where: str  # "armature", "armature data", "bones", "meshes", "mesh data", "actions", "materials"
    count: int


@dataclass
class ModelFacts:
    name: str
    source_path: str = ""
    source_name: str = ""
    armature: str = ""
    meshes: list[str] = field(default_factory=list)
    vertices: int = 0
    faces: int = 0
    triangles: int = 0
    bones: int = 0
    deforming_bones: int = 0
    max_influences: int = 0
    mean_influences: float = 0.0
    morphs: int = 0
    actions: int = 0
    rigid_bodies: int = 0
    binds_kept: int = 0       # bones holding the file's exact bind matrix
    binds_unchanged: int = 0  # ... and still matching it (export writes the file's values)
    tracks_kept: int = 0      # file keys kept on actions (Blender could not hold them exactly)
    tracks_unchanged: int = 0  # ... whose F-curves the user has not touched (export writes the kept keys)
    kept: list[KeptData] = field(default_factory=list)


def active_model(context):
    """(armature or None, meshes) of the model the user means: the armature of the active object (or the
    chosen one, `find_armature`) with the meshes it deforms or carries, else the active mesh alone; (None, [])
    when there is none."""
    layer = context.view_layer
    active = layer.objects.active
    arm = armature_of(active) if active is not None else find_armature(context)
    if arm is not None:
        meshes = [ob for ob in layer.objects if ob.type == "MESH" and armature_of(ob) == arm
                  and ob.rigid_body is None]
        return arm, meshes
    if active is not None and active.type == "MESH":
        return None, [active]
    return None, []


def _influences(ob, deforming: set[str]) -> np.ndarray:
    """Per vertex of `ob`'s mesh: how many deforming bones weigh on it with a weight above 0."""
    counts, groups, weights = deform_items(ob.data)
    if not len(groups):
        return counts
    names = np.array([g.name in deforming for g in ob.vertex_groups] + [False], bool)
    live = names[np.minimum(groups, len(names) - 1)] & (weights > 0)
    owner = np.repeat(np.arange(len(counts)), counts)
    return np.bincount(owner[live], minlength=len(counts))


def _rigid_bodies(arm) -> int:
    """Rigid bodies in the collections that hold the armature (their child collections too)."""
    seen = set()
    for coll in arm.users_collection:
        seen.update(ob.as_pointer() for ob in coll.all_objects if ob.type == "MESH" and ob.rigid_body is not None)
    return len(seen)


def _kept(blocks: list[tuple[str, object]]) -> list[KeptData]:
    """The custom properties an import left on `blocks` ((where, block) pairs), counted per property and place
    (the source is shown apart)."""
    found: dict[tuple[str, str], int] = {}
    for where, block in blocks:
        for key in block.keys():
            if key not in SOURCE_PROPS:
                found[(key, where)] = found.get((key, where), 0) + 1
    return [KeptData(k, w, n) for (k, w), n in sorted(found.items())]


def _bind_counts(arm) -> tuple[int, int]:
    binds = barm.bind_matrices(arm)
    kept = unchanged = 0
    for bone in arm.data.bones:
        raw = barm.bone_extras(bone).get("bind")
        if raw is None or len(raw) != 16:
            continue
        kept += 1
        unchanged += bool(np.array_equal(binds[bone.name], np.array(raw, np.float64).reshape(4, 4)))
    return kept, unchanged


def _track_counts(arm, actions) -> tuple[int, int]:
    counts = [bact.kept_track_counts(arm, act) for act in actions]
    return sum(c[0] for c in counts), sum(c[1] for c in counts)


def _armature_facts(facts: ModelFacts, arm) -> list[tuple[str, object]]:
    facts.armature = arm.name
    facts.source_name = str(arm.get(SOURCE_NAME_PROP, ""))
    facts.bones = len(arm.data.bones)
    facts.deforming_bones = sum(b.use_deform for b in arm.data.bones)
    actions = bact.armature_actions(arm, strict=False)
    facts.actions = len(actions)
    facts.rigid_bodies = _rigid_bodies(arm)
    facts.binds_kept, facts.binds_unchanged = _bind_counts(arm)
    facts.tracks_kept, facts.tracks_unchanged = _track_counts(arm, actions)
    return ([("armature", arm), ("armature data", arm.data)] + [("bones", b) for b in arm.data.bones]
            + [("actions", a) for a in actions])


def model_facts(arm, meshes: list) -> ModelFacts:
    """The facts of the model `arm` (or None) with `meshes` (`active_model`)."""
    facts = ModelFacts(name=(arm or meshes[0]).name if (arm or meshes) else "")
    blocks: list[tuple[str, object]] = _armature_facts(facts, arm) if arm is not None else []
    deforming = {b.name for b in arm.data.bones if b.use_deform} if arm is not None else set()
    total_influences = 0
    materials = {}
    for ob in meshes:
        me = ob.data
        facts.meshes.append(ob.name)
        facts.vertices += len(me.vertices)
        facts.faces += len(me.polygons)
        facts.triangles += len(me.loop_triangles)
        facts.morphs += max(0, len(me.shape_keys.key_blocks) - 1) if me.shape_keys else 0
        if deforming:
            per_vertex = _influences(ob, deforming)
            total_influences += int(per_vertex.sum())
            facts.max_influences = max(facts.max_influences, int(per_vertex.max(initial=0)))
        blocks += [("meshes", ob), ("mesh data", me)]
        materials.update((m.as_pointer(), m) for m in me.materials if m is not None)
        facts.source_path = facts.source_path or str(ob.get(SOURCE_PATH_PROP, ""))
    if arm is not None:
        facts.source_path = str(arm.get(SOURCE_PATH_PROP, "")) or facts.source_path
    facts.mean_influences = total_influences / facts.vertices if facts.vertices and deforming else 0.0
    facts.kept = _kept(blocks + [("materials", m) for m in materials.values()])
    return facts


def stamp_source(objects, path: str) -> None:
    """Name the file `objects` were imported from on each of them (the sidebar shows it)."""
    for ob in objects:
        if isinstance(ob, bpy.types.Object) and ob.type in ("ARMATURE", "MESH"):
            ob[SOURCE_PATH_PROP] = path
