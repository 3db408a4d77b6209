"""Urho3D-family model codec: UMD2 (UrhoX, Urho3D ≥ 1.6), legacy UMDL and rbfx UMD3.

Bytes ⇄ records that mirror the file field for field (see docs/urho.md §3.1–§3.5 and, for
UrhoX, §5.2), so read → write gives back the same bytes. No axis or unit conversion here.

    magic "UMD2" | "UMDL" | "UMD3" + u32 version
    vertex buffers, index buffers, geometries (bone mapping, LOD levels), morphs, skeleton,
    bounding box, geometry centers (no count; optional at the end of the file)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...core.binary import Reader, Writer
from ...core.errors import FormatError

# VertexElementType: (name, byte size, numpy base type, component count)
ELEMENT_TYPES = {
    0: ("INT", 4, "<i4", 1),
    1: ("FLOAT", 4, "<f4", 1),
    2: ("VECTOR2", 8, "<f4", 2),
    3: ("VECTOR3", 12, "<f4", 3),
    4: ("VECTOR4", 16, "<f4", 4),
    5: ("UBYTE4", 4, "u1", 4),
    6: ("UBYTE4_NORM", 4, "u1", 4),
}
TYPE = {v[0]: k for k, v in ELEMENT_TYPES.items()}
SEMANTICS = ["POSITION", "NORMAL", "BINORMAL", "TANGENT", "TEXCOORD", "COLOR", "BLENDWEIGHTS", "BLENDINDICES",
             "OBJECTINDEX"]
SEM = {name: i for i, name in enumerate(SEMANTICS)}

# Legacy UMDL element mask bits → (type, semantic, index), interleaved in ascending bit order.
LEGACY_ELEMENTS = [
    (0x0001, TYPE["VECTOR3"], SEM["POSITION"], 0),
    (0x0002, TYPE["VECTOR3"], SEM["NORMAL"], 0),
    (0x0004, TYPE["UBYTE4_NORM"], SEM["COLOR"], 0),
    (0x0008, TYPE["VECTOR2"], SEM["TEXCOORD"], 0),
    (0x0010, TYPE["VECTOR2"], SEM["TEXCOORD"], 1),
    (0x0020, TYPE["VECTOR3"], SEM["TEXCOORD"], 0),
    (0x0040, TYPE["VECTOR3"], SEM["TEXCOORD"], 1),
    (0x0080, TYPE["VECTOR4"], SEM["TANGENT"], 0),
    (0x0100, TYPE["VECTOR4"], SEM["BLENDWEIGHTS"], 0),
    (0x0200, TYPE["UBYTE4"], SEM["BLENDINDICES"], 0),
    (0x0400, TYPE["VECTOR4"], SEM["TEXCOORD"], 4),
    (0x0800, TYPE["VECTOR4"], SEM["TEXCOORD"], 5),
    (0x1000, TYPE["VECTOR4"], SEM["TEXCOORD"], 6),
    (0x2000, TYPE["INT"], SEM["OBJECTINDEX"], 0),
]
LEGACY_MASK_ALL = 0x3FFF

PRIMITIVE_TYPES = ["TRIANGLE_LIST", "LINE_LIST", "POINT_LIST", "TRIANGLE_STRIP", "LINE_STRIP", "TRIANGLE_FAN"]

# Morph element mask bits (legacy numbering, in every variant).
MORPH_POSITION, MORPH_NORMAL, MORPH_TANGENT = 0x1, 0x2, 0x80

BONECOLLISION_SPHERE, BONECOLLISION_BOX = 0x1, 0x2

UMD3_MORPH_WEIGHT_VERSION = 2
MIN_BONE_BYTES = 1 + 4 + 12 + 16 + 12 + 48 + 1


@dataclass
class VertexElement:
    type: int
    semantic: int
    index: int

    @property
    def descriptor(self) -> int:
        return self.type | (self.semantic << 8) | (self.index << 16)

    @property
    def semantic_name(self) -> str:
        return SEMANTICS[self.semantic] if self.semantic < len(SEMANTICS) else f"SEMANTIC{self.semantic}"

    @property
    def field_name(self) -> str:
        return f"{self.semantic_name}{self.index}"


def vertex_dtype(elements: list[VertexElement]) -> np.dtype:
    """Structured dtype of one interleaved vertex, fields named SEMANTIC+index (e.g. TEXCOORD0)."""
    names, formats = [], []
    for e in elements:
        _, _, base, comps = ELEMENT_TYPES[e.type]
        name = e.field_name
        while name in names:  # the same element twice: keep both
            name += "_"
        names.append(name)
        formats.append(np.dtype(base) if comps == 1 else np.dtype((base, (comps,))))
    return np.dtype({"names": names, "formats": formats})


@dataclass
class VertexBuffer:
    elements: list[VertexElement]
    vertices: np.ndarray  # structured array, dtype vertex_dtype(elements)
    morph_range_start: int = 0
    morph_range_count: int = 0
    legacy_mask: int | None = None  # set when read from a UMDL file

    def has(self, name: str) -> bool:
        return name in self.vertices.dtype.names


@dataclass
class IndexBuffer:
    index_size: int  # 2 or 4
    indices: np.ndarray  # uint16 or uint32


@dataclass
class LodLevel:
    distance: float
    primitive_type: int
    vertex_buffer: int
    index_buffer: int
    index_start: int
    index_count: int


@dataclass
class Geometry:
    bone_mapping: np.ndarray  # uint32: geometry-local blend index → skeleton bone index
    lods: list[LodLevel]


@dataclass
class MorphBuffer:
    vertex_buffer: int
    element_mask: int
    vertices: np.ndarray  # structured: index (u32), [position], [normal], [tangent] (3 × f32 each)


@dataclass
class Morph:
    name: str
    buffers: list[MorphBuffer]
    default_weight: float | None = None  # UMD3 version ≥ 2 only


@dataclass
class BoneRecord:
    name: str
    parent: int  # == own index for the root
    position: np.ndarray  # (3,) float32, relative to the parent
    rotation: np.ndarray  # (4,) float32, w x y z
    scale: np.ndarray  # (3,) float32
    offset: np.ndarray  # (12,) float32: Matrix3x4 row-major, the inverse bind transform
    collision_mask: int = 0
    radius: float | None = None
    bbox: np.ndarray | None = None  # (6,) float32 min then max, bone-local


@dataclass
class Model:
    magic: str = "UMD2"  # UMD2 | UMDL | UMD3
    version: int | None = None  # UMD3 only
    vertex_buffers: list[VertexBuffer] = field(default_factory=list)
    index_buffers: list[IndexBuffer] = field(default_factory=list)
    geometries: list[Geometry] = field(default_factory=list)
    morphs: list[Morph] = field(default_factory=list)
    bones: list[BoneRecord] = field(default_factory=list)
    bbox_min: np.ndarray = field(default_factory=lambda: np.zeros(3, np.float32))
    bbox_max: np.ndarray = field(default_factory=lambda: np.zeros(3, np.float32))
    centers: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.float32))  # as many as the file holds
    trailing: bytes = b""  # bytes after the centers (kept so that the file writes back unchanged)
    warnings: list[str] = field(default_factory=list)
    bone_offsets: list[int] = field(default_factory=list)  # byte offset of each bone record (for findings)
    # Byte offsets of the other sections, set by `read` (for findings): "vertex buffer {i}",
    # "vertex buffer {i} data", "index buffer {i}", "index buffer {i} data", "geometry {i}", "morph {i}",
    # "bone count", "bounding box", "geometry centers"
    offsets: dict[str, int] = field(default_factory=dict)
    # Not in the file: the core material each geometry draws with, set by the mapping on export (material lists).
    geometry_materials: list = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# reading

def read(data: bytes) -> Model:
    r = Reader(data)
    magic = r.magic((b"UMD2", b"UMDL", b"UMD3")).decode("ascii")
    m = Model(magic=magic)
    if magic == "UMD3":
        m.version = r.u32("version")
    # Each section's offset is recorded in m.offsets while reading
    for i in range(r.count("vertex buffer count", 12)):
        m.offsets[f"vertex buffer {i}"] = r.pos
        m.vertex_buffers.append(_read_vertex_buffer(r, magic, i))
        m.offsets[f"vertex buffer {i} data"] = r.pos - m.vertex_buffers[-1].vertices.nbytes
    for i in range(r.count("index buffer count", 8)):
        m.offsets[f"index buffer {i}"] = r.pos
        m.index_buffers.append(_read_index_buffer(r, i))
        m.offsets[f"index buffer {i} data"] = r.pos - m.index_buffers[-1].indices.nbytes
    for i in range(r.count("geometry count", 8)):
        m.offsets[f"geometry {i}"] = r.pos
        m.geometries.append(_read_geometry(r, i))
    weighted = magic == "UMD3" and (m.version or 0) >= UMD3_MORPH_WEIGHT_VERSION
    for i in range(r.count("morph count", 5)):
        m.offsets[f"morph {i}"] = r.pos
        m.morphs.append(_read_morph(r, i, weighted))
    m.offsets["bone count"] = r.pos
    n_bones = r.count("bone count", MIN_BONE_BYTES, signed=True)
    for i in range(n_bones):
        m.bone_offsets.append(r.pos)
        m.bones.append(_read_bone(r, i))
    m.offsets["bounding box"] = r.pos
    m.bbox_min = r.f32s(3, "bounding box min")
    m.bbox_max = r.f32s(3, "bounding box max")
    m.offsets["geometry centers"] = r.pos
    n_centers = min(len(m.geometries), r.remaining() // 12)
    m.centers = r.f32s(3 * n_centers, "geometry centers").reshape(n_centers, 3)
    if n_centers < len(m.geometries):
        m.warnings.append(f"file ends after {n_centers} of {len(m.geometries)} geometry centers; "
                          "the missing ones are (0, 0, 0)")
    m.trailing = r.bytes(r.remaining(), "trailing bytes")
    if m.trailing:
        m.warnings.append(f"{len(m.trailing)} bytes after the geometry centers were kept but not read")
    return m


def _read_vertex_buffer(r: Reader, magic: str, i: int) -> VertexBuffer:
    f = f"vertex buffer {i}"
    count_at = r.pos
    vertex_count = r.u32(f"{f} vertex count")
    legacy_mask = None
    if magic == "UMDL":
        at = r.pos
        legacy_mask = r.u32(f"{f} element mask")
        if legacy_mask & ~LEGACY_MASK_ALL:
            raise FormatError(f"unknown element mask bits 0x{legacy_mask & ~LEGACY_MASK_ALL:x}", at,
                              f"{f} element mask")
        elements = [VertexElement(t, s, x) for bit, t, s, x in LEGACY_ELEMENTS if legacy_mask & bit]
    else:
        n = r.count(f"{f} element count", 4)
        elements = []
        for k in range(n):
            at = r.pos
            d = r.u32(f"{f} element {k}")
            t, s, x = d & 0xFF, (d >> 8) & 0xFF, (d >> 16) & 0xFF
            if t not in ELEMENT_TYPES or d >> 24:
                raise FormatError(f"element descriptor 0x{d:08x}: type {t} is not 0..6 or bits 24-31 are set",
                                  at, f"{f} element {k}")
            elements.append(VertexElement(t, s, x))
    morph_start = r.u32(f"{f} morph range start")
    morph_count = r.u32(f"{f} morph range count")
    dt = vertex_dtype(elements)
    if dt.itemsize == 0 and vertex_count:
        raise FormatError(f"{vertex_count} vertices but no vertex elements", count_at, f"{f} vertex count")
    if vertex_count * dt.itemsize > r.remaining():
        raise FormatError(f"{vertex_count} vertices of {dt.itemsize} bytes exceed the {r.remaining()} bytes left",
                          count_at, f"{f} vertex count")
    vertices = r.array(dt, vertex_count, f"{f} vertex data")
    return VertexBuffer(elements, vertices, morph_start, morph_count, legacy_mask)


def _read_index_buffer(r: Reader, i: int) -> IndexBuffer:
    f = f"index buffer {i}"
    count_at = r.pos
    count = r.u32(f"{f} index count")
    size_at = r.pos
    size = r.u32(f"{f} index size")
    if size not in (2, 4):
        raise FormatError(f"index size {size}, expected 2 or 4", size_at, f"{f} index size")
    if count * size > r.remaining():
        raise FormatError(f"{count} indices of {size} bytes exceed the {r.remaining()} bytes left", count_at,
                          f"{f} index count")
    return IndexBuffer(size, r.array("<u2" if size == 2 else "<u4", count, f"{f} index data"))


def _read_geometry(r: Reader, i: int) -> Geometry:
    f = f"geometry {i}"
    mapping = r.array("<u4", r.count(f"{f} bone mapping count", 4), f"{f} bone mapping")
    lods = []
    for k in range(r.count(f"{f} LOD count", 24)):
        g = f"{f} LOD {k}"
        lods.append(LodLevel(r.f32(f"{g} distance"), r.u32(f"{g} primitive type"), r.u32(f"{g} vertex buffer"),
                             r.u32(f"{g} index buffer"), r.u32(f"{g} index start"), r.u32(f"{g} index count")))
    return Geometry(mapping, lods)


def morph_dtype(mask: int) -> np.dtype:
    names, formats = ["index"], ["<u4"]
    for bit, name in ((MORPH_POSITION, "position"), (MORPH_NORMAL, "normal"), (MORPH_TANGENT, "tangent")):
        if mask & bit:
            names.append(name)
            formats.append(("<f4", (3,)))
    return np.dtype({"names": names, "formats": formats})


def _read_morph(r: Reader, i: int, weighted: bool) -> Morph:
    f = f"morph {i}"
    name = r.cstring(f"{f} name")
    weight = r.f32(f"{f} default weight") if weighted else None
    buffers = []
    for k in range(r.count(f"{f} buffer count", 12)):
        g = f"{f} buffer {k}"
        vb = r.u32(f"{g} vertex buffer")
        mask_at = r.pos
        mask = r.u32(f"{g} element mask")
        if mask & ~(MORPH_POSITION | MORPH_NORMAL | MORPH_TANGENT):
            raise FormatError(f"morph element mask 0x{mask:x} has bits other than 0x1, 0x2, 0x80", mask_at,
                              f"{g} element mask")
        dt = morph_dtype(mask)
        n = r.count(f"{g} vertex count", dt.itemsize)
        buffers.append(MorphBuffer(vb, mask, r.array(dt, n, f"{g} vertices")))
    return Morph(name, buffers, weight)


def _read_bone(r: Reader, i: int) -> BoneRecord:
    f = f"bone {i}"
    name = r.cstring(f"{f} name")
    f = f"bone {i} ({name})"
    b = BoneRecord(
        name=name,
        parent=r.i32(f"{f} parent"),
        position=r.f32s(3, f"{f} initial position"),
        rotation=r.f32s(4, f"{f} initial rotation"),
        scale=r.f32s(3, f"{f} initial scale"),
        offset=r.f32s(12, f"{f} offset matrix"),
        collision_mask=r.u8(f"{f} collision mask"),
    )
    if b.collision_mask & BONECOLLISION_SPHERE:
        b.radius = r.f32(f"{f} collision radius")
    if b.collision_mask & BONECOLLISION_BOX:
        b.bbox = r.f32s(6, f"{f} collision box")
    return b


# ---------------------------------------------------------------------------------------------
# writing

def write(m: Model) -> bytes:
    w = Writer()
    w.bytes(m.magic.encode("ascii"))
    if m.magic == "UMD3":
        w.u32(m.version or 0)
    w.u32(len(m.vertex_buffers))
    for vb in m.vertex_buffers:
        w.u32(len(vb.vertices))
        if m.magic == "UMDL":
            w.u32(legacy_mask_of(vb.elements) if vb.legacy_mask is None else vb.legacy_mask)
        else:
            w.u32(len(vb.elements))
            for e in vb.elements:
                w.u32(e.descriptor)
        w.u32(vb.morph_range_start)
        w.u32(vb.morph_range_count)
        w.array(np.ascontiguousarray(vb.vertices, dtype=vertex_dtype(vb.elements)))
    w.u32(len(m.index_buffers))
    for ib in m.index_buffers:
        w.u32(len(ib.indices))
        w.u32(ib.index_size)
        w.array(ib.indices, "<u2" if ib.index_size == 2 else "<u4")
    w.u32(len(m.geometries))
    for g in m.geometries:
        w.u32(len(g.bone_mapping))
        w.array(g.bone_mapping, "<u4")
        w.u32(len(g.lods))
        for lod in g.lods:
            w.f32(lod.distance)
            for v in (lod.primitive_type, lod.vertex_buffer, lod.index_buffer, lod.index_start, lod.index_count):
                w.u32(v)
    w.u32(len(m.morphs))
    weighted = m.magic == "UMD3" and (m.version or 0) >= UMD3_MORPH_WEIGHT_VERSION
    for morph in m.morphs:
        w.cstring(morph.name)
        if weighted:
            w.f32(0.0 if morph.default_weight is None else morph.default_weight)
        w.u32(len(morph.buffers))
        for buf in morph.buffers:
            w.u32(buf.vertex_buffer)
            w.u32(buf.element_mask)
            w.u32(len(buf.vertices))
            w.array(np.ascontiguousarray(buf.vertices, dtype=morph_dtype(buf.element_mask)))
    w.i32(len(m.bones))
    for b in m.bones:
        w.cstring(b.name)
        w.i32(b.parent)
        w.f32s(b.position)
        w.f32s(b.rotation)
        w.f32s(b.scale)
        w.f32s(b.offset)
        w.u8(b.collision_mask)
        if b.collision_mask & BONECOLLISION_SPHERE:
            w.f32(0.0 if b.radius is None else b.radius)
        if b.collision_mask & BONECOLLISION_BOX:
            w.f32s(b.bbox if b.bbox is not None else np.zeros(6))
    w.f32s(m.bbox_min)
    w.f32s(m.bbox_max)
    w.f32s(np.asarray(m.centers, dtype=np.float32).reshape(-1))
    w.bytes(m.trailing)
    return w.getvalue()


def legacy_mask_of(elements: list[VertexElement]) -> int:
    """The UMDL element mask of an element list, or ValueError if the list has no legacy form."""
    mask = 0
    expected = []
    for bit, t, s, x in LEGACY_ELEMENTS:
        if any((e.type, e.semantic, e.index) == (t, s, x) for e in elements):
            mask |= bit
            expected.append((t, s, x))
    if expected != [(e.type, e.semantic, e.index) for e in elements]:
        raise ValueError("these vertex elements have no legacy UMDL element mask")
    return mask
