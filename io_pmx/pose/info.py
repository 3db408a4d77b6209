"""`skinbridge info` for VPD: the model line, the bones and morphs a pose sets and how many of them move."""
from __future__ import annotations

import os

from ...core.fileio import read_bytes
from . import vpd


def info(path_or_bytes: str | os.PathLike | bytes | bytearray, path: str | None = None) -> dict:
    """The summary of a file (its path, or its bytes with `path` naming it: the registry's `info(data, path)`)."""
    data = path_or_bytes if isinstance(path_or_bytes, (bytes, bytearray)) else read_bytes(path_or_bytes)
    pose = vpd.read(data)
    return {
        "format": "VPD",
        "model": pose.model_name,
        "bones": len(pose.bones),
        "moved_bones": sum(1 for b in pose.bones if any(b.translation)),
        "turned_bones": sum(1 for b in pose.bones if tuple(b.rotation) != (0.0, 0.0, 0.0, 1.0)),
        "morphs": len(pose.morphs),
        "warnings": [],
    }
