"""Actions: core Animation ⇄ Blender action (Blender 5 layered actions, through channelbags).

Core tracks hold parent-relative bone transforms (the `.mdl` skeleton's local TRS); a pose bone's F-curves
hold its basis, relative to its rest (edit-bone) matrix. With Rest the edit-bone matrix (armature space),
Bind the bone's exact bind matrix (kept on the bone by the armature bridge, else Rest) and W the armature's
world matrix, Blender deforms alike when

    basis = Rest⁻¹ · Bind_parent · local · Bind⁻¹ · Rest          (a root's Bind_parent is W⁻¹)

Where the left factor is a similarity and the right one a scale (up to the small rotation Blender's float32
rebuild of the edit bone leaves), each channel maps on its own: key times and the linear/slerp interpolation
of every channel survive (`armature.BoneFrame`). A bind with shear, or a child of a bind whose scale is not
uniform, has no such form: Blender's rest is rigid and a pose basis holds no shear, so the skin matrices of
those bones can only come near the engine's. The nearest frame is used, never a refusal; import then
measures what it gives against the engine's own evaluation (skin = world · bind⁻¹, linear position and
scale, slerped rotation) on the vertices those bones move, and names the bones and the largest difference
(a fraction of the bounding-box diagonal) in one warning when it is above ``DEFORM_TOLERANCE``. The file's
keys of those bones (and of tracks with two keys at one time, a step) are kept on the action (``KEYS_PROP``) with
a fingerprint of the F-curves they became, and export writes them again while the F-curves still match it.
Tracks that name no bone are kept there too and written back, in the file's track order.

Steps: an F-curve holds one key per frame (Blender merges keys less than 0.01 frame apart), so a step at t becomes
a CONSTANT key ``STEP_GAP`` frames before t, on the engine's path to the step's first key, then a key at t with the
second (`step_keys`): Blender plays the engine's motion everywhere but in those ``STEP_GAP`` frames. Export reads a
CONSTANT key whose next key is at most ``STEP_GAP`` later back as a step: two keys at the next key's time, the
first carried on the line of the segment before (the file's first value), then the next key's.

Rotation: Blender interpolates the four quaternion F-curves component by component (a normalised lerp),
Urho3D/UrhoX/glTF slerp. Import makes neighbouring keys take the short way and adds keys of type GENERATED
on the slerp path where the two would part by more than ``ANGLE_TOLERANCE``; export drops GENERATED keys
that still lie on the slerp path between the keys around them.

Export takes, per bone, the union of its channels' key times and evaluates every channel there; it adds
samples at the scene frame rate only inside segments that are not straight (a Bézier segment whose handles
leave the line, other easings, Euler or axis-angle rotation, F-curve modifiers), and samples the evaluated
pose at the frame rate for a bone moved by constraints, drivers or NLA. A CONSTANT segment (other than a step's)
becomes a hold key ``HOLD_GAP`` seconds before the next key unless the whole track steps and the target can step.
Export only reads: frame, action assignment and pose are put back in ``finally``.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import re
from dataclasses import dataclass

import bpy
import numpy as np

from ..core import model as cm
from ..core.errors import ExportError
from ..core.transforms import (
    affine_inverse, matrix3_to_quat, matrix_to_trs, quat_multiply, quat_normalize, slerp, trs_to_matrix,
)
from . import armature as barm
from . import compat
from .mesh import deform_items
from .progress import Progress
from .props import json_prop

ANGLE_TOLERANCE = 1e-5  # radians: nlerp may part from slerp by this much before a GENERATED key is added
HOLD_GAP = 1e-4  # seconds
STEP_GAP = 0.02  # frames (Blender merges keys less than 0.01 apart): a step is a CONSTANT key this much before it
PROP = "skinbridge_ani"
OWNER_PROP = "skinbridge_armature"  # on an action: the armature Object its import made it for
KEYS_PROP = "skinbridge_keys"  # on an action: the file's keys Blender cannot hold exactly, and unmatched tracks
DEFORM_TOLERANCE = 1e-5  # of the bounding-box diagonal: a larger vertex difference from the engine is reported
MAX_MEASURED_TIMES = 2048  # samples of the animation at which that difference is measured

_CHANNELS = {"location": "t", "rotation_quaternion": "q", "rotation_euler": "e", "rotation_axis_angle": "a",
             "scale": "s"}
POSE_BONE_PATH = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\.(\w+)$')
_KEY = bpy.types.Keyframe.bl_rna.properties
_INTERP = {k: v.value for k, v in _KEY["interpolation"].enum_items.items()}
_KEYTYPE = {k: v.value for k, v in _KEY["type"].enum_items.items()}


def fps_of(scene) -> float:
    return scene.render.fps / scene.render.fps_base


def _bone_path(name: str, prop: str) -> str:
    return f'pose.bones["{bpy.utils.escape_identifier(name)}"].{prop}'


def unescape_bone_name(name: str) -> str:
    return re.sub(r"\\(.)", r"\1", name)


# -- the per-bone change of frame: `armature.BoneFrame` (shared with the default pose) ------------------

BoneFrame = barm.BoneFrame
bind_matrices = barm.bind_matrices
bone_frames = barm.bone_frames


# -- rotation keys: short way, GENERATED keys where nlerp parts from slerp ------------------------------

def _nlerp_error(half_angle: np.ndarray) -> np.ndarray:
    """Largest rotation angle between nlerp and slerp over a segment whose quaternions are half_angle apart."""
    f = np.linspace(0.0, 0.5, 257)[None, :]
    a = np.asarray(half_angle, np.float64)[:, None]
    nl = np.arctan2(f * np.sin(a), (1 - f) + f * np.cos(a))
    return 2 * np.abs(nl - f * a).max(axis=1)


@functools.lru_cache(maxsize=8)  # a constant per tolerance, was bisected once per track
def _max_half_angle(tolerance: float) -> float:
    lo, hi = 0.0, math.pi / 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if _nlerp_error(np.array([mid]))[0] <= tolerance:
            lo = mid
        else:
            hi = mid
    return lo


def short_way(q: np.ndarray) -> np.ndarray:
    """Flip key signs so that each key is within 90° (quaternion dot ≥ 0) of the one before."""
    q = np.array(q, np.float64)
    if len(q) > 1:
        d = np.sum(q[1:] * q[:-1], axis=1)
        flips = np.concatenate([[1.0], np.cumprod(np.where(d < 0, -1.0, 1.0))])
        q *= flips[:, None]
    return q


def slerp_keys(times: np.ndarray, q: np.ndarray, tolerance: float = ANGLE_TOLERANCE
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rotation keys that Blender's component-wise interpolation plays within ``tolerance`` of slerp:
    (times, quaternions, generated flags)."""
    times = np.asarray(times, np.float64)
    q = short_way(q)
    if len(q) < 2:
        return times, q, np.zeros(len(q), bool)
    qn = quat_normalize(q)
    half = np.arccos(np.clip(np.sum(qn[1:] * qn[:-1], axis=1), -1.0, 1.0))
    limit = _max_half_angle(tolerance)
    parts = np.maximum(1, np.ceil(half / limit).astype(np.int64))
    wide = np.flatnonzero(parts > 1)  # the others are one part already: measured only where it can matter
    parts[wide[_nlerp_error(half[wide]) <= tolerance]] = 1
    if (parts == 1).all():
        return times, q, np.zeros(len(q), bool)
    seg = np.repeat(np.arange(len(parts)), parts - 1)
    k = np.concatenate([np.arange(1, p) for p in parts]) if len(seg) else np.zeros(0)
    f = k / np.repeat(parts, parts - 1)
    new_t = times[seg] + (times[seg + 1] - times[seg]) * f
    new_q = slerp(qn[seg], qn[seg + 1], f)
    new_q *= np.where(np.sum(new_q * q[seg], axis=1) < 0, -1.0, 1.0)[:, None]
    all_t = np.concatenate([times, new_t])
    order = np.argsort(all_t, kind="stable")
    gen = np.concatenate([np.zeros(len(times), bool), np.ones(len(new_t), bool)])
    return all_t[order], np.concatenate([q, new_q])[order], gen[order]


def _slerp_keys_of(times: np.ndarray, qs: list[np.ndarray], tolerance: float = ANGLE_TOLERANCE) -> list[tuple]:
    """`slerp_keys` of several bones' rotation keys at the same ``times``: whether a segment needs GENERATED keys
    is asked of all of them in one call, and only the bones where one does go through `slerp_keys`."""
    times = np.asarray(times, np.float64)
    if len(times) < 2 or not qs:
        return [slerp_keys(times, q, tolerance) for q in qs]
    q = np.array(qs, np.float64)
    d = np.sum(q[:, 1:] * q[:, :-1], axis=2)
    q *= np.concatenate([np.ones((len(q), 1)), np.cumprod(np.where(d < 0, -1.0, 1.0), axis=1)], axis=1)[..., None]
    qn = quat_normalize(q)
    half = np.arccos(np.clip(np.sum(qn[:, 1:] * qn[:, :-1], axis=2), -1.0, 1.0))
    parts = np.maximum(1, np.ceil(half / _max_half_angle(tolerance)).astype(np.int64))
    wide = parts > 1  # the others are one part already: measured only where it can matter
    parts[wide] = np.where(_nlerp_error(half[wide]) <= tolerance, 1, parts[wide])
    plain = np.zeros(len(times), bool)
    return [(times, q[k], plain.copy()) if (parts[k] == 1).all() else slerp_keys(times, q[k], tolerance)
            for k in range(len(q))]  # `short_way` keeps keys already the short way as they are


def _slerp_keys_held(times: np.ndarray, q: np.ndarray, held: np.ndarray, tolerance: float = ANGLE_TOLERANCE
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`slerp_keys` of keys whose ``held`` ones start a CONSTANT segment (`step_keys`): no GENERATED key inside
    those. Returns (times, quaternions, generated flags, held flags)."""
    t, v, gen = slerp_keys(times, q, tolerance)
    if not held.any():
        return t, v, gen, np.zeros(len(t), bool)
    k = np.flatnonzero(held)
    seg = np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 1)  # the key each one follows
    inside = gen & held[seg] & (t > times[seg])  # a GENERATED key inside a held segment (keys never reach its end)
    t, v, gen = t[~inside], v[~inside], gen[~inside]
    return t, v, gen, np.isin(t, times[k]) & ~gen


def _interp_of(interpolation: str, held: np.ndarray | None):
    """What `_curve_sample` takes: the name, or per key the CONSTANT ones where a step holds."""
    if held is None or not held.any():
        return interpolation
    return np.where(held, "CONSTANT", interpolation)


# -- import: core Animation → action ---------------------------------------------------------------------

def step_keys(times: np.ndarray, values: np.ndarray, fps: float, rotation: bool = False
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keys of a linear channel whose times may repeat (a step: the engine plays the first key of a run at one
    time t as the end of the segment before it and the last from t on) as an F-curve can hold them: (times,
    values, per key whether its segment is CONSTANT). A run (keys less than 0.01 frame apart, which Blender would
    merge, count as one time: the last one's) becomes a CONSTANT key ``STEP_GAP`` frames before t holding the
    engine's value there (on the linear or slerp path to the first key, so that the segment before it is played as
    the engine plays it) and a key at t holding the last. The first value comes back on export (`_step_frames`);
    without a key before the run the CONSTANT key holds the first value."""
    times = np.asarray(times, np.float64)
    values = np.asarray(values, np.float64)
    close = STEP_GAP / 2 / fps
    if len(times) < 2 or (np.diff(times) >= close).all():
        return times, values, np.zeros(len(times), bool)
    out_t, out_v, out_c = [], [], []
    k, n = 0, len(times)
    gap = STEP_GAP / fps
    while k < n:
        end = k
        while end + 1 < n and times[end + 1] - times[end] < close:
            end += 1
        if end > k:
            t = times[end]
            if out_t:
                before = out_t[-1]
                at = max(t - gap, (before + times[k]) / 2)
                f = min((at - before) / (times[k] - before), 1.0) if times[k] > before else 1.0
                a, b = out_v[-1][None], values[k][None]
                held = (slerp(quat_normalize(a), quat_normalize(b), np.array([f])) if rotation
                        else a + (b - a) * f)[0]
                if rotation and np.dot(held, out_v[-1]) < 0:
                    held = -held
            else:
                at, held = t - gap, values[k]
            out_t += [at, t]
            out_v += [held, values[end]]
            out_c += [True, False]
        else:
            out_t.append(times[k])
            out_v.append(values[k])
            out_c.append(False)
        k = end + 1
    return np.array(out_t), np.array(out_v), np.array(out_c)


def _add_channel(cb, bone: str, prop: str, frames: np.ndarray, values: np.ndarray, interpolation: str,
                 generated: np.ndarray | None = None, records: dict | None = None,
                 constant: np.ndarray | None = None) -> None:
    """The F-curves of one channel of a bone, one per column of ``values`` (K, C), keyed at ``frames``; the
    arrays Blender takes are made once for the channel. ``constant`` (when given): the keys whose segment is
    CONSTANT whatever ``interpolation`` says. ``records`` (when given) gets what each curve holds
    under the bone (`_record`), from the arrays set (reading a thousand curves back costs a tenth of an
    import)."""
    path = _bone_path(bone, prop)
    n = len(frames)
    values = np.asarray(values)
    co = np.empty((values.shape[1], 2 * n), np.float32)
    co[:, 0::2] = np.asarray(frames, np.float64)
    co[:, 1::2] = values.T
    interp = np.full(n, _INTERP[interpolation], np.int32)
    if constant is not None and constant.any():
        interp[constant] = _INTERP["CONSTANT"]
    marked = generated is not None and generated.any()
    types = np.where(generated, _KEYTYPE["GENERATED"], _KEYTYPE["KEYFRAME"]).astype(np.int32) if marked else \
        np.full(n, _KEYTYPE["KEYFRAME"], np.int32)
    # keys out of order or at one time (a step): the records read back what `update` made of them
    exact = n < 2 or bool((np.diff(co[0, 0::2]) > 0).all())
    for index in range(values.shape[1]):
        fc = compat.new_fcurve(cb, path, index=index, group_name=bone)
        kp = fc.keyframe_points
        kp.add(n)
        kp.foreach_set("co", co[index])
        kp.foreach_set("interpolation", interp)
        if marked:
            kp.foreach_set("type", types)
        fc.update()
        if records is not None:
            records.setdefault(bone, []).append((path, index, False, co[index], interp, types) if exact
                                                else _record(fc))


def build_action(arm_ob, animation: cm.Animation, fps: float, name: str | None = None,
                 tolerance: float = ANGLE_TOLERANCE, fingerprints: dict | None = None
                 ) -> tuple[bpy.types.Action, list[str]]:
    """A new action (with one slot for ``arm_ob``) holding ``animation``; tracks are matched to bones by
    name, and the unmatched ones listed in one warning and kept on the action (written back on export).
    ``fingerprints`` (when given) gets, per bone, what `curve_fingerprints` reads of the curves made.
    Pose bones of animated bones are set to quaternion rotation. Never refuses a bind Blender cannot hold
    (see the module's docstring). Removes the action again if building fails."""
    rests = barm.rest_matrices(arm_ob)
    binds = bind_matrices(arm_ob, rests)
    frames = bone_frames(arm_ob, binds)
    warnings: list[str] = []
    missing = [t.bone for t in animation.tracks if t.bone not in frames]
    if missing:
        warnings.append(f"{animation.name}: {len(missing)} track(s) match no bone of {arm_ob.name}; kept on the "
                        f"action and written back on export: {', '.join(missing)}")
    act = bpy.data.actions.new(name or animation.name)
    progress = Progress(f"action {act.name}", len(animation.tracks))
    written: dict[str, dict[str, tuple]] = {}
    records: dict[str, list] = {}  # per bone: what its curves hold (`_record`), for the fingerprints
    try:
        slot = act.slots.new(id_type="OBJECT", name=arm_ob.name)
        cb = compat.channelbag_for_slot(act, slot)
        fitted = _fitted_bones(arm_ob, animation, frames)
        rig = (rests, binds)
        measured = None if all(f.exact for f in frames.values()) else _Chain(
            arm_ob, animation, frames, written, _measured_times(animation, frames), fps, rests, binds)
        for done, track in enumerate(animation.tracks):
            progress.update(done)
            bf = frames.get(track.bone)
            if bf is None or track.bone in fitted:
                continue
            curves = written.setdefault(track.bone, {})
            interp = "CONSTANT" if track.interpolation == "STEP" else "LINEAR"
            for ch, prop, attr in (("t", "location", "translation"), ("q", "rotation_quaternion", "rotation"),
                                   ("s", "scale", "scale")):
                values = getattr(track, attr + "s")
                if values is None or not len(values):
                    continue
                t = np.asarray(getattr(track, attr + "_times"), np.float64)
                v = bf.to_basis("r" if ch == "q" else ch, values)
                gen = held = None
                if interp == "LINEAR":
                    t, v, held = step_keys(t, v, fps, rotation=ch == "q")
                    if ch == "q":
                        t, v, gen, held = _slerp_keys_held(t, v, held, tolerance)
                curves[ch] = (t * fps, v, _interp_of(interp, held))
                _add_channel(cb, track.bone, prop, t * fps, v, interp, gen, records, held)
        if fitted:
            _add_fitted_curves(cb, arm_ob, animation, frames, written, fitted, fps, tolerance, records, rig,
                               measured)
        progress.end()
        if fingerprints is not None:
            fingerprints.update({bone: _bone_digest([(r[0], r[1], _curve_digest(*r)) for r in rs])
                                 for bone, rs in records.items()})
        for time, text in animation.markers:
            marker = act.pose_markers.new(str(text)[:63])
            marker.frame = int(round(time * fps))
        act.use_frame_range = True
        act.frame_start = 0.0
        act.frame_end = max(float(animation.length) * fps, 0.0)
        act.use_fake_user = True
        tag_owner(act, arm_ob)
        if animation.extras.get(cm.CLIP_KEY):  # format-neutral clip facts: read back by `read_action`
            act[PROP] = json.dumps({cm.CLIP_KEY: animation.extras[cm.CLIP_KEY]})
        _keep_keys(act, arm_ob, animation, frames, fitted, records, rests)
        warnings += deformation_warning(arm_ob, animation, frames, written, fps, measured)
    except BaseException:
        progress.end()
        bpy.data.actions.remove(act)
        raise
    for track in animation.tracks:
        if track.bone in frames and track.rotations is not None and len(track.rotations):
            arm_ob.pose.bones[track.bone].rotation_mode = "QUATERNION"
    return act, warnings


# -- the file's keys kept on the action --------------------------------------------------------------------

def _track_to_json(track: cm.Track) -> dict:
    out = {"bone": track.bone, "interpolation": track.interpolation, "extras": track.extras}
    for key, t, v in (("t", track.translation_times, track.translations), ("r", track.rotation_times,
                      track.rotations), ("s", track.scale_times, track.scales)):
        if v is not None:
            out[key] = [np.asarray(t, np.float64).tolist(), np.asarray(v, np.float64).tolist()]
    return out


def _track_from_json(data: dict) -> cm.Track:
    track = cm.Track(bone=str(data["bone"]), interpolation=str(data.get("interpolation", "LINEAR")),
                     extras=dict(data.get("extras") or {}))
    for key, attr in (("t", "translation"), ("r", "rotation"), ("s", "scale")):
        if key in data:
            times, values = data[key]
            width = 4 if key == "r" else 3
            setattr(track, attr + "_times", np.asarray(times, np.float64).reshape(-1))
            setattr(track, attr + "s", np.asarray(values, np.float64).reshape(-1, width))
    return track


def _curves_fingerprint(fcurves) -> str:
    """What a bone's F-curves hold (paths, key frames and values, interpolation, key types)."""
    return _records_fingerprint([_record(fc) for fc in fcurves])


def _records_fingerprint(records: list[tuple]) -> str:
    """`_curves_fingerprint` of curves given by their `_record`s."""
    h = hashlib.sha1()
    for path, index, mute, co, interp, types in sorted(records, key=lambda r: (r[0], r[1])):
        h.update(f"{path}[{index}]{len(interp)}{int(mute)}".encode("utf-8", "surrogateescape"))
        for a in (co, interp, types):
            h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _bone_fcurves(cb) -> dict[str, list]:
    out: dict[str, list] = {}
    for fc in cb.fcurves:
        m = POSE_BONE_PATH.match(fc.data_path)
        if m and m.group(2) in _CHANNELS:
            out.setdefault(unescape_bone_name(m.group(1)), []).append(fc)
    return out


def _fitted_bones(arm_ob, animation: cm.Animation, frames: dict[str, BoneFrame]) -> list[str]:
    """Tracked bones (linear, parents first) whose frame is not exact or who hang below one: their keys are
    fitted against the engine through their parents' poses as Blender plays them (`fitted_keys`)."""
    tracked = {t.bone for t in animation.tracks if t.bone in frames and t.interpolation != "STEP"}
    out = []
    for bone in sorted(arm_ob.data.bones, key=lambda b: len(b.parent_recursive)):
        if bone.name in tracked and any(not frames[b.name].exact for b in (bone, *bone.parent_recursive)):
            out.append(bone.name)
    return out


def _add_fitted_curves(cb, arm_ob, animation, frames, written, fitted: list[str], fps: float, tolerance: float,
                       records: dict | None = None, rig: tuple | None = None, measured: _Chain | None = None):
    """Curves of the fitted bones, a depth level at a time (parents first), keyed at every key time of the
    animation's tracks. ``rig``: (`rest_matrices`, `bind_matrices`) when the caller has them; ``measured``: the
    chain of `deformation_error`, whose engine worlds at the key times (the engine's evaluation is time by
    time) are taken when it has them all."""
    times = _key_times(animation, frames)
    engine = None
    if measured is not None and len(measured.times):
        at = np.minimum(np.searchsorted(measured.times, times), len(measured.times) - 1)
        if np.array_equal(measured.times[at], times):
            engine = measured.engine(measured.names)[:, at]
    rests, binds = rig or (None, None)
    chain = _Chain(arm_ob, animation, frames, written, times, fps, rests, binds, engine)
    f = times * fps
    for level in chain.levels(fitted):
        fits = fitted_keys(chain, level)
        for name, keys, (t, q, gen) in zip(level, fits, _slerp_keys_of(times, [k["q"] for k in fits], tolerance)):
            _add_channel(cb, name, "location", f, keys["t"], "LINEAR", records=records)
            _add_channel(cb, name, "rotation_quaternion", t * fps, q, "LINEAR", gen, records)
            _add_channel(cb, name, "scale", f, keys["s"], "LINEAR", records=records)
            written[name] = {"t": (f, keys["t"], "LINEAR"), "q": (t * fps, q, "LINEAR"),
                             "s": (f, keys["s"], "LINEAR")}


def _keep_keys(act, arm_ob, animation: cm.Animation, frames: dict[str, BoneFrame], fitted, records: dict,
               rests: np.ndarray) -> None:
    """The file's keys of the bones whose frame is not exact or whose keys were fitted (the F-curves cannot
    give them back), with a fingerprint of their F-curves and the default-pose value of each channel the track
    lacks (once the action plays, the pose bone holds the fitted curves' value there), the tracks that name no
    bone, and the file's track order. ``records``: per bone, the `_record`s of the curves `build_action` made;
    ``rests``: `armature.rest_matrices`."""
    inexact = [t for t in animation.tracks if t.bone in frames and (not frames[t.bone].exact or t.bone in fitted
                                                                     or _has_step(t))]
    unmatched = [t for t in animation.tracks if t.bone not in frames]
    if not inexact and not unmatched:
        return
    names = [t.bone for t in inexact]
    of = [frames[n] for n in names]
    poses = [default_pose(arm_ob.pose.bones[n]) for n in names]
    fills = [{"translation": t, "rotation": r, "scale": sc} for t, r, sc in zip(*(
        barm.from_basis_of(of, ch, np.array([p[key] for p in poses])).tolist() if names else []
        for ch, key in (("t", "t"), ("r", "q"), ("s", "s"))))]
    data = {"order": [t.bone for t in animation.tracks],
            "tracks": {t.bone: {"fingerprint": _records_fingerprint(records.get(t.bone, [])), "fill": fill,
                                "rest": rest, **_track_to_json(t)}
                       for t, fill, rest in zip(inexact, fills, local_rests(arm_ob, names, rests))},
            "unmatched": [_track_to_json(t) for t in unmatched]}
    act[KEYS_PROP] = json.dumps(data)


def local_rest(arm_ob, bone: str) -> list[float]:
    """The bone's rest relative to its parent's, as Blender holds them: a kept track is the file's only while it
    is as import made it (a track's values are relative to it; `same_rest`)."""
    b = arm_ob.data.bones.get(bone)
    if b is None:
        return []
    rest = np.asarray(b.matrix_local, np.float64)
    if b.parent is not None:
        rest = np.linalg.solve(np.asarray(b.parent.matrix_local, np.float64), rest)
    return rest.reshape(-1).tolist()


def local_rests(arm_ob, names: list[str], rests: np.ndarray | None = None) -> list[list[float]]:
    """`local_rest` of each bone of ``names`` (bones of ``arm_ob``), in one call; ``rests``:
    `armature.rest_matrices`, when the caller has it."""
    bones = arm_ob.data.bones
    rests = barm.rest_matrices(arm_ob) if rests is None else rests
    index = {b.name: i for i, b in enumerate(bones)}
    parent = {b.name: b.parent.name for b in bones if b.parent is not None}
    out = [rests[index[n]] for n in names]
    kids = [k for k, n in enumerate(names) if n in parent]
    if kids:
        solved = np.linalg.solve(np.array([rests[index[parent[names[k]]]] for k in kids]),
                                 np.array([out[k] for k in kids]))
        for k, m in zip(kids, solved):
            out[k] = m
    return [m.reshape(-1).tolist() for m in out]


def same_rest(was, now) -> bool:
    """Within float rounding: leaving Edit Mode recomputes every rest below an edited bone in its last bits."""
    try:
        return len(was) == len(now) and bool(np.allclose(np.asarray(was, np.float64), now, rtol=1e-6, atol=1e-6))
    except (TypeError, ValueError):
        return False


def _has_step(track: cm.Track) -> bool:
    """Two keys of a channel at one time (a step): an F-curve holds one key per frame, so the file's are kept."""
    return any(times is not None and len(times) > 1 and (np.diff(np.asarray(times, np.float64)) <= 0).any()
               for times in (track.translation_times, track.rotation_times, track.scale_times))


def kept_keys(act) -> dict:
    return json_prop(act, KEYS_PROP)


def _curve_digest(path: str, index: int, mute: bool, co: np.ndarray, interp: np.ndarray, types: np.ndarray
                  ) -> bytes:
    """One F-curve's path, keys (float32 frame, value), interpolations and key types."""
    h = hashlib.sha1(f"{path}[{index}]{len(interp)}{int(mute)}".encode("utf-8", "surrogateescape"))
    for a in (co, interp, types):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.digest()


def _bone_digest(digests: list[tuple[str, int, bytes]]) -> str:
    return hashlib.sha1(b"".join(d for _, _, d in sorted(digests))).hexdigest()


def _record(fc) -> tuple:
    """What an F-curve holds, as the fingerprints read it: (path, index, mute, float32 (frame, value) pairs,
    int32 interpolations, int32 key types)."""
    kp = fc.keyframe_points
    n = len(kp)
    co = np.empty(2 * n, np.float32)
    kp.foreach_get("co", co)
    interp = np.empty(n, np.int32)
    kp.foreach_get("interpolation", interp)
    types = np.empty(n, np.int32)
    kp.foreach_get("type", types)
    return fc.data_path, fc.array_index, fc.mute, co, interp, types


def _read_digest(fc) -> tuple[str, int, bytes]:
    r = _record(fc)
    return r[0], r[1], _curve_digest(*r)


NO_CURVES = _bone_digest([])  # the fingerprint of a bone (or a track naming no bone) without F-curves


def curve_fingerprints(arm_ob, act, slot=None, made: dict[str, str] | None = None) -> dict[str, str | None]:
    """Per bone with F-curves in the action's slot for ``arm_ob``: a fingerprint of what they hold, or None
    where export does not read them as they are (a bone moved by constraints, drivers or NLA, or curves with
    F-curve modifiers). A format package keeps these at import to tell the tracks the user left alone.
    ``made``: what `build_action` gave as ``fingerprints`` for this action, when nothing can have touched its
    curves since (the same import): taken instead of reading every curve back."""
    slot = slot or slot_for(arm_ob, act)
    by_bone: dict[str, list] = {}
    for cb in _channelbags(act):
        if slot is None or cb.slot == slot:
            for bone, fcs in _bone_fcurves(cb).items():
                by_bone.setdefault(bone, []).extend(fcs)
    moved = _moved_elsewhere(arm_ob, act)
    made = made or {}
    return {bone: None if bone in moved or any(not m.mute for fc in fcs for m in fc.modifiers)
            else made[bone] if bone in made else _bone_digest([_read_digest(fc) for fc in fcs])
            for bone, fcs in by_bone.items()}


def rig_fingerprint(arm_ob) -> str:
    """What maps a track to its F-curves: bone names and parents, rest and bind matrices, the armature's world
    matrix. While it holds, unchanged F-curves stand for unchanged file keys."""
    h = hashlib.sha1()
    bones = arm_ob.data.bones
    h.update("\0".join(f"{b.name}\1{b.parent.name if b.parent else ''}" for b in bones).encode("utf-8",
                                                                                            "surrogateescape"))
    rest = np.empty(16 * len(bones), np.float32)
    bones.foreach_get("matrix_local", rest)
    h.update(rest.tobytes())
    binds = bind_matrices(arm_ob)
    h.update(np.array([binds[b.name] for b in bones], np.float64).tobytes())
    h.update(np.array(arm_ob.matrix_world, np.float64).tobytes())
    return h.hexdigest()


# -- how near Blender's deformation comes to the engine's ----------------------------------------------------

def _engine_parts(times, values, at, kind: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """What the engine blends at times ``at`` from keys (K, C), clamped: (the key before, the key after, the
    fraction between them), or (the key in force, None, None) for a step or a single key."""
    times = np.asarray(times, np.float64)
    values = np.asarray(values, np.float64)
    i = np.clip(np.searchsorted(times, at, side="right") - 1, 0, len(times) - 1)
    if kind == "step" or len(times) == 1:
        return values[i], None, None
    j = np.minimum(i + 1, len(times) - 1)
    span = times[j] - times[i]
    f = np.clip(np.where(span > 0, (at - times[i]) / np.where(span > 0, span, 1.0), 0.0), 0.0, 1.0)
    return values[i], values[j], f


def _engine_samples(parts: list[tuple], kind: str) -> np.ndarray:
    """Key values (B, T, C) of B bones' `_engine_parts` as the engine plays them: linear or slerp; a bone
    whose parts hold no key after takes the key in force. The blends of all bones in one call."""
    out = np.array([p[0] for p in parts])
    blend = [k for k, p in enumerate(parts) if p[1] is not None]
    if blend:
        a = out[blend]
        b = np.array([parts[k][1] for k in blend])
        f = np.array([parts[k][2] for k in blend])
        out[blend] = slerp(a, b, f) if kind == "slerp" else a + (b - a) * f[..., None]
    return out


def _curve_sample(curve, at_frames, static) -> np.ndarray:
    """F-curve values at frames as Blender plays the curves we built (linear or constant, clamped)."""
    if curve is None:
        return np.tile(np.asarray(static, np.float64), (len(at_frames), 1))
    f, v, interp = curve
    v = np.asarray(v, np.float32).astype(np.float64)  # F-curves hold float32
    f = np.asarray(f, np.float32).astype(np.float64)
    i = np.clip(np.searchsorted(f, at_frames, side="right") - 1, 0, len(f) - 1)
    if isinstance(interp, str) and interp == "CONSTANT" or len(f) == 1:
        return v[i]
    out = np.stack([np.interp(at_frames, f, v[:, k]) for k in range(v.shape[1])], axis=1)
    if not isinstance(interp, str):  # per key: a CONSTANT key holds its value up to the next
        held = (np.asarray(interp)[i] == "CONSTANT") & (at_frames >= f[0])
        out[held] = v[i[held]]
    return out


def _deformed_points(arm_ob) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Armature-space rest positions of the vertices each deforming bone moves (weight > 0), over every
    mesh the armature deforms; without meshes, the bones' heads and tails."""
    inv_arm = np.linalg.inv(np.array(arm_ob.matrix_world, dtype=np.float64))
    deform = {b.name for b in arm_ob.data.bones if b.use_deform}
    rows: dict[str, list] = {}
    everything = []
    for ob in bpy.data.objects:
        if ob.type != "MESH" or not any(m.type == "ARMATURE" and m.object == arm_ob for m in ob.modifiers):
            continue
        me = ob.data
        co = np.empty(3 * len(me.vertices), np.float32)
        me.vertices.foreach_get("co", co)
        m = inv_arm @ np.array(ob.matrix_world, dtype=np.float64)
        pts = co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
        everything.append(pts)
        names = [vg.name for vg in ob.vertex_groups]
        counts, groups, weights = deform_items(me)
        weighted = weights > 0
        vertex = np.repeat(np.arange(len(counts)), counts)[weighted]
        groups = groups[weighted]
        for gi in np.unique(groups):
            if gi < len(names) and names[gi] in deform:
                rows.setdefault(names[gi], []).append(pts[vertex[groups == gi]])
    if not everything:
        for b in arm_ob.data.bones:
            pts = np.array([b.head_local, b.tail_local], dtype=np.float64)
            everything.append(pts)
            rows[b.name] = [pts]
    return {k: np.concatenate(v) for k, v in rows.items()}, np.concatenate(everything)


class _Chain:
    """Per bone, at fixed times: the engine's world (armature space: the armature's inverse world matrix ·
    the chain of local TRS, each channel sampled as the engine samples it, channels without keys at the pose
    bone's own value mapped back) and Blender's pose matrix from the curves in ``written`` (per bone: channel
    → (frames, basis values, interpolation); other channels at the pose bone's value). Bones are taken a
    depth level at a time (`levels`), each level's matrices in one numpy call per step. The engine's worlds
    are made for every bone on first use; a bone's pose on first use of it, so its curves (and its
    ancestors') must be final by then."""

    def __init__(self, arm_ob, animation: cm.Animation, frames: dict[str, BoneFrame],
                 written: dict[str, dict[str, tuple]], times: np.ndarray, fps: float,
                 rests: np.ndarray | None = None, binds: dict[str, np.ndarray] | None = None,
                 engine: np.ndarray | None = None):
        self.arm_ob = arm_ob
        self.frames = frames
        self.written = written
        self.times = np.asarray(times, np.float64)
        self.at_frames = self.times * fps
        self.world_inv = np.linalg.inv(np.array(arm_ob.matrix_world, dtype=np.float64))
        rests = barm.rest_matrices(arm_ob) if rests is None else rests
        self.binds = bind_matrices(arm_ob, rests) if binds is None else binds
        bones = arm_ob.data.bones
        self.names = [b.name for b in bones]
        self.index = {n: i for i, n in enumerate(self.names)}
        self.parent = {b.name: b.parent.name if b.parent else None for b in bones}
        self.rest = dict(zip(self.names, rests))
        self.depth: dict[str, int] = {}
        for b in bones:
            self.depth[b.name] = len(b.parent_recursive)
        self.tracks = {t.bone: t for t in animation.tracks if t.bone in frames}
        self._static: dict[str, dict[str, np.ndarray]] = {}
        self._engine = engine  # (N, T, 4, 4), every bone in `names` order, when the caller has it
        self._posed: dict[str, np.ndarray] = {}

    def levels(self, names) -> list[list[str]]:
        """``names`` by depth (roots first), each level in the given order."""
        by_depth: dict[int, list[str]] = {}
        for n in names:
            by_depth.setdefault(self.depth[n], []).append(n)
        return [by_depth[d] for d in sorted(by_depth)]

    def static(self, name: str) -> dict[str, np.ndarray]:
        if name not in self._static:
            self._static[name] = default_pose(self.arm_ob.pose.bones[name])
        return self._static[name]

    def engine(self, names: list[str]) -> np.ndarray:
        """The engine's worlds (B, T, 4, 4) of ``names``."""
        if self._engine is None:
            self._engine = self._engine_worlds()
        return self._engine[[self.index[n] for n in names]]

    def _engine_worlds(self) -> np.ndarray:
        n = len(self.times)
        local = []
        for ch, bch, attr, kind in (("t", "t", "translation", "linear"), ("q", "r", "rotation", "slerp"),
                                    ("s", "s", "scale", "linear")):
            parts = []
            for name in self.names:
                track = self.tracks.get(name)
                values = getattr(track, attr + "s") if track is not None else None
                if values is not None and len(values):
                    step = track.interpolation == "STEP"
                    parts.append(_engine_parts(getattr(track, attr + "_times"), values, self.times,
                                               "step" if step else kind))
                else:
                    bf = self.frames[name]
                    parts.append((np.tile(bf.from_basis(bch, self.static(name)[ch][None])[0], (n, 1)), None, None))
            local.append(_engine_samples(parts, kind))
        local = trs_to_matrix(*local)
        world = np.empty_like(local)
        for level in self.levels(self.names):
            idx = [self.index[b] for b in level]
            roots = [k for k, b in zip(idx, level) if self.parent[b] is None]
            kids = [k for k, b in zip(idx, level) if self.parent[b] is not None]
            if roots:
                world[roots] = self.world_inv @ local[roots]
            if kids:
                world[kids] = world[[self.index[self.parent[self.names[k]]] for k in kids]] @ local[kids]
        return world

    def parent_frames(self, names: list[str]) -> np.ndarray:
        """What Blender puts before each bone's basis (B, T, 4, 4): its rest, through its parent's pose."""
        t = len(self.times)
        out = np.empty((len(names), t, 4, 4))
        roots = [k for k, n in enumerate(names) if self.parent[n] is None]
        kids = [k for k, n in enumerate(names) if self.parent[n] is not None]
        if roots:
            out[roots] = np.broadcast_to(np.array([self.rest[names[k]] for k in roots])[:, None], (len(roots), t, 4, 4))
        if kids:
            parents = [self.parent[names[k]] for k in kids]
            offset = np.linalg.inv(np.array([self.rest[p] for p in parents])) @ np.array(
                [self.rest[names[k]] for k in kids])
            out[kids] = self.posed(parents) @ offset[:, None]
        return out

    def posed(self, names: list[str]) -> np.ndarray:
        """Blender's pose matrices (B, T, 4, 4) of ``names`` from the curves in ``written``."""
        missing = list(dict.fromkeys(n for n in names if n not in self._posed))
        for level in self.levels(missing):
            f = self.at_frames
            samples = []
            for ch in ("t", "q", "s"):
                samples.append(np.array([_curve_sample(self.written.get(n, {}).get(ch), f, self.static(n)[ch])
                                         for n in level]))
            basis = trs_to_matrix(samples[0], quat_normalize(samples[1]), samples[2])
            for n, m in zip(level, self.parent_frames(level) @ basis):
                self._posed[n] = m
        return np.array([self._posed[n] for n in names])

    def skin_differences(self) -> np.ndarray:
        """Blender's skin matrices less the engine's (N, T, 4, 4), every bone in `names` order."""
        rest_inv = np.linalg.inv(np.array([self.rest[n] for n in self.names]))
        bind_inv = np.linalg.inv(np.array([self.binds[n] for n in self.names]))
        return self.posed(self.names) @ rest_inv[:, None] - self.engine(self.names) @ bind_inv[:, None]


def _key_times(animation: cm.Animation, names) -> np.ndarray:
    parts = [np.zeros(1), np.array([max(float(animation.length), 0.0)])]
    for t in animation.tracks:
        if t.bone in names:
            parts += [np.asarray(x, np.float64) for x in (t.translation_times, t.rotation_times, t.scale_times)
                      if x is not None]
    return np.unique(np.concatenate(parts))


def fitted_keys(chain: _Chain, names: list[str]) -> list[dict[str, np.ndarray]]:
    """Per bone of ``names`` (one depth level: their parents' curves final), the basis keys per channel that
    bring its skin matrix nearest the engine's at the chain's times, given its parent's pose as Blender will
    play it: the translation exactly, the rotation and scale of the polar decomposition of what remains (a
    shear is all Blender cannot take)."""
    binds_inv = np.linalg.inv(np.array([chain.binds[n] for n in names]))
    rests = np.array([chain.rest[n] for n in names])
    target = chain.engine(names) @ binds_inv[:, None] @ rests[:, None]
    basis = np.linalg.inv(chain.parent_frames(names)) @ target
    m = basis[..., :3, :3]
    u, _, vt = np.linalg.svd(m)
    flip = np.linalg.det(u @ vt) < 0
    u[flip, :, -1] *= -1
    r = u @ vt
    q = matrix3_to_quat(r)
    return [{"t": basis[k, :, :3, 3].copy(), "q": short_way(q[k]), "s": np.einsum("tjk,tjk->tk", r[k], m[k])}
            for k in range(len(names))]


def _measured_times(animation: cm.Animation, frames) -> np.ndarray:
    """Where `deformation_error` measures: every key time and three points inside every gap."""
    keys = _key_times(animation, frames)
    gaps = [keys[:-1] + (keys[1:] - keys[:-1]) * k / 4 for k in (1, 2, 3)]
    times = np.unique(np.concatenate([keys, *gaps]))
    if len(times) > MAX_MEASURED_TIMES:  # a long animation: evenly spread samples bound the memory
        times = times[np.unique(np.linspace(0, len(times) - 1, MAX_MEASURED_TIMES).round().astype(np.int64))]
    return times


def deformation_error(arm_ob, animation: cm.Animation, frames: dict[str, BoneFrame],
                      written: dict[str, dict[str, tuple]], fps: float, chain: _Chain | None = None
                      ) -> tuple[float, dict[str, float]]:
    """(the bounding-box diagonal, the largest vertex difference per bone) between Blender's deformation
    with the curves in ``written`` and the engine's evaluation of ``animation``, over every key time and three
    points inside every gap (`_measured_times`). ``chain``: a `_Chain` of these at those times, when the
    caller made one (no pose of it taken before the curves were final)."""
    if chain is None:
        chain = _Chain(arm_ob, animation, frames, written, _measured_times(animation, frames), fps)
    skin_diff = dict(zip(chain.names, chain.skin_differences()))
    points, everything = _deformed_points(arm_ob)
    diagonal = float(np.linalg.norm(np.ptp(everything, axis=0))) if len(everything) else 0.0
    errors = {}
    for name, pts in points.items():
        d = skin_diff[name]
        worst = 0.0
        for a in range(0, len(pts), 1024):
            chunk = pts[a:a + 1024]
            moved = np.einsum("tij,nj->tni", d[:, :3, :3], chunk) + d[:, None, :3, 3]
            worst = max(worst, float(np.sqrt((moved * moved).sum(axis=2)).max()))
        errors[name] = worst
    return diagonal, errors


def deformation_warning(arm_ob, animation: cm.Animation, frames: dict[str, BoneFrame],
                        written: dict[str, dict[str, tuple]], fps: float, chain: _Chain | None = None) -> list[str]:
    """One warning naming the bones whose vertices Blender moves more than ``DEFORM_TOLERANCE`` of the
    diagonal away from the engine, with the largest difference; nothing when every frame is exact."""
    if all(f.exact for f in frames.values()):
        return []
    diagonal, errors = deformation_error(arm_ob, animation, frames, written, fps, chain)
    limit = DEFORM_TOLERANCE * diagonal
    over = sorted((e, n) for n, e in errors.items() if e > limit)
    if not over or diagonal <= 0:
        return []
    worst = over[-1][0] / diagonal
    names = ", ".join(n for _, n in reversed(over))
    return [f"{animation.name}: Blender cannot hold the binds of these bones exactly (shear or non-uniform "
            f"scale; its rest is rigid and a pose holds no shear); their vertices differ from the engine by up "
            f"to {worst:.3g} of the diagonal: {names}"]


@contextlib.contextmanager
def rollback_on_failure(arm_ob, created: list):
    """Around an import of actions onto `arm_ob`: if it fails, the armature's action, slot and its bones'
    rotation modes are put back as they were and every action in `created` (filled by the caller) is removed."""
    ad = arm_ob.animation_data
    saved = (ad.action, ad.action_slot) if ad is not None else None
    modes = {pb.name: pb.rotation_mode for pb in arm_ob.pose.bones}
    try:
        yield
    except BaseException:
        if saved is None and arm_ob.animation_data is not None:
            arm_ob.animation_data_clear()
        elif saved is not None:
            if arm_ob.animation_data.action != saved[0]:
                arm_ob.animation_data.action = saved[0]
            if saved[1] is not None and arm_ob.animation_data.action_slot != saved[1]:
                arm_ob.animation_data.action_slot = saved[1]
        for act in created:
            try:
                bpy.data.actions.remove(act)
            except ReferenceError:
                pass
        for name, mode in modes.items():
            if arm_ob.pose.bones[name].rotation_mode != mode:
                arm_ob.pose.bones[name].rotation_mode = mode
        raise


def assign(arm_ob, action) -> None:
    ad = arm_ob.animation_data or arm_ob.animation_data_create()
    ad.action = action
    slot = next((s for s in action.slots if s.target_id_type == "OBJECT"), None)
    if slot is not None and ad.action_slot != slot:
        ad.action_slot = slot


# -- export: action → core Animation ---------------------------------------------------------------------

def tag_owner(act, arm_ob) -> None:
    """Mark ``act`` as made for ``arm_ob`` (what every import does): an ID pointer kept in the action's
    ``OWNER_PROP``, which follows the object through renames and survives save and reload."""
    act[OWNER_PROP] = arm_ob


def _tagged_owner(act):
    ob = act.get(OWNER_PROP)
    return ob if isinstance(ob, bpy.types.Object) and ob.type == "ARMATURE" else None


def _scene_armatures() -> list:
    return [ob for ob in bpy.data.objects if ob.type == "ARMATURE" and ob.users_scene]


def _uses(arm_ob, act) -> bool:
    """``arm_ob`` plays ``act``: assigned, in an NLA strip, or a user of one of its slots."""
    ad = arm_ob.animation_data
    if ad is not None and (ad.action == act or any(
            strip.action == act for track in ad.nla_tracks for strip in track.strips)):
        return True
    for s in act.slots:
        try:
            if arm_ob in s.users():
                return True
        except AttributeError:
            return False
    return False


def _named_bones(act) -> set[str]:
    return {unescape_bone_name(m.group(1)) for cb in _channelbags(act) for fc in cb.fcurves
            for m in [POSE_BONE_PATH.match(fc.data_path)] if m}


def action_owners(act, armatures=None) -> tuple[list, str]:
    """The armatures ``act`` belongs to and why ("used", "tagged", "bones"): those that play it; else the one
    its import tagged (`tag_owner`); else, for an action no armature plays, every armature whose bones its
    pose-bone curves name (every armature when it names none). More than one "bones" owner is ambiguous."""
    armatures = _scene_armatures() if armatures is None else armatures
    users = [a for a in armatures if _uses(a, act)]
    if users:
        return users, "used"
    tagged = _tagged_owner(act)
    if tagged is not None and tagged.users_scene:
        return [tagged], "tagged"
    names = _named_bones(act)
    return [a for a in armatures if not names or names & set(a.data.bones.keys())], "bones"


def armature_actions(arm_ob, strict: bool = True, also=None) -> list:
    """The actions that belong to ``arm_ob`` (`action_owners`), in `bpy.data.actions` order: those with
    pose-bone curves naming one of its bones, or for which ``also(action)`` is true. An action no armature
    plays, untagged, that fits several armatures by bone names is refused (``strict``: one `ExportError`
    naming each such action and its candidates) or left out."""
    names = set(arm_ob.data.bones.keys())
    armatures = _scene_armatures()
    if arm_ob not in armatures:
        armatures.append(arm_ob)
    out, ambiguous = [], []
    for act in bpy.data.actions:
        bones = _named_bones(act)
        if not (bones & names and slot_for(arm_ob, act) is not None) and not (also is not None and also(act)):
            continue
        owners, why = action_owners(act, armatures)
        if arm_ob not in owners:
            continue
        if why == "bones" and len(owners) > 1:
            ambiguous.append(f"{act.name!r} (fits {', '.join(sorted(a.name for a in owners))})")
            continue
        out.append(act)
    if ambiguous and strict:
        count, actions = len(ambiguous), "; ".join(ambiguous)
        raise ExportError(f"{count} action(s) no armature plays fit more than one armature by bone names: "
                          f"{actions}; assign each to its armature (or put it in an NLA track) and export again")
    return out


def _channelbags(act):
    return compat.channelbags(act)


def slot_for(arm_ob, act):
    ad = arm_ob.animation_data
    if ad is not None and ad.action == act and ad.action_slot is not None:
        return ad.action_slot
    slots = [s for s in act.slots if s.target_id_type in ("OBJECT", "UNSPECIFIED")]
    for s in slots:
        try:
            if arm_ob in s.users():
                return s
        except AttributeError:
            break
    for s in slots:
        for cb in _channelbags(act):
            if cb.slot == s and any(fc.data_path.startswith("pose.bones[") for fc in cb.fcurves):
                return s
    return None


@dataclass
class _Curve:
    fc: object
    frames: np.ndarray
    values: np.ndarray
    interp: np.ndarray
    types: np.ndarray
    curved: np.ndarray  # per segment: needs sampling
    constant: np.ndarray  # per segment: holds
    evaluate_outside: bool


def _read_curve(fc) -> _Curve:
    kp = fc.keyframe_points
    n = len(kp)
    co = np.empty(2 * n, np.float32)
    kp.foreach_get("co", co)
    hl = np.empty(2 * n, np.float32)
    hr = np.empty(2 * n, np.float32)
    kp.foreach_get("handle_left", hl)
    kp.foreach_get("handle_right", hr)
    interp = np.empty(n, np.int32)
    kp.foreach_get("interpolation", interp)
    types = np.empty(n, np.int32)
    kp.foreach_get("type", types)
    x, y = co[0::2].astype(np.float64), co[1::2].astype(np.float64)
    order = np.argsort(x, kind="stable")
    x, y, interp, types = x[order], y[order], interp[order], types[order]
    hl, hr = hl.reshape(-1, 2)[order].astype(np.float64), hr.reshape(-1, 2)[order].astype(np.float64)
    seg_interp = interp[:-1]
    constant = seg_interp == _INTERP["CONSTANT"]
    linear = seg_interp == _INTERP["LINEAR"]
    bezier = seg_interp == _INTERP["BEZIER"]
    if n > 1:
        dx = x[1:] - x[:-1]
        slope = np.where(dx > 0, (y[1:] - y[:-1]) / np.where(dx > 0, dx, 1), 0.0)
        scale = np.maximum(1.0, np.maximum(np.abs(y[1:]), np.abs(y[:-1])))
        off_r = np.abs(hr[:-1, 1] - (y[:-1] + slope * (hr[:-1, 0] - x[:-1])))
        off_l = np.abs(hl[1:, 1] - (y[:-1] + slope * (hl[1:, 0] - x[:-1])))
        straight = bezier & (np.maximum(off_r, off_l) <= 1e-6 * scale) & (hr[:-1, 0] >= x[:-1]) & (hl[1:, 0] <= x[1:])
        flat = y[1:] == y[:-1]
        curved = ~(constant | linear | straight | (bezier & flat & (hr[:-1, 1] == y[:-1]) & (hl[1:, 1] == y[1:])))
    else:
        curved = np.zeros(0, bool)
    modified = any(not m.mute and m.active for m in fc.modifiers)
    if modified:
        curved[:] = True
    return _Curve(fc, x, y, interp, types, curved, constant,
                  evaluate_outside=modified or fc.extrapolation != "CONSTANT")


def _evaluate(c: _Curve, frames: np.ndarray) -> np.ndarray:
    """F-curve values at frames: numpy for straight and constant segments, Blender for the rest."""
    x, y = c.frames, c.values
    if len(x) == 0:
        return np.array([c.fc.evaluate(float(f)) for f in frames])
    i = np.clip(np.searchsorted(x, frames, side="right") - 1, 0, len(x) - 1)
    j = np.minimum(i + 1, len(x) - 1)
    span = x[j] - x[i]
    f = np.where(span > 0, (frames - x[i]) / np.where(span > 0, span, 1), 0.0)
    seg_constant = np.append(c.constant, True)[i]
    out = np.where(seg_constant, y[i], y[i] + (y[j] - y[i]) * f)
    out = np.where(frames < x[0], y[0], out)
    exact = x[i] == frames
    out[exact] = y[i[exact]]
    slow = np.zeros(len(frames), bool)
    if len(c.curved):
        inside = (frames > x[0]) & (frames < x[-1]) & ~exact
        slow |= inside & np.append(c.curved, False)[i]
    if c.evaluate_outside:
        slow |= (frames < x[0]) | (frames > x[-1])
        if any(not m.mute and m.active for m in c.fc.modifiers):
            slow[:] = True
    for k in np.flatnonzero(slow):
        out[k] = c.fc.evaluate(float(frames[k]))
    return out


def _step_frames(c: _Curve) -> np.ndarray:
    """Indices of the curve's CONSTANT keys that stand for a step (`step_keys`): the next key ``STEP_GAP``
    frames later at most (with float32 slack)."""
    if not len(c.constant) or not c.constant.any():
        return np.zeros(0, np.int64)
    k = np.flatnonzero(c.constant)
    nxt = c.frames[k + 1]
    slack = 1e-5 + 8 * np.spacing(np.abs(nxt).astype(np.float32)).astype(np.float64)
    return k[nxt - c.frames[k] <= STEP_GAP + slack]


def _left_values(c: _Curve, at: np.ndarray, stepped: np.ndarray) -> np.ndarray:
    """The curve's values just before frames ``at``: the held value after a CONSTANT segment, and at a step of the
    curve (``stepped``: `_step_frames`) its first value, on the line of the straight segment before the CONSTANT
    key carried on to the step's time (`step_keys` put that key on the engine's path to the first value)."""
    out = _evaluate(c, at)
    x, y = c.frames, c.values
    i = np.searchsorted(x, at)
    on_key = (i > 0) & (i < len(x))
    on_key[on_key] &= x[i[on_key]] == at[on_key]
    held = on_key.copy()
    held[on_key] = c.constant[i[on_key] - 1]
    out[held] = y[i[held] - 1]
    for k in stepped:
        value = y[k]
        if k > 0 and not c.constant[k - 1] and not c.curved[k - 1] and x[k] > x[k - 1]:
            value = y[k - 1] + (y[k] - y[k - 1]) * (x[k + 1] - x[k - 1]) / (x[k] - x[k - 1])
        out[at == x[k + 1]] = value
    return out


def euler_to_quat(e: np.ndarray, order: str) -> np.ndarray:
    """Quaternions of Euler angles (K, 3) in Blender's rotation order (e.g. 'XYZ': X applied first)."""
    def axis_quat(axis: int, angle):
        q = np.zeros((len(angle), 4))
        q[:, 0] = np.cos(angle / 2)
        q[:, 1 + axis] = np.sin(angle / 2)
        return q
    q = np.tile([1.0, 0, 0, 0], (len(e), 1))
    for ch in order:
        a = "XYZ".index(ch)
        q = quat_multiply(axis_quat(a, e[:, a]), q)
    return q


def _axis_angle_to_quat(v: np.ndarray) -> np.ndarray:
    axis = v[:, 1:]
    n = np.linalg.norm(axis, axis=1, keepdims=True)
    axis = np.where(n > 0, axis / np.where(n > 0, n, 1), [0.0, 1.0, 0.0])
    return np.concatenate([np.cos(v[:, :1] / 2), axis * np.sin(v[:, :1] / 2)], axis=1)


def _drop_generated(curves: list[_Curve]) -> np.ndarray:
    """Frames of a quaternion's GENERATED keys that still lie on the slerp path between the other keys."""
    if len(curves) != 4 or any(len(c.frames) != len(curves[0].frames) or
                               not np.array_equal(c.frames, curves[0].frames) for c in curves):
        return np.zeros(0)
    x = curves[0].frames
    gen = np.logical_and.reduce([c.types == _KEYTYPE["GENERATED"] for c in curves])
    if not gen.any() or gen.all():
        return np.zeros(0)
    q = np.stack([c.values for c in curves], axis=1)
    real = np.flatnonzero(~gen)
    g = np.flatnonzero(gen)
    pos = np.searchsorted(real, g) - 1
    inside = (pos >= 0) & (pos + 1 < len(real))
    lo = real[np.clip(pos, 0, len(real) - 1)]
    hi = real[np.clip(pos + 1, 0, len(real) - 1)]
    f = np.where(inside, (x[g] - x[lo]) / np.where(x[hi] > x[lo], x[hi] - x[lo], 1), 0.0)
    path = slerp(q[lo], q[hi], f)
    d = np.abs(np.sum(quat_normalize(q[g]) * path, axis=1))
    on_path = inside & (2 * np.arccos(np.clip(d, 0.0, 1.0)) <= 2 * ANGLE_TOLERANCE)
    # a segment with any GENERATED key off the path (edited by the user) keeps all of its keys
    seg = np.where(inside, pos, -1)
    bad_segments = np.unique(seg[~on_path & inside])
    drop = on_path & ~np.isin(seg, bad_segments)
    return x[g[drop]]


def _moved_elsewhere(arm_ob, act) -> set[str]:
    """Bones whose pose is not their F-curves alone: constraints, drivers, NLA that reaches the result."""
    moved = set()
    for pb in arm_ob.pose.bones:
        if any(c.enabled and c.influence > 0 for c in pb.constraints):
            moved.add(pb.name)
    ad = arm_ob.animation_data
    if ad is not None:
        for d in ad.drivers:
            m = POSE_BONE_PATH.match(d.data_path)
            if m and not d.mute:
                moved.add(unescape_bone_name(m.group(1)))
        if ad.use_nla and ad.action == act and (ad.action_blend_type != "REPLACE" or ad.action_influence < 1):
            for track in ad.nla_tracks:
                if track.mute:
                    continue
                for strip in track.strips:
                    if strip.mute or strip.action is None:
                        continue
                    for cb in _channelbags(strip.action):
                        for fc in cb.fcurves:
                            m = POSE_BONE_PATH.match(fc.data_path)
                            if m:
                                moved.add(unescape_bone_name(m.group(1)))
    return moved


def read_action(context, arm_ob, act, slot=None, step_tracks: bool = True, fill_missing: bool = True,
                skip=()) -> tuple[cm.Animation, list[str]]:
    """A core Animation (times in seconds from the action's first frame) from an action's channelbag for
    ``arm_ob``. ``step_tracks``: a track whose every segment is CONSTANT may stay STEP (else hold keys);
    ``fill_missing``: channels without F-curves are filled from the pose bone's own value; ``skip``: bones
    left out (their tracks are written from elsewhere: a format package's kept file records)."""
    warnings: list[str] = []
    fps = fps_of(context.scene)
    slot = slot or slot_for(arm_ob, act)
    frames_of = bone_frames(arm_ob)
    curves: dict[str, dict[str, list]] = {}
    for cb in _channelbags(act):
        if slot is not None and cb.slot != slot:
            continue
        for fc in cb.fcurves:
            m = POSE_BONE_PATH.match(fc.data_path)
            if not m or fc.mute or m.group(2) not in _CHANNELS or not len(fc.keyframe_points):
                continue
            bone = unescape_bone_name(m.group(1))
            if bone in skip:
                continue
            curves.setdefault(bone, {}).setdefault(_CHANNELS[m.group(2)], []).append((fc.array_index, fc))
    unknown = [b for b in curves if b not in frames_of]
    if unknown:
        warnings.append(f"{act.name}: curves for {len(unknown)} bone(s) not in {arm_ob.name} ignored: "
                        f"{', '.join(unknown)}")
    all_frames = [c.co[0] for b in curves.values() for lst in b.values() for _, fc in lst
                  for c in (fc.keyframe_points[0], fc.keyframe_points[-1])]
    if act.use_frame_range:
        start, end = float(act.frame_start), float(act.frame_end)
    elif all_frames:
        start, end = float(min(all_frames)), float(max(all_frames))
    else:
        start, end = 0.0, 0.0
    anim = cm.Animation(name=act.name, length=max(end - start, 0.0) / fps)
    anim.extras.update(json_prop(act, PROP))  # format data, under the keys its format package chose
    baked = _moved_elsewhere(arm_ob, act) & set(curves)
    held = []
    tracks: dict[str, cm.Track] = {}
    progress = Progress(f"action {act.name}", len(curves))
    try:
        for done, (bone, chans) in enumerate(curves.items()):
            progress.update(done)
            if bone not in frames_of or bone in baked:
                continue
            track, hold = _track_from_curves(arm_ob, bone, chans, frames_of[bone], start, fps, step_tracks,
                                             fill_missing)
            if hold:
                held.append(bone)
            tracks[bone] = track
    finally:
        progress.end()
    if baked:
        warnings.append(f"{act.name}: {len(baked)} bone(s) moved by constraints, drivers or NLA sampled at "
                        f"{fps:g} fps: {', '.join(sorted(baked))}")
        order = [b for b in curves if b in baked]
        tracks.update(_bake(context, arm_ob, act, slot, order, start, end, fps, fill_missing,
                            {b: set(curves[b]) for b in order}))
    order = [b for b in curves if b in tracks]
    kept = kept_keys(act)
    if kept:
        def fill_of(bone):  # a channel the file's track lacks: left out, or the pose bone's own value
            if not fill_missing:
                return None
            pb, bf = arm_ob.pose.bones[bone], frames_of[bone]
            pose = default_pose(pb)
            return {"translation": bf.from_basis("t", pose["t"][None])[0],
                    "rotation": bf.from_basis("r", pose["q"][None])[0],
                    "scale": bf.from_basis("s", pose["s"][None])[0]}

        order = _use_kept_keys(act, slot, kept, tracks, baked, order, start / fps, fill_of, arm_ob)
    anim.tracks = [tracks[b] for b in order]
    if held:
        warnings.append(f"{act.name}: CONSTANT segments written as hold keys {HOLD_GAP:g} s before the next key "
                        f"({', '.join(held[:5])}{', ...' if len(held) > 5 else ''})")
    for marker in act.pose_markers:
        anim.markers.append(((marker.frame - start) / fps, marker.name))
    anim.markers.sort(key=lambda m: m[0])
    return anim, warnings


def kept_track_counts(arm_ob, act) -> tuple[int, int]:
    """(tracks whose file keys the action keeps, those of them whose F-curves and rest still hold what the import
    made: the export writes their file keys back), by the test `_use_kept_keys` makes."""
    tracks = kept_keys(act).get("tracks") or {}
    if not tracks:
        return 0, 0
    slot = slot_for(arm_ob, act)
    by_bone: dict[str, list] = {}
    for cb in _channelbags(act):
        if slot is None or cb.slot == slot:
            for bone, fcs in _bone_fcurves(cb).items():
                by_bone.setdefault(bone, []).extend(fcs)
    unchanged = 0
    for bone, data in tracks.items():
        if not isinstance(data, dict) or _curves_fingerprint(by_bone.get(bone, [])) != data.get("fingerprint"):
            continue
        unchanged += "rest" not in data or bone not in arm_ob.data.bones or same_rest(data["rest"],
                                                                                       local_rest(arm_ob, bone))
    return len(tracks), unchanged


def _use_kept_keys(act, slot, kept: dict, tracks: dict[str, cm.Track], baked: set[str], order: list[str],
                   shift: float, fill_of, arm_ob=None) -> list[str]:
    """Put the file's keys back for the bones whose F-curves still hold what import made of them, add the
    tracks that name no bone, and give the file's track order; returns the new order."""
    by_bone: dict[str, list] = {}
    for cb in _channelbags(act):
        if slot is None or cb.slot == slot:
            for bone, fcs in _bone_fcurves(cb).items():
                by_bone.setdefault(bone, []).extend(fcs)
    for bone, data in (kept.get("tracks") or {}).items():
        if bone not in tracks or bone in baked or not isinstance(data, dict):
            continue
        if _curves_fingerprint(by_bone.get(bone, [])) != data.get("fingerprint"):
            continue
        if "rest" in data and arm_ob is not None and not same_rest(data["rest"], local_rest(arm_ob, bone)):
            continue  # the rest moved: the track is made again from the F-curves on the new rest
        try:
            stored = _shifted(_track_from_json(data), shift)
        except (KeyError, TypeError, ValueError):
            continue
        fill = fill_of(bone)
        if fill is not None and isinstance(data.get("fill"), dict):
            fill.update(data["fill"])
        tracks[bone] = _filled(stored, fill)
    for data in kept.get("unmatched") or []:
        try:
            stored = _shifted(_track_from_json(data), shift)
        except (KeyError, TypeError, ValueError):
            continue
        if stored.bone not in tracks:
            tracks[stored.bone] = stored
            order.append(stored.bone)
    rank = {name: i for i, name in enumerate(kept.get("order") or [])}
    return sorted(order, key=lambda b: rank.get(b, len(rank)))


def _shifted(track: cm.Track, shift: float) -> cm.Track:
    if shift:
        for attr in ("translation_times", "rotation_times", "scale_times"):
            if getattr(track, attr) is not None:
                setattr(track, attr, getattr(track, attr) - shift)
    return track


def _filled(stored: cm.Track, fill: dict | None) -> cm.Track:
    """The stored channels as they are; a channel the file's track lacks stays out (``fill`` None) or holds
    ``fill``'s value at the stored key times (the curves of such a channel may have been fitted, not read)."""
    times = next((getattr(stored, a + "_times") for a in ("translation", "rotation", "scale")
                  if getattr(stored, a + "s") is not None), None)
    if fill is None or times is None:
        return stored
    for attr in ("translation", "rotation", "scale"):
        if getattr(stored, attr + "s") is None:
            setattr(stored, attr + "_times", times.copy())
            setattr(stored, attr + "s", np.tile(np.asarray(fill[attr], np.float64), (len(times), 1)))
    return stored


def _track_from_curves(arm_ob, bone, chans, bf: BoneFrame, start, fps, step_tracks, fill_missing):
    pb = arm_ob.pose.bones[bone]
    read = {ch: [(i, _read_curve(fc)) for i, fc in lst] for ch, lst in chans.items()}
    everything = [c for lst in read.values() for _, c in lst]
    all_constant = all(len(c.constant) == 0 or c.constant.all() for c in everything)
    step = step_tracks and all_constant and any(len(c.constant) for c in everything)
    dropped = np.zeros(0)
    if "q" in read:
        dropped = _drop_generated([c for _, c in sorted(read["q"], key=lambda x: x[0])])
    parts = []
    hold = False
    stepped = {id(c): np.zeros(0, np.int64) if step else _step_frames(c) for c in everything}
    for ch, lst in read.items():
        for _, c in lst:
            keys = c.frames
            if ch == "q" and len(dropped):
                keys = keys[~np.isin(keys, dropped)]
            k = stepped[id(c)]
            if len(k):  # the CONSTANT key before a step stands for the step's first key, at the step's time
                keys = keys[~np.isin(keys, c.frames[k])]
            parts.append(keys)
            rot_nonlinear = ch in ("e", "a")
            for k in np.flatnonzero(c.curved | (rot_nonlinear & ~c.constant)):
                a, b = c.frames[k], c.frames[k + 1]
                parts.append(np.arange(math.floor(a) + 1, math.ceil(b)))
            if not step and len(c.constant) and c.constant.any():
                k = np.setdiff1d(np.flatnonzero(c.constant), stepped[id(c)])
                h = c.frames[k + 1] - HOLD_GAP * fps
                h = h[h > c.frames[k]]
                if len(h):
                    hold = True
                    parts.append(h)
    frames = np.unique(np.concatenate(parts))
    steps = np.unique(np.concatenate([np.zeros(0)] + [c.frames[k + 1] for c in everything
                                                      for k in [stepped[id(c)]]]))
    # a step is two keys at its time: the value up to it (first), then the value from it on
    rows = np.repeat(np.arange(len(frames)), np.where(np.isin(frames, steps), 2, 1))
    first = np.flatnonzero(np.isin(frames[rows], steps) & np.append(True, np.diff(rows) > 0))
    track = cm.Track(bone=bone, interpolation="STEP" if step else "LINEAR")
    times = (frames[rows] - start) / fps

    def channel(ch, width, static):
        lst = dict(read.get(ch, []))
        out = np.tile(np.asarray(static, np.float64), (len(rows), 1))
        for i in range(width):
            if i in lst:
                out[:, i] = _evaluate(lst[i], frames)[rows]
                if len(first):
                    out[first, i] = _left_values(lst[i], frames[rows[first]], stepped[id(lst[i])])
        return out

    if "t" in read or fill_missing:
        track.translation_times = times
        track.translations = bf.from_basis("t", channel("t", 3, pb.location))
    rot = None
    if "q" in read:
        rot = channel("q", 4, pb.rotation_quaternion)
    elif "e" in read:
        rot = euler_to_quat(channel("e", 3, pb.rotation_euler), pb.rotation_mode if len(pb.rotation_mode) == 3
                             else "XYZ")
    elif "a" in read:
        rot = _axis_angle_to_quat(channel("a", 4, pb.rotation_axis_angle))
    elif fill_missing:
        rot = np.tile(_static_rotation(pb), (len(rows), 1))
    if rot is not None:
        track.rotation_times = times
        track.rotations = bf.from_basis("r", quat_normalize(rot))
    if "s" in read or fill_missing:
        track.scale_times = times
        track.scales = bf.from_basis("s", channel("s", 3, pb.scale))
    return track, hold


def default_pose(pb) -> dict[str, np.ndarray]:
    """A pose bone's default basis (t, q, s): the one the armature bridge set at import (kept on the pose
    bone, since playing an action overwrites the keyed channels), else its current values."""
    raw = pb.get(barm.POSE_PROP)
    if raw is not None and len(raw) == 10:
        v = np.array(raw, np.float64)
        return {"t": v[:3], "q": v[3:7], "s": v[7:10]}
    return {"t": np.array(pb.location, np.float64), "q": _static_rotation(pb), "s": np.array(pb.scale, np.float64)}


def _static_rotation(pb) -> np.ndarray:
    if pb.rotation_mode == "QUATERNION":
        return np.array(pb.rotation_quaternion, np.float64)
    if pb.rotation_mode == "AXIS_ANGLE":
        return _axis_angle_to_quat(np.array([pb.rotation_axis_angle], np.float64))[0]
    return euler_to_quat(np.array([pb.rotation_euler], np.float64), pb.rotation_mode)[0]


def _bake(context, arm_ob, act, slot, bones, start, end, fps, fill_missing, channels) -> dict[str, cm.Track]:
    """Sample the evaluated pose of ``bones`` at every frame of the action and add their tracks."""
    scene = context.scene
    frames = np.arange(math.floor(start), math.ceil(end) + 1, dtype=np.float64)
    world = np.array(arm_ob.matrix_world, dtype=np.float64)
    binds = bind_matrices(arm_ob)
    ad = arm_ob.animation_data or None
    saved = (scene.frame_current, scene.frame_subframe, ad.action if ad else None, ad.action_slot if ad else None)
    created_ad = ad is None
    parents = {b: arm_ob.data.bones[b].parent.name if arm_ob.data.bones[b].parent else None for b in bones}
    need = set(bones) | {p for p in parents.values() if p}
    pose = {b: np.empty((len(frames), 4, 4)) for b in need}
    # meshes deformed by this armature need not be evaluated at every frame
    muted = [m for o in scene.objects for m in o.modifiers
             if m.type == "ARMATURE" and m.object == arm_ob and m.show_viewport]
    progress = Progress(f"sampling {act.name}", len(frames))
    try:
        for m in muted:
            m.show_viewport = False
        ad = arm_ob.animation_data or arm_ob.animation_data_create()
        if ad.action != act:
            ad.action = act
        if slot is not None and ad.action_slot != slot:
            ad.action_slot = slot
        for k, f in enumerate(frames):
            scene.frame_set(int(f))
            for b in need:
                pose[b][k] = np.array(arm_ob.pose.bones[b].matrix, dtype=np.float64)
            progress.update(k + 1)
    finally:
        progress.end()
        for m in muted:
            m.show_viewport = True
        if created_ad:
            arm_ob.animation_data_clear()
        else:
            if ad.action != saved[2]:
                ad.action = saved[2]
            if saved[3] is not None and ad.action_slot != saved[3]:
                ad.action_slot = saved[3]
        scene.frame_set(saved[0], subframe=saved[1])
    rests = {b: np.array(arm_ob.data.bones[b].matrix_local, dtype=np.float64) for b in need}
    out = {}
    for b in bones:
        # the core world of a bone: W · Pose · Rest⁻¹ · Bind
        wb = world @ pose[b] @ affine_inverse(rests[b]) @ binds[b]
        p = parents[b]
        if p is None:
            local = wb
        else:
            wp = world @ pose[p] @ affine_inverse(rests[p]) @ binds[p]
            local = affine_inverse(wp) @ wb
        t, r, s = matrix_to_trs(local)
        r = short_way(r)
        times = (frames - start) / fps
        track = cm.Track(bone=b, translation_times=times, translations=t, rotation_times=times, rotations=r,
                         scale_times=times, scales=s)
        if not fill_missing:
            if "t" not in channels[b]:
                track.translation_times = track.translations = None
            if not channels[b] & {"q", "e", "a"}:
                track.rotation_times = track.rotations = None
            if "s" not in channels[b]:
                track.scale_times = track.scales = None
        out[b] = track
    return out
