"""`skinbridge info` of a QC project: what it names."""
from __future__ import annotations

import os

from .qc import commands, read


def info(data: bytes, path: str | None = None) -> dict:
    """`skinbridge info` of a QC: what it names (its files resolved beside `path`, its $include files read)."""
    if path is None:
        cmds = commands(data.decode("utf-8", "replace"), "qc")
        return {"format": "QC", "commands": len(cmds)}
    p = read(path)
    return {
        "format": "QC",
        "model_name": p.model_name,
        "bodies": [b.name for b in p.bodies],
        "body_groups": {g.name: len(g.choices) for g in p.body_groups},
        "lods": [lod.threshold for lod in p.lods],
        "sequences": {s.name: s.fps for s in p.sequences},
        "collision": os.path.basename(p.collision.file) if p.collision else None,
        "files": [os.path.relpath(f, os.path.dirname(os.path.abspath(path))) for f in p.files()],
        "includes": len(p.includes),
        "not_interpreted": [f"{c.name} (line {c.line})" for c in p.others],
        "warnings": list(p.warnings),
    }
