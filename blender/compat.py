"""What differs between the Blender releases we support (4.5 LTS, 5.0, 5.2 LTS), in one place.

Everything else calls these helpers and checks no version itself. Measured on the bpy wheels 4.5.15, 5.0.1
and 5.2.3:

- Layered actions (slots, layers, keyframe strips, channelbags) exist on all three, and
  ``ActionKeyframeStrip.channelbag(slot, ensure=True)`` too; ``bpy_extras.anim_utils.
  action_ensure_channelbag_for_slot`` is missing in 4.5, so `channelbag_for_slot` builds the same first layer
  and strip itself.
- ``ActionChannelbagFCurves.new`` takes ``group_name`` from 5.0 on; in 4.5 the group is found or made in
  ``channelbag.groups`` and assigned (the F-curve ends up at the end of its group either way).
- Custom normals: a FLOAT_VECTOR ``custom_normal`` corner attribute is read back exactly by
  ``mesh.corner_normals`` on all three; ``normals_domain`` and ``corner_normals`` exist on all three.
- Pose bone ``select`` and ``hide`` live on ``PoseBone`` from 5.0 on, on its ``Bone`` in 4.5.
- The 4.5 wheel hangs at process exit (a C++ static destructor waits on Blender's delayed-close thread) once
  the add-on was registered: on that version `exit_process` (and `guard_worker_exit` in pool workers) removes
  Blender's session temporary folder, runs the exit handlers, flushes and leaves with ``os._exit``, skipping
  the C++ teardown.

This module imports bpy only inside functions that need Blender, so `exit_process` costs nothing in a process
that never loaded Blender.
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import sys

#: the first release whose bpy needs no hard exit (the 4.5 wheel hangs at interpreter exit)
_CLEAN_EXIT_FROM = (5, 0, 0)


def blender_version() -> tuple[int, int, int] | None:
    """The running Blender's version, or None when bpy was not imported in this process (never imports it)."""
    bpy = sys.modules.get("bpy")
    app = getattr(bpy, "app", None)
    version = getattr(app, "version", None)
    return tuple(version) if version is not None else None


def needs_hard_exit() -> bool:
    """True when this process loaded the bpy 4.5 wheel, whose interpreter teardown can hang."""
    version = blender_version()
    if version is None or version >= _CLEAN_EXIT_FROM:
        return False
    # bpy.app.module: the wheel; Blender's own executable (`blender -b -P cli.py`) ends cleanly
    return bool(getattr(sys.modules["bpy"].app, "module", False))


def flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # closed or broken pipe: nothing more can be written anyway
            pass


def exit_process(code: int | None = 0, hard: bool = False) -> None:
    """End the process with `code` (as `sys.exit` would). With the bpy 4.5 wheel loaded: run the exit handlers,
    remove Blender's session folder, flush and leave with `os._exit`, skipping the teardown that hangs there;
    elsewhere `sys.exit`. For the `__main__` blocks of our scripts (cli.py, bench). `hard`: that way on every
    version (the command line: Blender's teardown after the exit handlers writes its shader cache again)."""
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message") prints it and exits 1
        print(code, file=sys.stderr)
        code = 1
    if hard or needs_hard_exit():
        _leave(code & 0xFF if code >= 0 else 1)
    sys.exit(code)


def _leave(code: int) -> None:
    """Run the process's exit handlers (ours remove temporary folders), remove Blender's session folder as its
    own exit would, flush, and end the process at once (the hang is after the exit handlers)."""
    atexit.unregister(_leave_worker)  # when called from it: not again
    try:
        atexit._run_exitfuncs()  # prints a failing handler's traceback itself and goes on
    finally:
        _purge_session_tempdir()
        flush_std_streams()
        os._exit(code)


def _purge_session_tempdir() -> None:
    """Remove Blender's session temporary folder (``<TMPDIR>/blender_XXXXXX``), which its exit removes."""
    try:
        path = os.path.normpath(sys.modules["bpy"].app.tempdir)
    except (KeyError, AttributeError, TypeError):
        return
    if re.fullmatch(r"blender_\w{6}", os.path.basename(path)) and os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)


def guard_worker_exit() -> None:
    """In a worker process (multiprocessing, spawn) that loaded the bpy 4.5 wheel: leave with `os._exit(0)`
    once the worker's loop ends, before the teardown that hangs there (the pool's shutdown would wait on it
    forever). Call it after bpy was imported; results travel through the pool's pipe, not the exit code. Does
    nothing in the main process or on other versions."""
    import multiprocessing  # ~10 ms import; compat loads with every CLI command, --help too; needed after bpy only

    if not needs_hard_exit() or multiprocessing.parent_process() is None or _worker_guarded:
        return

    atexit.register(_leave_worker)  # registered after bpy's own handlers, so it runs before them
    globals()["_worker_guarded"] = True


_worker_guarded = False


def _leave_worker() -> None:
    _leave(0)


# -- actions -------------------------------------------------------------------------------------------

def channelbag_for_slot(action, slot):
    """The channelbag for ``slot`` in the first keyframe strip of the first layer, both made if missing
    (what ``anim_utils.action_ensure_channelbag_for_slot`` does from 5.0 on)."""
    layer = action.layers[0] if len(action.layers) else action.layers.new("Layer")
    strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type="KEYFRAME")
    return strip.channelbag(slot, ensure=True)


def channelbags(action):
    """Every channelbag of every keyframe strip of ``action``, in layer and strip order."""
    for layer in action.layers:
        for strip in layer.strips:
            yield from getattr(strip, "channelbags", ())


def new_fcurve(channelbag, data_path: str, index: int = 0, group_name: str | None = None):
    """A new F-curve in ``channelbag``, in the channel group ``group_name`` (found or made) when given."""
    if not group_name:
        return channelbag.fcurves.new(data_path, index=index)
    try:
        return channelbag.fcurves.new(data_path, index=index, group_name=group_name)
    except TypeError:  # 4.5: no group_name argument
        pass
    fc = channelbag.fcurves.new(data_path, index=index)
    group = next((g for g in channelbag.groups if g.name == group_name), None)
    if group is None:
        group = channelbag.groups.new(group_name)
    fc.group = group
    return fc


# -- pose bone selection and visibility ----------------------------------------------------------------

_POSE_BONE_FLAGS = ("select", "hide")


def pose_bone_flag(pose_bone, flag: str) -> bool:
    """A pose bone's ``select`` or ``hide`` state: on the pose bone from 5.0 on, on its ``Bone`` in 4.5."""
    if flag not in _POSE_BONE_FLAGS:
        raise ValueError(f"pose bone flag {flag!r}: one of {_POSE_BONE_FLAGS}")
    holder = pose_bone if hasattr(pose_bone, flag) else pose_bone.bone
    return bool(getattr(holder, flag))


def set_pose_bone_flag(pose_bone, flag: str, state: bool) -> None:
    """Set a pose bone's ``select`` or ``hide`` state (see `pose_bone_flag`)."""
    if flag not in _POSE_BONE_FLAGS:
        raise ValueError(f"pose bone flag {flag!r}: one of {_POSE_BONE_FLAGS}")
    setattr(pose_bone if hasattr(pose_bone, flag) else pose_bone.bone, flag, bool(state))
