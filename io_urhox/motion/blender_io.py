"""UANI / UAN2 animations in Blender: `.ani` files ⇄ actions of an armature.

Import: every file is read and mapped (with its `<name>.xml` / `.json` trigger sidecar) before the first
action is created; each becomes an action named after the file, on the given armature, matched by bone
name. If anything fails, the actions made so far are removed and the armature's assignment restored.
Export: every action of the armature (or the chosen ones) goes to `Animations/<action>.ani`, its pose
markers to `Animations/<action>.xml`; file names come from `core.naming`. Export only reads the scene.

While a track is unchanged in Blender, its file bytes are written again: import keeps the file on the action
(``FILE_PROP``, its bytes) with a fingerprint of each track's F-curves and of what maps them to the file
(``FILE_KEPT_PROP``: profile, frame rate, frame range, and per bone in armature order its parent, rest and bind
and its F-curves without its name). Export writes the file's record of every track whose bone's F-curves, rest
and parent's rest still match (bit for bit: float32 rounding of a rotation, a −0.0, a key time), under the
bone's new name if it was renamed; computed keys for the others, with the file's key times and values where
they are the file's within float rounding, in the file's track order; the file's length while the frame range
is unchanged, and its header fields (version, trigger bytes, trailing bytes) while the format is the file's.
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
from dataclasses import dataclass, field

import numpy as np

from ...blender import action as bact
from ...blender.props import json_prop
from ...core import model as cm
from ...core.errors import ExportError, FormatError
from ...core.fileio import output_path, read_bytes, write_atomic
from ...core.naming import NameAllocator
from ..model.blender_io import AXES_PROP
from . import convert, triggers, uani

FILE_PROP = "skinbridge_ani_file"  # on an imported action: the `.ani` file's bytes
FILE_KEPT_PROP = "skinbridge_ani_kept"  # on an imported action: what decides which of those bytes still hold

ANIMATIONS_DIR = "Animations"


def root_bones(arm_ob) -> set[str]:
    return {b.name for b in arm_ob.data.bones if b.parent is None}


def _sidecar(path: str) -> str | None:
    stem = os.path.splitext(path)[0]
    for ext in (".xml", ".json"):
        if os.path.isfile(stem + ext):
            return stem + ext
    return None


def read_ani(path: str, roots, profile: str = "urhox") -> tuple[cm.Animation, list[str]]:
    """A `.ani` file (and its trigger sidecar) as a core Animation named after the file."""
    anim, warnings, _ = _read_ani(path, roots, profile)
    return anim, warnings


def _read_ani(path: str, roots, profile: str) -> tuple[cm.Animation, list[str], bytes]:
    name = os.path.splitext(os.path.basename(path))[0]
    data = read_bytes(path)
    records = uani.read(data)
    anim, warnings = convert.to_core(records, name, profile, roots)
    warnings = [f"{os.path.basename(path)}: {w}" for w in warnings]
    side = _sidecar(path)
    if side is not None:
        found = triggers.read_triggers(pathlib.Path(side), float(records.length))
        anim.markers = [(t, _marker_text(v)) for t, v in found]
        anim.extras["urho"]["triggers"] = [[t, *triggers.typed_value(v, i)] for i, (t, v) in enumerate(found)]
    return anim, warnings, bytes(data)


def _marker_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, triggers.RawValue):
        return value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def import_ani(context, paths, arm_ob, profile: str = "urhox", assign: bool = True) -> tuple[list, list[str]]:
    """Import `.ani` files as actions onto ``arm_ob``; returns (actions, warnings). Atomic. A file none of
    whose tracks names a bone of the armature is refused (ExportError naming the file and its tracks) before
    anything is created."""
    if arm_ob is None or arm_ob.type != "ARMATURE":
        raise ExportError("select an armature to import animations onto")
    roots = root_bones(arm_ob)
    parsed = [_read_ani(p, roots, profile) for p in paths]
    bones = set(arm_ob.data.bones.keys())
    for path, (anim, _, _) in zip(paths, parsed):
        if anim.tracks and not any(t.bone in bones for t in anim.tracks):
            raise ExportError(f"{os.path.basename(path)}: none of its {len(anim.tracks)} tracks names a bone of "
                              f"{arm_ob.name}: {', '.join(t.bone for t in anim.tracks)}")
    fps = bact.fps_of(context.scene)
    created, warnings = [], []
    with bact.rollback_on_failure(arm_ob, created):
        for anim, more, data in parsed:
            warnings += more
            prints: dict[str, str] = {}
            act, more = bact.build_action(arm_ob, anim, fps, fingerprints=prints)
            created.append(act)
            act[bact.PROP] = json.dumps({"urho": anim.extras.get("urho", {})})
            _keep_file(act, arm_ob, data, [t.bone for t in anim.tracks], prints, profile, fps)
            warnings += more
        if assign and created:
            bact.assign(arm_ob, created[-1])
    return created, warnings


def _frame_range(act) -> list:
    return [bool(act.use_frame_range), float(act.frame_start), float(act.frame_end)]


def _keep_file(act, arm_ob, data: bytes, names: list[str], prints: dict[str, str], profile: str,
               fps: float) -> None:
    """The file's bytes on the action, with the fingerprint of the F-curves each of its tracks became (in the
    file's track order, ``names``; ``prints`` from `build_action`) and of what maps tracks to curves."""
    act[FILE_PROP] = data
    curves = _curve_digests(arm_ob, act)
    act[FILE_KEPT_PROP] = json.dumps({"profile": profile, "fps": fps, "range": _frame_range(act),
                                      "rig": _rig(arm_ob), "names": [b.name for b in arm_ob.data.bones],
                                      "tracks": [prints.get(n, bact.NO_CURVES) for n in names],
                                      "curves": [curves.get(n, "") for n in names]})


def _rig(arm_ob) -> dict:
    """What maps a track to its F-curves, per bone and without its name (a rename is no change): the parent's
    index, the rest relative to the parent and the bind matrix; and the armature's world matrix. Compared with
    `_same_bone`: leaving Edit Mode recomputes every rest below an edited bone in its last bits."""
    bones = arm_ob.data.bones
    index = {b.name: i for i, b in enumerate(bones)}
    binds = bact.bind_matrices(arm_ob)
    out = []
    for b in bones:
        out.append([index[b.parent.name] if b.parent else -1, bact.local_rest(arm_ob, b.name),
                    np.asarray(binds[b.name], np.float64).reshape(-1).tolist()])
    return {"world": hashlib.sha1(np.asarray(arm_ob.matrix_world, np.float64).tobytes()).hexdigest(), "bones": out}


def _same_bone(was, now) -> bool:
    """One bone of `_rig` as import saw it and as it is: the same parent, rest and bind within float rounding."""
    try:
        return was[0] == now[0] and all(bact.same_rest(x, y) for x, y in zip(was[1:], now[1:]))
    except (TypeError, IndexError):  # a rig kept by an earlier version (digests): not the same
        return False


def _curve_digests(arm_ob, act) -> dict[str, str]:
    """Per bone: a digest of its F-curves (property, index, mute, keys, interpolation and type) without the
    bone's name, so that a renamed bone's unchanged curves are still known."""
    from bpy_extras import anim_utils  # Blender's own helper for an action's channels (slots, layers)

    slot = bact.slot_for(arm_ob, act)
    bag = anim_utils.action_get_channelbag_for_slot(act, slot) if slot is not None else None
    fcurves = list(bag.fcurves) if bag is not None else list(getattr(act, "fcurves", []))
    by_bone: dict[str, list[bytes]] = {}
    for fc in fcurves:
        found = _BONE_PATH.fullmatch(fc.data_path)
        if not found:
            continue
        kp = fc.keyframe_points
        co = np.empty(2 * len(kp), np.float32)
        kp.foreach_get("co", co)
        kinds = np.empty(2 * len(kp), np.int32)
        kp.foreach_get("interpolation", kinds[:len(kp)])
        kp.foreach_get("type", kinds[len(kp):])
        by_bone.setdefault(re.sub(r"\\(.)", r"\1", found.group(1)), []).append(
            f"{found.group(2)}\0{fc.array_index}\0{int(fc.mute)}\0".encode() + co.tobytes() + kinds.tobytes())
    return {bone: hashlib.sha1(b"".join(sorted(parts))).hexdigest() for bone, parts in by_bone.items()}


_BONE_PATH = re.compile(r'pose\.bones\["((?:[^"\\]|\\.)*)"\]\.(\w+)')


@dataclass
class _Kept:
    """What export takes of the file kept on an action: the file's records, which of its tracks are unchanged
    (by index), whether its length and header still hold."""

    original: uani.Animation
    unchanged: list[bool]
    length: bool
    header: bool
    renamed: dict[int, str]
    rest_elsewhere: list[str] = field(default_factory=list)  # bones whose rest moved, their tracks no position

    def bones(self) -> set[str]:
        return {self.renamed.get(k, t.name) for k, (t, same) in enumerate(zip(self.original.tracks, self.unchanged))
                if same}


def _kept_file(context, arm_ob, act, profile: str, fmt: str) -> _Kept | None:
    """The file kept on ``act`` and what of it still holds for an export in ``fmt`` (module docstring); None
    when nothing does (another profile, frame rate or rig, or no file)."""
    kept = json_prop(act, FILE_KEPT_PROP)
    data = act.get(FILE_PROP)
    if (not kept or not isinstance(data, bytes) or kept.get("profile") != profile
            or kept.get("fps") != bact.fps_of(context.scene)):
        return None
    rig, now = kept.get("rig"), _rig(arm_ob)
    names = kept.get("names")
    if not isinstance(rig, dict) or rig.get("world") != now["world"] or not isinstance(names, list) \
            or len(names) != len(now["bones"]) or rig.get("bones") is None or len(rig["bones"]) != len(names):
        return None
    try:
        original = uani.read(data)
    except (FormatError, ValueError):
        return None
    prints, curves = kept.get("tracks"), kept.get("curves")
    if not isinstance(prints, list) or len(prints) != len(original.tracks) or not isinstance(curves, list) \
            or len(curves) != len(prints):
        return None
    frame_range, kept_range = _frame_range(act), kept.get("range") or []
    variant = {"urhox": uani.VARIANT_URHOX, "rbfx": uani.VARIANT_RBFX}.get(fmt, uani.VARIANT_URHO3D)
    # a classic track record is an rbfx one without its weights: what Blender holds of either is the same
    same_tracks = (original.variant == uani.VARIANT_URHOX) == (variant == uani.VARIANT_URHOX)
    unchanged = [False] * len(prints)
    rest_elsewhere: list[str] = []
    renamed = {}  # a track's bone renamed in Blender: its record is kept under the new name
    if same_tracks and frame_range[:2] == kept_range[:2]:  # the first frame is time 0 of every key
        current = bact.curve_fingerprints(arm_ob, act)
        digests = _curve_digests(arm_ob, act)
        index = {n: i for i, n in enumerate(names)}
        bones = arm_ob.data.bones
        for k, (t, fp, digest) in enumerate(zip(original.tracks, prints, curves)):
            i = index.get(t.name)
            if i is None:  # a track naming no bone: its curves, as before
                unchanged[k] = fp is not None and current.get(t.name, bact.NO_CURVES) == fp
                continue
            bone = bones[i]
            same_rig = _same_bone(rig["bones"][i], now["bones"][i])  # its rest relative to its parent's
            if not same_rig and t.positions is None:
                rest_elsewhere.append(bone.name)
            unchanged[k] = same_rig and current.get(bone.name, bact.NO_CURVES) is not None \
                and digests.get(bone.name, "") == digest
            if bone.name != t.name:
                renamed[k] = bone.name
    return _Kept(original, unchanged, frame_range == kept_range, original.variant == variant, renamed,
                 rest_elsewhere)


def _with_kept_file(kept: _Kept | None, records: uani.Animation) -> uani.Animation:
    """``records`` with the file's record of every unchanged track, in the file's track order, and the file's
    length and header fields while they hold."""
    if kept is None:
        return records
    original = kept.original
    computed: dict[str, uani.Track] = {}
    for track in records.tracks:
        computed.setdefault(track.name, track)
    tracks, used = [], set()
    for k, (track, same) in enumerate(zip(original.tracks, kept.unchanged)):
        track.name = kept.renamed.get(k, track.name)
        if same:
            if original.variant != records.variant:
                track.weights = None
            tracks.append(track)
        elif track.name in computed and track.name not in used:
            tracks.append(_file_keys_where_close(computed[track.name], track))
        else:
            continue
        used.add(track.name)
    records.tracks = tracks + [t for t in records.tracks if t.name not in used]
    if kept.length:
        records.length = original.length
    if kept.header:
        records.name, records.version = original.name, original.version
        records.trigger_count, records.metadata_count = original.trigger_count, original.metadata_count
        records.trigger_data, records.trailing = original.trigger_data, original.trailing
        records.variant_tracks = original.variant_tracks
    return records


KEY_CLOSE = 1e-6  # a key time or value this close to the file's (relative to the larger of 1 and it) is the file's


def _file_keys_where_close(track: uani.Track, file_track: uani.Track) -> uani.Track:
    """A computed ``track`` with the file's key times and values where they are the file's within float
    rounding (keys matched in time order): a track edited in one key, or whose bone's rest moved, keeps the
    bytes of what the edit left alone (a rotation [1, 0, 0, 0] is not written [1, -0, -0, -0], nor a time in its
    last bits)."""
    a, b = np.asarray(track.times, np.float64), np.asarray(file_track.times, np.float64)
    pairs, i, k = [], 0, 0
    while i < len(a) and k < len(b):
        if abs(a[i] - b[k]) <= KEY_CLOSE * max(1.0, abs(b[k])):
            pairs.append((i, k))
            i, k = i + 1, k + 1
        elif a[i] < b[k]:
            i += 1
        else:
            k += 1
    if not pairs:
        return track
    mine, theirs = (np.array(x, np.int64) for x in zip(*pairs))
    track.times = np.array(track.times, np.float32)
    track.times[mine] = file_track.times[theirs]
    for channel in ("positions", "rotations", "scales"):
        got, was = getattr(track, channel), getattr(file_track, channel)
        if got is None or was is None:
            continue
        got = np.array(got, np.float32)
        x, y = got[mine].astype(np.float64), was[theirs].astype(np.float64)
        close = (np.abs(x - y) <= KEY_CLOSE * np.maximum(1.0, np.abs(y))).all(axis=1)
        if channel == "rotations":  # q and -q are one rotation: the file's hemisphere
            close |= (np.abs(x + y) <= KEY_CLOSE * np.maximum(1.0, np.abs(y))).all(axis=1)
        got[mine[close]] = was[theirs[close]]
        setattr(track, channel, got)
    return track


def _triggers_of(anim: cm.Animation, fps: float) -> list[tuple[float, object]]:
    """Markers as typed triggers: the file's own typed values while the markers still match them."""
    stored = anim.extras.get("urho", {}).get("triggers") if isinstance(anim.extras.get("urho"), dict) else None
    out = []
    for time, text in anim.markers:
        value = text
        for entry in stored or []:
            try:
                t, vtype, vtext = entry
            except (TypeError, ValueError):
                continue
            typed = triggers.trigger_value(vtype, vtext, "trigger") if vtype else None
            if abs(float(t) - time) <= 0.5 / fps + 1e-9 and _marker_text(typed)[:63] == text:
                value, time = typed, float(t)
                break
        out.append((time, value))
    return out


def own_format(act, profile: str) -> str:
    """The layout an action is written in when none is chosen: the one of the `.ani` file it was imported from
    (classic UANI, UrhoX UANI v2 or rbfx UAN2), else the one `profile` writes (classic UANI for urho3d)."""
    data = act.get(FILE_PROP)
    if isinstance(data, bytes) and len(data) >= 8:
        return {uani.VARIANT_URHOX: "urhox", uani.VARIANT_RBFX: "rbfx"}.get(uani.detect_variant(data), "urho3d")
    return "urho3d" if profile == "urho3d" else "urhox"


def export_actions(context, outdir: str, arm_ob, fmt: str | None = "urhox", profile: str = "urhox", actions=None,
                   allocator: NameAllocator | None = None) -> tuple[list[str], list[str]]:
    """Write ``actions`` (default: every action of the armature) to OUTDIR/Animations/<name>.ani (+ .xml
    triggers) in layout ``fmt`` (None: each action's own, `own_format`). Every file is made in memory before the
    first is written, and every path is asked of the output guard (core/fileio.py `output_path`: never an input)
    before the first. Returns (written paths, warnings). Read-only for the scene."""
    if fmt is not None and fmt not in convert.FORMATS:
        raise ExportError(f"unknown animation format {fmt!r}; expected one of {convert.FORMATS}")
    if arm_ob is None:
        return [], []
    actions = bact.armature_actions(arm_ob) if actions is None else list(actions)
    if not actions:
        return [], []
    roots = root_bones(arm_ob)
    allocator = allocator or NameAllocator()
    pending, warnings = [], []
    chosen = fmt
    for act in actions:
        fmt = chosen or own_format(act, profile)
        try:
            kept = _kept_file(context, arm_ob, act, profile, fmt)
            anim, more = bact.read_action(context, arm_ob, act, step_tracks=fmt == "urhox",
                                          fill_missing=fmt == "urhox", skip=kept.bones() if kept else ())
            records, more2 = convert.from_core(anim, profile, fmt, roots)
            records = _with_kept_file(kept, records)
            data = uani.write(records)
        except ValueError as e:
            raise ExportError(f"action {act.name}: {e}") from None
        warnings += more + [f"{act.name}: {w}" for w in more2]
        if kept is not None and kept.rest_elsewhere:  # the engine takes those positions from the model's bones
            names = ", ".join(kept.rest_elsewhere[:5]) + (", ..." if len(kept.rest_elsewhere) > 5 else "")
            them = "them" if len(kept.rest_elsewhere) > 1 else "it"
            warnings.append(f"{act.name}: the rest of {names} moved and the animation holds no position for {them}: "
                            "the model's bones hold it, export the model too")
        stem = allocator.take(act.name, ".ani")
        side = triggers.write_triggers(_triggers_of(anim, bact.fps_of(context.scene))) if anim.markers else None
        pending.append((stem, data, side))
    folder = os.path.join(outdir, ANIMATIONS_DIR)
    for stem, _, side in pending:  # every path asked of the output guard before the first file is written
        for ext in (".ani", ".xml") if side is not None else (".ani",):
            output_path(folder, stem + ext)
    written = []
    for stem, data, side in pending:
        path = os.path.join(folder, stem + ".ani")
        write_atomic(path, data)
        written.append(path)
        if side is not None:
            write_atomic(os.path.join(folder, stem + ".xml"), side.encode("utf-8"))
            written.append(os.path.join(folder, stem + ".xml"))
    return written, warnings


def load_motion(context, path, arm_ob, options) -> list[str]:
    """`--motion FILE.ani` for `convert`: the file as an action on the model's armature."""
    profile = arm_ob.get(AXES_PROP) or getattr(options, "profile", "urhox")  # any target loads .ani motions
    _, warnings = import_ani(context, [path], arm_ob, profile)
    return warnings


def export_package_animations(context, outdir: str, options, arm_ob=None) -> tuple[list[str], list[str]]:
    """`convert --to urhox`: every action of the armature to OUTDIR/Animations, in ``options.ani_format``."""
    if arm_ob is None:
        arm_ob = next((o for o in context.view_layer.objects if o.type == "ARMATURE"), None)
    return export_actions(context, outdir, arm_ob, options.ani_format, options.profile)


__all__ = ["import_ani", "export_actions", "export_package_animations", "load_motion", "read_ani", "FormatError"]
