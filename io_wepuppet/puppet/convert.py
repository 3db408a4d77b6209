"""Wallpaper Engine `.mdl` records ⇄ core Scene: the one place where WE axes, units and UVs are converted.

The mapping, for puppets and static models alike:

    file (x, y, z)  →  Blender (s·x, −s·z, s·y)        s = `metres_per_unit`, default 0.01 (100 px = 1 m)

so a puppet's image lies in Blender's XZ plane as the Front view shows it (image +Y is Blender +Z), Y-up static
models come in upright, and the origin is the image centre. It is the proper rotation A (det +1, winding kept)
times s. UV = (u, 1 − v). Normals and tangents get A alone.

Bones (docs/wallpaper_engine.md §3): world bind W = W_parent · L with L the column-major local bind of MDLS.
The core bind is B = G · W · Ŝ⁻¹ with G = s·A (as a 4×4 with no translation) and Ŝ = diag(s, s, s, 1): the
rotation A·R_W keeps the bone's local axes the file's and only translations are scaled, so a bone's
parent-relative transform is Ŝ · L · Ŝ⁻¹ (translation × s) and a root's is G · L · Ŝ⁻¹. Skinning maps alike:
B(t) · B⁻¹ = G · (W(t) · W⁻¹) · G⁻¹. Clip samples (position, Euler XYZ with q = qz·qy·qx, scale; the bone's
absolute local pose) map the same way, which makes the pose basis inverse(local bind) · local(t).

Everything the core model cannot hold is kept in `extras["we"]` (plain JSON values) so that export can write
it back: the file's tag and section versions, raw sections, per-bone flags / props / exact matrices and
original (possibly empty) names, per-clip id / mode / fps / length / flags / track flags / events / exact
Euler samples, per-mesh material paths, flags and vertex format.
"""
from __future__ import annotations

import base64
import os
import re

import numpy as np

from ...core import model as cm
from ...core import names
from ...core.errors import ExportError, FormatError, Warnings, quiet_float_errors
from ...core.fileio import read_bytes
from ...core.transforms import matrix3_to_quat, quat_multiply, quat_to_matrix3, slerp
from ...core.paths import texture_to_open
from ..texture import tex
from ..texture.material import first_texture, loads
from . import mdl
from .units import METRES_PER_UNIT

# the import's metres per image pixel, kept in the core extras (and so on the Blender armature) under this key:
# "scale" since the first version, so that models saved in .blend files then are written at their own scale
SCALE_KEY = "scale"
AXES = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])  # file → Blender rotation A
AXES_Q = matrix3_to_quat(AXES)  # w, x, y, z
KEY = "we"
VERTEX_BYTES, INDEX_BYTES = "we_vertex_bytes", "we_index_bytes"  # core mesh extras: the file's raw records


# ------------------------------------------------------------------------------------------------------------
# small maths, all plain numpy

def column_major(values) -> np.ndarray:
    """(…, 16) column-major floats → (…, 4, 4) matrices."""
    a = np.asarray(values, np.float64)
    return np.swapaxes(a.reshape(a.shape[:-1] + (4, 4)), -1, -2)


def to_column_major(m) -> np.ndarray:
    m = np.asarray(m, np.float64)
    return np.swapaxes(m, -1, -2).reshape(m.shape[:-2] + (16,))


def euler_xyz_to_quat(e) -> np.ndarray:
    """Euler XYZ radians (…, 3) → quaternions w,x,y,z of R = Rz·Ry·Rx (Blender order 'XYZ')."""
    e = np.asarray(e, np.float64) * 0.5
    cx, cy, cz = np.cos(e[..., 0]), np.cos(e[..., 1]), np.cos(e[..., 2])
    sx, sy, sz = np.sin(e[..., 0]), np.sin(e[..., 1]), np.sin(e[..., 2])
    return np.stack([cx * cy * cz + sx * sy * sz, sx * cy * cz - cx * sy * sz,
                     cx * sy * cz + sx * cy * sz, cx * cy * sz - sx * sy * cz], axis=-1)


def quat_to_euler_xyz(q) -> np.ndarray:
    """Inverse of `euler_xyz_to_quat` (y in −π/2..π/2)."""
    m = quat_to_matrix3(q)
    y = np.arcsin(np.clip(-m[..., 2, 0], -1.0, 1.0))
    x = np.arctan2(m[..., 2, 1], m[..., 2, 2])
    z = np.arctan2(m[..., 1, 0], m[..., 0, 0])
    return np.stack([x, y, z], axis=-1)


def sample_matrices(samples) -> np.ndarray:
    """Clip samples (…, 9) → local matrices T(pos) · Rz·Ry·Rx · S(scale) (…, 4, 4), in file units."""
    s = np.asarray(samples, np.float64)
    r = quat_to_matrix3(euler_xyz_to_quat(s[..., 3:6]))
    m = np.zeros(s.shape[:-1] + (4, 4))
    m[..., :3, :3] = r * s[..., None, 6:9]
    m[..., :3, 3] = s[..., 0:3]
    m[..., 3, 3] = 1
    return m


def world_binds(skeleton: mdl.Skeleton) -> np.ndarray:
    """World bind matrices (file units) of an MDLS skeleton: W = W_parent · L; FormatError on a bad parent."""
    n = len(skeleton.bones)
    local = column_major(np.array([b.matrix for b in skeleton.bones], np.float64).reshape(n, 16))
    world = np.empty_like(local)
    for i, b in enumerate(skeleton.bones):
        if b.parent == -1:
            world[i] = local[i]
        elif 0 <= b.parent < i:
            world[i] = world[b.parent] @ local[i]
        else:
            raise FormatError(f"bone {i} ({b.name!r}) has parent {b.parent}: parents must come first "
                              f"(-1..{i - 1})", None, f"bone {i} parent")
    return world


def axis_matrix(metres_per_unit: float) -> np.ndarray:
    g = np.eye(4)
    g[:3, :3] = metres_per_unit * AXES
    return g


def _unscale(metres_per_unit: float) -> np.ndarray:
    return np.diag([metres_per_unit, metres_per_unit, metres_per_unit, 1.0])


def to_core_matrix(m, metres_per_unit: float, root: bool) -> np.ndarray:
    """A file matrix (world, or a root's local) or a non-root local matrix in core axes."""
    left = axis_matrix(metres_per_unit) if root else _unscale(metres_per_unit)
    return left @ np.asarray(m, np.float64) @ np.linalg.inv(_unscale(metres_per_unit))


def from_core_matrix(m, metres_per_unit: float, root: bool) -> np.ndarray:
    left = axis_matrix(metres_per_unit) if root else _unscale(metres_per_unit)
    return np.linalg.inv(left) @ np.asarray(m, np.float64) @ _unscale(metres_per_unit)


def _f32_list(a) -> list[float]:
    return [float(x) for x in np.asarray(a, np.float32).reshape(-1)]


def _b64(b: bytes) -> str:
    return base64.b64encode(bytes(b)).decode("ascii")


# ------------------------------------------------------------------------------------------------------------
# textures

def find_texture(mdl_path: str, material: str) -> tuple[str | None, str | None]:
    """(path of the `.tex`, why not found): the material JSON resolved against the folder above `models/`,
    its first texture + `.tex` under `materials/`; else `<stem without _puppet>.tex` beside the file."""
    folder = os.path.dirname(os.path.abspath(mdl_path))
    tried = []
    if material:
        root = folder
        parts = folder.replace("\\", "/").split("/")
        if "models" in parts:
            root = "/".join(parts[:len(parts) - parts[::-1].index("models") - 1]) or "/"

        json_path, unsafe = texture_to_open(material, root)  # names from the file stay inside the project
        if json_path is None:
            tried.append(unsafe)
        elif os.path.isfile(json_path):
            try:
                name = first_texture(loads(read_bytes(json_path, 1 << 24).decode("utf-8", "replace")))
            except (ValueError, OSError, FormatError):
                name = None
            path, unsafe = texture_to_open(f"materials/{name}.tex", root) if name is not None else (None, None)
            if path is not None and os.path.isfile(path):
                return path, None
            tried.append(path or unsafe or f"{json_path} (no passes[0].textures[0])")
        else:
            tried.append(json_path)
    stem = os.path.splitext(os.path.basename(mdl_path))[0]
    if stem.endswith("_puppet"):
        stem = stem[:-len("_puppet")]
    beside = os.path.join(folder, stem + ".tex")
    if os.path.isfile(beside):
        return beside, None
    tried.append(beside)
    return None, "no texture found (looked for " + ", ".join(tried) + ")"


def texture_png(path: str) -> bytes:
    """The first image's top mip of a `.tex` as PNG bytes (or the stored image file as it is)."""
    return tex.image_file(tex.read(read_bytes(path)))


# ------------------------------------------------------------------------------------------------------------
# file → core

def _mesh_to_core(mesh: mdl.Mesh, k: int, metres_per_unit: float, n_bones: int, name: str, w: Warnings) -> cm.Mesh:
    v = mesh.vertices
    names = v.dtype.names
    n = len(v)
    pos = v["position"] if "position" in names else (v["position4"][:, :3] if "position4" in names
                                                      else np.zeros((n, 3), np.float32))
    positions = (np.asarray(pos, np.float64) @ (metres_per_unit * AXES).T).astype(np.float32)
    idx = np.asarray(mesh.indices, np.int64)
    if len(idx) % 3:
        w.add(f"mesh {k}: {len(idx) % 3} trailing indices make no triangle and were dropped")
        idx = idx[:len(idx) - len(idx) % 3]
    if len(idx) and idx.max() >= n:
        raise FormatError(f"mesh {k}: index {int(idx.max())} of {n} vertices", None, f"mesh {k} indices")
    out = cm.Mesh(name=name, positions=positions, triangles=idx.reshape(-1, 3).astype(np.int32))
    if "normal" in names:
        out.normals = (np.asarray(v["normal"], np.float64) @ AXES.T).astype(np.float32)
    if "tangent" in names:
        t = np.asarray(v["tangent"], np.float64)
        out.tangents = np.concatenate([t[:, :3] @ AXES.T, t[:, 3:]], axis=1).astype(np.float32)
    for j in range(6):
        for field in (f"uv{j}", f"uv{j}_3", f"uv{j}_4"):
            if field in names:
                uv = np.asarray(v[field][:, :2], np.float32).copy()
                uv[:, 1] = np.float32(1) - uv[:, 1]
                out.uvs.append(("UVMap" if j == 0 else f"UVMap.{j:03d}", uv))
    if "color" in names:
        out.colors.append(("Color", np.asarray(v["color"], np.float32)))
    if "joints" in names:
        joints = np.asarray(v["joints"], np.int64)
        weights = (np.asarray(v["weights"], np.float32) if "weights" in names
                   else np.full(joints.shape, 0.25, np.float32))
        live = weights != 0
        if n_bones == 0:
            if live.any():
                w.add(f"mesh {k}: vertices carry bone weights but the file has no skeleton; weights ignored")
        else:
            bad = live & ((joints < 0) | (joints >= n_bones))
            if bad.any():
                i = int(np.flatnonzero(bad.any(axis=1))[0])
                raise FormatError(f"mesh {k} vertex {i}: bone index {int(joints[i][bad[i]][0])} of {n_bones} bones",
                                  None, f"mesh {k} vertex {i} joints")
            joints = np.where(live, joints, 0)
            out.joints = joints.astype(np.int32)
            out.weights = weights
    if not np.isfinite(positions).all():
        w.add(f"mesh {k}: non-finite positions")
    out.material_indices = np.zeros(len(out.triangles), np.int32)
    out.extras[KEY] = {"mesh": k, "materials": list(mesh.materials), "flags": mesh.flags,
                       "flags_extra": mesh.flags_extra, "format": mesh.format,
                       "bbox": None if mesh.bbox is None else _f32_list(mesh.bbox), "blocks": _mesh_blocks(mesh)}
    # the file's own records, written again for every vertex the scene still holds as imported
    out.extras[VERTEX_BYTES] = mesh.vertices.tobytes()
    out.extras[INDEX_BYTES] = np.asarray(mesh.indices).tobytes()
    return out


def _mesh_blocks(mesh: mdl.Mesh) -> dict:
    """The v21+ per-mesh blocks and v23 groups (meaning unconfirmed) as JSON values."""
    return {"extra_flag": mesh.extra_flag, "extra_u32": mesh.extra_u32, "extra_blob": _b64(mesh.extra_blob),
            "vector4_flag": mesh.vector4_flag, "vector4_blob": _b64(mesh.vector4_blob),
            "groups": [[g.id, g.name, g.flags, [int(x) for x in g.list_a], [int(x) for x in g.list_b]]
                       for g in mesh.groups]}


def _put_mesh_blocks(mesh: mdl.Mesh, blocks: dict) -> None:
    mesh.extra_flag, mesh.extra_u32 = int(blocks.get("extra_flag", 0)), int(blocks.get("extra_u32", 0))
    mesh.extra_blob = base64.b64decode(blocks.get("extra_blob", ""))
    mesh.vector4_flag = int(blocks.get("vector4_flag", 0))
    mesh.vector4_blob = base64.b64decode(blocks.get("vector4_blob", ""))
    mesh.groups = [mdl.Group(int(i), str(n), int(f), np.asarray(a, "<u4"), np.asarray(b, "<u4"))
                   for i, n, f, a, b in blocks.get("groups", [])]


def bone_names(sk: mdl.Skeleton) -> list[str]:
    """The bones' names as import gives them: Blender renames '' and duplicates (the file's own name travels in
    the bone's extras)."""
    out: list[str] = []
    used: set[str] = set()
    for i, b in enumerate(sk.bones):
        name = b.name or f"bone_{i}"
        if name in used:
            name = f"{name}.{i}"
        used.add(name)
        out.append(name)
    return out


def _skeleton_to_core(sk: mdl.Skeleton, metres_per_unit: float) -> tuple[cm.Skeleton, np.ndarray]:
    world = world_binds(sk)
    binds = axis_matrix(metres_per_unit) @ world @ np.linalg.inv(_unscale(metres_per_unit))
    skel = cm.Skeleton(name="Armature")
    if not np.isfinite(binds).all():
        i = int(np.flatnonzero(~np.isfinite(binds).reshape(len(binds), -1).all(axis=1))[0])
        raise FormatError(f"bone {i} ({sk.bones[i].name!r}): bind matrix is not finite", None, f"bone {i} matrix")
    for i, (b, name) in enumerate(zip(sk.bones, bone_names(sk))):
        skel.bones.append(cm.Bone(name=name, parent=b.parent, bind=binds[i], rest_translation=np.zeros(3),
                                  rest_rotation=np.array([1.0, 0, 0, 0]), rest_scale=np.ones(3),
                                  extras={KEY: {"name": b.name, "as": name, "flags": b.flags, "props": b.props,
                                                "matrix": _f32_list(b.matrix)}}))
    try:
        skel.set_rest_from_binds()
    except np.linalg.LinAlgError:  # a parent's bind that has no inverse: the child's local pose does not exist
        i = int(np.flatnonzero(np.linalg.det(binds) == 0)[0]) if (np.linalg.det(binds) == 0).any() else 0
        raise FormatError(f"bone {i} ({sk.bones[i].name!r}): bind matrix is singular", None,
                          f"bone {i} matrix") from None
    return skel, world


def clip_tracks(clip: mdl.Clip, skel: cm.Skeleton, metres_per_unit: float) -> list[cm.Track]:
    """Per-bone core tracks of a clip: one key per sample at k / fps seconds."""
    fps = float(clip.fps)
    n = min(len(clip.track_flags), len(skel.bones))
    if n == 0:  # nothing to sample (and a length no track backs must not size an array)
        return []
    times = np.arange(clip.length + 1, dtype=np.float64) / fps
    s = np.asarray(clip.samples[:n], np.float64)
    q = euler_xyz_to_quat(s[..., 3:6])
    t = s[..., 0:3] * metres_per_unit
    roots = np.array([skel.bones[i].parent < 0 for i in range(n)], bool)
    if roots.any():
        t[roots] = t[roots] @ AXES.T
        q[roots] = quat_multiply(np.broadcast_to(AXES_Q, q[roots].shape), q[roots])
    return [cm.Track(bone=skel.bones[i].name, translation_times=times, translations=t[i], rotation_times=times,
                     rotations=q[i], scale_times=times, scales=s[i, :, 6:9].copy()) for i in range(n)]


def additive_samples(samples, local_binds) -> np.ndarray:
    """(bones, frames, 9) samples whose pose, played by Blender's Combine strip (locations add, rotations
    multiply on the right, scales multiply, each relative to the rest), adds what Wallpaper Engine adds for an
    additive layer (docs/wallpaper_engine.md §7): the clip's change since its frame 0. Per bone, on its local
    bind (`local_binds`, (bones, 4, 4) file units): position t_b + (p − p₀), rotation q_b · q · q₀⁻¹, scale
    s_b + (s − s₀). Exact for the positions and rotations; for scales where the pose below has the bind's."""
    s = np.asarray(samples, np.float64)
    local = np.asarray(local_binds, np.float64)[: len(s)]
    scale = np.linalg.norm(local[:, :3, :3], axis=1)  # column norms
    q_bind = matrix3_to_quat(local[:, :3, :3] / np.where(scale > 0, scale, 1.0)[:, None, :])
    q = euler_xyz_to_quat(s[..., 3:6])
    q0_inv = q[:, :1] * np.array([1.0, -1, -1, -1])
    delta = quat_multiply(q, np.broadcast_to(q0_inv, q.shape))
    out = np.empty_like(s)
    out[..., 0:3] = local[:, None, :3, 3] + s[..., 0:3] - s[:, :1, 0:3]
    out[..., 3:6] = quat_to_euler_xyz(quat_multiply(np.broadcast_to(q_bind[:, None], q.shape), delta))
    out[..., 6:9] = scale[:, None] + s[..., 6:9] - s[:, :1, 6:9]
    return out


def _clip_to_core(clip: mdl.Clip, skel: cm.Skeleton | None, metres_per_unit: float, w: Warnings) -> cm.Animation:
    fps = float(clip.fps)
    if not (np.isfinite(fps) and fps > 0):
        raise FormatError(f"clip {clip.name!r}: fps {fps} is not a positive number", None, "clip fps")
    anim = cm.Animation(name=clip.name, length=clip.length / fps, extras={"fps": fps})
    n_bones = len(skel.bones) if skel else 0
    if len(clip.track_flags) != n_bones:
        w.add(f"clip {clip.name!r}: {len(clip.track_flags)} tracks for {n_bones} bones"
              + ("; the extra tracks were ignored" if len(clip.track_flags) > n_bones else ""))
    if skel is not None:
        anim.tracks = clip_tracks(clip, skel, metres_per_unit)
    bad = ~np.isfinite(np.asarray(clip.samples, np.float64)).reshape(len(clip.track_flags), -1).all(axis=1) \
        if len(clip.track_flags) else np.zeros(0, bool)
    if bad.any():
        w.add(f"clip {clip.name!r}: non-finite samples in track(s) {np.flatnonzero(bad)[:5].tolist()}")
    for frame, text in clip.events:
        anim.markers.append((float(frame) / fps, text))
    anim.extras[cm.CLIP_KEY] = {"mode": clip.mode or cm.LOOP}
    anim.extras[KEY] = {
        "id": clip.id, "reserved": clip.reserved, "name": clip.name, "mode": clip.mode, "fps": float(clip.fps),
        "length": clip.length, "flags": clip.flags, "track_flags": [int(x) for x in clip.track_flags],
        "samples": _b64(np.asarray(clip.samples, "<f4").tobytes()),
        "blocks": _b64(clip.blocks), "reference": list(clip.reference) if clip.reference else None,
        "events": [[float(f), t] for f, t in clip.events],
    }
    return anim


def _name_places(model: mdl.Model) -> dict[str, int | str]:
    """File offsets of the bone names that are not UTF-8 (for `names.cleaned`)."""
    bones = model.skeleton.bones if model.skeleton is not None else []
    return {b.name: model.offsets[f"bone {i}"] for i, b in enumerate(bones)
            if names.bad_byte(b.name) is not None and f"bone {i}" in model.offsets}


@names.cleaned(_name_places)
@quiet_float_errors
def to_scene(model: mdl.Model, name: str = "puppet", metres_per_unit: float = METRES_PER_UNIT, path: str | None = None,
             with_animations: bool = True, textures: bool = True) -> tuple[cm.Scene, list[str]]:
    """Map records to a core Scene. `path`: the `.mdl`'s path, to find its texture. Values the layout allows
    but the meaning forbids import with a warning naming the element (non-finite values), or raise FormatError
    where they would index out of range or loop (bone, vertex and attachment indices, parents)."""
    w = Warnings()
    w.extend(model.warnings)
    scene = cm.Scene(name=name)
    sk = model.skeleton
    if sk is not None and len(sk.bones):
        scene.skeleton, _ = _skeleton_to_core(sk, metres_per_unit)
        scene.skeleton.name = name
    n_bones = len(scene.skeleton.bones) if scene.skeleton else 0
    mat_index: dict[str, int] = {}
    for k, mesh in enumerate(model.meshes):
        mesh_name = name if len(model.meshes) == 1 else f"{name}.{k:03d}"
        cmesh = _mesh_to_core(mesh, k, metres_per_unit, n_bones, mesh_name, w)
        slots = []
        for material_file in mesh.materials[:1] or [""]:
            if material_file not in mat_index:
                mat_index[material_file] = len(scene.materials)
                stem = os.path.splitext(material_file.replace("\\", "/").split("/")[-1])[0] or name
                mat = cm.Material(name=stem, double_sided=True, alpha_mode="BLEND")
                mat.extras[KEY] = {"path": material_file}
                if textures and path is not None:
                    found, why = find_texture(path, material_file)
                    if found:
                        try:
                            mat.base_color_texture = cm.Texture(os.path.basename(found)[:-4] + ".png",
                                                                data=texture_png(found))
                            mat.extras[KEY]["texture_file"] = found  # its bytes ride on the Blender image
                        except (FormatError, OSError) as e:
                            w.add(f"texture {found}: {e}")
                    else:
                        w.add(f"mesh {k}: {why}")
                scene.materials.append(mat)
            slots.append(mat_index[material_file])
        cmesh.materials = slots
        scene.meshes.append(cmesh)
    for i, a in enumerate(model.attachments):
        if a.bone >= n_bones:
            raise FormatError(f"attachment {a.name!r}: bone {a.bone} of {n_bones}", None, f"attachment {i} bone")
    anims = model.animations
    if with_animations and anims is not None:
        for clip in anims.clips:
            scene.animations.append(_clip_to_core(clip, scene.skeleton, metres_per_unit, w))
    scene.extras[KEY] = {
        "tag": model.tag, "legacy_format": model.legacy_format, "materials_per_mesh": model.materials_per_mesh,
        SCALE_KEY: metres_per_unit,
        "sections": [{"tag": s.tag} | _section_extras(s) for s in model.sections],
        "attachments": [{"bone": a.bone, "name": a.name, "matrix": _f32_list(a.matrix)} for a in model.attachments],
        "mesh_extras": [{"materials": list(m.materials), "flags": m.flags, "flags_extra": m.flags_extra,
                         "format": m.format} for m in model.meshes],
        "bones": len(sk.bones) if sk is not None else 0,
        "vertex_counts": [len(m.vertices) for m in model.meshes],
        "padding": _padding(model),
        "project": _project_fields(path) if path is not None else {},
    }
    return scene, list(w)


PROJECT_FIELDS = ("cropoffset",)  # of the model JSON beside a puppet, written again with the project


def _project_fields(mdl_path: str) -> dict:
    """What the project's model JSON (`<stem without _puppet>.json` beside the `.mdl`) says that the `.mdl`
    does not: the crop offset of the part in its texture atlas."""
    stem = os.path.splitext(os.path.basename(mdl_path))[0]
    stem = stem[:-len("_puppet")] if stem.endswith("_puppet") else stem
    json_path = os.path.join(os.path.dirname(os.path.abspath(mdl_path)), stem + ".json")
    try:
        doc = loads(read_bytes(json_path, 1 << 24).decode("utf-8", "replace"))
    except (OSError, ValueError, FormatError):
        return {}
    return {k: doc[k] for k in PROJECT_FIELDS if isinstance(doc, dict) and isinstance(doc.get(k), (str, list))}


def _padding(model: mdl.Model) -> dict:
    """What follows the end tag: zeros up to the file's size (a writer's fixed buffer), or other bytes as they are."""
    if model.tail.count(0) != len(model.tail) or "tail" not in model.offsets:
        return {"tail": _b64(model.tail)}
    return {"pad_to": model.offsets["tail"] + len(model.tail) if model.tail else 0}


def _section_extras(s: mdl.Section) -> dict:
    if isinstance(s.body, mdl.Skeleton):
        return {"version": s.body.version, "tables": _b64(s.body.tables), "links": s.body.link_count,
                "constraints": s.body.constraint_count}
    if isinstance(s.body, mdl.Animations):
        return {"version": s.body.version}
    if isinstance(s.body, (bytes, bytearray)):
        return {"raw": _b64(s.body)}
    if s.tag == "MDLE0002":
        return {"matrices": _f32_list(s.body)}
    return {}


def attachment_matrices(model_or_extras, skel: cm.Skeleton,
                        metres_per_unit: float) -> list[tuple[str, int, np.ndarray]]:
    """(name, bone, matrix relative to the bone in core axes) of each attachment."""
    out = []
    for a in model_or_extras:
        m = column_major(np.asarray(a["matrix"], np.float64))
        s = _unscale(metres_per_unit)
        out.append((a["name"], int(a["bone"]), s @ m @ np.linalg.inv(s)))
    return out


def load(path: str, data: bytes, with_animations: bool = True, motions=()) -> tuple[cm.Scene, list[str]]:
    name = os.path.splitext(os.path.basename(path))[0]
    return to_scene(mdl.read(data), name, path=path, with_animations=with_animations)


def semantic(model: mdl.Model) -> list[str]:
    """What an import runs after the read (hostile suite): the mapping, without textures."""
    _, warnings = to_scene(model, "hostile", textures=False)
    return warnings


# ------------------------------------------------------------------------------------------------------------
# core → file

NARROW_TAG, WIDE_TAG = "MDLV0013", "MDLV0023"
KEEP_TOLERANCE = 1e-4  # file units / radians: a kept exact value is reused while the scene still matches it
WEIGHT_SUM_TOLERANCE = 1e-3


def _interp(times, key_times, values) -> np.ndarray:
    kt = np.asarray(key_times, np.float64)
    v = np.asarray(values, np.float64)
    if len(kt) == 1:
        return np.repeat(v[:1], len(times), axis=0)
    return np.stack([np.interp(times, kt, v[:, c]) for c in range(v.shape[1])], axis=1)


def _interp_rot(times, key_times, q) -> np.ndarray:
    kt = np.asarray(key_times, np.float64)
    q = np.asarray(q, np.float64)
    if len(kt) == 1:
        return np.repeat(q[:1], len(times), axis=0)
    i = np.clip(np.searchsorted(kt, times, side="right") - 1, 0, len(kt) - 2)
    f = np.clip((times - kt[i]) / np.where(kt[i + 1] > kt[i], kt[i + 1] - kt[i], 1.0), 0.0, 1.0)
    return slerp(q[i], q[i + 1], f)


def _clip_samples(anim: cm.Animation, skel: cm.Skeleton, fps: float, length: int, metres_per_unit: float) -> np.ndarray:
    """(bones, length + 1, 9) file samples of a core animation sampled at k / fps."""
    n = len(skel.bones)
    times = np.arange(length + 1, dtype=np.float64) / fps
    t = np.array([b.rest_translation for b in skel.bones], np.float64)[:, None].repeat(length + 1, 1)
    r = np.array([b.rest_rotation for b in skel.bones], np.float64)[:, None].repeat(length + 1, 1)
    s = np.array([b.rest_scale for b in skel.bones], np.float64)[:, None].repeat(length + 1, 1)
    index = {b.name: i for i, b in enumerate(skel.bones)}
    for track in anim.tracks:
        i = index.get(track.bone)
        if i is None:
            continue
        if track.translations is not None and len(track.translations):
            t[i] = _interp(times, track.translation_times, track.translations)
        if track.rotations is not None and len(track.rotations):
            r[i] = _interp_rot(times, track.rotation_times, track.rotations)
        if track.scales is not None and len(track.scales):
            s[i] = _interp(times, track.scale_times, track.scales)
    roots = np.array([b.parent < 0 for b in skel.bones], bool)
    t = t / metres_per_unit
    if roots.any():
        t[roots] = t[roots] @ AXES  # A⁻¹ = Aᵀ
        inv = AXES_Q * np.array([1.0, -1, -1, -1])
        r[roots] = quat_multiply(np.broadcast_to(inv, r[roots].shape), r[roots])
    out = np.zeros((n, length + 1, 9))
    out[..., 0:3], out[..., 3:6], out[..., 6:9] = t, quat_to_euler_xyz(r), s
    return out


def _reuse_samples(samples: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """The file's exact samples (position, rotation, scale of a bone at a frame, each on its own) wherever the
    scene's pose still matches them; frames after the file's last are matched with its last."""
    out = samples.astype(np.float32)
    if kept.shape[0] != samples.shape[0] or kept.shape[2:] != samples.shape[2:]:
        return out
    n = samples.shape[1]
    if kept.shape[1] < n:  # frames after the file's last: compared with its last (Blender holds the last key)
        kept = np.concatenate([kept, np.repeat(kept[:, -1:], n - kept.shape[1], axis=1)], axis=1)
    a, b = samples, kept[:, :n].astype(np.float64)
    reach = np.maximum(1.0, np.abs(b[..., 0:3]).max(axis=(1, 2)))[:, None]  # per track, as the file's unit
    same = (np.abs(a[..., 0:3] - b[..., 0:3]).max(axis=-1) <= KEEP_TOLERANCE * reach,
            np.abs(np.abs(np.sum(euler_xyz_to_quat(a[..., 3:6]) * euler_xyz_to_quat(b[..., 3:6]), axis=-1)) - 1.0)
            <= 1e-7,
            np.abs(a[..., 6:9] - b[..., 6:9]).max(axis=-1) <= KEEP_TOLERANCE)
    for k, ok in enumerate(same):  # position, rotation, scale
        part = slice(3 * k, 3 * k + 3)
        out[..., part] = np.where(ok[..., None], kept[:, :n, part], out[..., part])
    return out


def key_rate(anim: cm.Animation) -> float | None:
    """The frame rate every key time of `anim` lies on (a whole number of frames per second, or the rate of
    its closest keys), or None when there is no such rate."""
    times = np.unique(np.concatenate([np.asarray(t, np.float64) for tr in anim.tracks for t in
                                      (tr.translation_times, tr.rotation_times, tr.scale_times) if t is not None]
                                     + [np.zeros(1)]))
    steps = np.diff(times)
    steps = steps[steps > 1e-6]
    if not len(steps):
        return None
    rate = 1.0 / steps.min()
    for candidate in (round(rate), rate):
        frames = times * candidate
        if candidate > 0 and np.abs(frames - np.round(frames)).max() <= 1e-3:
            return float(candidate)
    return None


def _clip_name(name: str, kept: dict) -> str:
    """The clip's name: the file's own while Blender's is that name or that name made unique (a second import
    of the model names its actions "Walk.001"); a rename otherwise."""
    own = kept.get("name")
    if isinstance(own, str) and (name == names.shown(own) or re.fullmatch(re.escape(names.shown(own)) + r"\.\d{3,}",
                                                                          name)):
        return own
    return name


def _clip_from_core(anim: cm.Animation, skel: cm.Skeleton, metres_per_unit: float, default_fps: float,
                    w: Warnings) -> mdl.Clip:
    x = anim.extras.get(KEY) or {}
    fps = float(x.get("fps") or anim.extras.get("fps") or key_rate(anim) or 0)
    if not fps > 0:
        fps = float(default_fps)
        w.add(f"clips whose keys lie on no one frame rate are sampled at {fps:g} fps")  # once for them all
    length = int(x["length"]) if "length" in x else max(int(round(anim.length * fps)), 1)
    last = max([anim.length] + [float(np.max(t)) for tr in anim.tracks for t in
                                (tr.translation_times, tr.rotation_times, tr.scale_times) if t is not None and len(t)])
    if last * fps > length + 1e-3:  # keys after the clip's end (its action's frame range) make it longer
        length = int(np.ceil(last * fps - 1e-3))
    samples = _clip_samples(anim, skel, fps, length, metres_per_unit)
    kept = np.frombuffer(base64.b64decode(x["samples"]), "<f4") if "samples" in x else np.zeros(0, np.float32)
    frames = kept.size // (9 * len(samples)) if len(samples) else 0
    if frames and kept.size == 9 * len(samples) * frames:
        samples = _reuse_samples(samples, kept.reshape(len(samples), frames, 9))
    else:
        samples = samples.astype(np.float32)
    if not np.isfinite(samples).all():
        bad = int(np.flatnonzero(~np.isfinite(samples).reshape(len(samples), -1).all(axis=1))[0])
        raise ExportError(f"clip {anim.name!r}: bone {skel.bones[bad].name!r} has non-finite samples")
    flags = x.get("track_flags")
    track_flags = np.array(flags if flags and len(flags) == len(skel.bones) else [0] * len(skel.bones), "<u4")
    events = [(np.float32(f), str(t)) for f, t in x.get("events", [])] if "events" in x else \
        [(np.float32(time * fps), str(text)) for time, text in anim.markers]
    ref = x.get("reference")
    return mdl.Clip(id=int(x.get("id", 0)), reserved=int(x.get("reserved", 0)), name=_clip_name(anim.name, x),
                    mode=str(x.get("mode", (anim.extras.get(cm.CLIP_KEY) or {}).get("mode", cm.LOOP))),
                    fps=np.float32(fps), length=length, flags=int(x.get("flags", 0)),
                    track_flags=track_flags, samples=samples,
                    blocks=base64.b64decode(x.get("blocks", "")) if "blocks" in x else b"",
                    reference=tuple(ref) if ref else None, events=events)


def _bones_from_core(skel: cm.Skeleton, metres_per_unit: float) -> list[mdl.Bone]:
    binds = skel.binds()
    order = skel.topological_order()
    if any(b.parent >= i for i, b in enumerate(skel.bones)):
        bad = next(i for i, b in enumerate(skel.bones) if b.parent >= i)
        raise ExportError(f"bone {skel.bones[bad].name!r}: its parent must come before it (order {order[:5]}…)")
    out = []
    for i, b in enumerate(skel.bones):
        if b.parent < 0:
            local = from_core_matrix(binds[i], metres_per_unit, True)
        else:
            local = from_core_matrix(np.linalg.inv(binds[b.parent]) @ binds[i], metres_per_unit, False)
        x = b.extras.get(KEY) or {}
        matrix = to_column_major(local).astype(np.float32)
        kept = x.get("matrix")
        if kept is not None and len(kept) == 16:
            k = np.asarray(kept, np.float32)
            if np.abs(column_major(k) - local).max() <= KEEP_TOLERANCE * max(1.0, np.abs(local).max()):
                matrix = k
        if not np.isfinite(matrix).all():
            raise ExportError(f"bone {b.name!r}: bind matrix is not finite")
        # the file's own name (empty and duplicate names included) while the bone keeps the name it came in as
        name = names.file_name(str(x.get("name", b.name)), b.extras) if b.name == x.get("as", b.name) else b.name
        out.append(mdl.Bone(name=name, flags=int(x.get("flags", 1)), parent=b.parent, matrix=matrix,
                            props=str(x.get("props", ""))))
    return out


def _kept_records(cmesh: cm.Mesh, fmt: int, kept: dict) -> tuple[np.ndarray | None, bool]:
    """(the file's vertex record behind each vertex of `cmesh`, whether they are the file's vertices one for
    one in order), or (None, False) when the mesh no longer maps onto them."""
    raw = cmesh.extras.get(VERTEX_BYTES)
    dt = mdl.vertex_dtype(fmt)
    if raw is None or kept.get("format") != fmt or not mdl.vertex_stride(fmt) or len(raw) % dt.itemsize:
        return None, False
    records = np.frombuffer(raw, dt)
    n = len(cmesh.positions)
    source = cmesh.extras.get("source_vertex")
    if source is None:
        return (records, True) if len(records) == n else (None, False)
    source = np.asarray(source, np.int64)
    if cmesh.extras.get("source_vertex_count") != len(records) or len(source) != n:
        return None, False
    return records[source], bool(np.array_equal(source, np.arange(len(records))))


def _influence_pairs(v: np.ndarray, summed: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per vertex, its (bone, weight) pairs with nonzero weight sorted by bone (empty slots last); `summed`: a
    bone's slots added into its first one (as one vertex group holds them)."""
    w = np.asarray(v["weights"], np.float64)
    key = np.where(w != 0, np.asarray(v["joints"], np.int64), 1 << 40)
    if summed:
        same = key[:, :, None] == key[:, None, :]
        w = (same * w[:, None, :]).sum(axis=2)
        first = ~np.tril(same, -1).any(axis=2)
        key, w = np.where(first, key, 1 << 40), np.where(first, w, 0.0)
    order = np.argsort(key, axis=1, kind="stable")
    return np.take_along_axis(key, order, 1), np.take_along_axis(w, order, 1)


def _same_influences(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per vertex: the same (bone, weight) pairs with nonzero weight, in any slot order, a bone's slots summed.
    Equal sorted pairs are equal summed pairs, so only the vertices that differ sorted pay for the summing."""
    def equal(x, y, summed):
        kx, wx = _influence_pairs(x, summed)
        ky, wy = _influence_pairs(y, summed)
        return (kx == ky).all(axis=1) & (np.abs(wx - wy) <= 1e-6).all(axis=1)

    same = equal(a, b, False)
    rest = np.flatnonzero(~same)
    if len(rest):
        same[rest] = equal(a[rest], b[rest], True)
    return same


def _reuse_records(v: np.ndarray, records: np.ndarray) -> np.ndarray:
    """Per vertex, True where the computed record `v` still describes the file's record: same position (float
    rounding aside), normal, UV and influences. Those vertices are written as the file had them (slot order,
    tangents, fields the scene does not carry); the others keep the file's fields the scene does not carry."""
    names = v.dtype.names
    pos = records["position"].astype(np.float64)
    same = (np.abs(v["position"] - pos) <= KEEP_TOLERANCE * np.maximum(1.0, np.abs(pos))).all(axis=1)
    if "normal" in names:
        same &= (np.abs(v["normal"] - records["normal"].astype(np.float64)) <= 1e-4).all(axis=1)
    if "uv0" in names:
        same &= (np.abs(v["uv0"] - records["uv0"].astype(np.float64)) <= 1e-6).all(axis=1)
    if "joints" in names and "weights" in names:
        same &= _same_influences(v, records)
    carried = {"position", "normal", "tangent", "uv0", "joints", "weights"}
    for name in names:
        if name not in carried:
            v[name] = records[name]
    v[same] = records[same]
    return same


def _mesh_vertices(cmesh: cm.Mesh, dt: np.dtype, pos: np.ndarray, n_bones: int) -> np.ndarray:
    n = len(cmesh.positions)
    v = np.zeros(n, dt)
    v["position"] = pos
    if "normal" in dt.names:
        nrm = np.asarray(cmesh.normals, np.float64) @ AXES if cmesh.normals is not None else \
            np.tile([0.0, 0.0, 1.0], (n, 1))
        v["normal"] = nrm
    if "tangent" in dt.names:
        if cmesh.tangents is not None:
            tan = np.asarray(cmesh.tangents, np.float64)
            v["tangent"] = np.concatenate([tan[:, :3] @ AXES, tan[:, 3:4]], axis=1)
        else:
            v["tangent"] = np.tile([1.0, 0.0, 0.0, 1.0], (n, 1))
    if cmesh.uvs:
        uv = np.asarray(cmesh.uvs[0][1], np.float32).copy()
        uv[:, 1] = np.float32(1) - uv[:, 1]
        v["uv0"] = uv
    if "joints" in dt.names and cmesh.joints is not None:
        kk = min(cmesh.joints.shape[1], 4)
        order = np.argsort(-np.asarray(cmesh.weights, np.float64), axis=1, kind="stable")[:, :4] \
            if cmesh.joints.shape[1] > 4 else np.arange(kk)[None].repeat(n, 0)
        j = np.take_along_axis(np.asarray(cmesh.joints, np.int64), order, 1)
        w = np.take_along_axis(np.asarray(cmesh.weights, np.float32), order, 1)
        j = np.where(w != 0, j, 0)
        if (j >= n_bones).any() or (j < 0).any():
            i = int(np.flatnonzero(((j >= n_bones) | (j < 0)).any(axis=1))[0])
            raise ExportError(f"mesh {cmesh.name!r} vertex {i}: bone index outside 0..{n_bones - 1}")
        total = w.astype(np.float64).sum(axis=1)
        off = np.abs(total - 1.0) > WEIGHT_SUM_TOLERANCE  # Wallpaper Engine blends the weights as stored
        if off.any():
            i = int(np.flatnonzero(off)[0])
            raise ExportError(f"mesh {cmesh.name!r} vertex {i}: bone weights sum to {total[i]:.6g}, not 1"
                              + (f" ({int(off.sum())} vertices in all)" if off.sum() > 1 else "")
                              + "; normalize the weights (Weights › Normalize All)")
        v["joints"][:, :kk] = j
        v["weights"][:, :kk] = w
    elif "weights" in dt.names:
        v["weights"][:, 0] = 1.0  # an unweighted mesh of a skinned model follows the first bone
    return v


def _kept_indices(cmesh: cm.Mesh, tris: np.ndarray, kept: dict) -> np.ndarray | None:
    """The file's index list while the triangles are still its own (Blender drops degenerate ones: the file's
    list, with them in place, is written again)."""
    raw = cmesh.extras.get(INDEX_BYTES)
    if raw is None:
        return None
    size = 4 if int(kept.get("flags", 0)) & mdl.FLAG_INDEX32 else 2
    if len(raw) % size:
        return None
    idx = np.frombuffer(raw, "<u4" if size == 4 else "<u2")
    if np.array_equal(idx, tris):
        return idx
    whole = idx[:len(idx) - len(idx) % 3].reshape(-1, 3).astype(np.int64)
    proper = (whole[:, 0] != whole[:, 1]) & (whole[:, 1] != whole[:, 2]) & (whole[:, 0] != whole[:, 2])
    return idx if np.array_equal(whole[proper].reshape(-1), tris) else None


def _mesh_from_core(cmesh: cm.Mesh, fmt: int, metres_per_unit: float, version: int, n_bones: int, k: int,
                    kept: dict) -> mdl.Mesh:
    n = len(cmesh.positions)
    pos = np.asarray(cmesh.positions, np.float64) @ (AXES / metres_per_unit)  # (A·s)⁻¹ = Aᵀ / s, applied to rows
    if not np.isfinite(pos).all():
        i = int(np.flatnonzero(~np.isfinite(pos).all(axis=1))[0])
        raise ExportError(f"mesh {cmesh.name!r} vertex {i}: position is not finite")
    v = _mesh_vertices(cmesh, mdl.vertex_dtype(fmt), pos, n_bones)
    records, in_order = _kept_records(cmesh, fmt, kept)
    same = _reuse_records(v, records) if records is not None else np.zeros(n, bool)
    tris = np.asarray(cmesh.triangles, np.int64).reshape(-1)
    kept_flags = int(kept.get("flags", 0))
    flags = kept_flags & ~mdl.FLAG_INDEX32 & ~mdl.FLAG_EXTRA
    indices = _kept_indices(cmesh, tris, kept) if in_order else None
    if indices is not None:
        flags |= kept_flags & mdl.FLAG_INDEX32
    elif n > 0xFFFF:
        flags |= mdl.FLAG_INDEX32
    if kept_flags & mdl.FLAG_EXTRA:
        flags |= mdl.FLAG_EXTRA
    if indices is None:
        indices = tris.astype("<u4" if flags & mdl.FLAG_INDEX32 else "<u2")
    mesh = mdl.Mesh(materials=list(kept.get("materials") or [cmesh.name]), flags=flags, format=fmt, vertices=v,
                    indices=indices, flags_extra=kept.get("flags_extra") if flags & mdl.FLAG_EXTRA else None)
    if in_order and kept.get("blocks"):
        _put_mesh_blocks(mesh, kept["blocks"])
    if version >= mdl.MESH_BBOX_VERSION:
        if in_order and same.all() and kept.get("bbox") is not None:
            mesh.bbox = np.asarray(kept["bbox"], "<f4")
        else:
            mesh.bbox = (np.concatenate([pos.min(axis=0), pos.max(axis=0)]) if n else np.zeros(6)).astype("<f4")
    return mesh


def _material_path(material: cm.Material) -> str:
    return (material.extras.get(KEY) or {}).get("path") or f"materials/{material.name}.json"


def _one_material_meshes(cmesh: cm.Mesh, materials: list[cm.Material], w: Warnings) -> list[cm.Mesh]:
    """A Wallpaper Engine mesh has one material: a mesh whose triangles use several becomes one mesh per
    material (with a warning), so that each keeps its own."""
    if cmesh.material_indices is None or not len(cmesh.triangles) or len(cmesh.materials) < 2:
        return [cmesh]
    slots = np.unique(cmesh.material_indices)
    slots = slots[(slots >= 0) & (slots < len(cmesh.materials))]
    if len(slots) < 2:
        return [cmesh]
    w.add(f"mesh {cmesh.name!r}: {len(slots)} materials, written as {len(slots)} meshes (one material each)")
    out = []
    for slot in slots:
        tris = cmesh.triangles[cmesh.material_indices == slot]
        used, remap = np.unique(tris, return_inverse=True)
        part = cm.Mesh(name=f"{cmesh.name}.{int(slot)}", positions=cmesh.positions[used],
                       triangles=remap.reshape(-1, 3).astype(np.int32),
                       normals=None if cmesh.normals is None else cmesh.normals[used],
                       tangents=None if cmesh.tangents is None else cmesh.tangents[used],
                       uvs=[(n, uv[used]) for n, uv in cmesh.uvs], colors=[(n, c[used]) for n, c in cmesh.colors],
                       joints=None if cmesh.joints is None else cmesh.joints[used],
                       weights=None if cmesh.weights is None else cmesh.weights[used],
                       material_indices=np.zeros(len(tris), np.int32), materials=[cmesh.materials[int(slot)]])
        index = cmesh.materials[int(slot)]
        kept = {k: v for k, v in (cmesh.extras.get(KEY) or {}).items() if k in ("flags", "format")}
        if 0 <= index < len(materials):
            kept["materials"] = [_material_path(materials[index])]
        part.extras[KEY] = kept
        out.append(part)
    return out


def _distinct_clip_ids(clips: list[mdl.Clip], kept: list[dict]) -> None:
    """Clips from another format get ids no other clip of the model has (the file's own ids stay)."""
    used = {c.id for c, x in zip(clips, kept) if "id" in x}
    next_id = max(used, default=0) + 1
    for c, x in zip(clips, kept):
        if "id" not in x:
            c.id = next_id
            next_id += 1


def from_scene(scene: cm.Scene, wide: bool = False, metres_per_unit: float | None = None, keep: bool = True,
               fps: float = 30.0, attachments: list | None = None) -> tuple[mdl.Model, list[str]]:
    """A puppet/model record set for a core Scene (Blender axes). Default: narrow MDLV0013 (52-byte vertices)
    or, for a Scene imported from a `.mdl` (`keep`), that file's MDLV tag, format and section versions;
    `wide`: MDLV0023 with 80-byte vertices (unverified against Wallpaper Engine). `attachments`: (name, bone
    index, 4×4 matrix relative to the bone in core axes)."""
    w = Warnings()
    x = (scene.extras.get(KEY) or {}) if keep else {}
    metres_per_unit = float(metres_per_unit if metres_per_unit is not None else x.get(SCALE_KEY, METRES_PER_UNIT))
    skel = scene.skeleton if scene.skeleton is not None and len(scene.skeleton.bones) else None
    skinned = skel is not None
    if wide:
        tag, fmt = WIDE_TAG, mdl.FORMAT_WIDE
    else:
        tag = str(x.get("tag", NARROW_TAG))
        if not mdl.MIN_VERSION <= mdl.tag_version(tag) <= mdl.MAX_VERSION:
            tag = NARROW_TAG
        kept_format = (x.get("mesh_extras") or [{}])[0].get("format")
        if kept_format is not None and bool(kept_format & 0x00800000) == skinned:
            fmt = int(kept_format)
        elif skinned:
            fmt = mdl.FORMAT_NARROW
        elif any(m.normals is not None for m in scene.meshes):
            fmt = mdl.FORMAT_STATIC
        else:
            fmt = mdl.FORMAT_UNSKINNED
    version = mdl.tag_version(tag)
    model = mdl.Model(tag=tag, legacy_format=fmt if version < mdl.MESH_FORMAT_VERSION else
                      int(x.get("legacy_format", fmt)), materials_per_mesh=1)
    kept_meshes = x.get("mesh_extras") or []
    keyed = [f"{m.name} ({', '.join(k.name for k in m.shape_keys)})" for m in scene.meshes if m.shape_keys]
    if keyed:
        w.add(f"shape keys not written: {'; '.join(keyed)}: a .mdl's morph targets are kept from the file it was "
              "imported from, not made from shape keys")
    meshes = [part for cmesh in scene.meshes for part in _one_material_meshes(cmesh, scene.materials, w)]
    for k, cmesh in enumerate(meshes):
        kept = cmesh.extras.get(KEY) or (kept_meshes[k] if k < len(kept_meshes) else {})
        if not kept.get("materials") and cmesh.materials and cmesh.materials[0] < len(scene.materials):
            kept = {**kept, "materials": [_material_path(scene.materials[cmesh.materials[0]])]}
        model.meshes.append(_mesh_from_core(cmesh, fmt, metres_per_unit, version, len(skel.bones) if skel else 0, k,
                                            kept))
    model.materials_per_mesh = max([len(m.materials) for m in model.meshes] or [1])
    for m in model.meshes:
        m.materials = (m.materials + [""] * model.materials_per_mesh)[:model.materials_per_mesh]
    _put_padding(model, x.get("padding") if not wide else None)
    if version < mdl.SECTION_VERSION:
        if skinned:
            w.add(f"{tag} files have no skeleton: bones and clips not written")
        return model, list(w)
    kept_list = list(x.get("sections", [])) if not wide else []
    kept_sections = {s["tag"][:4]: s for s in kept_list}
    n_bones = len(skel.bones) if skel else 0
    same_bones = int(x.get("bones", -1)) == n_bones
    same_vertices = list(x.get("vertex_counts", [])) == [len(m.vertices) for m in model.meshes]
    built: dict[str, mdl.Section] = {}
    links = constraints = 0
    if skinned:
        s = kept_sections.get("MDLS", {})
        sk_version = int(s.get("version", 1))
        tables = base64.b64decode(s["tables"]) if sk_version >= 2 and "tables" in s else b""
        if sk_version >= 2 and not (tables and same_bones):  # the tables are sized by the bone count
            sk_version, tables = 1, b""
        if tables:
            links, constraints = int(s.get("links", 0)), int(s.get("constraints", 0))
        built["MDLS"] = mdl.Section(f"MDLS{sk_version:04d}", mdl.Skeleton(
            sk_version, _bones_from_core(skel, metres_per_unit), tables, links, constraints))
        if attachments is None:
            attachments = attachment_matrices(x.get("attachments", []), skel, metres_per_unit)
        if attachments:
            built["MDAT"] = mdl.Section("MDAT0001", [
                mdl.Attachment(int(bone), str(name),
                               to_column_major(from_core_matrix(m, metres_per_unit, False)).astype("<f4"))
                for name, bone, m in attachments])
        if scene.animations:
            a = kept_sections.get("MDLA", {})
            a_version = int(a.get("version", 1))
            clips = [_clip_from_core(anim, skel, metres_per_unit, fps, w) for anim in scene.animations]
            _distinct_clip_ids(clips, [anim.extras.get(KEY) or {} for anim in scene.animations])
            # the v2+ blocks hold one track per link and constraint of MDLS v2+, sized by the clip length
            if a_version > 1 and (not tables or any(not c.blocks for c in clips)):
                a_version = 1
            if a_version == 1:
                for c in clips:
                    c.blocks = b""
            built["MDLA"] = mdl.Section(f"MDLA{a_version:04d}", mdl.Animations(a_version, clips))
    for s in kept_list:
        kind = s["tag"][:4]
        if kind in ("MDLS", "MDLA", "MDAT"):
            continue
        if s["tag"] == "MDLE0002" and same_bones and "matrices" in s:
            built.setdefault(s["tag"], mdl.Section(s["tag"], np.asarray(s["matrices"], "<f4").reshape(-1, 16)))
        elif "raw" in s and (kind != "MDMP" or same_vertices):  # morph targets are sized by the vertex counts
            built.setdefault(s["tag"], mdl.Section(s["tag"], base64.b64decode(s["raw"])))
        else:
            w.add(f"section {s['tag']} of the imported file not written: the model no longer matches it")
    order = [s["tag"][:4] if s["tag"][:4] in ("MDLS", "MDLA", "MDAT") else s["tag"] for s in kept_list]
    order += [k for k in ("MDLS", "MDAT", "MDLA") if k not in order]
    model.sections = [built[k] for k in order if k in built]
    return model, list(w)


def _put_padding(model: mdl.Model, padding: dict | None) -> None:
    """The imported file's padding (a model of our own gets `write_model`'s)."""
    if padding is None:
        return
    if "tail" in padding:
        model.tail, model.pad_to = base64.b64decode(padding["tail"]), None
    else:
        model.pad_to = int(padding.get("pad_to", 0))


def write_model(model: mdl.Model) -> bytes:
    """Bytes of an exported model: padded as the file it was imported from, else (MDLV0013–0016) zero-padded to
    1 MiB as every such sample is."""
    if model.pad_to is None and not model.tail:
        model.pad_to = mdl.PAD_SIZE if mdl.SECTION_VERSION <= model.version <= 16 else 0
    return mdl.write(model)
