"""`skinbridge info` for Wallpaper Engine textures (`.tex`): a JSON-ready summary."""
from __future__ import annotations

from . import tex


def info(data: bytes, path: str = "") -> dict:
    t = tex.read(data)
    return {
        "format": t.container,
        "pixel_format": tex.FORMAT_NAMES.get(t.format, t.format),
        "flags": t.flags,
        "texture_size": [t.texture_width, t.texture_height],
        "image_size": [t.image_width, t.image_height],
        "image_format": t.image_format,
        "images": [[{"width": m.width, "height": m.height, "lz4": bool(m.lz4), "bytes": len(m.data)} for m in mips]
                   for mips in t.images],
        "frames": len(t.frames),
        "vertices": 0, "triangles": 0, "bones": 0, "animations": [],
        "warnings": list(t.warnings),
    }
