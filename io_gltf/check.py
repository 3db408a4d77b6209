"""`skinbridge check` for glTF: the limits and URI rules every glTF passes before Blender's importer reads it
(io_gltf/untrusted.py), as findings. glTF has no codec of ours, so nothing is written back."""
from __future__ import annotations

from typing import Callable

from ..core.check import read_error
from ..core.errors import FormatError
from ..core.findings import Finding, report
from .untrusted import inspect

NO_WRITE_BACK = "roundtrip: not attempted (glTF is read by Blender's importer; SkinBridge has no glTF writer)"


def check_gltf(path: str, data: bytes, out: Callable[[str], None] = print) -> int:
    """The findings of one glTF: a refused reference or limit is an error, an image left out a warning."""
    try:
        found = inspect(data, path)
    except FormatError as e:
        return report([read_error(e)], NO_WRITE_BACK, out)
    return report([Finding("warning", "file", None, "images", w) for w in found.warnings], NO_WRITE_BACK, out)
