"""Wallpaper Engine `.mdl` (MDLV 4–23) codec: bytes ⇄ records that mirror the file field for field.

Layout: docs/wallpaper_engine.md §2 (from the strict reference parser of open-wallpaper-engine-mac, cited in
docs/wallpaper_engine.md §1, and the real files; an early reverse-engineering log is wrong where it disagrees
(docs/wallpaper_engine.md §2.9): bone indices are explicit u32 values inside the vertex, sections carry
absolute end offsets, bone records start with their name, clip samples are position + Euler XYZ + scale).

    cstr "MDLVnnnn"; u32 legacy_format; u32 materials_per_mesh; u32 mesh_count; MESH × mesh_count
    version ≥ 13: tagged sections {cstr tag; u32 absolute end; body} until the empty tag, then padding

Nothing is interpreted: positions stay image pixels, matrices stay column-major float32 with their exact bits,
Euler samples stay radians. Sections whose layout the reference gives are parsed (MDLS 1–4, MDAT0001, MDLA 1–6,
MDLE0002); the parts whose meaning nobody has confirmed (the MDLS v2+ link/constraint/IK tables, the MDLA v2+
blocks, MDMP0001) are walked by their layout, so a fault in them is found, and kept as raw bytes; a tag we do
not know is kept whole and skipped by its end offset. Every parsed section must end exactly at its stored end.
The end tag and whatever follows it (the zero padding of MDLV0013-era files) are kept, so read → write gives
back the same bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...core.binary import Reader, Writer
from ...core.errors import ExportError, FormatError

MAGIC = b"MDLV"
MIN_VERSION, MAX_VERSION = 4, 23
SECTION_VERSION = 13  # first MDLV with tagged sections
MESH_FORMAT_VERSION = 15  # per-mesh vertex format dword
MESH_BBOX_VERSION = 17
MESH_BLOCKS_VERSION = 21
MESH_GROUPS_VERSION = 23
PAD_SIZE = 1 << 20  # MDLV0013-era writers emit a fixed 1 MiB buffer

FLAG_INDEX32 = 0x1
FLAG_EXTRA = 0x2

# Vertex attributes in the order they are packed (docs/wallpaper_engine.md §2.2): bit, field name, numpy type, count.
VERTEX_ATTRIBUTES = (
    (0x00000001, "position", "<f4", 3),
    (0x00010000, "position4", "<f4", 4),
    (0x02000000, "position_c1", "<f4", 3),
    (0x00000002, "normal", "<f4", 3),
    (0x00000004, "tangent", "<f4", 4),
    (0x00800000, "joints", "<u4", 4),
    (0x01000000, "weights", "<f4", 4),
    (0x00000008, "uv0", "<f4", 2),
    (0x00000010, "uv0_3", "<f4", 3),
    (0x00000020, "uv0_4", "<f4", 4),
    (0x00000040, "uv1", "<f4", 2),
    (0x00000080, "uv1_3", "<f4", 3),
    (0x00000100, "uv1_4", "<f4", 4),
    (0x00000200, "uv2", "<f4", 2),
    (0x00000400, "uv2_3", "<f4", 3),
    (0x00000800, "uv2_4", "<f4", 4),
    (0x00001000, "uv3", "<f4", 2),
    (0x00002000, "uv3_3", "<f4", 3),
    (0x00004000, "uv3_4", "<f4", 4),
    (0x00020000, "uv4", "<f4", 2),
    (0x00040000, "uv4_3", "<f4", 3),
    (0x00080000, "uv4_4", "<f4", 4),
    (0x00100000, "uv5", "<f4", 2),
    (0x00200000, "uv5_3", "<f4", 3),
    (0x00400000, "uv5_4", "<f4", 4),
    (0x00008000, "color", "<f4", 4),
)
KNOWN_FORMAT_BITS = 0
for _bit, *_ in VERTEX_ATTRIBUTES:
    KNOWN_FORMAT_BITS |= _bit

FORMAT_STATIC = 0x0000000F  # pos nrm tan4 uv: 48 bytes
FORMAT_UNSKINNED = 0x00000009  # pos uv: 20 bytes
FORMAT_NARROW = 0x01800009  # pos idx weights uv: 52 bytes
FORMAT_WIDE = 0x0180000F  # pos nrm tan4 idx weights uv: 80 bytes

SAMPLE_FLOATS = 9  # position xyz, Euler xyz (radians), scale xyz


def vertex_dtype(fmt: int) -> np.dtype:
    """The packed vertex of a format bitmask; FormatError-free: callers check the bits first."""
    fields = [(name, t, (n,)) for bit, name, t, n in VERTEX_ATTRIBUTES if fmt & bit]
    return np.dtype(fields) if fields else np.dtype([("position", "<f4", (3,))])


def vertex_stride(fmt: int) -> int:
    return sum(np.dtype(t).itemsize * n for bit, _, t, n in VERTEX_ATTRIBUTES if fmt & bit)


# ------------------------------------------------------------------------------------------------------------
# records

@dataclass
class Group:
    """A v23 mesh record (purpose unconfirmed): kept field for field."""
    id: int
    name: str
    flags: int
    list_a: np.ndarray
    list_b: np.ndarray


@dataclass
class Mesh:
    materials: list[str]
    flags: int = 0
    flags_extra: int | None = None  # present when flags & 2
    bbox: np.ndarray | None = None  # (6,) f4 min xyz, max xyz; version ≥ 17
    format: int = FORMAT_NARROW  # the per-mesh dword (v ≥ 15), else the header's legacy format
    vertices: np.ndarray = None  # structured, vertex_dtype(format)
    indices: np.ndarray = None  # flat u2 (or u4 with flags & 1): a triangle list
    extra_flag: int = 0  # v21+: u8; nonzero → u32 + blob ("extra positions")
    extra_u32: int = 0
    extra_blob: bytes = b""
    vector4_flag: int = 0  # v21+: u8; nonzero → blob of f32x4
    vector4_blob: bytes = b""
    groups: list[Group] = field(default_factory=list)  # v23

    @property
    def index_size(self) -> int:
        return 4 if self.flags & FLAG_INDEX32 else 2


@dataclass
class Bone:
    name: str
    flags: int
    parent: int  # i32, -1 for a root
    matrix: np.ndarray  # (16,) f4 column-major local bind (translation in 12, 13, 14)
    props: str = ""  # simulation / IK JSON
    matrix_length: int = 64


@dataclass
class Skeleton:
    version: int
    bones: list[Bone]
    tables: bytes = b""  # v2+: links, rest matrices, constraints, maps, IK chains ... (raw)
    link_count: int = 0  # from `tables`: the MDLA v2+ blocks hold one track per link and per constraint
    constraint_count: int = 0


@dataclass
class Attachment:
    bone: int  # u16
    name: str
    matrix: np.ndarray  # (16,) f4 column-major, relative to the bone


@dataclass
class Clip:
    id: int
    reserved: int  # u32 after the id (0 in every file: the reference reads id as a u64)
    name: str
    mode: str  # "loop" | "mirror" | "single" | "" (= loop)
    fps: np.float32
    length: int  # frames; length + 1 samples per track
    flags: int
    track_flags: np.ndarray  # (T,) u4
    samples: np.ndarray  # (T, length + 1, 9) f4: position, Euler XYZ radians, scale — the bone's local pose
    blocks: bytes = b""  # the MDLA v2+ blocks (link/constraint/scalar/morph tracks, bounds) as raw bytes
    reference: tuple[int, int, int, int, int] | None = None  # flags & 1: u16 clip, u32 × 4
    events: list[tuple[np.float32, str]] = field(default_factory=list)  # (frame, JSON)


@dataclass
class Animations:
    version: int
    clips: list[Clip]


@dataclass
class Section:
    """A tagged section. `body` is a Skeleton, a list of Attachment, Animations, an (n, 16) f4 array
    (MDLE0002) or raw bytes (MDMP0001 and tags we do not know)."""
    tag: str
    body: object


@dataclass
class Model:
    tag: str = "MDLV0013"
    legacy_format: int = FORMAT_NARROW
    materials_per_mesh: int = 1
    meshes: list[Mesh] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    end_tag: bool = True  # the empty tag after the sections (v ≥ 13)
    tail: bytes = b""  # bytes after the end tag (zero padding), or after the meshes of a v < 13 file
    pad_to: int | None = None  # write zeros up to this size instead of `tail` (a writer's fixed buffer)
    warnings: list[str] = field(default_factory=list)
    offsets: dict[str, int] = field(default_factory=dict)  # where records start (for check)

    @property
    def version(self) -> int:
        return tag_version(self.tag)

    def section(self, prefix: str):
        return next((s.body for s in self.sections if s.tag.startswith(prefix)), None)

    @property
    def skeleton(self) -> Skeleton | None:
        body = self.section("MDLS")
        return body if isinstance(body, Skeleton) else None

    @property
    def animations(self) -> Animations | None:
        body = self.section("MDLA")
        return body if isinstance(body, Animations) else None

    @property
    def attachments(self) -> list[Attachment]:
        body = self.section("MDAT0001")
        return body if isinstance(body, list) else []


def tag_version(tag: str) -> int:
    """atoi of the digits after the four-letter prefix (as the engine dispatches sections)."""
    digits = ""
    for ch in tag[4:]:
        if ch not in "0123456789":  # str.isdigit also takes superscripts
            break
        digits += ch
    return int(digits) if digits else 0


def sniff(head: bytes) -> bool:
    return head[:4] == MAGIC


# ------------------------------------------------------------------------------------------------------------
# reading

def _blob(r: Reader, field: str) -> bytes:
    at = r.pos
    n = r.u32(field + " length")
    if n > r.remaining():
        raise FormatError(f"length {n} exceeds the {r.remaining()} bytes left", at, field + " length")
    return r.bytes(n, field)


def _u32s(r: Reader, field: str, count_size: int = 4) -> np.ndarray:
    at = r.pos
    n = r.u32(field + " count") if count_size == 4 else r.u16(field + " count")
    if 4 * n > r.remaining():
        raise FormatError(f"count {n} needs {4 * n} bytes, {r.remaining()} left", at, field + " count")
    return r.array("<u4", n, field)


def _read_mesh(r: Reader, m: Model, k: int) -> Mesh:
    v = m.version
    p = f"mesh {k}"
    m.offsets[p] = r.pos
    mesh = Mesh(materials=[r.cstring(f"{p} material {j}") for j in range(m.materials_per_mesh)])
    mesh.flags = r.u32(f"{p} flags") if v >= 4 else 0
    if mesh.flags & FLAG_EXTRA:
        mesh.flags_extra = r.u32(f"{p} flags extra")
    if v >= MESH_BBOX_VERSION:
        m.offsets[f"{p} bbox"] = r.pos
        mesh.bbox = r.array("<f4", 6, f"{p} bbox")
    if v >= MESH_FORMAT_VERSION:
        m.offsets[f"{p} format"] = r.pos
        mesh.format = r.u32(f"{p} format")
    else:
        mesh.format = m.legacy_format
    fmt_at = m.offsets.get(f"{p} format", 8)
    if mesh.format & ~KNOWN_FORMAT_BITS:
        raise FormatError(f"unknown vertex format bits 0x{mesh.format & ~KNOWN_FORMAT_BITS:x} in 0x{mesh.format:x}",
                          fmt_at, f"{p} format")
    stride = vertex_stride(mesh.format)
    at = r.pos
    nbytes = r.u32(f"{p} vertex bytes")
    r.need(nbytes, f"{p} vertices")
    if (stride == 0 and nbytes) or (stride and nbytes % stride):
        raise FormatError(f"{nbytes} vertex bytes are not a multiple of the {stride}-byte vertex of format "
                          f"0x{mesh.format:x}", at, f"{p} vertex bytes")
    m.offsets[f"{p} vertices"] = r.pos
    mesh.vertices = r.array(vertex_dtype(mesh.format), nbytes // stride if stride else 0, f"{p} vertices")
    at = r.pos
    nbytes = r.u32(f"{p} index bytes")
    r.need(nbytes, f"{p} indices")
    if nbytes % mesh.index_size:
        raise FormatError(f"{nbytes} index bytes are not a multiple of the {mesh.index_size}-byte index", at,
                          f"{p} index bytes")
    m.offsets[f"{p} indices"] = r.pos
    mesh.indices = r.array("<u4" if mesh.index_size == 4 else "<u2", nbytes // mesh.index_size, f"{p} indices")
    if v >= MESH_BLOCKS_VERSION:
        mesh.extra_flag = r.u8(f"{p} extra positions flag")
        if mesh.extra_flag:
            mesh.extra_u32 = r.u32(f"{p} extra positions word")
            mesh.extra_blob = _blob(r, f"{p} extra positions")
        mesh.vector4_flag = r.u8(f"{p} vector4 flag")
        if mesh.vector4_flag:
            at = r.pos
            mesh.vector4_blob = _blob(r, f"{p} vector4 block")
            if len(mesh.vector4_blob) % 16:
                raise FormatError(f"vector4 block of {len(mesh.vector4_blob)} bytes is not a multiple of 16", at,
                                  f"{p} vector4 block length")
    if v >= MESH_GROUPS_VERSION:
        n = r.count(f"{p} group count", 8 + 1 + 12)
        for g in range(n):
            q = f"{p} group {g}"
            lo, hi = r.u32(f"{q} id"), r.u32(f"{q} id")
            name = r.cstring(f"{q} name")
            flags = r.u32(f"{q} flags")
            mesh.groups.append(Group(lo | hi << 32, name, flags, _u32s(r, f"{q} list a"), _u32s(r, f"{q} list b")))
    return mesh


def _read_bone(r: Reader, m: Model, i: int) -> Bone:
    p = f"bone {i}"
    m.offsets[p] = r.pos
    name = r.cstring(f"{p} name")
    flags = r.u32(f"{p} flags")
    parent = r.i32(f"{p} parent")
    at = r.pos
    length = r.u32(f"{p} matrix length")
    if length != 64:  # the engine reads min(length, 64) bytes: any other length changes the layout
        raise FormatError(f"matrix length {length}, expected 64", at, f"{p} matrix length")
    m.offsets[f"{p} matrix"] = r.pos
    matrix = r.array("<f4", 16, f"{p} matrix")
    props = r.cstring(f"{p} props")
    return Bone(name, flags, parent, matrix, props, length)


def _walk_skeleton_tables(r: Reader, version: int, n_bones: int) -> tuple[int, int]:
    """The MDLS v2+ tables (docs/wallpaper_engine.md §2.4), walked for their extent; returns (links, constraints)."""
    n_links = r.u16("links count")
    for i in range(n_links):
        r.cstring(f"link {i} name")
        r.need(8 + 64, f"link {i}")
        r.pos += 8 + 64
    if r.u8("rest matrices flag"):
        n = (n_bones + n_links) * 64
        r.need(n, "rest matrices")
        r.pos += n
    n_constraints = r.count("constraints count", 12)
    for i in range(n_constraints):
        r.need(12, f"constraint {i}")
        r.pos += 12
        flags = r.u32(f"constraint {i} flags") if version >= 4 else 0
        if flags & 2:
            r.need(8, f"constraint {i} limits")
            r.pos += 8
    n4 = r.u16("map ids count")
    r.need(4 * n4, "map ids")
    r.pos += 4 * n4
    for i in range(n4):
        k = r.u16(f"map {i} count")
        r.need(16 * k, f"map {i}")
        r.pos += 16 * k
    for i in range(r.u16("IK chains count")):
        r.need(4, f"IK chain {i} bone")
        r.pos += 4
        k = r.u32(f"IK chain {i} links count")
        r.need(4 * k, f"IK chain {i} links")
        r.pos += 4 * k
        for e in range(r.u16(f"IK chain {i} elements count")):
            r.need(4, f"IK chain {i} element {e} bone")
            r.pos += 4
            for s in range(r.u16(f"IK chain {i} element {e} joints count")):
                r.need(16, f"IK chain {i} element {e} joint {s}")
                r.pos += 16
                k4 = r.u16(f"IK chain {i} element {e} joint {s} bones count")
                r.need(4 * k4, f"IK chain {i} element {e} joint {s} bones")
                r.pos += 4 * k4
    if r.u8("offset transforms flag"):
        r.need(n_bones * 76, "offset transforms")
        r.pos += n_bones * 76
    if r.u8("bone words A flag"):
        r.need(n_bones * 4, "bone words A")
        r.pos += n_bones * 4
    if version >= 3 and r.u8("bone words B flag"):
        r.need(n_bones * 4, "bone words B")
        r.pos += n_bones * 4
    return n_links, n_constraints


def _read_skeleton(r: Reader, m: Model, version: int) -> Skeleton:
    n = r.count("bone count", 1 + 12 + 64 + 1)
    bones = [_read_bone(r, m, i) for i in range(n)]
    sk = Skeleton(version, bones)
    if version >= 2:
        start = r.pos
        sk.link_count, sk.constraint_count = _walk_skeleton_tables(r, version, n)
        sk.tables = r.data[start:r.pos]
    return sk


def _scalar_tracks(r: Reader, count: int, length: int, per_sample: int, field: str) -> None:
    for i in range(count):
        r.need(4, f"{field} {i} word")
        r.pos += 4
        at = r.pos
        n = r.u32(f"{field} {i} bytes")
        if n != per_sample * (length + 1):
            raise FormatError(f"{n} bytes, expected {per_sample} × {length + 1} samples", at, f"{field} {i} bytes")
        r.need(n, f"{field} {i}")
        r.pos += n


def _walk_clip_blocks(r: Reader, version: int, clip: Clip, m: Model, sk: Skeleton | None, p: str) -> None:
    """The MDLA v2+ blocks between the bone tracks and the reference block, walked for their extent."""
    tracks = len(clip.track_flags)
    if version >= 2:
        _scalar_tracks(r, sk.link_count if sk else 0, clip.length, 36, f"{p} link track")
        _scalar_tracks(r, sk.constraint_count if sk else 0, clip.length, 4, f"{p} constraint track")
    if version >= 3:
        k = r.count(f"{p} scalar tracks count", 8)
        _scalar_tracks(r, k, clip.length, 4, f"{p} scalar track")
        if r.u8(f"{p} bone scalar tracks flag"):
            _scalar_tracks(r, tracks, clip.length, 4, f"{p} bone scalar track")
    if version >= 4 and r.u8(f"{p} mesh tracks flag"):
        for j in range(len(m.meshes)):
            if r.u32(f"{p} mesh {j} track flags") & 1:
                r.f32(f"{p} mesh {j} value")
                for t in range(r.u16(f"{p} mesh {j} morph tracks count")):
                    r.u16(f"{p} mesh {j} morph track {t} morph")
                    at = r.pos
                    n = r.u32(f"{p} mesh {j} morph track {t} bytes")
                    if n != 4 * (clip.length + 1):
                        raise FormatError(f"{n} bytes, expected 4 × {clip.length + 1}", at,
                                          f"{p} mesh {j} morph track {t} bytes")
                    r.need(n, f"{p} mesh {j} morph track {t}")
                    r.pos += n
    if version >= 5:
        r.need(24, f"{p} bounds")
        r.pos += 24
    if version >= 6 and r.u8(f"{p} bone scalar tracks C flag"):
        _scalar_tracks(r, tracks, clip.length, 4, f"{p} bone scalar track C")


def _read_clip(r: Reader, m: Model, version: int, sk: Skeleton | None, k: int) -> Clip:
    p = f"clip {k}"
    m.offsets[p] = r.pos
    clip_id, reserved = r.u32(f"{p} id"), r.u32(f"{p} id high word")
    name = r.cstring(f"{p} name")
    mode = r.cstring(f"{p} mode")
    m.offsets[f"{p} fps"] = r.pos
    fps = r.f32(f"{p} fps")
    length = r.u32(f"{p} length")
    flags = r.u32(f"{p} flags")
    per_track = 8 + 36 * (length + 1)
    n_tracks = r.count(f"{p} track count", per_track, signed=True)
    m.offsets[f"{p} tracks"] = r.pos
    if n_tracks == 0:  # no track bounds the length: keep it out of any array shape
        clip = Clip(clip_id, reserved, name, mode, fps, length, flags, np.zeros(0, "<u4"),
                    np.zeros((0, 1, SAMPLE_FLOATS), "<f4"))
        return _read_clip_tail(r, m, version, sk, clip, p)
    dt = np.dtype([("flags", "<u4"), ("bytes", "<u4"), ("samples", "<f4", (length + 1, SAMPLE_FLOATS))])
    tracks = r.array(dt, n_tracks, f"{p} tracks")
    bad = np.flatnonzero(tracks["bytes"] != 36 * (length + 1))
    if len(bad):
        t = int(bad[0])
        raise FormatError(f"track of {int(tracks['bytes'][t])} bytes, expected 36 × {length + 1} samples",
                          m.offsets[f"{p} tracks"] + t * per_track + 4, f"{p} track {t} bytes")
    clip = Clip(clip_id, reserved, name, mode, fps, length, flags, tracks["flags"].copy(),
                tracks["samples"].reshape(n_tracks, length + 1, SAMPLE_FLOATS).copy())
    return _read_clip_tail(r, m, version, sk, clip, p)


def _read_clip_tail(r: Reader, m: Model, version: int, sk: Skeleton | None, clip: Clip, p: str) -> Clip:
    start = r.pos
    _walk_clip_blocks(r, version, clip, m, sk, p)
    clip.blocks = r.data[start:r.pos]
    if clip.flags & 1:
        clip.reference = (r.u16(f"{p} reference clip"), r.u32(f"{p} reference start"), r.u32(f"{p} reference end"),
                          r.u32(f"{p} reference offset"), r.u32(f"{p} reference root bone"))
    m.offsets[f"{p} events"] = r.pos
    n_events = r.count(f"{p} event count", 5, signed=True)
    clip.events = [(r.f32(f"{p} event {e} frame"), r.cstring(f"{p} event {e} text")) for e in range(n_events)]
    return clip


def _read_animations(r: Reader, m: Model, version: int) -> Animations:
    n = r.count("clip count", 8 + 2 + 12 + 4 + 4, signed=True)
    sk = m.skeleton
    return Animations(version, [_read_clip(r, m, version, sk, k) for k in range(n)])


def _read_attachments(r: Reader, m: Model) -> list[Attachment]:
    n = r.u16("attachment count")
    if n * (2 + 1 + 64) > r.remaining():
        raise FormatError(f"count {n} exceeds the bytes left", r.pos - 2, "attachment count")
    out = []
    for i in range(n):
        m.offsets[f"attachment {i}"] = r.pos
        bone = r.u16(f"attachment {i} bone")
        out.append(Attachment(bone, r.cstring(f"attachment {i} name"), r.array("<f4", 16, f"attachment {i} matrix")))
    return out


def _walk_morphs(r: Reader, m: Model) -> None:
    for j, mesh in enumerate(m.meshes):
        p = f"mesh {j} morph"
        n = r.u16(f"{p} target count")
        if not n:
            continue
        r.f32(f"{p} scale")
        r.u32(f"{p} vertex count")
        for t in range(n):
            r.need(8, f"{p} {t} id")
            r.pos += 8
            r.cstring(f"{p} {t} name")
            _blob(r, f"{p} {t} positions")
            for bit, what in ((0x400, "normals"), (0x800, "tangents"), (0x1000, "words")):
                if mesh.flags & bit:
                    _blob(r, f"{p} {t} {what}")
            if mesh.flags & 0x2000:
                r.need(16, f"{p} {t} bone")
                r.pos += 16


def _read_section(r: Reader, m: Model, tag: str, end: int):
    kind, version = tag[:4], tag_version(tag)
    if kind == "MDLS" and 1 <= version <= 4:
        return _read_skeleton(r, m, version)
    if kind == "MDLA" and 1 <= version <= 6:
        return _read_animations(r, m, version)
    if tag == "MDAT0001":
        return _read_attachments(r, m)
    if tag == "MDLE0002":
        n_bones = len(m.skeleton.bones) if m.skeleton else 0
        at = r.pos
        n = r.u32("reference pose bytes")
        if n != 64 * n_bones:
            raise FormatError(f"{n} bytes, expected 64 × {n_bones} bones", at, "reference pose bytes")
        return r.array("<f4", n // 4, "reference pose").reshape(-1, 16)
    if tag == "MDMP0001":
        start = r.pos
        _walk_morphs(r, m)
        return r.data[start:r.pos]
    return r.bytes(end - r.pos, f"section {tag}")


def read(data: bytes) -> Model:
    r = Reader(data)
    at = r.pos
    if data[:4] != MAGIC:
        raise FormatError(f"expected 'MDLV', found {bytes(data[:4])!r}", 0, "magic")
    tag = r.cstring("tag", "latin-1")
    version = tag_version(tag)
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise FormatError(f"MDLV version {version} is not one of {MIN_VERSION}..{MAX_VERSION}", at + 4, "version")
    m = Model(tag=tag)
    m.offsets["legacy format"] = r.pos
    m.legacy_format = r.u32("legacy format")
    m.materials_per_mesh = r.count("materials per mesh", 1)
    n = r.count("mesh count", m.materials_per_mesh + 4 + 8)
    m.meshes = [_read_mesh(r, m, k) for k in range(n)]
    if version < SECTION_VERSION:
        m.end_tag = False
        m.offsets["tail"] = r.pos
        m.tail = r.data[r.pos:]
        if m.tail:
            m.warnings.append(f"{len(m.tail)} bytes after the last mesh of an MDLV{version:04d} file (kept)")
        return m
    while True:
        if r.at_end():
            m.end_tag = False
            m.warnings.append("the file ends without the empty end tag after its sections")
            return m
        at = r.pos
        name = r.cstring("section tag", "latin-1")
        if not name:
            break
        m.offsets[f"section {len(m.sections)}"] = at
        m.offsets[f"section {name}"] = at
        end_at = r.pos
        end = r.u32(f"section {name} end")
        if end < r.pos or end > r.size:
            raise FormatError(f"section end {end} outside {r.pos}..{r.size}", end_at, f"section {name} end")
        body = _read_section(r, m, name, end)
        if r.pos != end:
            raise FormatError(f"section {name} ends at {r.pos}, its stored end offset is {end}", end_at,
                              f"section {name} end")
        m.sections.append(Section(name, body))
    m.offsets["tail"] = r.pos
    m.tail = r.data[r.pos:]
    stray = len(m.tail) - m.tail.count(0)
    if stray:
        m.warnings.append(f"{stray} nonzero bytes in the {len(m.tail)} bytes of padding after the end tag (kept)")
    return m


# ------------------------------------------------------------------------------------------------------------
# writing

def _write_mesh(w: Writer, m: Model, mesh: Mesh, k: int) -> None:
    v = m.version
    if len(mesh.materials) != m.materials_per_mesh:
        raise ExportError(f"mesh {k} has {len(mesh.materials)} materials, the model {m.materials_per_mesh} per mesh")
    for s in mesh.materials:
        w.cstring(s)
    if v >= 4:
        w.u32(mesh.flags)
    elif mesh.flags:
        raise ExportError(f"mesh {k}: flags 0x{mesh.flags:x} cannot be written before MDLV0004")
    if mesh.flags & FLAG_EXTRA:
        w.u32(mesh.flags_extra or 0)
    if v >= MESH_BBOX_VERSION:
        w.array(np.zeros(6, "<f4") if mesh.bbox is None else mesh.bbox, "<f4")
    if v >= MESH_FORMAT_VERSION:
        w.u32(mesh.format)
    elif mesh.format != m.legacy_format:
        raise ExportError(f"mesh {k}: format 0x{mesh.format:x} differs from the header's 0x{m.legacy_format:x}, "
                          f"which MDLV{v:04d} uses for every mesh")
    dt = vertex_dtype(mesh.format)
    verts = mesh.vertices
    if verts.dtype != dt:
        raise ExportError(f"mesh {k}: vertex layout {verts.dtype} does not match format 0x{mesh.format:x}")
    raw = verts.tobytes() if vertex_stride(mesh.format) else b""
    w.u32(len(raw))
    w.bytes(raw)
    idx = np.asarray(mesh.indices)
    raw = idx.astype("<u4" if mesh.index_size == 4 else "<u2").tobytes()
    w.u32(len(raw))
    w.bytes(raw)
    if v >= MESH_BLOCKS_VERSION:
        w.u8(mesh.extra_flag)
        if mesh.extra_flag:
            w.u32(mesh.extra_u32)
            w.u32(len(mesh.extra_blob))
            w.bytes(mesh.extra_blob)
        w.u8(mesh.vector4_flag)
        if mesh.vector4_flag:
            w.u32(len(mesh.vector4_blob))
            w.bytes(mesh.vector4_blob)
    if v >= MESH_GROUPS_VERSION:
        w.u32(len(mesh.groups))
        for g in mesh.groups:
            w.u32(g.id & 0xFFFFFFFF)
            w.u32(g.id >> 32)
            w.cstring(g.name)
            w.u32(g.flags)
            for lst in (g.list_a, g.list_b):
                w.u32(len(lst))
                w.array(lst, "<u4")


# the fixed fields that open a bone and a clip record, in file order: (Writer method, record attribute)
_BONE_HEAD = (("cstring", "name"), ("u32", "flags"), ("i32", "parent"), ("u32", "matrix_length"))
_CLIP_HEAD = (("u32", "id"), ("u32", "reserved"), ("cstring", "name"), ("cstring", "mode"), ("f32", "fps"),
              ("u32", "length"), ("u32", "flags"))


def _write_head(w: Writer, record, fields: tuple[tuple[str, str], ...]) -> None:
    for method, attr in fields:
        getattr(w, method)(getattr(record, attr))


def _write_skeleton(w: Writer, sk: Skeleton) -> None:
    w.u32(len(sk.bones))
    for b in sk.bones:
        _write_head(w, b, _BONE_HEAD)
        w.array(b.matrix, "<f4")
        w.cstring(b.props)
    if sk.version >= 2:
        w.bytes(sk.tables)


def _write_animations(w: Writer, anims: Animations) -> None:
    w.i32(len(anims.clips))
    for c in anims.clips:
        _write_head(w, c, _CLIP_HEAD)
        samples = np.asarray(c.samples, "<f4")
        n = len(c.track_flags)
        if n and samples.shape != (n, c.length + 1, SAMPLE_FLOATS):
            raise ExportError(f"clip {c.name!r}: samples of shape {samples.shape}, expected "
                              f"({n}, {c.length + 1}, {SAMPLE_FLOATS})")
        w.i32(n)
        if n == 0:
            samples = np.zeros((0, 1, SAMPLE_FLOATS), "<f4")
        dt = np.dtype([("flags", "<u4"), ("bytes", "<u4"), ("samples", "<f4", samples.shape[1:])])
        tracks = np.zeros(n, dt)
        tracks["flags"] = c.track_flags
        tracks["bytes"] = 36 * (c.length + 1)
        tracks["samples"] = samples
        w.bytes(tracks.tobytes())
        w.bytes(c.blocks)
        if c.flags & 1:
            ref = c.reference or (0, 0, 0, 0, 0)
            w.u16(ref[0])
            for x in ref[1:]:
                w.u32(x)
        w.i32(len(c.events))
        for frame, text in c.events:
            w.f32(frame)
            w.cstring(text)


def _write_section(w: Writer, s: Section) -> None:
    body = s.body
    if isinstance(body, Skeleton):
        _write_skeleton(w, body)
    elif isinstance(body, Animations):
        _write_animations(w, body)
    elif s.tag == "MDAT0001":
        w.u16(len(body))
        for a in body:
            w.u16(a.bone)
            w.cstring(a.name)
            w.array(a.matrix, "<f4")
    elif s.tag == "MDLE0002":
        arr = np.asarray(body, "<f4")
        w.u32(arr.nbytes)
        w.array(arr)
    else:
        w.bytes(bytes(body))


def write(m: Model, pad_to: int | None = None) -> bytes:
    """The file's bytes. `pad_to` (default `m.pad_to`): zero-pad after the end tag up to that size (when
    smaller), as MDLV0013-era writers did, instead of writing `m.tail`."""
    pad_to = m.pad_to if pad_to is None else pad_to
    w = Writer()
    w.cstring(m.tag, "latin-1")
    w.u32(m.legacy_format)
    w.u32(m.materials_per_mesh)
    w.u32(len(m.meshes))
    for k, mesh in enumerate(m.meshes):
        _write_mesh(w, m, mesh, k)
    if m.version >= SECTION_VERSION:
        for s in m.sections:
            w.cstring(s.tag, "latin-1")
            at = w.tell()
            w.u32(0)
            _write_section(w, s)
            w.buf[at:at + 4] = w.tell().to_bytes(4, "little")
        if m.end_tag:
            w.u8(0)
    elif m.sections:
        raise ExportError(f"MDLV{m.version:04d} files have no sections; {len(m.sections)} given")
    if pad_to is None:
        w.bytes(m.tail)
    elif w.tell() < pad_to:
        w.bytes(bytes(pad_to - w.tell()))
    return w.getvalue()
