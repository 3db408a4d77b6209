"""`skinbridge info` for VMD: key counts per group, distinct bones and morphs, and the motion's length."""
from __future__ import annotations

import os

import numpy as np

from ...core.fileio import read_bytes
from . import vmd


def info(path_or_bytes: str | os.PathLike | bytes | bytearray, path: str | None = None) -> dict:
    """The summary of a file (its path, or its bytes with `path` naming it: the registry's `info(data, path)`)."""
    data = path_or_bytes if isinstance(path_or_bytes, (bytes, bytearray)) else read_bytes(path_or_bytes)
    m = vmd.read(data)
    bones, _ = vmd.distinct_names(m.bone_keys["name"])
    morphs, _ = vmd.distinct_names(m.morph_keys["name"])
    frames = vmd.all_frames(m)
    last = int(frames.max()) if len(frames) else 0
    return {
        "format": "VMD",
        "version": m.version,
        "model": m.model_name,
        "bone_keys": len(m.bone_keys),
        "morph_keys": len(m.morph_keys),
        "camera_keys": len(m.camera_keys),
        "light_keys": len(m.light_keys),
        "shadow_keys": len(m.shadow_keys),
        "ik_keys": len(m.property_keys),
        "ik_states": m.ik_key_count(),
        "tail_groups": m.tail_groups,
        "bones": len(bones),
        "morphs": len(morphs),
        "animations": [{
            "name": m.model_name,
            "length": last / vmd.FPS,
            "frames": int(len(np.unique(frames))),
            "tracks": len(bones) + len(morphs),
        }],
        "warnings": list(m.warnings),
    }
