"""DMX models and animations in Blender, both ways.

Import: the file mapped to a core Scene (`convert`) first, then built by the shared bridge (armature, meshes)
with one action per DmeChannelsClip, so a fault stops the import before the first datablock is made and a failed
build removes what it made. Corrective shape keys get drivers and the flex controllers' ranges go onto the
sliders (docs/source.md §6.5). A motion (`convert --motion`, the operator onto a selected armature) puts the clips
onto an existing armature, matched by bone name.
Export (`convert --to dmx`): the visible meshes and their armature as NAME.dmx, each action of the armature as
its own animation DMX, and NAME.qc naming them with each sequence's rate (`write`).
Kept while unchanged (docs/source.md §6.6): a model file without clips, and a motion file of one clip, keep their
bytes (up to `KEEP_LIMIT`): a model with a digest of the core records export would make of what the import
built, a motion with the fingerprints of its action's F-curves and rig; an export that finds them the same writes
those bytes instead of our own element graph."""
from __future__ import annotations

import json
import os
import re

import bpy

from bpy.utils import escape_identifier as bpy_escape

from ...blender import action as bact
from ...blender import compat
from ...blender import scene as bscene
from ...blender.ops_common import unmatched_motion
from ...blender.selection import NoTarget, armatures, find_armature
from ...core import model as cm
from ...core.digest import digest
from ...core.errors import ExportError, FormatError
from ...core.fileio import read_bytes
from ...core.names import clean
from ...core.naming import safe_file_name
from ..smd import blender_io as smd_blender
from . import blender_mesh, convert, dmx, patch, write


# bytes: a larger file is not kept. Keeping costs the import one read of what it built (as an export reads it):
# 0.87 s on bench/run's L model (200,000 vertices, 21.6 MB), which would more than double that import
KEEP_LIMIT = 8 << 20
SOURCE_PROP = "dmx_source"  # the file's bytes: on the model's armature (or its one mesh), on a motion's action
KEPT_PROP = "dmx_kept"  # JSON beside it: what decides that an export would write the same


def _stem(path: str) -> str:
    return os.path.basename(path).split(".")[0] or "dmx"


def _add_actions(context, arm_ob, animations: list[cm.Animation], created: list, own_rig: bool,
                 built: dict[int, dict[str, str]] | None = None) -> list[str]:
    """One action per animation on `arm_ob` (keys at scene frames: seconds × the scene's rate), the first one
    assigned; refused when no track matches a bone of an armature the file did not make. `built` (when given)
    gets each action's curve fingerprints from the build, by session_uid (`bact.curve_fingerprints`'s
    ``made``): `_keep_motion`, called right after, need not read every curve back."""
    fps = bact.fps_of(context.scene)
    warnings: list[str] = []
    actions = []
    for anim in animations:
        clean(anim)
        prints: dict[str, str] = {}
        act, more = bact.build_action(arm_ob, anim, fps, anim.name, fingerprints=prints)
        created.append(act)
        actions.append(act)
        if built is not None:
            built[act.session_uid] = prints
        act.frame_start, act.frame_end = 0.0, float(anim.length) * fps
        smd_blender.free_frame_range(act)
        warnings += more
    if not own_rig and unmatched_motion(arm_ob, actions):  # the rule of every motion import
        raise ExportError(f"none of the tracks of {', '.join(a.name for a in animations)} matches a bone of "
                          f"{arm_ob.name}: nothing imported (select the armature these motions were made for)")
    if actions:
        bact.assign(arm_ob, actions[0])
    return warnings


CONTROLS_PROP = "dmx_controls"  # the flex controllers read (JSON), on each mesh whose shape keys they drive


def add_flex(objects: list, scene: cm.Scene) -> None:
    """Corrective shape keys driven by the least of the keys they correct (a MIN driver, as Blender Source Tools
    builds them); each flex controller's range on the slider of the one key it drives, and the controllers kept on
    the mesh for export."""
    controls = scene.extras.get("dmx_controls", [])
    for ob, cmesh in zip(objects, scene.meshes):
        keys = ob.data.shape_keys
        if keys is None:
            continue
        for name, parts in cmesh.extras.get("dmx", {}).get("correctives", {}).items():
            if name not in keys.key_blocks or not all(p in keys.key_blocks for p in parts):
                continue  # a name Blender cut or made unique: the keys are not the file's names any more
            fcurve = keys.key_blocks[name].driver_add("value")
            for m in list(fcurve.modifiers):  # a new driver curve holds a generator modifier: the driver alone
                fcurve.modifiers.remove(m)
            fcurve.driver.type = "MIN"
            for part in parts:
                var = fcurve.driver.variables.new()
                var.name = "v" + str(len(fcurve.driver.variables))
                var.targets[0].id_type = "KEY"
                var.targets[0].id = keys
                var.targets[0].data_path = f'key_blocks["{bpy_escape(part)}"].value'
        mine = [c for c in controls if c["raw"] and all(r in keys.key_blocks for r in c["raw"])]
        for c in mine:
            if len(c["raw"]) == 1:
                kb = keys.key_blocks[c["raw"][0]]
                # widen first: Blender clamps each bound against the other as it is set
                kb.slider_min, kb.slider_max = min(c["min"], kb.slider_min), max(c["max"], kb.slider_max)
                kb.slider_min, kb.slider_max = c["min"], c["max"]
        if mine:
            ob[CONTROLS_PROP] = json.dumps(mine)


def _kept_controls(ob, warnings: list[str]) -> list[dict]:
    """The flex controllers an import kept on `ob`; a property edited into something else is left out."""
    text = ob.get(CONTROLS_PROP)
    if text is None:
        return []
    try:
        controls = json.loads(text) if isinstance(text, str) else None
        ok = isinstance(controls, list) and all(
            isinstance(c, dict) and isinstance(c.get("name"), str) and isinstance(c.get("raw"), list)
            and all(isinstance(r, str) for r in c["raw"]) and all(isinstance(c.get(k), (int, float))
                                                                   for k in ("min", "max")) for c in controls)
    except ValueError:
        ok = False
    if not ok:
        warnings.append(f"{ob.name}: its {CONTROLS_PROP} property is not the flex controllers an import wrote: "
                        "default controllers written instead")
        return []
    return [{**c, "stereo": bool(c.get("stereo")), "eyelid": bool(c.get("eyelid"))} for c in controls]


def blender_import(context, path: str, options=None) -> list[str]:
    """The registry's `blender_import`: the model of one .dmx (gzip too) with its animations; returns warnings."""
    name = _stem(path)
    data = read_bytes(path)
    scene, warnings = convert.to_scene(dmx.read(data), name)
    if len(data) > KEEP_LIMIT:
        data = b""  # not kept: its memory goes back before the build allocates
    if scene.skeleton is None and not scene.meshes:
        return warnings
    before = bscene.snapshot_ids()
    result = bscene.build_scene(context, scene, name, os.path.dirname(path))
    try:
        meshes = [ob for ob in result.objects if ob.type == "MESH"]
        for ob, cmesh in zip(meshes, scene.meshes):
            blender_mesh.keep_fields(ob.data, cmesh.extras.get("dmx", {}).get("fields", []))
            blender_mesh.share(ob.data, cmesh.extras.get("dmx", {}).get("topology", {}))
            for mat, k in zip(ob.data.materials, cmesh.materials):
                if mat is not None and scene.materials[k].extras.get(convert.MTL_NAME):
                    mat[convert.MTL_NAME] = scene.materials[k].extras[convert.MTL_NAME]
        add_flex(meshes, scene)
        if result.armature is not None and scene.animations:
            made: list = []
            prints: dict[int, dict[str, str]] = {}
            warnings += _add_actions(context, result.armature, scene.animations, made, True, prints)
            _keep_motion(context, data, scene, result.armature, made, prints)
        elif meshes and data:
            _keep_model(context, data, meshes, result.armature)
    except BaseException:
        bscene.remove_new(before)
        raise
    return warnings + result.warnings


def _object_names(meshes: list, arm_ob) -> list[str]:
    return sorted(ob.name for ob in meshes) + ([arm_ob.name] if arm_ob is not None else [])


def _keep_model(context, data: bytes, meshes: list, arm_ob) -> None:
    """The file's bytes and the digest of what an export of the objects just made would write, on the armature
    (else the first mesh)."""
    holder = arm_ob if arm_ob is not None else meshes[0]
    try:
        made, _ = _export_scene(context, (meshes, arm_ob))
    except ExportError:
        return
    holder[SOURCE_PROP] = data
    holder[KEPT_PROP] = json.dumps({"objects": _object_names(meshes, arm_ob), "digest": digest(made)})


def _holder(meshes: list, arm_ob):
    """The object holding the imported file an export of these objects starts from: the armature, else the
    first (by name) of the meshes that holds one."""
    if arm_ob is not None:
        return arm_ob if isinstance(arm_ob.get(SOURCE_PROP), bytes) else None
    return next((ob for ob in sorted(meshes, key=lambda o: o.name) if isinstance(ob.get(SOURCE_PROP), bytes)), None)


def _model_source(scene: cm.Scene, meshes: list, arm_ob, name: str, warnings: list[str]) -> bytes | None:
    """The model file's bytes when they start from an imported file: its own while the export would write the
    same, else that file with the edit written into it (patch.py); None (the file written anew, with a warning
    saying why) when it cannot hold the edit."""
    holder = _holder(meshes, arm_ob)
    if holder is None:
        return None
    kept = _kept(holder, objects=_object_names(meshes, arm_ob), digest=digest(scene))
    if kept is not None:
        return kept
    try:
        return patch.patched(bytes(holder[SOURCE_PROP]), scene)
    except (patch.Refused, FormatError, ValueError, IndexError, KeyError) as e:  # said, never an export lost
        warnings.append(f"{name}.dmx written anew, not as the imported file with the edit (its element ids, "
                        f"string table and encoding are not kept): {_why(e)}")
    return None


def _why(e: Exception) -> str:
    return str(e) if isinstance(e, patch.Refused) else f"{type(e).__name__}: {e}"


def _kept(holder, **now) -> bytes | None:
    """The bytes `holder` keeps while what they were kept with (`KEPT_PROP`) equals `now`, else None."""
    raw = holder.get(KEPT_PROP) if holder is not None else None
    source = holder.get(SOURCE_PROP) if holder is not None else None
    try:
        kept = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    return bytes(source) if isinstance(kept, dict) and isinstance(source, bytes) and kept == now else None


def _export_scene(context, objects: tuple | None = None) -> tuple[cm.Scene, list[str]]:
    """The core Scene `export_target` writes as the model (`objects`: the (meshes, armature) to read, else the
    visible ones), its flex controllers included."""
    scene, warnings = bscene.gather_scene(context, max_influences=write.MAX_WEIGHTS, tangents=False,
                                          objects=objects, bones_alone=True)
    if not scene.meshes and scene.skeleton is None:  # an armature alone writes its skeleton and its motions
        raise ExportError("nothing to export: no visible mesh or armature")
    meshes, _ = objects if objects is not None else bscene.exportable_objects(context)
    by_name = {ob.name: ob for ob in meshes}
    depsgraph = context.evaluated_depsgraph_get()
    for cmesh in scene.meshes:  # the polygons, which the core mesh holds as triangles
        ob = by_name.get(cmesh.name)
        found = blender_mesh.polygons(ob, cmesh, depsgraph) if ob is not None else None
        if found is not None and "sizes" in found:
            cmesh.extras["dmx_polygons"] = found
        if found is not None and ob.data.get(blender_mesh.FIELDS_PROP):
            cmesh.extras["dmx_fields"] = blender_mesh.read_fields(ob, found["loop_vertex"], len(cmesh.positions))
        if ob is not None and _unweighted(ob):  # under the model without weights, as BST writes it (Dice)
            cmesh.joints = cmesh.weights = None
            warnings = [w for w in warnings if not w.startswith(f"{ob.name}: not deformed by the armature")]
    for mat in scene.materials:
        _material_name(mat)
    controls = [c for ob in meshes for c in _kept_controls(ob, warnings)]
    if controls:
        scene.extras["dmx_controls"] = controls
    return scene, warnings


def _unweighted(ob) -> bool:
    """A mesh no armature deforms and no bone carries: a DMX mesh without weights (the shared reading weights
    it to the root bone, which in BST's vertex-animation models is the animated bone)."""
    return ob.parent_type != "BONE" and not any(m.type == "ARMATURE" and m.object is not None
                                                for m in ob.modifiers)


def _material_name(mat: cm.Material) -> None:
    """The mtlName the export writes for a Blender material: the imported file's (its folder kept) while the
    material keeps that name but for Blender's .001 suffix; a renamed one in the same folder."""
    held = bpy.data.materials.get(mat.name)
    mtl = held.get(convert.MTL_NAME) if held is not None else None
    if not isinstance(mtl, str):
        return
    name = re.sub(r"\.\d{3}$", "", mat.name)
    folder, _, base = mtl.replace("\\", "/").rpartition("/")
    mat.name = base if name == base else name
    mat.extras[convert.MTL_NAME] = mtl if name == base else (folder + "/" + name if folder else name)


def import_clips(context, record: dmx.DmxFile, name: str, armature) -> list[str]:
    """The clips of a read DMX onto `armature` as actions, the first named `name` (a QC's sequence)."""
    scene, warnings = convert.to_scene(record, name)
    if not scene.animations:
        return warnings + [f"{name}: the DMX holds no animation (no DmeChannelsClip): no action"]
    scene.animations[0].name = name
    return warnings + _add_actions(context, armature, scene.animations, [], False)


def motion_only(path: str) -> bool:
    """The file holds animations and no mesh (an animation DMX beside its model)."""
    return convert.kind_of(read_bytes(path)) == "motion"


def load_motion(context, path: str, armature, options=None) -> list[str]:
    """The registry's `motion_loader`: the clips of a DMX onto `armature` (else the selected or only one; with
    no armature in the scene, the file's own skeleton is built to carry them)."""
    name = _stem(path)
    data = read_bytes(path)
    scene, warnings = convert.to_scene(dmx.read(data), name)
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
    prints: dict[int, dict[str, str]] = {}
    try:
        warnings += _add_actions(context, arm_ob, scene.animations, created, own_rig, prints)
    except BaseException:
        bscene.remove_created(created)
        raise
    _keep_motion(context, data, scene, arm_ob, created, prints)
    return warnings


def _keep_motion(context, data: bytes, scene: cm.Scene, arm_ob, created: list,
                 made: dict[int, dict[str, str]]) -> None:
    """A motion file of one clip: its bytes and what its export depends on (`_motion_state`), on the action
    (`made`: what `_add_actions` gave of each action's curves)."""
    acts = [a for a in created if isinstance(a, bpy.types.Action)]
    if len(acts) == 1 and data and len(data) <= KEEP_LIMIT and not scene.meshes:
        acts[0][SOURCE_PROP] = data
        acts[0][KEPT_PROP] = json.dumps(_motion_state(context, arm_ob, acts[0], made.get(acts[0].session_uid)))


def _motion_state(context, arm_ob, act, made: dict | None = None) -> dict:
    """What an action's export depends on, cheap to read (no sampling): the rig's fingerprint, the F-curves'
    (per bone; None where constraints, drivers or modifiers move it), the scene's rate and the frame range.
    ``made``: the fingerprints its build gave, right after it (else every curve is read)."""
    return {"rig": bact.rig_fingerprint(arm_ob), "curves": bact.curve_fingerprints(arm_ob, act, made=made),
            "fps": bact.fps_of(context.scene), "range": [float(act.frame_start), float(act.frame_end)]}


def _patched_motion(source: bytes, skel: cm.Skeleton, anim: cm.Animation, warnings: list[str]) -> bytes | None:
    """An imported motion file with the edit written into it (patch.py), else None (written anew, with a
    warning saying why)."""
    try:
        return patch.patched_motion(source, skel, anim, warnings)
    except (patch.Refused, FormatError, ValueError, IndexError, KeyError) as e:  # said, never an export lost
        warnings.append(f"animation {anim.name!r} written anew, not as the imported file with the edit (its "
                        f"element ids, string table and encoding are not kept): {_why(e)}")
    return None


def _one_import(meshes: list, arm_ob) -> tuple[list, object]:
    """(meshes, armature) to export: with several imported DMX models among them (each import's armature, else
    its first mesh, holds the file and names the objects it made), those of the one selected, as an export
    chooses between rigged models (blender/scene.py), and the meshes no import made; an ExportError when none
    or several of them are selected."""
    candidates = list(meshes) + [arm_ob] + [ob.parent for ob in meshes]
    groups: list[tuple[object, set[str]]] = []
    for ob in candidates:
        if ob is None or any(ob is h for h, _ in groups) or not isinstance(ob.get(SOURCE_PROP), bytes):
            continue
        try:
            kept = json.loads(ob.get(KEPT_PROP))
        except (TypeError, ValueError):
            continue
        if isinstance(kept, dict) and isinstance(kept.get("objects"), list):
            groups.append((ob, {n for n in kept["objects"] if isinstance(n, str)}))
    if len(groups) < 2:
        return meshes, arm_ob
    chosen = [(h, g) for h, g in groups if any(bpy.data.objects[n].select_get() for n in g if n in bpy.data.objects)]
    if len(chosen) != 1:
        names = ", ".join(sorted(h.name for h, _ in groups))
        raise ExportError(f"{len(groups)} imported DMX models could be exported ({names}): select the one to "
                          "export")
    holder, mine = chosen[0]
    others = set().union(*(g for h, g in groups if h is not holder)) - mine
    if holder.type == "ARMATURE":
        arm_ob = holder
    elif arm_ob is not None and arm_ob.name in others:
        arm_ob = None
    return [ob for ob in meshes if ob.name not in others], arm_ob


_KEYED = re.compile(r'pose\.bones\["(.+)"\]\.(location|rotation_quaternion|rotation_euler)$')


def _partial_keys(arm_ob, act) -> list[str]:
    """A warning per bone channel of an imported action (whose import keyed every component together) keyed in
    some of its components only at a frame (a key deleted or added on one of them): a DMX key holds a whole
    position or orientation, so the others are written as Blender's curves give them there."""
    slot = bact.slot_for(arm_ob, act)
    groups: dict[tuple[str, str], dict[int, set[float]]] = {}
    for cb in compat.channelbags(act):
        if slot is not None and cb.slot != slot:
            continue
        for fc in cb.fcurves:
            m = _KEYED.match(fc.data_path)
            if m:
                frames = {round(k.co.x, 3) for k in fc.keyframe_points}
                groups.setdefault((bact.unescape_bone_name(m[1]), m[2]), {})[fc.array_index] = frames
    out = []
    for (bone, prop), comps in groups.items():
        if len(comps) != (4 if prop == "rotation_quaternion" else 3):
            continue
        odd = sorted(set().union(*comps.values()) - set.intersection(*comps.values()))
        if odd:
            out.append(f"animation {act.name!r}: bone {bone!r}: its {prop} is keyed in some of its components only "
                       f"(frame {', '.join(f'{f:g}' for f in odd[:3])}): a DMX key holds all of them, the others "
                       "written as Blender's curves give them there")
    return out


def export_target(context, outdir: str, name: str, options) -> tuple[list[str], list[str]]:
    """`convert --to dmx`: NAME.dmx (the model), one animation DMX per action of the armature, NAME.qc, in the
    encoding and model version of `options.dmx_version` and `options.keyvalues2` (write.py `write_files`; no
    options: As Read, binary)."""
    meshes, arm_ob = bscene.exportable_objects(context)
    chosen, arm = _one_import(meshes, arm_ob)
    changed = len(chosen) < len(meshes) or arm is not arm_ob
    scene, warnings = _export_scene(context, (chosen, arm) if changed else None)
    meshes, arm_ob = chosen, arm
    source = _model_source(scene, meshes, arm_ob, safe_file_name(name), warnings)
    if source is not None:
        scene.extras["dmx_source"] = source
    fps = bact.fps_of(context.scene)
    if arm_ob is not None and scene.skeleton is not None:
        for act in bact.armature_actions(arm_ob):
            anim, more = bact.read_action(context, arm_ob, act)
            state = _motion_state(context, arm_ob, act)
            source = _kept(act, **state) if None not in state["curves"].values() else None
            anim.name = act.name
            if source is None and isinstance(act.get(SOURCE_PROP), bytes):
                source = _patched_motion(bytes(act[SOURCE_PROP]), scene.skeleton, anim, more)
                more += _partial_keys(arm_ob, act)
            if source is not None:
                anim.extras["dmx_source"] = source
            scene.animations.append(anim)
            warnings += more
    branch, text = (options.dmx_version, options.keyvalues2) if options is not None else ("AUTO", False)
    paths, more = write.write_files(scene, outdir, safe_file_name(name), fps, branch=branch, text=text)
    return paths, warnings + more
