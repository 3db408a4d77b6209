"""UANI / UAN2 animations in Blender: `.ani` files ⇄ actions of an armature.

Import: every file is read and mapped (with its `<name>.xml` / `.json` trigger sidecar) before the first
action is created; each becomes an action named after the file, on the given armature, matched by bone
name. If anything fails, the actions made so far are removed and the armature's assignment restored.
Export: every action of the armature (or the chosen ones) goes to `Animations/<action>.ani`, its pose
markers to `Animations/<action>.xml`; file names come from `core.naming`. Export only reads the scene.
"""
from __future__ import annotations

import json
import os
import pathlib


from ..blender import action as bact
from ..core import model as cm
from ..core.errors import ExportError, FormatError
from ..core.fileio import output_path, read_bytes, write_atomic
from ..core.naming import NameAllocator
from . import ani_convert, triggers, uani

AXES_PROP = "skinbridge_axes"  # on an imported armature: the profile whose axes its file used

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
    name = os.path.splitext(os.path.basename(path))[0]
    records = uani.read(read_bytes(path))
    anim, warnings = ani_convert.to_core(records, name, profile, roots)
    warnings = [f"{os.path.basename(path)}: {w}" for w in warnings]
    side = _sidecar(path)
    if side is not None:
        found = triggers.read_triggers(pathlib.Path(side), float(records.length))
        anim.markers = [(t, _marker_text(v)) for t, v in found]
        anim.extras["urho"]["triggers"] = [[t, *triggers._typed(v, i)] for i, (t, v) in enumerate(found)]
    return anim, warnings


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
    parsed = [read_ani(p, roots, profile) for p in paths]
    bones = set(arm_ob.data.bones.keys())
    for path, (anim, _) in zip(paths, parsed):
        if anim.tracks and not any(t.bone in bones for t in anim.tracks):
            raise ExportError(f"{os.path.basename(path)}: none of its {len(anim.tracks)} tracks names a bone of "
                              f"{arm_ob.name}: {', '.join(t.bone for t in anim.tracks)}")
    fps = bact.fps_of(context.scene)
    created, warnings = [], []
    with bact.rollback_on_failure(arm_ob, created):
        for anim, more in parsed:
            warnings += more
            act, more = bact.build_action(arm_ob, anim, fps)
            created.append(act)
            act[bact.PROP] = json.dumps({"urho": anim.extras.get("urho", {})})
            warnings += more
        if assign and created:
            bact.assign(arm_ob, created[-1])
    return created, warnings


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
            typed = triggers._value(vtype, vtext, "trigger") if vtype else None
            if abs(float(t) - time) <= 0.5 / fps + 1e-9 and _marker_text(typed)[:63] == text:
                value, time = typed, float(t)
                break
        out.append((time, value))
    return out


def export_actions(context, outdir: str, arm_ob, fmt: str = "urhox", profile: str = "urhox", actions=None,
                   allocator: NameAllocator | None = None) -> tuple[list[str], list[str]]:
    """Write ``actions`` (default: every action of the armature) to OUTDIR/Animations/<name>.ani (+ .xml
    triggers). Every file is made in memory before the first is written, and every path is asked of the output
    guard (core/fileio.py `output_path`: never an input) before the first. Returns (written paths, warnings). Read-only for the scene."""
    if fmt not in ani_convert.FORMATS:
        raise ExportError(f"unknown animation format {fmt!r}; expected one of {ani_convert.FORMATS}")
    if arm_ob is None:
        return [], []
    actions = bact.armature_actions(arm_ob) if actions is None else list(actions)
    if not actions:
        return [], []
    roots = root_bones(arm_ob)
    allocator = allocator or NameAllocator()
    pending, warnings = [], []
    for act in actions:
        try:
            anim, more = bact.read_action(context, arm_ob, act, step_tracks=fmt == "urhox",
                                          fill_missing=fmt == "urhox")
            records, more2 = ani_convert.from_core(anim, profile, fmt, roots)
            data = uani.write(records)
        except ValueError as e:
            raise ExportError(f"action {act.name}: {e}") from None
        warnings += more + [f"{act.name}: {w}" for w in more2]
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
