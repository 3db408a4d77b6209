"""UANI / UAN2 skeletal animation codec: bytes <-> records that mirror the file field for field.

Three layouts share the `.ani` extension (docs/urho.md §4.1–§4.4):

* ``urho3d``: classic Urho3D. ``"UANI"``, cstring animation name, f32 length, u32 track count; per track a
  cstring bone name, a u8 channel mask (1 position, 2 rotation, 4 scale), a u32 key count and keys holding
  the time and only the masked channels. Nothing follows the last track.
* ``urhox``: the versioned variant (docs/urho.md §4.2). ``"UANI"``, u32 version (2), f32 length, u32 track count; per
  track a u32-length UTF-8 name, a u8 interpolation (0 step, 1 linear), a u32 key count and keys of
  time + position(3) + rotation(w, x, y, z) + scale(3); then u32 trigger count and u32 metadata count.
* ``rbfx``: ``"UAN2"`` + u32 version (1..4), then the classic layout with per-track weights (v3: one f32,
  v4: position/rotation/scale f32) and, from v2 on, a u32 count of variant (attribute) tracks.

Telling ``urhox`` from ``urho3d``: after ``"UANI"``, ``data[4]`` in 1..15 and ``data[5:8] == b"\\0\\0\\0"``
means a u32 version; anything else is the classic cstring name (docs/urho.md §4.4).

What is kept raw, so that read -> write gives back the same bytes:

* rbfx variant tracks (``Animation.variant_tracks``): each is parsed only far enough to find its end and is
  stored as its bytes; a warning "N variant tracks skipped" is added.
* UrhoX triggers/metadata: their layout is unknown, so when either count is non-zero everything after the
  two counts is stored in ``Animation.trigger_data`` with the warning "UrhoX trigger layout unknown".
* Bytes after the end of the layout (``Animation.trailing``), with a warning.

Floats that are not in numpy arrays (``length``) are kept as ``np.float32`` so that any bit pattern,
signalling NaNs included, is written back unchanged.

API: ``read(data) -> Animation``; the warnings of the read are in ``Animation.warnings`` (a list of
strings, not written to the file). ``write(anim) -> bytes`` writes the variant the record holds; all three
are writable (rbfx bone tracks are rebuilt, its variant tracks written back from their raw bytes).
``check(anim)`` lists values that the layout allows but the meaning forbids (non-finite floats, keys out
of time order); the codec itself keeps them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...core.binary import Reader, Writer
from ...core.errors import FormatError

VARIANT_URHOX = "urhox"
VARIANT_URHO3D = "urho3d"
VARIANT_RBFX = "rbfx"

MAGIC_UANI = b"UANI"
MAGIC_UAN2 = b"UAN2"

CHANNEL_POSITION = 1
CHANNEL_ROTATION = 2
CHANNEL_SCALE = 4
CHANNELS_ALL = CHANNEL_POSITION | CHANNEL_ROTATION | CHANNEL_SCALE

INTERPOLATION_STEP = 0
INTERPOLATION_LINEAR = 1

URHOX_VERSION = 2
RBFX_VERSIONS = range(1, 5)
RBFX_VARIANT_TRACK_VERSION = 2
RBFX_TRACK_WEIGHT_VERSION = 3
RBFX_CHANNEL_WEIGHTS_VERSION = 4

URHOX_TRIGGER_WARNING = "UrhoX trigger layout unknown"


def key_dtype(channel_mask: int) -> np.dtype:
    """The on-disk key record for a channel mask: f32 time, then the masked channels in P, R, S order.

    Only the three low bits select channels: the engine tests the bits, so higher bits change nothing
    in the layout (they are kept in ``Track.channel_mask`` and written back).
    """
    fields = [("time", "<f4")]
    if channel_mask & CHANNEL_POSITION:
        fields.append(("position", "<f4", (3,)))
    if channel_mask & CHANNEL_ROTATION:
        fields.append(("rotation", "<f4", (4,)))
    if channel_mask & CHANNEL_SCALE:
        fields.append(("scale", "<f4", (3,)))
    return np.dtype(fields)


URHOX_KEY_DTYPE = key_dtype(CHANNELS_ALL)  # 44 bytes: time, T(3), R(w, x, y, z), S(3)


@dataclass
class Track:
    """One bone track.

    ``channel_mask`` is the classic/rbfx byte; for UrhoX, whose keys always hold all three channels, it
    is 7 and ``interpolation`` holds the file's byte (0 step, 1 linear). ``weights`` is rbfx-only:
    shape (1,) for version 3, (position, rotation, scale) for version 4, None otherwise.
    Arrays: ``times`` (K,), ``positions`` (K, 3), ``rotations`` (K, 4) as w, x, y, z, ``scales`` (K, 3),
    all float32; a channel outside the mask is None.
    """

    name: str
    times: np.ndarray
    positions: np.ndarray | None = None
    rotations: np.ndarray | None = None
    scales: np.ndarray | None = None
    channel_mask: int = CHANNELS_ALL
    interpolation: int | None = None
    weights: np.ndarray | None = None

    @property
    def key_count(self) -> int:
        return int(len(self.times))


@dataclass
class VariantTrack:
    """An rbfx variant (attribute) track, kept as its bytes; the other fields are for reporting only."""

    name: str
    variant_type: int
    interpolation: int
    key_count: int
    raw: bytes


@dataclass
class Animation:
    """A whole `.ani` file. ``name`` is empty for UrhoX (its header has no name); ``version`` is None for
    classic Urho3D. ``trigger_count``/``metadata_count``/``trigger_data`` are UrhoX-only."""

    variant: str
    version: int | None
    name: str
    length: float
    tracks: list[Track] = field(default_factory=list)
    variant_tracks: list[VariantTrack] = field(default_factory=list)
    trigger_count: int = 0
    metadata_count: int = 0
    trigger_data: bytes = b""
    trailing: bytes = b""
    warnings: list[str] = field(default_factory=list)


# -- reading ------------------------------------------------------------------------------------------

def detect_variant(data: bytes) -> str:
    """'urhox', 'urho3d' or 'rbfx' from the first 8 bytes; FormatError if the magic is neither."""
    head = bytes(data[:4])
    if head == MAGIC_UAN2:
        return VARIANT_RBFX
    if head != MAGIC_UANI:
        raise FormatError(f"expected 'UANI' or 'UAN2', found {head!r}", 0, "magic")
    if len(data) >= 8 and 1 <= data[4] <= 15 and bytes(data[5:8]) == b"\0\0\0":
        return VARIANT_URHOX
    return VARIANT_URHO3D


def read(data: bytes) -> Animation:
    variant = detect_variant(data)
    r = Reader(data)
    r.pos = 4
    if variant == VARIANT_URHOX:
        anim = _read_urhox(r)
    else:
        anim = _read_classic(r, variant)
    if not r.at_end():
        anim.trailing = r.bytes(r.remaining(), "trailing bytes")
        anim.warnings.append(f"{len(anim.trailing)} bytes after the end of the animation kept raw")
    return anim


def _f32_exact(r: Reader, field: str) -> np.float32:
    return r.array("<f4", 1, field)[0]


def _read_keys(r: Reader, dtype: np.dtype, field: str) -> np.ndarray:
    count = r.count(f"{field} key count", dtype.itemsize)
    return r.array(dtype, count, f"{field} keys")


def _track_from_keys(name: str, keys: np.ndarray, channel_mask: int) -> Track:
    names = keys.dtype.names

    def column(key: str) -> np.ndarray | None:
        return np.ascontiguousarray(keys[key]) if key in names else None

    return Track(name=name, times=column("time"), positions=column("position"),
                 rotations=column("rotation"), scales=column("scale"), channel_mask=channel_mask)


def _read_urhox(r: Reader) -> Animation:
    version = r.u32("version")
    anim = Animation(VARIANT_URHOX, version, "", _f32_exact(r, "length"))
    if version != URHOX_VERSION:
        anim.warnings.append(f"UrhoX version {version}: only version {URHOX_VERSION} is documented; "
                             "read with its layout")
    # the smallest track: u32 name length, u8 interpolation, u32 key count
    track_count = r.count("track count", 9)
    for i in range(track_count):
        name = r.lstring(f"track {i} name")
        interpolation = r.u8(f"track {i} interpolation")
        keys = _read_keys(r, URHOX_KEY_DTYPE, f"track {i}")
        track = _track_from_keys(name, keys, CHANNELS_ALL)
        track.interpolation = interpolation
        if interpolation not in (INTERPOLATION_STEP, INTERPOLATION_LINEAR):
            anim.warnings.append(f"track {name!r}: interpolation byte {interpolation} is neither "
                                 "0 (step) nor 1 (linear)")
        anim.tracks.append(track)
    anim.trigger_count = r.u32("trigger count")
    anim.metadata_count = r.u32("metadata count")
    if anim.trigger_count or anim.metadata_count:
        anim.trigger_data = r.bytes(r.remaining(), "triggers and metadata")
        anim.warnings.append(URHOX_TRIGGER_WARNING)
    return anim


def _read_classic(r: Reader, variant: str) -> Animation:
    version = None
    if variant == VARIANT_RBFX:
        at = r.pos
        version = r.u32("version")
        if version not in RBFX_VERSIONS:
            raise FormatError(f"UAN2 version {version} is not one of 1..4", at, "version")
    name = r.cstring("animation name")
    anim = Animation(variant, version, name, _f32_exact(r, "length"))
    n_weights = weight_count(version)
    # the smallest track: empty cstring, u8 mask, weights, u32 key count
    track_count = r.count("track count", 6 + 4 * n_weights)
    for i in range(track_count):
        track_name = r.cstring(f"track {i} name")
        mask = r.u8(f"track {i} channel mask")
        weights = r.array("<f4", n_weights, f"track {i} weights") if n_weights else None
        keys = _read_keys(r, key_dtype(mask), f"track {i}")
        track = _track_from_keys(track_name, keys, mask)
        track.weights = weights
        anim.tracks.append(track)
    if version is not None and version >= RBFX_VARIANT_TRACK_VERSION:
        # the smallest variant track: empty cstring, type, interpolation, tension, [weight], key count
        count = r.count("variant track count", 11 + (4 if version >= RBFX_TRACK_WEIGHT_VERSION else 0))
        for i in range(count):
            anim.variant_tracks.append(_read_variant_track(r, version, i))
        if count:
            anim.warnings.append(f"{count} variant tracks skipped")
    return anim


def weight_count(version: int | None) -> int:
    if version is None or version < RBFX_TRACK_WEIGHT_VERSION:
        return 0
    return 3 if version >= RBFX_CHANNEL_WEIGHTS_VERSION else 1


# -- rbfx variant tracks: parsed only to find where they end -------------------------------------------

# Bytes of one value per rbfx VariantType (Urho3D/Container/Variant.h order), for the fixed-size ones.
# NONE and the types the engine's binary reader skips (VARIANTCURVE, STRINGVARIANTMAP) read nothing.
_VARIANT_FIXED_SIZE = {
    0: 0,    # NONE
    1: 4,    # INT
    2: 1,    # BOOL
    3: 4,    # FLOAT
    4: 8,    # VECTOR2
    5: 12,   # VECTOR3
    6: 16,   # VECTOR4
    7: 16,   # QUATERNION
    8: 16,   # COLOR
    11: 4,   # VOIDPTR (written as a u32)
    16: 16,  # INTRECT
    17: 8,   # INTVECTOR2
    18: 4,   # PTR (written as a u32)
    19: 36,  # MATRIX3
    20: 48,  # MATRIX3X4
    21: 64,  # MATRIX4
    22: 8,   # DOUBLE
    24: 16,  # RECT
    25: 12,  # INTVECTOR3
    26: 8,   # INT64
    28: 0,   # VARIANTCURVE
    29: 0,   # STRINGVARIANTMAP
}
_VAR_STRING, _VAR_BUFFER, _VAR_RESOURCEREF, _VAR_RESOURCEREFLIST = 9, 10, 12, 13
_VAR_VARIANTVECTOR, _VAR_VARIANTMAP, _VAR_STRINGVECTOR, _VAR_CUSTOM = 14, 15, 23, 27
_VARIANT_TYPE_COUNT = 30
_TANGENT_SPLINE = 3
_MAX_VARIANT_DEPTH = 16


def _read_variant_track(r: Reader, version: int, index: int) -> VariantTrack:
    start = r.pos
    where = f"variant track {index}"
    name = r.cstring(f"{where} name")
    at = r.pos
    vtype = r.u8(f"{where} type")
    if vtype >= _VARIANT_TYPE_COUNT:
        raise FormatError(f"variant type {vtype} is not one of 0..{_VARIANT_TYPE_COUNT - 1}", at, f"{where} type")
    interpolation = r.u8(f"{where} interpolation")
    r.bytes(4, f"{where} spline tension")
    if version >= RBFX_TRACK_WEIGHT_VERSION:
        r.bytes(4, f"{where} weight")
    fixed = _VARIANT_FIXED_SIZE.get(vtype)
    tangents = interpolation == _TANGENT_SPLINE
    key_size = 4 + (fixed or 0) * (3 if tangents else 1)
    count = r.count(f"{where} key count", key_size)
    if fixed is not None:
        r.bytes(count * key_size, f"{where} keys")
    else:
        for j in range(count):
            r.bytes(4, f"{where} key {j} time")
            _skip_variant(r, vtype, f"{where} key {j} value", 0)
        if tangents:
            for j in range(count):
                _skip_variant(r, vtype, f"{where} key {j} in-tangent", 0)
                _skip_variant(r, vtype, f"{where} key {j} out-tangent", 0)
    return VariantTrack(name, vtype, interpolation, count, r.data[start:r.pos])


def _vle(r: Reader, field: str, min_item_size: int) -> int:
    """Urho3D's variable-length count (7 bits per byte, at most 4 bytes), checked against the bytes left."""
    at = r.pos
    value = 0
    for shift in (0, 7, 14):
        b = r.u8(field)
        value |= (b & 0x7F) << shift
        if b < 0x80:
            break
    else:
        value |= r.u8(field) << 21
    if value * min_item_size > r.remaining():
        raise FormatError(f"count {value} needs at least {value * min_item_size} bytes, {r.remaining()} left",
                          at, field)
    return value


def _skip_variant(r: Reader, vtype: int, field: str, depth: int) -> None:
    if depth > _MAX_VARIANT_DEPTH:
        raise FormatError(f"variants nested deeper than {_MAX_VARIANT_DEPTH}", r.pos, field)
    fixed = _VARIANT_FIXED_SIZE.get(vtype)
    if fixed is not None:
        r.bytes(fixed, field)
    elif vtype == _VAR_STRING:
        r.cstring(field)
    elif vtype == _VAR_BUFFER:
        r.bytes(_vle(r, f"{field} size", 1), field)
    elif vtype == _VAR_RESOURCEREF:
        r.u32(f"{field} type hash")
        r.cstring(f"{field} name")
    elif vtype in (_VAR_RESOURCEREFLIST, _VAR_STRINGVECTOR):
        if vtype == _VAR_RESOURCEREFLIST:
            r.u32(f"{field} type hash")
        for _ in range(_vle(r, f"{field} count", 1)):
            r.cstring(f"{field} name")
    elif vtype in (_VAR_VARIANTVECTOR, _VAR_VARIANTMAP):
        is_map = vtype == _VAR_VARIANTMAP
        for k in range(_vle(r, f"{field} count", 5 if is_map else 1)):
            if is_map:
                r.u32(f"{field} key {k}")
            at = r.pos
            item_type = r.u8(f"{field} item {k} type")
            if item_type >= _VARIANT_TYPE_COUNT:
                raise FormatError(f"variant type {item_type} is not one of 0..{_VARIANT_TYPE_COUNT - 1}",
                                  at, f"{field} item {k} type")
            _skip_variant(r, item_type, f"{field} item {k}", depth + 1)
    elif vtype == _VAR_CUSTOM:
        at = r.pos
        if r.u32(f"{field} custom type hash"):
            raise FormatError("a custom (serializable object) variant has no known size", at, field)
    else:  # pragma: no cover - every type below _VARIANT_TYPE_COUNT is handled above
        raise FormatError(f"variant type {vtype} has no known size", r.pos, field)


# -- writing ------------------------------------------------------------------------------------------

def write(anim: Animation) -> bytes:
    """The bytes of ``anim`` in the variant it holds. Raises ValueError naming the track when the record is
    inconsistent (an array missing for a masked channel, shapes that disagree, weights that do not match
    the rbfx version). Values are written as held: NaN and the like are for ``check`` and the exporters."""
    w = Writer()
    if anim.variant == VARIANT_URHOX:
        _write_urhox(w, anim)
    elif anim.variant in (VARIANT_URHO3D, VARIANT_RBFX):
        _write_classic(w, anim)
    else:
        raise ValueError(f"unknown UANI variant {anim.variant!r}")
    w.bytes(anim.trailing)
    return w.getvalue()


def _write_f32(w: Writer, value) -> None:
    w.array(np.asarray(value, dtype="<f4").reshape(1))


def _keys_of(track: Track, dtype: np.dtype) -> np.ndarray:
    times = np.asarray(track.times)
    if times.ndim != 1:
        raise ValueError(f"track {track.name!r}: times must have shape (K,), not {times.shape}")
    keys = np.zeros(len(times), dtype)
    keys["time"] = times
    held = {"position": track.positions, "rotation": track.rotations, "scale": track.scales}
    for key, values in held.items():
        if key in dtype.names:
            width = dtype[key].shape[0]
            if values is None:
                raise ValueError(f"track {track.name!r}: channel mask {track.channel_mask} includes {key} "
                                 "but the track has none")
            values = np.asarray(values)
            if values.shape != (len(times), width):
                raise ValueError(f"track {track.name!r}: {key} shape {values.shape}, expected "
                                 f"{(len(times), width)}")
            keys[key] = values
        elif values is not None:
            raise ValueError(f"track {track.name!r}: has {key} keys but channel mask {track.channel_mask} "
                             "excludes them")
    return keys


def _write_urhox(w: Writer, anim: Animation) -> None:
    if anim.version is None or not 1 <= anim.version <= 15:
        raise ValueError(f"UrhoX version must be 1..15 (2 is the documented one), not {anim.version}")
    if anim.name:
        raise ValueError("the UrhoX layout has no animation name; clear Animation.name")
    if anim.variant_tracks:
        raise ValueError("variant tracks exist only in rbfx UAN2 files")
    w.bytes(MAGIC_UANI)
    w.u32(anim.version)
    _write_f32(w, anim.length)
    w.u32(len(anim.tracks))
    for track in anim.tracks:
        if track.channel_mask != CHANNELS_ALL:
            raise ValueError(f"track {track.name!r}: UrhoX keys hold all channels; channel mask must be 7")
        if track.weights is not None:
            raise ValueError(f"track {track.name!r}: weights exist only in rbfx UAN2 version 3 and 4")
        if track.interpolation is None:
            raise ValueError(f"track {track.name!r}: UrhoX tracks need an interpolation byte")
        w.lstring(track.name)
        w.u8(track.interpolation)
        w.u32(track.key_count)
        w.array(_keys_of(track, URHOX_KEY_DTYPE))
    if not (anim.trigger_count or anim.metadata_count) and anim.trigger_data:
        raise ValueError("UrhoX trigger data is kept only when the trigger or metadata count is non-zero")
    w.u32(anim.trigger_count)
    w.u32(anim.metadata_count)
    w.bytes(anim.trigger_data)


def _write_classic(w: Writer, anim: Animation) -> None:
    if anim.trigger_count or anim.metadata_count or anim.trigger_data:
        raise ValueError("trigger and metadata counts exist only in UrhoX files")
    if anim.variant == VARIANT_RBFX:
        if anim.version not in RBFX_VERSIONS:
            raise ValueError(f"UAN2 version must be 1..4, not {anim.version}")
        w.bytes(MAGIC_UAN2)
        w.u32(anim.version)
    else:
        if anim.version is not None:
            raise ValueError("classic Urho3D UANI has no version; use variant 'rbfx' for UAN2")
        w.bytes(MAGIC_UANI)
    w.cstring(anim.name)
    _write_f32(w, anim.length)
    w.u32(len(anim.tracks))
    n_weights = weight_count(anim.version)
    for track in anim.tracks:
        if not 0 <= track.channel_mask <= 255:
            raise ValueError(f"track {track.name!r}: channel mask {track.channel_mask} is not a byte")
        if track.interpolation is not None:
            raise ValueError(f"track {track.name!r}: Urho3D/rbfx bone tracks have no interpolation byte")
        w.cstring(track.name)
        w.u8(track.channel_mask)
        if n_weights:
            weights = None if track.weights is None else np.asarray(track.weights, "<f4")
            if weights is None or weights.shape != (n_weights,):
                raise ValueError(f"track {track.name!r}: UAN2 version {anim.version} needs {n_weights} "
                                 "weight(s)")
            w.array(weights)
        elif track.weights is not None:
            raise ValueError(f"track {track.name!r}: weights need UAN2 version 3 or 4")
        w.u32(track.key_count)
        w.array(_keys_of(track, key_dtype(track.channel_mask)))
    if anim.version is not None and anim.version >= RBFX_VARIANT_TRACK_VERSION:
        w.u32(len(anim.variant_tracks))
        for vt in anim.variant_tracks:
            w.bytes(vt.raw)
    elif anim.variant_tracks:
        raise ValueError("variant tracks need UAN2 version 2 or later")


# -- semantic checks ----------------------------------------------------------------------------------

def check(anim: Animation) -> list[str]:
    """Values the layout allows but the meaning forbids, each naming the track and key."""
    problems: list[str] = []
    if not np.isfinite(np.float32(anim.length)):
        problems.append(f"animation length is {float(anim.length)}")
    for track in anim.tracks:
        arrays = {"time": track.times, "position": track.positions, "rotation": track.rotations,
                  "scale": track.scales, "weight": track.weights}
        for key, values in arrays.items():
            if values is None or not len(values):
                continue
            bad = ~np.isfinite(np.asarray(values, np.float32))
            if bad.any():
                first = int(np.argwhere(bad)[0][0])
                where = "" if key == "weight" else f" key {first}"
                problems.append(f"track {track.name!r}{where}: non-finite {key}")
        if len(track.times) > 1:
            back = np.flatnonzero(np.diff(track.times) < 0)
            if len(back):
                problems.append(f"track {track.name!r} key {int(back[0]) + 1}: time goes backwards")
    return problems
