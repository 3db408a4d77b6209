"""VMD motions ⇄ core animations (no bpy, no model needed): what `compare`, `convert` and the benchmarks read
and write motions through.

The convention, stated once (docs/mmd.md §3–§4): a VMD bone key is the bone's transform relative to its
rest, about its head, in model axes (MMD bones have no orientation of their own). That is what a track of the
animation holds, in Blender axes:

* one `Track` per bone name: translation = the key's position offset, MMD (x, y, z) → (x, z, y) × metres per unit
  (metres; 0.08 per MMD unit unless told); rotation = the key's rotation, MMD (x, y, z, w) → (w, −x, −z, −y)
  (the Y↔Z swap is a mirror), an all-zero quaternion read as identity, as MMD reads it. No scale channel:
  a VMD has none. Times are frame / 30 s.
* `Track.extras[cm.TIMING_KEY]`: (K, 4, 4) uint8, per key the timing curves (x1, y1, x2, y2, 0..127) of the
  segment that ends at it, for translation channels 0, 1, 2 (MMD X, Z, Y) and the rotation, as
  `core.skinning.mmd_bezier` reads them; `core.compare` samples between keys with them.
  `Track.extras["vmd_interpolation"]`: the raw 64-byte blocks (physics toggle bytes and all) for the way back.
* one `MorphTrack` per morph name, weights as stored.
* several keys of one bone or morph on one frame: the last in the file counts (as import shows it), with a
  warning naming them.
* `Animation.extras`: {"fps": 30, "file_unit": metres per unit} (so that `compare` names frames and takes its position
  tolerance in MMD units) and {"vmd": ...} the header, camera, light, self-shadow and show/IK keys, kept raw so
  that `to_motion` gives them back.

`to_motion` is the inverse: the same keys, bone by bone in track order and frame by frame (a file stored in
that order comes back byte-identical). `skeleton_animation` turns an animation of a core skeleton (parent-
relative TRS keys, Blender axes) into this convention, for motions made from a model that is not from PMX.
"""
from __future__ import annotations

import os

import numpy as np

from ...core import model as cm
from ...core.fileio import read_bytes
from ...core.transforms import matrix3_to_quat, slerp, trs_to_matrix
from ..model.units import METRES_PER_UNIT
from . import vmd

_CURVE_OF_CHANNEL = np.array([0, 2, 1, 3])  # Blender translation x, y, z, rotation ← MMD curve X, Z, Y, R


# ------------------------------------------------------------------------------------------------------------
# Axes (the same conversions as the Blender import: `vmd_convert.positions_to_blender`, `rotation_to_blender`)

def positions_to_core(p, metres_per_unit: float) -> np.ndarray:
    return np.asarray(p, np.float64)[..., [0, 2, 1]] * metres_per_unit


def positions_to_vmd(p, metres_per_unit: float) -> np.ndarray:
    return np.asarray(p, np.float64)[..., [0, 2, 1]] / metres_per_unit


def rotations_to_core(q_xyzw) -> np.ndarray:
    q = np.asarray(q_xyzw, np.float64)
    out = np.stack([q[..., 3], -q[..., 0], -q[..., 2], -q[..., 1]], axis=-1)
    out[~np.any(q != 0, axis=-1)] = (1.0, 0.0, 0.0, 0.0)
    return out


def rotations_to_vmd(q_wxyz) -> np.ndarray:
    q = np.asarray(q_wxyz, np.float64)
    return np.stack([-q[..., 1], -q[..., 3], -q[..., 2], q[..., 0]], axis=-1)


# ------------------------------------------------------------------------------------------------------------
# VMD → core

def _last_per_frame(which: np.ndarray, frames: np.ndarray, j: int) -> tuple[np.ndarray, int]:
    """File positions of name j's keys sorted by frame, the last in the file winning on a shared frame; and
    how many keys that hides."""
    idx = np.flatnonzero(which == j)
    idx = idx[np.lexsort((idx, frames[idx]))]
    fr = frames[idx]
    last = np.append(fr[1:] != fr[:-1], True)
    return idx[last], int((~last).sum())


def _keys_per_name(keys: np.ndarray, hidden: list[str], what: str = ""
                   ) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(name, its keys' indices and frames) per name of the bone or morph keys, one key a frame (the last in
    the file); names with keys so hidden go to `hidden` (prefixed by `what`) with their count."""
    names, which = vmd.distinct_names(keys["name"])
    frames = keys["frame"].astype(np.int64)
    out = []
    for j, name in enumerate(names):
        idx, dup = _last_per_frame(which, frames, j)
        if dup:
            hidden.append(f"{what}{name} ({dup})")
        out.append((name, idx, frames[idx]))
    return out


def to_animation(motion: vmd.Motion, name: str, metres_per_unit: float = METRES_PER_UNIT
                 ) -> tuple[cm.Animation, list[str]]:
    """The motion as one core Animation named `name` (see the module docstring); returns (animation,
    warnings)."""
    warnings = list(motion.warnings)
    fps = float(vmd.FPS)
    anim = cm.Animation(name, 0.0)
    hidden: list[str] = []
    keys = motion.bone_keys
    for bone, idx, frames in _keys_per_name(keys, hidden):
        times = frames / fps
        curves = vmd.curves(keys["interpolation"][idx])[:, _CURVE_OF_CHANNEL]
        anim.tracks.append(cm.Track(
            bone, times, positions_to_core(keys["position"][idx], metres_per_unit), times.copy(),
            rotations_to_core(keys["rotation"][idx]),
            extras={cm.TIMING_KEY: np.ascontiguousarray(curves, np.uint8),
                    "vmd_interpolation": keys["interpolation"][idx].copy()}))
    mkeys = motion.morph_keys
    for morph, idx, frames in _keys_per_name(mkeys, hidden, "morph "):
        anim.morph_tracks.append(cm.MorphTrack(morph, frames / fps, mkeys["weight"][idx].astype(np.float64)))
    if hidden:
        warnings.append(f"keys on a frame their bone or morph already has a key on (the last in the file counts): "
                        f"{', '.join(hidden)}")
    every = vmd.all_frames(motion)
    anim.length = float(every.max()) / fps if len(every) else 0.0
    anim.extras = {"fps": fps, "file_unit": float(metres_per_unit), "vmd": {
        "signature": bytes(motion.signature), "model_name_raw": bytes(motion.model_name_raw),
        "camera_keys": motion.camera_keys.copy(), "light_keys": motion.light_keys.copy(),
        "shadow_keys": motion.shadow_keys.copy(), "property_keys": list(motion.property_keys),
        "tail_groups": int(motion.tail_groups), "trailing": bytes(motion.trailing)}}
    return anim, warnings


def load_vmd(path: str, data: bytes | None = None, with_animations: bool = True, motions=(),
             metres_per_unit: float = METRES_PER_UNIT) -> tuple[cm.Scene, list[str]]:
    """A `.vmd` file as a core Scene: no skeleton, no mesh, one animation named after the file's stem (the
    registry's `load`; `with_animations` and `motions` are accepted for the common signature: the animation is
    the file)."""
    if data is None:
        data = read_bytes(path)
    motion = vmd.read(data)
    stem = os.path.splitext(os.path.basename(os.fspath(path)))[0]
    anim, warnings = to_animation(motion, stem, metres_per_unit)
    scene = cm.Scene(name=motion.model_name or stem, animations=[anim])
    scene.extras["motion"] = "vmd"
    return scene, warnings


load = load_vmd


# ------------------------------------------------------------------------------------------------------------
# core → VMD

def to_motion(anim: cm.Animation, metres_per_unit: float | None = None, model_name: str | None = None,
              fps: float | None = None) -> tuple[vmd.Motion, list[str]]:
    """The VMD of an animation in this module's convention. `metres_per_unit` defaults to the animation's file
    unit (else 0.08); frames are round(time × fps), fps the animation's own (else 30). A track's translation and
    rotation keys are written on the union of their times, the channel without a key there sampled (linear,
    slerp).
    Blocks: the track's raw ones when present, else built from the timing curves (`cm.TIMING_KEY`), else linear."""
    extras = anim.extras or {}
    if metres_per_unit is None:
        metres_per_unit = extras.get("file_unit", METRES_PER_UNIT)
    metres_per_unit = float(metres_per_unit)
    fps = float(fps if fps is not None else extras.get("fps", vmd.FPS))
    raw = extras.get("vmd") or {}
    warnings: list[str] = []
    m = vmd.Motion()
    if raw:
        m.signature, m.model_name_raw = raw["signature"], raw["model_name_raw"]
        m.camera_keys, m.light_keys, m.shadow_keys = raw["camera_keys"], raw["light_keys"], raw["shadow_keys"]
        m.property_keys, m.tail_groups, m.trailing = list(raw["property_keys"]), raw["tail_groups"], raw["trailing"]
    if model_name is not None or not raw:
        m.model_name = model_name if model_name is not None else anim.name
    tracks = [t for t in anim.tracks if (t.translations is not None and len(t.translations))
              or (t.rotations is not None and len(t.rotations))]
    fields, more = vmd.encode_names([t.bone for t in tracks])
    warnings += more
    parts = []
    for track, field in zip(tracks, fields):
        tt = np.asarray(track.translation_times if track.translations is not None else [], np.float64)
        rt = np.asarray(track.rotation_times if track.rotations is not None else [], np.float64)
        times = np.unique(np.concatenate([tt, rt]))
        frames = np.round(times * fps).astype(np.int64)
        if len(np.unique(frames)) != len(frames) or (frames < 0).any():
            warnings.append(f"bone {track.bone}: key times do not fall on distinct whole frames at {fps:g} fps; "
                            "rounded, later keys of a frame win")
            frames, first = np.unique(np.maximum(frames, 0)[::-1], return_index=True)
            times = times[::-1][first]
        keys = vmd.new_bone_keys(len(times))
        keys["name"] = field
        keys["frame"] = frames
        if len(tt) == len(times):
            keys["position"] = positions_to_vmd(np.asarray(track.translations, np.float64), metres_per_unit)
        elif len(tt):
            pos = np.stack([np.interp(times, tt, np.asarray(track.translations, np.float64)[:, c])
                            for c in range(3)], axis=1)
            keys["position"] = positions_to_vmd(pos, metres_per_unit)
        if len(rt) == len(times):  # keys on every frame written: the values as they are
            keys["rotation"] = rotations_to_vmd(np.asarray(track.rotations, np.float64))
        elif len(rt):
            q = np.asarray(track.rotations, np.float64)
            i = np.clip(np.searchsorted(rt, times, side="right") - 1, 0, len(rt) - 1)
            k = np.minimum(i + 1, len(rt) - 1)
            span = np.where(k > i, rt[k] - rt[i], 1.0)
            f = np.clip(np.where(k > i, (times - rt[i]) / span, 0.0), 0.0, 1.0)
            keys["rotation"] = rotations_to_vmd(slerp(q[i], q[k], f))
        same_times = len(tt) == len(times) and (not len(rt) or len(rt) == len(times))
        blocks = track.extras.get("vmd_interpolation") if track.extras else None
        curves = track.extras.get(cm.TIMING_KEY) if track.extras else None
        if blocks is not None and same_times and len(blocks) == len(times):
            keys["interpolation"] = blocks
        elif curves is not None and same_times and len(curves) == len(times):
            keys["interpolation"] = vmd.build_interpolation(
                np.asarray(curves, np.uint8)[:, np.argsort(_CURVE_OF_CHANNEL)])
        parts.append(keys)
    m.bone_keys = np.concatenate(parts) if parts else np.zeros(0, vmd.BONE_KEY)
    mfields, more = vmd.encode_names([t.shape_key for t in anim.morph_tracks], what="morph")
    warnings += more
    mparts = []
    for track, field in zip(anim.morph_tracks, mfields):
        mk = np.zeros(len(track.times), vmd.MORPH_KEY)
        mk["name"] = field
        mk["frame"] = np.maximum(np.round(np.asarray(track.times, np.float64) * fps), 0).astype(np.int64)
        mk["weight"] = track.weights
        mparts.append(mk)
    m.morph_keys = np.concatenate(mparts) if mparts else np.zeros(0, vmd.MORPH_KEY)
    return m, warnings


def _sampled(key_times: np.ndarray, values, times: np.ndarray, rest, rotation: bool) -> np.ndarray:
    """A channel's values at `times` (its keys where they are, linear or slerp between, held at the ends); the
    rest value on every time for a channel without keys."""
    if not len(key_times):
        return np.tile(np.asarray(rest, np.float64), (len(times), 1))
    v = np.asarray(values, np.float64)
    if len(key_times) == len(times) and np.array_equal(key_times, times):
        return v
    i = np.clip(np.searchsorted(key_times, times, side="right") - 1, 0, len(key_times) - 1)
    k = np.minimum(i + 1, len(key_times) - 1)
    f = np.clip(np.where(k > i, (times - key_times[i]) / np.where(k > i, key_times[k] - key_times[i], 1.0), 0.0),
                0.0, 1.0)
    return slerp(v[i], v[k], f) if rotation else v[i] + (v[k] - v[i]) * f[:, None]


def skeleton_animation(skeleton: cm.Skeleton, anim: cm.Animation, metres_per_unit: float = METRES_PER_UNIT
                       ) -> cm.Animation:
    """An animation of `skeleton` (parent-relative TRS keys, Blender axes; its default pose = its bind pose) in
    this module's convention: per bone with a track, at its key times, the transform relative to its rest about
    its head in model axes (what an MMD bone key holds, for a PMX with the same hierarchy and heads). With B the
    bind matrices, L the posed and Lr the rest local transforms: the bone's deformation relative to its
    parent's is X = B_parent · L · Lr⁻¹ · B_parent⁻¹ = T(head) · T(offset) · R · T(−head). Scale keys are
    dropped (a VMD has none)."""
    binds = skeleton.binds()
    index = {b.name: i for i, b in enumerate(skeleton.bones)}
    out = cm.Animation(anim.name, anim.length, extras={"fps": float(vmd.FPS), "file_unit": float(metres_per_unit)})
    for track in anim.tracks:
        i = index.get(track.bone)
        if i is None:
            continue
        bone = skeleton.bones[i]
        tt = np.asarray(track.translation_times if track.translations is not None else [], np.float64)
        rt = np.asarray(track.rotation_times if track.rotations is not None else [], np.float64)
        times = np.unique(np.concatenate([tt, rt]))
        if not len(times):
            continue
        t = _sampled(tt, track.translations, times, bone.rest_translation, False)
        r = _sampled(rt, track.rotations, times, bone.rest_rotation, True)
        local = trs_to_matrix(t, r, np.ones((len(times), 3)))
        rest_inv = np.linalg.inv(trs_to_matrix(bone.rest_translation, bone.rest_rotation, np.ones(3)))
        bp = binds[bone.parent] if bone.parent >= 0 else np.eye(4)
        x = bp @ local @ rest_inv @ np.linalg.inv(bp)
        rot = x[:, :3, :3]
        head = binds[i, :3, 3]
        offset = x[:, :3, 3] - head + np.einsum("kij,j->ki", rot, head)
        q = matrix3_to_quat(rot / np.linalg.norm(rot, axis=-2, keepdims=True))
        out.tracks.append(cm.Track(track.bone, times, offset, times.copy(), q))
    out.morph_tracks = list(anim.morph_tracks)
    return out


def motion_of_skeleton_animation(skeleton: cm.Skeleton, anim: cm.Animation, model_name: str = "",
                                 metres_per_unit: float = METRES_PER_UNIT, fps: float = vmd.FPS
                                 ) -> tuple[vmd.Motion, list[str]]:
    """`to_motion(skeleton_animation(...))`: the VMD of a core skeleton's animation; frames are round(time ×
    fps) (a benchmark whose keys sit on whole frames of another rate passes that rate to keep one key per
    frame)."""
    return to_motion(skeleton_animation(skeleton, anim, metres_per_unit), metres_per_unit, model_name, fps)


__all__ = ["to_animation", "to_motion", "load", "load_vmd", "skeleton_animation", "motion_of_skeleton_animation"]
