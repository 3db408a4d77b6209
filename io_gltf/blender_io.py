"""glTF import through Blender's bundled importer (io_scene_gltf2)."""
from __future__ import annotations

import bpy

from ..core.errors import FormatError


def blender_import(context, path: str, options) -> list[str]:
    if bpy.ops.import_scene.gltf(filepath=path) != {"FINISHED"}:
        raise FormatError(f"the glTF importer could not read {path}")
    return []
