"""VMD (MikuMikuDance motion) codec: bytes ⇄ records that mirror the file field for field.

Layout: docs/mmd.md §3. Nothing is interpreted here: positions, quaternions, camera angles and
interpolation bytes are kept exactly as stored (an all-zero quaternion stays all-zero; MMD ⇄ Blender
conversions belong to the mapping), so read → write gives back the same bytes.

* Bone, morph, camera, light and self-shadow keys are numpy structured arrays in the file's own layout
  (`BONE_KEY`, `MORPH_KEY`, ...), read and written in bulk. Names stay as their raw fixed-size fields (the
  bytes after the terminating NUL, 0x00 or 0xFD padding, are kept); `decode_name` gives the text.
* Property (show / IK) keys have a variable size; each is a small record holding its IK states as one array.
* The groups after the morph keys are optional in the order (camera + light), self-shadow, property. The
  number present is kept (`Motion.tail_groups`) so a file that ends early writes back the same bytes; reading
  such a file adds a warning. Bytes after the property group are kept (`Motion.trailing`) with a warning.
* Keys may be stored unsorted; the order of the file is kept.

The 64-byte bone interpolation block: the logical sequence
`X_x1 Y_x1 Z_x1 R_x1 X_y1 Y_y1 Z_y1 R_y1 X_x2 Y_x2 Z_x2 R_x2 X_y2 Y_y2 Z_y2 R_y2` written four times, row c
shifted left by c bytes with trailing zeros; in row 0, bytes 2 and 3 hold the physics toggle instead
(0x00,0x00 physics on; 0x63,0x0F physics off: the animation drives the rigid body). Readers take curve c
from row c (`curves`); `build_interpolation` writes a block as MMD does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from ...core.binary import Reader, Writer
from ...core.errors import ExportError, FormatError
from ...core.quoting import quoted
from ...core.fileio import read_bytes

SIGNATURE = b"Vocaloid Motion Data 0002"
SIGNATURE_SIZE = 30
MODEL_NAME_SIZE = 20
NAME_SIZE = 15  # bone and morph names
IK_NAME_SIZE = 20
FPS = 30

BONE_KEY = np.dtype([("name", "S15"), ("frame", "<u4"), ("position", "<f4", (3,)), ("rotation", "<f4", (4,)),
                     ("interpolation", "u1", (64,))])
MORPH_KEY = np.dtype([("name", "S15"), ("frame", "<u4"), ("weight", "<f4")])
# camera interpolation: six groups {x1, x2, y1, y2} for X, Y, Z, rotation, distance, view angle
CAMERA_KEY = np.dtype([("frame", "<u4"), ("distance", "<f4"), ("position", "<f4", (3,)), ("rotation", "<f4", (3,)),
                       ("interpolation", "u1", (24,)), ("view_angle", "<u4"), ("perspective", "u1")])
LIGHT_KEY = np.dtype([("frame", "<u4"), ("color", "<f4", (3,)), ("direction", "<f4", (3,))])
SHADOW_KEY = np.dtype([("frame", "<u4"), ("mode", "u1"), ("distance", "<f4")])
IK_STATE = np.dtype([("name", "S20"), ("enabled", "u1")])
PROPERTY_KEY_SIZE = 9  # frame, visible, IK state count; then 21 bytes per IK state
assert (BONE_KEY.itemsize, MORPH_KEY.itemsize, CAMERA_KEY.itemsize, LIGHT_KEY.itemsize, SHADOW_KEY.itemsize,
        IK_STATE.itemsize) == (111, 23, 61, 28, 9, 21)

# how many of the optional groups after the morph keys a file holds
TAIL_NONE, TAIL_CAMERA_LIGHT, TAIL_SHADOW, TAIL_PROPERTY = range(4)
_TAIL_GROUP_NAMES = ("camera + light", "self-shadow", "property (show / IK)")

PHYSICS_ON = (0x00, 0x00)
PHYSICS_OFF = (0x63, 0x0F)
LINEAR_CURVE = (20, 20, 107, 107)  # x1, y1, x2, y2


# ----------------------------------------------------------------------------------------------------------
# Records

@dataclass(eq=False)
class PropertyKey:
    """A show / IK key: visibility plus the on/off state of each named IK bone."""

    frame: int = 0
    visible: int = 1
    ik: np.ndarray = field(default_factory=lambda: np.zeros(0, IK_STATE))  # IK_STATE records


@dataclass(eq=False)
class Motion:
    signature: bytes = SIGNATURE.ljust(SIGNATURE_SIZE, b"\0")  # raw 30 bytes
    model_name_raw: bytes = bytes(MODEL_NAME_SIZE)  # raw 20 bytes
    bone_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, BONE_KEY))
    morph_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, MORPH_KEY))
    camera_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, CAMERA_KEY))
    light_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, LIGHT_KEY))
    shadow_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, SHADOW_KEY))
    property_keys: list[PropertyKey] = field(default_factory=list)
    tail_groups: int = TAIL_PROPERTY  # optional groups present after the morph keys (MMD writes all three)
    trailing: bytes = b""
    warnings: list[str] = field(default_factory=list)

    @property
    def version(self) -> str:
        """The header text, e.g. "Vocaloid Motion Data 0002"."""
        return self.signature.split(b"\0", 1)[0].decode("ascii", "replace")

    @property
    def model_name(self) -> str:
        return decode_name(self.model_name_raw)

    @model_name.setter
    def model_name(self, text: str) -> None:
        self.model_name_raw = encode_name(text, MODEL_NAME_SIZE)

    def ik_key_count(self) -> int:
        """IK on/off states over all property keys."""
        return sum(len(k.ik) for k in self.property_keys)


# ----------------------------------------------------------------------------------------------------------
# Names

def decode_name(raw: bytes) -> str:
    """The text of a fixed-size cp932 name field.

    Cut at the first NUL after byte 0 (the padding after it may be 0x00 or 0xFD); a name cut mid-character
    decodes with U+FFFD. MMD writes 0x00 as the first byte of a name cp932 cannot encode: that byte reads as
    U+FFFD. A field whose first two bytes are NUL is the empty name.
    """
    raw = bytes(raw)
    end = raw.find(b"\0", 1)
    if end >= 0:
        raw = raw[:end]
    if raw[:1] == b"\0":
        return "\ufffd" + raw[1:].decode("cp932", "replace") if len(raw) > 1 else ""
    return raw.decode("cp932", "replace")


def encode_name(text: str, size: int = NAME_SIZE) -> bytes:
    """`text` as a `size`-byte field the way MMD stores it: cp932, cut to `size` bytes (possibly in the middle
    of a character), NUL-padded; a name cp932 cannot encode gets 0x00 as its first byte. `name_problem` says
    whether a name needs either fix."""
    try:
        raw = text.encode("cp932")
    except UnicodeEncodeError:
        raw = text.encode("cp932", "replace")
        raw = b"\0" + raw[1:] if raw else raw
    return raw[:size].ljust(size, b"\0")


def name_problem(text: str, size: int = NAME_SIZE) -> str | None:
    """Why `encode_name(text, size)` does not keep `text` intact, or None."""
    try:
        n = len(text.encode("cp932"))
    except UnicodeEncodeError as e:
        return f"has {text[e.start:e.end]!r}, which cp932 cannot encode"
    if n > size:
        return f"is {n} cp932 bytes, longer than the {size} a VMD name holds (cut to {size})"
    return None


def encode_names(names: Sequence[str], size: int = NAME_SIZE, what: str = "bone") -> tuple[np.ndarray, list[str]]:
    """Fields for new keys: an `S{size}` array (one per name) and a warning for each distinct name that
    `encode_name` cannot keep intact (too long, or not encodable)."""
    out = np.zeros(len(names), f"S{size}")
    warnings: list[str] = []
    cache: dict[str, bytes] = {}
    for i, text in enumerate(names):
        raw = cache.get(text)
        if raw is None:
            raw = cache[text] = encode_name(text, size)
            problem = name_problem(text, size)
            if problem:
                warnings.append(f"{what} name {text!r} {problem}")
        out[i] = raw
    return out, warnings


def distinct_names(raw: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Distinct decoded names of a name field, in order of first appearance, and per key the index of its
    name in that list (in bulk: only distinct raw fields are decoded). Raw fields that decode to the same
    text share one entry."""
    raw = np.asarray(raw)
    if raw.size == 0:
        return [], np.zeros(0, np.intp)
    # compare the whole raw fields, bytes after the terminating NUL included
    opaque = raw.view(np.dtype((np.void, raw.dtype.itemsize)))
    uniq, first, inverse = np.unique(opaque, return_index=True, return_inverse=True)
    names: list[str] = []
    where: dict[str, int] = {}
    remap = np.empty(len(uniq), np.intp)
    for j in np.argsort(first, kind="stable"):  # names in order of first appearance in the file
        t = decode_name(bytes(uniq[j]))
        if t not in where:
            where[t] = len(names)
            names.append(t)
        remap[j] = where[t]
    return names, remap[inverse.reshape(-1)]


def key_names(raw: np.ndarray) -> list[str]:
    """The decoded name of every key, in file order."""
    names, index = distinct_names(raw)
    return [names[i] for i in index]


# ----------------------------------------------------------------------------------------------------------
# Interpolation blocks

_PARAM_OFFSETS = np.array([0, 4, 8, 12])  # x1, y1, x2, y2 within a row


def curves(interpolation: np.ndarray) -> np.ndarray:
    """Bézier control points per key: shape (..., 4 channels X/Y/Z/R, 4 values x1/y1/x2/y2), 0..127 in a
    valid block (the raw bytes are returned as they are). Curve c is read from row c."""
    ip = np.asarray(interpolation, np.uint8)
    rows = ip.reshape(ip.shape[:-1] + (4, 16))
    return rows[..., _PARAM_OFFSETS].copy()


def physics_bytes(interpolation: np.ndarray) -> np.ndarray:
    """Bytes 2 and 3 of row 0 per key: shape (..., 2)."""
    return np.asarray(interpolation, np.uint8)[..., 2:4].copy()


def physics_off(interpolation: np.ndarray) -> np.ndarray:
    """True where a key turns physics off (toggle bytes 0x63,0x0F: the animation drives the rigid body)."""
    pb = physics_bytes(interpolation)
    return (pb[..., 0] == PHYSICS_OFF[0]) & (pb[..., 1] == PHYSICS_OFF[1])


def build_interpolation(curve_points, physics_off: bool | np.ndarray = False,
                        physics: np.ndarray | Sequence[int] | None = None) -> np.ndarray:
    """Blocks as MMD writes them from curves of shape (..., 4, 4) (channel X/Y/Z/R, then x1/y1/x2/y2):
    row c = the logical sequence shifted left by c with trailing zeros; row 0 bytes 2–3 = physics toggle
    (0x63,0x0F where `physics_off`, else 0,0; or the raw byte pairs given as `physics`). Returns (..., 64)."""
    c = np.asarray(curve_points)
    if c.shape[-2:] != (4, 4):
        raise ValueError(f"curves must have shape (..., 4, 4), got {c.shape}")
    if c.size and (not np.all(np.isfinite(c)) or c.min() < 0 or c.max() > 127 or np.any(c != np.round(c))):
        raise ValueError("interpolation control points must be integers 0..127")
    c = c.astype(np.uint8)
    lead = c.shape[:-2]
    seq = np.swapaxes(c, -1, -2).reshape(lead + (16,))  # seq[4p + channel] = curve[channel][p]
    block = np.zeros(lead + (4, 16), np.uint8)
    for row in range(4):
        block[..., row, :16 - row] = seq[..., row:]
    block = block.reshape(lead + (64,))
    if physics is None:
        off = np.broadcast_to(np.asarray(physics_off, bool), lead)
        block[..., 2] = np.where(off, PHYSICS_OFF[0], PHYSICS_ON[0])
        block[..., 3] = np.where(off, PHYSICS_OFF[1], PHYSICS_ON[1])
    else:
        block[..., 2:4] = np.broadcast_to(np.asarray(physics, np.uint8), lead + (2,))
    return block


def linear_curves(count: int | None = None) -> np.ndarray:
    one = np.tile(np.array(LINEAR_CURVE, np.uint8), (4, 1))
    return one if count is None else np.tile(one, (count, 1, 1))


def new_bone_keys(count: int) -> np.ndarray:
    """`count` bone keys with identity rotation, zero position and linear curves (names and frames to fill)."""
    keys = np.zeros(count, BONE_KEY)
    keys["rotation"][:, 3] = 1
    keys["interpolation"] = build_interpolation(linear_curves(count))
    return keys


# ----------------------------------------------------------------------------------------------------------
# Reading

def _read_group(r: Reader, dtype: np.dtype, field: str) -> np.ndarray:
    n = r.count(f"{field} count", dtype.itemsize)
    return r.array(dtype, n, field)


def _read_property_keys(r: Reader) -> list[PropertyKey]:
    n = r.count("property key count", PROPERTY_KEY_SIZE)
    keys = []
    for i in range(n):  # variable-size records; the count check above bounds this loop by the bytes left
        where = f"property key {i}"
        frame = r.u32(f"{where} frame")
        visible = r.u8(f"{where} visible")
        k = r.count(f"{where} IK state count", IK_STATE.itemsize)
        keys.append(PropertyKey(frame, visible, r.array(IK_STATE, k, f"{where} IK states")))
    return keys


def read(data: bytes | bytearray | memoryview) -> Motion:
    r = Reader(data)
    if r.remaining() < SIGNATURE_SIZE + MODEL_NAME_SIZE:
        raise FormatError(f"file is {r.size} bytes, shorter than the {SIGNATURE_SIZE + MODEL_NAME_SIZE}-byte "
                          "VMD header", 0, "header")
    signature = r.bytes(SIGNATURE_SIZE, "signature")
    if not signature.startswith(SIGNATURE):
        found = quoted(signature.split(b"\0", 1)[0])  # outside the f-string: Python 3.11 allows no backslash there
        raise FormatError(f"expected {SIGNATURE.decode()!r}, found {found}", 0, "signature")
    m = Motion(signature=signature, model_name_raw=r.bytes(MODEL_NAME_SIZE, "model name"))
    m.bone_keys = _read_group(r, BONE_KEY, "bone keys")
    m.morph_keys = _read_group(r, MORPH_KEY, "morph keys")
    m.tail_groups = TAIL_NONE
    if not r.at_end():
        m.camera_keys = _read_group(r, CAMERA_KEY, "camera keys")
        m.light_keys = _read_group(r, LIGHT_KEY, "light keys")
        m.tail_groups = TAIL_CAMERA_LIGHT
    if not r.at_end():
        m.shadow_keys = _read_group(r, SHADOW_KEY, "self-shadow keys")
        m.tail_groups = TAIL_SHADOW
    if not r.at_end():
        m.property_keys = _read_property_keys(r)
        m.tail_groups = TAIL_PROPERTY
    if m.tail_groups < TAIL_PROPERTY:
        missing = ", ".join(_TAIL_GROUP_NAMES[m.tail_groups:])
        last = "morph keys" if m.tail_groups == TAIL_NONE else _TAIL_GROUP_NAMES[m.tail_groups - 1]
        m.warnings.append(f"file ends after the {last} group: no {missing} keys (kept as is)")
    m.trailing = r.bytes(r.remaining(), "trailing bytes")
    if m.trailing:
        m.warnings.append(f"{len(m.trailing)} bytes after the last group (kept)")
    return m


def read_file(path) -> Motion:
    return read(read_bytes(path))


# ----------------------------------------------------------------------------------------------------------
# Writing

def _keys(a: np.ndarray, dtype: np.dtype, what: str) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1:
        raise ExportError(f"{what}: expected a 1-D array of records, got shape {a.shape}")
    if a.dtype != dtype:
        if a.dtype.names is None or set(a.dtype.names) != set(dtype.names):
            raise ExportError(f"{what}: fields {a.dtype.names} do not match {dtype.names}")
        try:
            a = a.astype(dtype)
        except (TypeError, ValueError) as e:
            raise ExportError(f"{what}: {e}") from None
    return a


def _fixed(raw: bytes, size: int, what: str) -> bytes:
    raw = bytes(raw)
    if len(raw) > size:
        raise ExportError(f"{what} is {len(raw)} bytes, the field holds {size}")
    return raw.ljust(size, b"\0")


def tail_groups_needed(m: Motion) -> int:
    """The optional groups a writer must emit: those kept from the file, and every group up to the last one
    holding keys (or all of them when trailing bytes follow, which only exist after the property group)."""
    if m.trailing or m.property_keys:
        return TAIL_PROPERTY
    needed = TAIL_SHADOW if len(m.shadow_keys) else TAIL_CAMERA_LIGHT if len(m.camera_keys) or len(m.light_keys) \
        else TAIL_NONE
    return max(int(m.tail_groups), needed)


def write(m: Motion) -> bytes:
    if not 0 <= int(m.tail_groups) <= TAIL_PROPERTY:
        raise ExportError(f"tail_groups {m.tail_groups} is not 0..3")
    w = Writer()
    w.bytes(_fixed(m.signature, SIGNATURE_SIZE, "signature"))
    w.bytes(_fixed(m.model_name_raw, MODEL_NAME_SIZE, "model name"))
    for keys, dtype, what in ((m.bone_keys, BONE_KEY, "bone keys"), (m.morph_keys, MORPH_KEY, "morph keys")):
        keys = _keys(keys, dtype, what)
        w.u32(len(keys))
        w.array(keys)
    groups = tail_groups_needed(m)
    if groups >= TAIL_CAMERA_LIGHT:
        for keys, dtype, what in ((m.camera_keys, CAMERA_KEY, "camera keys"), (m.light_keys, LIGHT_KEY, "light keys")):
            keys = _keys(keys, dtype, what)
            w.u32(len(keys))
            w.array(keys)
    if groups >= TAIL_SHADOW:
        keys = _keys(m.shadow_keys, SHADOW_KEY, "self-shadow keys")
        w.u32(len(keys))
        w.array(keys)
    if groups >= TAIL_PROPERTY:
        w.u32(len(m.property_keys))
        for i, k in enumerate(m.property_keys):
            ik = _keys(k.ik, IK_STATE, f"property key {i} IK states")
            w.u32(int(k.frame))
            w.u8(int(k.visible))
            w.u32(len(ik))
            w.array(ik)
    w.bytes(bytes(m.trailing))
    return w.getvalue()


def all_frames(m: Motion) -> np.ndarray:
    """Frame numbers of every key of every kind (bone, morph, camera, light, self-shadow, property)."""
    parts: Iterable[np.ndarray] = (m.bone_keys["frame"], m.morph_keys["frame"], m.camera_keys["frame"],
                                   m.light_keys["frame"], m.shadow_keys["frame"],
                                   np.array([k.frame for k in m.property_keys], np.uint32))
    return np.concatenate([np.asarray(p, np.int64) for p in parts])
