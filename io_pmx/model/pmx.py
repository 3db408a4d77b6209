"""PMX 2.0 / 2.1 codec: bytes ⇄ records that mirror the file field for field.

Layout: docs/mmd.md §2 (PmxEditor's PMX仕様.txt). Nothing is interpreted here: no axis change,
no unit change, no clamping. Positions, directions and angles are all stored as the raw float3 of the file
(IK limits included: radians in PMX semantics, lower/upper exactly as written); each gets its own
conversion in the mapping, never here.

Every float keeps its exact bits (records hold numpy float32 values, never Python floats round-tripped
through `struct`), so read → write gives back the same bytes, also for files with semantic faults (NaN,
indices out of range, reversed limits); `validate.py` reports those.

Vertices are one numpy structured array (`vertex_dtype`). The deform block has a size that depends on each
vertex's deform type, so the reader walks the type bytes once (the only per-vertex Python loop: one byte
read and one addition per vertex) and then gathers every vertex of one deform type in bulk with numpy.

Rules on write:
* **Index sizes**: for each index kind the size kept from the file (`PmxModel.index_sizes`) is reused as long
  as every index of that kind in the model fits it, so a model read from a file writes back byte-identical.
  Otherwise, and for models built in memory, the size is the smallest the element count allows (spec table:
  vertex 1 byte for ≤ 255 vertices, 2 for ≤ 65535, else 4; the signed kinds 1 for ≤ 127, 2 for ≤ 32767,
  else 4), grown further only if a stored index does not fit.
* **Version**: the version kept from the file is reused unless the model holds soft bodies and that version
  is 2.0 (soft bodies only exist in a 2.1 file). A model built in memory is written as 2.0, or as 2.1
  (float 2.0999999) only when it holds 2.1-only data (`needs_pmx21`).
* For BDEF2 and SDEF only `weights[0]` is stored (the reader sets `weights[1] = 1 - weights[0]`); for BDEF1
  no weight is stored (the reader sets `weights = (1, 0, 0, 0)`). Unused bone slots read as -1.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from enum import IntFlag
from typing import Any

import numpy as np

from ...core.binary import Reader, Writer
from ...core.errors import ExportError, FormatError
from ...core.fileio import read_bytes

MAGIC = b"PMX "
ENCODING_UTF16 = 0
ENCODING_UTF8 = 1
_CODECS = {ENCODING_UTF16: "utf-16-le", ENCODING_UTF8: "utf-8"}
VERSION_20 = np.float32(2.0)
VERSION_21 = np.float32(2.1)  # stored as 0x40066666 = 2.0999999
VERSION_TOLERANCE = 0.01

INDEX_KINDS = ("vertex", "texture", "material", "bone", "morph", "rigid_body")

# deform (skinning) types of a vertex
BDEF1, BDEF2, BDEF4, SDEF, QDEF = range(5)
DEFORM_NAMES = ("BDEF1", "BDEF2", "BDEF4", "SDEF", "QDEF")
DEFORM_BONE_COUNT = (1, 2, 4, 2, 4)

# morph types
(MORPH_GROUP, MORPH_VERTEX, MORPH_BONE, MORPH_UV, MORPH_UV1, MORPH_UV2, MORPH_UV3, MORPH_UV4,
 MORPH_MATERIAL, MORPH_FLIP, MORPH_IMPULSE) = range(11)
MATERIAL_FLAGS_21 = 0xE0  # vertex colour, point draw, line draw: added by PMX 2.1


class BoneFlag(IntFlag):
    TAIL_IS_BONE = 0x0001
    ROTATABLE = 0x0002
    MOVABLE = 0x0004
    VISIBLE = 0x0008
    OPERABLE = 0x0010
    IK = 0x0020
    LOCAL_APPEND = 0x0080
    APPEND_ROTATE = 0x0100
    APPEND_MOVE = 0x0200
    FIXED_AXIS = 0x0400
    LOCAL_AXES = 0x0800
    AFTER_PHYSICS = 0x1000
    EXTERNAL_PARENT = 0x2000


# ------------------------------------------------------------------------------------------------------------
# Fixed-size layouts. A spec is a tuple of (field, kind, shape); kind is a plain type ('f4', 'u1', 'u2',
# 'i4') or an index kind (INDEX_KINDS) whose size comes from the header.

Spec = tuple[tuple[str, str, tuple[int, ...]], ...]

_PLAIN = {"f4": "<f4", "u1": "u1", "u2": "<u2", "i4": "<i4"}
_V3 = (3,)

MATERIAL_HEAD: Spec = (
    ("diffuse", "f4", (4,)), ("specular", "f4", _V3), ("specular_power", "f4", ()), ("ambient", "f4", _V3),
    ("draw_flags", "u1", ()), ("edge_color", "f4", (4,)), ("edge_size", "f4", ()),
    ("texture", "texture", ()), ("sphere_texture", "texture", ()), ("sphere_mode", "u1", ()),
    ("shared_toon", "u1", ()),
)
BONE_HEAD: Spec = (("position", "f4", _V3), ("parent", "bone", ()), ("layer", "i4", ()), ("flags", "u2", ()))
MORPH_OFFSETS: dict[int, Spec] = {
    MORPH_GROUP: (("morph", "morph", ()), ("ratio", "f4", ())),
    MORPH_VERTEX: (("vertex", "vertex", ()), ("offset", "f4", _V3)),
    MORPH_BONE: (("bone", "bone", ()), ("translation", "f4", _V3), ("rotation", "f4", (4,))),
    **{t: (("vertex", "vertex", ()), ("offset", "f4", (4,))) for t in range(MORPH_UV, MORPH_UV4 + 1)},
    MORPH_MATERIAL: (
        ("material", "material", ()), ("operation", "u1", ()), ("diffuse", "f4", (4,)), ("specular", "f4", _V3),
        ("specular_power", "f4", ()), ("ambient", "f4", _V3), ("edge_color", "f4", (4,)), ("edge_size", "f4", ()),
        ("texture_tint", "f4", (4,)), ("sphere_tint", "f4", (4,)), ("toon_tint", "f4", (4,)),
    ),
    MORPH_FLIP: (("morph", "morph", ()), ("ratio", "f4", ())),
    MORPH_IMPULSE: (("rigid_body", "rigid_body", ()), ("local", "u1", ()), ("velocity", "f4", _V3),
                    ("torque", "f4", _V3)),
}
RIGID_BODY: Spec = (
    ("bone", "bone", ()), ("group", "u1", ()), ("no_collision_mask", "u2", ()), ("shape", "u1", ()),
    ("size", "f4", _V3), ("position", "f4", _V3), ("rotation", "f4", _V3), ("mass", "f4", ()),
    ("linear_damping", "f4", ()), ("angular_damping", "f4", ()), ("restitution", "f4", ()),
    ("friction", "f4", ()), ("mode", "u1", ()),
)
JOINT: Spec = (
    ("kind", "u1", ()), ("rigid_a", "rigid_body", ()), ("rigid_b", "rigid_body", ()),
    ("position", "f4", _V3), ("rotation", "f4", _V3), ("translation_lower", "f4", _V3),
    ("translation_upper", "f4", _V3), ("rotation_lower", "f4", _V3), ("rotation_upper", "f4", _V3),
    ("spring_translation", "f4", _V3), ("spring_rotation", "f4", _V3),
)
SOFT_BODY: Spec = (
    ("shape", "u1", ()), ("material", "material", ()), ("group", "u1", ()), ("no_collision_mask", "u2", ()),
    ("flags", "u1", ()), ("b_link_distance", "i4", ()), ("cluster_count", "i4", ()), ("total_mass", "f4", ()),
    ("margin", "f4", ()), ("aero_model", "i4", ()),
    ("config", "f4", (12,)),      # VCF DP DG LF PR VC DF MT CHR KHR SHR AHR
    ("cluster", "f4", (6,)),      # SRHR_CL SKHR_CL SSHR_CL SR_SPLT_CL SK_SPLT_CL SS_SPLT_CL
    ("iterations", "i4", (4,)),   # V_IT P_IT D_IT C_IT
    ("stiffness", "f4", _V3),     # material LST AST VST
)
SOFT_ANCHOR: Spec = (("rigid_body", "rigid_body", ()), ("vertex", "vertex", ()), ("near_mode", "u1", ()))
SOFT_PIN: Spec = (("vertex", "vertex", ()),)


@dataclass(frozen=True)
class IndexSizes:
    """Byte size (1, 2 or 4) of each index kind, header globals [2..7]."""

    vertex: int = 4
    texture: int = 4
    material: int = 4
    bone: int = 4
    morph: int = 4
    rigid_body: int = 4

    def of(self, kind: str) -> int:
        return getattr(self, kind)


def index_dtype(kind: str, size: int) -> np.dtype:
    """Vertex indices are unsigned for sizes 1 and 2 and int32 for 4; every other kind is signed (-1 = none)."""
    if size not in (1, 2, 4):
        raise ValueError(f"index size {size} is not 1, 2 or 4")
    if kind == "vertex":
        return np.dtype({1: "u1", 2: "<u2", 4: "<i4"}[size])
    return np.dtype({1: "i1", 2: "<i2", 4: "<i4"}[size])


def _kind_dtype(kind: str, sizes: IndexSizes | None) -> str | np.dtype:
    if kind in _PLAIN:
        return _PLAIN[kind]
    return "<i4" if sizes is None else index_dtype(kind, sizes.of(kind))


@functools.lru_cache(maxsize=None)
def file_dtype(spec: Spec, sizes: IndexSizes) -> np.dtype:
    """The packed on-disk layout of `spec` under the given index sizes."""
    return np.dtype([(name, _kind_dtype(kind, sizes), shape) for name, kind, shape in spec])


@functools.lru_cache(maxsize=None)
def memory_dtype(spec: Spec) -> np.dtype:
    """The in-memory layout of `spec`: every index is an int32."""
    return np.dtype([(name, _kind_dtype(kind, None), shape) for name, kind, shape in spec])


def empty_records(spec: Spec, count: int = 0) -> np.ndarray:
    return np.zeros(count, memory_dtype(spec))


@functools.lru_cache(maxsize=None)
def vertex_dtype(additional_uvs: int) -> np.dtype:
    """In-memory vertex record; `weights`/`bones` hold up to 4 influences whatever the deform type."""
    return np.dtype([
        ("position", "<f4", _V3), ("normal", "<f4", _V3), ("uv", "<f4", (2,)),
        ("add_uv", "<f4", (additional_uvs, 4)), ("deform", "u1"), ("bones", "<i4", (4,)),
        ("weights", "<f4", (4,)), ("sdef_c", "<f4", _V3), ("sdef_r0", "<f4", _V3), ("sdef_r1", "<f4", _V3),
        ("edge_scale", "<f4"),
    ])


@functools.lru_cache(maxsize=None)
def vertex_file_dtype(deform: int, additional_uvs: int, bone_size: int) -> np.dtype:
    """On-disk layout of one vertex of the given deform type (docs/mmd.md §2.3)."""
    bone = index_dtype("bone", bone_size)
    fields: list[tuple] = [("position", "<f4", _V3), ("normal", "<f4", _V3), ("uv", "<f4", (2,)),
                           ("add_uv", "<f4", (additional_uvs, 4)), ("deform", "u1"),
                           ("bones", bone, (DEFORM_BONE_COUNT[deform],))]
    if deform in (BDEF2, SDEF):
        fields.append(("weights", "<f4", (1,)))
    elif deform in (BDEF4, QDEF):
        fields.append(("weights", "<f4", (4,)))
    if deform == SDEF:
        fields += [("sdef_c", "<f4", _V3), ("sdef_r0", "<f4", _V3), ("sdef_r1", "<f4", _V3)]
    fields.append(("edge_scale", "<f4"))
    return np.dtype(fields)


def f4(*values: float) -> np.ndarray:
    return np.array(values, "<f4")


# ------------------------------------------------------------------------------------------------------------
# Records. `at` maps a field name to its byte offset in the file the record was read from (empty for records
# built in memory); the validator reports findings with it.

@dataclass(eq=False)
class PmxMaterial:
    name: str = ""
    name_e: str = ""
    diffuse: np.ndarray = field(default_factory=lambda: f4(1, 1, 1, 1))
    specular: np.ndarray = field(default_factory=lambda: f4(0, 0, 0))
    specular_power: float = np.float32(5)
    ambient: np.ndarray = field(default_factory=lambda: f4(0.5, 0.5, 0.5))
    draw_flags: int = 0
    edge_color: np.ndarray = field(default_factory=lambda: f4(0, 0, 0, 1))
    edge_size: float = np.float32(1)
    texture: int = -1
    sphere_texture: int = -1
    sphere_mode: int = 0
    shared_toon: int = 0  # 1: `toon` is a shared toon number 0..9 (toon01..10.bmp); 0: a texture index
    toon: int = -1
    memo: str = ""
    index_count: int = 0  # face vertex indices this material consumes, in order
    at: dict[str, int] = field(default_factory=dict, repr=False)


@dataclass(eq=False)
class PmxIKLink:
    bone: int
    lower: np.ndarray | None = None  # radians, raw PMX float3; both present when the link has a limit
    upper: np.ndarray | None = None
    at: dict[str, int] = field(default_factory=dict, repr=False)

    @property
    def has_limit(self) -> bool:
        return self.lower is not None or self.upper is not None


@dataclass(eq=False)
class PmxIK:
    target: int
    loop: int = 40
    limit_angle: float = np.float32(2.0)  # radians per iteration
    links: list[PmxIKLink] = field(default_factory=list)


@dataclass(eq=False)
class PmxBone:
    """One bone record; the optional parts exist exactly when `flags` says so (validate checks it)."""

    name: str = ""
    name_e: str = ""
    position: np.ndarray = field(default_factory=lambda: f4(0, 0, 0))
    parent: int = -1
    layer: int = 0
    flags: int = 0
    tail_bone: int | None = None            # flags & TAIL_IS_BONE
    tail_offset: np.ndarray | None = None   # otherwise
    append_parent: int | None = None        # flags & (APPEND_ROTATE | APPEND_MOVE)
    append_ratio: float | None = None
    fixed_axis: np.ndarray | None = None    # flags & FIXED_AXIS
    local_x: np.ndarray | None = None       # flags & LOCAL_AXES
    local_z: np.ndarray | None = None
    external_key: int | None = None         # flags & EXTERNAL_PARENT
    ik: PmxIK | None = None                 # flags & IK
    at: dict[str, int] = field(default_factory=dict, repr=False)


@dataclass(eq=False)
class PmxMorph:
    name: str = ""
    name_e: str = ""
    panel: int = 4  # 0 system, 1 eyebrow, 2 eye, 3 mouth, 4 other
    kind: int = MORPH_VERTEX
    offsets: np.ndarray = field(default_factory=lambda: empty_records(MORPH_OFFSETS[MORPH_VERTEX]))
    at: dict[str, int] = field(default_factory=dict, repr=False)


@dataclass(eq=False)
class PmxDisplayFrame:
    name: str = ""
    name_e: str = ""
    special: int = 0
    elements: list[tuple[int, int]] = field(default_factory=list)  # (0 bone | 1 morph, index)
    at: dict[str, int] = field(default_factory=dict, repr=False)


@dataclass(eq=False)
class PmxRigidBody:
    name: str = ""
    name_e: str = ""
    bone: int = -1
    group: int = 0
    no_collision_mask: int = 0
    shape: int = 0  # 0 sphere, 1 box, 2 capsule
    size: np.ndarray = field(default_factory=lambda: f4(1, 1, 1))
    position: np.ndarray = field(default_factory=lambda: f4(0, 0, 0))
    rotation: np.ndarray = field(default_factory=lambda: f4(0, 0, 0))
    mass: float = np.float32(1)
    linear_damping: float = np.float32(0.5)
    angular_damping: float = np.float32(0.5)
    restitution: float = np.float32(0)
    friction: float = np.float32(0.5)
    mode: int = 0  # 0 follows the bone, 1 physics, 2 physics + bone alignment
    at: dict[str, int] = field(default_factory=dict, repr=False)


@dataclass(eq=False)
class PmxJoint:
    name: str = ""
    name_e: str = ""
    kind: int = 0  # 0 spring 6DOF; 2.1: 1 6DOF, 2 P2P, 3 ConeTwist, 4 Slider, 5 Hinge
    rigid_a: int = -1
    rigid_b: int = -1
    position: np.ndarray = field(default_factory=lambda: f4(0, 0, 0))
    rotation: np.ndarray = field(default_factory=lambda: f4(0, 0, 0))
    translation_lower: np.ndarray = field(default_factory=lambda: f4(0, 0, 0))
    translation_upper: np.ndarray = field(default_factory=lambda: f4(0, 0, 0))
    rotation_lower: np.ndarray = field(default_factory=lambda: f4(0, 0, 0))
    rotation_upper: np.ndarray = field(default_factory=lambda: f4(0, 0, 0))
    spring_translation: np.ndarray = field(default_factory=lambda: f4(0, 0, 0))
    spring_rotation: np.ndarray = field(default_factory=lambda: f4(0, 0, 0))
    at: dict[str, int] = field(default_factory=dict, repr=False)


@dataclass(eq=False)
class PmxSoftBody:
    name: str = ""
    name_e: str = ""
    shape: int = 0  # 0 TriMesh, 1 Rope
    material: int = -1
    group: int = 0
    no_collision_mask: int = 0
    flags: int = 0  # 0x01 B-link, 0x02 clusters, 0x04 link hybrid
    b_link_distance: int = 0
    cluster_count: int = 0
    total_mass: float = np.float32(1)
    margin: float = np.float32(0.05)
    aero_model: int = 0
    config: np.ndarray = field(default_factory=lambda: np.zeros(12, "<f4"))
    cluster: np.ndarray = field(default_factory=lambda: np.zeros(6, "<f4"))
    iterations: np.ndarray = field(default_factory=lambda: np.zeros(4, "<i4"))
    stiffness: np.ndarray = field(default_factory=lambda: f4(1, 1, 1))
    anchors: np.ndarray = field(default_factory=lambda: empty_records(SOFT_ANCHOR))
    pins: np.ndarray = field(default_factory=lambda: np.zeros(0, "<i4"))
    at: dict[str, int] = field(default_factory=dict, repr=False)


@dataclass(eq=False)
class PmxModel:
    name: str = ""
    name_e: str = ""
    comment: str = ""
    comment_e: str = ""
    encoding: int = ENCODING_UTF16
    vertices: np.ndarray = field(default_factory=lambda: np.zeros(0, vertex_dtype(0)))
    indices: np.ndarray = field(default_factory=lambda: np.zeros(0, "<i4"))  # 3 per triangle
    textures: list[str] = field(default_factory=list)
    materials: list[PmxMaterial] = field(default_factory=list)
    bones: list[PmxBone] = field(default_factory=list)
    morphs: list[PmxMorph] = field(default_factory=list)
    display_frames: list[PmxDisplayFrame] = field(default_factory=list)
    rigid_bodies: list[PmxRigidBody] = field(default_factory=list)
    joints: list[PmxJoint] = field(default_factory=list)
    soft_bodies: list[PmxSoftBody] = field(default_factory=list)
    # Kept from the file so that it writes back byte-identical (None / empty for a model built in memory).
    version: float | None = None
    index_sizes: IndexSizes | None = None
    extra_globals: bytes = b""  # header globals beyond the 8 the spec defines
    trailing: bytes = b""       # bytes after the last section
    warnings: list[str] = field(default_factory=list)
    at: dict[str, int] = field(default_factory=dict, repr=False)  # section offsets ("vertices", "indices", ...)
    vertex_offsets: np.ndarray | None = field(default=None, repr=False)  # byte offset of each vertex record

    @property
    def additional_uvs(self) -> int:
        return self.vertices.dtype["add_uv"].shape[0]

    @property
    def is_pmx21(self) -> bool:
        return self.version is not None and abs(float(self.version) - 2.1) < VERSION_TOLERANCE


def needs_pmx21(model: PmxModel) -> bool:
    """Whether the model holds data that only PMX 2.1 defines."""
    return bool(
        model.soft_bodies
        or (model.vertices.size and (model.vertices["deform"] == QDEF).any())
        or any(m.kind in (MORPH_FLIP, MORPH_IMPULSE) for m in model.morphs)
        or any(j.kind != 0 for j in model.joints)
        or any(mat.draw_flags & MATERIAL_FLAGS_21 for mat in model.materials)
    )


# ------------------------------------------------------------------------------------------------------------
# Reading

def _value(raw: Any, kind: str, shape: tuple[int, ...]) -> Any:
    if shape:
        return np.array(raw, dtype=_kind_dtype(kind, None))
    return raw if kind == "f4" else int(raw)  # a float stays a numpy float32: its bits are kept


def _to_memory(records: np.ndarray, spec: Spec) -> np.ndarray:
    out = np.empty(len(records), memory_dtype(spec))
    for name, _, _ in spec:
        out[name] = records[name]
    return out


class _PmxReader:
    def __init__(self, data: bytes):
        self.r = Reader(data)
        self.buf = np.frombuffer(self.r.data, np.uint8)
        self.codec = "utf-16-le"
        self.sizes = IndexSizes()

    # -- primitives ------------------------------------------------------------------------------------------
    def text(self, field: str) -> str:
        return self.r.lstring(field, self.codec)

    def float(self, field: str) -> np.float32:
        return self.r.array("<f4", 1, field)[0]

    def floats(self, n: int, field: str) -> np.ndarray:
        return self.r.array("<f4", n, field)

    def index(self, kind: str, field: str) -> int:
        return int(self.r.array(index_dtype(kind, self.sizes.of(kind)), 1, field)[0])

    def count(self, field: str, min_item_size: int) -> int:
        return self.r.count(field, min_item_size, signed=True)

    def counted(self, m: PmxModel, what: str, read_one, min_item_size: int) -> list:
        """An int32 count (its offset kept as `m.at["<what> count"]`) then that many items read by `read_one`."""
        m.at[f"{what} count"] = self.r.pos
        return [read_one(i) for i in range(self.count(f"{what} count", min_item_size))]

    def fixed(self, spec: Spec, field: str) -> tuple[dict[str, Any], dict[str, int]]:
        """One fixed-size block: its values by field name and the byte offset of each field."""
        dt = file_dtype(spec, self.sizes)
        start = self.r.pos
        rec = self.r.array(dt, 1, field)[0]
        values = {name: _value(rec[name], kind, shape) for name, kind, shape in spec}
        return values, {name: start + dt.fields[name][1] for name, _, _ in spec}

    def records(self, spec: Spec, field: str) -> tuple[np.ndarray, int]:
        """An int32 count then that many fixed-size records; returns them and the offset of the first."""
        dt = file_dtype(spec, self.sizes)
        n = self.count(f"{field} count", dt.itemsize)
        start = self.r.pos
        return _to_memory(self.r.array(dt, n, field), spec), start

    # -- sections (docs/mmd.md §2.2 order) ------------------------------------------------------------------------
    def model(self) -> PmxModel:
        m = PmxModel()
        self.header(m)
        m.at["vertex count"] = self.r.pos
        m.vertices, m.vertex_offsets = self.vertices(m.at)
        vsize = self.sizes.vertex
        m.at["index count"] = self.r.pos
        n = self.count("index count", vsize)
        m.at["indices"] = self.r.pos
        m.indices = self.r.array(index_dtype("vertex", vsize), n, "indices").astype("<i4")
        m.textures = self.counted(m, "texture", lambda i: self.text(f"texture {i}"), 4)
        m.materials = self.counted(m, "material", self.material, 86)
        m.bones = self.counted(m, "bone", self.bone, 28)
        m.morphs = self.counted(m, "morph", self.morph, 14)
        m.display_frames = self.counted(m, "display frame", self.display_frame, 13)
        m.rigid_bodies = self.counted(m, "rigid body", self.rigid_body, 69)
        m.joints = self.counted(m, "joint", self.joint, 107)
        if m.is_pmx21:
            m.soft_bodies = self.counted(m, "soft body", self.soft_body, 138)
        if self.r.remaining():
            m.at["trailing"] = self.r.pos
            m.trailing = self.r.bytes(self.r.remaining(), "trailing bytes")
            m.warnings.append(f"{len(m.trailing)} bytes after the last section (kept)")
        return m

    def header(self, m: PmxModel) -> None:
        r = self.r
        if r.data[:4] == b"Pmx ":
            raise FormatError("PMX 1.0 ('Pmx ') is not supported", 0, "magic")
        r.magic((MAGIC,))
        at = r.pos
        m.version = self.float("version")
        v = float(m.version)
        if not (abs(v - 2.0) < VERSION_TOLERANCE or abs(v - 2.1) < VERSION_TOLERANCE):
            raise FormatError(f"version {v} is neither 2.0 nor 2.1", at, "version")
        at = r.pos
        n = r.u8("globals count")
        if n < 8:
            raise FormatError(f"globals count {n}, expected at least 8", at, "globals count")
        g = r.bytes(n, "globals")
        if g[0] not in _CODECS:
            raise FormatError(f"text encoding {g[0]} is not 0 (UTF-16LE) or 1 (UTF-8)", at + 1, "encoding")
        if g[1] > 4:
            raise FormatError(f"additional UV count {g[1]} is above 4", at + 2, "additional UV count")
        for k, kind in enumerate(INDEX_KINDS):
            if g[2 + k] not in (1, 2, 4):
                raise FormatError(f"index size {g[2 + k]} is not 1, 2 or 4", at + 3 + k, f"{kind} index size")
        m.encoding = g[0]
        self.codec = _CODECS[g[0]]
        self.additional_uvs = g[1]
        self.sizes = IndexSizes(*g[2:8])
        m.index_sizes = self.sizes
        m.extra_globals = bytes(g[8:])
        if m.extra_globals:
            m.warnings.append(f"header has {n} globals; the {n - 8} beyond the spec's 8 are kept unread")
        m.name = self.text("model name")
        m.name_e = self.text("model name (English)")
        m.comment = self.text("comment")
        m.comment_e = self.text("comment (English)")

    def vertices(self, at: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
        n_add, bone_size = self.additional_uvs, self.sizes.bone
        layouts = [vertex_file_dtype(t, n_add, bone_size) for t in range(5)]
        steps = [dt.itemsize for dt in layouts]
        head = layouts[0].fields["deform"][1]  # bytes before the deform type byte
        count = self.count("vertex count", min(steps))
        at["vertices"] = self.r.pos
        data, pos, end = self.r.data, self.r.pos, self.r.size
        starts: list[int] = []
        add = starts.append
        for i in range(count):  # the deform types chain the records: walk the type bytes only
            t_at = pos + head
            if t_at >= end:
                raise FormatError(f"vertex {i} runs past the end of the file", pos, f"vertex {i}")
            t = data[t_at]
            if t > QDEF:
                raise FormatError(f"deform type {t} is not 0..4", t_at, f"vertex {i} deform type")
            add(pos)
            pos += steps[t]
        if pos > end:
            raise FormatError(f"vertex {count - 1} runs past the end of the file", starts[-1], f"vertex {count - 1}")
        self.r.pos = pos
        offsets = np.array(starts, np.int64)
        types = self.buf[offsets + head] if count else np.zeros(0, np.uint8)
        out = np.zeros(count, vertex_dtype(n_add))
        for t in range(5):
            sel = np.flatnonzero(types == t)
            if sel.size:
                _unpack_vertices(out, sel, _gather(self.buf, offsets[sel], layouts[t]), t)
        return out, offsets

    def material(self, i: int) -> PmxMaterial:
        where = f"material {i}"
        name, name_e, values, at = self.named_fixed(MATERIAL_HEAD, where)
        mat = PmxMaterial(name=name, name_e=name_e, **values, at=at)
        at["toon"] = self.r.pos
        if mat.shared_toon == 1:
            mat.toon = self.r.u8(f"{where} shared toon")
        elif mat.shared_toon == 0:
            mat.toon = self.index("texture", f"{where} toon texture")
        else:
            raise FormatError(f"shared-toon flag {mat.shared_toon} is not 0 or 1", at["shared_toon"],
                              f"{where} shared toon flag")
        mat.memo = self.text(f"{where} memo")
        at["index_count"] = self.r.pos
        mat.index_count = self.r.i32(f"{where} index count")
        return mat

    def bone(self, i: int) -> PmxBone:
        where = f"bone {i}"
        name, name_e, values, at = self.named_fixed(BONE_HEAD, where)
        b = PmxBone(name=name, name_e=name_e, **values, at=at)
        flags = b.flags
        at["tail"] = self.r.pos
        if flags & BoneFlag.TAIL_IS_BONE:
            b.tail_bone = self.index("bone", f"{where} tail")
        else:
            b.tail_offset = self.floats(3, f"{where} tail offset")
        if flags & (BoneFlag.APPEND_ROTATE | BoneFlag.APPEND_MOVE):
            at["append_parent"] = self.r.pos
            b.append_parent = self.index("bone", f"{where} append parent")
            at["append_ratio"] = self.r.pos
            b.append_ratio = self.float(f"{where} append ratio")
        if flags & BoneFlag.FIXED_AXIS:
            at["fixed_axis"] = self.r.pos
            b.fixed_axis = self.floats(3, f"{where} fixed axis")
        if flags & BoneFlag.LOCAL_AXES:
            at["local_x"] = self.r.pos
            b.local_x = self.floats(3, f"{where} local X")
            at["local_z"] = self.r.pos
            b.local_z = self.floats(3, f"{where} local Z")
        if flags & BoneFlag.EXTERNAL_PARENT:
            at["external_key"] = self.r.pos
            b.external_key = self.r.i32(f"{where} external parent key")
        if flags & BoneFlag.IK:
            b.ik = self.ik(where, at)
        return b

    def ik(self, where: str, at: dict[str, int]) -> PmxIK:
        at["ik.target"] = self.r.pos
        ik = PmxIK(target=self.index("bone", f"{where} IK target"))
        at["ik.loop"] = self.r.pos
        ik.loop = self.r.i32(f"{where} IK loop count")
        at["ik.limit_angle"] = self.r.pos
        ik.limit_angle = self.float(f"{where} IK limit angle")
        n = self.count(f"{where} IK link count", self.sizes.bone + 1)
        for k in range(n):
            lw = f"{where} IK link {k}"
            link = PmxIKLink(bone=0, at={"bone": self.r.pos})
            link.bone = self.index("bone", f"{lw} bone")
            flag_at = self.r.pos
            has_limit = self.r.u8(f"{lw} has limit")
            if has_limit > 1:
                raise FormatError(f"limit flag {has_limit} is not 0 or 1", flag_at, f"{lw} has limit")
            if has_limit:
                link.at["lower"] = self.r.pos
                link.lower = self.floats(3, f"{lw} lower")
                link.at["upper"] = self.r.pos
                link.upper = self.floats(3, f"{lw} upper")
            ik.links.append(link)
        return ik

    def morph(self, i: int) -> PmxMorph:
        where = f"morph {i}"
        start = self.r.pos
        name, name_e = self.text(f"{where} name"), self.text(f"{where} name (English)")
        panel = self.r.u8(f"{where} panel")
        kind_at = self.r.pos
        kind = self.r.u8(f"{where} type")
        if kind not in MORPH_OFFSETS:
            raise FormatError(f"morph type {kind} is not 0..10", kind_at, f"{where} type")
        offsets, first = self.records(MORPH_OFFSETS[kind], f"{where} offsets")
        return PmxMorph(name, name_e, panel, kind, offsets, at={"record": start, "offsets": first})

    def display_frame(self, i: int) -> PmxDisplayFrame:
        where = f"display frame {i}"
        start = self.r.pos
        frame = PmxDisplayFrame(self.text(f"{where} name"), self.text(f"{where} name (English)"))
        frame.special = self.r.u8(f"{where} special flag")
        frame.at["record"] = start
        n = self.count(f"{where} element count", 2)
        for k in range(n):
            kind_at = self.r.pos
            kind = self.r.u8(f"{where} element {k} type")
            if kind > 1:
                raise FormatError(f"element type {kind} is not 0 (bone) or 1 (morph)", kind_at,
                                  f"{where} element {k} type")
            frame.at[f"elements[{k}].index"] = self.r.pos
            frame.elements.append((kind, self.index("bone" if kind == 0 else "morph", f"{where} element {k}")))
        return frame

    def named_fixed(self, spec: Spec, where: str) -> tuple[str, str, dict, dict]:
        """The names and fixed fields (`spec`) that begin a material, bone, rigid body, joint or soft body:
        names, values and offsets, `at["record"]` being where the record begins."""
        start = self.r.pos
        name, name_e = self.text(f"{where} name"), self.text(f"{where} name (English)")
        values, at = self.fixed(spec, where)
        at["record"] = start
        return name, name_e, values, at

    def rigid_body(self, i: int) -> PmxRigidBody:
        name, name_e, values, at = self.named_fixed(RIGID_BODY, f"rigid body {i}")
        return PmxRigidBody(name, name_e, **values, at=at)

    def joint(self, i: int) -> PmxJoint:
        name, name_e, values, at = self.named_fixed(JOINT, f"joint {i}")
        return PmxJoint(name, name_e, **values, at=at)

    def soft_body(self, i: int) -> PmxSoftBody:
        where = f"soft body {i}"
        name, name_e, values, at = self.named_fixed(SOFT_BODY, where)
        body = PmxSoftBody(name, name_e, **values, at=at)
        body.anchors, at["anchors"] = self.records(SOFT_ANCHOR, f"{where} anchors")
        pins, at["pins"] = self.records(SOFT_PIN, f"{where} pins")
        body.pins = pins["vertex"].copy()
        return body


_GATHER_CHUNK = 16384


def _gather(buf: np.ndarray, starts: np.ndarray, layout: np.ndarray) -> np.ndarray:
    """Copy the records of `layout` that begin at `starts` (all already bounds-checked) into one array."""
    out = np.empty(len(starts), layout)
    raw = out.view(np.uint8).reshape(len(starts), layout.itemsize)
    span = np.arange(layout.itemsize)
    for c in range(0, len(starts), _GATHER_CHUNK):
        raw[c:c + _GATHER_CHUNK] = buf[starts[c:c + _GATHER_CHUNK, None] + span]
    return out


def _unpack_vertices(out: np.ndarray, sel: np.ndarray, rec: np.ndarray, deform: int) -> None:
    for name in ("position", "normal", "uv", "add_uv", "deform", "edge_scale"):
        out[name][sel] = rec[name]
    k = DEFORM_BONE_COUNT[deform]
    bones = np.full((len(sel), 4), -1, "<i4")
    bones[:, :k] = rec["bones"]
    out["bones"][sel] = bones
    weights = np.zeros((len(sel), 4), "<f4")
    if deform == BDEF1:
        weights[:, 0] = 1
    elif deform in (BDEF2, SDEF):
        weights[:, 0] = rec["weights"][:, 0]
        weights[:, 1] = np.float32(1) - rec["weights"][:, 0]
    else:
        weights[:] = rec["weights"]
    out["weights"][sel] = weights
    if deform == SDEF:
        for name in ("sdef_c", "sdef_r0", "sdef_r1"):
            out[name][sel] = rec[name]


def read(data: bytes | bytearray | memoryview) -> PmxModel:
    """Parse a whole PMX file. Raises FormatError only for structural faults; semantic ones are kept."""
    return _PmxReader(bytes(data)).model()


def read_file(path) -> PmxModel:
    return read(read_bytes(path))


# ------------------------------------------------------------------------------------------------------------
# Writing

class _IndexOverflow(ExportError):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _check_fits(values: Any, dtype: np.dtype, kind: str, where: str) -> None:
    """Refuse a value the field cannot hold (numpy would wrap it silently)."""
    if dtype.kind not in "iu":
        return
    a = np.asarray(values)
    if a.size == 0:
        return
    if a.dtype.kind not in "iub":
        if not np.all(np.isfinite(a)) or not np.all(a == np.round(a)):
            raise ExportError(f"{where}: {kind} value {a} is not an integer")
    info = np.iinfo(dtype)
    lo, hi = a.min(), a.max()
    if lo < info.min or hi > info.max:
        bad = int(lo) if lo < info.min else int(hi)
        message = f"{where}: value {bad} does not fit a {dtype.itemsize}-byte {kind} field"
        if kind in INDEX_KINDS:
            raise _IndexOverflow(kind, message)
        raise ExportError(message)


class _PmxWriter:
    def __init__(self, codec: str, sizes: IndexSizes, additional_uvs: int):
        self.w = Writer()
        self.codec = codec
        self.sizes = sizes
        self.additional_uvs = additional_uvs

    def text(self, s: str) -> None:
        self.w.lstring(s, self.codec)

    def float(self, v: Any, where: str) -> None:
        a = np.asarray(v, "<f4")
        if a.shape != ():
            raise ExportError(f"{where}: expected one float, got shape {a.shape}")
        self.w.bytes(a.tobytes())

    def floats(self, v: Any, n: int, where: str) -> None:
        if v is None:
            raise ExportError(f"{where}: missing")
        a = np.asarray(v, "<f4")
        if a.shape != (n,):
            raise ExportError(f"{where}: expected {n} floats, got shape {a.shape}")
        self.w.bytes(a.tobytes())

    def int(self, v: int, plain: str, where: str) -> None:
        dt = np.dtype(_PLAIN[plain])
        _check_fits(v, dt, plain, where)
        self.w.bytes(np.asarray(v, dt).tobytes())

    def index(self, kind: str, v: int | None, where: str) -> None:
        if v is None:
            raise ExportError(f"{where}: missing")
        dt = index_dtype(kind, self.sizes.of(kind))
        _check_fits(v, dt, kind, where)
        self.w.bytes(np.asarray(v, dt).tobytes())

    def count(self, n: int) -> None:
        self.w.i32(n)

    def fixed(self, spec: Spec, obj: Any, where: str) -> None:
        dt = file_dtype(spec, self.sizes)
        rec = np.zeros(1, dt)
        for name, kind, shape in spec:
            v = getattr(obj, name)
            if v is None:
                raise ExportError(f"{where}: {name} is missing")
            a = np.asarray(v)
            if a.shape != shape:
                raise ExportError(f"{where}: {name} has shape {a.shape}, expected {shape}")
            _check_fits(a, dt.fields[name][0].base, kind, f"{where} {name}")
            rec[name] = a
        self.w.bytes(rec.tobytes())

    def records(self, spec: Spec, records: np.ndarray, where: str) -> None:
        dt = file_dtype(spec, self.sizes)
        out = np.zeros(len(records), dt)
        for name, kind, _ in spec:
            _check_fits(records[name], dt.fields[name][0].base, kind, f"{where} {name}")
            out[name] = records[name]
        self.count(len(records))
        self.w.bytes(out.tobytes())

    # -- sections --------------------------------------------------------------------------------------------
    def header(self, m: PmxModel, version: np.float32) -> None:
        self.w.bytes(MAGIC)
        self.float(version, "version")
        globals_ = bytes([m.encoding, self.additional_uvs, *(self.sizes.of(k) for k in INDEX_KINDS)])
        self.w.u8(len(globals_) + len(m.extra_globals))
        self.w.bytes(globals_ + m.extra_globals)
        for s in (m.name, m.name_e, m.comment, m.comment_e):
            self.text(s)

    def vertices(self, v: np.ndarray) -> None:
        self.count(len(v))
        types = v["deform"]
        if len(v) and types.max() > QDEF:
            bad = int(np.flatnonzero(types > QDEF)[0])
            raise ExportError(f"vertex {bad}: deform type {int(types[bad])} is not 0..4")
        layouts = [vertex_file_dtype(t, self.additional_uvs, self.sizes.bone) for t in range(5)]
        steps = np.array([dt.itemsize for dt in layouts], np.int64)[types]
        starts = np.zeros(len(v), np.int64)
        np.cumsum(steps[:-1], out=starts[1:])
        out = np.zeros(int(steps.sum()), np.uint8)
        for t in range(5):
            sel = np.flatnonzero(types == t)
            if sel.size:
                rec = _pack_vertices(v[sel], layouts[t], t, sel)
                raw = rec.view(np.uint8).reshape(len(sel), layouts[t].itemsize)
                span = np.arange(layouts[t].itemsize)
                for c in range(0, len(sel), _GATHER_CHUNK):
                    out[starts[sel[c:c + _GATHER_CHUNK], None] + span] = raw[c:c + _GATHER_CHUNK]
        self.w.bytes(out.tobytes())

    def material(self, mat: PmxMaterial, where: str) -> None:
        self.text(mat.name)
        self.text(mat.name_e)
        self.fixed(MATERIAL_HEAD, mat, where)
        if mat.shared_toon == 1:
            self.int(mat.toon, "u1", f"{where} shared toon")
        elif mat.shared_toon == 0:
            self.index("texture", mat.toon, f"{where} toon")
        else:
            raise ExportError(f"{where}: shared-toon flag {mat.shared_toon} is not 0 or 1")
        self.text(mat.memo)
        self.int(mat.index_count, "i4", f"{where} index count")

    def bone(self, b: PmxBone, where: str) -> None:
        self.text(b.name)
        self.text(b.name_e)
        self.fixed(BONE_HEAD, b, where)
        flags = b.flags
        if flags & BoneFlag.TAIL_IS_BONE:
            self.index("bone", b.tail_bone, f"{where} tail (flag 0x0001 set)")
        else:
            self.floats(b.tail_offset, 3, f"{where} tail offset (flag 0x0001 clear)")
        if flags & (BoneFlag.APPEND_ROTATE | BoneFlag.APPEND_MOVE):
            self.index("bone", b.append_parent, f"{where} append parent (flag 0x0100/0x0200)")
            if b.append_ratio is None:
                raise ExportError(f"{where} append ratio (flag 0x0100/0x0200): missing")
            self.float(b.append_ratio, f"{where} append ratio")
        if flags & BoneFlag.FIXED_AXIS:
            self.floats(b.fixed_axis, 3, f"{where} fixed axis (flag 0x0400)")
        if flags & BoneFlag.LOCAL_AXES:
            self.floats(b.local_x, 3, f"{where} local X (flag 0x0800)")
            self.floats(b.local_z, 3, f"{where} local Z (flag 0x0800)")
        if flags & BoneFlag.EXTERNAL_PARENT:
            if b.external_key is None:
                raise ExportError(f"{where} external parent key (flag 0x2000): missing")
            self.int(b.external_key, "i4", f"{where} external parent key")
        if flags & BoneFlag.IK:
            if b.ik is None:
                raise ExportError(f"{where} IK (flag 0x0020): missing")
            self.ik(b.ik, where)

    def ik(self, ik: PmxIK, where: str) -> None:
        self.index("bone", ik.target, f"{where} IK target")
        self.int(ik.loop, "i4", f"{where} IK loop")
        self.float(ik.limit_angle, f"{where} IK limit angle")
        self.count(len(ik.links))
        for k, link in enumerate(ik.links):
            lw = f"{where} IK link {k}"
            self.index("bone", link.bone, f"{lw} bone")
            self.w.u8(1 if link.has_limit else 0)
            if link.has_limit:
                self.floats(link.lower, 3, f"{lw} lower")
                self.floats(link.upper, 3, f"{lw} upper")

    def morph(self, morph: PmxMorph, where: str) -> None:
        if morph.kind not in MORPH_OFFSETS:
            raise ExportError(f"{where}: morph type {morph.kind} is not 0..10")
        self.text(morph.name)
        self.text(morph.name_e)
        self.int(morph.panel, "u1", f"{where} panel")
        self.w.u8(morph.kind)
        self.records(MORPH_OFFSETS[morph.kind], morph.offsets, f"{where} offsets")

    def display_frame(self, frame: PmxDisplayFrame, where: str) -> None:
        self.text(frame.name)
        self.text(frame.name_e)
        self.int(frame.special, "u1", f"{where} special flag")
        self.count(len(frame.elements))
        for k, (kind, index) in enumerate(frame.elements):
            if kind not in (0, 1):
                raise ExportError(f"{where} element {k}: type {kind} is not 0 (bone) or 1 (morph)")
            self.w.u8(kind)
            self.index("bone" if kind == 0 else "morph", index, f"{where} element {k}")

    def named_fixed(self, spec: Spec, obj: Any, where: str) -> None:
        self.text(obj.name)
        self.text(obj.name_e)
        self.fixed(spec, obj, where)

    def soft_body(self, body: PmxSoftBody, where: str) -> None:
        self.named_fixed(SOFT_BODY, body, where)
        self.records(SOFT_ANCHOR, body.anchors, f"{where} anchors")
        pins = np.zeros(len(body.pins), memory_dtype(SOFT_PIN))
        pins["vertex"] = body.pins
        self.records(SOFT_PIN, pins, f"{where} pins")

    def model(self, m: PmxModel, version: np.float32) -> bytes:
        self.header(m, version)
        self.vertices(m.vertices)
        idx = np.asarray(m.indices)
        dt = index_dtype("vertex", self.sizes.vertex)
        _check_fits(idx, dt, "vertex", "face indices")
        self.count(len(idx))
        self.w.bytes(idx.astype(dt).tobytes())
        self.count(len(m.textures))
        for path in m.textures:
            self.text(path)
        sections = ((m.materials, self.material, "material"), (m.bones, self.bone, "bone"),
                    (m.morphs, self.morph, "morph"), (m.display_frames, self.display_frame, "display frame"))
        for items, write_one, label in sections:
            self.count(len(items))
            for i, item in enumerate(items):
                write_one(item, f"{label} {i} ({item.name})")
        for items, spec, label in ((m.rigid_bodies, RIGID_BODY, "rigid body"), (m.joints, JOINT, "joint")):
            self.count(len(items))
            for i, item in enumerate(items):
                self.named_fixed(spec, item, f"{label} {i} ({item.name})")
        if abs(float(version) - 2.1) < VERSION_TOLERANCE:
            self.count(len(m.soft_bodies))
            for i, body in enumerate(m.soft_bodies):
                self.soft_body(body, f"soft body {i} ({body.name})")
        self.w.bytes(m.trailing)
        return self.w.getvalue()


def _pack_vertices(v: np.ndarray, layout: np.dtype, deform: int, sel: np.ndarray) -> np.ndarray:
    rec = np.zeros(len(v), layout)
    for name in ("position", "normal", "uv", "add_uv", "deform", "edge_scale"):
        rec[name] = v[name]
    k = DEFORM_BONE_COUNT[deform]
    bones = v["bones"][:, :k]
    try:
        _check_fits(bones, layout.fields["bones"][0].base, "bone", "vertex bones")
    except _IndexOverflow as e:
        row = int(sel[np.flatnonzero(~_fits_rows(bones, layout.fields["bones"][0].base))[0]])
        raise _IndexOverflow("bone", f"vertex {row}: {e}") from None
    rec["bones"] = bones
    if deform in (BDEF2, SDEF):
        rec["weights"] = v["weights"][:, :1]
    elif deform in (BDEF4, QDEF):
        rec["weights"] = v["weights"]
    if deform == SDEF:
        for name in ("sdef_c", "sdef_r0", "sdef_r1"):
            rec[name] = v[name]
    return rec


def _fits_rows(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return ((a >= info.min) & (a <= info.max)).all(axis=1)


# Size choice by element count (spec table, docs/mmd.md §2.1).
def smallest_index_size(kind: str, count: int) -> int:
    if kind == "vertex":
        return 1 if count <= 0xFF else 2 if count <= 0xFFFF else 4
    return 1 if count <= 0x7F else 2 if count <= 0x7FFF else 4


def element_counts(m: PmxModel) -> dict[str, int]:
    return {"vertex": len(m.vertices), "texture": len(m.textures), "material": len(m.materials),
            "bone": len(m.bones), "morph": len(m.morphs), "rigid_body": len(m.rigid_bodies)}


def write_version(m: PmxModel) -> np.float32:
    """The version to write (rule in the module docstring)."""
    if m.version is not None and (m.is_pmx21 or not m.soft_bodies):
        return np.asarray(m.version, "<f4")[()]
    return VERSION_21 if needs_pmx21(m) else VERSION_20


def write(m: PmxModel) -> bytes:
    """Serialise the records as they are (validate first: the codec refuses only what it cannot encode)."""
    if m.encoding not in _CODECS:
        raise ExportError(f"text encoding {m.encoding} is not 0 (UTF-16LE) or 1 (UTF-8)")
    add_uvs = m.additional_uvs
    if add_uvs > 4:
        raise ExportError(f"{add_uvs} additional UVs, PMX allows at most 4")
    counts = element_counts(m)
    if m.index_sizes is not None:
        sizes = m.index_sizes
    else:
        sizes = IndexSizes(**{k: smallest_index_size(k, counts[k]) for k in INDEX_KINDS})
    version = write_version(m)
    while True:
        try:
            return _PmxWriter(_CODECS[m.encoding], sizes, add_uvs).model(m, version)
        except _IndexOverflow as e:
            current = sizes.of(e.kind)
            if current == 4:
                raise ExportError(str(e)) from None
            grown = max(smallest_index_size(e.kind, counts[e.kind]), {1: 2, 2: 4}[current])
            sizes = replace(sizes, **{e.kind: grown})


# ------------------------------------------------------------------------------------------------------------
# Byte offsets of fields, for findings

def vertex_field_offset(m: PmxModel, i: int, name: str, slot: int = 0) -> int | None:
    """Byte offset in the file of field `name` of vertex i (`slot` picks one bone or weight).

    Weights a deform type does not store point at what holds them: BDEF1's single bone, BDEF2/SDEF's
    weights[0]."""
    if m.vertex_offsets is None or m.index_sizes is None or i >= len(m.vertex_offsets):
        return None
    deform = int(m.vertices["deform"][i])
    layout = vertex_file_dtype(deform, m.additional_uvs, m.index_sizes.bone)
    if name == "weights" and deform == BDEF1:
        name, slot = "bones", 0
    if name not in layout.fields:
        return None
    sub, at = layout.fields[name]
    slot = max(0, min(slot, sub.shape[0] - 1)) if sub.shape else 0
    return int(m.vertex_offsets[i]) + at + slot * sub.base.itemsize


def record_field_offset(m: PmxModel, spec: Spec, first: int | None, i: int, name: str) -> int | None:
    """Offset of field `name` of the i-th record of a fixed-size array that starts at `first` in the file."""
    if first is None or m.index_sizes is None:
        return None
    dt = file_dtype(spec, m.index_sizes)
    return first + i * dt.itemsize + dt.fields[name][1]
