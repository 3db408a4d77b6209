"""The edits of `bench/edits` and what counts as each one in the written file.

`EDITS` names the kinds of edit a user makes in Blender; `apply(kind)` makes one in the current scene with bpy
as the UI would (Edit Mode for meshes and rest poses, the action's keys as the Graph Editor keeps them) and
returns what it touched (a `Touched`) or the reason it does not apply. `classify(kind, touched, result)` reads
the `skinbridge diff` of the file before and after (core/diff.py) and says whether only the edit changed.

What counts as the edit: the edited element and the data derived from it (the bounding box, normals and
tangents of a few vertices around a moved one, the counts, sizes and offsets that follow a size change, the
keys of the edited channel's bone around an edited key). The rules read the record and field names the codecs
give (docs/testing.md §6); they are generic, so a family whose records are named otherwise shows
as "something else changed" with the field named — the table is where such rules are refined.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

ONLY, REFUSED, OTHER, LOST, NA = "only the edit", "refused", "something else changed", "lost", "n/a"
CLASSES = (ONLY, REFUSED, OTHER, LOST, NA)

# the control first: the unchanged scene exported (what every edit is measured against)
EDITS = ("unchanged", "move-vertex", "move-bone-rest", "key-add", "key-move", "key-delete", "key-after-end",
         "rename-bone", "add-shape-key", "material-image", "delete-faces", "add-mesh", "duplicate-model",
         "delete-object")
MODEL_EDITS = frozenset(("move-vertex", "add-shape-key", "material-image", "delete-faces", "add-mesh",
                         "delete-object"))  # what a motion file does not hold: n/a for a motion
NEAR_VERTICES = 64  # normals/tangents that may follow one moved vertex (the vertices of the faces around it)


@dataclass
class Touched:
    what: str = ""                      # said in the row: "vertex 3 of Box", "bone Hips"
    names: list[str] = field(default_factory=list)  # names the edit put in or took out (bone, image, mesh)


class NotApplicable(Exception):
    """The edit does not apply to this scene (no bones, no keys, no image)."""


# ---------------------------------------------------------------------------------------------------------
# the edits, with bpy

def _bpy():
    import bpy  # loaded by the worker only: the classification below runs without Blender

    return bpy


def _meshes():
    return [o for o in _bpy().context.scene.objects if o.type == "MESH" and len(o.data.vertices)]


def _armatures():
    return [o for o in _bpy().context.scene.objects if o.type == "ARMATURE" and len(o.data.bones)]


def _activate(obj, mode: str) -> None:
    bpy = _bpy()
    if bpy.context.object is not None and bpy.context.object.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    obj.hide_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode=mode)


def _size(obj) -> float:
    return max(max(obj.dimensions), 1e-3)


def _move_vertex() -> Touched:
    """One vertex of the first face of the first mesh, moved in Edit Mode (shape keys relative to the basis
    follow, as in the UI)."""
    import bmesh  # Blender's module: the worker's only

    obj = next(iter(_meshes()), None)
    if obj is None:
        raise NotApplicable("no mesh")
    i = obj.data.polygons[0].vertices[0] if len(obj.data.polygons) else 0
    d = 0.05 * _size(obj)
    _activate(obj, "EDIT")
    bm = bmesh.from_edit_mesh(obj.data)
    bm.verts.ensure_lookup_table()
    bm.verts[i].co.x += d
    bm.verts[i].co.y += d / 2
    bm.verts[i].co.z += d / 4
    bmesh.update_edit_mesh(obj.data)
    _bpy().ops.object.mode_set(mode="OBJECT")
    return Touched(f"vertex {i} of {obj.name}", [obj.name])  # a warning naming the object says why it is not written


def _bone():
    """The armature and the bone to edit: the first child bone whose location the action animates (a motion file
    holds the bones it keys, and a rest moved shows where it keys a position; a channel held at one value may be
    one the file does not hold), else the first child bone it keys, else the first bone it keys, else the first
    child bone."""
    arm = next(iter(_armatures()), None)
    if arm is None:
        raise NotApplicable("no bones")
    curves = _fcurves(arm)
    if arm.animation_data is not None and arm.animation_data.action is not None and not any(
            _bone_of(fc.data_path) for fc in curves):  # a motion made for another rig: nothing of it to edit
        raise NotApplicable("the motion keys none of the armature's bones")
    moving = {b for fc in curves if fc.data_path.endswith(".location") and _varies(fc) for b in _bone_of(fc.data_path)}
    keyed = {b for fc in curves for b in _bone_of(fc.data_path)}
    children = [b for b in arm.data.bones if b.parent is not None]
    bone = next((b for b in children if b.name in moving),
                next((b for b in children if b.name in keyed),
                     next((b for b in arm.data.bones if b.name in keyed),
                          children[0] if children else arm.data.bones[0])))
    return arm, bone.name


def _varies(fc) -> bool:
    values = [k.co.y for k in fc.keyframe_points]
    return bool(values) and max(values) - min(values) > 1e-6


def _move_bone_rest() -> Touched:
    arm, name = _bone()
    d = 0.1 * max(arm.data.bones[name].length, 1e-3)
    _activate(arm, "EDIT")
    eb = arm.data.edit_bones[name]
    eb.head.x += d
    eb.tail.x += d
    _bpy().ops.object.mode_set(mode="OBJECT")
    # the bones below it follow: a connected child's head moves with its tail, and a local rest is its parent's
    below = [b.name for b in arm.data.bones[name].children_recursive]
    return Touched(f"rest of bone {name}", [name] + below)


def _rename_bone() -> Touched:
    arm, name = _bone()
    arm.data.bones[name].name = name + "_renamed"  # vertex groups and animation channels follow, as in the UI
    return Touched(f"bone {name}", [name, name + "_renamed"])


def _fcurves(obj):
    from bpy_extras import anim_utils  # the action's channels: Blender's own helper (slots, layers)

    ad = obj.animation_data
    if ad is None or ad.action is None:
        return []
    slot = getattr(ad, "action_slot", None)
    if slot is None:
        return list(getattr(ad.action, "fcurves", []))
    bag = anim_utils.action_get_channelbag_for_slot(ad.action, slot)
    return list(bag.fcurves) if bag is not None else []


def _channel(least: int = 3):
    """(object, F-curve) of the first animated bone channel with at least `least` keys."""
    for obj in list(_armatures()) + [o for o in _bpy().context.scene.objects if o.type != "ARMATURE"]:
        for fc in _fcurves(obj):
            if len(fc.keyframe_points) >= least:
                return obj, fc
    raise NotApplicable("no animation with keys")


def _bone_of(path: str) -> list[str]:
    found = re.search(r'pose\.bones\["(.+?)"\]', path)
    return [found.group(1).replace('\\"', '"')] if found else []


def _key_value(fc, frame: float, by: float) -> None:
    """A key at `frame` of channel `fc` (Insert Keyframe on a changed value)."""
    fc.keyframe_points.insert(frame, fc.evaluate(frame) + by)
    fc.update()


def _key_add() -> Touched:
    obj, fc = _channel(2)
    frames = [k.co.x for k in fc.keyframe_points]
    gaps = [(b - a, a) for a, b in zip(frames, frames[1:]) if b - a >= 2]
    if not gaps:  # every frame keyed: a key on a bone's channel that has none (Insert Keyframe in the UI)
        return _key_new_channel(obj, (frames[0] + frames[-1]) // 2)
    width, start = max(gaps)
    frame = float(int(start + width // 2))
    _key_value(fc, frame, 0.1)
    return Touched(f"key at {frame:g} of {fc.data_path}[{fc.array_index}]", _bone_of(fc.data_path))


def _key_new_channel(obj, frame: float) -> Touched:
    keyed = {fc.data_path for fc in _fcurves(obj)}
    for pb in getattr(obj.pose, "bones", []):
        for prop in ("location", "scale"):
            path = f'pose.bones["{pb.name}"].{prop}'
            if path not in keyed:
                getattr(pb, prop)[0] += 0.1
                pb.keyframe_insert(prop, index=0, frame=frame)
                return Touched(f"key at {frame:g} of {path}[0] (a channel without keys)", [pb.name])
    raise NotApplicable("every frame of every channel keyed")


def _key_move() -> Touched:
    """A middle key's value moved (the Graph Editor's G on Y: its handles move with it)."""
    obj, fc = _channel(3)
    k = fc.keyframe_points[len(fc.keyframe_points) // 2]
    for p in (k.co, k.handle_left, k.handle_right):
        p.y += 0.1
    fc.update()
    return Touched(f"key at {k.co.x:g} of {fc.data_path}[{fc.array_index}]", _bone_of(fc.data_path))


def _key_delete() -> Touched:
    """A key whose removal changes its curve (its value is not its neighbours' straight line: deleting a key of a
    constant or straight channel changes nothing a file could show, so without such a key the edit is n/a)."""
    obj, fc = _channel(3)
    for ob in [obj] + [o for o in list(_armatures()) + list(_meshes()) if o is not obj]:
        found = next(((c, c.keyframe_points[i]) for c in _fcurves(ob) if len(c.keyframe_points) >= 3
                      for i in range(1, len(c.keyframe_points) - 1) if _bends(c.keyframe_points, i)), None)
        if found:
            fc, k = found
            break
    else:
        raise NotApplicable("no key whose removal changes its curve (every channel constant or straight)")
    frame = k.co.x
    fc.keyframe_points.remove(k)
    fc.update()
    return Touched(f"key at {frame:g} of {fc.data_path}[{fc.array_index}]", _bone_of(fc.data_path))


def _bends(keys, i: int, by: float = 1e-3) -> bool:
    """Key `i` lies off the straight line between its neighbours by more than `by`."""
    (x0, y0), (x, y), (x1, y1) = keys[i - 1].co, keys[i].co, keys[i + 1].co
    return x1 > x0 and abs(y - (y0 + (y1 - y0) * (x - x0) / (x1 - x0))) > by


def _key_after_end() -> Touched:
    obj, fc = _channel(1)
    action = obj.animation_data.action
    frame = float(int(max(action.frame_range[1], fc.keyframe_points[-1].co.x)) + 10)
    _key_value(fc, frame, 0.1)
    return Touched(f"key at {frame:g} of {fc.data_path}[{fc.array_index}]", _bone_of(fc.data_path))


def _add_shape_key() -> Touched:
    obj = next(iter(_meshes()), None)
    if obj is None:
        raise NotApplicable("no mesh")
    if obj.data.shape_keys is None:
        obj.shape_key_add(name="Basis", from_mix=False)
    key = obj.shape_key_add(name="Edited", from_mix=False)
    i = obj.data.polygons[0].vertices[0] if len(obj.data.polygons) else 0
    key.data[i].co.x += 0.05 * _size(obj)
    return Touched(f"shape key Edited on {obj.name}", ["Edited"])


def _material_image() -> Touched:
    bpy = _bpy()
    for mat in bpy.data.materials:
        if not mat.use_nodes or mat.node_tree is None:
            continue
        node = next((n for n in mat.node_tree.nodes if n.type == "TEX_IMAGE" and n.image is not None), None)
        if node is None:
            continue
        old = node.image
        new = bpy.data.images.new("edited_image", 4, 4)
        new.filepath_raw = "//edited_image.png"
        new.file_format = "PNG"
        node.image = new
        return Touched(f"image {old.name} of {mat.name}", [old.name, "edited_image"])
    raise NotApplicable("no image in the materials")


def _delete_faces() -> Touched:
    obj = next((o for o in _meshes() if len(o.data.polygons) >= 2), None)
    if obj is None:
        raise NotApplicable("no mesh of two faces")
    import bmesh  # Blender's own module: the worker's Blender is running by now

    bpy = _bpy()
    _activate(obj, "EDIT")  # face 0 selected in Edit Mode (writing the mesh's selection crashed Blender 5.0)
    bpy.ops.mesh.select_mode(type="FACE")
    bpy.ops.mesh.select_all(action="DESELECT")
    bm = bmesh.from_edit_mesh(obj.data)
    bm.faces.ensure_lookup_table()
    bm.faces[0].select_set(True)
    bmesh.update_edit_mesh(obj.data)
    bpy.ops.mesh.delete(type="FACE")
    bpy.ops.object.mode_set(mode="OBJECT")
    return Touched(f"face 0 of {obj.name}", [obj.name])


def _add_mesh() -> Touched:
    bpy = _bpy()
    if not any(o.type in ("MESH", "ARMATURE") for o in bpy.data.objects):  # a flex controllers DMX: a cube
        raise NotApplicable("the import made no model to add a mesh to")  # alone is a new file, no edit of it
    size = max((_size(o) for o in _meshes()), default=1.0)
    if bpy.context.object is not None and bpy.context.object.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    bpy.ops.mesh.primitive_cube_add(size=0.2 * size, location=(size, 0, 0))
    bpy.context.object.name = "AddedCube"
    return Touched("a cube", ["AddedCube"])


def _delete_object() -> Touched:
    meshes = _meshes()
    if len(meshes) < 2:
        raise NotApplicable("one mesh object")
    obj = meshes[-1]
    name = obj.name
    _bpy().data.objects.remove(obj)
    return Touched(f"object {name}", [name])


EDIT_FUNCTIONS = {"move-vertex": _move_vertex, "move-bone-rest": _move_bone_rest, "key-add": _key_add,
                  "key-move": _key_move, "key-delete": _key_delete, "key-after-end": _key_after_end,
                  "rename-bone": _rename_bone, "add-shape-key": _add_shape_key, "material-image": _material_image,
                  "delete-faces": _delete_faces, "add-mesh": _add_mesh, "delete-object": _delete_object}


def apply(kind: str) -> Touched:
    """Makes the edit `kind` in the current scene ("unchanged" and "duplicate-model" touch nothing here: the
    caller imports twice for the latter). Raises NotApplicable."""
    if kind in ("unchanged", "duplicate-model"):
        return Touched()
    return EDIT_FUNCTIONS[kind]()


# ---------------------------------------------------------------------------------------------------------
# what counts as the edit

def _words(*parts: str) -> re.Pattern:
    return re.compile("|".join(parts), re.IGNORECASE)


SIZES = _words(r"count$", r"(^|[._])n_", r"num", r"size", r"offset", r"length", r"len$", r"^count", r"bytes$",
               r"start", r"stride", r"total", r"pointer", r"ref$", r"index_start", r"range")
POSITION = _words(r"position", r"\bpos", r"^co$", r"vertices", r"verts", r"\.co$", r"xyz", r"coord")
DERIVED_VERTEX = _words(r"normal", r"tangent", r"binormal", r"bitangent")
BOUNDS = _words(r"bbox", r"bound", r"aabb", r"min", r"max", r"radius", r"center", r"centre", r"sphere", r"extent")
BONES = _words(r"bone", r"joint", r"node", r"skeleton", r"bind", r"inverse", r"transform", r"matri", r"rest",
               r"pose", r"frame", r"skin")
ANIMATION = _words(r"anim", r"track", r"key", r"frame", r"curve", r"motion", r"channel", r"clip", r"sequence",
                   r"duration", r"time", r"length", r"fps", r"sample")
SHAPES = _words(r"morph", r"shape", r"flex", r"blend", r"delta", r"vta", r"target")
CLIP_LENGTH = re.compile(r"\((duration|length)\)$")  # a record that is a named attribute: a DMX time frame's
REST_FIELD = _words(r"\(position\)", r"\(orientation\)")  # a DMX transform's attributes, by their name
MATERIAL = _words(r"texture", r"image", r"material", r"tex", r"map", r"diffuse", r"file", r"path", r"shader")
MESH = _words(r"vert", r"index", r"indices", r"face", r"triangle", r"tri", r"geometr", r"mesh", r"primitive",
              r"part", r"lod", r"buffer", r"poly", r"strip", r"section", r"group", r"model", r"object", r"weight",
              r"uv", r"normal", r"tangent", r"color", r"element")


def _text(value) -> str:
    if isinstance(value, (bytes, bytearray)):
        for enc in ("utf-8", "cp932", "latin-1"):
            try:
                return bytes(value).decode(enc)
            except UnicodeDecodeError:
                continue
    return str(value)


def _mentions(d, names: list[str]) -> bool:
    where = f"{d.record} {d.field} {_text(d.value_a)[:400]} {_text(d.value_b)[:400]}"
    return any(n and n in where for n in names)


def _sizes(d) -> bool:
    return d.field == "count" or bool(SIZES.search(d.field.rsplit(".", 1)[-1]))


def _grew(d) -> bool:
    try:
        return int(d.value_b) > int(d.value_a)
    except (TypeError, ValueError):
        return False


def _where(d) -> str:
    return f"{d.record}.{d.field}"


def _rules(kind: str, t: Touched, motion: bool = False):
    """(counts as the edit itself, counts as derived from it) for one kind: predicates on a Difference.
    `motion`: the file is a motion (it holds keys, no rest)."""
    def named(d) -> bool:
        return _mentions(d, t.names)

    if kind == "move-vertex":
        return (lambda d: bool(POSITION.search(_where(d))),
                lambda d: bool(DERIVED_VERTEX.search(_where(d)) or BOUNDS.search(_where(d))))
    if kind == "move-bone-rest":
        # a motion file holds no rest: the moved bone's keys (which hold its transform) are the edit there; a
        # record named after the bone whose field is a position or orientation is its rest (a DMX DmeTransform
        # is named as its bone, its record says neither "bone" nor "transform")
        return (lambda d: named(d) and bool(BONES.search(_where(d)) or motion and ANIMATION.search(_where(d))
                                            or REST_FIELD.search(_where(d))),
                lambda d: bool(BONES.search(_where(d))) or (named(d) and bool(ANIMATION.search(_where(d))))
                or bool(BOUNDS.search(_where(d))))
    if kind == "rename-bone":
        return (lambda d: _mentions(d, t.names[1:]) or _cut_name(d, t.names),
                lambda d: named(d) or _sizes(d) or "hash" in d.field.lower())
    if kind.startswith("key-"):
        # a key on a bone without keys adds its track: the count of the tracks is the edit then (a key added to a
        # table of every bone's keys, VMD's, is named on the count's line: `bone_keys (added: センター)`); a key after
        # the last frame adds frames to a format that writes every frame (SMD): their count growing is the edit
        return (lambda d: (named(d) or not t.names or "without keys" in t.what and d.field.endswith("count")
                           or kind == "key-after-end" and d.field.endswith("count") and _grew(d))
                and bool(ANIMATION.search(_where(d))),
                lambda d: _sizes(d) or bool(_words(r"duration", r"length", r"frame_?count", r"end", r"last",
                                                   r"time", r"range").search(d.field))
                or bool(CLIP_LENGTH.search(d.record)))
    if kind == "add-shape-key":
        return (lambda d: bool(SHAPES.search(_where(d))), lambda d: _sizes(d) or named(d))
    if kind == "material-image":
        return (lambda d: named(d) or bool(MATERIAL.search(_where(d))) and "edited_image" in _text(d.value_b),
                lambda d: _sizes(d) or bool(MATERIAL.search(_where(d))))
    if kind in ("delete-faces", "add-mesh", "delete-object"):
        return (lambda d: bool(MESH.search(_where(d))) or d.field == "count",
                lambda d: _sizes(d) or bool(BOUNDS.search(_where(d))) or named(d))
    return (lambda d: False, lambda d: False)


def _cut_name(d, names: list[str]) -> bool:
    """The new name cut to a fixed-size name field (VMD's 15 bytes): longer than the old name, a start of the
    new one."""
    text = _text(d.value_b).split("\0", 1)[0]
    return len(names) > 1 and len(text) > len(names[0]) and names[1].startswith(text)


def classify(kind: str, t: Touched, result, rest_in_model: bool = False, motion: bool = False) -> tuple[str, str]:
    """(class, the first field that is not the edit, or what was lost) from `result`, the core/diff.py
    DiffResult of the input and the exported file (`rest_in_model`: the format's keys are offsets from a rest
    the model file holds, FormatSpec.rest_in_model, so a rest moved leaves the motion as it was; `motion`: the
    file is a motion, `_rules`)."""
    if kind in ("unchanged", "duplicate-model"):  # the model written back as it was read
        if result.identical:
            return ONLY, ""
        d = result.differences[0]
        return OTHER, _field(d)
    if result.identical and kind == "move-bone-rest" and rest_in_model:
        return ONLY, ""
    if result.identical:
        return LOST, "the file came back unchanged"
    core, derived = _rules(kind, t, motion)
    found_core = False
    near = set()
    moved = {d.record for d in result.differences if not _rounded(d)}  # a record holding another one now
    before = _values_before(result.differences) if kind in SIZE_EDITS else {}
    for d in result.differences:
        if (kind in SIZE_EDITS and d.record not in moved and _rounded(d) and not _shifted(d, before)
                and not DERIVED_VERTEX.search(d.field)):  # written again, less precisely
            return OTHER, f"{_field(d)} (rounded: {d.value_a} → {d.value_b})"[:160]
        if core(d):
            found_core = True
            continue
        if derived(d):
            if kind == "move-vertex" and DERIVED_VERTEX.search(_where(d)):
                near.add(d.record)
                if len(near) > NEAR_VERTICES:
                    return OTHER, f"{_field(d)} (normals or tangents of over {NEAR_VERTICES} vertices)"
            continue
        return OTHER, _field(d)
    if result.total > len(result.differences):
        first = _field(result.differences[0])
        return OTHER, f"over {len(result.differences)} differences ({result.total}); the first {first}"
    if not found_core:
        return LOST, "no difference is the edit; first: " + _field(result.differences[0])
    return ONLY, ""


def said(cls: str, t: Touched, warnings: list[str]) -> str:
    """The export's warning that names what the edit touched, when the file does not hold the edit as made
    ("lost"; or "something else changed" with a warning saying how it was written: a shape key baked into the
    mesh): the user was told, so the case is refused with that reason, not silently wrong. "" otherwise."""
    if cls not in (LOST, OTHER):
        return ""
    # the file holds something else: only a warning that says how the edit was written explains it (a note on
    # the edited object, such as a mesh weighted to a bone, does not)
    said = [w for w in warnings if any(n and n in w for n in t.names) and (cls == LOST or "written" in w)]
    return said[0][:200] if said else ""


SIZE_EDITS = frozenset(("delete-faces", "add-mesh", "delete-object"))


def _rounded(d) -> bool:
    """Two numbers (or rows of numbers) that differ only in their last digits: a value written again with less
    precision, not a record shifted by a deletion (normals and tangents are left out: those of the vertices
    around a deleted face follow it)."""
    try:
        a = np.asarray(d.value_a, np.float64)
        b = np.asarray(d.value_b, np.float64)
    except (TypeError, ValueError):
        return False
    if a.shape != b.shape or not a.size or not np.isfinite(a).all() or not np.isfinite(b).all():
        return False
    if np.any((a == 0) & (b != 0)):  # no loss of precision makes a number out of 0: another record's value
        return False
    return bool(not np.array_equal(a, b) and np.allclose(a, b, rtol=1e-5, atol=1e-7))


INDEXED = re.compile(r"^(.*)\[(\d+)\]$")
SHIFT = 8  # records a deletion may shift a record by, looked at for the value it now holds


def _values_before(differences) -> dict:
    """(list, index, field) → the value in A, of every difference in an indexed record."""
    out = {}
    for d in differences:
        m = INDEXED.match(d.record)
        if m:
            out[(m.group(1), int(m.group(2)), d.field)] = d.value_a
    return out


def _shifted(d, before: dict) -> bool:
    """A record that now holds, exactly, what a record a few places after it held: the list shifted by a deletion
    (the records compared by index), not a value written again with less precision."""
    m = INDEXED.match(d.record)
    if not m:
        return False
    b = np.asarray(d.value_b, np.float64)
    for k in range(1, SHIFT + 1):
        a = before.get((m.group(1), int(m.group(2)) + k, d.field))
        if a is not None and np.asarray(a, np.float64).shape == b.shape and np.array_equal(np.asarray(
                a, np.float64), b, equal_nan=True):
            return True
    return False


def _field(d) -> str:
    """A difference as a cause shared by many files: indices and names of records left out."""
    record = re.sub(r"\[\d+\]", "[N]", d.record)
    record = re.sub(r" \([^)]*\)", "", record)
    text = f"{record}: {d.field}" if d.field else record
    return re.sub(r"\[\d+\]", "[N]", text)[:120]


def example(d) -> str:
    """One difference, as `skinbridge diff` prints it."""
    return str(d)[:200]
