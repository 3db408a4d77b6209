"""The `skinbridge` command: the same pipelines as the add-on, without the UI.

    skinbridge convert INPUT... --to TARGET [-o OUTDIR] [-n NAME] [options]   (TARGET: see --help)
    skinbridge info FILE
    skinbridge check FILE...
    skinbridge check-target FILE --to TARGET [-n NAME] [--motion FILE] [options]
    skinbridge render FILE [--rest | --frame N | --frames A:B:STEP] [--action NAME] [--views front,side,top] -o OUT.png
    skinbridge render A --compare B [--tol X] [--views front,side,top] -o OUT.png
    skinbridge diff A B [--limit N] [--json]
    skinbridge compare A B [--rest] [--tol X] [--pos-tol P] [--rot-tol R]
    skinbridge demo [-o OUTDIR]

Also runs inside Blender: `blender -b -P cli.py -- convert ...`.
"""
from __future__ import annotations

import signal

if __name__ == "__main__" and hasattr(signal, "pthread_sigmask"):
    # First of all: a signal during start-up (these imports, then Blender's) stays pending until main can end
    # the run cleanly (core/workers.py block_signals; tools/run's entry does the same before importing us).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGHUP})

import argparse
import atexit
import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading

if __package__ in (None, ""):  # run as a script (blender -P cli.py, python cli.py): load the package by path
    import importlib.util

    _root = os.path.dirname(os.path.abspath(__file__))
    _spec = importlib.util.spec_from_file_location("skinbridge", os.path.join(_root, "__init__.py"),
                                                   submodule_search_locations=[_root])
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["skinbridge"] = _mod
    _spec.loader.exec_module(_mod)
    __package__ = "skinbridge"

from . import formats  # noqa: E402
from .app.loading import compare_load, compare_rest, import_for_view  # noqa: E402
from .app.options import ConvertOptions  # noqa: E402
from .blender import compat  # noqa: E402
from .core.errors import ExportError, FormatError  # noqa: E402
from .core.fileio import OutputError, output_error, output_session, read_bytes, remove_staged  # noqa: E402
from .core.naming import NameAllocator, safe_file_name  # noqa: E402
from .core.workers import (Terminated, check_stop, release_signals, run_pool, signals_deferred,  # noqa: E402
                           signals_stop)

_OUT = None  # the stream results go to (the real stdout); third-party logs go to stderr meanwhile
_TEMP_DIRS: list[str] = []
_SAVED_ENV: dict[str, str | None] = {}  # the caller's values of what _private_user_folder set, for main to restore


class ReaderGone(Exception):
    """The reader of stdout went away (`skinbridge info FILE | head -1`); not an OSError, so no command's error
    handling takes it for a problem with the user's files."""


def _out(line: str) -> None:
    """One line of results (written paths, summaries) on stdout, where scripts read them."""
    try:
        print(line, file=_OUT or sys.stdout, flush=True)
    except BrokenPipeError:
        raise ReaderGone() from None


def _restore_env() -> None:
    """The caller's environment again (main called in-process, by tests or a script, more than once)."""
    for var, value in _SAVED_ENV.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value
    _SAVED_ENV.clear()


def _remove_temp_dirs() -> None:
    # Kept in the list: at exit they are removed again, as Blender's own exit handler writes its shader cache.
    for folder in _TEMP_DIRS:
        shutil.rmtree(folder, ignore_errors=True)


# Blender's per-user folders; BLENDER_USER_RESOURCES alone still leaves the extensions cache under ~/.config.
_BLENDER_USER_VARS = {"BLENDER_USER_RESOURCES": "", "BLENDER_USER_CONFIG": "config",
                      "BLENDER_USER_SCRIPTS": "scripts", "BLENDER_USER_DATAFILES": "datafiles",
                      "BLENDER_USER_EXTENSIONS": "extensions"}


def _private_user_folder() -> None:
    """Blender's user, config and cache folders (thumbnails, gl-shader-cache: XDG_CACHE_HOME) in a temporary
    folder of this process, removed at exit; a caller's BLENDER_USER_RESOURCES is kept. Before bpy is imported
    (Blender reads them once); -j workers inherit the parent's."""
    if "bpy" in sys.modules or os.path.isdir(os.environ.get("SKINBRIDGE_USER_FOLDER", "")):
        return
    folder = tempfile.mkdtemp(prefix="skinbridge-bl-user-")
    if not _TEMP_DIRS:
        atexit.register(_remove_temp_dirs)  # before bpy is imported: runs after Blender's exit handler
    _TEMP_DIRS.append(folder)
    for var in (*_BLENDER_USER_VARS, "XDG_CACHE_HOME", "TMPDIR", "SKINBRIDGE_USER_FOLDER"):
        _SAVED_ENV.setdefault(var, os.environ.get(var))
    base = os.environ.get("BLENDER_USER_RESOURCES")
    for var, sub in _BLENDER_USER_VARS.items():
        if base is None:
            os.environ[var] = os.path.join(folder, sub) if sub else folder
    os.environ["XDG_CACHE_HOME"] = os.path.join(folder, "cache")
    # Blender's session folder (blender_*) too: a worker ended by a signal cannot remove it, the parent does.
    tempfile.gettempdir()  # Python's own temporary files stay where the caller said
    os.makedirs(os.path.join(folder, "tmp"))
    os.environ["TMPDIR"] = os.path.join(folder, "tmp")
    os.environ["SKINBRIDGE_USER_FOLDER"] = folder


def _message(e: BaseException) -> str:
    """An error as one line that names the user's path and says what to do, never an errno tuple."""
    if isinstance(e, OSError) and e.filename and e.strerror:
        what = "no such file or folder" if isinstance(e, FileNotFoundError) else e.strerror.lower()
        return f"{os.fsdecode(e.filename)}: {what}"
    return str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__


def _bpy():
    """Import bpy with Blender's user files kept in a temporary folder, and register the add-on."""
    _private_user_folder()
    with signals_deferred():  # a signal while Blender loads ends the run after it, not inside it
        import bpy  # after the Blender user folder is set, and never for --help, info or check

        from .app.operators import register  # imports bpy (see above)

        try:
            register()
        except ValueError:  # already registered (running inside Blender with the extension enabled)
            pass
    return bpy


def _plan(args) -> list[tuple[str, str, str]]:
    """(input, output folder, model name) per input, names through the naming rule of docs/architecture.md §7.2."""
    folders = NameAllocator()
    suffix = formats.targets()[args.to].folder_suffix
    plan = []
    for src in args.inputs:
        stem = formats.input_stem(src)  # "pack.hak:head.mdb": head
        if len(args.inputs) > 1:
            sub = folders.take(stem)
            outdir = os.path.join(args.output, sub) if args.output else f"{sub}{suffix}"
        else:
            outdir = args.output or f"{safe_file_name(stem)}{suffix}"
        plan.append((src, outdir, safe_file_name(args.name or stem)))
    return plan


def _convert_worker(src: str, outdir: str, name: str, options) -> tuple[list[str], list[str], str | None]:
    """One conversion; in a worker process it gets its own Blender user folder before bpy is imported, and
    the third-party logs of its imports go to stderr."""
    import multiprocessing  # ~10 ms import, not needed by --help, info or check

    if multiprocessing.parent_process() is not None and sys.stdout is not sys.stderr:
        sys.stdout.flush()  # a worker process of -j: its stdout is no result stream, logs go to stderr
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    _bpy()
    from .app.pipeline import convert_file  # imports bpy: after _bpy() set the user folder

    compat.guard_worker_exit()  # a -j worker that loaded Blender 4.5's wheel must not hang the pool's shutdown

    try:
        written, warnings = convert_file(src, outdir, name, options)
    except (FormatError, ExportError, OSError, RuntimeError) as e:
        return [], [], _message(e)
    except Exception as e:  # a fault of ours: still one line for this input, and the others convert
        return [], [], f"internal error ({type(e).__name__}: {e})"
    return written, warnings, None


def _target_options(args) -> dict | None:
    """The target options given on the command line, checked; None (the error printed) when one is given to a
    target that does not take it or names a file that cannot be read."""
    given = {name: getattr(args, name) for name in formats.option_takers() if hasattr(args, name)}
    for name in given:  # given on the command line (whatever its value) to a target that does not take it
        option, targets = formats.option_takers()[name]
        if option.blender_only and args.to in targets:
            print(f"error: {option.cli_flag} is a choice of Blender's File › Export only (--to {args.to} "
                  "writes without it)", file=sys.stderr)
            return None
        if args.to not in targets:
            print(f"error: {option.cli_flag} applies to --to {' or '.join(targets)} only, not --to {args.to}",
                  file=sys.stderr)
            return None
    for name, value in given.items():  # a file an option names is read now, whether or not another flag uses it
        check = formats.option_takers()[name][0].checker()
        try:
            if check is not None:
                check(value)
        except (ExportError, FormatError, ValueError, OSError) as e:
            print(f"error: {_message(e)}", file=sys.stderr)
            return None
    return given


def _clean_after(died: BaseException, outdir: str, existed: set[str]) -> None:
    """What a killed worker could not remove itself: its staged files in its input's folder, and that folder
    when the worker made it and nothing else is in it."""
    pid = getattr(died, "pid", None)
    if pid is None or not os.path.isdir(outdir):
        return
    remove_staged(outdir, pid)
    if outdir not in existed:
        with contextlib.suppress(OSError):  # not empty: files of another kind stay where they are
            for here, _, _ in sorted(os.walk(outdir), key=lambda w: -len(w[0])):
                os.rmdir(here)


def cmd_convert(args) -> int:
    if len(args.inputs) > 1 and args.name:
        print("error: -n/--name applies to one input only", file=sys.stderr)
        return 2
    given = _target_options(args)
    if given is None:
        return 2
    options = ConvertOptions(target=args.to, motions=args.motion or [], name=args.name,
                             protected={os.path.realpath(p) for p in args.inputs}, **given)
    plan = _plan(args)
    total = len(plan)
    failed = 0

    def report(i, src, result):
        nonlocal failed
        written, warnings, error = result
        print(f"[{i}/{total}] {src}: {'FAILED' if error else 'done'}", file=sys.stderr)
        if error:
            print(f"error: {src}: {error}", file=sys.stderr)
            failed += 1
            return
        for w in warnings:
            print(f"warning: {src}: {w}", file=sys.stderr)
        for path in written:
            _out(path)

    if args.jobs > 1 and total > 1:
        done = 0
        existed = {outdir for _, outdir, _ in plan if os.path.isdir(outdir)}

        def finished(index: int, result) -> None:
            nonlocal done
            done += 1
            if isinstance(result, BaseException):  # the worker process died: this input only fails
                _clean_after(result, plan[index][1], existed)
                result = ([], [], str(result))
            report(done, plan[index][0], result)

        run_pool(_convert_worker, [(src, outdir, name, options) for src, outdir, name in plan],
                 min(args.jobs, total), finished)
    else:
        for i, (src, outdir, name) in enumerate(plan, 1):
            print(f"[{i}/{total}] {src} -> {outdir}", file=sys.stderr)
            result = _convert_worker(src, outdir, name, options)
            check_stop()  # a signal whose exception the interrupted code turned into an error fails the run
            report(i, src, result)
    return 1 if failed else 0


def cmd_check_target(args) -> int:
    """What `convert FILE --to TARGET` would print and write, writing nothing: its warning and error lines (the
    same words, on stdout: they are the result here) and one `writes:` line per file. Exits as `convert` would:
    0 when the export would succeed, 1 when it would refuse or the file cannot be imported, 2 for a bad option."""
    given = _target_options(args)
    if given is None:
        return 2
    options = ConvertOptions(target=args.to, motions=args.motion or [], name=args.name,
                             protected={os.path.realpath(args.file)}, **given)
    stem = os.path.splitext(os.path.basename(args.file))[0]
    bpy = _bpy()
    from .app.target_check import check_file  # imports bpy: after _bpy() set the user folder

    try:
        warnings, result = check_file(bpy.context, args.file, options, safe_file_name(args.name or stem))
    except (FormatError, ExportError, OSError, RuntimeError) as e:
        _out(f"error: {args.file}: {_message(e)}")
        return 1
    if result.refused:
        _out(f"error: {args.file}: {_message(ExportError(result.refused))}")
        return 1
    for w in warnings + result.warnings:
        _out(f"warning: {args.file}: {w}")
    for f in result.files:
        _out(f"writes: {f}")
    return 0


def info_file(path: str) -> dict:
    spec = formats.identify_file(path)
    if not spec.has("info"):
        raise FormatError(f"no summary for {spec.label} files", None, "format")
    return spec.get("info")(formats.read_input(path), path)


def _each_file(paths: list[str], read, use, unreadable: int) -> int:
    """`use(path, read(path))` (an exit status) for every path in turn; a path that `read` fails on (FormatError,
    OSError) is one error line and exit status `unreadable`, and the others go on. The highest status."""
    status = 0
    for path in paths:
        try:
            value = read(path)
        except (FormatError, OSError) as e:
            print(f"error: {path}: {_message(e)}", file=sys.stderr)
            status = max(status, unreadable)
            continue
        status = max(status, use(path, value))
    return status


def cmd_info(args) -> int:
    from .core import names  # imports numpy, which --help and the other commands' start-up do without

    def show(path: str, result: dict) -> int:
        # bytes that are not text: U+FFFD and a warning, as check and import
        for warning in names.clean(result, path="info"):
            print(f"warning: {path}: {warning}", file=sys.stderr)
        _out(json.dumps({"file": path, **result}, indent=2, ensure_ascii=False, default=_json_default))
        return 0

    return _each_file(args.files, info_file, show, 1)


def _json_default(o):
    """numpy scalars and arrays of a summary as JSON numbers and lists (`tolist` of a numpy scalar is its Python
    value), without importing numpy for a summary that has none."""
    if hasattr(o, "tolist"):
        return o.tolist()
    raise TypeError(type(o).__name__)


def _check_one(path: str, data: bytes, out) -> int:
    """Findings of one file through the checker of its format; 2 when no format we know has a checker for it."""
    try:
        spec = formats.identify(data[:formats.head_size()], path)
    except FormatError as e:
        out(f"unsupported format: {e}")
        return 2
    if not spec.has("check"):
        out(f"{spec.label}: no checker for this format")
        return 2
    return spec.get("check")(path, data, out)


def cmd_check(args) -> int:
    """Exit 0: no error finding; 1: an error finding in some file, or a file that cannot be read (not a regular
    file, over the size cap); 2: a file no format with a checker claims."""
    def check(path: str, data: bytes) -> int:
        _out(f"{path}:")
        return _check_one(path, data, lambda line: _out("  " + line))

    return _each_file(args.files, formats.read_input, check, 1)


# -- diff ---------------------------------------------------------------------------------------------------

def cmd_diff(args) -> int:
    """Per record, what differs between two files of one format. Exit 0: the bytes are equal; 1: they differ;
    2: the files are of different formats, or one cannot be read (one line)."""
    from .core.diff import diff_members, diff_records, member_records, records_of  # numpy: 60-90 ms import

    specs, data, records = [], [], []
    for path in (args.a, args.b):
        try:
            content = read_bytes(path)
            spec = formats.identify(content[:formats.head_size()], path)
        except (FormatError, OSError) as e:
            print(f"error: {path}: {_message(e)}", file=sys.stderr)
            return 2
        specs.append(spec)
        data.append(content)
    if specs[0].name != specs[1].name:
        print(f"error: {args.a} is a {specs[0].label} file and {args.b} a {specs[1].label} file: diff compares two "
              "files of one format (compare compares models of any formats)", file=sys.stderr)
        return 2
    if specs[0].has("members"):  # a file that stands for its folder (a project): its files one by one
        try:
            held = [specs[0].get("members")(path) for path in (args.a, args.b)]
            result = diff_members(*held, member_records(formats.identify), limit=args.limit)
        except (FormatError, OSError) as e:
            print(f"error: {_message(e)}", file=sys.stderr)
            return 2
        return _print_diff(args, specs[0], data, result)
    if data[0] != data[1] and not specs[0].has("read"):  # equal bytes are identical in any format
        print(f"error: {args.a}: {specs[0].label} files have no record reader to diff", file=sys.stderr)
        return 2
    if data[0] != data[1]:
        for path, content in zip((args.a, args.b), data):
            try:
                records.append(records_of(specs[0], content))
            except FormatError as e:
                print(f"error: {path}: {_message(e)}", file=sys.stderr)
                return 2
    result = diff_records(*(records or (None, None)), data[0], data[1], limit=args.limit)
    return _print_diff(args, specs[0], data, result)


def _print_diff(args, spec, data: list[bytes], result) -> int:
    if args.json:
        _out(json.dumps({"a": args.a, "b": args.b, "format": spec.name, **result.as_dict()}, indent=2,
                        ensure_ascii=False))
    else:
        _out(f"A: {args.a} ({spec.label}, {len(data[0])} bytes)")
        _out(f"B: {args.b} ({len(data[1])} bytes)")
        for line in result.lines():
            _out(line)
    return 0 if result.identical else 1


# -- render -------------------------------------------------------------------------------------------------

def _motion_beside(model: str, action: str) -> str | None:
    """A motion file named `action` in the model's folder or its Animations/ folder (an output package)."""
    folder = os.path.dirname(os.path.abspath(model))
    for where in (os.path.join(folder, "Animations"), folder):
        if not os.path.isdir(where):
            continue
        for f in sorted(os.listdir(where)):
            path = os.path.join(where, f)
            if os.path.splitext(f)[0] != action or not os.path.isfile(path):
                continue
            try:
                if formats.identify_file(path).has("motion_loader"):
                    return path
            except (FormatError, OSError):
                continue
    return None


_NOISE = (b"EGL Error (0x3009)",)  # headless GPU set-up: Blender tries a surface-bound context first, then works


@contextlib.contextmanager
def _without_noise():
    """Lines Blender's C code prints on stdout or stderr (fd 1 and 2) that start with a `_NOISE` prefix are
    dropped; everything else reaches stderr unchanged and in order."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = [os.dup(1), os.dup(2)]
    except (AttributeError, OSError, ValueError):  # no real streams (embedded): nothing to filter
        yield
        return
    read_end, write_end = os.pipe()
    os.dup2(write_end, 1)
    os.dup2(write_end, 2)
    os.close(write_end)

    err_fd = os.dup(saved[1])  # before the thread starts: the block may end (closing `saved`) before it runs

    def forward() -> None:
        with os.fdopen(read_end, "rb") as lines, os.fdopen(err_fd, "wb") as err:
            for line in lines:
                if not line.startswith(_NOISE):
                    err.write(line)
                    err.flush()

    thread = threading.Thread(target=forward, daemon=True)
    thread.start()
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)  # the pipe's last writers closed: the thread reads to its end
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
        thread.join(5)


def cmd_render(args) -> int:
    with _without_noise():
        return _render(args)


def _render(args) -> int:
    views = [v.strip() for v in args.views.split(",") if v.strip()]
    if os.path.splitext(args.output)[1].lower() != ".png":
        print(f"error: {args.output}: render writes PNG images: give the output a .png name", file=sys.stderr)
        return 2
    if os.path.isdir(args.file) or not formats.input_exists(args.file):  # a special file: the reader says why
        what = "is a folder, not a model file" if os.path.isdir(args.file) else "no such file"
        print(f"error: {args.file}: {what}", file=sys.stderr)
        return 1
    if args.compare is not None:
        if args.frame is not None or args.frames or args.action:
            print("error: --compare draws the Rest Position: it takes no --frame, --frames or --action",
                  file=sys.stderr)
            return 2
        if os.path.isdir(args.compare) or not os.path.exists(args.compare):
            what = "is a folder, not a model file" if os.path.isdir(args.compare) else "no such file"
            print(f"error: {args.compare}: {what}", file=sys.stderr)
            return 1
    from .core.contact_sheet import parse_frames  # numpy: 60-90 ms import, not needed by --help

    try:  # a usage error: exit 2 before Blender loads
        frames = parse_frames(args.frames) if args.frames else None if args.frame is None else [args.frame]
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        _private_user_folder()
        from .app import render  # noqa: F401  (imports bpy: after the argument checks above)
    except ImportError as e:
        print(f"error: render needs Blender's Python module (bpy): {e}", file=sys.stderr)
        return 2
    try:
        from .app import pipeline  # imports bpy: after the argument checks above

        outdir = os.path.dirname(os.path.abspath(args.output))
        inputs = [args.file] + ([args.compare] if args.compare is not None else [])
        compared_warnings: list[str] = []
        with output_session(outdir, inputs) as session:
            session.check(args.output)  # before the import: the model is never replaced by a picture
            camera_path = render.camera_view_path(args.output)
            session.check(camera_path)  # written when the import sets a camera
            bpy, warnings, options = import_for_view(args.file, _reading(args))
            if args.compare is not None:
                from .app import rest_compare  # imports bpy: after the argument checks above

                sheet, compared_warnings = rest_compare.render_files(bpy.context, os.path.basename(args.file),
                                                                     args.compare, views=views, tol=args.tol)
            else:
                if args.action and not args.rest and args.action not in bpy.data.actions:
                    motion = _motion_beside(args.file, args.action)
                    if motion is not None:  # an output folder: the model's motion beside it
                        session.protect(motion)
                        warnings += pipeline.load_motion(bpy.context, motion, options)
                if args.action and not args.rest and frames is None:
                    act = render.find_action(args.action)
                    frames = [int(round(act.frame_range[0]))]
                sheet = render.render_sheet(bpy.context, frames=None if args.rest else frames,
                                            action=None if args.rest else args.action, views=views,
                                            title=os.path.basename(args.file))
            view = None
            if args.compare is None:  # a scene its import drew through a camera: the camera's view beside
                view = render.camera_view(bpy.context, frames[0] if frames and not args.rest else None)
            pipeline.protect_scene_files(session)
            render.write_sheet(sheet, args.output)
            if view is not None:
                render.write_camera_view(view, camera_path)
    except (FormatError, ValueError, OSError, RuntimeError) as e:
        where = "" if str(args.file) in str(e) or str(args.output) in str(e) else f"{args.file}: "
        print(f"error: {where}{_message(e)}", file=sys.stderr)
        return 2 if isinstance(e, OutputError) else 1
    for w in compared_warnings:
        print(f"warning: {args.compare}: {w}", file=sys.stderr)
    for w in warnings:
        print(f"warning: {args.file}: {w}", file=sys.stderr)
    h, w_ = sheet.pixels.shape[:2]
    print(f"{args.output}: {w_}x{h}, {len(sheet.panels)} panels, {sheet.seconds:.2f} s", file=sys.stderr)
    if args.compare is not None:  # the line `compare --rest` prints for the same two files
        print(sheet.counts["summary"], file=sys.stderr)
    _out(args.output)
    if view is not None:
        print(f"{camera_path}: {view.shape[1]}x{view.shape[0]}, the view through the scene's camera",
              file=sys.stderr)
        _out(camera_path)
    return 0


# -- compare -------------------------------------------------------------------------------------------------

def cmd_compare(args) -> int:
    from .core.compare import compare_scenes  # numpy: 60-90 ms import, not needed by --help

    scenes = []
    for path in (args.a, args.b):
        try:
            scene, warnings = compare_load(path, not args.rest, _reading(args))
        except (FormatError, OSError, ValueError, RuntimeError) as e:
            where = "" if str(path) in str(e) else f"{path}: "
            print(f"error: {where}{_message(e)}", file=sys.stderr)
            return 1
        for w in warnings:
            print(f"warning: {path}: {w}", file=sys.stderr)
        scenes.append(scene)
    for label, path, s in (("A", args.a, scenes[0]), ("B", args.b, scenes[1])):
        n_bones = len(s.skeleton) if s.skeleton is not None else 0
        _out(f"{label}: {path} ({n_bones} bones, {s.vertex_count} vertices, {s.triangle_count} triangles, "
              f"{len(s.animations)} animations)")
    findings = None
    if args.rest:  # the one Rest comparison, also render --compare's and the sidebar's
        findings = compare_rest(scenes[0], scenes[1], tol=args.tol, rot_tol=args.rot_tol)
        result = findings.result
    else:
        result = compare_scenes(scenes[0], scenes[1], tol=args.tol, rot_tol=args.rot_tol, pos_tol=args.pos_tol)
    for line in result.lines():
        _out(line)
    if findings is not None:
        _out(findings.summary())
    _out("result: same within the tolerances" if result.same else f"result: {len(result.differences)} difference(s)")
    return 0 if result.same else 1


DEMO_FOLDER = "skinbridge-demo"


def cmd_demo(args) -> int:
    outdir = os.path.abspath(args.output or DEMO_FOLDER)
    problem = _unwritable_folder(outdir)
    if problem is None:
        try:
            os.makedirs(outdir, exist_ok=True)
        except OSError as e:
            problem = str(output_error(outdir, e)).replace(f"cannot write {outdir}: ", "", 1)
    if problem:
        print(f"error: {args.output or DEMO_FOLDER}: {problem}", file=sys.stderr)
        return 2
    _bpy()
    from .app.demo import run_demo  # imports bpy: after _bpy() set the user folder

    sys.stdout = _OUT or sys.stdout  # the demo's table is its result
    return run_demo(outdir)


def _unwritable_folder(folder: str) -> str | None:
    """Why files cannot be written into `folder` (made if missing), in words; None when they can."""
    f = folder
    while not os.path.isdir(f):
        if os.path.lexists(f):
            return f"{f} is a file, not a folder: choose another output folder"
        f = os.path.dirname(f)
    if not os.access(f, os.W_OK | os.X_OK):
        return f"{f} is not writable: choose a folder you can write to"
    return None


def _number(kind, low, high, what: str):
    """An argparse type: a finite `kind` (int or float) from `low` to `high` inclusive, else one line naming the
    range."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}")
        if value != value or not low <= value <= high:  # NaN fails every comparison
            raise argparse.ArgumentTypeError(f"{text} is outside {low:g} to {high:g} ({what})")
        return value

    return parse


def _add_option(parser: argparse.ArgumentParser, option, help_text: str) -> None:
    """The flag of a target's option (core/formatspec.py Option), checked as its record says. Not given, it is
    absent from the parsed arguments (argparse.SUPPRESS): the targets' defaults apply, and `convert` refuses
    only what was given."""
    kwargs: dict = {"dest": option.name, "default": argparse.SUPPRESS, "help": help_text}
    if option.type is bool:  # a switch that is on unless said otherwise also has its --no- form
        kwargs["action"] = argparse.BooleanOptionalAction if option.default else "store_true"
    elif option.choices:
        kwargs["choices"] = list(option.values())
    else:
        if option.type in (int, float):
            low = -float("inf") if option.low is None else option.low
            high = float("inf") if option.high is None else option.high
            kwargs["type"] = _number(option.type, low, high, option.unit or option.name.replace("_", " "))
        kwargs["metavar"] = option.metavar
    parser.add_argument(option.cli_flag, *("--" + a.replace("_", "-") for a in option.aliases), **kwargs)


def _add_reading_options(parser: argparse.ArgumentParser) -> None:
    """The formats' reading options (`--skeleton-path`) on a command that reads models (render, compare)."""
    for name, (option, _) in formats.option_takers().items():
        if option.reading:
            _add_option(parser, option, formats.option_help(name))


def _reading(args) -> dict:
    """The reading options given on the command line, by name."""
    return {o.name: getattr(args, o.name) for o, _ in formats.option_takers().values()
            if o.reading and hasattr(args, o.name)}


class _Parser(argparse.ArgumentParser):
    """argparse with a usage error as one line on stderr (exit 2) that points to --help."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    targets = formats.targets()
    p = _Parser(prog="skinbridge", description="Move rigged, skinned, animated models between "
                                "Blender and game formats.")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("convert", help="convert model files (glTF/GLB or any format we read) to a game format")
    c.add_argument("inputs", nargs="+", metavar="INPUT")
    c.add_argument("--to", required=True, choices=list(targets), help="target format: " + ", ".join(
        f"{name} ({spec.label})" for name, spec in targets.items()))
    c.add_argument("-o", "--output", help="output folder (default <stem>" + " or <stem>".join(
        f"{spec.folder_suffix}/ for {name}" for name, spec in targets.items()) + ")")
    c.add_argument("-n", "--name", help="model file name without extension (one input only)")
    c.add_argument("-j", "--jobs", type=_number(int, 1, 64, "processes"), default=1,
                   help="convert N inputs in parallel processes (1 to 64, default 1)")
    c.add_argument("--motion", action="append", metavar="FILE",
                   help="load a motion file onto the model as an action before export (repeatable)")
    for name, (option, _) in formats.option_takers().items():
        _add_option(c, option, formats.option_help(name))
    c.set_defaults(func=cmd_convert)
    t = sub.add_parser("check-target", help="what convert --to TARGET would refuse, warn about and write, "
                       "writing nothing: the same lines convert prints, on stdout; the exit status convert's")
    t.add_argument("file", metavar="FILE")
    t.add_argument("--to", required=True, choices=list(targets), help="target format, as convert's --to")
    t.add_argument("-n", "--name", help="model file name without extension, as convert's")
    t.add_argument("--motion", action="append", metavar="FILE",
                   help="load a motion file onto the model as an action first (repeatable)")
    for name, (option, _) in formats.option_takers().items():
        _add_option(t, option, formats.option_help(name))
    t.set_defaults(func=cmd_check_target)
    i = sub.add_parser("info", help="print a JSON summary of model or animation files")
    i.add_argument("files", nargs="+", metavar="FILE")
    i.set_defaults(func=cmd_info)
    k = sub.add_parser("check", help="list invariant violations with offset and field, and test the write-back, "
                       "for every format with a checker ("
                       + ", ".join(s.label for s in formats.with_capability("check"))
                       + "); exit 1 on any error, 2 for a format without a checker")
    k.add_argument("files", nargs="+", metavar="FILE")
    k.set_defaults(func=cmd_check)
    f = sub.add_parser("diff", help="per record, what differs between two files of one format: the field, its "
                       "offset in each file and both values; exit 0 identical, 1 different, 2 other formats or "
                       "unreadable")
    f.add_argument("a", metavar="A")
    f.add_argument("b", metavar="B")
    f.add_argument("--limit", type=_number(int, 1, 1000000, "differences"), default=50, metavar="N",
                   help="differences listed before a line counting the rest (1 to 1000000, default 50)")
    f.add_argument("--json", action="store_true", help="the differences as JSON (the first --limit of them)")
    f.set_defaults(func=cmd_diff)
    r = sub.add_parser("render", help="a PNG contact sheet of a model: mesh and bones, front/side/top views, "
                       "at Rest Position or at frames of an action (headless Workbench)")
    r.add_argument("file", metavar="FILE")
    when = r.add_mutually_exclusive_group()
    when.add_argument("--rest", action="store_true", help="the Rest Position (default)")
    when.add_argument("--frame", type=_number(int, -1048574, 1048574, "Blender's frame range"), metavar="N",
                      help="the pose at frame N")
    when.add_argument("--frames", metavar="A:B[:STEP]", help="one row per frame, A to B included (or a list 1,5,9)")
    r.add_argument("--action", metavar="NAME",
                   help="pose with this action (for .mdl also Animations/NAME.ani beside it)")
    r.add_argument("--views", default="front,side,top", help="comma-separated views (default front,side,top)")
    r.add_argument("--compare", metavar="B", help="overlay FILE and B in Rest Position: one row each, every vertex "
                   "coloured by its distance to the other model, moved bones marked, the largest differences named")
    r.add_argument("--tol", type=_number(float, 1e-9, 1.0, "a fraction of the diagonal"), default=1e-5,
                   help="with --compare: the distance drawn as the same, × the bounding-box diagonal (default 1e-5)")
    r.add_argument("-o", "--output", required=True, metavar="OUT.png")
    _add_reading_options(r)
    r.set_defaults(func=cmd_render)
    m = sub.add_parser("compare", help="compare two models (any formats we read, or an output folder with "
                       "Animations/) through the core model; exit 1 beyond the tolerances")
    m.add_argument("a", metavar="A")
    m.add_argument("b", metavar="B")
    m.add_argument("--rest", action="store_true", help="skeletons and meshes only, no animations")
    m.add_argument("--tol", type=_number(float, 1e-9, 1.0, "a fraction of the diagonal"), default=1e-4,
                   help="models: position tolerance × bounding-box diagonal (1e-9 to 1, default 1e-4)")
    m.add_argument("--pos-tol", type=_number(float, 0.0, 1e9, "file units"), default=1e-4,
                   help="motions: position tolerance in the file's units (default 1e-4)")
    m.add_argument("--rot-tol", type=_number(float, 1e-9, 3.15, "radians"), default=1e-4,
                   help="rotation tolerance in radians (1e-9 to 3.15, default 1e-4)")
    _add_reading_options(m)
    m.set_defaults(func=cmd_compare)
    d = sub.add_parser("demo", help="build a skinned humanoid with a walk, export it with every exporter, check")
    d.add_argument("-o", "--output", default=None,
                   help=f"output folder (default: {DEMO_FOLDER}/ in the current folder)")
    d.set_defaults(func=cmd_demo)
    return p


@contextlib.contextmanager
def _results_on_stdout():
    """Results to the real stdout (through `_out`); everything else printed meanwhile (Blender's importers'
    logs, C-level messages) to stderr, so scripts that read stdout see only results."""
    global _OUT
    try:
        sys.stdout.flush()
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # no real stdout (embedded, captured): results go to it as is
        _OUT = sys.stdout
        try:
            yield
        finally:
            _OUT = None
        return
    saved_fd = os.dup(fd)
    saved_stdout = sys.stdout
    _OUT = os.fdopen(os.dup(saved_fd), "w", encoding=getattr(sys.stdout, "encoding", None) or "utf-8",
                     errors="replace", buffering=1)
    sys.stderr.flush()
    os.dup2(sys.stderr.fileno(), fd)
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        try:
            sys.stdout.flush()
            with contextlib.suppress(BrokenPipeError):  # reported by main: ReaderGone
                _OUT.flush()
        finally:
            os.dup2(saved_fd, fd)
            os.close(saved_fd)
            with contextlib.suppress(BrokenPipeError):  # the file is closed all the same
                _OUT.close()
            _OUT = None
            sys.stdout = saved_stdout


def _quiet_stdout() -> None:
    """stdout to /dev/null: the interpreter's last flush at exit must not fail on the closed pipe again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())
        os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
        if "--" in sys.argv:  # inside Blender: blender -b -P cli.py -- convert ...
            argv = sys.argv[sys.argv.index("--") + 1:]
    args = build_parser().parse_args(argv)
    with _results_on_stdout(), signals_stop():
        try:
            release_signals()  # a signal held since start-up ends the run here, as one line
            _private_user_folder()  # every command that may load Blender, before it does (-j workers share it)
            return args.func(args)
        except ReaderGone:  # as a shell tool ends on SIGPIPE: no message, status 128 + 13
            _quiet_stdout()
            return 141
        except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM/SIGHUP (Terminated): staged files were rolled back
            print("error: interrupted", file=sys.stderr)
            return e.exit_status if isinstance(e, Terminated) else 130
        except Exception as e:  # no Python traceback reaches the user: one line, and a non-zero exit
            print(f"error: internal error in {args.command} ({type(e).__name__}: {_message(e)})", file=sys.stderr)
            return 3
        finally:
            _remove_temp_dirs()
            if "bpy" not in sys.modules:  # Blender reads them again at its exit (the shader cache)
                _restore_env()


def run() -> None:
    """The process's entry point (cli.py as a script, tools/run's `skinbridge`): main, then an exit that skips
    Blender's teardown once bpy is loaded (see compat.exit_process)."""
    code = main()
    compat.exit_process(code, hard="bpy" in sys.modules)


if __name__ == "__main__":
    run()
