"""A QC project into Blender: every SMD / DMX / VTA it names in one scene (docs/source.md §7).

Layout: a collection named after the QC holding one collection per body ($body, $model), one per bodygroup
choice (all but the first hidden), one per LOD (hidden) and one for the collision model (hidden, drawn as
wire); each sequence becomes one action on the armature of the first body or bodygroup choice, its keys at the
sequence's fps (a sequence made of a reference SMD is its one-frame rest pose; a model without bones gets no
action, not even onto its collision model's rig; a DMX sequence's clips keep their own times in seconds, the
first named as the sequence).
A model file with the same bones as that armature and the same rest pose is bound to it (its own armature is
dropped); one of fewer bones keeps its own, so that its export names its own nodes as the file did.
Export (`export_target`): a scene this import made is written back as its project (`export_project`): the QC's
text, its model and sequence files under their own names, byte-identical while the scene says what they said.
Atomic: every file is read and checked first; a fault while building removes everything made.
Each file is read once and built once, however many times (and spellings) the QC names it: a later placement
of a model already built is a copy of its objects sharing their data (a body with a flex file is built anew,
since its shape keys belong to its mesh data).

It sits in the family package, above its parts, because it uses all three: the QC reader (`qc/`), below the
SMD and DMX parts that write QCs, and the SMD and DMX imports.
"""
from __future__ import annotations

import json
import os
import re

import bpy
import numpy as np

from ..blender import action as bact
from ..blender import scene as bscene
from ..core.errors import ExportError, FormatError
from ..core.fileio import read_bytes, write_atomic
from ..core.naming import NameAllocator, safe_file_name
from .dmx import blender_io as dmx_io
from .dmx import convert as dmx_convert
from .dmx import dmx
from .qc import qc
from .smd import blender_io as smd_io
from .smd import kept, smd

REST_TOLERANCE = 1e-4  # Blender units: bone heads and axes of two files' rest poses that count as one skeleton
# What an import keeps for the export (docs/source.md §7.3): on the QC's collection, the project (JSON: the QC's
# name, the sequences that became actions, every file it names), the bytes of the QC and its included files
# (by name relative to the QC's folder) and the body's armature; on each collection of a model file and on each
# action of a sequence, that file's name; on the action, its sequence's name
PROJECT_PROP = "qc_project"
TEXTS_PROP = "qc_texts"
ARMATURE_PROP = "qc_armature"
FILE_PROP = "qc_file"
FLEX_PROP = "qc_flex"
SEQUENCE_PROP = "qc_sequence"
REST_PROP = "qc_rest"  # an action made of a model file named as a sequence (its rest pose)


def _read_all(project: qc.QcProject) -> tuple[dict[str, object], dict[str, bytes | None]]:
    """Every file of the project parsed before anything is built, each real file once whatever names it, and
    each SMD's bytes (up to `kept.KEEP_LIMIT`: an export that makes the same records writes them again);
    FormatError naming the file on a fault."""
    out: dict[str, object] = {}
    sources: dict[str, bytes | None] = {}
    by_real: dict[str, tuple] = {}
    for path in project.files():
        real = os.path.realpath(path)
        if real not in by_real:
            try:
                data = read_bytes(path)
                is_dmx = path.lower().endswith(".dmx")
                by_real[real] = (dmx.read(data) if is_dmx else smd.read(data),
                                 None if is_dmx or len(data) > kept.KEEP_LIMIT else data)
            except FormatError as e:
                raise FormatError(f"{os.path.basename(path)} (named by {os.path.basename(project.path)}): {e}",
                                  e.offset, e.field) from None
        out[path], sources[path] = by_real[real]
    return out, sources


def _new_collection(name: str, parent, hidden: bool = False):
    coll = bpy.data.collections.new(name)
    parent.children.link(coll)
    coll.hide_viewport = hidden
    coll.hide_render = hidden
    return coll


def _layer_path(context) -> list[str]:
    """The names of the collections from the view layer's root down to its active layer collection."""
    target = context.view_layer.active_layer_collection
    stack = [(context.view_layer.layer_collection, [])]
    while stack:
        lc, names = stack.pop()
        if lc == target:
            return names
        stack += [(child, names + [child.name]) for child in lc.children]
    return []


def _activate(context, path: list[str]) -> None:
    """Make the layer collection at `path` (collection names below the view layer's root) the active one."""
    lc = context.view_layer.layer_collection
    for name in path:
        lc = lc.children[name]
    context.view_layer.active_layer_collection = lc


def _same_rest(main, other) -> bool:
    """The same bones with the same rest pose: a file with fewer bones (a one-bone collision model) keeps its own
    armature, so that its export names its own nodes only, as the file did."""
    if set(main.data.bones.keys()) != set(other.data.bones.keys()):
        return False
    for bone in other.data.bones:
        mine = main.data.bones.get(bone.name)
        if mine is None:
            return False
        a, b = np.array(mine.matrix_local), np.array(bone.matrix_local)
        if np.abs(a - b).max() > REST_TOLERANCE:
            return False
    return True


def _bind_to(main, objects: list) -> list:
    """Mesh objects of `objects` moved onto `main` where their own armature matches it; what is left over."""
    arms = [o for o in objects if o.type == "ARMATURE"]
    if main is None or len(arms) != 1 or not _same_rest(main, arms[0]):
        return objects
    own = arms[0]
    for ob in objects:
        if ob.type != "MESH":
            continue
        ob.parent = main
        for mod in ob.modifiers:
            if mod.type == "ARMATURE" and mod.object == own:
                mod.object = main
    data = own.data
    bpy.data.objects.remove(own)
    bpy.data.armatures.remove(data)
    return [o for o in objects if o != own]


def _copies(objects: list, coll, main) -> list:
    """Copies of one model file's objects as first placed, linked into `coll` and sharing their data; what
    they held on to (parent, armature modifier) is their copy, `main` stays (a model bound to it once is
    again)."""
    copies = {}
    for ob in objects:
        if ob != main:
            copies[ob] = ob.copy()
            coll.objects.link(copies[ob])
    for ob in copies.values():
        if ob.parent in copies:
            ob.parent = copies[ob.parent]
        for mod in ob.modifiers:
            if mod.type == "ARMATURE" and mod.object in copies:
                mod.object = copies[mod.object]
    return list(copies.values())


def _import_model(context, path: str, record, source, coll, main, layers: list[str]) -> tuple[list, list[str]]:
    """One model file into `coll` (at `layers`); (the objects made, warnings)."""
    _activate(context, layers + [coll.name])
    before = set(bpy.data.objects)
    name = smd_io.stem_of(path)
    if isinstance(record, dmx.DmxFile):
        scene, warnings = dmx_convert.to_scene(record, name)
        result = bscene.build_scene(context, scene, name, os.path.dirname(path))
        dmx_io.add_flex([o for o in result.objects if o.type == "MESH"], scene)
        warnings += result.warnings
    else:
        if record.kind != "model":
            raise FormatError(f"{os.path.basename(path)} is an SMD {record.kind}, named as a model", None, "kind")
        warnings = smd_io.import_reference(context, record, name, source)
    made = [o for o in bpy.data.objects if o not in before]
    for ob in made:  # the QC's files are parts of one model: not told apart as a file imported twice is
        ob.pop(smd_io.MODEL_PROP, None)
    return _bind_to(main, made), warnings


def _import_flex(context, path: str, record, source, mesh_ob) -> list[str]:
    if mesh_ob is None or not isinstance(record, smd.SmdFile) or record.kind != "flex":
        return [f"{os.path.basename(path)}: flex not read (a VTA onto an SMD model is)"]
    context.view_layer.objects.active = mesh_ob
    return smd_io.import_flex(context, record, smd_io.stem_of(path), source)


def _rel(project: qc.QcProject, path: str) -> str:
    """A file's name relative to the QC's folder, with forward slashes: where an export writes it again."""
    root = os.path.dirname(os.path.realpath(project.path))
    return os.path.relpath(os.path.realpath(path), root).replace(os.sep, "/")


def _models(context, project: qc.QcProject, records: dict, sources: dict, root, layers: list[str]
            ) -> tuple[object, list[str]]:
    """Bodies, bodygroups, LODs and the collision model; returns (the body's armature, warnings). Each file is
    built once: a placement of a file already built copies its objects. Each collection of a file holds its name
    (`FILE_PROP`) for the export. Only a body or bodygroup choice gives the model its armature: a LOD's or the
    collision model's own rig is theirs alone (a static prop's sequence is never put onto it)."""
    main, warnings = None, []
    built: dict[str, list] = {}  # real path: the objects of the file's first placement

    def place(path: str, coll, hidden_wire: bool = False, shared: bool = True, body: bool = False) -> list:
        nonlocal main
        real = os.path.realpath(path)
        if shared and real in built:
            made = _copies(built[real], coll, main)
        else:
            made, more = _import_model(context, path, records[path], sources[path], coll, main, layers)
            warnings.extend(more)
            if shared:
                built[real] = made
        if main is None and body:
            main = next((o for o in made if o.type == "ARMATURE"), None)
        for ob in made:
            if hidden_wire and ob.type == "MESH":
                ob.display_type = "WIRE"
        coll[FILE_PROP] = _rel(project, path)
        return made

    for body in project.bodies:
        coll = _new_collection(body.name, root)
        made = place(body.file, coll, shared=not body.flex_file, body=True)
        if body.flex_file:
            coll[FLEX_PROP] = _rel(project, body.flex_file)
            mesh_ob = next((o for o in made if o.type == "MESH"), None)
            warnings += _import_flex(context, body.flex_file, records[body.flex_file], sources[body.flex_file],
                                     mesh_ob)
    for group in project.body_groups:
        for k, choice in enumerate(group.choices):
            label = os.path.splitext(os.path.basename(choice))[0] if choice else "blank"
            coll = _new_collection(f"{group.name} {k}: {label}", root, hidden=k > 0)
            if choice:
                place(choice, coll, body=True)
    for k, lod in enumerate(project.lods):
        coll = _new_collection(f"LOD {k + 1} ({lod.threshold:g})", root, hidden=True)
        files: dict[str, str] = {}  # each file once in a LOD, however many lines name it
        for _, new in lod.replacements:
            files.setdefault(os.path.realpath(new), new)
        for new in files.values():  # several files: one collection each, so that each is written as it was
            place(new, coll if len(files) == 1 else _new_collection(smd_io.stem_of(new), coll))
    if project.collision is not None:
        place(project.collision.file, _new_collection("collision", root, hidden=True), hidden_wire=True)
    return main, warnings


def _model_files(project: qc.QcProject) -> list[str]:
    """The files the project places as models: bodies, bodygroup choices, LODs, the collision model."""
    out = [b.file for b in project.bodies] + [c for g in project.body_groups for c in g.choices if c]
    out += [new for lod in project.lods for _, new in lod.replacements]
    return out + ([project.collision.file] if project.collision else [])


def _sequences(context, project: qc.QcProject, records: dict, sources: dict, main) -> tuple[list[str], list]:
    """(warnings, the sequences that became actions): each action holds its sequence's name and file
    (`SEQUENCE_PROP`, `FILE_PROP`) for the export."""
    warnings, made = [], []
    models = {os.path.realpath(f) for f in _model_files(project)}
    for seq in project.sequences:
        if seq.animation:
            continue  # an $animation becomes an action through the sequences that use it
        path = seq.files[0]
        record = records[path]
        before = set(bpy.data.actions)
        if isinstance(record, dmx.DmxFile) and main is not None:  # its times are seconds: the QC's fps is not used
            warnings += dmx_io.import_clips(context, record, seq.name, main)
            _tag(project, seq.name, path, set(bpy.data.actions) - before, made)
            continue
        if not isinstance(record, smd.SmdFile) or record.kind == "flex":
            warnings.append(f"sequence {seq.name!r}: {os.path.basename(path)} is not an SMD animation; not read")
            continue
        if main is None:  # a static prop's sequence is its reference's rest pose: there are no bones to key
            warnings.append(f"sequence {seq.name!r}: the model has no bones (a plain mesh): no action")
            continue
        if len(seq.files) > 1:
            warnings.append(f"sequence {seq.name!r}: {len(seq.files)} files (a blend); the first one is read")
        warnings += smd_io.import_motion(context, record, seq.name, main, seq.fps, sources[path])
        _tag(project, seq.name, path, set(bpy.data.actions) - before, made)
        for act in set(bpy.data.actions) - before:
            if os.path.realpath(path) in models:  # a model file's rest pose: written as the model, never over it
                act[REST_PROP] = True
    return warnings, made


def _tag(project: qc.QcProject, name: str, path: str, actions: set, made: list[str]) -> None:
    """The actions one sequence made hold its name and file; `made` gets the name."""
    for act in actions:
        act[SEQUENCE_PROP] = name
        act[FILE_PROP] = _rel(project, path)
    if actions:
        made.append(name)


def _texts(project: qc.QcProject) -> dict[str, bytes]:
    """The QC's bytes and those of each file it includes, by name relative to the QC's folder."""
    out = {os.path.basename(project.path): read_bytes(project.path)}
    for path in project.includes:
        out.setdefault(_rel(project, path), read_bytes(path))
    return out


def blender_import(context, path: str, options=None) -> list[str]:
    """The registry's `blender_import` of a .qc; returns warnings."""
    project = qc.read(path)
    records, sources = _read_all(project)
    texts = _texts(project)
    before = bscene.snapshot_ids()
    active = context.view_layer.active_layer_collection
    try:
        layers = _layer_path(context)
        root = _new_collection(os.path.splitext(os.path.basename(path))[0],
                               context.view_layer.active_layer_collection.collection)
        main, warnings = _models(context, project, records, sources, root, layers + [root.name])
        more, actions = _sequences(context, project, records, sources, main)
        warnings += more
        fps = {s.name: s.fps for s in project.sequences}
        root[PROJECT_PROP] = json.dumps({"qc": os.path.basename(path), "actions": [[a, fps[a]] for a in actions],
                                         "files": [_rel(project, f) for f in project.files()]})
        root[TEXTS_PROP] = texts
        if main is not None:
            root[ARMATURE_PROP] = main
    except BaseException:
        bscene.remove_new(before)
        raise
    finally:
        try:
            context.view_layer.active_layer_collection = active
        except ReferenceError:
            pass
    return project.warnings + warnings


# -- export ----------------------------------------------------------------------------------------------

def _project_roots(context) -> list:
    return [c for c in context.scene.collection.children_recursive if c.get(PROJECT_PROP)]


def project_of(context) -> tuple[object, list[str]]:
    """(the QC collection an export writes, warnings): the one holding the meshes (or the armature) an SMD export
    takes; None when they belong to no imported QC. ExportError when they belong to several."""
    roots = _project_roots(context)
    if not roots:
        return None, []
    meshes, arm = smd_io.export_objects(context)
    taken = meshes + ([arm] if arm is not None else [])
    held = [r for r in roots if any(ob.name in r.all_objects for ob in taken)]
    if not held:
        return None, []
    if len(held) > 1:
        count, names = len(held), ", ".join(r.name for r in held)
        raise ExportError(f"the meshes to export belong to {count} QC projects ({names}): export one collection, "
                          "or hide the others")
    outside = [ob.name for ob in meshes if ob.name not in held[0].all_objects]
    warnings = [f"{', '.join(outside[:10])}: outside the collection of {held[0].name}.qc, not written (move a mesh "
                "into the collection of the file it belongs to)"] if outside else []
    return held[0], warnings


def _check_name(rel: str) -> None:
    """ExportError for a kept file name (relative to the QC's folder) that would leave the output folder (a
    .blend's property edited by hand)."""
    if not rel or os.path.isabs(rel) or re.match(r"^[A-Za-z]:", rel) or ".." in rel.split("/") or "\\" in rel:
        raise ExportError(f"{rel!r}: a file of the QC project named outside its folder; nothing written")


def _out_path(outdir: str, rel: str) -> str:
    """Where the file `rel` (a name relative to the QC's folder, as the import kept it) goes."""
    _check_name(rel)
    path = os.path.join(outdir, *rel.split("/"))
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    return path


def _export_models(context, root, outdir: str, options) -> tuple[list[str], list[str], set[str]]:
    """Each model file of the project from the objects of its collection (the file's own bytes while they say
    the same, smd/kept.py); (written paths, warnings, the names written)."""
    written, warnings, done = [], [], set()
    for coll in root.children_recursive:
        rel = coll.get(FILE_PROP)
        if not isinstance(rel, str) or rel in done or not any(o.type == "MESH" for o in coll.all_objects):
            continue
        if rel.lower().endswith(".dmx"):
            warnings.append(f"{rel}: a DMX model of the QC is not written again by an SMD export")
            continue
        flex = coll.get(FLEX_PROP) if options.flex else None
        path = _out_path(outdir, rel)
        vta = _out_path(outdir, flex) if isinstance(flex, str) else None
        more = [path]
        with bscene.export_scope(coll.name):
            warnings += smd_io.export_reference(context, path, vta, options.flavour, more)
        written += more
        done.add(rel)
        if vta in more:
            done.add(flex)
    return written, warnings, done


def _free_name(stem: str, taken: set[str]) -> str:
    names = NameAllocator()
    names.used = {t.lower() for t in taken}
    return names.take(stem, ".smd") + ".smd"


def _export_sequences(context, root, data: dict, outdir: str, done: set[str], options
                      ) -> tuple[list[str], list[str], dict]:
    """Each action of the body's armature as its sequence's file (a new action as <action>.smd); (written paths,
    warnings, the QC edits: renamed, rates, removed, added)."""
    arm = root.get(ARMATURE_PROP)
    imported = dict(data["actions"])  # sequence name: its fps
    renamed, rates, added, present = {}, {}, [], set()
    written, warnings = [], []
    actions = bact.armature_actions(arm) if arm is not None else []
    if not options.animations:
        return written, warnings + ["Animations is off: the QC's sequences name files not written"] * bool(actions), \
            {"renamed": renamed, "rates": rates, "removed": set(), "added": added}
    for act in actions:
        seq, rel = act.get(SEQUENCE_PROP), act.get(FILE_PROP)
        if seq in imported and isinstance(rel, str) and rel.lower().endswith(".dmx"):
            present.add(seq)  # its clips: the DMX is not written again by an SMD export (a warning says so)
            continue
        if seq not in imported or seq in present or not isinstance(rel, str):  # new, or a copy of one imported
            seq, rel = None, _free_name(act.name, done | set(data["files"]))
        else:
            present.add(seq)
            if act.get(REST_PROP) or rel in done:  # a model's rest pose: the model's file is it
                continue
        path = _out_path(outdir, rel)
        sequences = []
        with bscene.export_scope(arm.users_collection[0].name if arm.users_collection else None):
            more_written, more = smd_io.export_animations(
                context, outdir, arm, actions=[act], sequences=sequences,
                at={act.name: (path, imported.get(seq, bact.fps_of(context.scene)))})
        written += more_written
        warnings += more
        done.add(rel)
        rate = sequences[0][2]
        if seq is None:
            added.append(qc.sequence_text(act.name, rel, rate))
            continue
        if act.name != seq:
            renamed[seq] = act.name
        if abs(rate - imported[seq]) > 1e-9:
            rates[seq] = rate
    return written, warnings, {"renamed": renamed, "rates": rates, "removed": set(imported) - present,
                               "added": added}


def export_project(context, root, outdir: str, name: str, options) -> tuple[list[str], list[str]]:
    """The QC project `root` was imported from, written back whole into `outdir` as <name>.qc: every command as
    its text gave it (comments and layout too), its included files as they were, each model file and sequence
    file under the name the QC gives it, made from the scene (the file's own bytes while the scene says what it
    said). Changed only where the scene changed: a renamed action renames its sequence, a new action adds one, a
    deleted one removes it, a sequence written at another rate gets that fps."""
    data = json.loads(root[PROJECT_PROP])
    texts = {rel: bytes(v) for rel, v in root[TEXTS_PROP].items()}
    held = [c.get(p) for c in root.children_recursive for p in (FILE_PROP, FLEX_PROP)]
    for rel in [t for t in texts if t != data["qc"]] + held + [a.get(FILE_PROP) for a in bpy.data.actions]:
        if isinstance(rel, str):
            _check_name(rel)  # every name before the first file is written
    written, warnings, done = _export_models(context, root, outdir, options)
    more_written, more, edits = _export_sequences(context, root, data, outdir, done, options)
    written += more_written
    warnings += more
    missing = [f for f in data["files"] if f not in done]
    if missing:
        warnings.append(f"{len(missing)} file(s) the QC names not written (the scene holds nothing made of them): "
                        + ", ".join(missing[:10]))
    for rel, raw in texts.items():  # the QC, then its included files
        main = rel == data["qc"]
        text = raw.decode("utf-8", "surrogateescape")
        text = qc.edit_sequences(text, rel, edits["renamed"], edits["rates"], edits["removed"],
                                 edits["added"] if main else ())
        path = _out_path(outdir, safe_file_name(name) + ".qc" if main else rel)
        write_atomic(path, text.encode("utf-8", "surrogateescape"))
        written.append(path)
    return written, warnings


def export_target(context, outdir: str, name: str, options) -> tuple[list[str], list[str]]:
    """`convert --to smd` and File › Export Valve SMD: a scene imported from a QC (with the QC option on) is
    written back as that project (`export_project`); any other as `smd_io.export_target` writes it."""
    root, warnings = project_of(context) if options.write_qc else (None, [])
    if root is None:
        return smd_io.export_target(context, outdir, name, options)
    written, more = export_project(context, root, outdir, name, options)
    return written, warnings + more
