"""The file's own vertex records written again row by row, so that an edited model changes only where it was
edited (docs/urho.md §7, "Edited").

Import keeps a mesh's vertex records (`extras["urho"]["records"]`, file vertex i = mesh vertex i). Export
computes every vertex from what Blender holds and then, per vertex and field, writes the file's record where
what Blender holds is still the file's value:

* position: within `POSITION_CLOSE` of the mesh's size (a skinned mesh is read through its bones' matrices,
  a few float32 steps off; a moved vertex gets its new position);
* normal: the same direction within `NORMAL_CLOSE` (Blender holds a unit normal; a file may store another length),
  or non-finite in the file and in Blender alike (a file's NaN normal is written again, never made up);
* texture coordinates: within `UV_CLOSE` (v is flipped on the way in and out); colours: the same bytes;
* tangent: the file's while neither the vertex nor any vertex sharing a triangle with it changed position, normal
  or texture coordinates (tangents follow from those; Blender's MikkTSpace ones replace the file's only there),
  and where Blender makes none (a non-finite one beside a file's non-finite normal);
* a vertex no triangle uses (a line's, or an unreferenced one) has no corner in Blender to hold a normal, texture
  coordinates, colour or tangent: those are the file's, whatever its position.

Blend weights and indices are left to the geometries' bone mappings (model/convert.py). Records read with the
other profile's axes are first mapped into the axes written (a signed permutation: exact on float32).
"""
from __future__ import annotations

import warnings

import numpy as np

from ...core.errors import ExportError

POSITION_CLOSE = 1e-6  # relative to the larger of the coordinate and the mesh's largest coordinate
NORMAL_CLOSE = 1e-5  # per component, after scaling the file's normal to unit length
UV_CLOSE = 1e-6  # relative to the larger of 1 and the file's value
BLEND = ("BLENDWEIGHTS0", "BLENDINDICES0")
_CHECKED = {"POSITION0": "position", "NORMAL0": "normal", "TANGENT0": "tangent"}


def in_axes(records: np.ndarray, linear: np.ndarray) -> np.ndarray:
    """`records` with positions, normals and tangents' xyz mapped by the 3×3 `linear` (file axes → other axes)."""
    out = records.copy()
    names = records.dtype.names
    with np.errstate(all="ignore"):
        for name in ("POSITION0", "NORMAL0", "TANGENT0"):
            if name in names:
                v = records[name].astype(np.float64)
                v[:, :3] = v[:, :3] @ np.asarray(linear, np.float64).T
                out[name] = v
    return out


def _same_place(computed: np.ndarray, file: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        finite = np.abs(file[np.isfinite(file)])
        size = float(finite.max()) if finite.size else 1.0
        near = np.abs(computed - file) <= POSITION_CLOSE * np.maximum(size, np.abs(file))
    return (near | (computed == file) | (np.isnan(computed) & np.isnan(file))).all(axis=1)


def _same_direction(computed: np.ndarray, file: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        length = np.linalg.norm(file, axis=1, keepdims=True)
        unit = np.where(length > 0, file / np.where(length > 0, length, 1.0), file)
        close = (np.abs(computed - unit) <= NORMAL_CLOSE).all(axis=1)
    both_bad = ~np.isfinite(computed).all(axis=1) & ~np.isfinite(file).all(axis=1)
    return close | both_bad


def _close(computed: np.ndarray, file: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        near = np.abs(computed - file) <= UV_CLOSE * np.maximum(1.0, np.abs(file))
    return (near | (np.isnan(computed) & np.isnan(file))).all(axis=1)


def _spread(changed: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """`changed` and every vertex sharing a triangle with a changed one."""
    out = changed.copy()
    if len(triangles) and changed.any():
        hit = changed[triangles].any(axis=1)
        out[triangles[hit].reshape(-1)] = True
    return out


def kept_rows(rows: np.ndarray, records: np.ndarray, triangles: np.ndarray) -> dict[str, np.ndarray]:
    """Per field of `rows` (the computed vertices, file axes) but the blend ones: which rows take the file's
    record (the module's rules)."""
    n = len(rows)
    cornerless = np.ones(n, bool)
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    cornerless[triangles.reshape(-1)] = False
    keep: dict[str, np.ndarray] = {}
    changed = np.zeros(n, bool)
    for name in rows.dtype.names:
        if name in BLEND or name == "TANGENT0":
            continue
        a = rows[name].astype(np.float64).reshape(n, -1)
        b = records[name].astype(np.float64).reshape(n, -1)
        if name == "POSITION0":
            keep[name] = _same_place(a, b)
            changed |= ~keep[name]
            continue
        if name == "NORMAL0":
            same = _same_direction(a, b)
        elif rows.dtype[name].base.kind == "u":  # colours: bytes
            same = (a == b).all(axis=1)
        else:
            same = _close(a, b)
        changed |= ~same & ~cornerless
        keep[name] = same | cornerless
    if "TANGENT0" in rows.dtype.names:
        keep["TANGENT0"] = ~_spread(changed, triangles) | cornerless
        if "NORMAL0" in records.dtype.names:  # Blender makes no tangent beside a file's non-finite normal
            with np.errstate(all="ignore"):
                no_normal = ~np.isfinite(records["NORMAL0"].astype(np.float64)).all(axis=1)
                no_tangent = ~np.isfinite(rows["TANGENT0"].astype(np.float64)).all(axis=1)
            keep["TANGENT0"] |= no_tangent & _spread(no_normal, triangles)
    return keep


def merge(name: str, rows: np.ndarray, records: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Write the file's records into `rows` (a view of the vertices being written) where `kept_rows` allows;
    refuse a non-finite position, normal or tangent that does not come from the file, naming mesh `name` and the
    vertex. Returns which rows keep the file's position."""
    keep = kept_rows(rows, records, triangles)
    for field, mask in keep.items():
        rows[field][mask] = records[field][mask]
    for field, label in _CHECKED.items():
        if field in keep:
            with np.errstate(all="ignore"):
                bad = ~np.isfinite(rows[field].astype(np.float64)).all(axis=1) & ~keep[field]
            if bad.any():
                raise ExportError(f"mesh {name}: vertex {int(np.argmax(bad))} has a non-finite {label}")
    return keep["POSITION0"]


def edited_bounds(box, file_positions: np.ndarray, positions: np.ndarray, moved: bool):
    """The file's bounding box `box` (lo, hi) for the written `positions`: as it is while no vertex `moved`;
    else each side where the vertices' extreme changed follows it when the file's box was tight there (the file's
    own vertices bounded it), and only grows to take them in when the file's box was larger."""
    lo, hi = (np.asarray(v, np.float32).reshape(3) for v in box)
    if not moved or not len(positions):
        return lo, hi
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an axis of NaN only: NaN, as the file has it
        f_lo, f_hi = np.nanmin(file_positions, axis=0), np.nanmax(file_positions, axis=0)
        w_lo, w_hi = np.nanmin(positions, axis=0), np.nanmax(positions, axis=0)
    new_lo = np.where(w_lo == f_lo, lo, np.where(lo == f_lo, w_lo, np.minimum(lo, w_lo)))
    new_hi = np.where(w_hi == f_hi, hi, np.where(hi == f_hi, w_hi, np.maximum(hi, w_hi)))
    return new_lo.astype(np.float32), new_hi.astype(np.float32)

