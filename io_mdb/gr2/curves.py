"""Granny 2 animation curves (docs/nwn2.md §5.5): each curve format's fields → knots and controls, evaluated at any
time as Granny evaluates them, and our own encoder of each format (for tests and the writer).

A curve is a B-spline of its header's degree whose knot array holds one time per control. For a time t Granny
takes the first knot after t (index I, clamped to the last), the knots I−d … I+d−1 and the controls I−d … I,
repeating the first (last) knot and control where the window runs off the curve. In textbook terms that is the
B-spline with knots u_m = knot[m − 1] and controls P_m = control[m], indices clamped to the curve. Quantised
formats look the knot up among their integer knots (floor of t · OneOverKnotScale). Orientation curves evaluate
with Granny's one-step normalisation q · (3 − |q|²) / 2, after making the window's quaternions continuous in
sign when the window was padded.

```
DaIdentity       i16 Dimension                                   the identity (no knots)
DaConstant32f    i16 padding; f32 Controls[n]                    one value of n components
D3Constant32f    i16 padding; f32 Controls[3]
D4Constant32f    i16 padding; f32 Controls[4]
DaK32fC32f       i16 padding; f32 Knots[n]; f32 Controls[n·dim]
DaK16uC16u       u16 OneOverKnotScaleTrunc; f32 ControlScaleOffsets[2·dim] (scales, then offsets);
DaK8uC8u           u16 / u8 KnotsControls[n + n·dim]             (knots, then controls)
D3K16uC16u       u16 OneOverKnotScaleTrunc; f32 ControlScales[3]; f32 ControlOffsets[3];
D3K8uC8u           u16 / u8 KnotsControls[4n]
D4nK16uC15u      u16 ScaleOffsetTableEntries; f32 OneOverKnotScale; u16 / u8 KnotsControls[4n]
D4nK8uC7u          (a unit quaternion in three values: see `_quaternions`)
```

`OneOverKnotScaleTrunc` is the upper half of a float32 (its lower 16 bits zero); a knot is its integer over that
scale, a control offset + scale · integer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ...core.errors import FormatError

FORMAT_NAMES = ("DaKeyframes32f", "DaK32fC32f", "DaIdentity", "DaConstant32f", "D3Constant32f", "D4Constant32f",
                "DaK16uC16u", "DaK8uC8u", "D4nK16uC15u", "D4nK8uC7u", "D3K16uC16u", "D3K8uC8u")
FORMAT_NUMBERS = {name: number for number, name in enumerate(FORMAT_NAMES)}
HEADER_PREFIX = "CurveDataHeader_"

_R = np.float32(0.707106781)  # 1/√2 as Granny rounds it
# Granny's 16 (scale, offset) pairs for a quaternion component; a curve picks one per component with a nibble
# of ScaleOffsetTableEntries (component 0 in the low nibble). The second half is the first negated.
_QUATERNION_TABLE = np.array([
    (2.0, -1.0), (1.0, -0.5), (0.5, -0.75), (0.5, -0.25), (0.5, 0.25), (0.25, -0.25), (0.25, -0.125), (0.25, 0.0),
], np.float32) * _R
QUATERNION_TABLE = np.concatenate([_QUATERNION_TABLE, -_QUATERNION_TABLE])
QUATERNION_BITS = {"D4nK16uC15u": 15, "D4nK8uC7u": 7}
INTEGER_TYPES = {"16u": np.uint16, "8u": np.uint8}
MAX_DEGREE = 6  # Granny's sampler holds degree + 1 < 8 knots of a window


@dataclass
class Curve:
    """One curve decoded: what Granny samples. `kind` is "identity", "constant" or "bspline"; a constant has one
    control; `encoded_knots` are the quantised knots Granny searches (None for float knots)."""
    format: str
    degree: int
    dimension: int
    knots: np.ndarray             # (n,) float32 seconds
    controls: np.ndarray          # (n, dimension) float32
    kind: str = "bspline"
    encoded_knots: np.ndarray | None = None
    one_over_knot_scale: float = 1.0


def _trunc_scale(trunc: int) -> np.float32:
    return np.frombuffer(np.uint32(int(trunc) << 16).tobytes(), np.float32)[0]


def _array(fields: Mapping, name: str, fmt: str) -> np.ndarray:
    value = fields.get(name)
    if isinstance(value, list) and not value:
        return np.zeros(0, np.float32)
    if not isinstance(value, np.ndarray):
        raise FormatError(f"{fmt} curve has no {name} array", None, f"CurveData.{name}")
    return value[value.dtype.names[0]] if value.dtype.names else value


def _split(values: np.ndarray, dimension: int, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """Knots, then `dimension` values per knot, of a quantised KnotsControls array."""
    n = len(values) // (dimension + 1)
    if n * (dimension + 1) != len(values):
        raise FormatError(f"{fmt}: {len(values)} knots and controls are not a multiple of {dimension + 1}", None,
                          "CurveData.KnotsControls")
    return values[:n], values[n:].reshape(n, dimension)


def _quaternions(encoded: np.ndarray, entries: int, bits: int) -> np.ndarray:
    """(n, 3) integers → (n, 4) quaternions x y z w: the top bit of the first value is the sign of the component
    left out, the top bits of the second and third its index (high, low); the other three follow it in order
    (index + 1, + 2, + 3 mod 4), each offset + scale · (value without its top bit) / (2^bits − 1), the scale and
    offset of the component from the table entry its nibble of `entries` selects; the left-out component is
    √(1 − the others' squares)."""
    top = 1 << bits
    selectors = (entries >> (4 * np.arange(4))) & 0xF
    scales = QUATERNION_TABLE[selectors, 0] * np.float32(1.0 / (top - 1))
    offsets = QUATERNION_TABLE[selectors, 1]
    e = encoded.astype(np.int64)
    missing = ((e[:, 1] & top) >> (bits - 1)) | ((e[:, 2] & top) >> bits)
    out = np.zeros((len(e), 4), np.float32)
    rows = np.arange(len(e))
    for k in range(3):
        component = (missing + 1 + k) & 3
        out[rows, component] = offsets[component] + scales[component] * (e[:, k] & (top - 1)).astype(np.float32)
    rest = np.sqrt(np.maximum(np.float32(1) - (out * out).sum(axis=1), 0)).astype(np.float32)
    out[rows, missing] = np.where(e[:, 0] & top, -rest, rest)
    return out


def format_of(curve_data: Mapping) -> str:
    """The format a CurveData object's type names in its header member (`CurveDataHeader_<format>`)."""
    type_ = getattr(curve_data, "type", None)
    name = type_[0].name if type_ else next(iter(curve_data), "")
    if not name.startswith(HEADER_PREFIX) or name[len(HEADER_PREFIX):] not in FORMAT_NUMBERS:
        raise FormatError(f"curve type {name!r} is not a Granny curve format", None, "CurveData")
    return name[len(HEADER_PREFIX):]


def decode(curve_data: Mapping, identity_dimension: int | None = None) -> Curve:
    """A CurveData object (a decoded `gr2.Struct`, or our encoder's fields) as knots and controls."""
    fmt = format_of(curve_data)
    header = curve_data[HEADER_PREFIX + fmt]
    degree = int(header["Degree"])
    if degree > MAX_DEGREE:
        raise FormatError(f"{fmt}: degree {degree} is above Granny's {MAX_DEGREE}", None, "CurveData.Degree")
    if fmt == "DaIdentity":
        dim = int(curve_data["Dimension"])
        return Curve(fmt, 0, dim, np.zeros(0, np.float32), np.zeros((0, dim), np.float32), "identity")
    if fmt.endswith("Constant32f"):
        controls = _array(curve_data, "Controls", fmt).astype(np.float32)
        return Curve(fmt, 0, len(controls), np.zeros(1, np.float32), controls[None, :], "constant")
    if fmt == "DaK32fC32f":
        knots = _array(curve_data, "Knots", fmt).astype(np.float32)
        flat = _array(curve_data, "Controls", fmt).astype(np.float32)
        if len(knots) == 0:
            return Curve(fmt, degree, identity_dimension or 0, knots, np.zeros((0, 0), np.float32), "identity")
        if len(flat) % len(knots):
            raise FormatError(f"{len(flat)} controls for {len(knots)} knots", None, "CurveData.Controls")
        return Curve(fmt, degree, len(flat) // len(knots), knots, flat.reshape(len(knots), -1),
                     "constant" if len(knots) == 1 else "bspline")
    if fmt == "DaKeyframes32f":
        raise FormatError("DaKeyframes32f curves (keyframes without knots) are not read: no NWN2 file has one",
                          None, "CurveData")
    values = _array(curve_data, "KnotsControls", fmt)
    if fmt.startswith("D4n"):
        scale = np.float32(curve_data["OneOverKnotScale"])
        encoded, controls = _split(values, 3, fmt)
        controls = _quaternions(controls, int(curve_data["ScaleOffsetTableEntries"]), QUATERNION_BITS[fmt])
    else:
        scale = _trunc_scale(curve_data["OneOverKnotScaleTrunc"])
        if fmt.startswith("D3"):
            scales = np.asarray(curve_data["ControlScales"], np.float32)
            offsets = np.asarray(curve_data["ControlOffsets"], np.float32)
        else:
            pairs = _array(curve_data, "ControlScaleOffsets", fmt).astype(np.float32)
            scales, offsets = pairs[:len(pairs) // 2], pairs[len(pairs) // 2:]
        encoded, controls = _split(values, len(scales), fmt)
        controls = offsets + scales * controls.astype(np.float32)
    if not np.isfinite(scale) or scale <= 0:
        raise FormatError(f"{fmt}: knot scale {scale} is not a positive number", None, "CurveData.OneOverKnotScale")
    knots = (np.float32(1) / scale) * encoded.astype(np.float32)
    return Curve(fmt, degree, controls.shape[1], knots, controls.astype(np.float32),
                 "constant" if len(knots) == 1 else "bspline", encoded.copy(), float(scale))


def find_knots(curve: Curve, times: np.ndarray) -> np.ndarray:
    """Granny's knot index for each time: the first knot after it, clamped to the last knot."""
    t = np.asarray(times, np.float32)
    if curve.encoded_knots is not None:
        top = np.iinfo(curve.encoded_knots.dtype).max
        q = np.clip(np.floor(t * np.float32(curve.one_over_knot_scale)), 0, top).astype(np.int64)
        index = np.searchsorted(curve.encoded_knots.astype(np.int64), q, side="right")
    else:
        index = np.searchsorted(curve.knots, np.abs(t), side="right")
    return np.minimum(index, len(curve.knots) - 1)


def _continuous(window: np.ndarray) -> np.ndarray:
    """Granny's sign fix of a padded window of quaternions: each flipped when its dot with the one before
    (after that one's fix) is negative."""
    out = window.copy()
    for k in range(1, out.shape[1]):
        flip = (out[:, k - 1] * out[:, k]).sum(axis=1) < 0
        out[flip, k] *= -1
    return out


def evaluate(curve: Curve, times, identity=None, normalize: bool = False) -> np.ndarray:
    """(m, dimension) float64 values at `times` (seconds). `identity` is what an identity curve gives;
    `normalize` (orientations) applies Granny's padded-window sign fix and one-step normalisation."""
    t = np.atleast_1d(np.asarray(times, np.float64))
    if curve.kind == "identity":
        value = np.asarray(identity if identity is not None else np.zeros(curve.dimension), np.float64)
        return np.broadcast_to(value, (len(t), len(value))).copy()
    if curve.kind == "constant" or len(curve.knots) == 1:
        return np.broadcast_to(curve.controls[0].astype(np.float64), (len(t), curve.dimension)).copy()
    d, n = curve.degree, len(curve.knots)
    index = find_knots(curve, t)
    offsets = np.arange(-d, d)
    window = index[:, None] + offsets[None, :]          # knots I−d … I+d−1
    knots = curve.knots.astype(np.float64)[np.clip(window, 0, n - 1)]
    control_index = index[:, None] + np.arange(-d, 1)[None, :]
    points = curve.controls.astype(np.float64)[np.clip(control_index, 0, n - 1)]
    if normalize and curve.dimension == 4:
        padded = (index - d < 0) | (index + d > n)
        points[padded] = _continuous(points[padded])
    # de Boor on the window: knots[k] is u_{j−d+k} with the span [knots[d−1], knots[d]]
    for level in range(1, d + 1):
        for r in range(d, level - 1, -1):
            low, high = knots[:, r - 1], knots[:, r + d - level]
            span = high - low
            alpha = np.divide(t - low, span, out=np.zeros_like(t), where=span != 0)[:, None]
            points[:, r] = (1 - alpha) * points[:, r - 1] + alpha * points[:, r]
    out = points[:, d]
    if normalize and curve.dimension == 4:
        out = out * ((3.0 - (out * out).sum(axis=1)) * 0.5)[:, None]
    return out


def _header(fmt: str, degree: int) -> dict:
    return {"Format": FORMAT_NUMBERS[fmt], "Degree": degree}


def _knot_scale(knots: np.ndarray, top: int, truncated: bool) -> np.float32:
    """Granny's OneOverKnotScale: the largest knot maps to `top`; the truncated form keeps the float's upper
    16 bits (rounding it down, so no knot exceeds `top`)."""
    largest = float(knots.max(initial=0.0))
    scale = np.float32(top / largest) if largest > 0 else np.float32(1.0)
    if truncated:
        scale = _trunc_scale(int(np.frombuffer(scale.tobytes(), np.uint32)[0]) >> 16)
    return scale


def _quantise(values: np.ndarray, scale, offset, top: int) -> np.ndarray:
    step = np.where(scale != 0, scale, 1)
    return np.clip(np.rint((values - offset) / step), 0, top).astype(np.int64)


def _table_entries(q: np.ndarray, missing: np.ndarray) -> np.ndarray:
    """Per component, the table entry of the narrowest range that holds every value it stores."""
    chosen = np.zeros(4, np.int64)
    low_end = np.minimum(QUATERNION_TABLE[:, 1], QUATERNION_TABLE[:, 1] + QUATERNION_TABLE[:, 0])
    high_end = np.maximum(QUATERNION_TABLE[:, 1], QUATERNION_TABLE[:, 1] + QUATERNION_TABLE[:, 0])
    for c in range(4):
        stored = q[missing != c, c]
        if not len(stored):
            continue
        fits = (low_end <= stored.min()) & (high_end >= stored.max())
        width = np.where(fits, high_end - low_end, np.inf)
        chosen[c] = int(np.argmin(width))
    return chosen


def _encode_quaternions(q: np.ndarray, bits: int) -> tuple[int, np.ndarray]:
    top = 1 << bits
    q = np.asarray(q, np.float32)
    missing = np.argmax(np.abs(q), axis=1)
    chosen = _table_entries(q, missing)
    entries = int(sum(int(e) << (4 * c) for c, e in enumerate(chosen)))
    scales = QUATERNION_TABLE[chosen, 0] * np.float32(1.0 / (top - 1))
    offsets = QUATERNION_TABLE[chosen, 1]
    rows = np.arange(len(q))
    out = np.zeros((len(q), 3), np.int64)
    for k in range(3):
        c = (missing + 1 + k) & 3
        out[:, k] = np.clip(np.rint((q[rows, c] - offsets[c]) / scales[c]), 0, top - 1)
    out[:, 0] |= np.where(q[rows, missing] < 0, top, 0)
    out[:, 1] |= ((missing >> 1) & 1) * top
    out[:, 2] |= (missing & 1) * top
    return entries, out


def encode(fmt: str, degree: int, knots, controls) -> dict:
    """Our encoder of one curve format: the CurveData fields (type order) for knots (n,) and controls (n, dim),
    quantised as Granny's compressor lays them out. Constants take one control; the identity takes the
    dimension from `controls`' shape."""
    knots = np.asarray(knots, np.float32)
    controls = np.atleast_2d(np.asarray(controls, np.float32))
    controls = controls.reshape(len(knots), -1) if len(knots) > 1 else controls
    header = {HEADER_PREFIX + fmt: _header(fmt, degree)}
    if fmt == "DaIdentity":
        return header | {"Dimension": controls.shape[1]}
    if fmt.endswith("Constant32f"):
        return header | {"Padding": 0, "Controls": controls[0].copy()}
    if fmt == "DaK32fC32f":
        return header | {"Padding": 0, "Knots": knots.copy(), "Controls": controls.ravel().copy()}
    kind = fmt[fmt.index("K") + 1:fmt.index("C")]
    dtype = INTEGER_TYPES[kind]
    top = int(np.iinfo(dtype).max)
    if fmt.startswith("D4n"):
        scale = _knot_scale(knots, top, truncated=False)
        entries, values = _encode_quaternions(controls, QUATERNION_BITS[fmt])
        data = np.concatenate([_quantise(knots, 1 / scale, 0, top), values.ravel()]).astype(dtype)
        return header | {"ScaleOffsetTableEntries": entries, "OneOverKnotScale": float(scale), "KnotsControls": data}
    scale = _knot_scale(knots, top, truncated=True)
    trunc = int(np.frombuffer(scale.tobytes(), np.uint32)[0]) >> 16
    low, high = controls.min(axis=0), controls.max(axis=0)
    steps = ((high - low) / np.float32(top)).astype(np.float32)
    encoded_knots = np.clip(np.rint(knots.astype(np.float64) * float(scale)), 0, top).astype(np.int64)
    data = np.concatenate([encoded_knots, _quantise(controls, steps, low, top).ravel()]).astype(dtype)
    if fmt.startswith("D3"):
        return header | {"OneOverKnotScaleTrunc": trunc, "ControlScales": steps, "ControlOffsets": low.copy(),
                         "KnotsControls": data}
    return header | {"OneOverKnotScaleTrunc": trunc, "ControlScaleOffsets": np.concatenate([steps, low]),
                     "KnotsControls": data}
