"""`skinbridge info` for glTF: what the JSON declares, after the checks every glTF passes before Blender's
importer reads it (io_gltf/untrusted.py): a refused reference or limit is an error here too."""
from __future__ import annotations

from .untrusted import inspect

_COUNTED = ("scenes", "nodes", "meshes", "skins", "animations", "materials", "textures", "images", "accessors",
            "bufferViews", "buffers")


def info(data: bytes, path: str | None = None) -> dict:
    found = inspect(data, path or "model.gltf")
    doc = found.doc
    asset = doc.get("asset") if isinstance(doc.get("asset"), dict) else {}
    return {
        "format": "glTF 2.0",
        "container": "GLB" if data[:4] == b"glTF" else "JSON",
        "version": asset.get("version"),
        "generator": asset.get("generator"),
        **{key: len(doc.get(key) or []) for key in _COUNTED},
        "buffer_bytes": sum(int(b.get("byteLength", 0)) for b in doc.get("buffers") or []),
        "extensions_used": list(doc.get("extensionsUsed") or []),
        "warnings": found.warnings,
    }
