"""`skinbridge check FILE.gr2` (docs/nwn2.md §5): the pipeline of core/check.py with these steps.

Reading decodes what an import decodes (the skeletons and every animation's curves), so a fault there is a
reader's fault and the write-back is not attempted. The findings: the reader's warnings, what a skeleton cannot
be (parents out of order, non-finite transforms, inverse world transforms that disagree with the composed local
ones) and curves Granny cannot sample as meant. The write-back is our writer's (`write.rewrite`); a file it does
not give back byte for byte is compared as typed data (the game's files are compressed, ours are not).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.check import Checker, Findings
from ...core.errors import quiet_float_errors
from ...core.findings import Finding
from . import animation, gr2, skeleton
from .write import rewrite

# how far world @ inverse world may be from the identity: rotation entries, and positions relative to the
# skeleton's extent (the public files' exporter is off by up to 4e-5 of it: float32 along the chains)
ROTATION_TOLERANCE = 1e-3
POSITION_TOLERANCE = 1e-4


@dataclass
class Decoded:
    """A file as check reads it: the codec's records and the skeletons and animations decoded from them."""
    file: gr2.Gr2File
    skeletons: list[skeleton.Gr2Skeleton]
    animations: list[animation.Gr2Animation]


def read(data: bytes) -> Decoded:
    f = gr2.read(data)
    return Decoded(f, skeleton.skeletons(f), animation.animations(f))


def _inverse_world(out: Findings, s: skeleton.Gr2Skeleton, label: str) -> None:
    world = s.world_matrices()
    stored = np.stack([b.inverse_world for b in s.bones]).astype(np.float64)
    product = world @ stored - np.eye(4)
    extent = 1.0 + np.abs(world[:, :3, 3]).max(initial=0.0)
    bad = (np.abs(product[:, :3, :3]).max(axis=(1, 2)) > ROTATION_TOLERANCE) | \
          (np.abs(product[:, :3, 3]).max(axis=1) > POSITION_TOLERANCE * extent)
    out.rows("warning", bad, lambda i: f"{label} bone {i} ({s.bones[i].name})", lambda i: None,
             "InverseWorldTransform",
             lambda i: f"differs from the inverse of the composed local transforms by {np.abs(product[i]).max():.3g}")


def _curves(out: Findings, animations: list[animation.Gr2Animation]) -> None:
    """Curves Granny cannot sample as meant: non-finite knots or controls, knots that go back in time."""
    for a in animations:
        for g in a.groups:
            for t in g.tracks:
                for key, member in animation.CURVES:
                    c = getattr(t, key)
                    element = f"animation {a.name} group {g.name} bone {t.name}"
                    if not (np.isfinite(c.knots).all() and np.isfinite(c.controls).all()):
                        out.add("error", element, None, member, "not a finite number")
                    elif np.any(np.diff(c.knots) < 0):
                        out.add("error", element, None, member, "knots are not in time order")


@quiet_float_errors
def validate(d: Decoded) -> list[Finding]:
    out = Findings()
    out.warnings(d.file.warnings)
    for s in d.skeletons:
        label = f"skeleton {s.name}"
        problems = s.problems()
        for i, field, message in problems:
            out.add("error", f"{label} bone {i} ({s.bones[i].name})", None, field, message)
        if not problems:
            _inverse_world(out, s, label)
    _curves(out, d.animations)
    return out.items


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


def differs(data: bytes, written: bytes, d: Decoded) -> str:
    """The roundtrip line of a write-back that is not the file's bytes: where the typed data differ, or that
    only the layout does (the file's sections compressed, ours not)."""
    difference = _first_difference(d.file.root, gr2.read(written).root, "root", set())
    if difference is not None:
        return f"roundtrip: typed data differ at {difference}"
    compressed = sum(s.compression != 0 for s in d.file.sections)
    return (f"roundtrip: typed data identical; bytes differ (written uncompressed in our layout, {len(written)} "
            f"bytes; {compressed} section(s) of the file compressed)")


def diff_view(f: gr2.Gr2File) -> dict:
    """What `skinbridge diff` compares of two GR2 files: the header's numbers and the typed tree (the sections'
    bytes are compressed in the game's files, so a field is named where the decoded data differ)."""
    return {"format": f.format, "version": f.version, "tag": f.tag, "root": f.root}


check = Checker(read=read, validate=validate, write=lambda d: rewrite(d.file), differs=differs)
