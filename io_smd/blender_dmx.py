"""DMX models and animations in Blender, both ways.

Import: the file mapped to a core Scene (`dmx_convert`) first, then built by the shared bridge (armature, meshes)
with one action per DmeChannelsClip, so a fault stops the import before the first datablock is made and a failed
build removes what it made. A motion (`convert --motion`, the operator onto a selected armature) puts the clips
onto an existing armature, matched by bone name.
Export (`convert --to dmx`): the visible meshes and their armature as NAME.dmx, each action of the armature as
its own animation DMX, and NAME.qc naming them with each sequence's rate (`dmx_write`)."""
from __future__ import annotations

import os

from ..blender import action as bact
from ..blender import scene as bscene
from ..blender.ops_common import unmatched_motion
from ..blender.selection import NoTarget, armatures, find_armature
from ..core import model as cm
from ..core.errors import ExportError
from ..core.fileio import read_bytes
from ..core.names import clean
from ..core.naming import safe_file_name
from . import dmx, dmx_convert, dmx_write


def _stem(path: str) -> str:
    return os.path.basename(path).split(".")[0] or "dmx"


def _add_actions(context, arm_ob, animations: list[cm.Animation], created: list, own_rig: bool) -> list[str]:
    """One action per animation on `arm_ob` (keys at scene frames: seconds × the scene's rate), the first one
    assigned; refused when no track matches a bone of an armature the file did not make."""
    fps = bact.fps_of(context.scene)
    warnings: list[str] = []
    actions = []
    for anim in animations:
        clean(anim)
        act, more = bact.build_action(arm_ob, anim, fps, anim.name)
        created.append(act)
        actions.append(act)
        act.frame_start, act.frame_end = 0.0, float(anim.length) * fps
        warnings += more
    if not own_rig and unmatched_motion(arm_ob, actions):  # the rule of every motion import
        raise ExportError(f"none of the tracks of {', '.join(a.name for a in animations)} matches a bone of "
                          f"{arm_ob.name}: nothing imported (select the armature these motions were made for)")
    if actions:
        bact.assign(arm_ob, actions[0])
    return warnings


def blender_import(context, path: str, options=None) -> list[str]:
    """The registry's `blender_import`: the model of one .dmx (gzip too) with its animations; returns warnings."""
    name = _stem(path)
    scene, warnings = dmx_convert.to_scene(dmx.read(read_bytes(path)), name)
    if scene.skeleton is None and not scene.meshes:
        return warnings
    before = bscene.snapshot_ids()
    result = bscene.build_scene(context, scene, name, os.path.dirname(path))
    if result.armature is None or not scene.animations:
        return warnings + result.warnings
    try:
        warnings += _add_actions(context, result.armature, scene.animations, [], True)
    except BaseException:
        bscene.remove_new(before)
        raise
    return warnings + result.warnings


def motion_only(path: str) -> bool:
    """The file holds animations and no mesh (an animation DMX beside its model)."""
    scene, _ = dmx_convert.to_scene(dmx.read(read_bytes(path)), _stem(path))
    return bool(scene.animations) and not scene.meshes


def load_motion(context, path: str, armature, options=None) -> list[str]:
    """The registry's `motion_loader`: the clips of a DMX onto `armature` (else the selected or only one; with
    no armature in the scene, the file's own skeleton is built to carry them)."""
    name = _stem(path)
    scene, warnings = dmx_convert.to_scene(dmx.read(read_bytes(path)), name)
    if not scene.animations:
        raise ExportError(f"{os.path.basename(path)} holds no animation (no DmeChannelsClip in its animationList)")
    arm_ob = armature
    if arm_ob is None:
        try:
            arm_ob = find_armature(context, required=True)
        except NoTarget as e:
            if armatures(context):
                raise ExportError(f"animation: {e}") from None
    created: list = []
    own_rig = arm_ob is None
    if own_rig:
        built = bscene.build_scene(context, cm.Scene(name=name, skeleton=scene.skeleton), name)
        arm_ob = built.armature
        created += [arm_ob, arm_ob.data]
    try:
        return warnings + _add_actions(context, arm_ob, scene.animations, created, own_rig)
    except BaseException:
        bscene.remove_created(created)
        raise


def export_target(context, outdir: str, name: str, options) -> tuple[list[str], list[str]]:
    """`convert --to dmx`: NAME.dmx (the model), one animation DMX per action of the armature, NAME.qc."""
    scene, warnings = bscene.gather_scene(context, max_influences=dmx_write.MAX_WEIGHTS, tangents=False)
    if not scene.meshes:
        raise ExportError("nothing to export: no visible mesh")
    _, arm_ob = bscene.exportable_objects(context)
    fps = bact.fps_of(context.scene)
    if arm_ob is not None and scene.skeleton is not None:
        for act in bact.armature_actions(arm_ob):
            anim, more = bact.read_action(context, arm_ob, act)
            anim.name = act.name
            scene.animations.append(anim)
            warnings += more
    paths, more = dmx_write.write_files(scene, outdir, safe_file_name(name), fps)
    return paths, warnings + more
