"""A core Scene as DMX files without Blender (the registry's `write_scene`: benchmarks and tests that feed the
importers)."""
from __future__ import annotations

from ...core import model as cm
from . import write


def write_scene(scene: cm.Scene, folder: str, name: str, fps: float = 24.0) -> list[str]:
    """The model DMX, then one animation DMX per animation (no QC)."""
    return write.write_files(scene, folder, name, fps, with_qc=False)[0]
