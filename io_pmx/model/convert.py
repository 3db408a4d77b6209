"""Mapping between PMX records and the neutral core model (no bpy).

Conventions, stated once (docs/mmd.md §4; §4.1: positions, directions and angles each get their
own conversion, never one shared "vector" function):

* **Positions** (vertices, bone heads, tails given as offsets, morph offsets): MMD (x, y, z) → Blender
  (x, z, y) · metres per unit. The Y↔Z swap has determinant −1, so it also turns MMD's left-handed axes into
  Blender's right-handed ones; the model faces −Y in Blender. Export divides by the same metres per unit (× 12.5
  units per metre by default: `units.py`). The import's metres per unit is stored with the model (under the key
  `extras["pmx"]["scale"]`, the name earlier versions stored it by) so that export writes the same units.
* **Directions** (normals, fixed axes, local axes): (x, y, z) → (x, z, y), no scale.
* **Angles** (IK limits, Euler angles in PMX semantics, radians): kept raw in the bone's extras and converted
  only for Blender display, into the link bone's rest (edit-bone) axes: an angle about MMD axis i is an angle
  about bone-local axis m·eᵢ with m = −(S·R)ᵀ snapped to a signed axis permutation (S the Y↔Z swap, R the
  bone's rest rotation). Each interval maps as an interval (a negative sign swaps and negates its ends), so a
  reversed or NaN limit stays reversed or NaN and is refused by the validator instead of being "fixed".
* **Winding**: each triangle's corners are reversed, (a, b, c) ⇄ (c, b, a).
* **UV**: (u, v) → (u, 1 − v) for the main UV. Additional UVs are four free floats with no fixed meaning;
  they travel unchanged.

Bones: MMD bones have no orientation, so the Blender rest frame is chosen for display only: Y along the bone
(head → tail bone or tail offset; fixed axis, else up, when the tail is empty) with Blender's roll 0 rule (the
shortest rotation from +Y). Everything MMD needs travels raw in `Bone.extras["pmx"]` (file index, names,
position, layer, flags, tail, append, axes, external key, IK) and is written back unchanged while the
Blender data still matches it; what the user changed in Blender (bone head, parent, IK limits) wins.

Everything without a Blender counterpart (non-vertex morphs, display frames, rigid bodies, joints, soft
bodies, header texts) is kept raw in `Scene.extras["pmx"]` with indices as in the file; export remaps bone
and morph indices to the new order and drops references to what was deleted (with a warning).
"""
from __future__ import annotations

import base64

import numpy as np

from ...core import model as cm
from ...core import names
from ...core.errors import ExportError
from ...core.skinning import merge_repeated_bones
from . import pmx
from .pmx import BoneFlag
from .units import METRES_PER_UNIT
import os
from ...core.fileio import read_bytes
from ...core.paths import texture_to_write, why_unsafe

PI32 = float(np.float32(np.pi))
SWAP_YZ = np.array([[1, 0, 0], [0, 0, 1], [0, 1, 0]], dtype=np.float64)  # MMD ⇄ Blender axes, its own inverse
_MATCH_POSITION = 1e-4  # MMD units: a Blender bone head still "is" the file's position within this
_MATCH_ANGLE = 1e-6  # radians: an IK limit in Blender still "is" the file's value within this
_MATCH_OFFSET = 1e-5  # MMD units: a shape key offset still "is" the file's morph offset
_MATCH_WEIGHT = 1e-6
_TINY = 1e-6


# ------------------------------------------------------------------------------------------------------------
# The conversions: positions, directions, angles, UVs, winding

def positions_to_blender(p, metres_per_unit: float) -> np.ndarray:
    return np.asarray(p, dtype=np.float64)[..., [0, 2, 1]] * metres_per_unit


def positions_to_pmx(p, metres_per_unit: float) -> np.ndarray:
    return np.asarray(p, dtype=np.float64)[..., [0, 2, 1]] / metres_per_unit


def directions_to_blender(d) -> np.ndarray:
    return np.asarray(d, dtype=np.float64)[..., [0, 2, 1]]


def directions_to_pmx(d) -> np.ndarray:
    return np.asarray(d, dtype=np.float64)[..., [0, 2, 1]]


def uv_to_blender(uv) -> np.ndarray:
    uv = np.array(uv, dtype=np.float32)
    uv[..., 1] = np.float32(1) - uv[..., 1]
    return uv


uv_to_pmx = uv_to_blender  # an involution


def winding(tris) -> np.ndarray:
    """File ⇄ Blender triangle corners (an involution)."""
    return np.ascontiguousarray(np.asarray(tris).reshape(-1, 3)[:, ::-1])


def limit_axes(rest_rotation) -> np.ndarray:
    """m = −(S·R)ᵀ snapped to the nearest signed axis permutation (largest entry first)."""
    m = -(SWAP_YZ @ np.asarray(rest_rotation, dtype=np.float64)[:3, :3]).T
    out = np.zeros((3, 3))
    work = m.copy()
    for _ in range(3):
        j, i = np.unravel_index(np.argmax(np.abs(work)), work.shape)
        out[j, i] = 1.0 if work[j, i] >= 0 else -1.0
        work[j, :] = 0
        work[:, i] = 0
    return out


def _limit_axis_map(rest_rotation) -> tuple[np.ndarray, np.ndarray]:
    """For each bone-local axis j (X, Y, Z): the MMD axis it lies along, and whether it points the same way."""
    m = limit_axes(rest_rotation)
    axis = np.argmax(np.abs(m), axis=1)
    return axis, m[np.arange(3), axis] > 0


def angles_to_blender(lower, upper, rest_rotation) -> tuple[np.ndarray, np.ndarray]:
    """PMX IK limit (radians, MMD axes) → (min, max) about the bone's local X, Y, Z. float32, exact."""
    lower, upper = np.asarray(lower, np.float32), np.asarray(upper, np.float32)
    axis, same = _limit_axis_map(rest_rotation)
    return np.where(same, lower[axis], -upper[axis]), np.where(same, upper[axis], -lower[axis])


def angles_to_pmx(lo, hi, rest_rotation) -> tuple[np.ndarray, np.ndarray]:
    """The exact inverse of `angles_to_blender`."""
    lo, hi = np.asarray(lo, np.float32), np.asarray(hi, np.float32)
    axis, same = _limit_axis_map(rest_rotation)
    lower, upper = np.zeros(3, np.float32), np.zeros(3, np.float32)
    lower[axis] = np.where(same, lo, -hi)
    upper[axis] = np.where(same, hi, -lo)
    return lower, upper


def _roll_zero_rotation(d: np.ndarray) -> np.ndarray:
    """Blender's roll-0 frame of a bone pointing along unit `d`: the shortest rotation taking +Y to d."""
    y = np.array([0.0, 1.0, 0.0])
    c = float(y @ d)
    if c < -1 + 1e-9:
        return np.diag([-1.0, -1.0, 1.0])
    v = np.cross(y, d)
    k = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + k + k @ k / (1 + c)


def bone_frames(model: pmx.PmxModel, metres_per_unit: float) -> tuple[np.ndarray, np.ndarray]:
    """Blender rest matrices (4×4, no scale) and display lengths of every bone."""
    n = len(model.bones)
    heads = positions_to_blender(np.array([b.position for b in model.bones], np.float64).reshape(n, 3), metres_per_unit)
    mats = np.tile(np.eye(4), (n, 1, 1))
    lengths = np.full(n, metres_per_unit)
    for i, b in enumerate(model.bones):
        d = None
        if b.flags & BoneFlag.TAIL_IS_BONE:
            if b.tail_bone is not None and 0 <= b.tail_bone < n and b.tail_bone != i:
                d = heads[b.tail_bone] - heads[i]
        elif b.tail_offset is not None and np.all(np.isfinite(b.tail_offset)):
            d = positions_to_blender(b.tail_offset, metres_per_unit)
        if d is not None and np.linalg.norm(d) > _TINY:
            lengths[i] = float(np.linalg.norm(d))
            d = d / lengths[i]
        elif b.fixed_axis is not None and np.all(np.isfinite(b.fixed_axis)) and np.linalg.norm(b.fixed_axis) > _TINY:
            d = directions_to_blender(b.fixed_axis)
            d = d / np.linalg.norm(d)
        else:
            d = np.array([0.0, 0.0, 1.0])
        mats[i, :3, :3] = _roll_zero_rotation(d)
        mats[i, :3, 3] = heads[i] if np.all(np.isfinite(heads[i])) else 0.0
    return mats, lengths


# ------------------------------------------------------------------------------------------------------------
# Raw records ⇄ JSON-compatible values (floats keep their float32 bits: float32 → float64 → float32 is exact)

def _plain(v):
    if isinstance(v, np.ndarray):
        return [float(x) for x in v.reshape(-1)] if v.dtype.kind == "f" else [int(x) for x in v.reshape(-1)]
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, (np.integer, np.bool_)):
        return int(v)
    return v


def _f32(v, n: int | None = None):
    if v is None:
        return None
    if n is None:
        return np.float32(v)
    return np.array(v, dtype="<f4").reshape(n)


def records_to_text(records: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(records).tobytes()).decode("ascii")


def records_from_text(text: str, spec: pmx.Spec) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=pmx.memory_dtype(spec)).copy()


def fixed_to_dict(obj, spec: pmx.Spec) -> dict:
    out = {"name": obj.name, "name_e": obj.name_e}
    for name, _, _ in spec:
        out[name] = _plain(getattr(obj, name))
    return out


def fixed_from_dict(cls, data: dict, spec: pmx.Spec):
    values = {"name": data["name"], "name_e": data["name_e"]}
    for name, kind, shape in spec:
        v = data[name]
        if kind == "f4":
            values[name] = _f32(v, shape[0] if shape else None)
        elif shape:
            values[name] = np.array(v, dtype="<i4").reshape(shape)
        else:
            values[name] = int(v)
    return cls(**values)


def bone_to_dict(i: int, b: pmx.PmxBone) -> dict:
    out = {"index": i, "name": b.name, "name_e": b.name_e, "position": _plain(b.position), "layer": int(b.layer),
           "flags": int(b.flags), "parent": int(b.parent)}
    for name in ("tail_bone", "append_parent", "external_key"):
        v = getattr(b, name)
        if v is not None:
            out[name] = int(v)
    for name in ("tail_offset", "append_ratio", "fixed_axis", "local_x", "local_z"):
        v = getattr(b, name)
        if v is not None:
            out[name] = _plain(v)
    if b.ik is not None:
        out["ik"] = {"target": int(b.ik.target), "loop": int(b.ik.loop), "limit_angle": float(b.ik.limit_angle),
                     "links": [{"bone": int(link.bone), "lower": _plain(link.lower) if link.lower is not None else None,
                                "upper": _plain(link.upper) if link.upper is not None else None}
                               for link in b.ik.links]}
    return out


def bone_from_dict(d: dict) -> pmx.PmxBone:
    b = pmx.PmxBone(name=d["name"], name_e=d["name_e"], position=_f32(d["position"], 3), parent=d["parent"],
                    layer=d["layer"], flags=d["flags"])
    b.tail_bone = d.get("tail_bone")
    b.tail_offset = _f32(d.get("tail_offset"), 3)
    b.append_parent = d.get("append_parent")
    b.append_ratio = _f32(d.get("append_ratio"))
    b.fixed_axis = _f32(d.get("fixed_axis"), 3)
    b.local_x = _f32(d.get("local_x"), 3)
    b.local_z = _f32(d.get("local_z"), 3)
    b.external_key = d.get("external_key")
    if d.get("ik") is not None:
        ik = d["ik"]
        b.ik = pmx.PmxIK(target=ik["target"], loop=ik["loop"], limit_angle=np.float32(ik["limit_angle"]),
                         links=[pmx.PmxIKLink(link["bone"], _f32(link["lower"], 3), _f32(link["upper"], 3))
                                for link in ik["links"]])
    return b


def material_to_dict(mat: pmx.PmxMaterial) -> dict:
    out = fixed_to_dict(mat, pmx.MATERIAL_HEAD)
    out.update(toon=int(mat.toon), memo=mat.memo)
    return out


def material_from_dict(d: dict) -> pmx.PmxMaterial:
    mat = fixed_from_dict(pmx.PmxMaterial, {k: v for k, v in d.items() if k not in ("toon", "memo")},
                          pmx.MATERIAL_HEAD)
    mat.toon = int(d["toon"])
    mat.memo = d["memo"]
    return mat


def _morph_to_dict(m: pmx.PmxMorph) -> dict:
    return {"name": m.name, "name_e": m.name_e, "panel": int(m.panel), "kind": int(m.kind),
            "offsets": records_to_text(m.offsets)}


def _morph_from_dict(d: dict) -> pmx.PmxMorph:
    return pmx.PmxMorph(d["name"], d["name_e"], d["panel"], d["kind"],
                        records_from_text(d["offsets"], pmx.MORPH_OFFSETS[d["kind"]]))


morph_from_dict = _morph_from_dict  # the Blender sliders read the stored morphs back
morph_to_dict = _morph_to_dict  # and store a bone morph made from a pose


def _soft_to_dict(s: pmx.PmxSoftBody) -> dict:
    out = fixed_to_dict(s, pmx.SOFT_BODY)
    out.update(anchors=records_to_text(s.anchors), pins=[int(p) for p in s.pins])
    return out


def _soft_from_dict(d: dict) -> pmx.PmxSoftBody:
    s = fixed_from_dict(pmx.PmxSoftBody, {k: v for k, v in d.items() if k not in ("anchors", "pins")},
                        pmx.SOFT_BODY)
    s.anchors = records_from_text(d["anchors"], pmx.SOFT_ANCHOR)
    s.pins = np.array(d["pins"], dtype="<i4")
    return s


# ------------------------------------------------------------------------------------------------------------
# PMX → core

def _skin(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-vertex (joints, weights) as Blender vertex groups hold them: unused slots weight 0, a bone named
    twice in one vertex merged into its first slot (a vertex group holds one weight per bone)."""
    joints = v["bones"].astype(np.int32).copy()
    weights = v["weights"].astype(np.float32).copy()
    count = np.array(pmx.DEFORM_BONE_COUNT, np.int64)[np.minimum(v["deform"], 4)]
    used = np.arange(4)[None, :] < count[:, None]
    weights[~used | (joints < 0)] = 0
    weights = merge_repeated_bones(joints, weights)
    joints[weights == 0] = 0
    return joints, weights


def _name_places(model: pmx.PmxModel) -> dict[str, int | str]:
    """File offsets of the bone names (Japanese) that did not decode (for `names.cleaned`)."""
    return {b.name: b.at["record"] + 4 for b in model.bones
            if names.bad_byte(b.name) is not None and "record" in b.at}


@names.cleaned(_name_places)
def to_scene(model: pmx.PmxModel, name: str, metres_per_unit: float = METRES_PER_UNIT
             ) -> tuple[cm.Scene, list[str]]:
    """Map the whole model; nothing is dropped: what Blender cannot show is kept raw in extras."""
    warnings: list[str] = []
    scene = cm.Scene(name=name)
    n_bones = len(model.bones)
    if n_bones:
        rest, lengths = bone_frames(model, metres_per_unit)
        skel = cm.Skeleton(name=name)
        for i, b in enumerate(model.bones):
            parent = b.parent if 0 <= b.parent < n_bones and b.parent != i else -1
            skel.bones.append(cm.Bone(name=b.name or f"bone{i}", parent=parent, bind=rest[i],
                                      rest_translation=np.zeros(3), rest_rotation=np.array([1.0, 0, 0, 0]),
                                      rest_scale=np.ones(3), extras={"pmx": bone_to_dict(i, b)}))
        skel.set_rest_from_binds()
        scene.skeleton = skel
        scene.extras["pmx_build"] = {"lengths": [float(x) for x in lengths]}

    v = model.vertices
    tris = np.asarray(model.indices, dtype=np.int64).reshape(-1, 3)
    mesh = cm.Mesh(name=name, positions=positions_to_blender(v["position"], metres_per_unit).astype(np.float32),
                   triangles=winding(tris).astype(np.int32),
                   normals=directions_to_blender(v["normal"]).astype(np.float32),
                   uvs=[("UVMap", uv_to_blender(v["uv"]))])
    counts = np.array([mat.index_count // 3 for mat in model.materials], np.int64)
    mesh.material_indices = np.repeat(np.arange(len(counts), dtype=np.int32), counts)[:len(tris)]
    if len(mesh.material_indices) < len(tris):  # the validator refuses this on import; keep the mapping total
        mesh.material_indices = np.concatenate([mesh.material_indices,
                                                np.zeros(len(tris) - len(mesh.material_indices), np.int32)])
    mesh.materials = list(range(len(model.materials)))
    if n_bones:
        mesh.joints, mesh.weights = _skin(v)
    mesh.extras["pmx"] = {
        "deform": v["deform"].copy(), "bones": v["bones"].copy(), "weights": v["weights"].copy(),
        "sdef_c": v["sdef_c"].copy(), "sdef_r0": v["sdef_r0"].copy(), "sdef_r1": v["sdef_r1"].copy(),
        "edge_scale": v["edge_scale"].copy(), "add_uv": v["add_uv"].copy(),
        "position": v["position"].copy(), "normal": v["normal"].copy(), "uv": v["uv"].copy(),
    }
    base = mesh.positions.astype(np.float64)
    for k, morph in enumerate(model.morphs):
        if morph.kind != pmx.MORPH_VERTEX:
            continue
        pos = base.copy()
        idx = morph.offsets["vertex"].astype(np.int64)
        ok = (idx >= 0) & (idx < len(v))
        np.add.at(pos, idx[ok], positions_to_blender(morph.offsets["offset"][ok], metres_per_unit))
        mesh.shape_keys.append(cm.ShapeKey(morph.name or f"morph{k}", pos))
    if len(v) or len(tris):
        scene.meshes.append(mesh)

    for i, mat in enumerate(model.materials):
        out = cm.Material(name=mat.name or f"material{i}", base_color=tuple(float(c) for c in mat.diffuse),
                          double_sided=bool(mat.draw_flags & 0x01), extras={"pmx": material_to_dict(mat)})
        if float(mat.diffuse[3]) < 1.0:
            out.alpha_mode = "BLEND"
        if 0 <= mat.texture < len(model.textures):
            path = model.textures[mat.texture]
            out.base_color_texture = cm.Texture(name=path.replace("\\", "/").split("/")[-1], path=path)
        scene.materials.append(out)

    scene.extras["pmx"] = {
        "scale": float(metres_per_unit),
        "name": model.name, "name_e": model.name_e, "comment": model.comment, "comment_e": model.comment_e,
        "encoding": int(model.encoding),
        "version": float(model.version) if model.version is not None else None,
        "index_sizes": [model.index_sizes.of(k) for k in pmx.INDEX_KINDS] if model.index_sizes else None,
        "textures": list(model.textures),
        "morphs": [_morph_to_dict(m) for m in model.morphs],
        "display_frames": [{"name": f.name, "name_e": f.name_e, "special": int(f.special),
                            "elements": [[int(a), int(b)] for a, b in f.elements]} for f in model.display_frames],
        "rigid_bodies": [fixed_to_dict(r, pmx.RIGID_BODY) for r in model.rigid_bodies],
        "joints": [fixed_to_dict(j, pmx.JOINT) for j in model.joints],
        "soft_bodies": [_soft_to_dict(s) for s in model.soft_bodies],
    }
    return scene, warnings


# What `compare` can ask of a PMX: bone heads, parents, vertices and weights. A PMX bone has no rest
# orientation (only a head and a tail, which `to_scene` turns into one), so orientations are not compared.
PMX_SKIPS = ("rest orientation", "default pose orientation")


def compare_view(model: pmx.PmxModel) -> dict:
    """How `compare` should read a PMX's skeleton: `match` gives, per bone, the names it may be matched by,
    the English name first (where the export kept the source's full name, or the rig the source bone's),
    then the name; `skipped` lists the skeleton fields a PMX does not hold."""
    return {"match": [[b.name_e, b.name] if b.name_e and b.name_e != b.name else [b.name] for b in model.bones],
            "skipped": list(PMX_SKIPS)}


def scene_compare_view(scene: cm.Scene) -> dict | None:
    """`compare_view` for a scene gathered from Blender (capability `compare_view`) whose bones a PMX import
    made: each such bone keeps its file record in `extras["pmx"]`, and is matched by the record's English name,
    then its PMX name, then Blender's name, as the same bones read from the file are. None when no bone came
    from a PMX (bones by name, every field compared)."""
    bones = scene.skeleton.bones if scene.skeleton is not None else []
    records = [b.extras.get("pmx") if isinstance(b.extras.get("pmx"), dict) else None for b in bones]
    if not any(r is not None for r in records):
        return None
    match = []
    for b, r in zip(bones, records):
        names = [(r or {}).get("name_e"), (r or {}).get("name"), b.name]
        match.append(list(dict.fromkeys(n for n in names if isinstance(n, str) and n)))
    return {"match": match, "skipped": list(PMX_SKIPS)}


def load(path: str, data: bytes | None = None, with_animations: bool = True, motions=()) -> tuple[cm.Scene, list[str]]:
    """A `.pmx` file as a core Scene through `to_scene` (the registry's `load`, for `compare`). A PMX holds no
    animation; `motions` beside it (VMD files) are not posed onto the model here: each is named in a warning."""
    if data is None:
        data = read_bytes(path)
    model = pmx.read(data)
    scene, warnings = to_scene(model, os.path.splitext(os.path.basename(os.fspath(path)))[0])
    scene.extras["compare"] = compare_view(model)
    for motion in motions:
        warnings.append(f"{os.path.basename(os.fspath(motion))}: a VMD is compared on its own (compare it with "
                        "another .vmd), not posed onto the model")
    return scene, warnings


# ------------------------------------------------------------------------------------------------------------
# core → PMX

def _close(a, b, tol: float) -> bool:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= np.maximum(
        tol, 4 * np.spacing(np.abs(b).astype(np.float32)))))


def _remap(index: int | None, table: dict[int, int]) -> int | None:
    if index is None:
        return None
    if index < 0:
        return index
    return table.get(index, -1)


def _export_ik_limits(raw_link: dict, local: list | None, rest: np.ndarray):
    """(lower, upper) of one IK link: the file's raw values while Blender still shows them, else Blender's."""
    if local is None:
        return None, None
    lo, hi = np.asarray(local[0], np.float32), np.asarray(local[1], np.float32)
    if raw_link.get("lower") is not None and raw_link.get("upper") is not None:
        raw_lo, raw_hi = _f32(raw_link["lower"], 3), _f32(raw_link["upper"], 3)
        shown_lo, shown_hi = angles_to_blender(raw_lo, raw_hi, rest)
        if _close(lo, shown_lo, _MATCH_ANGLE) and _close(hi, shown_hi, _MATCH_ANGLE):
            return raw_lo, raw_hi
    return angles_to_pmx(lo, hi, rest)


def _bones_from_scene(skel: cm.Skeleton, metres_per_unit: float, warnings: list[str]
                      ) -> tuple[list[pmx.PmxBone], list[int], dict]:
    """PMX bones in file order (bones added in Blender after them), the skeleton index of each, and the map
    from file index to new index."""
    n = len(skel.bones)
    raw = [b.extras.get("pmx") if isinstance(b.extras.get("pmx"), dict) else None for b in skel.bones]
    order = sorted(range(n), key=lambda i: (0, raw[i]["index"]) if raw[i] is not None else (1, i))
    new_of_skel = {s: k for k, s in enumerate(order)}
    file_to_new = {raw[s]["index"]: k for k, s in enumerate(order) if raw[s] is not None}
    bones: list[pmx.PmxBone] = []
    for s in order:
        sb, r = skel.bones[s], raw[s]
        head = positions_to_pmx(sb.bind[:3, 3], metres_per_unit)
        parent = new_of_skel[sb.parent] if sb.parent >= 0 else -1
        if r is None:
            b = pmx.PmxBone(name=sb.name, position=head.astype(np.float32), parent=parent,
                            flags=int(BoneFlag.TAIL_IS_BONE | BoneFlag.ROTATABLE | BoneFlag.VISIBLE
                                      | BoneFlag.OPERABLE), tail_bone=-1)
            bones.append(b)
            continue
        b = bone_from_dict(r)
        if not _close(head, b.position, _MATCH_POSITION * max(1.0, float(np.abs(b.position).max()))):
            b.position = head.astype(np.float32)
        b.parent = parent
        if b.tail_bone is not None:
            b.tail_bone = _remap(b.tail_bone, file_to_new)
        if b.append_parent is not None:
            b.append_parent = _remap(b.append_parent, file_to_new)
        if b.ik is not None:
            b.ik.target = _remap(b.ik.target, file_to_new)
            links = []
            for raw_link, link in zip(r["ik"]["links"], b.ik.links):
                new = _remap(link.bone, file_to_new)
                if new is None or new < 0:
                    warnings.append(f"bone {b.name}: IK link {raw_link['bone']} was deleted in Blender; dropped")
                    continue
                link.bone = new
                link_bone = skel.bones[order[new]]
                if "pmx_ik_limit" in link_bone.extras:  # read from Blender: it wins over the file's values
                    rest = link_bone.bind[:3, :3] / np.linalg.norm(link_bone.bind[:3, :3], axis=0)
                    link.lower, link.upper = _export_ik_limits(raw_link, link_bone.extras["pmx_ik_limit"], rest)
                links.append(link)
            b.ik.links = links
        bones.append(b)
    return bones, order, file_to_new


def _vertex_skin(mesh: cm.Mesh, skel_to_new: np.ndarray, file_to_new: dict[int, int], warnings: list[str]):
    """Deform type, bones and weights of every exported vertex: the file's own record where Blender still holds
    the same influences, else from Blender's weights (1 → BDEF1, 2 → BDEF2, 3–4 → BDEF4, normalised as
    Blender's armature deform normalises them)."""
    n = mesh.vertex_count
    deform = np.zeros(n, np.uint8)
    bones = np.full((n, 4), -1, np.int32)
    weights = np.zeros((n, 4), np.float32)
    sdef = {k: np.zeros((n, 3), np.float32) for k in ("sdef_c", "sdef_r0", "sdef_r1")}
    if mesh.weights is None or mesh.joints is None or not n:
        bones[:, 0] = 0
        weights[:, 0] = 1
        return deform, bones, weights, sdef
    w = np.asarray(mesh.weights, np.float32)
    j = np.where(w > 0, skel_to_new[np.asarray(mesh.joints, np.int64)], -1)
    w = np.where(j >= 0, w, 0).astype(np.float32)
    if w.shape[1] < 4:
        w = np.pad(w, ((0, 0), (0, 4 - w.shape[1])))
        j = np.pad(j, ((0, 0), (0, 4 - j.shape[1])), constant_values=-1)
    order = np.argsort(-w, axis=1, kind="stable")  # strongest first
    bw, bj = (a[:, :4] for a in _take_rows(order, w, j))
    k = (bw > 0).sum(axis=1)
    unweighted = k == 0
    if unweighted.any():
        warnings.append(f"{mesh.name}: {int(unweighted.sum())} vertices have no bone weight; weighted to bone 0")
        bj[unweighted, 0] = 0
        bw[unweighted, 0] = 1
        k[unweighted] = 1
    norm = (bw / bw.sum(axis=1)[:, None]).astype(np.float32)
    deform[:] = np.where(k == 1, pmx.BDEF1, np.where(k == 2, pmx.BDEF2, pmx.BDEF4))
    bones[:] = np.where(norm > 0, bj, 0)
    weights[:] = norm
    one, two = k == 1, k == 2
    bones[one, 1:] = -1
    weights[one] = (1, 0, 0, 0)
    bones[two, 2:] = -1
    weights[two, 1] = np.float32(1) - weights[two, 0]
    weights[two, 2:] = 0
    raw = mesh.extras.get("pmx")
    if raw is not None:
        rb = np.asarray(raw["bones"], np.int64)
        lookup = np.full(max(file_to_new, default=-1) + 2, -3, np.int64)  # -3: a bone deleted in Blender
        for old, new in file_to_new.items():
            lookup[old] = new
        mapped = np.where(rb >= 0, lookup[np.clip(rb, -1, len(lookup) - 2)], rb)
        mapped = np.where(rb >= len(lookup) - 1, -3, mapped)
        rd = np.asarray(raw["deform"], np.int64)
        rw = np.asarray(raw["weights"], np.float32)
        ja, wa = _merged(mapped, rw, rd)
        jb, wb = _merged(np.where(bw > 0, bj, -1), bw, np.full(n, pmx.BDEF4))
        ok = _same_influences(ja, wa, jb, wb, 4 * _MATCH_WEIGHT) & ~((ja == -3) & (wa != 0)).any(axis=1)
        sel = np.flatnonzero(ok)
        deform[sel] = rd[sel]
        bones[sel] = mapped[sel]
        weights[sel] = rw[sel]
        for key in sdef:
            sdef[key][sel] = raw[key][sel]
    return deform, bones, weights, sdef


def _take_rows(order: np.ndarray, *arrays: np.ndarray) -> list[np.ndarray]:
    """Each (n, k) array's rows permuted by `order` (n, k), as `np.take_along_axis(a, order, 1)` gives them,
    through one flat index (several times quicker than the broadcast index take_along_axis builds)."""
    n, k = order.shape
    flat = (order + (np.arange(n, dtype=np.int64) * k)[:, None]).reshape(-1)
    return [np.ascontiguousarray(a).reshape(-1)[flat].reshape(n, k) for a in arrays]


def _merged(j: np.ndarray, w: np.ndarray, deform: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Influences as (bone, weight) sorted by bone, a bone named twice summed, unused slots (-1, 0)."""
    count = np.array(pmx.DEFORM_BONE_COUNT, np.int64)[np.minimum(deform, 4)]
    used = (np.arange(4)[None, :] < count[:, None]) & (w != 0) & (j != -1)
    j = np.where(used, j, -2).astype(np.int64)
    w = np.where(used, w, 0).astype(np.float64)
    for k in range(1, 4):
        for i in range(k):
            same = (j[:, k] == j[:, i]) & (j[:, k] != -2)
            w[same, i] += w[same, k]
            w[same, k] = 0
            j[same, k] = -2
    order = np.argsort(j, axis=1, kind="stable")
    return tuple(_take_rows(order, j, w))


def _same_influences(ja, wa, jb, wb, tol) -> np.ndarray:
    """Row-wise: the same bones with weights within `tol` (weights ≤ tol count as absent)."""
    def clean(j, w):
        j = np.where(np.abs(w) > tol, j, -2)
        w = np.where(np.abs(w) > tol, w, 0)
        order = np.argsort(j, axis=1, kind="stable")
        return _take_rows(order, j, w)
    ja, wa = clean(ja, wa)
    jb, wb = clean(jb, wb)
    return (ja == jb).all(axis=1) & (np.abs(wa - wb) <= tol).all(axis=1)


def from_scene(scene: cm.Scene, metres_per_unit: float | None = None) -> tuple[pmx.PmxModel, list[str]]:
    """Build PMX records from a gathered scene (rest data, Blender axes). The caller validates before writing."""
    warnings: list[str] = []
    extras = scene.extras.get("pmx") or {}
    if metres_per_unit is None:
        metres_per_unit = float(extras.get("scale", METRES_PER_UNIT))
    if not metres_per_unit > 0:
        raise ExportError(f"{metres_per_unit} metres per unit is not positive")
    model = _header_from_scene(scene, extras)
    skel = scene.skeleton
    skel_to_new, file_to_new = _skeleton_from_scene(model, skel, metres_per_unit, warnings)
    materials = _materials_from_scene(model, scene, extras, warnings)
    vertex_base = _geometry_from_scene(model, scene, materials, metres_per_unit, skel_to_new, file_to_new, warnings)
    morph_to_new = _morphs_from_scene(model, scene, extras, vertex_base, metres_per_unit, file_to_new, warnings)
    _display_frames_from_scene(model, extras, skel, skel_to_new, file_to_new, morph_to_new)
    _physics_from_scene(model, extras, file_to_new)
    return model, warnings


def _header_from_scene(scene: cm.Scene, extras: dict) -> pmx.PmxModel:
    """An empty model with the file's names, comments, encoding, version and index sizes (else defaults)."""
    model = pmx.PmxModel(name=extras.get("name", scene.name), name_e=extras.get("name_e", ""),
                         comment=extras.get("comment", ""), comment_e=extras.get("comment_e", ""),
                         encoding=int(extras.get("encoding", pmx.ENCODING_UTF16)))
    if extras.get("version") is not None:
        model.version = np.float32(extras["version"])
    if extras.get("index_sizes"):
        model.index_sizes = pmx.IndexSizes(*extras["index_sizes"])
    return model


def _skeleton_from_scene(model: pmx.PmxModel, skel: cm.Skeleton | None, metres_per_unit: float,
                         warnings: list[str]) -> tuple[np.ndarray, dict[int, int]]:
    """`model.bones`; returns the new index of each skeleton bone and the map from file index to new index."""
    if skel is not None and len(skel.bones):
        model.bones, order, file_to_new = _bones_from_scene(skel, metres_per_unit, warnings)
        skel_to_new = np.empty(len(order), np.int64)
        skel_to_new[np.array(order)] = np.arange(len(order))
        return skel_to_new, file_to_new
    warnings.append("no armature: a single root bone is written (MMD needs at least one bone)")
    model.bones = [pmx.PmxBone(name="センター", name_e="center", flags=0x1E, tail_offset=pmx.f4(0, 1, 0))]
    return np.zeros(1, np.int64), {}


def _materials_from_scene(model: pmx.PmxModel, scene: cm.Scene, extras: dict,
                          warnings: list[str]) -> list[pmx.PmxMaterial]:
    """`model.textures` (the file's table first, so indices stay, then new paths; each a safe relative path:
    absolute, UNC and escaping paths become the file's name alone, with a warning) and the materials (their
    index counts are set with the geometry)."""
    textures = list(extras.get("textures", []))
    tex_index = {p: i for i, p in enumerate(textures)}

    def texture_of(path: str | None) -> int:
        if not path:
            return -1
        if path not in tex_index:
            tex_index[path] = len(textures)
            textures.append(path)
        return tex_index[path]

    materials: list[pmx.PmxMaterial] = []
    for mat in scene.materials:
        raw = mat.extras.get("pmx")
        out = material_from_dict(raw) if isinstance(raw, dict) else pmx.PmxMaterial(name=mat.name, draw_flags=0x1E)
        if raw is None:
            out.name = mat.name
        shown = np.asarray(mat.base_color, np.float32)
        if not _close(shown, out.diffuse, 1e-6):
            out.diffuse = shown.astype("<f4")
        if bool(out.draw_flags & 0x01) != bool(mat.double_sided):
            out.draw_flags = (out.draw_flags & ~0x01) | (0x01 if mat.double_sided else 0)
        tex = mat.extras.get("pmx_texture_path", "__keep__")
        if tex != "__keep__":
            out.texture = texture_of(tex)
        elif raw is None and mat.base_color_texture is not None:
            out.texture = texture_of(mat.base_color_texture.path or mat.base_color_texture.name)
        for name in ("sphere_texture",) + (("toon",) if out.shared_toon == 0 else ()):
            v = getattr(out, name)
            if v >= len(textures):
                setattr(out, name, -1)
        materials.append(out)

    in_file = list(extras.get("textures", []))
    textures = _reuse_texture_slots(textures, len(in_file), materials, [m.extras.get("pmx") for m in scene.materials])
    model.textures = []
    for i, path in enumerate(textures):
        if i < len(in_file) and path == in_file[i] and why_unsafe(path) is None:
            model.textures.append(path)  # the file's own spelling ("./ref.jpg", "tex/a.png") while it is safe
            continue
        safe, warning = texture_to_write(path, "\\")
        if warning:
            warnings.append(warning)
        model.textures.append(safe)
    return materials


def _texture_refs(mat: pmx.PmxMaterial) -> list[str]:
    """The fields of a material that index the texture table."""
    return ["texture", "sphere_texture"] + (["toon"] if mat.shared_toon == 0 else [])


def _reuse_texture_slots(textures: list[str], n_file: int, materials: list[pmx.PmxMaterial],
                         raw: list[dict | None]) -> list[str]:
    """A material given a new image takes its old image's place in the texture table when no material uses
    that one any more (the table keeps its size and every other index; docs/mmd.md "A new image"); new images
    with no such place follow the file's. Updates the materials' indices; returns the table."""
    used = {getattr(m, f) for m in materials for f in _texture_refs(m)}
    new_index = {j: j for j in range(len(textures))}
    for mat, r in zip(materials, raw):
        old = r.get("texture", -1) if isinstance(r, dict) else -1
        if mat.texture >= n_file and 0 <= old < n_file and old not in used and new_index[mat.texture] >= n_file:
            new_index[mat.texture] = old
            used.add(old)
    if all(new_index[j] == j for j in new_index):
        return textures
    out = list(textures[:n_file])
    for j in range(n_file, len(textures)):
        if new_index[j] < n_file:
            out[new_index[j]] = textures[j]
        else:
            new_index[j] = len(out)
            out.append(textures[j])
    for mat in materials:
        for f in _texture_refs(mat):
            v = getattr(mat, f)
            if v in new_index:
                setattr(mat, f, new_index[v])
    return out


def _geometry_from_scene(model: pmx.PmxModel, scene: cm.Scene, materials: list[pmx.PmxMaterial], metres_per_unit: float,
                         skel_to_new: np.ndarray, file_to_new: dict[int, int], warnings: list[str]) -> list[int]:
    """`model.vertices`, `model.indices` and `model.materials` (with their index counts): every mesh appended,
    triangles grouped by material, in Blender order within a material. Returns each mesh's first vertex."""
    positions, normals, uvs, edges, add_uvs, tri_parts, tri_mats = [], [], [], [], [], [], []
    deforms, bones_l, weights_l, sdef_l = [], [], [], {k: [] for k in ("sdef_c", "sdef_r0", "sdef_r1")}
    n_add = 0
    for mesh in scene.meshes:
        raw = mesh.extras.get("pmx")
        if raw is not None and raw.get("add_uv") is not None:
            n_add = max(n_add, raw["add_uv"].shape[1])
    vertex_base = []
    start = 0
    for mesh in scene.meshes:
        n = mesh.vertex_count
        vertex_base.append(start)
        raw = mesh.extras.get("pmx")
        pos, nor, uv = _vertex_attributes(mesh, raw, metres_per_unit)
        positions.append(pos)
        normals.append(nor)
        uvs.append(uv)
        add = np.zeros((n, n_add, 4), np.float32)
        edge = np.ones(n, np.float32)
        if raw is not None:
            if raw.get("add_uv") is not None:
                k = raw["add_uv"].shape[1]
                add[:, :k] = raw["add_uv"]
            edge = np.asarray(raw["edge_scale"], np.float32)
        add_uvs.append(add)
        edges.append(edge)
        d, b, w, s = _vertex_skin(mesh, skel_to_new, file_to_new, warnings)
        deforms.append(d)
        bones_l.append(b)
        weights_l.append(w)
        for key in sdef_l:
            sdef_l[key].append(s[key])
        slots = np.asarray(mesh.materials, np.int64) if mesh.materials else np.zeros(1, np.int64)
        mi = np.asarray(mesh.material_indices if mesh.material_indices is not None else
                        np.zeros(len(mesh.triangles)), np.int64)
        tri_parts.append(winding(mesh.triangles).astype(np.int64) + start)
        tri_mats.append(slots[np.clip(mi, 0, len(slots) - 1)] if len(mi) else np.zeros(0, np.int64))
        start += n
    n_vertices = start
    v = np.zeros(n_vertices, pmx.vertex_dtype(n_add))
    if n_vertices:
        v["position"] = np.concatenate(positions)
        v["normal"] = np.concatenate(normals)
        v["uv"] = np.concatenate(uvs)
        v["add_uv"] = np.concatenate(add_uvs)
        v["edge_scale"] = np.concatenate(edges)
        v["deform"] = np.concatenate(deforms)
        v["bones"] = np.concatenate(bones_l)
        v["weights"] = np.concatenate(weights_l)
        for key in sdef_l:
            v[key] = np.concatenate(sdef_l[key])
    model.vertices = v
    tris = np.concatenate(tri_parts) if tri_parts else np.zeros((0, 3), np.int64)
    mats = np.concatenate(tri_mats) if tri_mats else np.zeros(0, np.int64)
    order = np.argsort(mats, kind="stable")
    model.indices = tris[order].reshape(-1).astype(np.int32)
    counts = np.bincount(mats, minlength=len(materials)) if len(mats) else np.zeros(len(materials), np.int64)
    for mat, c in zip(materials, counts):
        mat.index_count = int(c) * 3
    model.materials = materials
    return vertex_base


def _vertex_attributes(mesh: cm.Mesh, raw: dict | None, metres_per_unit: float
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, normals and main UVs of one mesh in PMX terms; the file's exact floats wherever Blender still
    holds them."""
    n = mesh.vertex_count
    pos = positions_to_pmx(mesh.positions, metres_per_unit).astype(np.float32)
    nor = (directions_to_pmx(mesh.normals) if mesh.normals is not None else np.zeros((n, 3))).astype(np.float32)
    main = next((uv for name, uv in mesh.uvs), None)
    uv = uv_to_pmx(main) if main is not None else np.zeros((n, 2), np.float32)
    if raw is not None:
        for now, key, tol in ((pos, "position", _MATCH_POSITION), (nor, "normal", 1e-5), (uv, "uv", 1e-5)):
            exact = np.asarray(raw[key], np.float32)
            shown = exact.astype(np.float64)
            if key == "normal":  # Blender keeps unit normals: compare with the file's, normalised
                shown = shown / np.maximum(np.linalg.norm(shown, axis=1, keepdims=True), 1e-30)
            same = np.all(np.abs(now.astype(np.float64) - shown) <= np.maximum(
                tol * np.maximum(1.0, np.abs(exact)), 4 * np.spacing(np.abs(exact))), axis=1)
            now[same] = exact[same]
    return pos, nor, uv


def _morphs_from_scene(model: pmx.PmxModel, scene: cm.Scene, extras: dict, vertex_base: list[int],
                       metres_per_unit: float, file_to_new: dict[int, int], warnings: list[str]) -> dict[int, int]:
    """`model.morphs` in the file's order, vertex morphs from the shape keys (raw offsets while unchanged), new
    shape keys after them; offsets that refer to deleted elements dropped. Returns file morph index → new."""
    keys = {}
    for mi_, mesh in enumerate(scene.meshes):
        for sk in mesh.shape_keys:
            keys.setdefault(sk.name, (mi_, sk))
    morph_names_used: set[str] = set()
    old_morphs = [_morph_from_dict(d) for d in extras.get("morphs", [])]
    morph_keep: list[tuple[int, pmx.PmxMorph]] = []
    shape_key_of = extras.get("shape_keys", {})  # file morph index → Blender shape key name
    for k, morph in enumerate(old_morphs):
        if morph.kind == pmx.MORPH_VERTEX:
            key_name = shape_key_of.get(str(k), morph.name)
            if key_name not in keys:
                warnings.append(f"morph {morph.name}: its shape key {key_name!r} is gone; morph dropped")
                continue
            morph_names_used.add(key_name)
            mi_, sk = keys[key_name]
            morph.offsets = _vertex_offsets(scene.meshes[mi_], sk, vertex_base[mi_], metres_per_unit, morph.offsets)
        morph_keep.append((k, morph))
    for name, (mi_, sk) in keys.items():
        if name in morph_names_used:
            continue
        morph = pmx.PmxMorph(name=name, panel=4, kind=pmx.MORPH_VERTEX)
        morph.offsets = _vertex_offsets(scene.meshes[mi_], sk, vertex_base[mi_], metres_per_unit, None)
        morph_keep.append((-1, morph))
    morph_to_new = {k: i for i, (k, _) in enumerate(morph_keep) if k >= 0}
    n_mat = len(model.materials)
    n_vertices = len(model.vertices)
    for _, morph in morph_keep:
        o = morph.offsets
        if morph.kind in (pmx.MORPH_GROUP, pmx.MORPH_FLIP):
            o["morph"] = [morph_to_new.get(int(x), -1) for x in o["morph"]]
            keep = o["morph"] >= 0
        elif morph.kind == pmx.MORPH_BONE:
            o["bone"] = [file_to_new.get(int(x), -1) for x in o["bone"]]
            keep = o["bone"] >= 0
        elif morph.kind in range(pmx.MORPH_UV, pmx.MORPH_UV4 + 1):
            keep = (o["vertex"] >= 0) & (o["vertex"] < n_vertices)
        elif morph.kind == pmx.MORPH_MATERIAL:
            keep = o["material"] < n_mat
        else:
            keep = np.ones(len(o), bool)
        if not keep.all():
            warnings.append(f"morph {morph.name}: {int((~keep).sum())} offsets refer to deleted elements; dropped")
            morph.offsets = o[keep]
    model.morphs = [m for _, m in morph_keep]
    return morph_to_new


def _display_frames_from_scene(model: pmx.PmxModel, extras: dict, skel: cm.Skeleton | None,
                               skel_to_new: np.ndarray, file_to_new: dict[int, int],
                               morph_to_new: dict[int, int]) -> None:
    """The file's display frames with bone and morph indices remapped (deleted ones dropped); bone collections
    edited in Blender decide the bones each frame lists."""
    for f in extras.get("display_frames", []):
        elements = []
        for kind, index in f["elements"]:
            new = (file_to_new if kind == 0 else morph_to_new).get(index, -1)
            if new >= 0:
                elements.append((kind, new))
        model.display_frames.append(pmx.PmxDisplayFrame(f["name"], f["name_e"], f["special"], elements))
    if "display_frame_bones" in extras:
        _apply_bone_collections(model, extras["display_frame_bones"], skel, skel_to_new)


def _physics_from_scene(model: pmx.PmxModel, extras: dict, file_to_new: dict[int, int]) -> None:
    """Rigid bodies (bone remapped), joints and soft bodies (a deleted material becomes -1), kept raw."""
    n_mat = len(model.materials)
    for d in extras.get("rigid_bodies", []):
        r = fixed_from_dict(pmx.PmxRigidBody, d, pmx.RIGID_BODY)
        r.bone = _remap(r.bone, file_to_new)
        model.rigid_bodies.append(r)
    for d in extras.get("joints", []):
        model.joints.append(fixed_from_dict(pmx.PmxJoint, d, pmx.JOINT))
    for d in extras.get("soft_bodies", []):
        s = _soft_from_dict(d)
        s.material = s.material if s.material < n_mat else -1
        model.soft_bodies.append(s)


def _apply_bone_collections(model: pmx.PmxModel, frames: dict, skel: cm.Skeleton, skel_to_new: np.ndarray) -> None:
    """Frame k's bone elements follow bone collection k: bones still in it keep their order, bones added to it
    follow in armature order, bones taken out of it are dropped."""
    index = {b.name: int(skel_to_new[i]) for i, b in enumerate(skel.bones)}
    for k_text, members in frames.items():
        k = int(k_text)
        if not 0 <= k < len(model.display_frames):
            continue
        frame = model.display_frames[k]
        wanted = [index[n] for n in members if n in index]
        wanted_set = set(wanted)
        kept = [(kind, i) for kind, i in frame.elements if kind == 1 or i in wanted_set]
        have = {i for kind, i in kept if kind == 0}
        frame.elements = kept + [(0, i) for i in wanted if i not in have]


def _vertex_offsets(mesh: cm.Mesh, sk: cm.ShapeKey, base: int, metres_per_unit: float,
                    raw: np.ndarray | None) -> np.ndarray:
    """Vertex morph offsets (MMD units) of a shape key: the file's records while the key still shows them,
    else every vertex the key moves."""
    delta = positions_to_pmx(np.asarray(sk.positions, np.float64) - mesh.positions.astype(np.float64), metres_per_unit)
    moved = np.flatnonzero(np.abs(delta).max(axis=1) > _MATCH_OFFSET) if len(delta) else np.zeros(0, np.int64)
    if raw is not None and len(raw):
        idx = raw["vertex"].astype(np.int64) - base
        inside = (idx >= 0) & (idx < len(delta))
        if inside.all():
            listed = np.zeros(len(delta), bool)
            listed[idx] = True
            expected = np.zeros_like(delta)
            np.add.at(expected, idx, raw["offset"].astype(np.float64))
            if not (~listed[moved]).any() and _close(delta[idx], expected[idx], _MATCH_OFFSET):
                return raw
    out = pmx.empty_records(pmx.MORPH_OFFSETS[pmx.MORPH_VERTEX], len(moved))
    out["vertex"] = moved + base
    out["offset"] = delta[moved]
    return out
