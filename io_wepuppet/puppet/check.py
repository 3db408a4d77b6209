"""`skinbridge check` for Wallpaper Engine puppets and models (`.mdl`).

The codecs keep values that the layout allows but the meaning forbids (so that read → write stays
byte-identical); this module lists them as findings (severity, element, byte offset, field, message), one per
offending record up to `core.check.MAX_PER_CHECK`, then a count of the rest. Errors are what a writer refuses
or what would index out of range or loop on import (bone indices, vertex indices, parents, non-finite values);
warnings are what Wallpaper Engine accepts but is probably not meant (weights not summing to 1, a partial
triangle, more than the engine's 128 bones, a clip whose track count is not the bone count).

`check` runs the pipeline of core/check.py with these steps: after the findings the records are written back and
compared with the file: `roundtrip: identical` or `roundtrip: differs at offset N`.
"""
from __future__ import annotations

import numpy as np

from ...core.check import Checker, Findings
from ...core import names
from ...core.findings import Finding
from . import convert, mdl

WEIGHT_SUM_TOLERANCE = 1e-3
ENGINE_MAX_BONES = 128  # wallpaper64.exe refuses a skeleton above this (reference parser)
MODES = ("", "loop", "mirror", "single")


def _mesh(out: Findings, m: mdl.Model, k: int, mesh: mdl.Mesh, n_bones: int) -> None:
    v = mesh.vertices
    base = m.offsets.get(f"mesh {k} vertices", 0)
    stride = v.dtype.itemsize
    for name in v.dtype.names:
        if name == "joints":
            continue
        col = v[name].reshape(len(v), v.dtype[name].shape[0]).astype(np.float64)
        off = v.dtype.fields[name][1]
        out.rows("error", ~np.isfinite(col).all(axis=1), lambda i: f"mesh {k} vertex {i}",
                 lambda i: base + i * stride + off, name, lambda i: "value is not finite (NaN or infinity)")
    if "joints" in v.dtype.names:
        joints = v["joints"].astype(np.int64)
        weights = v["weights"].astype(np.float64) if "weights" in v.dtype.names else np.ones(joints.shape)
        live = weights != 0
        off = v.dtype.fields["joints"][1]
        out.rows("error", ((joints >= n_bones) & live).any(axis=1), lambda i: f"mesh {k} vertex {i}",
                 lambda i: base + i * stride + off, "joints",
                 lambda i: f"bone index {joints[i][(joints[i] >= n_bones) & live[i]].max()} of {n_bones} bones")
        if "weights" in v.dtype.names:
            off = v.dtype.fields["weights"][1]
            out.rows("error", (weights < 0).any(axis=1), lambda i: f"mesh {k} vertex {i}",
                     lambda i: base + i * stride + off, "weights", lambda i: "negative weight")
            total = weights.sum(axis=1)
            out.rows("warning", np.isfinite(total) & (np.abs(total - 1) > WEIGHT_SUM_TOLERANCE),
                     lambda i: f"mesh {k} vertex {i}", lambda i: base + i * stride + off, "weights",
                     lambda i: f"weights sum to {total[i]:.6g}, not 1")
    idx = np.asarray(mesh.indices, np.int64)
    ib = m.offsets.get(f"mesh {k} indices", 0)
    out.rows("error", idx >= len(v), lambda i: f"mesh {k} index {i}", lambda i: ib + i * mesh.index_size, "index",
             lambda i: f"vertex {idx[i]} of {len(v)}")
    if len(idx) % 3:
        out.add("warning", f"mesh {k}", ib, "indices", f"{len(idx)} indices: the last {len(idx) % 3} make no "
                                                       f"triangle")


def _skeleton(out: Findings, m: mdl.Model, sk: mdl.Skeleton) -> None:
    n = len(sk.bones)
    if n > ENGINE_MAX_BONES:
        out.add("warning", "skeleton", m.offsets.get("bone 0"), "bone count",
                f"{n} bones: Wallpaper Engine loads at most {ENGINE_MAX_BONES}")
    parents = np.array([b.parent for b in sk.bones], np.int64)
    out.rows("error", (parents < -1) | (parents >= n), lambda i: f"bone {i} ({sk.bones[i].name})",
             lambda i: m.offsets.get(f"bone {i}"), "parent", lambda i: f"parent {parents[i]} outside -1..{n - 1}")
    ok = (parents >= -1) & (parents < n)
    out.rows("error", ok & (parents >= np.arange(n)), lambda i: f"bone {i} ({sk.bones[i].name})",
             lambda i: m.offsets.get(f"bone {i}"), "parent",
             lambda i: f"parent {parents[i]} is not before the bone (a loop or a forward reference)")
    mats = np.array([b.matrix for b in sk.bones], np.float64).reshape(n, 16)
    out.rows("error", ~np.isfinite(mats).all(axis=1), lambda i: f"bone {i} ({sk.bones[i].name})",
             lambda i: m.offsets.get(f"bone {i} matrix"), "matrix", lambda i: "value is not finite (NaN or infinity)")


def _clips(out: Findings, m: mdl.Model, anims: mdl.Animations, n_bones: int) -> None:
    for k, c in enumerate(anims.clips):
        p = f"clip {k} ({c.name})"
        if not (np.isfinite(c.fps) and c.fps > 0):
            out.add("error", p, m.offsets.get(f"clip {k} fps"), "fps", f"fps {c.fps} is not a positive number")
        if c.mode not in MODES:
            out.add("warning", p, m.offsets.get(f"clip {k}"), "mode", f"mode {c.mode!r} is not one of {MODES[1:]}")
        if len(c.track_flags) != n_bones:
            out.add("warning", p, m.offsets.get(f"clip {k} tracks"), "track count",
                    f"{len(c.track_flags)} tracks for {n_bones} bones")
        if not len(c.track_flags):
            continue
        s = np.asarray(c.samples, np.float64).reshape(len(c.track_flags), (c.length + 1) * mdl.SAMPLE_FLOATS)
        per_track = 8 + 36 * (c.length + 1)
        base = m.offsets.get(f"clip {k} tracks", 0)
        out.rows("error", ~np.isfinite(s).all(axis=1), lambda t: f"{p} track {t}", lambda t: base + t * per_track + 8,
                 "samples", lambda t: "value is not finite (NaN or infinity)")


def validate_model(m: mdl.Model) -> list[Finding]:
    out = Findings()
    out.warnings(m.warnings)
    sk = m.skeleton
    n_bones = len(sk.bones) if sk else 0
    for k, mesh in enumerate(m.meshes):
        _mesh(out, m, k, mesh, n_bones)
    if sk:
        _skeleton(out, m, sk)
        out.items += names.findings([(f"bone {i}", b.name, m.offsets.get(f"bone {i}"))
                                     for i, b in enumerate(sk.bones)])
    for i, a in enumerate(m.attachments):
        at = m.offsets.get(f"attachment {i}")
        if a.bone >= n_bones:
            out.add("error", f"attachment {i} ({a.name})", at, "bone", f"bone {a.bone} of {n_bones}")
        if not np.isfinite(np.asarray(a.matrix, np.float64)).all():
            out.add("error", f"attachment {i} ({a.name})", at, "matrix", "value is not finite (NaN or infinity)")
    if m.animations:
        _clips(out, m, m.animations, n_bones)
    return out.items


check = Checker(read=mdl.read, validate=validate_model, write=mdl.write)


def diff_view(m: mdl.Model) -> dict:
    """What `skinbridge diff` compares of two `.mdl` files: the records as read, except that bones are named as
    Blender names them (`convert.bone_names`: "bone_3" for a bone without a name), each clip's samples are one
    array per bone named after it ("clips[0] (Walk).bones[3] (Neck)", frames as rows: a clip made longer adds
    rows) and the zero padding after the end tag is the size it pads the file to (a writer's fixed buffer:
    a model that shrinks pads more), other bytes there as they are."""
    sk = m.skeleton
    bone_names = convert.bone_names(sk) if sk is not None else []

    def clip(c: mdl.Clip) -> dict:
        out = {k: getattr(c, k) for k in ("id", "reserved", "name", "mode", "fps", "length", "flags", "blocks",
                                          "reference", "events")}
        out["bones"] = [{"name": bone_names[i] if i < len(bone_names) else f"track {i}", "flags": c.track_flags[i],
                         "frames": c.samples[i]} for i in range(len(c.track_flags))]
        return out

    def body(b):
        if isinstance(b, mdl.Animations):
            return {"version": b.version, "clips": [clip(c) for c in b.clips]}
        if isinstance(b, mdl.Skeleton):  # each bone by the name it has in Blender, its file name a field
            return {"version": b.version, "tables": b.tables,
                    "bones": [{"name": shown, "file name": bone.name, "flags": bone.flags, "parent": bone.parent,
                               "matrix": bone.matrix, "props": bone.props, "matrix_length": bone.matrix_length}
                              for shown, bone in zip(bone_names, b.bones)]}
        return b

    sections = [{"tag": s.tag, "body": body(s.body)} for s in m.sections]
    zeros = m.tail.count(0) == len(m.tail) and "tail" in m.offsets
    return {"tag": m.tag, "legacy_format": m.legacy_format, "materials_per_mesh": m.materials_per_mesh,
            "meshes": m.meshes, "sections": sections, "end_tag": m.end_tag,
            "padding": {"zeros to size": m.offsets["tail"] + len(m.tail)} if zeros and m.tail else
            {"bytes": m.tail}}
