"""`skinbridge check` for SMD / VTA: findings naming their line, then the write-back compared token by token.

Errors are what the writer and import refuse (a bone id or parent naming no node, duplicate node ids, a
parent cycle, numbers that are not finite); warnings are what studiomdl accepts and quietly changes: links
under 0.05 (dropped at compile time) and link weights that do not sum to 1 (renormalised at compile time).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..core.errors import FormatError
from ..core.findings import Finding, report
from . import smd

MAX_PER_CHECK = 10
SMALL_LINK = 0.05  # studiomdl drops links under this weight
SUM_TOLERANCE = 1e-4  # six-decimal weights of thirds sum to 0.999999


def _line(lines, k) -> str:
    return f"line {int(lines[k])}" if lines is not None and k < len(lines) else f"row {k}"


class _Findings:
    def __init__(self):
        self.items: list[Finding] = []

    def add(self, severity: str, element: str, field: str, message: str) -> None:
        self.items.append(Finding(severity, element, None, field, message))

    def rows(self, severity: str, bad: np.ndarray, lines, field: str, message: Callable[[int], str]) -> None:
        idx = np.flatnonzero(bad)
        for k in idx[:MAX_PER_CHECK]:
            self.add(severity, _line(lines, int(k)), field, message(int(k)))
        if len(idx) > MAX_PER_CHECK:
            self.add(severity, f"{len(idx) - MAX_PER_CHECK} more lines", field, "the same fault")


def validate(f: smd.SmdFile) -> list[Finding]:
    out = _Findings()
    ids: dict[int, smd.Node] = {}
    for n in f.nodes:
        if n.id in ids:
            out.add("error", f"line {n.line}", "node id", f"node id {n.id} is given twice")
        ids.setdefault(n.id, n)
    for n in f.nodes:
        if n.parent != -1 and n.parent not in ids:
            out.add("error", f"line {n.line}", "parent", f"node {n.id} ({n.name}) has parent {n.parent}, which is "
                                                        f"no node")
    seen: set[int] = set()
    nodes = list(f.nodes)
    while True:
        cycle = smd.parent_cycle(nodes)
        if cycle is None or cycle.id in seen:
            break
        seen.add(cycle.id)
        out.add("error", f"line {cycle.line}", "parent", f"node {cycle.id} ({cycle.name}) is in a parent cycle")
        nodes = [n for n in nodes if n.id != cycle.id]
    known = np.array(sorted(ids), np.int64)
    for fr in f.skeleton:
        out.rows("error", ~np.isin(fr.bones, known), fr.row_lines, "bone id",
                 lambda k, fr=fr: f"bone id {int(fr.bones[k])} (time {fr.time}) names no node")
        out.rows("error", ~np.isfinite(np.hstack([fr.positions, fr.rotations])).all(1), fr.row_lines, "bone row",
                 lambda k: "a number is not finite")
    t = f.triangles
    if t is not None and len(t.parents):
        out.rows("error", ~np.isin(t.parents, known), t.lines, "parent bone",
                 lambda k: f"parent bone {int(t.parents[k])} names no node")
        used = np.arange(t.link_bones.shape[1]) < t.link_counts[:, None]
        out.rows("error", (~np.isin(t.link_bones, known) & used).any(1), t.lines, "link bone",
                 lambda k: f"link bone {int(t.link_bones[k][used[k] & ~np.isin(t.link_bones[k], known)][0])} "
                           f"names no node")
        out.rows("error", ~np.isfinite(np.hstack([t.positions, t.normals, t.uvs, t.link_weights])).all(1),
                 t.lines, "vertex", lambda k: "a number is not finite")
        small = (t.link_weights < SMALL_LINK) & used
        out.rows("warning", small.any(1), t.lines, "link weight",
                 lambda k: f"a link of weight {float(t.link_weights[k][small[k]][0]):g} is under {SMALL_LINK} "
                           f"(studiomdl drops it)")
        sums = np.where(used, t.link_weights, 0).sum(1)
        out.rows("warning", (t.link_counts > 0) & (np.abs(sums - 1) > SUM_TOLERANCE), t.lines, "link weight",
                 lambda k: f"link weights sum to {float(sums[k]):.6f}, not 1 (studiomdl renormalises)")
    for fr in f.vertex_animation or ():
        out.rows("error", ~np.isfinite(np.hstack([fr.positions, fr.normals])).all(1), fr.row_lines, "vertex",
                 lambda k: "a number is not finite")
        out.rows("error", fr.vertices < 0, fr.row_lines, "vertex id", lambda k, fr=fr: f"vertex id "
                                                                                      f"{int(fr.vertices[k])} < 0")
    return out.items


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


def check_data(data: bytes) -> tuple[list[Finding], str]:
    try:
        f = smd.read(data)
    except FormatError as e:
        return [Finding("error", "file", e.offset, e.field or "", str(e))], "roundtrip: not attempted (unreadable)"
    findings = [Finding("warning", "file", None, "structure", w) for w in f.warnings] + validate(f)
    try:
        written = smd.write(f)
    except FormatError as e:
        return findings, f"roundtrip: write refused ({e})"
    if written == data:
        return findings, "roundtrip: identical"
    diff = token_difference(data, written)
    if diff is None:
        return findings, "roundtrip: same tokens (numbers within 1e-6)"
    return findings, f"roundtrip: differs at line {diff[0]} (written line {diff[1]})"


def check(path: str, data: bytes, out: Callable[[str], None] = print) -> int:
    findings, roundtrip = check_data(data)
    return report(findings, roundtrip, out)
