"""A core Scene written as MikuMikuDance files without Blender (the registry's `write_scene`, for benchmarks and
tests): NAME.pmx through `convert.from_scene`, and one `<animation>.vmd` per animation of its skeleton through
`motion_convert.motion_of_skeleton_animation` (keys on round(time × 30) frames; scale keys dropped, a VMD has none)."""
from __future__ import annotations

import os

from ..core import model as cm
from ..core.fileio import write_atomic
from ..core.naming import NameAllocator
from .model import convert
from .model import pmx
from .model.units import METRES_PER_UNIT
from .motion import vmd
from .motion import convert as motion_convert


def write_scene(scene: cm.Scene, folder: str, name: str) -> list[str]:
    """Write the files; returns their paths, the model first (write_atomic makes the folder)."""
    model, _ = convert.from_scene(scene)
    paths = [os.path.join(folder, name + ".pmx")]
    write_atomic(paths[0], pmx.write(model))
    if scene.skeleton is None or not len(scene.skeleton):
        return paths
    metres_per_unit = float((scene.extras.get("pmx") or {}).get("scale", METRES_PER_UNIT))
    names = NameAllocator()
    for anim in scene.animations:
        motion, _ = motion_convert.motion_of_skeleton_animation(scene.skeleton, anim, model.name or name,
                                                                metres_per_unit)
        paths.append(os.path.join(folder, names.take(anim.name, ".vmd") + ".vmd"))
        write_atomic(paths[-1], vmd.write(motion))
    return paths
