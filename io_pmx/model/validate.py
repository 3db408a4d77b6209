"""Semantic checks of PMX records: what the layout allows but the meaning forbids.

The codec keeps such values so that read → write stays byte-identical; this module lists them. Exporters run
`validate(model, for_export=True)` on the records they are about to write and refuse any error
(`raise_for_errors`); `skinbridge check FILE` runs them through `check.check` (io_pmx/model/check.py), which
also writes the records back with the codec and compares the bytes.

Each finding names the element (`bone 12 (左ひざ)`, `vertex 5`, `左足ＩＫ link 0 (左ひざ)`), the byte offset of
the field in the file (None for records built in memory) and the field (`parent`, `position`,
`ik.links[0].lower`).
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from ...core.check import Findings
from ...core.errors import ExportError, quiet_float_errors
from ...core.findings import Finding  # noqa: F401  (Finding re-exported)
from . import pmx
from .pmx import BoneFlag, PmxModel

WEIGHT_SUM_TOLERANCE = 1e-3


def _finite(value) -> bool:
    return value is None or bool(np.all(np.isfinite(np.asarray(value, dtype=np.float64))))


def _name(items: list, i: int) -> str:
    return f" ({items[i].name})" if 0 <= i < len(items) else ""


class _Checker(Findings):
    def __init__(self, m: PmxModel, for_export: bool):
        super().__init__()
        self.m = m
        self.for_export = for_export
        self.n_vertices = len(m.vertices)
        self.n_bones = len(m.bones)

    def error(self, element: str, offset: int | None, field: str, message: str) -> None:
        self.add("error", element, offset, field, message)

    def warning(self, element: str, offset: int | None, field: str, message: str) -> None:
        self.add("warning", element, offset, field, message)

    # -- whole model -----------------------------------------------------------------------------------------
    def run(self) -> list[Finding]:
        m = self.m
        from_file = bool(m.at)  # header fields sit at fixed offsets in a file
        if m.encoding not in (pmx.ENCODING_UTF16, pmx.ENCODING_UTF8):
            self.error("header", 9 if from_file else None, "encoding", f"text encoding {m.encoding} is not 0 or 1")
        if m.additional_uvs > 4:
            self.error("header", 10 if from_file else None, "additional UV count",
                       f"{m.additional_uvs} additional UVs, at most 4")
        version = pmx.write_version(m)
        if abs(float(version) - 2.0) < pmx.VERSION_TOLERANCE and pmx.needs_pmx21(m):
            self.warning("header", 4 if from_file else None, "version",
                         "PMX 2.0 file holds 2.1-only data (QDEF, flip/impulse morph, joint type other than 0 "
                         "or material flags 0x20-0x80); MMD ignores it")
        self.vertices()
        self.faces()
        for i, mat in enumerate(m.materials):
            self.material(i, mat)
        self.material_ranges()
        for i, bone in enumerate(m.bones):
            self.bone(i, bone)
        self.parent_cycles()
        for i, morph in enumerate(m.morphs):
            self.morph(i, morph)
        for i, frame in enumerate(m.display_frames):
            self.display_frame(i, frame)
        for i, body in enumerate(m.rigid_bodies):
            self.rigid_body(i, body)
        for i, joint in enumerate(m.joints):
            self.joint(i, joint)
        for i, body in enumerate(m.soft_bodies):
            self.soft_body(i, body)
        return self.items

    # -- vertices and faces ----------------------------------------------------------------------------------
    def vertices(self) -> None:
        m, v = self.m, self.m.vertices
        if not len(v):
            return
        deform = v["deform"]
        element = lambda i: f"vertex {i}"  # noqa: E731
        bad_type = deform > pmx.QDEF
        self.rows("error", bad_type, element, lambda i: pmx.vertex_field_offset(m, i, "deform"), "deform",
                  lambda i: f"deform type {int(deform[i])} is not 0..4")
        sdef = deform == pmx.SDEF
        float_fields = [("position", None), ("normal", None), ("uv", None), ("add_uv", None),
                        ("edge_scale", None), ("weights", None), ("sdef_c", sdef), ("sdef_r0", sdef),
                        ("sdef_r1", sdef)]
        for name, only in float_fields:
            values = v[name].reshape(len(v), -1)
            bad = ~np.isfinite(values).all(axis=1)
            if only is not None:
                bad &= only
            self.rows("error", bad, element, lambda i, n=name: pmx.vertex_field_offset(m, i, n), name,
                      lambda i: "value is not finite (NaN or infinity)")
        used = np.arange(4)[None, :] < np.array(pmx.DEFORM_BONE_COUNT + (0,) * 251, np.int64)[deform][:, None]
        bones, weights = v["bones"], v["weights"]
        for k in range(4):
            b = bones[:, k]
            slot_used = used[:, k]
            out = slot_used & ((b >= self.n_bones) | (b < -1) | ((b == -1) & (weights[:, k] != 0)))
            self.rows("error", out, element, lambda i, k=k: pmx.vertex_field_offset(m, i, "bones", k),
                      f"bones[{k}]", lambda i, k=k: f"bone index {int(bones[i, k])} is not a bone "
                      f"(0..{self.n_bones - 1}{', or -1 with weight 0' if deform[i] in (2, 4) else ''})")
        two = (deform == pmx.BDEF2) | (deform == pmx.SDEF)
        w = weights.astype(np.float64)
        dropped = ((deform == pmx.BDEF1) & ((w[:, 0] != 1) | (w[:, 1:] != 0).any(axis=1))) | (
            two & ((np.abs(w[:, 0] + w[:, 1] - 1) > 1e-6) | (w[:, 2:] != 0).any(axis=1)))
        dropped &= np.isfinite(w).all(axis=1)
        self.rows("error" if self.for_export else "warning", dropped, element,
                  lambda i: pmx.vertex_field_offset(m, i, "weights"), "weights",
                  lambda i: f"{pmx.DEFORM_NAMES[deform[i]]} stores "
                            f"{'no weight' if deform[i] == pmx.BDEF1 else 'only weights[0] (weights[1] = 1 - it)'}"
                            f"; weights {w[i].tolist()} would not survive writing")
        four = (deform == pmx.BDEF4) | (deform == pmx.QDEF)
        sums = weights.astype(np.float64).sum(axis=1)
        off = four & np.isfinite(sums) & (np.abs(sums - 1.0) > WEIGHT_SUM_TOLERANCE)
        self.rows("error" if self.for_export else "warning", off, element,
                  lambda i: pmx.vertex_field_offset(m, i, "weights"), "weights",
                  lambda i: f"{pmx.DEFORM_NAMES[deform[i]]} weights sum to {sums[i]:.6g}, not 1 "
                            f"(within {WEIGHT_SUM_TOLERANCE:g})")

    def faces(self) -> None:
        m = self.m
        idx = np.asarray(m.indices)
        start = m.at.get("indices")
        size = m.index_sizes.vertex if m.index_sizes else None
        offset = (lambda k: start + k * size) if start is not None and size else (lambda k: None)
        if len(idx) % 3:
            self.error("faces", m.at.get("index count"), "index count",
                       f"{len(idx)} face vertex indices is not a multiple of 3")
        bad = (idx < 0) | (idx >= self.n_vertices)
        self.rows("error", bad, lambda k: f"face {k // 3}", offset, lambda k: f"indices[{k}]",
                  lambda k: f"vertex index {int(idx[k])} is not a vertex (0..{self.n_vertices - 1})")

    # -- materials -------------------------------------------------------------------------------------------
    def material(self, i: int, mat: pmx.PmxMaterial) -> None:
        element = f"material {i} ({mat.name})"
        n_tex = len(self.m.textures)
        for name in ("diffuse", "specular", "specular_power", "ambient", "edge_color", "edge_size"):
            if not _finite(getattr(mat, name)):
                self.error(element, mat.at.get(name), name, "value is not finite (NaN or infinity)")
        fields = ["texture", "sphere_texture"] + (["toon"] if mat.shared_toon == 0 else [])
        for name in fields:
            t = getattr(mat, name)
            if not -1 <= t < n_tex:
                self.error(element, mat.at.get(name), name, f"texture index {t} is not -1 or 0..{n_tex - 1}")
        if mat.shared_toon == 1 and not 0 <= mat.toon <= 9:
            self.warning(element, mat.at.get("toon"), "toon", f"shared toon {mat.toon} is not 0..9")
        if mat.shared_toon not in (0, 1):
            self.error(element, mat.at.get("shared_toon"), "shared_toon", f"flag {mat.shared_toon} is not 0 or 1")
        if mat.sphere_mode > 3:
            self.warning(element, mat.at.get("sphere_mode"), "sphere_mode",
                         f"sphere mode {mat.sphere_mode} is not 0..3")
        if mat.index_count < 0 or mat.index_count % 3:
            self.error(element, mat.at.get("index_count"), "index_count",
                       f"{mat.index_count} is not a non-negative multiple of 3")

    def material_ranges(self) -> None:
        total = sum(mat.index_count for mat in self.m.materials)
        if self.m.materials and total != len(self.m.indices):
            self.error("materials", self.m.at.get("material count"), "index_count",
                       f"materials consume {total} face vertex indices, the model has {len(self.m.indices)}")

    # -- bones -----------------------------------------------------------------------------------------------
    def bone_index(self, element: str, at: dict, field: str, value: int | None, allow_none: bool,
                   key: str | None = None) -> None:
        if value is None:
            return
        low = -1 if allow_none else 0
        if not low <= value < self.n_bones:
            allowed = f"{'-1 or ' if allow_none else ''}0..{self.n_bones - 1}"
            self.error(element, at.get(key or field), field, f"bone index {value} is not {allowed}")

    def bone(self, i: int, b: pmx.PmxBone) -> None:
        element = f"bone {i} ({b.name})"
        at = b.at
        self.bone_index(element, at, "parent", b.parent, True)
        if b.parent == i:
            self.error(element, at.get("parent"), "parent", "bone is its own parent")
        self.flags(element, b)
        self.bone_index(element, at, "tail", b.tail_bone, True)
        if b.append_parent is not None:
            self.bone_index(element, at, "append_parent", b.append_parent, True)
            if b.append_parent == -1:
                self.warning(element, at.get("append_parent"), "append_parent",
                             "append (付与) flag set without an append parent: it has no effect")
        for name in ("position", "tail_offset", "append_ratio", "fixed_axis", "local_x", "local_z"):
            if not _finite(getattr(b, name)):
                self.error(element, at.get("tail" if name == "tail_offset" else name), name,
                           "value is not finite (NaN or infinity)")
        if b.ik is not None:
            self.ik(i, b, element)

    def flags(self, element: str, b: pmx.PmxBone) -> None:
        """The optional parts of a bone exist exactly when its flags say so."""
        f = b.flags
        at = b.at.get("flags")
        parts = [
            (BoneFlag.TAIL_IS_BONE, "tail_bone", b.tail_bone is not None),
            (BoneFlag.APPEND_ROTATE | BoneFlag.APPEND_MOVE, "append_parent",
             b.append_parent is not None and b.append_ratio is not None),
            (BoneFlag.FIXED_AXIS, "fixed_axis", b.fixed_axis is not None),
            (BoneFlag.LOCAL_AXES, "local_x/local_z", b.local_x is not None and b.local_z is not None),
            (BoneFlag.EXTERNAL_PARENT, "external_key", b.external_key is not None),
            (BoneFlag.IK, "ik", b.ik is not None),
        ]
        for flag, name, present in parts:
            if bool(f & flag) and not present:
                self.error(element, at, "flags", f"flag 0x{int(flag):04x} is set but {name} is missing")
            elif present and not f & flag:
                self.error(element, at, "flags", f"{name} is present but flag 0x{int(flag):04x} is clear")
        if not f & BoneFlag.TAIL_IS_BONE and b.tail_offset is None:
            self.error(element, at, "flags", "flag 0x0001 is clear but tail_offset is missing")
        if not 0 <= f <= 0xFFFF:
            self.error(element, at, "flags", f"flags {f} do not fit 16 bits")

    def ik(self, i: int, b: pmx.PmxBone, element: str) -> None:
        ik, at = b.ik, b.at
        if not 0 <= ik.target < self.n_bones:
            self.error(element, at.get("ik.target"), "ik.target",
                       f"IK target {ik.target} is not a bone (0..{self.n_bones - 1})")
        if not _finite(ik.limit_angle):
            self.error(element, at.get("ik.limit_angle"), "ik.limit_angle", "value is not finite (NaN or infinity)")
        for k, link in enumerate(ik.links):
            field = f"ik.links[{k}]"
            if not 0 <= link.bone < self.n_bones:
                self.error(element, link.at.get("bone"), f"{field}.bone",
                           f"IK link bone {link.bone} is not a bone (0..{self.n_bones - 1})")
            link_element = f"{b.name} link {k}{_name(self.m.bones, link.bone)}"
            if (link.lower is None) != (link.upper is None):
                self.error(link_element, link.at.get("bone"), f"{field}.lower",
                           "a limited link needs both lower and upper")
                continue
            if link.lower is None:
                continue
            lower, upper = np.asarray(link.lower, np.float64), np.asarray(link.upper, np.float64)
            finite = True
            for name, value in (("lower", lower), ("upper", upper)):
                if not np.isfinite(value).all():
                    finite = False
                    self.error(link_element, link.at.get(name), f"{field}.{name}",
                               "value is not finite (NaN or infinity)")
            if finite and (lower > upper).any():
                axes = ", ".join(f"{'XYZ'[a]}: lower {lower[a]:.7g} > upper {upper[a]:.7g}"
                                 for a in np.flatnonzero(lower > upper))
                self.error(link_element, link.at.get("lower"), f"{field}.lower",
                           f"IK limit lower exceeds upper ({axes}); radians, PMX semantics")

    def parent_cycles(self) -> None:
        bones = self.m.bones
        n = len(bones)
        state = [0] * n  # 0 unvisited, 1 on the current path, 2 done
        for start in range(n):
            path = []
            i = start
            while 0 <= i < n and state[i] == 0 and bones[i].parent != i:
                state[i] = 1
                path.append(i)
                i = bones[i].parent
            if 0 <= i < n and state[i] == 1 and bones[i].parent != i:
                cycle = path[path.index(i):]
                names = " → ".join(f"{j} ({bones[j].name})" for j in cycle + [i])
                first = min(cycle)
                self.error(f"bone {first} ({bones[first].name})", bones[first].at.get("parent"), "parent",
                           f"parent cycle: {names}")
            for j in path:
                state[j] = 2

    # -- morphs, frames, physics -----------------------------------------------------------------------------
    def offsets_in_range(self, element: str, spec: pmx.Spec, records: np.ndarray, first: int | None,
                         prefix: str, names: dict[str, tuple[int, int]]) -> None:
        """Every index field of `records` within [low, count); every float finite."""
        if not len(records):
            return
        for name, kind, _ in spec:
            values = records[name]
            if kind in names:
                low, count = names[kind]
                bad = (values < low) | (values >= count)
                allowed = f"{'-1 or ' if low < 0 else ''}0..{count - 1}"
                self.rows("error", bad, lambda k: element,
                          lambda k, n=name: pmx.record_field_offset(self.m, spec, first, k, n),
                          lambda k, n=name: f"{prefix}[{k}].{n}",
                          lambda k, v=values, kd=kind: f"{kd.replace('_', ' ')} index {int(v[k])} is not {allowed}")
            elif kind == "f4":
                bad = ~np.isfinite(values.reshape(len(values), -1)).all(axis=1)
                self.rows("error", bad, lambda k: element,
                          lambda k, n=name: pmx.record_field_offset(self.m, spec, first, k, n),
                          lambda k, n=name: f"{prefix}[{k}].{n}", lambda k: "value is not finite (NaN or infinity)")

    def morph(self, i: int, morph: pmx.PmxMorph) -> None:
        m = self.m
        element = f"morph {i} ({morph.name})"
        if morph.kind not in pmx.MORPH_OFFSETS:
            self.error(element, None, "kind", f"morph type {morph.kind} is not 0..10")
            return
        limits = {"vertex": (0, self.n_vertices), "bone": (0, self.n_bones), "morph": (0, len(m.morphs)),
                  "material": (-1, len(m.materials)), "rigid_body": (0, len(m.rigid_bodies))}
        self.offsets_in_range(element, pmx.MORPH_OFFSETS[morph.kind], morph.offsets, morph.at.get("offsets"),
                              "offsets", limits)
        if morph.kind == pmx.MORPH_GROUP and len(morph.offsets):
            targets = morph.offsets["morph"]
            inside = targets[(targets >= 0) & (targets < len(m.morphs))]
            if any(m.morphs[int(t)].kind == pmx.MORPH_GROUP for t in inside):
                self.warning(element, morph.at.get("offsets"), "offsets", "group morph contains a group morph")
        if morph.panel > 4:
            self.warning(element, morph.at.get("record"), "panel", f"panel {morph.panel} is not 0..4")

    def display_frame(self, i: int, frame: pmx.PmxDisplayFrame) -> None:
        element = f"display frame {i} ({frame.name})"
        counts = {0: self.n_bones, 1: len(self.m.morphs)}
        for k, (kind, index) in enumerate(frame.elements):
            field = f"elements[{k}].index"
            if kind not in counts:
                self.error(element, frame.at.get(field), f"elements[{k}].kind", f"type {kind} is not 0 or 1")
            elif not 0 <= index < counts[kind]:
                what = "bone" if kind == 0 else "morph"
                self.error(element, frame.at.get(field), field,
                           f"{what} index {index} is not 0..{counts[kind] - 1}")

    def fixed_record(self, element: str, spec: pmx.Spec, record, limits: dict[str, tuple[int, int]]) -> None:
        for name, kind, _ in spec:
            value = getattr(record, name)
            if kind in limits:
                low, count = limits[kind]
                if not low <= value < count:
                    allowed = f"{'-1 or ' if low < 0 else ''}0..{count - 1}"
                    self.error(element, record.at.get(name), name,
                               f"{kind.replace('_', ' ')} index {value} is not {allowed}")
            elif kind == "f4" and not _finite(value):
                self.error(element, record.at.get(name), name, "value is not finite (NaN or infinity)")

    def rigid_body(self, i: int, body: pmx.PmxRigidBody) -> None:
        element = f"rigid body {i} ({body.name})"
        self.fixed_record(element, pmx.RIGID_BODY, body, {"bone": (-1, self.n_bones)})
        for name, value, top in (("shape", body.shape, 2), ("mode", body.mode, 2), ("group", body.group, 15)):
            if value > top:
                self.warning(element, body.at.get(name), name, f"{name} {value} is not 0..{top}")

    def joint(self, i: int, joint: pmx.PmxJoint) -> None:
        element = f"joint {i} ({joint.name})"
        self.fixed_record(element, pmx.JOINT, joint, {"rigid_body": (0, len(self.m.rigid_bodies))})
        if joint.kind > 5:
            self.warning(element, joint.at.get("kind"), "kind", f"joint type {joint.kind} is not 0..5")

    def soft_body(self, i: int, body: pmx.PmxSoftBody) -> None:
        m = self.m
        element = f"soft body {i} ({body.name})"
        self.fixed_record(element, pmx.SOFT_BODY, body, {"material": (-1, len(m.materials))})
        limits = {"rigid_body": (0, len(m.rigid_bodies)), "vertex": (0, self.n_vertices)}
        self.offsets_in_range(element, pmx.SOFT_ANCHOR, body.anchors, body.at.get("anchors"), "anchors", limits)
        pins = np.zeros(len(body.pins), pmx.memory_dtype(pmx.SOFT_PIN))
        pins["vertex"] = body.pins
        self.offsets_in_range(element, pmx.SOFT_PIN, pins, body.at.get("pins"), "pins", limits)


@quiet_float_errors
def validate(model: PmxModel, for_export: bool) -> list[Finding]:
    """Every semantic fault of the records, errors first in file order; never raises for bad values."""
    return _Checker(model, for_export).run()


def raise_for_errors(findings: Iterable[Finding]) -> None:
    """What an exporter calls: refuse to write when any finding is an error, naming each element."""
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        lines = "\n".join(str(f) for f in errors[:20])
        more = f"\n... and {len(errors) - 20} more" if len(errors) > 20 else ""
        raise ExportError(f"PMX export refused, {len(errors)} error(s):\n{lines}{more}")


def semantic(model: PmxModel) -> list[str]:
    """What an import runs after the read (the registry's `semantic`): every finding, as text."""
    return [str(f) for f in validate(model, for_export=False)]
