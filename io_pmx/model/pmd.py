"""PMD 1.0 (MikuMikuDance's model format before PMX) read into the in-memory `pmx.PmxModel`, so that import and
`convert --to pmx` take the PMX path. Read only: SkinBridge writes PMX 2.0, never PMD.

Layout (docs/mmd.md §2.11), all little-endian, text cp932 in fixed NUL-padded fields:
header "Pmd", version f32, name[20], comment[256]; vertices (u32 count; position, normal f32×3, uv f32×2,
bones u16×2, weight u8 0..100 of the first bone, edge flag u8 with 1 = no edge); indices (u32 count, u16 each);
materials (u32; diffuse f32×4, specular power f32, specular f32×3, ambient f32×3, toon i8, edge u8, index count
u32, texture[20] as "diffuse*sphere"); bones (u16; name[20], parent i16, tail i16, type u8, IK/append i16,
position f32×3); IKs (u16; bone u16, target u16, link count u8, iterations u16, limit f32 (a quarter of PMX's
per-iteration angle), links u16 each); morphs (u16; name[20], offset count u32, panel u8, offsets (u32 vertex,
f32×3)): morph 0 is the base, its offsets absolute positions and the others' vertex numbers indices into it;
display lists (u8 morph entries u16; u8 bone list names[50]; u32 bone entries (u16 bone, u8 list from 1)).
Optional, each only if bytes remain: English names (u8 flag; name[20], comment[256], one [20] per bone and per
morph but the base, one [50] per bone list), the 10 toon file names [100], rigid bodies (u32; name[20], bone i16,
group u8, mask u16, shape u8, size, position relative to the bone, rotation f32×3, mass, damping ×2, restitution,
friction f32, mode u8) and joints (u32; name[20], bodies i32×2, f32×3 ×8 as PMX's spring 6DOF).

Conversion as MMD and babylon-mmd read PMD: BDEF2 weights; a toon index whose name is toon01..toon10.bmp (or any
index when the file has no toon list) becomes that shared toon, another name a texture; bone types to PMX flags
(docs/mmd.md §2.11); the knees (ひざ) of an IK chain limited to bend one way as PMX models do; a second IK on one
bone becomes a hidden child bone named "<name>+".
"""
from __future__ import annotations

import os

import numpy as np

from ...core.binary import Reader
from ...core.errors import FormatError
from ...core.fileio import read_bytes
from . import convert, pmx

MAGIC = b"Pmd"
ENCODING = "cp932"
_KNEES = ("左ひざ", "右ひざ")
_KNEE_LOWER = (-np.pi, 0.0, 0.0)
_KNEE_UPPER = (np.deg2rad(-0.5), 0.0, 0.0)
_SHARED_TOONS = {f"toon{i:02d}.bmp": i - 1 for i in range(1, 11)}

_VERTEX = np.dtype([("position", "<f4", (3,)), ("normal", "<f4", (3,)), ("uv", "<f4", (2,)),
                    ("bones", "<u2", (2,)), ("weight", "u1"), ("edge", "u1")])
_MORPH_OFFSET = np.dtype([("vertex", "<u4"), ("offset", "<f4", (3,))])


def _text(r: Reader, n: int, field: str) -> str:
    raw = r.bytes(n, field)
    raw = raw.split(b"\0", 1)[0]
    return raw.decode(ENCODING, "replace")


def _f3(r: Reader, field: str) -> np.ndarray:
    return r.f32s(3, field)


def _counted(r: Reader, kind: str, item_size: int, field: str) -> int:
    """A u8/u16/u32 count refused when its items cannot fit in the bytes left."""
    at = r.pos
    n = {"u8": r.u8, "u16": r.u16, "u32": r.u32}[kind](field)
    if n * item_size > r.remaining():
        raise FormatError(f"count {n} needs at least {n * item_size} bytes, {r.remaining()} left", at, field)
    return n


def read(data: bytes) -> pmx.PmxModel:
    """A PMD file as PMX records (FormatError naming the offset and field for a structural fault)."""
    r = Reader(data)
    r.magic((MAGIC,))
    at = r.pos
    version = r.f32("version")
    if not abs(float(version) - 1.0) < 0.01:
        raise FormatError(f"version {version} is not 1.0", at, "version")
    m = pmx.PmxModel(encoding=pmx.ENCODING_UTF16)
    m.name = _text(r, 20, "model name")
    m.comment = _text(r, 256, "comment")

    _read_geometry(r, m)

    m.at["materials"] = r.pos
    n = _counted(r, "u32", 70, "material count")
    raw_materials = []
    for i in range(n):
        f = f"material {i}"
        diffuse = r.f32s(4, f + " diffuse")
        power = r.f32(f + " specular power")
        specular = _f3(r, f + " specular")
        ambient = _f3(r, f + " ambient")
        toon = r.i8(f + " toon")
        edge = r.u8(f + " edge flag")
        count = r.u32(f + " index count")
        texture = _text(r, 20, f + " texture")
        raw_materials.append((diffuse, power, specular, ambient, toon, edge, count, texture))

    m.at["bones"] = r.pos
    n = _counted(r, "u16", 39, "bone count")
    raw_bones = []
    for i in range(n):
        f = f"bone {i}"
        raw_bones.append((_text(r, 20, f + " name"), r.i16(f + " parent"), r.i16(f + " tail"), r.u8(f + " type"),
                          r.i16(f + " IK bone"), _f3(r, f + " position")))

    m.at["iks"] = r.pos
    n = _counted(r, "u16", 11, "IK count")
    iks = []
    for i in range(n):
        f = f"IK {i}"
        bone, target = r.u16(f + " bone"), r.u16(f + " target")
        links = r.u8(f + " link count")
        loop, limit = r.u16(f + " iterations"), r.f32(f + " limit")
        iks.append((bone, target, loop, limit, r.array("<u2", links, f + " links").tolist()))

    m.at["morphs"] = r.pos
    n = _counted(r, "u16", 25, "morph count")
    raw_morphs = []
    for i in range(n):
        f = f"morph {i}"
        name = _text(r, 20, f + " name")
        k = _counted(r, "u32", _MORPH_OFFSET.itemsize + 1, f + " offset count")
        panel = r.u8(f + " panel")
        raw_morphs.append((name, panel, r.array(_MORPH_OFFSET, k, f + " offsets")))
        if i == 0:
            base_at = r.pos - k * _MORPH_OFFSET.itemsize
    m.morphs = _morphs(raw_morphs, len(m.vertices), m.warnings, base_at if raw_morphs else 0)

    n = _counted(r, "u8", 2, "morph display count")
    morph_list = r.array("<u2", n, "morph display list").tolist()
    n = _counted(r, "u8", 50, "bone display list count")
    frame_names = [_text(r, 50, f"bone display list {i} name") for i in range(n)]
    n = _counted(r, "u32", 3, "bone display count")
    entries = r.array(np.dtype([("bone", "<u2"), ("frame", "u1")]), n, "bone display entries")

    english_bones, english_frames, toon_names = _read_extensions(r, m, len(raw_bones), len(frame_names))

    m.textures, m.materials = _materials(raw_materials, toon_names)
    m.bones = _bones(raw_bones, english_bones, iks, m.warnings)
    m.display_frames = [pmx.PmxDisplayFrame("Root", "Root", 1, [(0, 0)] if m.bones else []),
                        pmx.PmxDisplayFrame("表情", "Exp", 1, [(1, i - 1) for i in morph_list
                                                               if 0 < i <= len(m.morphs)])]
    for i, (name, name_e) in enumerate(zip(frame_names, english_frames)):
        m.display_frames.append(pmx.PmxDisplayFrame(name, name_e, 0, [
            (0, int(b)) for b, fr in zip(entries["bone"], entries["frame"]) if fr == i + 1 and b < len(m.bones)]))

    if not r.at_end():
        _read_physics(r, m, [b[5] for b in raw_bones])
    if not r.at_end():
        m.warnings.append(f"{r.remaining()} bytes after the joints at offset {r.pos} are ignored")
    return m


def _read_geometry(r: Reader, m: pmx.PmxModel) -> None:
    """Vertices (two-bone weights, the edge flag as PMX's edge scale) and the triangle list."""
    m.at["vertices"] = r.pos
    n = _counted(r, "u32", _VERTEX.itemsize, "vertex count")
    raw = r.array(_VERTEX, n, "vertices")
    v = np.zeros(n, pmx.vertex_dtype(0))
    v["position"], v["normal"], v["uv"] = raw["position"], raw["normal"], raw["uv"]
    v["deform"] = pmx.BDEF2
    v["bones"] = -1
    v["bones"][:, :2] = raw["bones"]
    w = np.minimum(raw["weight"], 100).astype("<f4") / np.float32(100)
    v["weights"][:, 0], v["weights"][:, 1] = w, 1 - w
    v["edge_scale"] = np.where(raw["edge"] == 0, 1.0, 0.0)
    m.vertices = v

    m.at["indices"] = r.pos
    n = _counted(r, "u32", 2, "index count")
    m.indices = r.array("<u2", n, "indices").astype("<i4")


def _read_extensions(r: Reader, m: pmx.PmxModel, bone_count: int, frame_count: int):
    """The optional English names and toon list: (English bone names, English display list names, toon names
    or None when the file has no toon list)."""
    toon_names: list[str] | None = None
    if not r.at_end():
        if r.u8("English names flag"):
            m.name_e = _text(r, 20, "English model name")
            m.comment_e = _text(r, 256, "English comment")
            english_bones = [_text(r, 20, f"bone {i} English name") for i in range(bone_count)]
            for (i, morph) in enumerate(m.morphs):
                morph.name_e = _text(r, 20, f"morph {i + 1} English name")
            english_frames = [_text(r, 50, f"bone display list {i} English name") for i in range(frame_count)]
        else:
            english_bones, english_frames = [""] * bone_count, [""] * frame_count
        if not r.at_end():
            m.at["toons"] = r.pos
            toon_names = [_text(r, 100, f"toon {i} name") for i in range(10)]
    else:
        english_bones, english_frames = [""] * bone_count, [""] * frame_count
    return english_bones, english_frames, toon_names


def _read_physics(r: Reader, m: pmx.PmxModel, bone_positions: list) -> None:
    """Rigid bodies (their positions made absolute: PMD stores them relative to their bone) and joints."""
    m.at["rigid_bodies"] = r.pos
    n = _counted(r, "u32", 83, "rigid body count")
    for i in range(n):
        f = f"rigid body {i}"
        b = pmx.PmxRigidBody(name=_text(r, 20, f + " name"), bone=r.i16(f + " bone"), group=r.u8(f + " group"),
                             no_collision_mask=r.u16(f + " mask"), shape=r.u8(f + " shape"),
                             size=_f3(r, f + " size"), position=_f3(r, f + " position"),
                             rotation=_f3(r, f + " rotation"), mass=r.f32(f + " mass"),
                             linear_damping=r.f32(f + " linear damping"),
                             angular_damping=r.f32(f + " angular damping"),
                             restitution=r.f32(f + " restitution"), friction=r.f32(f + " friction"),
                             mode=r.u8(f + " mode"))
        if b.bone >= len(bone_positions):
            raise FormatError(f"bone {b.bone} of {len(bone_positions)}", r.pos, f + " bone")
        if bone_positions:  # PMD stores the position relative to its bone (bone 0 for none)
            b.position = (b.position + bone_positions[max(b.bone, 0)]).astype("<f4")
        m.rigid_bodies.append(b)
    m.at["joints"] = r.pos
    n = _counted(r, "u32", 124, "joint count")
    for i in range(n):
        f = f"joint {i}"
        j = pmx.PmxJoint(name=_text(r, 20, f + " name"), rigid_a=r.i32(f + " body A"),
                         rigid_b=r.i32(f + " body B"))
        for key in ("position", "rotation", "translation_lower", "translation_upper", "rotation_lower",
                    "rotation_upper", "spring_translation", "spring_rotation"):
            setattr(j, key, _f3(r, f"{f} {key.replace('_', ' ')}"))
        m.joints.append(j)


def _morphs(raw, vertex_count: int, warnings: list[str], base_at: int) -> list[pmx.PmxMorph]:
    if not raw:
        return []
    base = raw[0][2]["vertex"].astype(np.int64)
    if base.size and int(base.max()) >= vertex_count:
        raise FormatError(f"base morph names vertex {int(base.max())} of {vertex_count}", base_at, "morph 0 offsets")
    out = []
    for name, panel, offsets in raw[1:]:
        idx = offsets["vertex"].astype(np.int64)
        bad = idx >= base.size
        if bad.any():
            warnings.append(f"morph {name}: {int(bad.sum())} offsets beyond the base morph dropped")
        rec = pmx.empty_records(pmx.MORPH_OFFSETS[pmx.MORPH_VERTEX], int((~bad).sum()))
        rec["vertex"] = base[idx[~bad]]
        rec["offset"] = offsets["offset"][~bad]
        out.append(pmx.PmxMorph(name=name, panel=min(panel, 4), kind=pmx.MORPH_VERTEX, offsets=rec))
    return out


def _materials(raw, toon_names: list[str] | None) -> tuple[list[str], list[pmx.PmxMaterial]]:
    textures: list[str] = []

    def texture(path: str) -> int:
        if path not in textures:
            textures.append(path)
        return textures.index(path)

    out = []
    for i, (diffuse, power, specular, ambient, toon, edge, count, tex) in enumerate(raw):
        mat = pmx.PmxMaterial(name=f"material{i}", name_e=f"material{i}", diffuse=diffuse, specular=specular,
                              specular_power=power, ambient=ambient, index_count=count)
        flags = 0x10 | 0x02 if edge else 0
        if diffuse[3] != np.float32(0.98):
            flags |= 0x04 | 0x08
        if diffuse[3] < 1:
            flags |= 0x01
        mat.draw_flags = flags
        for part in (p for p in tex.split("*") if p):
            ext = part.rsplit(".", 1)[-1].lower() if "." in part else ""
            if ext in ("sph", "spa"):
                mat.sphere_texture, mat.sphere_mode = texture(part), 1 if ext == "sph" else 2
            else:
                mat.texture = texture(part)
        if 0 <= toon < 10:
            name = toon_names[toon] if toon_names is not None else f"toon{toon + 1:02d}.bmp"
            key = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
            if key in _SHARED_TOONS:
                mat.shared_toon, mat.toon = 1, _SHARED_TOONS[key]
            elif name:
                mat.toon = texture(name)
        out.append(mat)
    return textures, out


def _bones(raw, english: list[str], iks, warnings: list[str]) -> list[pmx.PmxBone]:
    F = pmx.BoneFlag
    n = len(raw)
    bones = []
    ik_bones = {ik[0] for ik in iks if ik[0] < n}
    for i, (name, parent, tail, kind, ik_index, position) in enumerate(raw):
        b = pmx.PmxBone(name=name, name_e=english[i], position=position,
                        parent=parent if 0 <= parent < n else -1)
        flags = F.TAIL_IS_BONE | F.ROTATABLE | F.VISIBLE | F.OPERABLE
        b.tail_bone = tail if 0 < tail < n else -1
        if kind == 1:
            flags |= F.MOVABLE
        elif kind == 5 and 0 <= tail < n:  # append rotation of the tail bone by (IK field) percent
            flags = (flags | F.APPEND_ROTATE) & ~F.TAIL_IS_BONE & ~F.VISIBLE
            b.append_parent, b.append_ratio = tail, np.float32(ik_index * 0.01)
            b.tail_bone, b.tail_offset = None, pmx.f4(0, 0, 0)
        elif kind == 8 and 0 <= tail < n:  # twist: a fixed axis toward the tail
            axis = raw[tail][5].astype(np.float64) - position
            length = float(np.linalg.norm(axis))
            if length > 0:
                flags = (flags | F.FIXED_AXIS) & ~F.TAIL_IS_BONE
                b.fixed_axis = (axis / length).astype("<f4")
                b.tail_bone, b.tail_offset = None, pmx.f4(0, 0, 0)
        if kind == 7:  # hidden
            flags &= ~F.VISIBLE
        if kind == 2 or i in ik_bones:
            flags |= F.MOVABLE | F.IK
            b.layer = 1
        b.flags = int(flags)
        bones.append(b)
    extra = []
    for bone_index, target, loop, limit, links in iks:
        if bone_index >= n or not bones[bone_index].flags & F.IK:
            warnings.append(f"IK of bone {bone_index} ignored: no such bone")
            continue
        ik = pmx.PmxIK(target=target if target < n else -1, loop=loop, limit_angle=np.float32(limit * 4))
        for link in links:
            if link >= n:
                continue
            lk = pmx.PmxIKLink(link)
            if raw[link][0] in _KNEES:
                lk.lower, lk.upper = pmx.f4(*_KNEE_LOWER), pmx.f4(*_KNEE_UPPER)
            ik.links.append(lk)
        owner = bones[bone_index]
        if owner.ik is None:
            owner.ik = ik
        else:  # a second IK on one bone: a hidden child bone carries it
            extra.append(pmx.PmxBone(name=owner.name + "+", name_e=owner.name_e, position=owner.position.copy(),
                                     parent=bone_index, layer=owner.layer,
                                     flags=int(owner.flags & ~F.VISIBLE & ~F.TAIL_IS_BONE),
                                     tail_offset=pmx.f4(0, 0, 0), ik=ik))
    for b in bones:
        if b.flags & F.IK and b.ik is None:
            b.flags &= ~int(F.IK)
    return bones + extra


def load(path: str, data: bytes | None = None, with_animations: bool = True, motions=()):
    """A `.pmd` file as a core Scene (the registry's `load`: `convert x.pmd --to pmx` writes it as PMX 2.0)."""
    model = read(read_bytes(path) if data is None else data)
    scene, warnings = convert.to_scene(model, os.path.splitext(os.path.basename(os.fspath(path)))[0])
    scene.extras["compare"] = convert.compare_view(model)
    return scene, list(model.warnings) + warnings
