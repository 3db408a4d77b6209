"""`skinbridge check` for Urho3D-family animations (classic UANI, UrhoX UANI, rbfx UAN2).

As the models' check (model/check.py): values the layout allows but the meaning forbids are findings (errors:
what a writer refuses; warnings: what Urho3D accepts but is probably not meant, a quaternion that is not unit
length, a key after the end), then the records are written back with the codec and compared with the file, for
every variant. `check` runs the pipeline of core/check.py.
"""
from __future__ import annotations

import numpy as np

from ...core import names
from ...core.check import Checker, Findings
from ...core.findings import Finding
from ..model.check import UNIT_TOLERANCE, element_read_error, field_of, name_size
from . import uani

TIME_TOLERANCE = 1e-4  # seconds a key may lie past the animation's length before it is reported

def track_offsets(anim: uani.Animation) -> list[tuple[int, int]]:
    """(track record offset, first key offset) of every track, from the layout of the variant (the records
    mirror the file, so the sizes are known)."""
    out = []
    if anim.variant == uani.VARIANT_URHOX:
        at = 16  # magic, version, length, track count
        for t in anim.tracks:
            keys = at + 4 + name_size(t.name) + 1 + 4
            out.append((at, keys))
            at = keys + t.key_count * uani.URHOX_KEY_DTYPE.itemsize
        return out
    at = 4 + (4 if anim.variant == uani.VARIANT_RBFX else 0) + name_size(anim.name) + 1 + 8
    weights = uani.weight_count(anim.version)
    for t in anim.tracks:
        keys = at + name_size(t.name) + 1 + 1 + 4 * weights + 4
        out.append((at, keys))
        at = keys + t.key_count * uani.key_dtype(t.channel_mask).itemsize
    return out


def _length_offset(anim: uani.Animation) -> int:
    if anim.variant == uani.VARIANT_URHOX:
        return 8
    return 4 + (4 if anim.variant == uani.VARIANT_RBFX else 0) + name_size(anim.name) + 1


def validate_animation(anim: uani.Animation) -> list[Finding]:
    out = Findings()
    out.warnings(anim.warnings)
    length = float(anim.length)
    if not np.isfinite(length):
        out.add("error", "animation", _length_offset(anim), "length", "value is not finite (NaN or infinity)")
    elif length < 0:
        out.add("error", "animation", _length_offset(anim), "length", f"length {length:g} is negative")
    seen: dict[str, int] = {}
    name_at = 4 if anim.variant == uani.VARIANT_URHOX else 0  # after the name's length, or at the record
    for i, (track, (at, keys_at)) in enumerate(zip(anim.tracks, track_offsets(anim))):
        element = f"track {i} ({names.shown(track.name)})"
        bad_name = names.finding(element, track.name, at + name_at)
        if bad_name is not None:
            out.items.append(bad_name)
        if track.name in seen:
            out.add("warning", element, at, "name", f"same bone as track {seen[track.name]}")
        seen.setdefault(track.name, i)
        dtype = uani.URHOX_KEY_DTYPE if anim.variant == uani.VARIANT_URHOX else uani.key_dtype(track.channel_mask)
        size = dtype.itemsize
        if anim.variant != uani.VARIANT_URHOX:
            mask_at = at + name_size(track.name) + 1
            if track.channel_mask & ~uani.CHANNELS_ALL:
                out.add("warning", element, mask_at, "channel mask",
                        f"channel mask 0x{track.channel_mask:02x} has bits above 0x7 (ignored by the engine)")
            if not track.channel_mask & uani.CHANNELS_ALL and track.key_count:
                out.add("warning", element, mask_at, "channel mask", "keys without any channel (mask 0)")
            if track.weights is not None and not np.isfinite(np.asarray(track.weights, np.float64)).all():
                out.add("error", element, mask_at + 1, "weights", "value is not finite (NaN or infinity)")
        times = np.asarray(track.times, np.float64)
        key = lambda k: f"{element} key {k}"  # noqa: E731
        for name, values in (("time", times), ("position", track.positions), ("rotation", track.rotations),
                             ("scale", track.scales)):
            if values is None or not len(values):
                continue
            v = np.asarray(values, np.float64).reshape(len(values), -1)
            f_at = dtype.fields[name][1]
            out.rows("error", ~np.isfinite(v).all(axis=1), key, lambda k: keys_at + k * size + f_at, name,
                     lambda k: "value is not finite (NaN or infinity)")
        if len(times) > 1:
            back = np.zeros(len(times), bool)
            back[1:] = np.diff(times) < 0
            out.rows("error", back, key, lambda k: keys_at + k * size, "time",
                     lambda k: f"time {times[k]:.7g} is before the previous key's {times[k - 1]:.7g}")
        if np.isfinite(length) and len(times):
            outside = np.isfinite(times) & ((times < 0) | (times > length + TIME_TOLERANCE))
            out.rows("warning", outside, key, lambda k: keys_at + k * size, "time",
                     lambda k: f"time {times[k]:.7g} is outside 0..{length:.7g}")
        if track.rotations is not None and len(track.rotations):
            q = np.asarray(track.rotations, np.float64)
            norm = np.linalg.norm(q, axis=1)
            f_at = dtype.fields["rotation"][1]
            out.rows("warning", np.isfinite(norm) & (np.abs(norm - 1) > UNIT_TOLERANCE), key,
                     lambda k: keys_at + k * size + f_at, "rotation",
                     lambda k: f"quaternion length {norm[k]:.6g}, not 1")
    return out.items


def animation_field_at(anim: uani.Animation, offset: int) -> str:
    marks = [(0, "magic"), (4, "version" if anim.variant != uani.VARIANT_URHO3D else "animation name"),
             (_length_offset(anim), "length"), (_length_offset(anim) + 4, "track count")]
    for i, (t, (at, keys_at)) in enumerate(zip(anim.tracks, track_offsets(anim))):
        marks.append((at, f"track {i} ({t.name}) name"))
        marks.append((keys_at - 4, f"track {i} ({t.name}) key count"))
        size = (uani.URHOX_KEY_DTYPE if anim.variant == uani.VARIANT_URHOX else uani.key_dtype(t.channel_mask)).itemsize
        if keys_at <= offset < keys_at + t.key_count * size:
            k, inner = divmod(offset - keys_at, size)
            dtype = uani.URHOX_KEY_DTYPE if anim.variant == uani.VARIANT_URHOX else uani.key_dtype(t.channel_mask)
            name = max((f for f in dtype.names if dtype.fields[f][1] <= inner), key=lambda f: dtype.fields[f][1])
            return f"track {i} ({t.name}) key {k} {name}"
    return field_of(marks, offset)


check = Checker(read=uani.read, validate=validate_animation, write=uani.write, field_at=animation_field_at,
                read_error=element_read_error)
