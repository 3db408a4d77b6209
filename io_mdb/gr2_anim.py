"""Granny 2 animations (docs/nwn2.md §5.5): the root's Animations, their track groups and transform tracks, as
core Animations sampled from the curves as Granny evaluates them (`gr2_curves`).

An animation holds a Duration, a TimeStep and an Oversampling (NWN2: 1/240 s and 8, so the artist's frame rate
1 / (TimeStep · Oversampling) is 30 fps) and track groups, one per skeleton it moves (a body, its tail, its cape
wings, 3ds Max lights and cameras). A transform track names a bone and holds a position, an orientation and a
3×3 scale/shear curve; the bone's local transform is translation · rotation · scale/shear, as a skeleton bone's
(§5.3), in the file's units (centimetres: `UnitsPerMeter` 100) and axes (Z up, as the MDB).

The core animation of a track group keys every channel at the animation's frames (and at its end): positions in
metres, rotations w x y z, scales the diagonal of the scale/shear (a shear is dropped with a warning). A constant
or identity channel is one key at 0; an identity scale/shear is no scale channel.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..core import model as cm
from ..core.errors import FormatError
from . import GR2_MAGIC, gr2, gr2_bind, gr2_curves, gr2_skeleton

DEFAULT_FPS = 30.0  # what the files' TimeStep · Oversampling gives; used when those fields say nothing sensible
MAX_FRAMES = 100_000  # a Duration whose frames exceed this (55 min at 30 fps) is refused, not sampled
SHEAR_TOLERANCE = 1e-4
IDENTITY = {"position": np.zeros(3), "orientation": np.array([0.0, 0.0, 0.0, 1.0]),
            "scale_shear": np.eye(3).ravel()}
CURVES = (("position", "PositionCurve"), ("orientation", "OrientationCurve"), ("scale_shear", "ScaleShearCurve"))
DIMENSIONS = {"position": 3, "orientation": 4, "scale_shear": 9}


@dataclass
class Gr2Track:
    name: str
    position: gr2_curves.Curve
    orientation: gr2_curves.Curve
    scale_shear: gr2_curves.Curve


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


def _curve(track: gr2.Struct, key: str, member: str, where: str) -> gr2_curves.Curve:
    holder = track.get(member)
    data = holder.get("CurveData") if isinstance(holder, dict) else None
    offset, section = _where(track)
    if not isinstance(data, dict):
        raise FormatError(f"{where}: {member} has no curve data", offset, f"{section} {where}.{member}")
    try:
        curve = gr2_curves.decode(data, DIMENSIONS[key])
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
        out[key] = (at, gr2_curves.evaluate(curve, at, IDENTITY[key], normalize=key == "orientation"))
    return out


def to_core(anim: Gr2Animation, group: Gr2TrackGroup, name: str, units: float) -> tuple[cm.Animation, list[str]]:
    """One track group of an animation as a core Animation (metres, w x y z rotations)."""
    warnings = []
    times = anim.times()
    tracks = []
    for track in group.tracks:
        s = sample_track(track, times)
        (pt, p), (rt, r) = s["position"], s["orientation"]
        core = cm.Track(track.name, pt, p / units, rt, r[:, [3, 0, 1, 2]])
        if s["scale_shear"] is not None:
            st, m = s["scale_shear"]
            m = m.reshape(-1, 3, 3)
            diagonal = np.diagonal(m, axis1=1, axis2=2).copy()
            shear = np.abs(m - diagonal[:, :, None] * np.eye(3)).max(initial=0.0)
            if shear > SHEAR_TOLERANCE:
                warnings.append(f"{name}: bone {track.name}: scale/shear has off-diagonal terms up to {shear:.3g}; "
                                "only its diagonal (the scale) is kept")
            core.scale_times, core.scales = st, diagonal
        tracks.append(core)
    extras = {"gr2": {"animation": anim.name, "track_group": group.name, "duration": anim.duration,
                      "time_step": anim.time_step, "oversampling": anim.oversampling, "fps": anim.fps}}
    return cm.Animation(name, float(anim.duration), tracks, extras=extras), warnings


def core_animations(f: gr2.Gr2File, stem: str) -> tuple[list[cm.Animation], list[str]]:
    """Every track group of every animation as a core Animation, named after the file (and the group when the
    file has several)."""
    found = animations(f)
    several = sum(len(a.groups) for a in found) > 1
    out, warnings = [], []
    for anim in found:
        for group in anim.groups:
            core, more = to_core(anim, group, f"{stem}_{group.name}" if several else stem, units_per_metre(f))
            out.append(core)
            warnings += more
    return out, warnings


def for_bones(f: gr2.Gr2File, stem: str, bones: set[str]) -> tuple[list[cm.Animation], list[str]]:
    """Per animation, the track group that moves most of `bones` (the first on a tie) as a core Animation named
    after the file; the other groups are named in a warning. No animation when no group names any bone."""
    found = animations(f)
    out, warnings = [], []
    for anim in found:
        if not anim.groups:
            continue
        matches = [len(bones & {t.name for t in g.tracks}) for g in anim.groups]
        best = int(np.argmax(matches))
        if matches[best] == 0:
            continue
        name = stem if len(found) == 1 else f"{stem}_{len(out)}"
        core, more = to_core(anim, anim.groups[best], name, units_per_metre(f))
        out.append(core)
        warnings += more
        others = [g.name for i, g in enumerate(anim.groups) if i != best]
        if others:
            warnings.append(f"{name}: track group {anim.groups[best].name} ({matches[best]} of its "
                            f"{len(anim.groups[best].tracks)} tracks name bones) imported; not imported: "
                            f"{', '.join(others)}")
    return out, warnings


def kind_of(data: bytes) -> str:
    """"model" for a file holding a skeleton, "motion" for one holding only animations."""
    f = gr2.read(data)
    return "model" if f.root.get("Skeletons") else "motion"


def load(path: str, data: bytes, with_animations: bool = True, motions=()) -> tuple[cm.Scene, list[str]]:
    """A `.gr2` as a core Scene without Blender: its first skeleton (as an MDB import binds it) and, with
    `with_animations`, every track group of its animations and of the `.gr2` motions given (an output folder's
    `<action>.gr2` beside its skeleton file)."""
    f = gr2.read(data)
    warnings = list(f.warnings)
    stem = os.path.splitext(os.path.basename(path))[0]
    skeletons = gr2_skeleton.skeletons(f)
    scene = cm.Scene(name=stem, skeleton=gr2_bind.core_skeleton(skeletons[0]) if skeletons else None)
    if not with_animations:
        return scene, warnings
    scene.animations, more = core_animations(f, stem)
    warnings += more
    for motion in motions:
        with open(motion, "rb") as fh:
            raw = fh.read()
        if not raw.startswith(GR2_MAGIC):
            warnings.append(f"{os.path.basename(motion)}: not a GR2 file; left out")
            continue
        found, more = core_animations(gr2.read(raw), os.path.splitext(os.path.basename(motion))[0])
        scene.animations += found
        warnings += more
    return scene, warnings


def semantic(f: gr2.Gr2File) -> list[str]:
    """What an import runs after the read: the skeletons' problems, and every animation's curves decoded (the
    sampling an import adds is bounded by MAX_FRAMES)."""
    out = gr2_skeleton.semantic(f)
    animations(f)
    return out
