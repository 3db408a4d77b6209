"""`skinbridge info` for DMX: what the element graph holds (encoding, content format, elements by type)."""
from __future__ import annotations

from collections import Counter

from . import dmx


def info(data: bytes, path: str | None = None) -> dict:
    d = dmx.read(data)
    root = d.root
    return {
        "format": "DMX",
        "encoding": f"{'unicode_' if d.unicode else ''}{d.encoding} {d.encoding_version}",
        "content": f"{d.format} {d.format_version}",
        "gzip": d.gzip is not None,
        "elements": len(d.elements),
        "element_types": dict(sorted(Counter(e.type or "" for e in d.elements).items())),
        "attributes": sum(len(e.attributes) for e in d.elements),
        "root": {"type": root.type, "name": root.name} if root is not None else None,
        "prefix": [a.name for attrs in d.prefix for a in attrs],
        "strings": len(d.strings) if d.strings is not None else None,
        "warnings": list(d.warnings),
    }
