"""Wallpaper Engine puppets and models in Blender: file → records → core → bpy and back.

Import is one transaction: the file is read and mapped (texture included) before the first datablock is
created, and everything created is removed if building fails. On top of the shared bridge it adds what only
this format has: each clip's action keeps the clip's id, mode, fps, length, flags, track flags, events and exact
samples (JSON in the action's `skinbridge_we` property); attachments (MDAT) become empties parented to their
bones; the armature keeps the file's MDLV tag, section versions and raw tables (`skinbridge_we`), each mesh
object its material paths, flags and vertex format.

Export is read-only (the bridge reads rest data and puts back what it switched), builds the records with the
mapping, and writes to a temporary file renamed into place.
"""
from __future__ import annotations

import base64
import json
import os
import re
import uuid

import bpy
import numpy as np
from mathutils import Matrix

from ...blender import action as baction
from ...blender import armature as barm
from ...blender import compat
from ...blender import scene as bscene
from ...blender.selection import one_model
from ...core import model as cm
from ...core.errors import ExportError, FormatError
from ...core.fileio import output_path, read_bytes, write_atomic
from ...core.naming import NameAllocator, safe_file_name
from ..texture.material import material_doc
from ..texture.blender_io import TEX_PROP, first_image, keep_texture, texture_bytes
from . import convert, mdl, project_docs

PROP = "skinbridge_we"
POSE_BONE = re.compile(r'^pose\.bones\["(.+)"\]\.(location|rotation_quaternion|rotation_euler|scale)$')
GENERATED_KEY = bpy.types.Keyframe.bl_rna.properties["type"].enum_items["GENERATED"].value
ATTACHMENT_PROP = "skinbridge_we_attachment"
# on a clip's action: the action an additive animation layer plays for it (`additive_action`), and on that
# action the clip's action it was made from (export leaves it out: the clip's own action is the clip)
ADDITIVE_PROP, ADDITIVE_OF_PROP = "skinbridge_we_additive", "skinbridge_we_additive_of"
MODEL_PROP = "skinbridge_we_model"  # the file-level extras, on the armature (or the first mesh of a static model)
IMPORT_PROP = "skinbridge_we_import"  # on an imported mesh object: which import made it (one token per import)
# on each imported mesh object: the file's vertex records and index list (bytes), written again where unchanged
RECORD_PROPS = (("skinbridge_we_vertices", convert.VERTEX_BYTES), ("skinbridge_we_indices", convert.INDEX_BYTES))
_ID_COLLECTIONS = ("objects", "meshes", "armatures", "materials", "images", "collections", "actions")


# ------------------------------------------------------------------------------------------------------------
# import

def _tail_matrix(bone) -> np.ndarray:
    """Armature-space matrix a child parented to `bone` (parent type BONE) hangs from at rest: the tail."""
    m = np.array(bone.matrix_local, np.float64)
    t = np.eye(4)
    t[1, 3] = bone.length
    return m @ t


def _add_attachments(context, arm_ob, scene: cm.Scene, created: list) -> None:
    x = scene.extras.get(convert.KEY) or {}
    metres_per_unit = float(x.get(convert.SCALE_KEY, convert.METRES_PER_UNIT))
    names = [b.name for b in scene.skeleton.bones]
    binds = scene.skeleton.binds()
    collection = context.view_layer.active_layer_collection.collection
    kept = x.get("attachments", [])
    for raw, (name, bone, local) in zip(kept, convert.attachment_matrices(kept, scene.skeleton,
                                                                                      metres_per_unit)):
        ob = bpy.data.objects.new(name or "Attachment", None)
        created.append(ob)
        ob.empty_display_type = "ARROWS"
        ob.empty_display_size = 0.05
        collection.objects.link(ob)
        ob.parent = arm_ob
        ob.parent_type = "BONE"
        ob.parent_bone = names[bone]
        target = binds[bone] @ local  # armature space
        ob.matrix_parent_inverse = Matrix.Identity(4)
        ob.matrix_basis = Matrix((np.linalg.inv(_tail_matrix(arm_ob.data.bones[names[bone]])) @ target).tolist())
        ob[ATTACHMENT_PROP] = json.dumps(raw)


def import_wepuppet(context, path: str, metres_per_unit: float = convert.METRES_PER_UNIT,
                    with_animations: bool = True) -> bscene.ImportResult:
    """The `.mdl` at `path` built in Blender, `metres_per_unit` Blender metres per image pixel; atomic."""
    if not metres_per_unit > 0:
        raise FormatError(f"metres per unit {metres_per_unit} is not positive")
    model = mdl.read(read_bytes(path))
    name = os.path.splitext(os.path.basename(path))[0]
    core_scene, warnings = convert.to_scene(model, name, metres_per_unit, path=path, with_animations=with_animations)
    before = bscene.snapshot_ids(_ID_COLLECTIONS)
    try:
        result = bscene.build_scene(context, core_scene, name, os.path.dirname(os.path.abspath(path)))
        arm_ob = result.armature
        meshes = [ob for ob in result.objects if ob.type == "MESH"]
        token = f"{name}:{uuid.uuid4().hex}"
        for ob, cmesh in zip(meshes, core_scene.meshes):
            ob[PROP] = json.dumps(cmesh.extras.get(convert.KEY, {}))
            ob[IMPORT_PROP] = token
            for prop, key in RECORD_PROPS:
                ob[prop] = cmesh.extras[key]
        for mat, cmat in zip([ob.data.materials[0] for ob in meshes if ob.data.materials],
                             [core_scene.materials[c.materials[0]] for c in core_scene.meshes]):
            x = dict(cmat.extras.get(convert.KEY, {}))
            texture_file = x.pop("texture_file", None)
            mat[PROP] = json.dumps(x)
            img = first_image([mat]) if texture_file else None
            if img is not None:
                keep_texture(img, read_bytes(texture_file))
        target = arm_ob if arm_ob is not None else (meshes[0] if meshes else None)
        if target is not None:
            target[MODEL_PROP] = json.dumps(core_scene.extras.get(convert.KEY, {}))
        if arm_ob is not None:
            created: list = []
            _add_attachments(context, arm_ob, core_scene, created)
            result.objects += created
            fps = baction.fps_of(context.scene)
            first = None
            for k, anim in enumerate(core_scene.animations):
                act, more = baction.build_action(arm_ob, anim, fps)
                warnings += more
                act[PROP] = json.dumps({"index": k, **anim.extras.get(convert.KEY, {})})
                first = first or act
            if first is not None:
                baction.assign(arm_ob, first)
                context.scene.frame_start = 0
                context.scene.frame_end = min(max(int(np.ceil(first.frame_end)), 1), 1048574)
    except BaseException:
        bscene.remove_new(before)
        raise
    result.warnings[:0] = warnings
    return result


def additive_action(context, arm_ob, act):
    """The action an additive animation layer plays for the clip of `act` (an action of `arm_ob` from a `.mdl`)
    on a Combine strip: Wallpaper Engine adds the clip's change since its frame 0 (docs/wallpaper_engine.md
    §7), which the clip's own action, relative to the bind pose, is not when frame 0 is off the bind
    (`convert.additive_samples`). Made from the file's samples and bind matrices the import kept, once per clip
    (kept on `act` after); None for an action that keeps no clip."""
    made = act.get(ADDITIVE_PROP)
    if isinstance(made, bpy.types.Action):
        return made
    x = _json_prop(act)
    names = bscene.barm_names(arm_ob)
    bones = [arm_ob.data.bones.get(n) for n in names]
    matrices = [(barm.bone_extras(b).get(convert.KEY) or {}).get("matrix") if b is not None else None for b in bones]
    if "samples" not in x or not names or any(m is None or len(m) != 16 for m in matrices):
        return None
    fps, length, n = float(x["fps"]), int(x["length"]), len(x.get("track_flags") or ())
    samples = np.frombuffer(base64.b64decode(x["samples"]), "<f4")
    if not (fps > 0 and n and samples.size == n * (length + 1) * 9):
        return None
    samples = convert.additive_samples(samples.reshape(n, length + 1, 9), convert.column_major(matrices))
    skel = cm.Skeleton(bones=[cm.Bone(name, names.index(b.parent.name) if b.parent else -1, np.eye(4), np.zeros(3),
                                      np.array([1.0, 0, 0, 0]), np.ones(3)) for name, b in zip(names, bones)])
    clip = mdl.Clip(id=int(x.get("id", 0)), reserved=0, name=act.name, mode=str(x.get("mode", "")),
                    fps=np.float32(fps), length=length, flags=0, track_flags=np.zeros(n, "<u4"), samples=samples)
    metres_per_unit = float(_json_prop(arm_ob, MODEL_PROP).get(convert.SCALE_KEY, convert.METRES_PER_UNIT))
    anim = cm.Animation(name=act.name, length=length / fps, tracks=convert.clip_tracks(clip, skel, metres_per_unit))
    placed = arm_ob.matrix_world.copy()  # the tracks are the file's, as at import: the object at the origin
    arm_ob.matrix_world = Matrix.Identity(4)
    try:
        made, _ = baction.build_action(arm_ob, anim, baction.fps_of(context.scene), name=f"{act.name} (additive)")
    finally:
        arm_ob.matrix_world = placed
    made[ADDITIVE_OF_PROP] = act
    act[ADDITIVE_PROP] = made
    return made


def play_additive_strips(context, arm_ob) -> int:
    """Each Combine (additive) strip of `arm_ob`'s NLA tracks that plays a clip's own action plays the clip's
    `additive_action` instead, over the same frames; the number of strips changed."""
    ad = arm_ob.animation_data
    changed = 0
    for track in ad.nla_tracks if ad is not None else ():
        for strip in track.strips:
            act = strip.action
            if strip.blend_type != "COMBINE" or act is None or PROP not in act or ADDITIVE_OF_PROP in act:
                continue
            made = additive_action(context, arm_ob, act)
            if made is None:
                continue
            frames = (strip.action_frame_start, strip.action_frame_end, strip.frame_start, strip.frame_end)
            strip.action = made
            slot = next((sl for sl in made.slots if sl.target_id_type == "OBJECT"), None)
            if slot is not None and hasattr(strip, "action_slot"):
                strip.action_slot = slot
            strip.action_frame_start, strip.action_frame_end = frames[:2]
            strip.frame_start, strip.frame_end = frames[2:]
            changed += 1
    return changed


def blender_import(context, path: str, options=None) -> list[str]:
    # `convert` imports with the import options' defaults (FormatSpec.import_options)
    return import_wepuppet(context, path).warnings


# ------------------------------------------------------------------------------------------------------------
# export

def _json_prop(idblock, prop: str = PROP) -> dict:
    return bscene.json_prop(idblock, prop)


def _attachments(arm_ob, skel: cm.Skeleton, metres_per_unit: float) -> list:
    index = {b.name: i for i, b in enumerate(skel.bones)}
    binds = skel.binds()
    out = []
    for ob in bpy.data.objects:
        if ob.type != "EMPTY" or ob.parent != arm_ob or ob.parent_type != "BONE" or ob.parent_bone not in index:
            continue
        i = index[ob.parent_bone]
        world = _tail_matrix(arm_ob.data.bones[ob.parent_bone]) @ np.array(ob.matrix_parent_inverse) @ \
            np.array(ob.matrix_basis)
        local = np.linalg.inv(binds[i]) @ world
        kept = {}
        try:
            kept = json.loads(ob.get(ATTACHMENT_PROP, "{}"))
        except ValueError:
            pass
        if kept.get("matrix"):
            exact = convert.to_core_matrix(convert.column_major(kept["matrix"]), metres_per_unit, False)
            if np.abs(exact - local).max() <= 1e-4 * max(1.0, np.abs(exact).max()):
                local = exact
        out.append((str(kept.get("name", ob.name)) if kept.get("name") is not None else ob.name, i, local))
    return out


def _undeformed_positions(ob, cmesh: cm.Mesh) -> None:
    """Positions from the mesh data itself when only armature modifiers act on it: Blender's armature
    deformation in Rest Position is the identity only up to float32 noise of the bone matrices (up to about
    1e-7 of the bones' distance from the origin), which the file's exact pixel positions should not carry."""
    source = cmesh.extras.get("source_vertex")
    me = ob.data
    if source is None or cmesh.extras.get("source_vertex_count") != len(me.vertices) or \
            any(mod.type != "ARMATURE" for mod in ob.modifiers if mod.show_viewport) or \
            (me.shape_keys is not None and len(me.shape_keys.key_blocks) > 1):
        return
    co = np.empty(3 * len(me.vertices), np.float32)
    me.attributes["position"].data.foreach_get("vector", co)
    m = np.array(ob.matrix_world, np.float64)
    if np.array_equal(m, np.eye(4)):
        cmesh.positions = co.reshape(-1, 3)[source]
    else:
        cmesh.positions = (co.reshape(-1, 3)[source].astype(np.float64) @ m[:3, :3].T + m[:3, 3]).astype(np.float32)


def _keys_between_samples(context, act) -> list[str]:
    """A warning naming the keys of a clip's action (not Blender's GENERATED ones) that fall between the clip's
    samples: a `.mdl` clip holds a sample at every frame of its rate, so such a key shapes it only where the curve
    passes a sample."""
    fps = _json_prop(act).get("fps")
    if not isinstance(fps, (int, float)) or not fps > 0:
        return []
    step = baction.fps_of(context.scene) / float(fps)
    off: dict[str, list[float]] = {}
    for cb in compat.channelbags(act):
        for fc in cb.fcurves:
            m = POSE_BONE.match(fc.data_path)
            n = len(fc.keyframe_points)
            if m is None or fc.mute or not n:
                continue
            co = np.empty(2 * n, np.float32)
            fc.keyframe_points.foreach_get("co", co)
            kind = np.empty(n, np.int32)
            fc.keyframe_points.foreach_get("type", kind)
            frames = co[0::2].astype(np.float64) / step
            slack = 1e-3 + 4 * np.spacing(np.abs(co[0::2])).astype(np.float64) / step  # key frames are float32
            between = (np.abs(frames - np.round(frames)) > slack) & (kind != GENERATED_KEY)
            if between.any():
                off.setdefault(m.group(1), []).extend((frames[between] * step).tolist())
    if not off:
        return []
    where = ", ".join(f"{bone} at frame {', '.join(f'{f:g}' for f in sorted(set(fs))[:3])}"
                      for bone, fs in list(off.items())[:5])
    return [f"clip {act.name}: keys between its samples ({where}) not written as keys: the clip holds a sample "
            f"every {step:g} frames ({float(fps):g} fps), taken from the curves"]


def gather_model(context, wide: bool = False, metres_per_unit: float | None = None, selected_only: bool = False,
                 keep: bool = True) -> tuple[mdl.Model, list[str]]:
    """The visible model (or the selected one) as records: `wide` MDLV0023 with 80-byte vertices; Blender metres
    per image pixel `metres_per_unit` (None: as the model was imported, else the import's default); `keep` what
    the import kept of the file (its versions, vertex records, padding)."""
    # a static model imported twice is two models: the one the selection touches is written (`one_model`)
    meshes, arm_ob = objects = one_model(*bscene.exportable_objects(context, selected_only), IMPORT_PROP)
    holder = arm_ob if arm_ob is not None else (meshes[0] if meshes else None)
    kept_format = ((_json_prop(holder, MODEL_PROP).get("mesh_extras") or [{}])[0].get("format")
                   if keep and holder is not None else None)
    tangents = wide or (arm_ob is None if kept_format is None else bool(int(kept_format) & 0x4))
    core_scene, warnings = bscene.gather_scene(context, selected_only=selected_only, max_influences=4,
                                               tangents=tangents, objects=objects)
    if not core_scene.meshes:
        raise ExportError("nothing to export: no visible mesh with faces")
    if keep and holder is not None:
        core_scene.extras[convert.KEY] = _json_prop(holder, MODEL_PROP)
    by_name = {ob.name: ob for ob in meshes}
    for cmesh in core_scene.meshes:
        ob = by_name.get(cmesh.name)
        if ob is not None:
            _undeformed_positions(ob, cmesh)
        if keep and ob is not None and PROP in ob:
            cmesh.extras[convert.KEY] = _json_prop(ob)
            for prop, key in RECORD_PROPS:
                if isinstance(ob.get(prop), bytes):
                    cmesh.extras[key] = ob[prop]
        elif ob is not None and ob.data.materials and ob.data.materials[0] is not None:
            path = _json_prop(ob.data.materials[0]).get("path")
            cmesh.extras[convert.KEY] = {"materials": [path or f"materials/{ob.data.materials[0].name}.json"]}
    x = core_scene.extras.get(convert.KEY) or {}
    if metres_per_unit is None:
        metres_per_unit = float(x.get(convert.SCALE_KEY, convert.METRES_PER_UNIT))
    attachments = None
    if arm_ob is not None and core_scene.skeleton is not None:
        attachments = _attachments(arm_ob, core_scene.skeleton, metres_per_unit)
        # an additive layer's action is not a clip; bpy.data order is by name: put the file's clip order back
        actions = [a for a in baction.armature_actions(arm_ob) if ADDITIVE_OF_PROP not in a]
        actions.sort(key=lambda a: (0, _json_prop(a)["index"]) if isinstance(_json_prop(a).get("index"), int)
                     else (1, 0))
        for act in actions:
            anim, more = baction.read_action(context, arm_ob, act)
            warnings += more + _keys_between_samples(context, act)
            kept = _json_prop(act)
            if kept:
                anim.extras[convert.KEY] = kept
            core_scene.animations.append(anim)
    model, more = convert.from_scene(core_scene, wide=wide, metres_per_unit=metres_per_unit, keep=keep,
                                     fps=baction.fps_of(context.scene), attachments=attachments)
    return model, warnings + more


def export_wepuppet(context, path: str, units_per_metre: float | None = None, layout_format: str = "KEEP",
                    selected_only: bool = False, project_files: bool = False, written: list | None = None,
                    report: dict | None = None) -> list[str]:
    """Write the visible model to `path`: what File › Export and `convert --to wepuppet` (`export_target`) both
    run, with the options of the wepuppet spec (io_wepuppet/__init__.py). `units_per_metre`: image pixels per
    Blender metre written (None or 0: as the model was imported, else the default). `layout_format` "WIDE": MDLV0023
    with 80-byte vertices (unverified against Wallpaper Engine); "KEEP": the imported file's layout, else
    MDLV0013. `project_files`: also models/<name>.json, materials/<name>.tex and materials/<name>.json beside the
    folder of `path` (one material file per Blender material); `written` gets the paths of those files, `report`
    the model written ("model") and the pixel size of the first texture written ("image_size")."""
    units_per_metre = units_per_metre or None  # 0, the operator's start: as imported
    if units_per_metre is not None and not 0 < units_per_metre < float("inf"):
        raise ExportError(f"units per metre {units_per_metre} is not a positive number")
    wide = layout_format == "WIDE"
    metres_per_unit = None if units_per_metre is None else 1.0 / units_per_metre
    model, warnings = gather_model(context, wide, metres_per_unit, selected_only, keep=not wide)
    if not project_files:
        warnings += _images_not_written(context, selected_only)
    sources = _project_materials(context, path, model, selected_only) if project_files else {}
    data = convert.write_model(model)
    bscene.failure_point("write")
    write_atomic(path, data)
    if report is not None:
        report["model"] = model
    if project_files:
        warnings += write_project_files(context, path, model, sources, written, report)
    return warnings


def _images_not_written(context, selected_only: bool) -> list[str]:
    """A warning per material of the model whose image is not the texture it was imported with: a `.mdl`
    names its material file, and the image is written only with the project files."""
    meshes, _ = bscene.exportable_objects(context, selected_only)
    out = []
    for mat in dict.fromkeys(m for ob in meshes for m in ob.data.materials if m is not None):
        img = first_image([mat])
        if img is not None and not isinstance(img.get(TEX_PROP), bytes):
            out.append(f"material {mat.name}: image {img.name} not written (a .mdl names its material file): "
                       "export with Write project files to write it as the material's texture")
    return out


def _project_materials(context, path: str, model: mdl.Model, selected_only: bool = False) -> dict:
    """Point each mesh at the material file written beside it ({path: Blender material or None}): one per
    Blender material, so that per-mesh materials stay per mesh; a model with one material names it after the
    model, as before."""
    meshes, _ = bscene.exportable_objects(context, selected_only)
    by_path = {}
    for ob in meshes:
        for mat in ob.data.materials:
            if mat is not None:
                by_path.setdefault(_json_prop(mat).get("path") or f"materials/{mat.name}.json", mat)
    first = [m.materials[0] if m.materials else "" for m in model.meshes]
    distinct = list(dict.fromkeys(first))
    names = NameAllocator()
    renamed = {}
    for old in distinct:
        stem = _project_stem(path) if len(distinct) == 1 else \
            os.path.splitext(old.replace("\\", "/").split("/")[-1])[0]
        renamed[old] = f"materials/{names.take(stem or 'material')}.json"
    for mesh, old in zip(model.meshes, first):
        mesh.materials = [renamed[old]] + mesh.materials[1:] if mesh.materials else [renamed[old]]
    return {renamed[old]: by_path.get(old) for old in distinct}


def _project_stem(path: str) -> str:
    name = safe_file_name(os.path.splitext(os.path.basename(path))[0])
    return (name[:-len("_puppet")] if name.endswith("_puppet") else name) or "puppet"


def write_project_files(context, path: str, model: mdl.Model, sources: dict | None = None,
                        written: list | None = None, report: dict | None = None) -> list[str]:
    """models/<name>.json (autosize, material, puppet), and per material file the meshes name (`sources`:
    {materials/<stem>.json: Blender material}) materials/<stem>.json and materials/<stem>.tex, with the model
    written under models/ of the same project folder."""
    warnings = []
    written = [] if written is None else written
    folder = os.path.dirname(os.path.abspath(path))
    root = os.path.dirname(folder) if os.path.basename(folder) == "models" else folder
    name = safe_file_name(os.path.splitext(os.path.basename(path))[0])
    stem = _project_stem(path)
    if not sources:
        meshes, _ = bscene.exportable_objects(context)
        sources = {f"materials/{stem}.json": next((m for ob in meshes for m in ob.data.materials if m), None)}
    for material_file, mat in sources.items():
        mat_stem = os.path.splitext(os.path.basename(material_file))[0]
        img = first_image([mat])
        if img is not None:
            data, more = texture_bytes(img)
            warnings += more
            if report is not None:
                report.setdefault("image_size", (float(img.size[0]), float(img.size[1])))
            written.append(os.path.join(root, "materials", mat_stem + ".tex"))
            write_atomic(written[-1], data)
        else:
            warnings.append(f"no image on the exported material: materials/{mat_stem}.tex not written")
        written.append(os.path.join(root, "materials", mat_stem + ".json"))
        write_atomic(written[-1], json.dumps(material_doc(mat_stem), indent=1).encode("utf-8"))
    model_json = {"autosize": True, "material": next(iter(sources)),
                  "puppet": f"models/{name}.mdl" if model.skeleton is not None else None}
    if model_json["puppet"] is None:
        del model_json["puppet"]
    meshes, arm_ob = bscene.exportable_objects(context)
    holder = next((ob for ob in [arm_ob, *meshes] if ob is not None and MODEL_PROP in ob), None)
    if holder is not None:  # what the imported project's model JSON said (the crop offset)
        model_json.update(_json_prop(holder, MODEL_PROP).get("project") or {})
    written.append(os.path.join(root, "models", f"{stem}.json"))
    write_atomic(written[-1], json.dumps(model_json, indent="\t").encode("utf-8"))
    return warnings


def export_target(context, outdir: str, name: str, options=None) -> tuple[list[str], list[str]]:
    """`convert --to wepuppet`: OUTDIR/models/NAME_puppet.mdl with models/NAME.json, materials/NAME.json and
    materials/NAME.tex (with several materials: materials/<material>.json and .tex each), and OUTDIR/project.json
    and scene.json showing it. `options` (app/options.py ConvertOptions): the wepuppet spec's `units_per_metre`
    and `layout_format`, as the export operator passes them to `export_wepuppet`; None: their defaults (a
    project export with no project imported). The project files are always written."""
    stem = _project_stem(name)
    path = output_path(outdir, os.path.join("models", stem + "_puppet.mdl"))
    written = [path]
    report: dict = {}
    chosen = {} if options is None else {"units_per_metre": options.units_per_metre,
                                         "layout_format": options.layout_format}
    warnings = export_wepuppet(context, path, **chosen, project_files=True, written=written, report=report)
    written += write_converted_project(outdir, stem, os.path.basename(path), report)
    return written, warnings


def write_converted_project(outdir: str, stem: str, model_file: str, report: dict) -> list[str]:
    """OUTDIR/project.json and scene.json showing the model just written (`report` of `export_wepuppet`) as the
    one layer of a 1920 × 1080 scene, centred: a puppet as an image layer of its model JSON, sized as its texture
    (else its mesh), with one animation layer per clip (the first visible); a static model as a model layer."""
    model: mdl.Model = report["model"]
    centre = (960.0, 540.0, 0.0)
    if model.skeleton is None:
        layer = project_docs.model_layer_doc(1, stem, f"models/{model_file}", centre)
    else:
        clips = model.animations.clips if model.animations is not None else []
        anim = [project_docs.animation_layer_doc(2 + k, int(c.id), c.name, k == 0) for k, c in enumerate(clips)]
        size = report.get("image_size") or _mesh_size(model)
        layer = project_docs.puppet_layer_doc(1, stem, f"models/{stem}.json", centre, size, anim)
    project_bytes, scene_bytes = project_docs.converted_project(stem, layer)
    out = [output_path(outdir, project_docs.PROJECT_FILE), output_path(outdir, project_docs.SCENE_FILE)]
    write_atomic(out[0], project_bytes)
    write_atomic(out[1], scene_bytes)
    return out


def _mesh_size(model: mdl.Model) -> tuple[float, float]:
    """A puppet layer's size in pixels when it has no texture: twice its mesh's reach from the centre (puppet
    pixels are centred on the image)."""
    reach = max((np.abs(np.asarray(m.vertices["position"], np.float64)[:, :2]).max(axis=0) for m in model.meshes
                 if len(m.vertices)), key=lambda r: float(r.max()), default=np.array([50.0, 50.0]))
    return float(np.ceil(2 * reach[0])), float(np.ceil(2 * reach[1]))

