"""`skinbridge check` for SMD / VTA: findings naming their line, then the write-back compared token by token.

Errors are what the writer and import refuse (a bone id or parent naming no node, duplicate node ids, a
parent cycle, numbers that are not finite, a vertex animation row whose vertex has no row in frame 0); warnings
are what studiomdl accepts and quietly changes: links under 0.05 (dropped at compile time) and link weights that do
not sum to 1 (renormalised at compile time).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...core.check import Checker, Findings
from ...core import names
from ...core.findings import Finding
from . import smd

SMALL_LINK = 0.05  # studiomdl drops links under this weight
SUM_TOLERANCE = 1e-4  # six-decimal weights of thirds sum to 0.999999


def _line(lines, k) -> str:
    return f"line {int(lines[k])}" if lines is not None and k < len(lines) else f"row {k}"


def _rows(out: Findings, severity: str, bad: np.ndarray, lines, field: str, message: Callable[[int], str]) -> None:
    """Rows of a text file are named by their line (no byte offset)."""
    out.rows(severity, bad, lambda k: _line(lines, k), lambda k: None, field, message)


def validate(f: smd.SmdFile) -> list[Finding]:
    out = Findings()
    ids: dict[int, smd.Node] = {}
    for n in f.nodes:
        if n.id in ids:
            out.add("error", f"line {n.line}", None, "node id", f"node id {n.id} is given twice")
        ids.setdefault(n.id, n)
    for n in f.nodes:
        if n.parent != -1 and n.parent not in ids:
            out.add("error", f"line {n.line}", None, "parent",
                    f"node {n.id} ({n.name}) has parent {n.parent}, which is no node")
    seen: set[int] = set()
    nodes = list(f.nodes)
    while True:
        cycle = smd.parent_cycle(nodes)
        if cycle is None or cycle.id in seen:
            break
        seen.add(cycle.id)
        out.add("error", f"line {cycle.line}", None, "parent",
                f"node {cycle.id} ({cycle.name}) is in a parent cycle")
        nodes = [n for n in nodes if n.id != cycle.id]
    known = np.array(sorted(ids), np.int64)
    for fr in f.skeleton:
        _rows(out, "error", ~np.isin(fr.bones, known), fr.row_lines, "bone id",
              lambda k, fr=fr: f"bone id {int(fr.bones[k])} (time {fr.time}) names no node")
        _rows(out, "error", ~np.isfinite(np.hstack([fr.positions, fr.rotations])).all(1), fr.row_lines, "bone row",
              lambda k: "a number is not finite")
    t = f.triangles
    if t is not None and len(t.parents):
        _rows(out, "error", ~np.isin(t.parents, known), t.lines, "parent bone",
              lambda k: f"parent bone {int(t.parents[k])} names no node")
        used = np.arange(t.link_bones.shape[1]) < t.link_counts[:, None]
        _rows(out, "error", (~np.isin(t.link_bones, known) & used).any(1), t.lines, "link bone",
              lambda k: f"link bone {int(t.link_bones[k][used[k] & ~np.isin(t.link_bones[k], known)][0])} "
                        f"names no node")
        _rows(out, "error", ~np.isfinite(np.hstack([t.positions, t.normals, t.uvs, t.link_weights])).all(1),
              t.lines, "vertex", lambda k: "a number is not finite")
        small = (t.link_weights < SMALL_LINK) & used
        _rows(out, "warning", small.any(1), t.lines, "link weight",
              lambda k: f"a link of weight {float(t.link_weights[k][small[k]][0]):g} is under {SMALL_LINK} "
                        f"(studiomdl drops it)")
        sums = np.where(used, t.link_weights, 0).sum(1)
        _rows(out, "warning", (t.link_counts > 0) & (np.abs(sums - 1) > SUM_TOLERANCE), t.lines, "link weight",
              lambda k: f"link weights sum to {float(sums[k]):.6f}, not 1 (studiomdl renormalises)")
    for fr in f.vertex_animation or ():
        _rows(out, "error", ~np.isfinite(np.hstack([fr.positions, fr.normals])).all(1), fr.row_lines, "vertex",
              lambda k: "a number is not finite")
        _rows(out, "error", fr.vertices < 0, fr.row_lines, "vertex id",
              lambda k, fr=fr: f"vertex id {int(fr.vertices[k])} < 0")
    _vta_rows_in_base(out, f.vertex_animation or [])
    out.items += names.findings([(f"line {n.line}", n.name, None) for n in f.nodes], "node name")
    return out.items


def _vta_rows_in_base(out: Findings, frames: list) -> None:
    """A vertex of a later frame must have a row in the base frame (time 0, else the first): import takes every
    shape as a displacement of that row, and refuses the file otherwise."""
    if not frames:
        return
    base = next((fr for fr in frames if fr.time == 0), frames[0])
    known = np.unique(base.vertices)
    for fr in frames:
        if fr is not base:
            _rows(out, "error", ~np.isin(fr.vertices, known), fr.row_lines, "vertex id",
                  lambda k, fr=fr: f"vertex {int(fr.vertices[k])} (time {fr.time}) has no row in frame 0")


def token_difference(original: bytes, written: bytes, tolerance: float = 1e-6) -> tuple[int, int] | None:
    """None when both texts hold the same tokens (numbers within `tolerance`, whitespace ignored); else the
    line numbers (original, written) of the first difference."""
    a, b = original.split(b"\n"), written.split(b"\n")

    def tokens(lines):
        out = []
        for i, line in enumerate(lines):
            out += [(tok, i + 1) for tok in line.split()]
        return out

    ta, tb = tokens(a), tokens(b)
    for (x, lx), (y, ly) in zip(ta, tb):
        if x == y:
            continue
        try:
            if abs(float(x) - float(y)) <= tolerance:
                continue
        except ValueError:
            pass
        return lx, ly
    if len(ta) != len(tb):
        k = min(len(ta), len(tb))
        return (ta[k][1] if k < len(ta) else len(a)), (tb[k][1] if k < len(tb) else len(b))
    return None


def _differs(data: bytes, written: bytes, records) -> str:
    diff = token_difference(data, written)
    if diff is None:
        return "roundtrip: same tokens (numbers within 1e-6)"
    return f"roundtrip: differs at line {diff[0]} (written line {diff[1]})"


def _validate(f: smd.SmdFile) -> list[Finding]:
    out = Findings()
    out.warnings(f.warnings)
    return out.items + validate(f)


check = Checker(read=smd.read, validate=_validate, write=smd.write, differs=_differs)


def diff_view(f: smd.SmdFile) -> dict:
    """What `skinbridge diff` compares of two SMD / VTA files: the records as read, the skeleton block as its
    frames (`time k`: the rest pose of a reference, the keys of an animation), each frame's rows named by their
    node (`frames[2].rows[1] (Bone): position`: a row is that bone's pose, not the row's place in the frame)."""
    names_of = {n.id: n.name for n in f.nodes}

    def rows(fr: smd.Frame) -> list[dict]:
        lines = fr.row_lines if fr.row_lines is not None else [None] * len(fr.bones)
        return [{"name": names_of.get(int(b), f"node {int(b)}"), "id": int(b), "position": fr.positions[k],
                 "rotation": fr.rotations[k], "line": lines[k]} for k, b in enumerate(fr.bones)]

    return {"version": f.version, "nodes": f.nodes,
            "frames": [{"time": fr.time, "comment": fr.comment, "line": fr.line, "rows": rows(fr)}
                       for fr in f.skeleton],
            "triangles": f.triangles, "vertex_animation": f.vertex_animation, "newline": f.newline}
