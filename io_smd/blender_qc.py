"""A QC project into Blender: every SMD / DMX / VTA it names in one scene (docs/source.md §7).

Layout: a collection named after the QC holding one collection per body ($body, $model), one per bodygroup
choice (all but the first hidden), one per LOD (hidden) and one for the collision model (hidden, drawn as
wire); each sequence becomes one action on the first body's armature, its keys at the sequence's fps (a
sequence made of a reference SMD is its one-frame rest pose; a model without bones gets no action; a DMX
sequence's clips keep their own times in seconds, the first named as the sequence).
A model file whose bones all exist in that armature with the same rest pose is bound to it (its own armature
is dropped), as Blender Source Tools appends bones to the armature already there.
Atomic: every file is read and checked first; a fault while building removes everything made.
Each file is read once and built once, however many times (and spellings) the QC names it: a later placement
of a model already built is a copy of its objects sharing their data (a body with a flex file is built anew,
since its shape keys belong to its mesh data).

It sits in the family package, above its parts, because it uses all three: the QC reader (`qc/`), below the
SMD and DMX parts that write QCs, and the SMD and DMX imports.
"""
from __future__ import annotations

import os

import bpy
import numpy as np

from ..blender import scene as bscene
from ..core.errors import FormatError
from ..core.fileio import read_bytes
from .dmx import blender_io as dmx_io
from .dmx import convert as dmx_convert
from .dmx import dmx
from .qc import qc
from .smd import blender_io as smd_io
from .smd import smd

REST_TOLERANCE = 1e-4  # Blender units: bone heads and axes of two files' rest poses that count as one skeleton


def _read_all(project: qc.QcProject) -> dict[str, object]:
    """Every file of the project parsed before anything is built, each real file once whatever names it;
    FormatError naming the file on a fault."""
    out: dict[str, object] = {}
    by_real: dict[str, object] = {}
    for path in project.files():
        real = os.path.realpath(path)
        if real not in by_real:
            try:
                data = read_bytes(path)
                by_real[real] = dmx.read(data) if path.lower().endswith(".dmx") else smd.read(data)
            except FormatError as e:
                raise FormatError(f"{os.path.basename(path)} (named by {os.path.basename(project.path)}): {e}",
                                  e.offset, e.field) from None
        out[path] = by_real[real]
    return out


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


def _import_model(context, path: str, record, coll, main, layers: list[str]) -> tuple[list, list[str]]:
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
        warnings = smd_io.import_reference(context, record, name)
    made = [o for o in bpy.data.objects if o not in before]
    for ob in made:  # the QC's files are parts of one model: not told apart as a file imported twice is
        ob.pop(smd_io.MODEL_PROP, None)
    return _bind_to(main, made), warnings


def _import_flex(context, path: str, record, mesh_ob) -> list[str]:
    if mesh_ob is None or not isinstance(record, smd.SmdFile) or record.kind != "flex":
        return [f"{os.path.basename(path)}: flex not read (a VTA onto an SMD model is)"]
    context.view_layer.objects.active = mesh_ob
    return smd_io.import_flex(context, record, smd_io.stem_of(path))


def _models(context, project: qc.QcProject, records: dict, root, layers: list[str]) -> tuple[object, list[str]]:
    """Bodies, bodygroups, LODs and the collision model; returns (the first armature, warnings). Each file is
    built once: a placement of a file already built copies its objects."""
    main, warnings = None, []
    built: dict[str, list] = {}  # real path: the objects of the file's first placement

    def place(path: str, coll, hidden_wire: bool = False, shared: bool = True) -> list:
        nonlocal main
        real = os.path.realpath(path)
        if shared and real in built:
            made = _copies(built[real], coll, main)
        else:
            made, more = _import_model(context, path, records[path], coll, main, layers)
            warnings.extend(more)
            if shared:
                built[real] = made
        if main is None:
            main = next((o for o in made if o.type == "ARMATURE"), None)
        for ob in made:
            if hidden_wire and ob.type == "MESH":
                ob.display_type = "WIRE"
        return made

    for body in project.bodies:
        made = place(body.file, _new_collection(body.name, root), shared=not body.flex_file)
        if body.flex_file:
            mesh_ob = next((o for o in made if o.type == "MESH"), None)
            warnings += _import_flex(context, body.flex_file, records[body.flex_file], mesh_ob)
    for group in project.body_groups:
        for k, choice in enumerate(group.choices):
            label = os.path.splitext(os.path.basename(choice))[0] if choice else "blank"
            coll = _new_collection(f"{group.name} {k}: {label}", root, hidden=k > 0)
            if choice:
                place(choice, coll)
    for k, lod in enumerate(project.lods):
        coll = _new_collection(f"LOD {k + 1} ({lod.threshold:g})", root, hidden=True)
        files: dict[str, str] = {}  # each file once in a LOD, however many lines name it
        for _, new in lod.replacements:
            files.setdefault(os.path.realpath(new), new)
        for new in files.values():
            place(new, coll)
    if project.collision is not None:
        place(project.collision.file, _new_collection("collision", root, hidden=True), hidden_wire=True)
    return main, warnings


def _sequences(context, project: qc.QcProject, records: dict, main) -> list[str]:
    warnings = []
    for seq in project.sequences:
        if seq.animation:
            continue  # an $animation becomes an action through the sequences that use it
        path = seq.files[0]
        record = records[path]
        if isinstance(record, dmx.DmxFile) and main is not None:  # its times are seconds: the QC's fps is not used
            warnings += dmx_io.import_clips(context, record, seq.name, main)
            continue
        if not isinstance(record, smd.SmdFile) or record.kind == "flex":
            warnings.append(f"sequence {seq.name!r}: {os.path.basename(path)} is not an SMD animation; not read")
            continue
        if main is None:  # a static prop's sequence is its reference's rest pose: there are no bones to key
            warnings.append(f"sequence {seq.name!r}: the model has no bones (a plain mesh): no action")
            continue
        if len(seq.files) > 1:
            warnings.append(f"sequence {seq.name!r}: {len(seq.files)} files (a blend); the first one is read")
        warnings += smd_io.import_motion(context, record, seq.name, main, seq.fps)
    return warnings


def blender_import(context, path: str, options=None) -> list[str]:
    """The registry's `blender_import` of a .qc; returns warnings."""
    project = qc.read(path)
    records = _read_all(project)
    before = bscene.snapshot_ids()
    active = context.view_layer.active_layer_collection
    try:
        layers = _layer_path(context)
        root = _new_collection(os.path.splitext(os.path.basename(path))[0],
                               context.view_layer.active_layer_collection.collection)
        main, warnings = _models(context, project, records, root, layers + [root.name])
        warnings += _sequences(context, project, records, main)
    except BaseException:
        bscene.remove_new(before)
        raise
    finally:
        try:
            context.view_layer.active_layer_collection = active
        except ReferenceError:
            pass
    return project.warnings + warnings
