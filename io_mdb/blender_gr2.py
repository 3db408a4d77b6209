"""A Granny 2 skeleton into Blender (docs/nwn2.md §5.5): an armature with the game's bone names and rest
pose, the same one an MDB bound to this skeleton gets. What `render` and File › Import of a `.gr2` use."""
from __future__ import annotations

import os

from ..blender import scene as bscene
from ..core.errors import FormatError
from ..core.fileio import read_bytes
from . import gr2_convert


def blender_import(context, path: str, options) -> list[str]:
    """The registry's `blender_import`: the file's skeleton as an armature; an animation file (no skeleton) is
    refused, since it has nothing to show without the skeleton it plays on."""
    scene, warnings = gr2_convert.load(path, read_bytes(path))
    if scene.skeleton is None or not len(scene.skeleton):
        raise FormatError(f"{os.path.basename(path)} holds no skeleton (an animation file: GR2 animations "
                          "are not supported yet)", None, "Skeletons")
    result = bscene.build_scene(context, scene, scene.skeleton.name)
    return warnings + result.warnings
