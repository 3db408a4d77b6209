"""Mapping between UANI / UAN2 records and core animations.

Axes, stated once and taken from the model mapping (`model/convert.py` `basis(profile)`), so that an `.ani` always
agrees with the `.mdl` of the same profile:

* a proper basis (UrhoX: glTF axes, (x, y, z) → (x, −z, y)) keeps bone-local axes, so a parent-relative
  transform is unchanged except at a root, whose transform is left-multiplied by the basis;
* an improper basis (a mirror, e.g. left-handed Urho3D files) cannot be a bone's rotation, so every bone's
  transform is conjugated by it: C · M · C⁻¹ (positions mapped by C, rotation axes by det(C)·C, scales
  permuted). Signed permutations make both exact on float32 apart from the root rotation product.

Keys: a core track keeps each channel's own key times. A file track has one key list for its channels,
so writing takes, per track, the union of its channels' times and evaluates every channel there as the
engine would (linear position and scale, shortest-arc slerp rotation, or step). The classic writer sets a
track's channel mask from the channels the core track has; UrhoX keys always hold T, R and S, and a channel
the core track lacks is filled from the bone's default pose (``rest``) or, failing that, identity.
UrhoX writes interpolation 0 (step) for a STEP track; classic files cannot step, so a STEP track becomes
hold keys ``HOLD_GAP`` seconds before each next key, with a warning.
"""
from __future__ import annotations

import base64
import binascii
from collections.abc import Collection, Mapping

import numpy as np

from ...core.errors import quiet_float_errors
from ...core import model as cm
from ...core import names
from ...core.transforms import matrix3_to_quat, quat_multiply, slerp
from ..model.convert import basis
from . import uani

HOLD_GAP = 1e-4  # seconds between a hold key and the key it holds up to
FORMATS = ("urhox", "urho3d", "rbfx")
RBFX_DEFAULT_VERSION = uani.RBFX_VARIANT_TRACK_VERSION  # the version of rbfx's stock UAN2 files


# -- axes ----------------------------------------------------------------------------------------------

class Axes:
    """The per-profile change of basis of bone transforms, applied channel by channel."""

    def __init__(self, basis: np.ndarray):
        self.m = np.asarray(basis, dtype=np.float64)[:3, :3]
        self.det = float(np.round(np.linalg.det(self.m)))
        self.conjugate = self.det < 0
        self.q = None if self.conjugate else matrix3_to_quat(self.m)

    @classmethod
    def of(cls, profile: str, inverse: bool = False) -> "Axes":
        to_core, to_file = basis(profile)
        return cls(to_file if inverse else to_core)

    def applies_to(self, is_root: bool) -> bool:
        return self.conjugate or is_root

    def translations(self, t: np.ndarray) -> np.ndarray:
        return np.asarray(t, np.float64) @ self.m.T

    def rotations(self, r: np.ndarray) -> np.ndarray:
        r = np.asarray(r, np.float64)
        if self.conjugate:
            return np.concatenate([r[:, :1], self.det * (r[:, 1:] @ self.m.T)], axis=1)
        return quat_multiply(self.q, r)

    def scales(self, s: np.ndarray) -> np.ndarray:
        s = np.asarray(s, np.float64)
        return s @ np.abs(self.m).T if self.conjugate else s


# -- sampling as the engine does ---------------------------------------------------------------------

def _segments(times: np.ndarray, at: np.ndarray):
    """Index of the key at or before each time (clamped), the fraction to the next key, and which times
    fall exactly on a key (those take the key's own value, bit for bit)."""
    n = len(times)
    i = np.clip(np.searchsorted(times, at, side="right") - 1, 0, n - 1)
    exact = times[i] == at
    j = np.minimum(i + 1, n - 1)
    span = times[j] - times[i]
    f = np.where(span > 0, (at - times[i]) / np.where(span > 0, span, 1.0), 0.0)
    f = np.clip(np.where(at < times[0], 0.0, f), 0.0, 1.0)
    return i, j, f, exact


def sample(times, values, at, kind: str) -> np.ndarray:
    """Values of keys (K, C) at times ``at``: kind 'linear', 'slerp' or 'step'; clamped at both ends."""
    times = np.asarray(times, np.float64)
    values = np.asarray(values)
    at = np.asarray(at, np.float64)
    i, j, f, exact = _segments(times, at)
    if kind == "step":
        return values[i].astype(np.float64)
    a = values[i].astype(np.float64)
    b = values[j].astype(np.float64)
    if kind == "slerp":
        out = slerp(a, b, f)
    else:
        out = a + (b - a) * f[:, None]
    out[exact] = values[i[exact]]
    return out


# -- file → core ---------------------------------------------------------------------------------------

@quiet_float_errors
def to_core(anim: uani.Animation, name: str, profile: str = "urhox",
            roots: Collection[str] = ()) -> tuple[cm.Animation, list[str]]:
    """A core Animation from records; ``roots`` names the skeleton's root bones (they take the basis
    under a proper basis). Warnings of the read are carried over."""
    axes = Axes.of(profile)
    warnings = list(anim.warnings) + uani.check(anim)
    out = cm.Animation(name=name, length=float(anim.length))
    out.extras["urho"] = {"variant": anim.variant, "version": anim.version, "name": anim.name}
    if anim.variant_tracks:  # rbfx attribute tracks: no bone to hold them, so their bytes travel with the clip
        out.extras["urho"]["variant_tracks"] = [
            {"name": vt.name, "type": vt.variant_type, "interpolation": vt.interpolation,
             "keys": vt.key_count, "raw": base64.b64encode(vt.raw).decode("ascii")} for vt in anim.variant_tracks]
    for track in anim.tracks:
        times = np.asarray(track.times, np.float64)
        ct = cm.Track(bone=track.name)
        ct.interpolation = "STEP" if track.interpolation == uani.INTERPOLATION_STEP else "LINEAR"
        convert_axes = axes.applies_to(track.name in roots)
        if track.positions is not None:
            t = np.asarray(track.positions, np.float64)
            ct.translation_times, ct.translations = times.copy(), axes.translations(t) if convert_axes else t
        if track.rotations is not None:
            r = np.asarray(track.rotations, np.float64)
            ct.rotation_times, ct.rotations = times.copy(), axes.rotations(r) if convert_axes else r
        if track.scales is not None:
            s = np.asarray(track.scales, np.float64)
            ct.scale_times, ct.scales = times.copy(), axes.scales(s) if convert_axes else s
        ct.extras["urho"] = {"channel_mask": int(track.channel_mask)}
        if track.weights is not None:
            ct.extras["urho"]["weights"] = [float(w) for w in track.weights]
        out.tracks.append(ct)
    return out, warnings + names.clean(out)


# -- core → file ---------------------------------------------------------------------------------------

def track_times(track: cm.Track) -> np.ndarray:
    """Sorted union of the key times of a track's channels."""
    parts = [np.asarray(t, np.float64) for t, v in ((track.translation_times, track.translations),
                                                    (track.rotation_times, track.rotations),
                                                    (track.scale_times, track.scales))
             if v is not None and t is not None and len(t)]
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0)


def _shared_times(track: cm.Track) -> np.ndarray | None:
    """The key times every channel of the track has, as they are (two keys at one time, a step, stay two:
    the union of `track_times` would make them one); None when the channels' times differ."""
    parts = [np.asarray(t, np.float64) for t, v in ((track.translation_times, track.translations),
                                                    (track.rotation_times, track.rotations),
                                                    (track.scale_times, track.scales))
             if v is not None and t is not None and len(t)]
    if not parts or any(not np.array_equal(p, parts[0]) for p in parts[1:]):
        return None
    return parts[0]


def _hold_times(times: np.ndarray) -> np.ndarray:
    """Times and hold-key times of a stepped key list, sorted (a hold key only where it fits)."""
    if len(times) < 2:
        return times
    holds = times[1:] - HOLD_GAP
    holds = holds[holds > times[:-1]]
    return np.unique(np.concatenate([times, holds]))


def from_core(animation: cm.Animation, profile: str = "urhox", fmt: str = "urhox",
              roots: Collection[str] = (), rest: Mapping[str, tuple] | None = None
              ) -> tuple[uani.Animation, list[str]]:
    """Records for ``fmt`` ('urhox', 'urho3d' or 'rbfx': UAN2, the classic layout with a version, track weights
    and attribute tracks, the file's own while kept, else version `RBFX_DEFAULT_VERSION`) from a core
    Animation. ``rest`` maps a bone name to its default (t, r, s) in core axes, used for channels a UrhoX track
    must hold but the core track lacks. Raises ValueError naming the track for non-finite or out-of-order
    keys."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown animation format {fmt!r}; expected one of {FORMATS}")
    axes = Axes.of(profile, inverse=True)
    warnings: list[str] = []
    classic = fmt in ("urho3d", "rbfx")  # rbfx keeps the classic layout
    raw = animation.extras.get("urho", {})
    name = raw.get("name") if isinstance(raw.get("name"), str) and raw.get("name") else animation.name
    out = uani.Animation(variant=fmt, version=_version_for(fmt, raw), name=name if classic else "",
                         length=np.float32(animation.length))
    if fmt == "rbfx" and out.version >= uani.RBFX_VARIANT_TRACK_VERSION:
        out.variant_tracks = _kept_variant_tracks(raw)
    held = []
    for track in animation.tracks:
        _check_track(track)
        shared = _shared_times(track)
        times = shared if shared is not None else track_times(track)
        step = track.interpolation == "STEP"
        if step and classic and len(times) > 1:
            times = _hold_times(times)
            held.append(track.bone)
        kind_lin, kind_rot = ("step", "step") if step else ("linear", "slerp")
        convert_axes = axes.applies_to(track.bone in roots)
        default = rest.get(track.bone) if rest else None
        channels = {}
        for key, t, v, kind, fn in (("positions", track.translation_times, track.translations, kind_lin,
                                     axes.translations),
                                    ("rotations", track.rotation_times, track.rotations, kind_rot, axes.rotations),
                                    ("scales", track.scale_times, track.scales, kind_lin, axes.scales)):
            if v is None or not len(v):
                continue
            values = np.asarray(v, np.float64) if times is shared else sample(t, v, times, kind)
            channels[key] = fn(values) if convert_axes else values
        mask = ((uani.CHANNEL_POSITION if "positions" in channels else 0)
                | (uani.CHANNEL_ROTATION if "rotations" in channels else 0)
                | (uani.CHANNEL_SCALE if "scales" in channels else 0))
        if not classic:
            fill = {"positions": np.zeros(3), "rotations": np.array([1.0, 0, 0, 0]), "scales": np.ones(3)}
            if default is not None:
                fill = dict(zip(("positions", "rotations", "scales"), (np.asarray(x, np.float64) for x in default)))
            for key, fn in (("positions", axes.translations), ("rotations", axes.rotations), ("scales", axes.scales)):
                if key not in channels:
                    value = np.tile(fill[key], (len(times), 1))
                    channels[key] = fn(value) if convert_axes else value
        rec = uani.Track(name=track.bone, times=times.astype(np.float32), channel_mask=mask if classic else 7,
                         interpolation=None if classic else (uani.INTERPOLATION_STEP if step
                                                             else uani.INTERPOLATION_LINEAR))
        for key, values in channels.items():
            setattr(rec, key, np.asarray(values, np.float32))
        rec.weights = _track_weights(track, uani.weight_count(out.version)) if fmt == "rbfx" else None
        out.tracks.append(rec)
    if held:
        warnings.append(f"classic UANI cannot step: {len(held)} stepped track(s) written with hold keys "
                        f"{HOLD_GAP:g} s before each next key "
                        f"({', '.join(held[:5])}{', ...' if len(held) > 5 else ''})")
    return out, warnings


def _version_for(fmt: str, raw: dict) -> int | None:
    """The header version of `fmt`: none for classic UANI, UrhoX's, or the rbfx file's own (else the default)."""
    if fmt == "urho3d":
        return None
    if fmt == "urhox":
        return uani.URHOX_VERSION
    kept = raw.get("version")
    return kept if raw.get("variant") == uani.VARIANT_RBFX and kept in uani.RBFX_VERSIONS else RBFX_DEFAULT_VERSION


def _kept_variant_tracks(raw: dict) -> list[uani.VariantTrack]:
    """The attribute tracks an rbfx file had (their bytes, kept in the clip's extras)."""
    out = []
    for vt in raw.get("variant_tracks") or []:
        try:
            out.append(uani.VariantTrack(str(vt["name"]), int(vt["type"]), int(vt["interpolation"]),
                                         int(vt["keys"]), base64.b64decode(vt["raw"], validate=True)))
        except (KeyError, TypeError, ValueError, binascii.Error):
            continue  # a damaged entry (hand-edited property) is left out rather than written half
    return out


def _track_weights(track: cm.Track, count: int) -> np.ndarray | None:
    """A UAN2 track's weights: the file's while kept with the right count, else full weight."""
    if not count:
        return None
    kept = (track.extras.get("urho") or {}).get("weights")
    if isinstance(kept, list) and len(kept) == count:
        return np.asarray(kept, "<f4")
    return np.ones(count, "<f4")


def _check_track(track: cm.Track) -> None:
    for label, t, v in (("translation", track.translation_times, track.translations),
                        ("rotation", track.rotation_times, track.rotations),
                        ("scale", track.scale_times, track.scales)):
        if v is None:
            continue
        t = np.asarray(t, np.float64)
        v = np.asarray(v, np.float64)
        if len(t) != len(v):
            raise ValueError(f"track {track.bone!r}: {len(t)} {label} times for {len(v)} values")
        bad = ~np.isfinite(v).all(axis=1) if v.ndim == 2 else ~np.isfinite(v)
        if bad.any() or not np.isfinite(t).all():
            k = int(np.argmax(bad)) if bad.any() else int(np.argmax(~np.isfinite(t)))
            raise ValueError(f"track {track.bone!r} {label} key {k}: value is not finite")
        if len(t) > 1 and (np.diff(t) < 0).any():
            raise ValueError(f"track {track.bone!r} {label} key {int(np.argmax(np.diff(t) < 0)) + 1}: "
                             "time goes backwards")


def semantic(anim) -> list[str]:
    """What an import runs after the read: the mapping (its warnings), the first track taken as the root."""
    roots = {anim.tracks[0].name} if anim.tracks else set()
    _, warnings = to_core(anim, "animation", "urho3d", roots)
    return warnings
