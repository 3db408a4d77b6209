"""DMX model → core Scene: the DmeModel's joints as the skeleton (bind pose from its base state), each DmeMesh's
vertex data and face sets as a mesh with materials, its delta states as shape keys (correctives and the flex
controllers of the combination operator in extras), and each DmeChannelsClip of the root's animation list as an
animation. docs/source.md §6.5 has the element types and attributes read.

A DMX vertex is an index into the vertex data's `<field>Indices` arrays: it has one position, normal and UV (each
a value of its field), so the DMX vertices are the core mesh's split vertices as they are. Joint weights belong to
position values and delta states move position values; both are spread to the vertices through the position
indices. Quaternions are (x, y, z, w) in the file, (w, x, y, z) in the core. The DmeAxisSystem's up axis turns
the model into Blender's Z up as Blender Source Tools does (Y up: +90° about X; X up: +90° about Y).
"""
from __future__ import annotations

import os

import numpy as np

from ...core import model as cm
from ...core.errors import FormatError
from ...core.fileio import read_bytes
from ...core.transforms import matrix3_to_quat, matrix_to_trs, quat_multiply, trs_to_matrix
from . import dmx
from .records import TIME_TICKS, AttrType, DmxFile, Element

IMPLICIT_BONE = "blender_implicit"  # Blender Source Tools' stand-in bone of an unskinned model: not a bone
# field names of model format 22 and later, and of earlier ones
KEYWORDS_22 = {"position": "position$0", "normal": "normal$0", "uv": "texcoord$0", "weight": "blendweights$0",
               "joint": "blendindices$0"}
KEYWORDS_OLD = {"position": "positions", "normal": "normals", "uv": "textureCoordinates", "weight": "jointWeights",
                "joint": "jointIndices"}


def _elem(e: Element | None, name: str) -> Element | None:
    v = e.value(name) if e is not None else None
    return v if isinstance(v, Element) else None


def _elems(e: Element | None, name: str) -> list[Element]:
    a = e.get(name) if e is not None else None
    if a is None or a.type != AttrType.ELEMENT or not a.array:
        return []
    return [x for x in a.value if isinstance(x, Element)]


def _scalar(e: Element | None, name: str, t: AttrType, default):
    """A single value of type `t`, or `default` when absent or of another type (then the file's value is not
    what the name means elsewhere: ignored, as Valve's tools ignore an attribute of the wrong type)."""
    a = e.get(name) if e is not None else None
    if a is None or a.type != t or a.array:
        return default
    return a.value.item() if isinstance(a.value, np.ndarray) and a.value.ndim == 0 else a.value


def _values(e: Element, name: str, t: AttrType, where: str) -> np.ndarray | None:
    """An array attribute of type `t`, or None when absent; another type is a FormatError naming it."""
    a = e.get(name)
    if a is None:
        return None
    if a.type != t or not a.array:
        raise FormatError(f"{where}: {name} is a {a.type.name.lower()}{' array' if a.array else ''}, not a "
                          f"{t.name.lower()} array", None, name)
    return np.asarray(a.value)


def _indexed(values: np.ndarray, indices: np.ndarray, where: str, field: str) -> np.ndarray:
    bad = (indices < 0) | (indices >= len(values))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise FormatError(f"{where}: index {int(indices[k])} (item {k}) outside the {len(values)} values", None,
                          field)
    return values[indices]


def up_matrix(model: Element | None) -> np.ndarray:
    up = _scalar(_elem(model, "axisSystem"), "upAxis", AttrType.INT, 3)
    m = np.eye(4)
    if up == 1:  # X up: +90° about Y
        m[:3, :3] = [[0, 0, 1], [0, 1, 0], [-1, 0, 0]]
    elif up == 2:  # Y up: +90° about X
        m[:3, :3] = [[1, 0, 0], [0, 0, -1], [0, 1, 0]]
    return m


def _local_of(e: Element, base: dict[str, Element]) -> np.ndarray:
    """The element's bind pose relative to its parent as a matrix (`_pose_of`)."""
    pos, q = _pose_of(e, base)
    return trs_to_matrix(pos[None], q[None, [3, 0, 1, 2]], np.ones((1, 3)))[0]


def _pose_of(e: Element, base: dict[str, Element]) -> tuple[np.ndarray, np.ndarray]:
    """The element's local position and (x, y, z, w) orientation: its base-state transform of the same name (the
    bind pose), else its own; identity without either."""
    t = base.get(e.name or "") or _elem(e, "transform")
    if t is None:
        return np.zeros(3), np.array([0.0, 0, 0, 1])
    pos = np.asarray(_scalar(t, "position", AttrType.VECTOR3, np.zeros(3)), np.float64)
    q = np.asarray(_scalar(t, "orientation", AttrType.QUATERNION, np.array([0, 0, 0, 1])), np.float64)
    return pos, q


def _shape_mesh(e: Element) -> Element | None:
    shape = _elem(e, "shape")
    return shape if shape is not None and shape.type == "DmeMesh" else None


def skeleton_of(model: Element, up: np.ndarray, warnings: list[str]
                ) -> tuple[cm.Skeleton | None, list[Element], list[tuple[Element, int, np.ndarray]]]:
    """The bones (parents first), their elements, and the meshes with their parent bone and where their node
    puts them in the model (Blender's axes): the parent bone's bind (the up axis for a mesh under the model)
    times the node's own transform and those of the mesh nodes above it, which Blender Source Tools writes for
    every object.

    The joint tree is walked with a stack, never recursion, so a chain of any depth reads; the local matrices
    are made in one numpy call and the binds in one pass, parents before children (every bone follows its
    parent in the walk's order)."""
    base_list = _elems(model, "baseStates")
    base = {t.name or "": t for t in _elems(base_list[0], "transforms")} if base_list else {}
    elems: list[Element] = []
    parents: list[int] = []
    poses: list[tuple[np.ndarray, np.ndarray]] = []
    placed: list[tuple[Element, int, np.ndarray]] = []  # mesh, parent bone, node matrix relative to that bone
    stack = [(c, -1, np.eye(4)) for c in reversed(_elems(model, "children"))]
    seen = {id(model)}
    while stack:
        e, parent, above = stack.pop()
        if id(e) in seen:
            warnings.append(f"element {e.type} {e.name!r} is a child twice (or of itself): its second place is "
                            "left out")
            continue
        seen.add(id(e))
        mesh = _shape_mesh(e) if e.type == "DmeDag" else None
        if mesh is not None:
            above = above @ _local_of(e, base)
            placed.append((mesh, parent, above))
        elif e.type in ("DmeJoint", "DmeDag") and e.name != IMPLICIT_BONE:
            elems.append(e)
            parents.append(parent)
            poses.append(_pose_of(e, base))
            parent, above = len(elems) - 1, np.eye(4)
        elif e.type != "DmeModel":
            continue
        stack += [(c, parent, above) for c in reversed(_elems(e, "children"))]
    if not elems:
        return None, elems, [(m, p, up @ a) for m, p, a in placed]
    pos = np.array([p for p, _ in poses], np.float64).reshape(-1, 3)
    q = np.array([q for _, q in poses], np.float64).reshape(-1, 4)
    local = trs_to_matrix(pos, q[:, [3, 0, 1, 2]], np.ones_like(pos))
    roots = np.array(parents) < 0
    local[roots] = up @ local[roots]  # a root's rest and bind are in Blender's axes
    binds = np.empty_like(local)
    for i, parent in enumerate(parents):
        binds[i] = local[i] if parent < 0 else binds[parent] @ local[i]
    t, r, s = matrix_to_trs(local)
    skel = cm.Skeleton(name=model.name or "Armature")
    skel.bones = [cm.Bone(e.name or f"bone{i}", parents[i], binds[i], t[i], r[i], s[i]) for i, e in enumerate(elems)]
    return skel, elems, [(m, p, (binds[p] if p >= 0 else up) @ a) for m, p, a in placed]


element_of, elements_of = _elem, _elems  # for the edited export (patch.py)


MTL_NAME = "dmx_mtlName"  # a material's extras: its mtlName as the file has it (folder included)


def _material(scene: cm.Scene, mtl: str) -> int:
    """The scene material of a face set's `mtlName`: one per name however many face sets and meshes use it
    (else Blender would name the others .001, .002), named without the material folder."""
    for k, m in enumerate(scene.materials):
        if m.extras.get(MTL_NAME) == mtl:
            return k
    scene.materials.append(cm.Material(name=mtl.replace("\\", "/").rsplit("/", 1)[-1] or mtl, extras={MTL_NAME: mtl}))
    return len(scene.materials) - 1


def _faces(mesh: Element, corners: int, scene: cm.Scene, where: str
           ) -> tuple[np.ndarray, np.ndarray, list[int], np.ndarray]:
    """Triangles (fans of each polygon), their material slot, the slots' scene materials, and the corner count
    of each polygon the triangles come from (in their order)."""
    tris, slots, materials, sizes = [], [], [], []
    for k, face_set in enumerate(_elems(mesh, "faceSets")):
        faces = _values(face_set, "faces", AttrType.INT, f"{where} face set {k}")
        if faces is None or not len(faces):
            continue
        if faces[-1] != -1:
            faces = np.append(faces, -1)
        ends = np.flatnonzero(faces == -1)
        starts = np.concatenate([[0], ends[:-1] + 1])
        _indexed(np.arange(corners), faces[faces >= 0], f"{where} face set {k}", "faces")
        counts = np.maximum(ends - starts - 2, 0)  # triangles of each polygon's fan
        if not counts.sum():
            continue
        sizes.append(counts[counts > 0] + 2)
        first = np.repeat(starts, counts)
        k = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts) + 1
        fan = [np.stack([faces[first], faces[first + k], faces[first + k + 1]], 1)]
        materials.append(_material(scene, _scalar(_elem(face_set, "material"), "mtlName", AttrType.STRING, None)
                                   or face_set.name or "material"))
        tris.append(np.concatenate(fan))
        slots.append(np.full(len(tris[-1]), len(materials) - 1, np.int32))
    if not tris:
        return np.zeros((0, 3), np.int32), np.zeros(0, np.int32), materials, np.zeros(0, np.int64)
    return np.concatenate(tris).astype(np.int32), np.concatenate(slots), materials, np.concatenate(sizes)


def joint_bones(model: Element, bones: list[Element], fmt_version: int) -> np.ndarray:
    """Bone index of each entry of the list blend indices point into (-1: not a bone, e.g. the DmeModel)."""
    by_elem = {id(e): i for i, e in enumerate(bones)}
    if fmt_version >= 11 or model.get("jointTransforms") is None:
        return np.array([by_elem.get(id(e), -1) for e in _elems(model, "jointList")], np.int64).reshape(-1)
    by_transform = {id(_elem(e, "transform")): i for i, e in enumerate(bones)}
    return np.array([by_transform.get(id(t), -1) for t in _elems(model, "jointTransforms")], np.int64).reshape(-1)


def _field(data: Element, name: str, t: AttrType, corners: int, where: str) -> np.ndarray | None:
    """A vertex field's value for each DMX vertex (through its indices), or None when absent."""
    values = _values(data, name, t, where)
    indices = _values(data, name + "Indices", AttrType.INT, where)
    if values is None or indices is None:
        return None
    if len(indices) != corners:
        raise FormatError(f"{where}: {name}Indices has {len(indices)} items for {corners} vertices", None,
                          name + "Indices")
    return _indexed(values, indices, where, name + "Indices")


def _weights(data: Element, kw: dict, positions: int, joint_bones: np.ndarray, where: str
             ) -> tuple[np.ndarray, np.ndarray] | None:
    """Per position value: (bone indices, weights), jointCount of each; None when the mesh has none."""
    w = _values(data, kw["weight"], AttrType.FLOAT, where)
    j = _values(data, kw["joint"], AttrType.INT, where)
    if w is None or j is None:
        return None
    count = int(_scalar(data, "jointCount", AttrType.INT, 0))
    if count <= 0 or len(w) != positions * count or len(j) != positions * count:
        raise FormatError(f"{where}: {len(w)} weights and {len(j)} joint indices for {positions} positions of "
                          f"{count} joints each", None, kw["weight"])
    bones = _indexed(joint_bones, j, where, kw["joint"]).reshape(positions, count)
    w = w.reshape(positions, count).astype(np.float32)
    return np.where(bones < 0, 0, bones).astype(np.int32), np.where(bones < 0, 0, w).astype(np.float32)


# the value types of the vertex fields kept as Blender corner attributes (cloth, vertex paint, balance maps)
KEPT_FIELD_TYPES = (AttrType.FLOAT, AttrType.VECTOR2, AttrType.VECTOR3, AttrType.VECTOR4)


def _other_fields(data: Element, kw: dict, read: list[str], corners: int, where: str) -> list[tuple]:
    """The vertexFormat fields the mapping does not read otherwise (`cloth_enable$0`, `VertexPaintTintColor$0`,
    `balance$0`, ...): (name, type, value of each DMX vertex), for the Blender import to keep and the export to
    write back."""
    fields = data.get("vertexFormat")
    names = fields.value if fields is not None and fields.type == AttrType.STRING and fields.array else []
    skip = set(read) | {kw["position"], kw["normal"], kw["weight"], kw["joint"]}
    out = []
    for name in names:
        a = data.get(name)
        if name in skip or a is None or not a.array or a.type not in KEPT_FIELD_TYPES:
            continue
        values = _field(data, name, a.type, corners, where)
        if values is not None:
            out.append((name, a.type, np.asarray(values, np.float32)))
    return out


def _shape_keys(mesh: Element, data: Element, kw: dict, pos_index: np.ndarray, place: np.ndarray, where: str
                ) -> list[cm.ShapeKey]:
    base = _values(data, kw["position"], AttrType.VECTOR3, where).astype(np.float64)
    out = []
    for delta in _elems(mesh, "deltaStates"):
        here = f"{where} delta state {delta.name!r}"
        moved = np.zeros_like(base)
        d = _values(delta, kw["position"], AttrType.VECTOR3, here)
        di = _values(delta, kw["position"] + "Indices", AttrType.INT, here)
        if d is not None and di is not None:
            if len(d) != len(di):
                raise FormatError(f"{here}: {len(d)} deltas for {len(di)} indices", None, kw["position"])
            _indexed(base, di, here, kw["position"] + "Indices")
            np.add.at(moved, di, d.astype(np.float64))
        positions = ((base + moved)[pos_index] @ place[:3, :3].T + place[:3, 3]).astype(np.float32)
        out.append(cm.ShapeKey(delta.name or f"shape{len(out)}", positions))
    return out


def mesh_of(mesh: Element, parent: int, joint_bones: np.ndarray, place: np.ndarray, kw: dict, scene: cm.Scene,
            warnings: list[str]) -> cm.Mesh:
    """The mesh with its vertices in the model's space: `place` is its node's matrix (`skeleton_of`)."""
    where = f"mesh {mesh.name!r}"
    data = _elem(mesh, "currentState") or _elem(mesh, "bindState")
    if data is None:
        raise FormatError(f"{where}: no vertex data (bindState)", None, "bindState")
    pos_index = _values(data, kw["position"] + "Indices", AttrType.INT, where)
    values = _values(data, kw["position"], AttrType.VECTOR3, where)
    if pos_index is None or values is None:
        raise FormatError(f"{where}: no {kw['position']} with its indices", None, kw["position"])
    corners = len(pos_index)
    _indexed(values, pos_index, where, kw["position"] + "Indices")
    rot, move = place[:3, :3], place[:3, 3]
    m = cm.Mesh(mesh.name or "mesh", (values[pos_index].astype(np.float64) @ rot.T + move).astype(np.float32),
                np.zeros((0, 3), np.int32))
    normals = _field(data, kw["normal"], AttrType.VECTOR3, corners, where)
    m.normals = None if normals is None else (normals.astype(np.float64) @ rot.T).astype(np.float32)
    flip = bool(_scalar(data, "flipVCoordinates", AttrType.BOOL, 0))
    fields = data.get("vertexFormat")
    fields = fields.value if fields is not None and fields.type == AttrType.STRING and fields.array else []
    uv_names = [kw["uv"]] + [f for f in fields if f.startswith("texcoord$") and f != kw["uv"]]
    for name in uv_names:
        uv = _field(data, name, AttrType.VECTOR2, corners, where)
        if uv is not None:
            uv = uv.astype(np.float32)
            if not flip:  # unflipped files keep V from the top, as the engine samples it
                uv[:, 1] = 1 - uv[:, 1]
            m.uvs.append(("UVMap" if name == kw["uv"] else name, uv))
    m.extras.setdefault("dmx", {})["fields"] = _other_fields(data, kw, uv_names, corners, where)
    skin = _weights(data, kw, len(values), joint_bones, where)
    if skin is not None:
        m.joints, m.weights = skin[0][pos_index], skin[1][pos_index]
    elif parent >= 0:  # a mesh under a joint without weights moves with that joint
        m.joints, m.weights = np.full((corners, 1), parent, np.int32), np.ones((corners, 1), np.float32)
    m.triangles, m.material_indices, m.materials, sizes = _faces(mesh, corners, scene, where)
    # what the Blender import joins back: the DMX vertices of one position value, the fans of one polygon
    m.extras.setdefault("dmx", {})["topology"] = {"position": pos_index.astype(np.int64), "polygons": sizes}
    m.shape_keys = _shape_keys(mesh, data, kw, pos_index, place, where)
    return m


def _seconds(ticks: np.ndarray, rate: float) -> np.ndarray:
    """Key times in seconds; a time within one tick of a frame of the clip's rate is that frame's time, since
    the writers cut frame times to whole ticks (Valve's 1/30 s is 333 ticks, 0.1 ms early)."""
    seconds = ticks.astype(np.float64) / TIME_TICKS
    if not 0 < rate < np.inf:
        return seconds
    frames = np.round(seconds * rate)
    return np.where(np.abs(frames / rate - seconds) * TIME_TICKS <= 1, frames / rate, seconds)


seconds_of = _seconds  # for the edited export (patch.py)


def corrective_separator(names: list[str], format_version: int) -> str:
    """What joins a corrective shape's controls in its name: `__` in model format 22 and later when a delta
    state's name holds one (Source 2's ModelDoc names), else `_` (Blender Source Tools' rule)."""
    return "__" if format_version >= 22 and any("__" in n for n in names) else "_"


def correctives(mesh: cm.Mesh, separator: str, warnings: list[str]) -> dict[str, list[str]]:
    """Corrective shapes: a shape key whose name joins names of other shape keys of the mesh; it applies as
    much as the least of them (Blender Source Tools drives it by their minimum)."""
    names = {k.name for k in mesh.shape_keys}
    out, partial = {}, []
    for k in mesh.shape_keys:
        parts = k.name.split(separator)
        if len(parts) < 2 or not all(parts):
            continue
        if all(p in names and p != k.name for p in parts):
            out[k.name] = parts
        elif any(p in names for p in parts):
            partial.append(k.name)
    if partial:
        warnings.append(f"mesh {mesh.name!r}: {len(partial)} shape key(s) named as correctives of keys the mesh "
                        f"lacks ({', '.join(partial[:5])}): no driver")
    return out


def controls_of(root: Element | None) -> list[dict]:
    """The flex controllers of the root's `combinationOperator`: name, the delta states each drives
    (`rawControlNames`), range, stereo and eyelid flags."""
    out = []
    for c in _elems(_elem(root, "combinationOperator"), "controls"):
        raw = c.get("rawControlNames")
        out.append({"name": c.name or "", "raw": list(raw.value) if raw is not None and raw.type == AttrType.STRING
                    and raw.array else [], "min": float(_scalar(c, "flexMin", AttrType.FLOAT, 0.0)),
                    "max": float(_scalar(c, "flexMax", AttrType.FLOAT, 1.0)),
                    "stereo": bool(_scalar(c, "stereo", AttrType.BOOL, 0)),
                    "eyelid": bool(_scalar(c, "eyelid", AttrType.BOOL, 0))})
    return out


def _log_keys(channel: Element, t: AttrType, rate: float, where: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(seconds, values) of the channel's log: its first layer, the one Valve's tools and Blender Source Tools
    write and play (later layers are edits over it)."""
    layers = _elems(_elem(channel, "log"), "layers")
    if not layers:
        return None
    kind = layers[0].get("times")  # int ticks before model 12 (Source 2013's logs), a time array after
    times = _values(layers[0], "times", AttrType.INT if kind is not None and kind.type == AttrType.INT
                    else AttrType.TIME, where)
    values = _values(layers[0], "values", t, where)
    if times is None or values is None or not len(times):
        return None
    if len(times) != len(values):
        raise FormatError(f"{where}: {len(times)} times for {len(values)} values", None, "values")
    return _seconds(times, rate), values.astype(np.float64)


def _frame_rate(clip: Element) -> float:
    """The clip's frame rate: an int in Valve's files, a float in Blender Source Tools' (0: not given)."""
    rate = _scalar(clip, "frameRate", AttrType.INT, None)
    return float(rate if rate is not None else _scalar(clip, "frameRate", AttrType.FLOAT, 0.0))


frame_rate = _frame_rate  # for the edited export (patch.py)


def animation_of(clip: Element, skel: cm.Skeleton, bones: list[Element], up: np.ndarray, warnings: list[str]
                 ) -> cm.Animation:
    """One DmeChannelsClip: its channels into a bone's transform (position, orientation) as that bone's keys,
    parent-relative as the skeleton's rest values; a root bone's keys turned by the up axis as its rest is."""
    by_transform = {id(_elem(e, "transform")): i for i, e in enumerate(bones)}
    by_name = {b.name: i for i, b in enumerate(skel.bones)}
    tracks: dict[int, cm.Track] = {}
    skipped = 0
    rate = _frame_rate(clip)
    up_q = matrix3_to_quat(up[:3, :3])
    for channel in _elems(clip, "channels"):
        target = _elem(channel, "toElement")
        attr = _scalar(channel, "toAttribute", AttrType.STRING, "")
        i = by_transform.get(id(target), by_name.get(target.name if target is not None else None))
        kind = {"position": AttrType.VECTOR3, "orientation": AttrType.QUATERNION}.get(attr)
        keys = _log_keys(channel, kind, rate, f"channel {channel.name!r}") if i is not None and kind else None
        if keys is None:
            skipped += 1
            continue
        times, values = keys
        track = tracks.setdefault(i, cm.Track(skel.bones[i].name))
        root = skel.bones[i].parent < 0
        if kind == AttrType.VECTOR3:
            track.translation_times, track.translations = times, (values @ up[:3, :3].T if root else values)
        else:
            q = values[:, [3, 0, 1, 2]]
            track.rotation_times, track.rotations = times, (quat_multiply(up_q, q) if root else q)
    if skipped:
        warnings.append(f"animation {clip.name!r}: {skipped} channel(s) drive no bone's position or orientation "
                        "(flex controls, other attributes): not imported")
    frame = _elem(clip, "timeFrame")
    duration = _scalar(frame, "duration", AttrType.TIME, _scalar(frame, "durationTime", AttrType.INT, None))
    ends = [float(t.translation_times[-1]) for t in tracks.values() if t.translation_times is not None and
            len(t.translation_times)] + [float(t.rotation_times[-1]) for t in tracks.values()
                                         if t.rotation_times is not None and len(t.rotation_times)]
    length = float(_seconds(np.array([duration]), rate)[0]) if duration is not None else max(ends, default=0.0)
    anim = cm.Animation(clip.name or "animation", length, [tracks[i] for i in sorted(tracks)])
    if 0 < rate < np.inf:
        anim.extras["fps"] = rate
    return anim


def animations_of(root: Element | None, skel: cm.Skeleton | None, bones: list[Element], up: np.ndarray,
                  warnings: list[str]) -> list[cm.Animation]:
    """The clips of the root's `animationList` (a DmeAnimationList's `animations`)."""
    clips = [c for c in _elems(_elem(root, "animationList"), "animations") if c.type == "DmeChannelsClip"]
    if clips and skel is None:
        warnings.append(f"{len(clips)} animation(s) but no skeleton to animate: not imported")
        return []
    return [animation_of(c, skel, bones, up, warnings) for c in clips]


def to_scene(d: DmxFile, name: str, with_animations: bool = True) -> tuple[cm.Scene, list[str]]:
    """The model a DMX holds (root's `model`, else its `skeleton`) as a core Scene."""
    warnings = list(d.warnings)
    scene = cm.Scene(name=name)
    root = d.root
    model = _elem(root, "model") or _elem(root, "skeleton")
    if model is None:
        controls = controls_of(root)
        if controls:  # a flex controller file (a QC's `$model` names it beside the model)
            scene.extras["dmx_controls"] = controls
        return scene, warnings + ["the file holds no model (its root has no 'model' or 'skeleton' element)"]
    up = up_matrix(model)
    skel, bones, meshes = skeleton_of(model, up, warnings)
    scene.skeleton = skel
    kw = KEYWORDS_22 if d.format_version >= 22 else KEYWORDS_OLD
    slots = joint_bones(model, bones, d.format_version)
    for mesh, parent, place in meshes:
        scene.meshes.append(mesh_of(mesh, parent if skel is not None else -1, slots, place, kw, scene,
                                    warnings))
    deltas = [e.name or "" for e in d.elements if e.type == "DmeVertexDeltaData"]
    separator = corrective_separator(deltas, d.format_version)
    for m in scene.meshes:
        found = correctives(m, separator, warnings)
        if found:
            m.extras.setdefault("dmx", {})["correctives"] = found
    controls = controls_of(root)
    if controls:
        scene.extras["dmx_controls"] = controls
    if with_animations:
        scene.animations = animations_of(root, skel, bones, up, warnings)
    return scene, warnings


def load(path: str, data: bytes, with_animations: bool = True, motions=()) -> tuple[cm.Scene, list[str]]:
    """The `load` capability: the model of a DMX with its animations, and those of the animation DMXs
    `motions` (an output folder's files: `compare`), matched to the model's bones by name."""
    name = os.path.basename(path).split(".")[0] if path else "dmx"
    scene, warnings = to_scene(dmx.read(data), name, with_animations)
    for motion in motions if with_animations else ():
        other, more = to_scene(dmx.read(read_bytes(motion)), os.path.basename(motion).split(".")[0])
        scene.animations += other.animations
        warnings += more
    return scene, warnings


def kind_of(data: bytes) -> str:
    """"motion" for a file of animations without a mesh (an animation DMX beside its model), else "model"."""
    d = dmx.read(data)
    clips = _elems(_elem(d.root, "animationList"), "animations")
    return "motion" if clips and not any(e.type == "DmeMesh" for e in d.elements) else "model"


def semantic(d: DmxFile) -> list[str]:
    """What an import runs after the read (hostile suite): the mapping's FormatError or warnings."""
    return to_scene(d, "hostile")[1]
