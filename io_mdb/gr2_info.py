"""`skinbridge info` and `check` of Granny 2 files (docs/nwn2.md §5): sections, the root's fields, skeletons,
animations (track groups, their bones and curve formats).

`check` reports the reader's faults, the header's checksum, what a skeleton cannot be (parents out of order,
non-finite transforms, inverse world transforms that disagree with the composed local ones) and curves Granny
cannot sample as meant; its roundtrip line compares the file with what our writer makes of it (`gr2_write`).
"""
from __future__ import annotations

from collections import Counter
from typing import Callable

import numpy as np

from ..core.check import read_error
from ..core.errors import ExportError, FormatError, quiet_float_errors
from ..core.findings import Finding, report
from . import gr2, gr2_anim, gr2_skeleton, gr2_write

# how far world @ inverse world may be from the identity: rotation entries, and positions relative to the
# skeleton's extent (the public files' exporter is off by up to 4e-5 of it: float32 along the chains)
ROTATION_TOLERANCE = 1e-3
POSITION_TOLERANCE = 1e-4


def _section_summary(s: gr2.Section) -> dict:
    return {"index": s.index, "compression": gr2.COMPRESSIONS.get(s.compression, str(s.compression)),
            "bytes": s.data_size, "decompressed": s.decompressed_size, "decompressed_read": len(s.data),
            "stops": list(s.stops), "relocations": len(s.relocations), "marshallings": len(s.marshallings)}


def _shown(value) -> object:
    """A root field in a few words: counts of lists, the text of strings, the fields of a reference."""
    if isinstance(value, gr2.Struct):
        return {"fields": list(value)}
    if isinstance(value, (list, np.ndarray)):
        return {"count": len(value)}
    return value


def _root_fields(f: gr2.Gr2File) -> list[dict]:
    root = f.root
    return [{"name": m.name, "kind": gr2.KIND_NAMES.get(m.kind, str(m.kind)), "value": _shown(root.get(m.name))}
            for m in f.root_type]


def _animations(f: gr2.Gr2File) -> list[dict]:
    """Each animation: its duration, frame rate and track groups (tracks per kind, curve formats in use)."""
    out = []
    for a in gr2_anim.animations(f):
        groups = []
        for g in a.groups:
            formats = Counter(getattr(t, key).format for t in g.tracks for key, _ in gr2_anim.CURVES)
            groups.append({"name": g.name, "transform_tracks": len(g.tracks), "vector_tracks": g.vector_tracks,
                           "text_tracks": g.text_tracks, "bones": [t.name for t in g.tracks],
                           "curve_formats": dict(sorted(formats.items()))})
        out.append({"name": a.name, "duration": a.duration, "time_step": a.time_step,
                    "oversampling": a.oversampling, "fps": a.fps, "frames": len(a.times()),
                    "track_groups": groups})
    return out


def info(data: bytes, path: str = "") -> dict:
    f = gr2.read(data)
    root = f.root
    skeletons = gr2_skeleton.skeletons(f)
    exporter = root.get("ExporterInfo")
    return {
        "format": "GR2",
        "version": f.version,
        "crc32": {"stored": f"{f.crc:#010x}", "computed": f"{f.computed_crc:#010x}"},
        "exporter": exporter.get("ExporterName") if isinstance(exporter, dict) else None,
        "from_file": root.get("FromFileName"),
        "sections": [_section_summary(s) for s in f.sections],
        "root": _root_fields(f),
        "skeletons": [{"name": s.name, "units_per_metre": s.units_per_metre, "bones": len(s.bones),
                       "bone_names": s.names, "parents": [b.parent for b in s.bones]} for s in skeletons],
        "animations": _animations(f),
        "warnings": list(f.warnings),
    }


def _inverse_world(s: gr2_skeleton.Gr2Skeleton, label: str) -> list[Finding]:
    world = s.world_matrices()
    stored = np.stack([b.inverse_world for b in s.bones]).astype(np.float64)
    product = world @ stored - np.eye(4)
    extent = 1.0 + np.abs(world[:, :3, 3]).max(initial=0.0)
    bad = (np.abs(product[:, :3, :3]).max(axis=(1, 2)) > ROTATION_TOLERANCE) | \
          (np.abs(product[:, :3, 3]).max(axis=1) > POSITION_TOLERANCE * extent)
    return [Finding("warning", f"{label} bone {i} ({s.bones[i].name})", None, "InverseWorldTransform",
                    f"differs from the inverse of the composed local transforms by {np.abs(product[i]).max():.3g}")
            for i in np.flatnonzero(bad)]


@quiet_float_errors
def validate(f: gr2.Gr2File) -> list[Finding]:
    found = [Finding("warning", "file", None, "file", w) for w in f.warnings]
    for s in gr2_skeleton.skeletons(f):
        label = f"skeleton {s.name}"
        problems = s.problems()
        found += [Finding("error", f"{label} bone {i} ({s.bones[i].name})", None, field, message)
                  for i, field, message in problems]
        if not problems:
            found += _inverse_world(s, label)
    return found + _curve_findings(f)


def _curve_findings(f: gr2.Gr2File) -> list[Finding]:
    """Curves Granny cannot sample as meant: non-finite knots or controls, knots that go back in time."""
    found = []
    for a in gr2_anim.animations(f):
        for g in a.groups:
            for t in g.tracks:
                for key, member in gr2_anim.CURVES:
                    c = getattr(t, key)
                    element = f"animation {a.name} group {g.name} bone {t.name}"
                    if not (np.isfinite(c.knots).all() and np.isfinite(c.controls).all()):
                        found.append(Finding("error", element, None, member, "not a finite number"))
                    elif np.any(np.diff(c.knots) < 0):
                        found.append(Finding("error", element, None, member, "knots are not in time order"))
    return found


def findings(data: bytes) -> list[Finding]:
    try:
        return validate(gr2.read(data))
    except FormatError as e:
        return [read_error(e)]


def _first_difference(a, b, where: str, seen: set) -> str | None:
    """Where two decoded trees first differ (None when equal): numbers bit for bit, shared objects once."""
    if isinstance(a, dict) or isinstance(b, dict):
        if not (isinstance(a, dict) and isinstance(b, dict)) or list(a) != list(b):
            return where
        if (id(a), id(b)) in seen:
            return None
        seen.add((id(a), id(b)))
        return next((d for k in a if (d := _first_difference(a[k], b[k], f"{where}.{k}", seen))), None)
    if isinstance(a, list) or isinstance(b, list):
        if not (isinstance(a, list) and isinstance(b, list)) or len(a) != len(b):
            return where
        return next((d for i, (x, y) in enumerate(zip(a, b))
                     if (d := _first_difference(x, y, f"{where}[{i}]", seen))), None)
    if isinstance(a, (np.ndarray, np.void)) or isinstance(b, (np.ndarray, np.void)):
        same = type(a) is type(b) and a.dtype == b.dtype and a.tobytes() == b.tobytes()
        return None if same else where
    return None if type(a) is type(b) and (a == b or a != a and b != b) else where


def roundtrip(data: bytes) -> str:
    """Our writer's output for the file: the same bytes, or the same typed data in our uncompressed layout, or
    where the typed data differ."""
    f = gr2.read(data)
    try:
        out = gr2_write.rewrite(f)
    except (ExportError, FormatError) as e:
        return f"roundtrip: not written ({e})"
    if out == data:
        return "roundtrip: identical"
    difference = _first_difference(f.root, gr2.read(out).root, "root", set())
    if difference is not None:
        return f"roundtrip: typed data differ at {difference}"
    compressed = sum(s.compression != 0 for s in f.sections)
    return (f"roundtrip: typed data identical; bytes differ (written uncompressed in our layout, {len(out)} bytes; "
            f"{compressed} section(s) of the file compressed)")


def check(path: str, data: bytes, out: Callable[[str], None] = print) -> int:
    """`skinbridge check FILE.gr2`: findings, the count line and the roundtrip line; 1 on an error finding."""
    found = findings(data)
    unreadable = len(found) == 1 and found[0].element == "file" and found[0].severity == "error"
    return report(found, "roundtrip: not attempted (unreadable)" if unreadable else roundtrip(data), out)
