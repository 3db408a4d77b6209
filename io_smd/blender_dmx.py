"""DMX models into Blender: the file mapped to a core Scene (`dmx_convert`) first, then built by the shared
bridge, so a fault stops the import before the first datablock is made and a failed build removes what it made."""
from __future__ import annotations

import os

from ..blender import scene as bscene
from ..core.fileio import read_bytes
from . import dmx, dmx_convert


def blender_import(context, path: str, options=None) -> list[str]:
    """The registry's `blender_import`: the model of one .dmx (gzip too); returns warnings."""
    name = os.path.basename(path).split(".")[0] or "dmx"
    scene, warnings = dmx_convert.to_scene(dmx.read(read_bytes(path)), name)
    if scene.skeleton is None and not scene.meshes:
        return warnings
    result = bscene.build_scene(context, scene, name, os.path.dirname(path))
    return warnings + result.warnings
