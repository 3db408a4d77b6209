"""`skinbridge info` for UrhoX / Urho3D animations (classic UANI, UrhoX UANI or rbfx UAN2): a JSON-ready
summary of the records."""
from __future__ import annotations

import os

import numpy as np

from . import uani


def distinct_key_times(anim: uani.Animation) -> int:
    """The number of distinct key times over all bone tracks (NaN counts once)."""
    times = [np.asarray(t.times, np.float32) for t in anim.tracks if len(t.times)]
    if not times:
        return 0
    return int(len(np.unique(np.concatenate(times))))


def animation_summary(data: bytes, name: str | None = None) -> dict:
    """Summary of ``data``; ``name`` replaces the animation name (UrhoX files have none: pass the file
    stem). Raises FormatError like ``uani.read``."""
    anim = uani.read(data)
    length = float(anim.length)
    frames = distinct_key_times(anim)
    summary = {
        "format": "UANI",
        "variant": anim.variant,
        "version": anim.version,
        "length": length,
        "tracks": len(anim.tracks),
        "frames": frames,
        "animations": [{"name": anim.name if name is None else name, "length": length, "frames": frames,
                        "tracks": len(anim.tracks)}],
        "warnings": list(anim.warnings),
    }
    if anim.variant == uani.VARIANT_RBFX:
        summary["variant_tracks"] = len(anim.variant_tracks)
    return summary


def info(data: bytes, path: str) -> dict:
    """The registry's `info` of an animation file; UrhoX files carry no name: the file's stem names it."""
    result = animation_summary(data)
    stem = os.path.splitext(os.path.basename(path))[0]
    for anim in result["animations"]:
        anim["name"] = anim["name"] or stem
    return result
