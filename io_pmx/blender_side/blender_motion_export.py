"""VMD export (read-only): one action of an armature → one VMD.

A key whose frame, value and incoming handles are what import made of the file is written as its raw record
(block, physics-toggle bytes and all); other keys get blocks from their handles (a warning where a curve
cannot be held by a block). GENERATED keys still where import put them are dropped; in an edited segment they
become keys. Keys that fall between whole 30-fps frames are replaced by samples on the whole frames around
them; `bake` samples every whole frame. Motions for a PMX whose rest or hierarchy differs from the armature's
(an MMD rig export) are blender_motion_retarget.py's.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field

import numpy as np

from ...blender import action as bact
from ...core.errors import ExportError
from ...core.fileio import output_path, write_atomic
from ...core.naming import NameAllocator
from ...core.transforms import quat_normalize
from . import blender_mmd
from ..model.units import METRES_PER_UNIT
from ..motion import vmd
from ..motion import channels as vc
from .blender_motion_curves import (
    WHOLE, Curve, channelbags, close, segments_of, unchanged, unchanged_channel, vmd_frames, whole_frames,
)
from .blender_motion_model import (
    BONE_PATH, IK_PATH, MORPH_PATH, RAW, SLIDER_PATH, bone_key_map, ik_constraints, mmd_names_of, model_metres_per_unit,
    morph_names, non_finite, slider_names, split_keys, unescape,
)


def load_raw(act) -> dict | None:
    raw = act.get(RAW)
    if raw is None:
        return None
    try:
        meta = json.loads(raw["meta"])
        out = {"meta": meta}
        for key, dtype in (("bone_keys", vmd.BONE_KEY), ("morph_keys", vmd.MORPH_KEY),
                           ("camera_keys", vmd.CAMERA_KEY), ("light_keys", vmd.LIGHT_KEY),
                           ("shadow_keys", vmd.SHADOW_KEY)):
            out[key] = np.frombuffer(bytes(raw[key]), dtype).copy()
        out["property"] = [vmd.PropertyKey(p["frame"], p["visible"], np.frombuffer(bytes(ik), vmd.IK_STATE).copy())
                           for p, ik in zip(meta["property"], raw["property_ik"])]
        return out
    except (KeyError, ValueError, TypeError):
        return None


def export_motion(context, act, arm_ob, bake: bool = False, rest: dict | None = None,
                  names: dict | None = None, metres_per_unit: float | None = None, model_name: str | None = None
                  ) -> tuple[vmd.Motion, list[str]]:
    """The VMD of one action (read-only). `rest`: per Blender bone {"head", "change"} when the PMX's rest
    differs from Blender's (an MMD rig export); `names`: Blender bone → VMD name overrides; `metres_per_unit`:
    metres per MMD unit of the PMX it goes with (None: the model's own); `model_name`: the PMX's model name (None:
    the file's, else the armature's)."""
    fps = bact.fps_of(context.scene)
    if metres_per_unit is None:
        metres_per_unit = model_metres_per_unit(arm_ob) if arm_ob is not None else METRES_PER_UNIT
    raw = load_raw(act)
    warnings: list[str] = []
    m = vmd.Motion()
    if raw is not None:
        meta = raw["meta"]
        m.signature, m.model_name_raw = bytes(meta["signature"]), bytes(meta["model"])
        m.tail_groups, m.trailing = int(meta["tail_groups"]), bytes(meta["trailing"])
        m.light_keys, m.shadow_keys = raw["light_keys"], raw["shadow_keys"]
    else:
        extras = blender_mmd.stored_extras(arm_ob, []) if arm_ob is not None else None
        m.model_name = model_name or (extras or {}).get("name") or (arm_ob.name if arm_ob is not None else act.name)
        if vmd.name_problem(m.model_name, vmd.MODEL_NAME_SIZE):
            warnings.append(f"model name {m.model_name!r} {vmd.name_problem(m.model_name, vmd.MODEL_NAME_SIZE)}")
    bone_parts, morph_parts, props = [], [], None
    if arm_ob is not None:
        slot = bact.slot_for(arm_ob, act)
        bone_parts, more, props = _export_bones(act, slot, arm_ob, raw, fps, metres_per_unit, bake, rest, names)
        warnings += more
        morph_parts, more = export_morphs(act, arm_ob, raw, fps, bake)
        warnings += more
    bone_keys = assemble(bone_parts, raw["bone_keys"] if raw else None, vmd.BONE_KEY)
    morph_keys = assemble(morph_parts, raw["morph_keys"] if raw else None, vmd.MORPH_KEY)
    m.bone_keys, m.morph_keys = bone_keys, morph_keys
    m.camera_keys = raw["camera_keys"] if raw is not None else m.camera_keys
    m.property_keys = props if props is not None else (raw["property"] if raw else [])
    for keys, what in ((m.bone_keys, "bone"), (m.morph_keys, "morph")):
        if not len(keys):
            continue
        bad = ~np.all(np.isfinite(keys["position" if what == "bone" else "weight"].reshape(len(keys), -1)), axis=1)
        if what == "bone":
            bad |= ~np.all(np.isfinite(keys["rotation"]), axis=1)
        if bad.any():
            raise ExportError(f"action {act.name}: {what} {vmd.decode_name(bytes(keys['name'][bad][0]))} has a "
                              "non-finite value")
    return m, warnings


def assemble(parts, raw_keys, dtype) -> np.ndarray:
    """Records in file order: raw keys by their place in the file, new keys after them. `parts` holds
    (order, record) pairs and (orders, records) arrays."""
    if not parts:
        return np.zeros(0, dtype)
    orders = np.concatenate([np.atleast_1d(np.asarray(o, np.int64)) for o, _ in parts])
    recs = np.concatenate([np.atleast_1d(np.asarray(r, dtype)) for _, r in parts])
    return recs[np.argsort(orders, kind="stable")]


_NEW_ORDER = 1 << 40  # file orders of new keys start here, after every raw key's place in the file


@dataclass
class _BoneExport:
    """What `_export_bones` gathers bone by bone: (file order, records) parts for `assemble`, and the bones
    and keys its warnings name."""
    parts: list = field(default_factory=list)
    counter: int = 0  # new keys so far: their orders are _NEW_ORDER + counter, in the order they are made
    resampled: list[str] = field(default_factory=list)
    unrepresentable: list[str] = field(default_factory=list)
    promoted: list[str] = field(default_factory=list)


@dataclass
class _BoneFrames:
    """One bone's frames to write, its MMD values there, and how they relate to the file's keys."""
    name: str
    encoded: bytes
    frames: np.ndarray
    x: np.ndarray          # the frames in the action's time
    pos: np.ndarray
    rot: np.ndarray
    k_at: np.ndarray       # the file's key on each frame (-1: none)
    reuse: np.ndarray      # frames written as the file's raw record
    bake: bool
    segments: tuple | None  # `_segment_curves_many` of the segments between frames (None: baked, or one frame)


def _export_bones(act, slot, arm_ob, raw, fps, metres_per_unit, bake, rest, names):
    warnings: list[str] = []
    mmd_names = mmd_names_of(arm_ob)
    if names:
        mmd_names.update(names)
    curves, ik_curves = _bone_curves(act, slot, arm_ob)
    out = _BoneExport()
    # the file's keys of a bone renamed in Blender carry its file name: found by it, written under the new one
    file_name = {b: _file_name(arm_ob, b, mmd_names.get(b, b)) for b in curves}
    raw_tracks = _raw_bone_tracks(raw, set(file_name.values()), out.parts)
    encoded, name_warnings = vmd.encode_names([mmd_names.get(b, b) for b in curves])
    warnings += name_warnings
    for (bone, chans), encoded_name in zip(curves.items(), encoded):
        name = mmd_names.get(bone, bone)
        _export_bone(out, arm_ob, bone, name, encoded_name, chans, raw_tracks.get(file_name[bone]), raw, fps,
                     metres_per_unit, bake, rest)
    warnings += _bone_warnings(act.name, out)
    props = _export_ik(act, arm_ob, ik_curves, raw, fps)
    return out.parts, warnings, props


def _file_name(arm_ob, bone: str, name: str) -> str:
    """The name the file's keys of Blender bone `bone` carry: its PMX file name when it was renamed in Blender
    since (`name` is the one written), else `name`."""
    names = blender_mmd.file_names(arm_ob.data.bones[bone])
    renamed = names is not None and names[0] and blender_mmd.pmx_names(arm_ob.data.bones[bone])[0] == name
    return names[0] if renamed else name


def _bone_curves(act, slot, arm_ob) -> tuple[dict[str, dict], dict[tuple[str, str], Curve]]:
    """The action's live bone curves per bone ({(property, index): Curve}) and its IK-toggle curves."""
    curves: dict[str, dict] = {}
    ik_curves: dict[tuple[str, str], Curve] = {}
    for cb in channelbags(act, slot):
        for fc in cb.fcurves:
            if fc.mute or not len(fc.keyframe_points):
                continue
            m = BONE_PATH.match(fc.data_path)
            if m:
                bone = unescape(m.group(1))
                if bone in arm_ob.data.bones:
                    curves.setdefault(bone, {})[(m.group(2), fc.array_index)] = Curve(fc)
                continue
            m = IK_PATH.match(fc.data_path)
            if m:
                ik_curves[(unescape(m.group(1)), unescape(m.group(2)))] = Curve(fc)
    return curves, ik_curves


def _raw_bone_tracks(raw, known: set[str], parts: list) -> dict[str, vc.BoneTrack]:
    """The file's bone keys grouped per VMD name, for the bones the action still animates; the keys of other
    bones, non-finite keys and keys shadowed by a later duplicate go into `parts` unchanged."""
    raw_tracks: dict[str, vc.BoneTrack] = {}
    if raw is None:
        return raw_tracks
    keys = raw["bone_keys"]
    hit, miss, _ = split_keys(keys, known)
    bad = non_finite(keys[hit])
    miss, hit = np.concatenate([miss, hit[bad]]), hit[~bad]
    miss = np.asarray(miss, np.int64)  # bones the model lacks (or whose curves were deleted), non-finite
    parts.append((miss, keys[miss]))   # keys: unchanged
    tracks = vc.group_bone_keys(keys[hit])
    for name, tr in tracks.items():
        tr.index = hit[tr.index]
        shadowed = hit[tr.duplicates]
        parts.append((shadowed, keys[shadowed]))
        raw_tracks[name] = tr
    return raw_tracks


def _export_bone(out: _BoneExport, arm_ob, bone: str, name: str, encoded_name: bytes, chans: dict, tr, raw,
                 fps: float, metres_per_unit: float, bake: bool, rest) -> None:
    bmap = bone_key_map(arm_ob, bone, metres_per_unit, rest)
    xk = tr.frames * fps / vmd.FPS if tr is not None else np.zeros(0)
    same_ch = _unchanged_keys(chans, tr, bmap, fps, xk)
    same = np.logical_and.reduce(list(same_ch.values())) if same_ch else np.zeros(0, bool)
    xs, promoted = _keyed_times(chans, same_ch, xk)
    if promoted:
        out.promoted.append(bone)
    if not len(xs):
        return
    euler = any(k[0] == "rotation_euler" for k in chans) and not any(k[0] == "rotation_quaternion" for k in chans)
    frames, moved = _bone_frames(chans, xs, fps, bake, euler)
    if moved:
        out.resampled.append(bone)
    x = frames * fps / vmd.FPS
    pos_mmd, rot_mmd = bmap.to_mmd(*_pose_samples(chans, arm_ob.pose.bones[bone], x, euler))
    perm = vc.dominant_permutation(np.linalg.inv(bmap.position_matrix()).T)  # MMD channel i ← Blender perm[i]
    # the file's key on each frame (-1: none); keys the user left alone are written back as they were
    k_at = np.full(len(frames), -1, np.int64)
    if tr is not None and len(tr.frames):
        raw_frames = tr.frames.astype(np.int64)
        j = np.clip(np.searchsorted(raw_frames, frames), 0, len(raw_frames) - 1)
        k_at = np.where(raw_frames[j] == frames, j, -1)
    reuse = np.zeros(len(frames), bool)
    if tr is not None and not bake:
        on_key = np.flatnonzero(k_at >= 0)
        k = k_at[on_key]
        reuse[on_key] = same[k] & (np.abs(x[on_key] - xk[k]) <= 1e-6 * np.maximum(1, np.abs(x[on_key])))
    if reuse.any():
        kept = tr.index[k_at[reuse]].astype(np.int64)
        records = raw["bone_keys"][kept]  # a copy: the keys of a bone renamed in Blender take its new name
        if vmd.decode_name(bytes(records["name"][0])) != name:
            records["name"] = encoded_name
        out.parts.append((kept, records))
    segments = _segment_curves_many(chans, x[:-1], x[1:], perm, euler) if not bake and len(frames) > 1 else None
    bf = _BoneFrames(name, encoded_name, frames, x, pos_mmd, rot_mmd, k_at, reuse, bake, segments)
    new_keys = vmd.new_bone_keys(len(frames))
    _new_bone_keys(out, bf, new_keys)
    _edited_bone_keys(out, bf, new_keys, tr, raw, xk, same_ch, perm)


def _unchanged_keys(chans: dict, tr, bmap, fps: float, xk: np.ndarray) -> dict[tuple[str, int], np.ndarray]:
    """Per channel, which raw keys are untouched: frame, value and the handles of the segment leading to it
    (empty without a raw track)."""
    same_ch: dict[tuple[str, int], np.ndarray] = {}
    if tr is None:
        return same_ch
    expected = vc.build_bone_channels(tr, bmap, fps)[0]
    for key in [("location", j) for j in range(3)] + [("rotation_quaternion", c) for c in range(4)]:
        actual = chans.get(key)
        whole = unchanged_channel(actual, expected[key], xk)
        same_ch[key] = whole if whole is not None else np.array(
            [actual is not None and unchanged(actual, expected[key], xk[k - 1] if k else None, xk[k])
             for k in range(len(xk))], bool)
    return same_ch


def _keyed_times(chans: dict, same_ch: dict, xk: np.ndarray) -> tuple[np.ndarray, bool]:
    """The times to export: real keys, and GENERATED keys of segments the user changed; and whether any
    GENERATED key became a key."""
    real = [c.x[~c.generated] for c in chans.values()]
    gen_kept = []
    for key, c in chans.items():
        g = c.x[c.generated]
        if not len(g):
            continue
        if key in same_ch and len(xk):
            # a GENERATED key is import's while the segment it lies in and the key that segment starts at are
            # (a new value there leaves the GENERATED keys on the old path: Blender plays them, so they stay)
            k = np.searchsorted(xk, g - 1e-6)
            same = same_ch[key]
            ok = (k > 0) & (k < len(xk)) & same[np.clip(k, 0, len(xk) - 1)] & same[np.clip(k - 1, 0, len(xk) - 1)]
            g = g[~ok]
        gen_kept.append(g)
    xs = np.unique(np.concatenate(real + gen_kept)) if real else np.zeros(0)
    return xs, any(len(g) for g in gen_kept)


def _bone_frames(chans: dict, xs: np.ndarray, fps: float, bake: bool, euler: bool) -> tuple[np.ndarray, bool]:
    """The whole VMD frames of the keyed times `xs` (every frame of their range when baking), and whether a
    time between whole frames was moved."""
    moved = False
    if bake:
        v0, v1 = vmd_frames(xs[[0, -1]], fps)
        frames = np.arange(int(math.floor(v0 + WHOLE)), int(math.ceil(v1 - WHOLE)) + 1)
    else:
        frames, moved = whole_frames(xs, fps)
    if euler and not bake:  # Blender blends Euler angles, MMD slerps: sample every frame where they turn
        extra = []
        for a, b in zip(frames[:-1], frames[1:]):
            xa, xb = a * fps / vmd.FPS, b * fps / vmd.FPS
            if any(not np.isclose(c.value(xa), c.value(xb)) for k, c in chans.items() if k[0] == "rotation_euler"):
                extra.append(np.arange(a + 1, b))
        if extra:
            frames = np.unique(np.concatenate([frames] + extra))
    return frames, moved


def _pose_samples(chans: dict, pb, x: np.ndarray, euler: bool) -> tuple[np.ndarray, np.ndarray]:
    """Location (N, 3) and unit quaternion (N, 4) of the bone at times `x`: each channel's curve, or the pose
    value where it has none."""
    def sampled(prop, n):
        return np.stack([chans[(prop, j)].values(x) if (prop, j) in chans
                         else np.full(len(x), getattr(pb, prop)[j], np.float64) for j in range(n)], axis=1)

    loc = sampled("location", 3)
    if euler:
        quat = bact.euler_to_quat(sampled("rotation_euler", 3),
                                   pb.rotation_mode if len(pb.rotation_mode) == 3 else "XYZ")
    else:
        quat = sampled("rotation_quaternion", 4)
    return loc, quat_normalize(quat)


def _new_bone_keys(out: _BoneExport, bf: _BoneFrames, new_keys: np.ndarray) -> None:
    """Keys on frames where the file has none, all at once; their blocks come from the curves' segments."""
    bulk = np.flatnonzero(~bf.reuse & (bf.k_at < 0))
    if not len(bulk):
        return
    cvs = vmd.linear_curves(len(bulk))
    if bf.segments is not None:
        seg_curves, seg_has, seg_bad = bf.segments
        inner = bulk > 0
        prev = bulk[inner] - 1
        cvs[inner] = np.where(seg_has[prev][:, :, None], seg_curves[prev], cvs[inner])
        out.unrepresentable += [f"{bf.name}@{int(bf.frames[m])}" for m in bulk[inner][seg_bad[prev]]]
    recs = new_keys[bulk]
    recs["name"] = bf.encoded
    recs["frame"] = bf.frames[bulk]
    recs["position"] = bf.pos[bulk]
    recs["rotation"] = bf.rot[bulk]
    recs["interpolation"] = vmd.build_interpolation(cvs)
    out.parts.append((_NEW_ORDER + out.counter + np.arange(len(bulk)), recs))
    out.counter += len(bulk)


def _edited_bone_keys(out: _BoneExport, bf: _BoneFrames, new_keys: np.ndarray, tr, raw, xk: np.ndarray,
                      same_ch: dict, perm: np.ndarray) -> None:
    """Keys of the file the user edited, one by one, in the file's place: channels whose segment is still
    the file's keep its curve (and the physics bytes stay)."""
    x = bf.x
    for m_ in np.flatnonzero(~bf.reuse & (bf.k_at >= 0)).tolist():
        f = bf.frames[m_]
        hitk = (int(bf.k_at[m_]), int(tr.index[bf.k_at[m_]])) if bf.k_at[m_] >= 0 else None
        rec = new_keys[m_]
        rec["name"] = bf.encoded
        rec["frame"] = int(f)
        rec["position"] = bf.pos[m_]
        rec["rotation"] = bf.rot[m_]
        old = raw["bone_keys"][hitk[1]] if hitk is not None else None
        cv = vmd.curves(old["interpolation"]) if old is not None else vmd.linear_curves()
        if m_ > 0 and not bf.bake:
            seg_curves, seg_has, seg_bad = bf.segments
            keep = np.zeros(4, bool)
            if hitk is not None and abs(x[m_] - xk[hitk[0]]) <= 1e-6 * max(1, abs(x[m_])) and \
                    abs(x[m_ - 1] - (xk[hitk[0] - 1] if hitk[0] else -1e30)) <= 1e-6 * max(1, abs(x[m_])):
                keep[:3] = [same_ch[("location", int(perm[i]))][hitk[0]] for i in range(3)]
                keep[3] = all(same_ch[("rotation_quaternion", c)][hitk[0]] for c in range(4))
            derived = np.where(seg_has[m_ - 1][:, None], seg_curves[m_ - 1], cv)
            bad = bool(seg_bad[m_ - 1])
            cv = np.where(keep[:, None], cv, derived)
            if bad and not keep.all():
                out.unrepresentable.append(f"{bf.name}@{int(f)}")
        elif bf.bake:
            cv = vmd.linear_curves()
        rec["interpolation"] = vmd.build_interpolation(
            cv, physics=vmd.physics_bytes(old["interpolation"]) if old is not None else None)
        out.parts.append((hitk[1] if hitk is not None else _NEW_ORDER + out.counter, rec))
        out.counter += 1


def _bone_warnings(action: str, out: _BoneExport) -> list[str]:
    warnings = []
    if out.resampled:
        warnings.append(f"{action}: keys between whole 30-fps frames resampled onto the frames around them: "
                        f"{', '.join(out.resampled[:8])}{', ...' if len(out.resampled) > 8 else ''}")
    if out.unrepresentable:
        warnings.append(f"{action}: {len(out.unrepresentable)} curve segment(s) a VMD block cannot hold exactly "
                        f"(written as the nearest block): {', '.join(out.unrepresentable[:8])}"
                        f"{', ...' if len(out.unrepresentable) > 8 else ''}")
    if out.promoted:
        warnings.append(f"{action}: GENERATED keys in edited segments written as keys: {', '.join(out.promoted)}")
    return warnings


def _segment_curves_many(chans, xa, xb, perm, euler) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_segment_curves` for every segment [xa[k], xb[k]] at once: curve bytes (N, 4, 4), which channels
    have one (N, 4; elsewhere the key's own curve stays) and which segments had to be approximated (N,)."""
    count = len(xa)
    out = np.zeros((count, 4, 4), np.uint8)
    has = np.zeros((count, 4), bool)
    bad = np.zeros(count, bool)
    linear = np.array(vmd.LINEAR_CURVE, np.uint8)

    def derive(keys):
        present = [chans[key] for key in keys if key in chans]
        b = np.zeros((count, 4), np.uint8)
        got = np.zeros(count, bool)
        worse = np.zeros(count, bool)
        if not present:
            return b, got, worse
        parts = segments_of(present, xa, xb)
        status = np.stack([st for _, st in parts])                       # (C, N)
        special = status != Curve.SEGMENT
        first = np.argmax(special, axis=0)
        decided = special.any(axis=0)
        byte_rows, offs, valid, dys = [], [], [], []
        for seg, st in parts:
            bb, off, ok = vc.bytes_many(seg)
            byte_rows.append(bb)
            offs.append(off)
            valid.append(ok & (st == Curve.SEGMENT))
            dys.append(np.abs(seg[:, 3, 1] - seg[:, 0, 1]))
        byte_rows, offs, valid = np.stack(byte_rows), np.stack(offs), np.stack(valid)
        dy = np.where(valid, np.stack(dys), -1.0)
        best = np.argmax(dy, axis=0)
        cols = np.arange(count)
        best_bytes = byte_rows[best, cols]
        some = valid.any(axis=0)
        differs = (valid & (np.abs(byte_rows.astype(int) - best_bytes[None].astype(int)).max(axis=2) > 1)).any(0)
        b[some] = best_bytes[some]
        got[some] = True
        worse[some] = (offs[best, cols] > 0.5)[some] | differs[some]
        b[decided] = linear
        got[decided] = True
        worse[decided] = status[first, cols][decided] == Curve.UNHELD
        return b, got, worse

    for i in range(3):
        out[:, i], has[:, i], worse = derive([("location", int(perm[i]))])
        bad |= worse
    if euler:
        out[:, 3], has[:, 3] = linear, True
    else:
        out[:, 3], has[:, 3], worse = derive([("rotation_quaternion", c) for c in range(4)])
        bad |= worse
    return out, has, bad


def _export_ik(act, arm_ob, ik_curves, raw, fps):
    """Show / IK keys: the file's while the IK influence curves are what import made, else rebuilt."""
    iks = ik_constraints(arm_ob)
    by_target = {}
    for name, targets in iks.items():
        for t in targets:
            if t in ik_curves and ik_curves[t].fc.data_path:
                by_target.setdefault(name, ik_curves[t])
    raw_props = raw["property"] if raw is not None else []
    renamed = _renamed_bones(arm_ob)  # an IK bone renamed in Blender: its states under the new name
    expected: dict[str, list] = {}
    changed = False
    for key in raw_props:
        for st in key.ik:
            n = vmd.decode_name(bytes(st["name"]))
            changed = changed or n in renamed
            expected.setdefault(renamed.get(n, n), []).append((float(key.frame) * fps / vmd.FPS,
                                                               1.0 if st["enabled"] else 0.0))
    for name, c in by_target.items():
        exp = sorted(dict(expected.get(name, [])).items())
        if len(exp) != len(c.x) or not close(c.x, [e[0] for e in exp]) or not close(c.y, [e[1] for e in exp]):
            changed = True
    if not changed and (raw is not None or not by_target):
        return raw_props if raw is not None else []
    frames = sorted({int(round(f)) for c in by_target.values() for f in vmd_frames(c.x, fps)} |
                    {int(k.frame) for k in raw_props})
    out = []
    for f in frames:
        before = [k for k in raw_props if k.frame <= f]
        base = before[-1] if before else None
        states = {}
        for st in base.ik if base is not None else []:
            n = vmd.decode_name(bytes(st["name"]))
            states[renamed.get(n, n)] = (vmd.encode_name(renamed[n], vmd.IK_NAME_SIZE) if n in renamed
                                         else bytes(st["name"]), int(st["enabled"]))
        for name, c in by_target.items():
            states[name] = (vmd.encode_name(name, vmd.IK_NAME_SIZE), 1 if c.value(f * fps / vmd.FPS) >= 0.5 else 0)
        ik = np.zeros(len(states), vmd.IK_STATE)
        for i, (raw_name, on) in enumerate(states.values()):
            ik[i] = (raw_name, on)
        out.append(vmd.PropertyKey(f, int(base.visible) if base is not None else 1, ik))
    return out


def _renamed_bones(arm_ob) -> dict[str, str]:
    """File name → the name written, of the bones renamed in Blender since their PMX import."""
    out = {}
    for bone in arm_ob.data.bones:
        old, new = blender_mmd.file_names(bone), blender_mmd.pmx_names(bone)
        if old is not None and old[0] and old[0] != new[0]:
            out.setdefault(old[0], new[0])
    return out


def _slider_curves(act, arm_ob, taken: set[str]) -> dict[str, Curve]:
    """MMD morph name → the F-curve of its slider (a custom property of the armature, blender_morphs)."""
    name_of = {p: n for n, p in slider_names(arm_ob).items() if n not in taken}
    out: dict[str, Curve] = {}
    for slot in act.slots:
        if slot.target_id_type != "OBJECT" or not name_of:
            continue
        for cb in channelbags(act, slot):
            for fc in cb.fcurves:
                m = SLIDER_PATH.match(fc.data_path)
                if m and not fc.mute and len(fc.keyframe_points) and unescape(m.group(1)) in name_of:
                    out.setdefault(name_of[unescape(m.group(1))], Curve(fc))
    return out


def export_morphs(act, arm_ob, raw, fps, bake):
    warnings: list[str] = []
    morphs = morph_names(arm_ob)
    morph_of = {(ob.data.shape_keys.name, key): name for name, (ob, key) in morphs.items()}
    curves: dict[str, Curve] = {}
    for slot in act.slots:
        if slot.target_id_type != "KEY":
            continue
        users = [u for u in slot.users()] if hasattr(slot, "users") else []
        for cb in channelbags(act, slot):
            for fc in cb.fcurves:
                m = MORPH_PATH.match(fc.data_path)
                if not m or fc.mute or not len(fc.keyframe_points):
                    continue
                key_name = unescape(m.group(1))
                name = next((morph_of[(u.name, key_name)] for u in users if (u.name, key_name) in morph_of), None)
                if name is None:
                    name = next((n for (k, kn), n in morph_of.items() if kn == key_name), key_name)
                curves[name] = Curve(fc)
    curves.update(_slider_curves(act, arm_ob, set(curves)))
    parts = []
    big = 1 << 40
    raw_keys = raw["morph_keys"] if raw is not None else np.zeros(0, vmd.MORPH_KEY)
    hit, miss, _ = split_keys(raw_keys, set(curves))
    for i in miss:
        parts.append((int(i), raw_keys[i]))
    raw_at = {}
    for i in hit:
        raw_at[(vmd.decode_name(bytes(raw_keys["name"][i])), int(raw_keys["frame"][i]))] = int(i)
    fields, more = vmd.encode_names(list(curves), what="morph")
    warnings += more
    counter = 0
    used = set()
    for (name, c), encoded_name in zip(curves.items(), fields):
        if bake:
            v0, v1 = vmd_frames(c.x[[0, -1]], fps)
            frames = np.arange(int(math.floor(v0 + WHOLE)), int(math.ceil(v1 - WHOLE)) + 1)
        else:
            frames, _ = whole_frames(c.x, fps)
        for f in frames:
            value = np.float32(c.value(f * fps / vmd.FPS))
            i = raw_at.get((name, int(f)))
            if i is not None and abs(float(raw_keys["weight"][i]) - float(value)) <= 1e-6:
                parts.append((i, raw_keys[i]))
                used.add(i)
                continue
            rec = np.zeros(1, vmd.MORPH_KEY)[0]
            rec["name"], rec["frame"], rec["weight"] = encoded_name, int(f), value
            parts.append((i if i is not None else big + counter, rec))
            counter += 1
    for i in hit:  # shadowed duplicates on one frame stay as they were
        key = (vmd.decode_name(bytes(raw_keys["name"][i])), int(raw_keys["frame"][i]))
        if i not in used and raw_at.get(key) != i:
            parts.append((int(i), raw_keys[i]))
    return parts, warnings


def export_vmd(context, path: str, arm_ob, act=None, bake: bool = False, rest: dict | None = None,
               names: dict | None = None) -> list[str]:
    """Write one action (default: the armature's assigned one) to `path`; returns warnings."""
    if act is None:
        act = arm_ob.animation_data.action if arm_ob is not None and arm_ob.animation_data else None
        if act is None:
            raise ExportError(f"{arm_ob.name if arm_ob is not None else 'no armature'}: no action to export")
    motion, warnings = export_motion(context, act, arm_ob, bake, rest, names)
    write_atomic(path, vmd.write(motion))
    return warnings


def motion_actions(arm_ob) -> list:
    """Actions to export for an armature: those that belong to it (`armature_actions`), with those made from a VMD
    that animate no bone of it (morphs, IK switches)."""
    return bact.armature_actions(arm_ob, also=lambda act: act.get(RAW) is not None) if arm_ob is not None else []


def export_actions(context, outdir: str, arm_ob, actions=None, bake: bool = False, rest: dict | None = None,
                   names: dict | None = None, allocator: NameAllocator | None = None,
                   metres_per_unit: float | None = None, model_name: str | None = None
                   ) -> tuple[list[str], list[str]]:
    """One OUTDIR/<action>.vmd per action; all made in memory before the first is written."""
    actions = motion_actions(arm_ob) if actions is None else list(actions)
    allocator = allocator or NameAllocator()
    pending, warnings = [], []
    for act in actions:
        motion, more = export_motion(context, act, arm_ob, bake, rest, names, metres_per_unit, model_name)
        warnings += more
        pending.append((allocator.take(act.name, ".vmd"), vmd.write(motion)))
    for stem, _ in pending:  # every path asked of the output guard before the first is written
        output_path(outdir, stem + ".vmd")
    written = []
    for stem, data in pending:
        path = os.path.join(outdir, stem + ".vmd")
        write_atomic(path, data)
        written.append(path)
    return written, warnings
