"""`skinbridge check` for Urho3D-family models (UMD2, UMDL, UMD3).

The codec keeps values that the layout allows but the meaning forbids (so that read → write stays
byte-identical); this module lists them as findings (`core.findings.Finding`: severity, element, byte
offset, field, message), one per offending record up to `core.check.MAX_PER_CHECK`, then a count of the rest.
Errors are what a writer refuses or what would index out of range or loop on import; warnings are what Urho3D
accepts but is probably not meant (weights that do not sum to 1, a bone rotation that is not unit length).

`check` runs the pipeline of core/check.py with these steps: after the findings, the records are written back
with the codec and compared with the file: `roundtrip: identical` or `roundtrip: differs at offset N (field F)`,
for every variant (the codec writes UMD2, UMDL and UMD3 alike). The animations' check (motion/check.py) shares
`name_size`, `field_of` and `element_read_error`.
"""
from __future__ import annotations

import bisect
import re

import numpy as np

from ...core.check import Checker, Findings
from ...core.check import read_error as file_read_error
from ...core.errors import FormatError
from ...core import names
from ...core.findings import Finding
from . import umd2

WEIGHT_SUM_TOLERANCE = 1e-3
UNIT_TOLERANCE = 1e-3  # |‖q‖ − 1| above this: not a unit quaternion

_FLOAT_TYPES = {umd2.TYPE["FLOAT"], umd2.TYPE["VECTOR2"], umd2.TYPE["VECTOR3"], umd2.TYPE["VECTOR4"]}


def name_size(name: str) -> int:
    """Bytes of a name as the file holds it (a name read from undecodable bytes keeps them as surrogates)."""
    return len(name.encode("utf-8", "surrogateescape"))


def field_of(marks: list[tuple[int, str]], offset: int) -> str:
    """The name of the last mark (offset, field name) at or before `offset`."""
    marks.sort()
    k = bisect.bisect_right([a for a, _ in marks], offset) - 1
    return marks[k][1] if k >= 0 else "?"

def _bone_field_offsets(m: umd2.Model, i: int) -> dict[str, int]:
    at = m.bone_offsets[i] + name_size(m.bones[i].name) + 1
    return {"name": m.bone_offsets[i], "parent": at, "initial position": at + 4, "initial rotation": at + 16,
            "initial scale": at + 32, "offset matrix": at + 44, "collision mask": at + 92,
            "collision radius": at + 93, "collision box": at + 93 + (4 if m.bones[i].radius is not None else 0)}


def _lod_offset(m: umd2.Model, g: int, k: int) -> int:
    return m.offsets[f"geometry {g}"] + 4 + 4 * len(m.geometries[g].bone_mapping) + 4 + 24 * k


_LOD_FIELDS = {"distance": 0, "primitive type": 4, "vertex buffer": 8, "index buffer": 12, "index start": 16,
               "index count": 20}


def _morph_buffer_offsets(m: umd2.Model, i: int) -> list[int]:
    """Offset of the first vertex of each buffer of morph i."""
    weighted = m.magic == "UMD3" and (m.version or 0) >= umd2.UMD3_MORPH_WEIGHT_VERSION
    at = m.offsets[f"morph {i}"] + name_size(m.morphs[i].name) + 1 + (4 if weighted else 0) + 4
    out = []
    for buf in m.morphs[i].buffers:
        at += 12
        out.append(at)
        at += buf.vertices.nbytes
    return out


def _column_offset(vb: umd2.VertexBuffer, name: str) -> int:
    return vb.vertices.dtype.fields[name][1]


def validate_model(m: umd2.Model) -> list[Finding]:
    """Every semantic fault of model records read from a file (offsets need `umd2.read`'s offsets)."""
    out = Findings()
    n_bones = len(m.bones)
    out.warnings(m.warnings)
    for b, vb in enumerate(m.vertex_buffers):
        _vertex_buffer(out, m, b, vb)
    used_indices: set[tuple[int, int]] = set()
    for g, geom in enumerate(m.geometries):
        _geometry(out, m, g, geom, n_bones, used_indices)
    for i, morph in enumerate(m.morphs):
        _morph(out, m, i, morph)
    _bones(out, m)
    out.items += names.findings([(f"bone {i}", b.name, m.bone_offsets[i] if i < len(m.bone_offsets) else None)
                                 for i, b in enumerate(m.bones)]
                                + [(f"morph {i}", mo.name, m.offsets.get(f"morph {i}"))
                                   for i, mo in enumerate(m.morphs)])
    bbox_at = m.offsets.get("bounding box")
    for label, value, at in (("bounding box min", m.bbox_min, bbox_at),
                             ("bounding box max", m.bbox_max, None if bbox_at is None else bbox_at + 12)):
        if not np.isfinite(np.asarray(value, np.float64)).all():
            out.add("error", "model", at, label, "value is not finite (NaN or infinity)")
    centers = np.asarray(m.centers, np.float64).reshape(-1, 3)
    c_at = m.offsets.get("geometry centers", 0)
    out.rows("error", ~np.isfinite(centers).all(axis=1), lambda k: f"geometry {k}", lambda k: c_at + 12 * k,
             "geometry center", lambda k: "value is not finite (NaN or infinity)")
    return out.items


def _vertex_buffer(out: Findings, m: umd2.Model, b: int, vb: umd2.VertexBuffer) -> None:
    data_at = m.offsets[f"vertex buffer {b} data"]
    stride = vb.vertices.dtype.itemsize
    v = vb.vertices
    if not len(v):
        return
    for name, e in zip(v.dtype.names, vb.elements):
        if e.type not in _FLOAT_TYPES:
            continue
        col = np.asarray(v[name], np.float64).reshape(len(v), -1)
        bad = ~np.isfinite(col).all(axis=1)
        col_at = _column_offset(vb, name)
        out.rows("error", bad, lambda i: f"vertex buffer {b} vertex {i}", lambda i: data_at + i * stride + col_at,
                 name, lambda i: "value is not finite (NaN or infinity)")
    if "BLENDWEIGHTS0" in v.dtype.names and v.dtype["BLENDWEIGHTS0"].shape == (4,):
        w = np.asarray(v["BLENDWEIGHTS0"], np.float64)
        finite = np.isfinite(w).all(axis=1)
        at = _column_offset(vb, "BLENDWEIGHTS0")
        negative = finite & (w < 0).any(axis=1)
        out.rows("warning", negative, lambda i: f"vertex buffer {b} vertex {i}", lambda i: data_at + i * stride + at,
                 "BLENDWEIGHTS0", lambda i: f"negative weight {w[i].tolist()}")
        sums = w.sum(axis=1)
        off = finite & ~negative & (np.abs(sums - 1) > WEIGHT_SUM_TOLERANCE)
        out.rows("warning", off, lambda i: f"vertex buffer {b} vertex {i}", lambda i: data_at + i * stride + at,
                 "BLENDWEIGHTS0", lambda i: f"weights sum to {sums[i]:.6g}, not 1 (within {WEIGHT_SUM_TOLERANCE:g})")


def _geometry(out: Findings, m: umd2.Model, g: int, geom: umd2.Geometry, n_bones: int,
              used_indices: set[tuple[int, int]]) -> None:
    g_at = m.offsets[f"geometry {g}"]
    mapping = np.asarray(geom.bone_mapping, np.int64)
    out.rows("error", mapping >= n_bones, lambda k: f"geometry {g}", lambda k: g_at + 4 + 4 * k,
             lambda k: f"bone mapping[{k}]",
             lambda k: f"bone index {int(mapping[k])} is not a bone (0..{n_bones - 1})")
    if not geom.lods:
        out.add("warning", f"geometry {g}", g_at, "LOD count", "geometry has no LOD level")
    previous = None
    for k, lod in enumerate(geom.lods):
        element = f"geometry {g} LOD {k}"
        at = _lod_offset(m, g, k)

        def err(field: str, message: str, severity: str = "error") -> None:
            out.add(severity, element, at + _LOD_FIELDS[field], field, message)

        if not np.isfinite(lod.distance):
            err("distance", "value is not finite (NaN or infinity)")
        elif previous is not None and lod.distance < previous:
            err("distance", f"distance {lod.distance:g} is below the previous level's {previous:g}", "warning")
        previous = lod.distance if np.isfinite(lod.distance) else previous
        if lod.primitive_type >= len(umd2.PRIMITIVE_TYPES):
            err("primitive type", f"primitive type {lod.primitive_type} is not 0..{len(umd2.PRIMITIVE_TYPES) - 1}")
        if lod.vertex_buffer >= len(m.vertex_buffers):
            err("vertex buffer", f"vertex buffer {lod.vertex_buffer} is not 0..{len(m.vertex_buffers) - 1}")
            continue
        if lod.index_buffer >= len(m.index_buffers):
            err("index buffer", f"index buffer {lod.index_buffer} is not 0..{len(m.index_buffers) - 1}")
            continue
        ib = m.index_buffers[lod.index_buffer]
        if lod.index_start + lod.index_count > len(ib.indices):
            err("index count", f"indices {lod.index_start}+{lod.index_count} run past the {len(ib.indices)} stored")
            continue
        if lod.primitive_type == 0 and lod.index_count % 3:
            err("index count", f"{lod.index_count} indices is not a multiple of 3 for a triangle list", "warning")
        vb = m.vertex_buffers[lod.vertex_buffer]
        n_vertices = len(vb.vertices)
        idx = np.asarray(ib.indices[lod.index_start:lod.index_start + lod.index_count], np.int64)
        ib_at = m.offsets[f"index buffer {lod.index_buffer} data"]
        ks = np.flatnonzero(idx >= n_vertices) + lod.index_start
        fresh = np.array([(lod.index_buffer, int(x)) not in used_indices for x in ks], bool)
        used_indices.update((lod.index_buffer, int(x)) for x in ks)
        out.rows("error", np.isin(np.arange(len(ib.indices)), ks[fresh]),
                 lambda x: f"index buffer {lod.index_buffer} index {x}", lambda x: ib_at + x * ib.index_size, "index",
                 lambda x: f"vertex index {int(ib.indices[x])} is not a vertex of vertex buffer {lod.vertex_buffer} "
                           f"(0..{n_vertices - 1})")
        _blend_indices(out, m, g, lod.vertex_buffer, vb, idx[idx < n_vertices], mapping, n_bones)


def _blend_indices(out: Findings, m: umd2.Model, g: int, b: int, vb: umd2.VertexBuffer, used: np.ndarray,
                   mapping: np.ndarray, n_bones: int) -> None:
    """Blend indices of the vertices a geometry draws, within its bone mapping (or the skeleton when the mapping
    is empty), for every slot with a non-zero weight."""
    names = vb.vertices.dtype.names
    if not len(used) or "BLENDINDICES0" not in names or "BLENDWEIGHTS0" not in names:
        return
    if vb.vertices.dtype["BLENDINDICES0"].shape != (4,) or vb.vertices.dtype["BLENDWEIGHTS0"].shape != (4,):
        return
    rows = np.unique(used)
    local = vb.vertices["BLENDINDICES0"][rows].astype(np.int64)
    live = vb.vertices["BLENDWEIGHTS0"][rows] != 0
    limit = len(mapping) if len(mapping) else n_bones
    what = f"geometry {g}'s bone mapping (0..{limit - 1})" if len(mapping) else f"a bone (0..{limit - 1})"
    bad = live & (local >= limit)
    data_at = m.offsets[f"vertex buffer {b} data"]
    stride = vb.vertices.dtype.itemsize
    col = _column_offset(vb, "BLENDINDICES0")
    first_slot = np.argmax(bad, axis=1)
    out.rows("error", bad.any(axis=1), lambda r: f"vertex buffer {b} vertex {int(rows[r])}",
             lambda r: data_at + int(rows[r]) * stride + col + int(first_slot[r]),
             lambda r: f"BLENDINDICES0[{int(first_slot[r])}]",
             lambda r: f"blend index {int(local[r, first_slot[r]])} is not in {what}")


def _morph(out: Findings, m: umd2.Model, i: int, morph: umd2.Morph) -> None:
    starts = _morph_buffer_offsets(m, i)
    for k, buf in enumerate(morph.buffers):
        element = f"morph {i} ({morph.name}) buffer {k}"
        if buf.vertex_buffer >= len(m.vertex_buffers):
            out.add("error", element, starts[k] - 12, "vertex buffer",
                    f"vertex buffer {buf.vertex_buffer} is not 0..{len(m.vertex_buffers) - 1}")
            continue
        n = len(m.vertex_buffers[buf.vertex_buffer].vertices)
        v = buf.vertices
        size = v.dtype.itemsize
        idx = v["index"].astype(np.int64)
        out.rows("error", idx >= n, lambda j: f"{element} vertex {j}", lambda j: starts[k] + j * size, "index",
                 lambda j: f"vertex index {int(idx[j])} is not a vertex of vertex buffer {buf.vertex_buffer} "
                           f"(0..{n - 1})")
        for name in v.dtype.names[1:]:
            bad = ~np.isfinite(np.asarray(v[name], np.float64)).all(axis=1)
            at = v.dtype.fields[name][1]
            out.rows("error", bad, lambda j: f"{element} vertex {j}", lambda j: starts[k] + j * size + at, name,
                     lambda j: "value is not finite (NaN or infinity)")
    if morph.default_weight is not None and not np.isfinite(morph.default_weight):
        out.add("error", f"morph {i} ({morph.name})", m.offsets[f"morph {i}"] + name_size(morph.name) + 1,
                "default weight", "value is not finite (NaN or infinity)")


def _bones(out: Findings, m: umd2.Model) -> None:
    n = len(m.bones)
    seen: dict[str, int] = {}
    for i, b in enumerate(m.bones):
        element = f"bone {i} ({b.name})"
        at = _bone_field_offsets(m, i)
        if b.name in seen:
            out.add("warning", element, at["name"], "name", f"same name as bone {seen[b.name]}; Urho3D finds bones "
                    "by name, so only the first is animated")
        seen.setdefault(b.name, i)
        if b.parent != i and not 0 <= b.parent < n:
            out.add("error", element, at["parent"], "parent",
                    f"parent {b.parent} is not a bone (0..{n - 1}; its own index {i} for a root)")
        for field, value in (("initial position", b.position), ("initial rotation", b.rotation),
                             ("initial scale", b.scale), ("offset matrix", b.offset),
                             ("collision radius", b.radius), ("collision box", b.bbox)):
            if value is not None and not np.isfinite(np.asarray(value, np.float64)).all():
                out.add("error", element, at[field], field, "value is not finite (NaN or infinity)")
        offset = np.asarray(b.offset, np.float64).reshape(3, 4)
        if np.isfinite(offset).all():
            det = float(np.linalg.det(offset[:, :3]))
            if abs(det) < 1e-12 * max(1.0, float(np.abs(offset[:, :3]).max()) ** 3):
                out.add("error", element, at["offset matrix"], "offset matrix",
                        "offset (inverse bind) matrix is singular")
        q = np.asarray(b.rotation, np.float64)
        if np.isfinite(q).all() and abs(float(np.linalg.norm(q)) - 1) > UNIT_TOLERANCE:
            out.add("warning", element, at["initial rotation"], "initial rotation",
                    f"quaternion length {float(np.linalg.norm(q)):.6g}, not 1")
    # parent cycles (a bone whose parent is itself is a root)
    state = [0] * n
    for start in range(n):
        path = []
        i = start
        while 0 <= i < n and state[i] == 0 and m.bones[i].parent != i:
            state[i] = 1
            path.append(i)
            i = m.bones[i].parent
        if 0 <= i < n and state[i] == 1 and m.bones[i].parent != i:
            cycle = path[path.index(i):]
            first = min(cycle)
            names = " → ".join(f"{j} ({m.bones[j].name})" for j in cycle + [i])
            out.add("error", f"bone {first} ({m.bones[first].name})", _bone_field_offsets(m, first)["parent"],
                    "parent", f"parent cycle: {names}")
        for j in path:
            state[j] = 2


def model_field_at(m: umd2.Model, offset: int) -> str:
    """The field holding byte `offset` of the file `m` was read from (best effort, for messages)."""
    marks: list[tuple[int, str]] = [(0, "magic")]
    if m.magic == "UMD3":
        marks.append((4, "version"))
    for key, at in m.offsets.items():
        marks.append((at, key))
    for i in range(len(m.bones)):
        for name, at in _bone_field_offsets(m, i).items():
            marks.append((at, f"bone {i} ({m.bones[i].name}) {name}"))
    for g, geom in enumerate(m.geometries):
        for k in range(len(geom.lods)):
            for name, delta in _LOD_FIELDS.items():
                marks.append((_lod_offset(m, g, k) + delta, f"geometry {g} LOD {k} {name}"))
    for b, vb in enumerate(m.vertex_buffers):
        data_at = m.offsets[f"vertex buffer {b} data"]
        stride = vb.vertices.dtype.itemsize
        if stride and data_at <= offset < data_at + vb.vertices.nbytes:
            i, inner = divmod(offset - data_at, stride)
            fields = vb.vertices.dtype.fields
            name = max((f for f in vb.vertices.dtype.names if fields[f][1] <= inner), key=lambda f: fields[f][1])
            return f"vertex buffer {b} vertex {i} {name}"
    return field_of(marks, offset)


_ELEMENT = re.compile(r"^((?:vertex buffer|index buffer|geometry|morph|bone|track|variant track) \d+"
                      r"(?: \([^)]*\))?(?: (?:LOD|buffer|key) \d+)?) (.+)$")


def element_read_error(e: FormatError) -> Finding:
    """A structural fault as one finding, its element split from the reader's field name."""
    finding = file_read_error(e)
    m = _ELEMENT.match(finding.field)
    if m:
        finding.element, finding.field = m.group(1), m.group(2)
    return finding


check = Checker(read=umd2.read, validate=validate_model, write=umd2.write, field_at=model_field_at,
                read_error=element_read_error)
