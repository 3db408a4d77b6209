"""What the MDB layout allows but the meaning forbids: findings with element, byte offset and field.

The codec keeps such values so that read → write stays byte-identical; `skinbridge check FILE` lists them
(`check`: the pipeline of core/check.py with these steps), writes the records back with the codec and names the
first differing offset.
"""
from __future__ import annotations


import numpy as np

from ...core.check import Checker, Findings
from ...core.errors import quiet_float_errors
from ...core.findings import Finding
from . import mdb

WEIGHT_SUM_TOLERANCE = 1e-4
WALK_MATERIAL_BITS = 0x3FF8  # bits 3–13: the surface material
WALK_KNOWN_BITS = WALK_MATERIAL_BITS | 0x1


def _at(p, rel: int) -> int | None:
    return None if p.offset is None else p.offset + rel


def _label(i: int, p) -> str:
    name = getattr(p, "name_text", None)
    return f"packet {i} {p.type}" + (f" ({name})" if name else "")


def _faces(out: Findings, i: int, p, faces: np.ndarray, n_vertices: int, faces_at: int, face_size: int) -> None:
    if not len(faces) or int(faces.max()) < n_vertices:
        return
    bad = (faces >= n_vertices).any(axis=1)
    out.rows("error", bad, lambda f: f"{_label(i, p)} face {f}", lambda f: _at(p, faces_at + f * face_size),
             "faces", lambda f: f"vertex index {int(faces[f].max())} beyond the {n_vertices} vertices")


def _column_sums(vertices: np.ndarray) -> np.ndarray | None:
    """Float64 sums of every 4-byte column of the vertex records read as float32 (one pass over the packet);
    None when the records are not whole 4-byte words."""
    dtype = vertices.dtype
    if dtype.itemsize % 4 or not vertices.flags.c_contiguous or not len(vertices):
        return None
    words = vertices.reshape(-1).view(np.uint8).view("<f4").reshape(len(vertices), dtype.itemsize // 4)
    return words.sum(axis=0, dtype=np.float64)


def _finite(out: Findings, i: int, p, vertices: np.ndarray, names: tuple[str, ...], base: int) -> None:
    dtype = vertices.dtype
    column_sums = _column_sums(vertices)
    for name in names:
        sub, rel = dtype.fields[name][:2]
        width = int(np.prod(sub.shape, dtype=np.int64))
        if column_sums is not None and sub.base == np.dtype("<f4") and rel % 4 == 0:
            field_sum = column_sums[rel // 4: rel // 4 + width].sum()
        else:
            field_sum = vertices[name].sum(dtype=np.float64)
        if np.isfinite(field_sum):  # a NaN or an infinity makes the sum non-finite
            continue
        values = vertices[name].reshape(len(vertices), width)
        bad = ~np.isfinite(values).all(axis=1)
        out.rows("error", bad, lambda v: f"{_label(i, p)} vertex {v}",
                 lambda v: _at(p, base + v * dtype.itemsize + rel), name, lambda v: "not a finite number")


def _mesh(out: Findings, i: int, p: mdb.MeshPacket) -> None:
    dtype = mdb.VERTEX_DTYPES[p.type]
    base = mdb.MESH_HEADER_SIZE[p.type]
    v = p.vertices
    floats = tuple(n for n in dtype.names if dtype.fields[n][0].base.kind == "f")
    _finite(out, i, p, v, floats, base)
    mat = p.material
    mat_at = base - 8 - mdb.MATERIAL_SIZE
    for field, rel in (("material.diffuse_color", 128), ("material.specular_color", 140)):
        values = mat.diffuse_color if field.endswith("diffuse_color") else mat.specular_color
        if not np.isfinite(np.asarray(values, np.float64)).all():
            out.add("error", _label(i, p), _at(p, mat_at + rel), field, "not a finite number")
    for field, value, rel in (("material.specular_level", mat.specular_level, 152),
                              ("material.specular_power", mat.specular_power, 156)):
        if not np.isfinite(np.float64(value)):
            out.add("error", _label(i, p), _at(p, mat_at + rel), field, "not a finite number")
    if len(v) > 65536:
        out.add("error", _label(i, p), _at(p, base - 8), "vertex_count",
                f"{len(v)} vertices; u16 faces reach 65,536")
    _faces(out, i, p, p.faces, len(v), base + len(v) * dtype.itemsize, 6)
    if p.type != "SKIN":
        return
    if not mdb.text_of(p.skeleton):
        out.add("warning", _label(i, p), _at(p, 40), "skeleton", "empty skeleton name: the game needs one")
    w = v["weights"].astype(np.float64)
    off_one = np.abs(w.sum(axis=1) - 1.0) > WEIGHT_SUM_TOLERANCE
    rel_w = dtype.fields["weights"][1]
    if off_one.any():
        out.rows("warning", off_one & np.isfinite(w).all(axis=1), lambda k: f"{_label(i, p)} vertex {k}",
                 lambda k: _at(p, base + k * dtype.itemsize + rel_w), "weights",
                 lambda k: f"weights sum to {w[k].sum():.6g}, not 1")
    if len(w) and w.min() < 0:
        out.rows("warning", (w < 0).any(axis=1), lambda k: f"{_label(i, p)} vertex {k}",
                 lambda k: _at(p, base + k * dtype.itemsize + rel_w), "weights", lambda k: "negative weight")
    count = v["bone_count"]
    bad_count = ~np.isin(count, np.array((1, 2, 3, 4), count.dtype)) & np.isfinite(count)
    rel_c = dtype.fields["bone_count"][1]
    out.rows("warning", bad_count, lambda k: f"{_label(i, p)} vertex {k}",
             lambda k: _at(p, base + k * dtype.itemsize + rel_c), "bone_count",
             lambda k: f"bone count {count[k]:g} is not 1, 2, 3 or 4")


def _walk(out: Findings, i: int, p: mdb.WalkPacket) -> None:
    base = mdb.WALK_HEADER_SIZE
    if p.ui_flags:
        out.add("warning", _label(i, p), _at(p, 40), "ui_flags", f"ui_flags {p.ui_flags:#x}; every known file has 0")
    bad = ~np.isfinite(p.vertices).all(axis=1)
    out.rows("error", bad, lambda v: f"{_label(i, p)} vertex {v}", lambda v: _at(p, base + 12 * v), "position",
             lambda v: "not a finite number")
    faces_at = base + 12 * len(p.vertices)
    _faces(out, i, p, p.faces["v"], len(p.vertices), faces_at, 10)
    flags = p.faces["flags"]
    out.rows("warning", (flags & ~np.uint32(WALK_KNOWN_BITS)) != 0, lambda f: f"{_label(i, p)} face {f}",
             lambda f: _at(p, faces_at + 10 * f + 6), "flags", lambda f: f"flags {int(flags[f]):#x} set reserved bits")


def _cols(out: Findings, i: int, p: mdb.ColsPacket) -> None:
    r = p.spheres["radius"].astype(np.float64)
    out.rows("error", ~np.isfinite(r) | (r < 0), lambda k: f"{_label(i, p)} sphere {k}",
             lambda k: _at(p, 12 + 8 * k + 4), "radius", lambda k: f"radius {r[k]:g} is not a finite size")


def _point(out: Findings, i: int, p: mdb.PointPacket) -> None:
    if not np.isfinite(np.asarray(p.position, np.float64)).all():
        out.add("error", _label(i, p), _at(p, 44), "position", "not a finite number")
    if not np.isfinite(np.asarray(p.orientation, np.float64)).all():
        out.add("error", _label(i, p), _at(p, 56), "orientation", "not a finite number")
    if p.type == "HAIR" and p.kind >= len(mdb.HAIR_SHORTENING):
        out.add("warning", _label(i, p), _at(p, 40), "shortening", f"shortening {p.kind} is not 0..2")
    if p.type == "HELM" and p.kind >= len(mdb.HELM_HIDING):
        out.add("warning", _label(i, p), _at(p, 40), "hiding", f"hiding {p.kind} is not 0..3")


@quiet_float_errors
def validate(m: mdb.MdbFile) -> list[Finding]:
    out = Findings()
    out.warnings(m.warnings)
    for i, p in enumerate(m.packets):
        if isinstance(p, mdb.MeshPacket):
            _mesh(out, i, p)
        elif isinstance(p, mdb.WalkPacket):
            _walk(out, i, p)
        elif isinstance(p, mdb.ColsPacket):
            _cols(out, i, p)
        elif isinstance(p, mdb.PointPacket):
            _point(out, i, p)
        elif p.type == "TRRN":
            out.add("warning", _label(i, p), p.offset, "type", "TRRN packet kept as raw bytes (layout unknown)")
        if getattr(p, "extra", b""):
            out.add("warning", _label(i, p), p.offset, "size",
                    f"{len(p.extra)} bytes beyond what the counts need, kept as they are")
    for i, gap in enumerate(m.gaps):
        if gap:
            out.add("warning", f"packet {i}", None, "offset", f"{len(gap)} bytes before the packet, kept as they are")
    if m.tail:
        out.add("warning", "file", None, "file", f"{len(m.tail)} bytes after the last packet, kept as they are")
    return out.items


check = Checker(read=mdb.read, validate=validate, write=mdb.write)
