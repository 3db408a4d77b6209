"""Core Scene → DMX files, laid out as Blender Source Tools writes them for the engine branch chosen
(`BRANCHES`: binary 9 / model 22 for Source 2 by default, 5/18, 4/15 or 2/1 for Source 1 branches, or
keyvalues2 text with the branch's model version; docs/source.md §6.6): NAME.dmx holds the model (skeleton with
its bind pose, meshes, shape keys as delta states with their flex controllers), each animation its own DMX (the
skeleton and one DmeChannelsClip), and NAME.qc names them with each sequence's rate.

Blender axes are kept: a model 22 DmeAxisSystem says Z up (a Source 1 model has none: Z up too), so `convert`
reads the values back unchanged. A DMX vertex is a core (split) vertex: every field's `Indices` are 0..V-1, so
the vertex order survives the round trip; UVs are written with Blender's bottom-left origin and
`flipVCoordinates` set, as Blender Source Tools does.
"""
from __future__ import annotations

import dataclasses
import os
import uuid

import numpy as np

from ...core import model as cm
from ...core.errors import ExportError
from ...core.fileio import write_atomic
from ...core.naming import NameAllocator
from ...core.transforms import affine_inverse, matrix_to_trs, trs_to_matrix
from ..qc import qc
from ..smd import convert as smd_convert
from . import convert, dmx
from .records import TIME_TICKS, AttrType, Attribute, DmxFile, Element

MAX_WEIGHTS = 32  # the joints kept per vertex (studiomdl keeps the three largest: docs/source.md §6.6)
SOURCE1_WEIGHTS = 3  # Source 1's studiomdl refuses a DMX whose jointCount is above its MAXSTUDIOBONEWEIGHTS
FORMAT_VERSION = 22  # model format of the field names `position$0`, `blendweights$0`, ...
# (binary encoding version, model format version) of each engine branch's loader (docs/source.md §6.6), the
# values of the `dmx_version` option (io_smd/__init__.py) but its "AUTO"
BRANCHES = {"SOURCE2": (9, 22), "SFM": (5, 18), "L4D2": (4, 15), "TF2": (2, 1)}
DEFAULT_BRANCH = "SOURCE2"  # a new model under "AUTO"
KV2_VERSION = 1  # the keyvalues2 encoding version every branch's text reader takes
SCALE_TOLERANCE = 1e-4


def _new(etype: str, name: str, **attrs) -> Element:
    e = Element(etype, name, uuid.uuid4())
    for key, (t, value) in attrs.items():
        e.attributes.append(_attr(key, t, value))
    return e


def _attr(name: str, t: AttrType, value) -> Attribute:
    """An attribute; a list, or an array with one more dimension than the type's item, is an array attribute."""
    if t in dmx.FIXED:
        dtype, shape = dmx.FIXED[t]
        v = np.asarray(value, dtype=dtype)
        array = v.ndim > len(shape)
        return Attribute(name, t, array, np.ascontiguousarray(v) if array else v)
    return Attribute(name, t, isinstance(value, list), value)


def _transform(name: str, matrix: np.ndarray) -> Element:
    """A DmeTransform of a rigid matrix: position and (x, y, z, w) orientation."""
    t, q, _ = matrix_to_trs(matrix)
    return _new("DmeTransform", name, position=(AttrType.VECTOR3, t),
                orientation=(AttrType.QUATERNION, q[[1, 2, 3, 0]]))


def _scale_warning(what: str, scales: np.ndarray, names: list[str], warnings: list[str]) -> None:
    bad = np.flatnonzero((np.abs(np.asarray(scales).reshape(len(names), -1, 3) - 1) > SCALE_TOLERANCE).any(axis=(1, 2)))
    if len(bad):
        warnings.append(f"{what}: {len(bad)} bone(s) scaled ({', '.join(names[i] for i in bad[:5])}): a DMX "
                        "transform holds no scale, written without it")


def _stored(matrix: np.ndarray) -> np.ndarray:
    """The matrix a reader makes of `matrix` written as a DmeTransform (float32 position and quaternion)."""
    t, q, _ = matrix_to_trs(matrix)
    return trs_to_matrix(t.astype(np.float32), q.astype(np.float32), np.ones(3))


def _bind_locals(skel: cm.Skeleton | None) -> list[np.ndarray]:
    """Each bone's bind relative to its parent's bind as a reader rebuilds it from the float32 values written,
    so that rounding does not add up along a chain (docs/source.md §6.6)."""
    if not skel:
        return []
    out: list[np.ndarray] = [np.eye(4)] * len(skel.bones)
    rebuilt: list[np.ndarray] = [np.eye(4)] * len(skel.bones)
    for i in skel.topological_order():  # parents first, whatever order the bones are stored in
        bone = skel.bones[i]
        bind = np.asarray(bone.bind, np.float64)
        out[i] = bind if bone.parent < 0 else affine_inverse(rebuilt[bone.parent]) @ bind
        rebuilt[i] = _stored(out[i]) if bone.parent < 0 else rebuilt[bone.parent] @ _stored(out[i])
    return out


class _Skeleton:
    """The DmeModel with its joints (current pose: the rest pose; base state: the bind pose)."""

    def __init__(self, skel: cm.Skeleton | None, name: str, warnings: list[str], fmt: int = FORMAT_VERSION):
        self.fmt = fmt
        local = _bind_locals(skel)
        names = [b.name for b in skel.bones] if skel else []
        if local:
            _scale_warning("bind pose", matrix_to_trs(np.array(local))[2], names, warnings)
        self.model = _new("DmeModel", skel.name if skel else name)
        self.joints, self.transforms = [], []
        base = []
        for i, bone in enumerate(skel.bones if skel else []):
            rest = trs_to_matrix(bone.rest_translation, bone.rest_rotation, np.ones(3))
            self.transforms.append(_transform(bone.name, rest))
            self.joints.append(_new("DmeJoint", bone.name))
            self.joints[-1].attributes.append(_attr("transform", AttrType.ELEMENT, self.transforms[-1]))
            base.append(_transform(bone.name, local[i]))
        children: list[list[Element]] = [[] for _ in self.joints]
        roots: list[Element] = []
        for i, bone in enumerate(skel.bones if skel else []):
            (roots if bone.parent < 0 else children[bone.parent]).append(self.joints[i])
        for j, kids in zip(self.joints, children):
            j.attributes.append(_attr("children", AttrType.ELEMENT, kids))
        self.roots = roots
        self.base = base

    def finish(self, extra_children: list[Element]) -> Element:
        """The DmeModel as model format `fmt` lays it out (Blender Source Tools' rules): a DmeAxisSystem (Z up)
        in 22 and later, where a Source 1 model has none; a `jointList` from 11 on (the DmeModel first in 22,
        so that blend indices are bone + 1; bone index before); a `jointTransforms` list (the same entries'
        transforms) before 21."""
        m, fmt = self.model, self.fmt
        m.attributes += [
            _attr("transform", AttrType.ELEMENT, _transform("", np.eye(4))),
            _attr("children", AttrType.ELEMENT, self.roots + extra_children),
            _attr("baseStates", AttrType.ELEMENT, [_new("DmeTransformList", "base")]),
        ]
        if fmt >= 22:
            m.attributes.append(_attr("axisSystem", AttrType.ELEMENT, _new(
                "DmeAxisSystem", "axisSystem", upAxis=(AttrType.INT, 3), forwardParity=(AttrType.INT, 1),
                coordSys=(AttrType.INT, 0))))
        listed = self.joints + extra_children  # the mesh DAGs after the joints, as Blender Source Tools lists them
        if fmt >= 11:
            m.attributes.append(_attr("jointList", AttrType.ELEMENT, [m] + listed if fmt >= 22 else listed))
        if fmt < 21:
            m.attributes.append(_attr("jointTransforms", AttrType.ELEMENT, [e.value("transform") for e in listed]))
        m.value("baseStates")[0].attributes.append(_attr("transforms", AttrType.ELEMENT, self.base))
        return m


def shared_positions(mesh: cm.Mesh) -> tuple[np.ndarray, np.ndarray]:
    """(the core vertex of each position value, the position value of each core vertex): one position per
    Blender vertex (`source_vertex`, which the core mesh splits where corner data differ), as Blender Source
    Tools writes them; without it, one per core vertex."""
    source = np.asarray(mesh.extras.get("source_vertex", ()), np.int64)
    if len(source) != len(mesh.positions):
        every = np.arange(len(mesh.positions))
        return every, every
    _, first, index = np.unique(source, return_index=True, return_inverse=True)
    return first, index.reshape(-1)


def _vertex_data(mesh: cm.Mesh, name: str, joint_slots: np.ndarray | None = None,
                 kw: dict = convert.KEYWORDS_22, source1: bool = False) -> Element:
    """The vertex data of `mesh`; `joint_slots`: the jointList index of each bone (else bone + 1, this writer's
    jointList); `kw`: the field names of the model format written (`convert.KEYWORDS_22`); `source1`: a new
    model before format 22, with one UV map and no `name$k` fields (`dropped_fields` says so)."""
    n = len(mesh.positions)
    every = np.arange(n, dtype=np.int32)
    first, pos_index = shared_positions(mesh)
    fields = [kw["position"]]
    data = _new("DmeVertexData", name)
    attrs = [(kw["position"], AttrType.VECTOR3, np.asarray(mesh.positions)[first])]
    if mesh.normals is not None:
        fields.append(kw["normal"])
        attrs.append((kw["normal"], AttrType.VECTOR3, mesh.normals))
    for k, (_, uv) in enumerate(mesh.uvs[:1] if source1 else mesh.uvs):
        fields.append(kw["uv"] if k == 0 else f"texcoord${k}")
        attrs.append((fields[-1], AttrType.VECTOR2, uv))
    for key, kind, values in [] if source1 else mesh.extras.get("dmx_fields", []):  # cloth, paint, balance maps
        fields.append(key)
        attrs.append((key, AttrType[kind], values))
    weighted = mesh.joints is not None and mesh.weights is not None and mesh.weights.shape[1] > 0
    if weighted:
        fields += [kw["weight"], kw["joint"]]
    data.attributes += [_attr("vertexFormat", AttrType.STRING, fields),
                        _attr("flipVCoordinates", AttrType.BOOL, 1),
                        _attr("jointCount", AttrType.INT, mesh.weights.shape[1] if weighted else 0)]
    for key, t, values in attrs:
        indices = pos_index.astype(np.int32) if key == kw["position"] else every
        data.attributes += [_attr(key, t, values), _attr(key + "Indices", AttrType.INT, indices)]
    if weighted:  # weights belong to position values
        w = np.asarray(mesh.weights, np.float32)[first]
        joints = np.asarray(mesh.joints)[first]
        # jointList[0] is the model itself: no bone
        j = np.where(w > 0, joints + 1 if joint_slots is None else np.asarray(joint_slots)[joints], 0)
        data.attributes += [_attr(kw["weight"], AttrType.FLOAT, w.reshape(-1)),
                            _attr(kw["joint"], AttrType.INT, j.reshape(-1))]
    return data


def dropped_fields(mesh: cm.Mesh, fmt: int) -> list[str]:
    """What a mesh holds that model format `fmt` has no field for: a model before 22 (Source 1) takes one UV map
    (`textureCoordinates`) and no Source 2 `name$k` vertex maps (cloth, paint, balance kept by an import)."""
    if fmt >= 22:
        return []
    return [name for name, _ in mesh.uvs[1:]] + [key for key, _, _ in mesh.extras.get("dmx_fields", [])]


def source1_weights(mesh: cm.Mesh, warnings: list[str]) -> cm.Mesh:
    """`mesh`, or a copy with at most `SOURCE1_WEIGHTS` influences a vertex: the largest, scaled to the vertex's
    total weight (a model before 22 goes to Source 1's studiomdl, which refuses more); a warning counts the
    vertices that lost one."""
    w = mesh.weights
    if w is None or mesh.joints is None or w.shape[1] <= SOURCE1_WEIGHTS:
        return mesh
    order = np.argsort(-w, axis=1, kind="stable")[:, :SOURCE1_WEIGHTS]
    kept = np.take_along_axis(w, order, axis=1).astype(np.float64)
    total, left = w.sum(axis=1, dtype=np.float64), kept.sum(axis=1)
    kept *= np.where(left > 0, total / np.where(left > 0, left, 1), 1)[:, None]
    lost = int(((w > 0).sum(axis=1) > SOURCE1_WEIGHTS).sum())
    if lost:
        warnings.append(f"mesh {mesh.name!r}: {lost} vertices have more than {SOURCE1_WEIGHTS} weights: the "
                        f"{SOURCE1_WEIGHTS} largest written, scaled to the vertex's total (Source 1's studiomdl "
                        "takes no more)")
    return dataclasses.replace(mesh, joints=np.take_along_axis(mesh.joints, order, axis=1),
                               weights=kept.astype(np.float32))


def _delta(mesh: cm.Mesh, key: cm.ShapeKey, kw: dict = convert.KEYWORDS_22) -> Element:
    first, _ = shared_positions(mesh)  # deltas move position values
    moved = (np.asarray(key.positions, np.float32) - np.asarray(mesh.positions, np.float32))[first]
    which = np.flatnonzero(np.abs(moved).max(axis=1) > 0).astype(np.int32)
    return _new("DmeVertexDeltaData", key.name, vertexFormat=(AttrType.STRING, [kw["position"]]),
                flipVCoordinates=(AttrType.BOOL, 1), jointCount=(AttrType.INT, 0),
                **{kw["position"]: (AttrType.VECTOR3, moved[which]), kw["position"] + "Indices": (AttrType.INT, which)})


def _polygons(mesh: cm.Mesh) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(corner count, corners, material slot) of each face: the Blender polygons the export read
    (`dmx_polygons`, blender_mesh.py), else the triangles."""
    found = mesh.extras.get("dmx_polygons")
    if isinstance(found, dict):
        return np.asarray(found["sizes"]), np.asarray(found["corners"], np.int32), np.asarray(found["slots"])
    tris = np.asarray(mesh.triangles, np.int32)
    slots = (np.asarray(mesh.material_indices) if mesh.material_indices is not None
             else np.zeros(len(tris), np.int64))
    return np.full(len(tris), 3), tris.reshape(-1), slots


def _face_sets(mesh: cm.Mesh, scene: cm.Scene) -> list[Element]:
    """One face set per material slot used, its polygons in mesh order, each closed by -1."""
    sizes, corners, slots = _polygons(mesh)
    # each face's corners then -1: corner k of the faces goes to k + (faces before it), -1 after each face
    closed = np.full(len(corners) + len(sizes), -1, np.int32)
    closed[np.arange(len(corners)) + np.repeat(np.arange(len(sizes)), sizes)] = corners
    face_of = np.repeat(np.arange(len(sizes)), sizes + 1)
    out = []
    for slot in np.unique(slots):
        mat = scene.materials[mesh.materials[slot]] if 0 <= slot < len(mesh.materials) else None
        name = mat.name if mat is not None else "no_material"
        mtl = mat.extras.get(convert.MTL_NAME, name) if mat is not None else name  # the folder as read
        faces = closed[np.isin(face_of, np.flatnonzero(slots == slot))]
        material = _new("DmeMaterial", name, mtlName=(AttrType.STRING, mtl))
        out.append(_new("DmeFaceSet", name, faces=(AttrType.INT, faces)))
        out[-1].attributes.insert(0, _attr("material", AttrType.ELEMENT, material))
    return out


def _mesh_dag(mesh: cm.Mesh, scene: cm.Scene, joint_slots: np.ndarray | None = None,
              kw: dict = convert.KEYWORDS_22, source1: bool = False) -> Element:
    data = _vertex_data(mesh, "bind", joint_slots, kw, source1)
    shape = _new("DmeMesh", mesh.name, visible=(AttrType.BOOL, 1))
    shape.attributes += [_attr("bindState", AttrType.ELEMENT, data), _attr("currentState", AttrType.ELEMENT, data),
                         _attr("baseStates", AttrType.ELEMENT, [data]),
                         _attr("deltaStates", AttrType.ELEMENT, [_delta(mesh, k, kw) for k in mesh.shape_keys]),
                         _attr("faceSets", AttrType.ELEMENT, _face_sets(mesh, scene))]
    if mesh.shape_keys:  # the weights studiomdl's flex rules start from, as Blender Source Tools writes them
        zero = np.zeros((len(mesh.shape_keys), 2), np.float32)
        shape.attributes += [_attr("deltaStateWeights", AttrType.VECTOR2, zero),
                             _attr("deltaStateWeightsLagged", AttrType.VECTOR2, zero)]
    dag = _new("DmeDag", mesh.name)
    dag.attributes += [_attr("transform", AttrType.ELEMENT, _transform(mesh.name, np.eye(4))),
                       _attr("shape", AttrType.ELEMENT, shape), _attr("children", AttrType.ELEMENT, [])]
    return dag


def flex_controls(scene: cm.Scene, warnings: list[str], fmt: int = FORMAT_VERSION) -> list[dict]:
    """The flex controllers to write: those the scene kept from a DMX (`dmx_controls`, the ones naming shape
    keys still there), then one per other shape key that is no corrective, driving that key over 0..1 (Blender
    Source Tools' default controllers); `fmt`: the model format written (its corrective separator)."""
    names: list[str] = []
    corrective: set[str] = set()
    for m in scene.meshes:
        names += [k.name for k in m.shape_keys if k.name not in names]
        sep = convert.corrective_separator([k.name for k in m.shape_keys], fmt)
        corrective |= set(convert.correctives(m, sep, warnings))
    kept = [c for c in scene.extras.get("dmx_controls", []) if c["raw"] and all(r in names for r in c["raw"])]
    driven = {r for c in kept for r in c["raw"]}
    return kept + [{"name": n, "raw": [n], "min": 0.0, "max": 1.0, "stereo": False, "eyelid": False}
                   for n in names if n not in corrective and n not in driven]


def _combination(controls: list[dict], targets: list[Element]) -> Element:
    op = _new("DmeCombinationOperator", "combinationOperator")
    elems = []
    for c in controls:
        e = _new("DmeCombinationInputControl", c["name"], rawControlNames=(AttrType.STRING, list(c["raw"])),
                 stereo=(AttrType.BOOL, int(c["stereo"])), eyelid=(AttrType.BOOL, int(c["eyelid"])),
                 flexMax=(AttrType.FLOAT, c["max"]), flexMin=(AttrType.FLOAT, c["min"]))
        e.attributes.append(_attr("wrinkleScales", AttrType.FLOAT, np.zeros(len(c["raw"]), np.float32)))
        elems.append(e)
    values = np.tile(np.array([0, 0, 0.5], np.float32), (len(controls), 1)).reshape(-1, 3)
    op.attributes += [_attr("controls", AttrType.ELEMENT, elems), _attr("controlValues", AttrType.VECTOR3, values),
                      _attr("controlValuesLagged", AttrType.VECTOR3, values),
                      _attr("usesLaggedValues", AttrType.BOOL, 0), _attr("dominators", AttrType.ELEMENT, []),
                      _attr("targets", AttrType.ELEMENT, targets)]
    return op


def _first_bad(values: np.ndarray | None) -> int | None:
    """The first row holding a NaN or an infinity, else None."""
    if values is None or not len(values):
        return None
    bad = ~np.isfinite(np.asarray(values, np.float64).reshape(len(values), -1)).all(axis=1)
    return int(np.argmax(bad)) if bad.any() else None


def refuse_bad(scene: cm.Scene) -> None:
    """ExportError naming the bone or the vertex of a value a DMX must not hold: a bind that is not finite, a
    vertex field or weight that is not finite, a joint index outside the skeleton."""
    bones = scene.skeleton.bones if scene.skeleton is not None else []
    for b in bones:
        if _first_bad(np.asarray(b.bind).reshape(1, -1)) is not None:
            raise ExportError(f"bone {b.name!r}: bind matrix is not finite")
    for m in scene.meshes:
        fields = [("position", m.positions), ("normal", m.normals), ("weight", m.weights)]
        fields += [(f"UV {name}", uv) for name, uv in m.uvs] + [(f"shape key {k.name}", k.positions)
                                                                for k in m.shape_keys]
        for what, values in fields:
            v = _first_bad(values)
            if v is not None:
                raise ExportError(f"mesh {m.name!r}: vertex {v}: {what} is not finite")
        if m.joints is not None and m.weights is not None:
            out = (m.weights > 0) & ((m.joints < 0) | (m.joints >= len(bones)))
            if out.any():
                v = int(np.argmax(out.any(axis=1)))
                raise ExportError(f"mesh {m.name!r}: vertex {v}: joint index outside the {len(bones)} bones")


# the pieces an edited export adds to an imported file (patch.py)
new_element, attribute, vertex_data, face_sets, mesh_dag, delta, combination = (
    _new, _attr, _vertex_data, _face_sets, _mesh_dag, _delta, _combination)


def target(branch: str = "AUTO", text: bool = False) -> tuple[str, int, int]:
    """(encoding, encoding version, model format version) of a new file for the `dmx_version` and `keyvalues2`
    options: the branch's binary encoding, or keyvalues2 text with the branch's model version."""
    binary, fmt = BRANCHES[DEFAULT_BRANCH if branch == "AUTO" else branch]
    return ("keyvalues2", KV2_VERSION, fmt) if text else ("binary", binary, fmt)


def describe(encoding: str, version: int, fmt: int) -> str:
    """"binary 9 (model 22)", "keyvalues2 1 (model 18)": how warnings and the QC name an encoding."""
    return f"{encoding} {version} (model {fmt})"


def _file(root: Element, to: tuple[str, int, int] = ("binary", 9, FORMAT_VERSION)) -> DmxFile:
    encoding, version, fmt = to
    return DmxFile(encoding, version, "model", fmt, [root], header=None,
                   after_header=b"\n\0" if encoding == "binary" else None)


def model_dmx(scene: cm.Scene, name: str, warnings: list[str], to: tuple[str, int, int] = ("binary", 9, FORMAT_VERSION)
              ) -> DmxFile:
    """The model file: the skeleton and every mesh (under the model, vertices in model space), in the encoding
    and model format `to` (`target`)."""
    fmt = to[2]
    skel = _Skeleton(scene.skeleton, name, warnings, fmt)
    source1 = fmt < 22
    # blend indices: jointList (or, before 11, jointTransforms) entries, the DmeModel first only in 22
    slots = np.arange(len(scene.skeleton.bones) if scene.skeleton else 0) if source1 else None
    kw = convert.KEYWORDS_OLD if source1 else convert.KEYWORDS_22
    for m in scene.meshes:
        dropped = dropped_fields(m, fmt)
        if dropped:
            warnings.append(f"mesh {m.name!r}: model {fmt} holds one UV map and no Source 2 vertex maps: "
                            f"{', '.join(dropped[:5])} not written")
    meshes = [source1_weights(m, warnings) for m in scene.meshes] if source1 else scene.meshes
    dags = [_mesh_dag(m, scene, slots, kw, source1) for m in meshes]
    model = skel.finish(dags)
    root = _new("DmElement", name)
    root.attributes += [_attr("skeleton", AttrType.ELEMENT, model), _attr("model", AttrType.ELEMENT, model)]
    controls = flex_controls(scene, warnings, fmt)
    if controls:
        targets = [d.value("shape") for d, m in zip(dags, scene.meshes) if m.shape_keys]
        root.attributes.append(_attr("combinationOperator", AttrType.ELEMENT, _combination(controls, targets)))
    return _file(root, to)


def _channel(name: str, target: Element, attribute: str, ticks: np.ndarray, values: np.ndarray,
             time: AttrType = AttrType.TIME) -> Element:
    kind = "Vector3" if attribute == "position" else "Quaternion"
    t = AttrType.VECTOR3 if attribute == "position" else AttrType.QUATERNION
    layer = _new(f"Dme{kind}LogLayer", f"{kind} log", times=(time, ticks), values=(t, values))
    log = _new(f"Dme{kind}Log", f"{kind} log")
    log.attributes.append(_attr("layers", AttrType.ELEMENT, [layer]))
    channel = _new("DmeChannel", name, toAttribute=(AttrType.STRING, attribute))
    channel.attributes += [_attr("toElement", AttrType.ELEMENT, target), _attr("mode", AttrType.INT, 1),
                           _attr("log", AttrType.ELEMENT, log)]
    return channel


def sample_rate(anim: cm.Animation, fps: float) -> float:
    """The rate an animation is sampled at: the scene's while every key falls on its frames (as an SMD)."""
    return smd_convert.sequence_rate(anim, fps)


def _sample_times(anim: cm.Animation, rate: float, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(seconds, int ticks) of the samples: every frame of `rate`, and at each step of a linear track (two keys at
    one time) a sample one tick before it (what the engine plays there: the first key, or all but) and one at its
    tick taking the second key."""
    seconds = np.arange(count) / rate
    ticks = np.round(seconds * TIME_TICKS).astype(np.int64)
    steps = np.unique(np.concatenate([np.zeros(0)] + [
        np.asarray(t, np.float64)[1:][np.diff(np.asarray(t, np.float64)) <= 0]
        for tr in anim.tracks if tr.interpolation != "STEP"
        for t in (tr.translation_times, tr.rotation_times, tr.scale_times) if t is not None and len(t) > 1]))
    steps = steps[(steps > 0) & (steps < seconds[-1])]
    if not len(steps):
        return seconds, ticks.astype(np.int32)
    at = np.round(steps * TIME_TICKS).astype(np.int64)
    all_ticks = np.unique(np.concatenate([ticks, at - 1, at]))
    by_tick = dict(zip(ticks.tolist(), seconds.tolist()))
    out = np.array([by_tick.get(k, k / TIME_TICKS) for k in all_ticks.tolist()])
    k = np.searchsorted(all_ticks, at)
    out[k] = np.maximum(out[k], steps)  # the step's own tick plays its second key
    return out, all_ticks.astype(np.int32)


def animation_dmx(skel: cm.Skeleton, anim: cm.Animation, rate: float, warnings: list[str],
                  to: tuple[str, int, int] = ("binary", 9, FORMAT_VERSION)) -> DmxFile:
    """One animation: every bone's position and orientation at every frame of `rate` over the length (and at both
    sides of each step, `_sample_times`), in the encoding and model format `to` (`target`). Key times are `time`
    values from model 12 on and int ticks before (the time frame's `startTime`, `durationTime`, `offsetTime` before
    11); the frame rate is a float in 22 and an int before, as Source 1's studiomdl reads it (Blender Source Tools'
    rules)."""
    fmt = to[2]
    count = int(round(anim.length * rate)) + 1
    seconds, ticks = _sample_times(anim, rate, count)
    t, q, s = matrix_to_trs(smd_convert.animation_locals(skel, anim, seconds))
    names = [b.name for b in skel.bones]
    bad = ~(np.isfinite(t).all(axis=(0, 2)) & np.isfinite(q).all(axis=(0, 2)))
    if bad.any():
        raise ExportError(f"animation {anim.name!r}: bone {names[int(np.argmax(bad))]!r} has keys that are not finite")
    _scale_warning(f"animation {anim.name!r}", np.swapaxes(s, 0, 1), names, warnings)
    q = q[..., [1, 2, 3, 0]]
    flip = np.cumprod(np.where(np.einsum("fnk,fnk->fn", q[1:], q[:-1]) < 0, -1.0, 1.0), axis=0)
    q[1:] *= flip[..., None]  # each key on the side of the previous one: the shorter way between them
    rig = _Skeleton(skel, skel.name, [], fmt)
    channels = []
    key_time = AttrType.TIME if fmt > 11 else AttrType.INT
    for i, name in enumerate(names):
        channels += [_channel(f"{name}_p", rig.transforms[i], "position", ticks, t[:, i], key_time),
                     _channel(f"{name}_o", rig.transforms[i], "orientation", ticks, q[:, i], key_time)]
    if fmt >= 11:
        frame = _new("DmeTimeFrame", "timeframe", start=(AttrType.TIME, 0), duration=(AttrType.TIME, ticks[-1]),
                     offset=(AttrType.TIME, 0), scale=(AttrType.FLOAT, 1.0))
    else:
        frame = _new("DmeTimeFrame", "timeframe", startTime=(AttrType.INT, 0), durationTime=(AttrType.INT, ticks[-1]),
                     offsetTime=(AttrType.INT, 0), scale=(AttrType.FLOAT, 1.0))
    clip = _new("DmeChannelsClip", anim.name, frameRate=(AttrType.FLOAT, rate) if fmt >= 22 else
                (AttrType.INT, int(round(rate))))
    clip.attributes += [_attr("timeFrame", AttrType.ELEMENT, frame), _attr("channels", AttrType.ELEMENT, channels)]
    animations = _new("DmeAnimationList", skel.name)
    animations.attributes.append(_attr("animations", AttrType.ELEMENT, [clip]))
    root = _new("DmElement", anim.name)
    root.attributes += [_attr("skeleton", AttrType.ELEMENT, rig.finish([])),
                        _attr("animationList", AttrType.ELEMENT, animations)]
    return _file(root, to)


def _encoded(d: DmxFile, what: str) -> bytes:
    """The bytes of a file written anew; an ExportError when its encoding cannot hold it (binary 2-4 index at most
    32767 distinct names)."""
    try:
        return dmx.write(d)
    except ValueError as e:
        raise ExportError(f"{what}: {e}: choose a branch of a later binary encoding, or keyvalues2") from None


def as_chosen(data: bytes, branch: str, text: bool, what: str, warnings: list[str]) -> bytes | None:
    """An imported file's bytes (kept or edited) as the options want them: unchanged under "AUTO" without text
    or when already in the chosen encoding and model version; re-encoded (the same elements) when only the
    encoding differs; None when the model version differs or the encoding cannot hold a value of the file
    (binary 2 has no time type): the model is then written anew from the scene, with a warning."""
    if branch == "AUTO" and not text:
        return data
    d = dmx.read(data)
    encoding, version, fmt = target(branch, text)
    if branch == "AUTO":
        fmt = d.format_version
    if (d.encoding, d.encoding_version, d.format_version) == (encoding, version, fmt):
        return data
    if d.format_version == fmt:
        d.encoding, d.encoding_version, d.header, d.strings, d.tail = encoding, version, None, None, b""
        d.after_header = b"\n\0" if encoding == "binary" else None
        d.prefix = d.prefix if version >= 9 else []
        try:
            return dmx.write(d)
        except ValueError:  # a type the encoding lacks
            pass
    warnings.append(f"{what}: written anew as {describe(encoding, version, fmt)} from the scene (the imported "
                    f"file is {describe(d.encoding, d.encoding_version, d.format_version)}): what SkinBridge "
                    "does not map is not kept")
    return None


def write_files(scene: cm.Scene, folder: str, name: str, fps: float = 24.0, with_qc: bool = True,
                branch: str = "AUTO", text: bool = False) -> tuple[list[str], list[str]]:
    """NAME.dmx, one DMX per animation (a skeleton is needed), and NAME.qc naming them; (paths, warnings).
    `branch` (a key of `BRANCHES`, or "AUTO": an imported file's own, else `DEFAULT_BRANCH`) and `text`
    (keyvalues2) choose the encoding and model version (`target`, `as_chosen`)."""
    warnings: list[str] = []
    refuse_bad(scene)
    to = target(branch, text)
    names = NameAllocator()
    stem = names.take(name, ".dmx")
    paths = [os.path.join(folder, stem + ".dmx")]
    kept = scene.extras.get("dmx_source")  # an unchanged imported file's own bytes (blender_io.py)
    kept = as_chosen(kept, branch, text, stem + ".dmx", warnings) if isinstance(kept, bytes) else None
    write_atomic(paths[0], kept if kept is not None else _encoded(model_dmx(scene, stem, warnings, to), stem + ".dmx"))
    sequences = []
    for anim in scene.animations if scene.skeleton is not None else []:
        rate = sample_rate(anim, fps)
        paths.append(os.path.join(folder, names.take(anim.name, ".dmx") + ".dmx"))
        kept = anim.extras.get("dmx_source")
        kept = as_chosen(kept, branch, text, os.path.basename(paths[-1]), warnings) if isinstance(kept, bytes) \
            else None
        if kept is None and to[2] < 22 and rate != round(rate):  # a Source 1 clip's frameRate is an int
            warnings.append(f"animation {anim.name!r}: sampled at {round(rate)} fps, not {rate:g}: model {to[2]} "
                            "holds a whole frame rate")
            rate = float(max(1, round(rate)))
        off = smd_convert.off_frame_warning(anim, rate, steps=False)  # a DMX keeps each step
        warnings += [off] if off else []
        write_atomic(paths[-1], kept if kept is not None else
                     _encoded(animation_dmx(scene.skeleton, anim, rate, warnings, to),
                                            os.path.basename(paths[-1])))
        sequences.append((anim.name, os.path.basename(paths[-1]), rate, False))
    if scene.animations and scene.skeleton is None:
        warnings.append(f"{len(scene.animations)} animation(s) not written: the model has no skeleton")
    if with_qc:
        notes = [f"written by SkinBridge beside the files it names: DMX {describe(*to)}, Z up, "
                 f"1 unit = 1 Blender unit, scene rate {fps:g} fps"]
        text_qc = qc.write_text(stem + ".mdl", [(stem, os.path.basename(paths[0]), None)], sequences, notes)
        paths.append(os.path.join(folder, names.take(stem, ".qc") + ".qc"))
        write_atomic(paths[-1], text_qc.encode("utf-8"))
    return paths, warnings
