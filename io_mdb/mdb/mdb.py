"""Neverwinter Nights 2 `.mdb` models: bytes ⇄ records that mirror the file (docs/nwn2.md §2).

```
Header (12):    char sig[4] = "NWN2"; u16 major; u16 minor; u32 packet_count
PacketKey (8):  char type[4]; u32 offset (absolute)            × packet_count
Packet:         char type[4]; u32 size (bytes after these 8); body
```

Every packet is kept in key order with its raw 32-byte name (bytes after the NUL included), so that a file read
and written back is byte-identical. TRRN (no real MDB holds one) and unknown packets stay raw. Bytes between
packets and after the last one are kept as they are; a packet body longer than its counts need keeps the
surplus (`extra`), which `check` reports. No interpretation and no axis change here: MDB is Z-up metres.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from ...core.binary import Reader, Writer
from ...core.errors import FormatError

MAGIC = b"NWN2"
HEADER_SIZE = 12
KEY_SIZE = 8
NAME_SIZE = 32
MATERIAL_SIZE = 164

MESH_TYPES = ("RIGD", "SKIN", "COL2", "COL3")
POINT_TYPES = ("HOOK", "HAIR", "HELM")
KNOWN_TYPES = MESH_TYPES + ("WALK", "COLS") + POINT_TYPES
GEOMETRY_TYPES = MESH_TYPES + ("WALK",)  # the packets `info` totals

_F3 = ("<f4", (3,))
RIGD_VERTEX = np.dtype([("position", *_F3), ("normal", *_F3), ("tangent", *_F3), ("binormal", *_F3),
                        ("uvw", *_F3)])
SKIN_VERTEX = np.dtype([("position", *_F3), ("normal", *_F3), ("weights", "<f4", (4,)), ("bones", "u1", (4,)),
                        ("tangent", *_F3), ("binormal", *_F3), ("uvw", *_F3), ("bone_count", "<f4")])
COL_VERTEX = np.dtype([("position", *_F3), ("normal", *_F3), ("uvw", *_F3)])
WALK_VERTEX = np.dtype([("position", *_F3)])
FACE = np.dtype([("v", "<u2", (3,))])
WALK_FACE = np.dtype([("v", "<u2", (3,)), ("flags", "<u4")])  # 10 bytes, packed
COLS_SPHERE = np.dtype([("bone", "<u4"), ("radius", "<f4")])
assert (RIGD_VERTEX.itemsize, SKIN_VERTEX.itemsize, COL_VERTEX.itemsize, WALK_FACE.itemsize) == (60, 84, 36, 10)

VERTEX_DTYPES = {"RIGD": RIGD_VERTEX, "SKIN": SKIN_VERTEX, "COL2": COL_VERTEX, "COL3": COL_VERTEX}
# bytes of a mesh packet before its vertices, the 8-byte prefix included
MESH_HEADER_SIZE = {"RIGD": 212, "SKIN": 244, "COL2": 212, "COL3": 212}
WALK_HEADER_SIZE = 52
POINT_PACKET_SIZE = 92

# Material flags (nwn2mdk Material_flags)
ALPHA_TEST, ALPHA_BLEND, ADDITIVE, ENVIRONMENT_MAP, CUTSCENE, GLOW, NO_SHADOWS, PROJECTED_TEXTURES = (
    0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80)
MATERIAL_FLAG_NAMES = {ALPHA_TEST: "alpha_test", ALPHA_BLEND: "alpha_blend", ADDITIVE: "additive",
                       ENVIRONMENT_MAP: "environment_map", CUTSCENE: "cutscene", GLOW: "glow",
                       NO_SHADOWS: "no_shadows", PROJECTED_TEXTURES: "projected_textures"}
HAIR_SHORTENING = ("LOW", "SHORT", "PONYTAIL")
HELM_HIDING = ("NONE_HIDDEN", "HAIR_HIDDEN", "PARTIAL_HAIR", "HEAD_HIDDEN")


def raw_name(text: str, size: int = NAME_SIZE) -> bytes:
    """A char[size] field: the text's bytes, NUL-padded; a name of exactly `size` bytes has no terminator."""
    raw = text.encode("utf-8", "surrogateescape")
    if len(raw) > size:
        raise ValueError(f"name {text!r} is {len(raw)} bytes, at most {size}")
    return raw.ljust(size, b"\0")


def text_of(raw: bytes) -> str:
    """The text of a char[] field for display: the bytes up to the first NUL (all of them without one); bytes
    that are not UTF-8 show as U+FFFD (the raw field itself is what is kept and written)."""
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


@dataclass
class Material:
    diffuse_map: bytes = bytes(NAME_SIZE)  # raw char[32] fields
    normal_map: bytes = bytes(NAME_SIZE)
    tint_map: bytes = bytes(NAME_SIZE)
    glow_map: bytes = bytes(NAME_SIZE)
    diffuse_color: np.ndarray = field(default_factory=lambda: np.ones(3, "<f4"))  # Kd
    specular_color: np.ndarray = field(default_factory=lambda: np.ones(3, "<f4"))  # Ks
    specular_level: np.float32 = np.float32(1.0)  # @152 (nwn2mdk's name)
    specular_power: np.float32 = np.float32(20.0)  # @156, "Glossiness"
    flags: int = 0

    MAPS = ("diffuse_map", "normal_map", "tint_map", "glow_map")

    def map_name(self, which: str) -> str:
        return text_of(getattr(self, which))


class Named:
    """A packet with a raw char[32] `name`; `name_text` is it for display."""
    name: bytes

    @property
    def name_text(self) -> str:
        return text_of(self.name)


@dataclass
class MeshPacket(Named):
    """RIGD, SKIN, COL2 or COL3: a name, a material, vertices (`VERTEX_DTYPES[type]`) and u16 triangles."""
    type: str
    name: bytes  # raw char[32]
    material: Material
    vertices: np.ndarray
    faces: np.ndarray  # (F, 3) uint16
    skeleton: bytes = bytes(NAME_SIZE)  # SKIN only: raw char[32], the GR2 skeleton file name
    extra: bytes = b""  # body bytes beyond what the counts need (never in real files)
    offset: int | None = None  # of the packet's type field, when read from a file


@dataclass
class WalkPacket(Named):
    name: bytes
    ui_flags: int
    vertices: np.ndarray  # (V, 3) float32
    faces: np.ndarray  # WALK_FACE records: v (3 × u16), flags (u32)
    extra: bytes = b""
    offset: int | None = None
    type: str = "WALK"


@dataclass
class ColsPacket:
    spheres: np.ndarray  # COLS_SPHERE records: bone (index into the unfiltered skeleton), radius
    extra: bytes = b""
    offset: int | None = None
    type: str = "COLS"


@dataclass
class PointPacket(Named):
    """HOOK, HAIR or HELM: a named point with a position and a 3×3 orientation (as stored)."""
    type: str
    name: bytes
    kind: int  # HOOK: u16 point_type; HAIR: u32 shortening; HELM: u32 hiding
    size: int  # HOOK: u16 point_size; 0 for HAIR and HELM (their enum is one u32)
    position: np.ndarray  # (3,) float32
    orientation: np.ndarray  # (3, 3) float32, rows as stored
    extra: bytes = b""
    offset: int | None = None


@dataclass
class RawPacket:
    """TRRN (layout incomplete) or a packet type we do not know: its body bytes as they are."""
    type: str
    body: bytes
    offset: int | None = None


Packet = MeshPacket | WalkPacket | ColsPacket | PointPacket | RawPacket


@dataclass
class MdbFile:
    packets: list = field(default_factory=list)
    major: int = 1
    minor: int = 12
    gaps: list[bytes] = field(default_factory=list)  # bytes before each packet (after the key table / previous)
    tail: bytes = b""  # bytes after the last packet
    warnings: list[str] = field(default_factory=list)

    def of_type(self, *types: str) -> list:
        return [p for p in self.packets if p.type in types]


# -- reading ------------------------------------------------------------------------------------------------------

def _type_text(raw: bytes) -> str:
    return raw.decode("latin-1")


def _read_material(r: Reader, label: str) -> Material:
    maps = [r.bytes(NAME_SIZE, f"{label}.{m}") for m in Material.MAPS]
    kd = r.f32s(3, f"{label}.diffuse_color")
    ks = r.f32s(3, f"{label}.specular_color")
    level = r.f32(f"{label}.specular_level")
    power = r.f32(f"{label}.specular_power")
    flags = r.u32(f"{label}.flags")
    return Material(*maps, kd, ks, level, power, flags)


def _counts(r: Reader, label: str, body_end: int, v_size: int, f_size: int) -> tuple[int, int]:
    at = r.pos
    nv = r.u32(f"{label}.vertex_count")
    nf = r.u32(f"{label}.face_count")
    left = body_end - r.pos
    if nv * v_size > left:
        raise FormatError(f"{nv} vertices need {nv * v_size} bytes, the packet has {left} left", at,
                          f"{label}.vertex_count")
    if nv * v_size + nf * f_size > left:
        raise FormatError(f"{nf} faces need {nf * f_size} bytes, the packet has {left - nv * v_size} left",
                          at + 4, f"{label}.face_count")
    return nv, nf


def _read_packet(r: Reader, ptype: str, start: int, body_end: int, index: int) -> Packet:
    label = f"packet {index} ({ptype})"
    if ptype in MESH_TYPES:
        name = r.bytes(NAME_SIZE, f"{label}.name")
        skeleton = r.bytes(NAME_SIZE, f"{label}.skeleton") if ptype == "SKIN" else bytes(NAME_SIZE)
        material = _read_material(r, f"{label}.material")
        dtype = VERTEX_DTYPES[ptype]
        nv, nf = _counts(r, label, body_end, dtype.itemsize, FACE.itemsize)
        vertices = r.array(dtype, nv, f"{label}.vertices")
        faces = r.array("<u2", nf * 3, f"{label}.faces").reshape(nf, 3)
        packet = MeshPacket(ptype, name, material, vertices, faces, skeleton)
    elif ptype == "WALK":
        name = r.bytes(NAME_SIZE, f"{label}.name")
        ui_flags = r.u32(f"{label}.ui_flags")
        nv, nf = _counts(r, label, body_end, WALK_VERTEX.itemsize, WALK_FACE.itemsize)
        vertices = r.array("<f4", nv * 3, f"{label}.vertices").reshape(nv, 3)
        faces = r.array(WALK_FACE, nf, f"{label}.faces")
        packet = WalkPacket(name, ui_flags, vertices, faces)
    elif ptype == "COLS":
        at = r.pos
        n = r.u32(f"{label}.count")
        if n * COLS_SPHERE.itemsize > body_end - r.pos:
            raise FormatError(f"{n} spheres need {n * COLS_SPHERE.itemsize} bytes, the packet has "
                              f"{body_end - r.pos} left", at, f"{label}.count")
        packet = ColsPacket(r.array(COLS_SPHERE, n, f"{label}.spheres"))
    elif ptype in POINT_TYPES:
        if body_end - start < POINT_PACKET_SIZE:
            raise FormatError(f"{ptype} packet is {body_end - start} bytes, needs {POINT_PACKET_SIZE}", start + 4,
                              f"{label}.size")
        name = r.bytes(NAME_SIZE, f"{label}.name")
        if ptype == "HOOK":
            kind, size = r.u16(f"{label}.point_type"), r.u16(f"{label}.point_size")
        else:
            kind, size = r.u32(f"{label}.{'shortening' if ptype == 'HAIR' else 'hiding'}"), 0
        position = r.f32s(3, f"{label}.position")
        orientation = r.f32s(9, f"{label}.orientation").reshape(3, 3)
        packet = PointPacket(ptype, name, kind, size, position, orientation)
    else:
        return RawPacket(ptype, r.bytes(body_end - r.pos, f"{label}.body"))
    if r.pos > body_end:  # a fixed-size header longer than the packet
        raise FormatError(f"{ptype} packet needs {r.pos - start} bytes, its size gives {body_end - start}",
                          start + 4, f"{label}.size")
    packet.extra = r.bytes(body_end - r.pos, f"{label}.extra")
    return packet


def read(data: bytes | bytearray | memoryview) -> MdbFile:
    r = Reader(data)
    r.magic((MAGIC,), "signature")
    major = r.u16("major_version")
    minor = r.u16("minor_version")
    n = r.count("packet_count", KEY_SIZE)
    keys = [(r.bytes(4, f"key {i}.type"), r.u32(f"key {i}.offset"), HEADER_SIZE + KEY_SIZE * i)
            for i in range(n)]
    out = MdbFile(major=major, minor=minor)
    if (major, minor) != (1, 12):
        out.warnings.append(f"version {major}.{minor}; every known MDB is 1.12")
    end = r.pos
    for i, (key_type, offset, key_at) in enumerate(keys):
        if offset < end:
            raise FormatError(f"packet {i} offset {offset} points before the end of the previous data ({end})",
                              key_at + 4, f"key {i}.offset")
        if offset + 8 > r.size:
            raise FormatError(f"packet {i} offset {offset} leaves no room for an 8-byte packet prefix in a "
                              f"{r.size}-byte file", key_at + 4, f"key {i}.offset")
        out.gaps.append(r.data[end:offset])
        r.pos = offset
        ptype_raw = r.bytes(4, f"packet {i}.type")
        if ptype_raw != key_type:
            raise FormatError(f"packet type {ptype_raw!r} differs from its key's {key_type!r}", offset,
                              f"packet {i}.type")
        size_at = r.pos
        size = r.u32(f"packet {i}.size")
        if size > r.remaining():
            raise FormatError(f"packet size {size} exceeds the {r.remaining()} bytes left", size_at,
                              f"packet {i}.size")
        body_end = r.pos + size
        packet = _read_packet(r, _type_text(ptype_raw), offset, body_end, i)
        packet.offset = offset
        if isinstance(packet, RawPacket) and packet.type != "TRRN":
            out.warnings.append(f"packet {i}: unknown type {packet.type!r} kept as raw bytes")
        out.packets.append(packet)
        end = body_end
    out.tail = r.data[end:]
    return out


# -- writing ------------------------------------------------------------------------------------------------------

def _fixed(raw: bytes, field_name: str, size: int = NAME_SIZE) -> bytes:
    if len(raw) != size:
        raise ValueError(f"{field_name} is {len(raw)} bytes, the field is {size}")
    return raw


def _write_material(w: Writer, m: Material) -> None:
    for which in Material.MAPS:
        w.bytes(_fixed(getattr(m, which), which))
    w.f32s(np.asarray(m.diffuse_color, "<f4").reshape(3))
    w.f32s(np.asarray(m.specular_color, "<f4").reshape(3))
    w.f32(m.specular_level)
    w.f32(m.specular_power)
    w.u32(m.flags)


def _packet_parts(p: Packet) -> list:
    """A packet's body as a list of byte strings (the large arrays are not copied into a header buffer)."""
    w = Writer()
    arrays: list = []
    if isinstance(p, MeshPacket):
        w.bytes(_fixed(p.name, "name"))
        if p.type == "SKIN":
            w.bytes(_fixed(p.skeleton, "skeleton"))
        _write_material(w, p.material)
        vertices = np.asarray(p.vertices)
        if vertices.dtype != VERTEX_DTYPES[p.type]:
            raise ValueError(f"{p.type} vertices must have dtype {VERTEX_DTYPES[p.type]}")
        faces = np.asarray(p.faces).reshape(-1, 3)
        w.u32(len(vertices))
        w.u32(len(faces))
        arrays = [vertices, faces.astype("<u2", copy=False)]
    elif isinstance(p, WalkPacket):
        w.bytes(_fixed(p.name, "name"))
        w.u32(p.ui_flags)
        vertices = np.asarray(p.vertices, "<f4").reshape(-1, 3)
        w.u32(len(vertices))
        w.u32(len(p.faces))
        arrays = [vertices, np.asarray(p.faces, WALK_FACE)]
    elif isinstance(p, ColsPacket):
        w.u32(len(p.spheres))
        arrays = [np.asarray(p.spheres, COLS_SPHERE)]
    elif isinstance(p, PointPacket):
        w.bytes(_fixed(p.name, "name"))
        if p.type == "HOOK":
            w.u16(p.kind)
            w.u16(p.size)
        else:
            w.u32(p.kind)
        w.f32s(np.asarray(p.position, "<f4").reshape(3))
        w.f32s(np.asarray(p.orientation, "<f4").reshape(9))
    else:
        return [bytes(p.body)]
    # every dtype above is little-endian: the arrays' memory is the file's bytes
    return [bytes(w.buf), *(np.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in arrays), bytes(p.extra)]


def write(m: MdbFile) -> bytes:
    return b"".join(write_pieces(m))


def write_pieces(m: MdbFile) -> list:
    """The file as a list of byte strings and arrays' bytes (for a file written without joining them)."""
    bodies = [_packet_parts(p) for p in m.packets]
    sizes = [sum(len(part) for part in parts) for parts in bodies]
    types = [p.type.encode("latin-1") for p in m.packets]
    bad = [t for t in types if len(t) != 4]
    if bad:
        raise ValueError(f"packet types must be 4 characters: {bad}")
    gaps = list(m.gaps) + [b""] * (len(m.packets) - len(m.gaps))
    w = Writer()
    w.bytes(MAGIC)
    w.u16(m.major)
    w.u16(m.minor)
    w.u32(len(m.packets))
    at = HEADER_SIZE + KEY_SIZE * len(m.packets)
    for t, size, gap in zip(types, sizes, gaps):
        at += len(gap)
        w.bytes(t)
        w.u32(at)
        at += 8 + size
    out = [bytes(w.buf)]
    for t, parts, size, gap in zip(types, bodies, sizes, gaps):
        out += [bytes(gap), t, struct.pack("<I", size), *parts]
    out.append(bytes(m.tail))
    return out


def sniff(head: bytes) -> bool:
    return head[:4] == MAGIC
