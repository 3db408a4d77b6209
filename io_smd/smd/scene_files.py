"""A core Scene as SMD files without Blender (the registry's `write_scene`: benchmarks and tests that feed the
importers)."""
from __future__ import annotations

import os

import numpy as np

from ...core import model as cm
from ...core.fileio import write_atomic
from ...core.naming import NameAllocator
from . import smd
from .convert import animation_locals, animation_smd, off_frame_warning, reference_of


def write_scene(scene: cm.Scene, folder: str, name: str, fps: float = 24.0) -> list[str]:
    """NAME.smd (the reference) and one animation SMD per animation, sampled at every whole frame of `fps`
    (Blender's default scene rate)."""
    warnings: list[str] = []
    names = NameAllocator()
    paths = [os.path.join(folder, names.take(name, ".smd") + ".smd")]
    write_atomic(paths[0], smd.write_pieces(reference_of(scene, warnings)))
    for anim in scene.animations:
        off = off_frame_warning(anim, fps)
        warnings += [off] if off else []
        count = int(round(anim.length * fps)) + 1
        locals_ = animation_locals(scene.skeleton, anim, np.arange(count) / fps)
        paths.append(os.path.join(folder, names.take(anim.name, ".smd") + ".smd"))
        motion = animation_smd(scene.skeleton, locals_, np.arange(count), warnings)
        write_atomic(paths[-1], smd.write_pieces(motion))
    return paths
