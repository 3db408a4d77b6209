"""Safe fixes for findings of the check for a target (docs/blender.md §10): one UNDO-flagged operator each, that
changes only what its finding names, so that the export no longer has to.

* limit weights: the vertices of the named mesh over the named influence count keep their largest bone weights,
  renormalised, exactly as the export would write them (`blender/mesh.py` `read_weights`);
* rename to fit: the named bone takes the short name the PMX/VMD export would give it;
* apply scale: the model is scaled about the world origin so that it is as tall as the target wants, the scale
  applied to its objects (vertices and rest bones) and its actions' bone locations scaled with it.

A fix reads what to change from the finding's own words (the exporter's text: the patterns below), never from a
second rule, and the finding it fixed leaves the panel's list (check the target again to see the rest).
"""
from __future__ import annotations

import ast
import re

import bpy
import numpy as np
from bpy.props import IntProperty
from mathutils import Matrix

from .. import formats
from ..blender import action as bact
from ..blender import compat
from ..blender import model_facts as mf
from ..blender.mesh import deform_items
from ..blender.translations import translate

SCENE_PROP = "skinbridge_sidebar"

LIMIT = re.compile(r"^(?P<object>.+): (?P<count>\d+) vertices had more than (?P<limit>\d+) influences; ")
_REPR = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""  # a name as the exporters quote it (repr)
RENAME = re.compile(rf"^bone name (?P<old>{_REPR}) is longer than the \d+ bytes a VMD name holds: PMX and VMD call "
                    rf"it (?P<new>{_REPR}) ")
TALL = re.compile(r"^the model is (?P<height>[0-9.e+-]+) MMD units tall, outside .* would make it "
                  r"(?P<want>[0-9.e+-]+) units tall$")
BONE_LOCATION = re.compile(r'^pose\.bones\["(?P<bone>(?:[^"\\]|\\.)*)"\]\.location$')


def limit_weights(ob, limit: int, bones: set[str]) -> list[int]:
    """On the vertices of mesh object `ob` with more than `limit` live influences (a weight above 0 in a group
    named as a bone of `bones`), keep the `limit` largest (ties: the stored order first), renormalised to sum 1,
    and take the vertex out of the other bone groups. Other groups and other vertices are left as they are.
    The indices of the vertices changed."""
    counts, groups, weights = deform_items(ob.data)
    if not len(groups):
        return []
    is_bone = np.array([g.name in bones for g in ob.vertex_groups] + [False], bool)
    live = is_bone[np.minimum(groups, len(is_bone) - 1)] & (weights > 0)
    owner = np.repeat(np.arange(len(counts)), counts)
    over = np.flatnonzero(np.bincount(owner[live], minlength=len(counts)) > limit)
    starts = np.cumsum(counts) - counts
    for v in over.tolist():
        at = np.arange(starts[v], starts[v] + counts[v])
        at = at[live[at]]
        order = np.lexsort((np.arange(len(at)), -weights[at].astype(np.float64)))
        keep, drop = at[order[:limit]], at[order[limit:]]
        total = float(weights[keep].astype(np.float64).sum())
        for k in drop.tolist():
            ob.vertex_groups[int(groups[k])].remove([v])
        for k in keep.tolist():
            ob.vertex_groups[int(groups[k])].add([v], float(weights[k]) / total, "REPLACE")
    ob.data.update()
    return over.tolist()


def _model_objects(arm, meshes) -> list:
    return ([arm] if arm is not None else []) + [m for m in meshes if m is not arm]


def scale_model(context, arm, meshes, factor: float) -> None:
    """Scale the model (`arm` and `meshes`) by `factor` about the world origin and apply the scale to each
    object, so that vertices and rest bones hold the new size at scale 1; the bone locations of every action
    that keys this armature's bones are scaled too, since a bone's location is in its rest length's units."""
    objects = _model_objects(arm, meshes)
    chosen = set(objects)
    scale = Matrix.Diagonal((factor, factor, factor, 1.0))
    for ob in objects:
        if ob.parent not in chosen:  # a child follows its parent
            ob.matrix_world = scale @ ob.matrix_world
    layer = context.view_layer
    selected = [ob for ob in layer.objects if ob.select_get()]
    active = layer.objects.active
    try:
        for ob in layer.objects:
            ob.select_set(ob in chosen)
        layer.objects.active = objects[0]
        with context.temp_override(active_object=objects[0], selected_editable_objects=objects):
            bpy.ops.object.transform_apply(location=False, rotation=False, scale=True, properties=False)
    finally:
        for ob in layer.objects:
            ob.select_set(ob in selected)
        layer.objects.active = active
    if arm is not None:
        _scale_bone_locations(arm, factor)


def _scale_bone_locations(arm, factor: float) -> None:
    names = {b.name for b in arm.data.bones}
    for action in bact.armature_actions(arm, strict=False):  # not another model's, with the same bone names
        for bag in compat.channelbags(action):
            for fc in bag.fcurves:
                m = BONE_LOCATION.match(fc.data_path)
                if m is None or m.group("bone").replace('\\"', '"').replace("\\\\", "\\") not in names:
                    continue
                for key in fc.keyframe_points:
                    key.co[1] *= factor
                    key.handle_left[1] *= factor
                    key.handle_right[1] *= factor
                fc.update()


def rename_kept_bone(arm, old: str, new: str) -> str | None:
    """A format whose bones keep the name their file gave them (capability `rename_kept_bone`) gives the bone its
    file called `old` the name `new` there, as its export would: what it did, or None when no bone kept `old`."""
    for spec in formats.with_capability("rename_kept_bone"):
        done = spec.get("rename_kept_bone")(arm, old, new)
        if done:
            return done
    return None


def fix_of(text: str) -> str | None:
    """The idname of the operator that fixes the finding `text`, None when no safe fix applies."""
    for cls in CLASSES:
        if cls.pattern.match(text):
            return cls.bl_idname
    return None


class _Fix:
    """A fix of the finding `index` of the panel's list; on success the finding leaves the list."""
    bl_options = {"REGISTER", "UNDO"}
    index: IntProperty(min=0, options={"HIDDEN"})
    pattern: re.Pattern

    @classmethod
    def poll(cls, context):
        return context.mode == "OBJECT"

    def execute(self, context):
        findings = getattr(context.scene, SCENE_PROP).findings
        match = self.pattern.match(findings[self.index].text) if self.index < len(findings) else None
        if match is None:
            self.report({"ERROR"}, translate("this finding is not one this fix changes: check the target again"))
            return {"CANCELLED"}
        done = self.fix(context, match)
        if done is None:
            return {"CANCELLED"}
        findings.remove(self.index)
        self.report({"INFO"}, translate(done))
        return {"FINISHED"}

    def fix(self, context, match: re.Match) -> str | None:
        raise NotImplementedError


class SKINBRIDGE_OT_fix_limit_weights(_Fix, bpy.types.Operator):
    """Keep the largest bone weights of the vertices this finding names, as many as the target holds,
    renormalised (what the export would write), and take those vertices out of their other bone groups"""
    bl_idname = "skinbridge.fix_limit_weights"
    bl_label = "Limit Weights"
    pattern = LIMIT

    def fix(self, context, match):
        ob = context.view_layer.objects.get(match.group("object"))
        arm, _ = mf.active_model(context)
        if ob is None or ob.type != "MESH" or arm is None:
            self.report({"ERROR"}, translate(f"no mesh {match.group('object')!r} deformed by the active armature"))
            return None
        changed = limit_weights(ob, int(match.group("limit")), {b.name for b in arm.data.bones})
        return f"{ob.name}: {len(changed)} vertices limited to {match.group('limit')} influences"


class SKINBRIDGE_OT_fix_rename_bone(_Fix, bpy.types.Operator):
    """Give the bone this finding names the short name the target would use (Blender renames its vertex
    groups and animation channels with it)"""
    bl_idname = "skinbridge.fix_rename_bone"
    bl_label = "Rename to Fit"
    pattern = RENAME

    def fix(self, context, match):
        old, new = ast.literal_eval(match.group("old")), ast.literal_eval(match.group("new"))
        arm, _ = mf.active_model(context)
        done = rename_kept_bone(arm, old, new) if arm is not None else None
        if done:  # a bone from a file whose name the export writes, kept with the bone
            return done
        if arm is None or old not in arm.data.bones or new in arm.data.bones:
            self.report({"ERROR"},
                        translate(f"the active armature has no bone {old!r}, or has one named {new!r} already"))
            return None
        arm.data.bones[old].name = new
        return f"bone {old!r} renamed {new!r}"


class SKINBRIDGE_OT_fix_apply_scale(_Fix, bpy.types.Operator):
    """Scale the model so that the target writes it at the height it wants, and apply the scale to its
    objects (vertices, rest bones and the actions' bone locations follow)"""
    bl_idname = "skinbridge.fix_apply_scale"
    bl_label = "Apply Scale"
    pattern = TALL

    def fix(self, context, match):
        arm, meshes = mf.active_model(context)
        if arm is None and not meshes:
            self.report({"ERROR"}, translate("no armature or mesh active"))
            return None
        factor = float(match.group("want")) / float(match.group("height"))
        scale_model(context, arm, meshes, factor)
        return f"model scaled by {factor:.4g} and the scale applied"


CLASSES = (SKINBRIDGE_OT_fix_limit_weights, SKINBRIDGE_OT_fix_rename_bone, SKINBRIDGE_OT_fix_apply_scale)
