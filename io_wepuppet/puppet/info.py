"""`skinbridge info` for Wallpaper Engine puppets and models (`.mdl`): a JSON-ready summary."""
from __future__ import annotations

from . import mdl


def _clip(c: mdl.Clip) -> dict:
    fps = float(c.fps)
    return {"name": c.name, "id": c.id, "mode": c.mode or "loop", "fps": fps,
            "length": c.length / fps if fps > 0 else None, "frames": c.length + 1, "tracks": len(c.track_flags),
            "events": len(c.events)}


def info(data: bytes, path: str = "") -> dict:
    m = mdl.read(data)
    sk = m.skeleton
    anims = m.animations
    return {
        "format": m.tag,
        "version": m.version,
        "vertices": int(sum(len(me.vertices) for me in m.meshes)),
        "triangles": int(sum(len(me.indices) // 3 for me in m.meshes)),
        "bones": len(sk.bones) if sk else 0,
        "animations": [_clip(c) for c in anims.clips] if anims else [],
        "meshes": [{"materials": list(me.materials), "format": f"0x{me.format:08x}",
                    "stride": mdl.vertex_stride(me.format), "vertices": len(me.vertices),
                    "triangles": len(me.indices) // 3, "index_size": me.index_size} for me in m.meshes],
        "sections": [s.tag for s in m.sections],
        "bone_names": [b.name for b in sk.bones] if sk else [],
        "attachments": [a.name for a in m.attachments],
        "end_tag": m.end_tag,
        "padding": len(m.tail),
        "size": len(data),
        "warnings": list(m.warnings),
    }

