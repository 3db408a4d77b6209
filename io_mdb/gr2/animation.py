"""Granny 2 animations (docs/nwn2.md §5.5): the root's Animations, their track groups and transform tracks, decoded
and sampled as Granny evaluates their curves (`curves`); `convert` makes core Animations of them.

An animation holds a Duration, a TimeStep and an Oversampling (NWN2: 1/240 s and 8, so the artist's frame rate
1 / (TimeStep · Oversampling) is 30 fps) and track groups, one per skeleton it moves (a body, its tail, its cape
wings, 3ds Max lights and cameras). A transform track names a bone and holds a position, an orientation and a
3×3 scale/shear curve; the bone's local transform is translation · rotation · scale/shear, as a skeleton bone's
(§5.3), in the file's units (centimetres: `UnitsPerMeter` 100) and axes (Z up, as the MDB).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...core.errors import FormatError
from . import curves, gr2

DEFAULT_FPS = 30.0  # what the files' TimeStep · Oversampling gives; used when those fields say nothing sensible
MAX_FRAMES = 100_000  # a Duration whose frames exceed this (55 min at 30 fps) is refused, not sampled
IDENTITY = {"position": np.zeros(3), "orientation": np.array([0.0, 0.0, 0.0, 1.0]),
            "scale_shear": np.eye(3).ravel()}
CURVES = (("position", "PositionCurve"), ("orientation", "OrientationCurve"), ("scale_shear", "ScaleShearCurve"))
DIMENSIONS = {"position": 3, "orientation": 4, "scale_shear": 9}


@dataclass
class Gr2Track:
    name: str
    position: curves.Curve
    orientation: curves.Curve
    scale_shear: curves.Curve


@dataclass
class Gr2TrackGroup:
    name: str
    tracks: list[Gr2Track]
    vector_tracks: int = 0
    text_tracks: int = 0


@dataclass
class Gr2Animation:
    name: str
    duration: float
    time_step: float
    oversampling: float
    groups: list[Gr2TrackGroup] = field(default_factory=list)

    @property
    def fps(self) -> float:
        """The artist's frame rate, 1 / (TimeStep · Oversampling); DEFAULT_FPS when those say nothing usable."""
        step = self.time_step * (self.oversampling if self.oversampling > 0 else 1.0)
        rate = 1.0 / step if np.isfinite(step) and step > 0 else 0.0
        if abs(rate - round(rate)) < 1e-3:  # float32 fields: 1 / (0.0041666669 · 8) is 29.999998 for 30
            rate = float(round(rate))
        return rate if 1.0 <= rate <= 1000.0 else DEFAULT_FPS

    def times(self) -> np.ndarray:
        """Key times: every frame from 0 to the duration, and the duration itself."""
        frames = int(np.floor(self.duration * self.fps + 1e-6))
        times = np.arange(frames + 1, dtype=np.float64) / self.fps
        if abs(times[-1] - self.duration) < 1e-6:
            times[-1] = self.duration
            return times
        return np.append(times, self.duration)


def _where(obj) -> tuple[int | None, str]:
    at = obj.at if isinstance(obj, gr2.Struct) and obj.at else (None, None)
    return at[1], f"section[{at[0]}]"


def _curve(track: gr2.Struct, key: str, member: str, where: str) -> curves.Curve:
    holder = track.get(member)
    data = holder.get("CurveData") if isinstance(holder, dict) else None
    offset, section = _where(track)
    if not isinstance(data, dict):
        raise FormatError(f"{where}: {member} has no curve data", offset, f"{section} {where}.{member}")
    try:
        curve = curves.decode(data, DIMENSIONS[key])
    except FormatError as e:
        raise FormatError(f"{where}.{member}: {e}", offset, f"{section} {where}.{member}") from None
    except (KeyError, TypeError, IndexError, AttributeError, ValueError) as e:  # a hostile type tree's fields
        raise FormatError(f"{where}.{member}: not laid out as a Granny curve ({e})", offset,
                          f"{section} {where}.{member}") from None
    if curve.kind != "identity" and curve.dimension != DIMENSIONS[key]:
        raise FormatError(f"{where}.{member}: {curve.dimension} components, expected {DIMENSIONS[key]}", offset,
                          f"{section} {where}.{member}")
    return curve


def _group(g: gr2.Struct, where: str) -> Gr2TrackGroup:
    tracks = g.get("TransformTracks")
    tracks = [] if isinstance(tracks, (list, np.ndarray)) and not len(tracks) else tracks
    if not isinstance(tracks, list) or not isinstance(g.get("Name"), str):
        offset, section = _where(g)
        raise FormatError(f"{where} has no Name or TransformTracks", offset, f"{section} {where}")
    out = []
    for i, t in enumerate(tracks):
        label = f"{where}.TransformTracks[{i}]"
        name = t.get("Name") if isinstance(t, dict) else None
        if not isinstance(name, str):
            offset, section = _where(t)
            raise FormatError(f"{label} has no Name", offset, f"{section} {label}")
        out.append(Gr2Track(name, *(_curve(t, key, member, label) for key, member in CURVES)))
    count = [len(v) if isinstance(v, (list, np.ndarray)) else 0 for v in (g.get("VectorTracks"), g.get("TextTracks"))]
    return Gr2TrackGroup(g["Name"], out, *count)


def _number(a: gr2.Struct, name: str, where: str) -> float:
    value = a.get(name)
    if not isinstance(value, float):
        offset, section = _where(a)
        raise FormatError(f"{where} has no {name}", offset, f"{section} {where}.{name}")
    return value


def animations(f: gr2.Gr2File) -> list[Gr2Animation]:
    """Every animation the root lists, its track groups and curves decoded (a skeleton file has none)."""
    out = []
    for k, a in enumerate(f.root.get("Animations") or []):
        if not isinstance(a, dict):
            continue
        where = f"Animations[{k}]"
        anim = Gr2Animation(a.get("Name") if isinstance(a.get("Name"), str) else f"animation{k}",
                            _number(a, "Duration", where), _number(a, "TimeStep", where),
                            float(a.get("Oversampling") or 1.0) if isinstance(a.get("Oversampling"), float) else 1.0)
        if not np.isfinite(anim.duration) or anim.duration < 0 or anim.duration * anim.fps > MAX_FRAMES:
            offset, section = _where(a)
            raise FormatError(f"{where}: Duration {anim.duration} is no time span of at most {MAX_FRAMES} frames",
                              offset, f"{section} {where}.Duration")
        groups = a.get("TrackGroups") or []
        anim.groups = [_group(g, f"{where}.TrackGroups[{i}]") for i, g in enumerate(groups) if isinstance(g, dict)]
        out.append(anim)
    return out


def units_per_metre(f: gr2.Gr2File) -> float:
    art = f.root.get("ArtToolInfo")
    units = art.get("UnitsPerMeter") if isinstance(art, dict) else None
    return float(units) if isinstance(units, float) and np.isfinite(units) and units > 0 else 1.0


def sample_track(track: Gr2Track, times: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray] | None]:
    """Each channel's (times, values) as Granny evaluates it, in the file's units and x y z w quaternions;
    a constant or identity channel once at 0; None for an identity scale/shear."""
    out: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
    for key, _ in CURVES:
        curve = getattr(track, key)
        if key == "scale_shear" and curve.kind == "identity":
            out[key] = None
            continue
        at = times if curve.kind == "bspline" else np.zeros(1)
        out[key] = (at, curves.evaluate(curve, at, IDENTITY[key], normalize=key == "orientation"))
    return out
