"""Reading input files with a size cap and writing output files atomically, through one output guard.

Writing: `write_atomic(path, data)` is the one way any exporter writes a file. Outside an output session it
writes a temporary file beside `path` and renames it into place. Inside `output_session(...)` (what `convert`,
`render` and the export operators open around a whole package) it instead:

- refuses any path that is an input of the run (model, motion, sidecar, texture: every file read through
  `read_bytes` during the session, and the paths given to `protect`), lies inside an input's path, is the same
  file as an input (inode), or lies outside the session's output folder;
- writes the file as a staged `.NAME.skinbridge-….part` beside its target, so nothing in the folder changes yet.

`output_path(folder, rel)` and `makedirs(folder)` are how an exporter asks the running session for a path
inside the folder it writes (the same guard, before it makes the file) and for a folder; no exporter decides
on its own whether a path may be written or makes folders itself.

When the session ends without an error every staged file is renamed into place (other files in the folders
are not touched) and `session.written` lists exactly those targets; on an error every staged file and every
folder the session created is removed, so the output folder is as it was.

Errors of the file system are re-raised as `OutputError` (an OSError) naming the user's target, never a
temporary name.
"""
from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import stat
import tempfile
from collections.abc import Iterable

from .errors import FormatError

MAX_INPUT_BYTES = 2 << 30  # a model file above 2 GiB is refused before it is read

# Called before a session commits; any may raise to roll it back instead (core/workers.py adds its check for a
# signal whose exception the interrupted code turned into another: output is all or nothing, never written and
# then reported as interrupted).
commit_checks: list = []

# Failure injection for tests: a callable(target_path) called before every staged or direct write; it may raise.
fail_hook = None

_SESSION: contextvars.ContextVar["OutputSession | None"] = contextvars.ContextVar("skinbridge_output", default=None)


class OutputError(OSError):
    """A file could not be written, or may not be: the message names the target path and what to do."""

    def __str__(self) -> str:
        return self.args[0] if self.args else "cannot write the output"


def _advice(e: OSError) -> str:
    code = getattr(e, "errno", None)
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "permission denied: choose a folder you can write to"
    if code == errno.ENOSPC:
        return "the disk is full: free some space or choose another folder"
    if code in (errno.ENOTDIR, errno.EEXIST):
        return "a file stands where a folder is needed: choose another output folder"
    if code == errno.EISDIR:
        return "a folder has that name: choose another output name"
    if code == errno.ENAMETOOLONG:
        return "the name is too long: choose a shorter output path"
    if code == errno.ENOENT:
        return "the folder does not exist or cannot be created: choose another output folder"
    text = e.strerror or (str(e) if str(e) else type(e).__name__)
    return f"{text[:1].lower()}{text[1:]}: choose another output folder"


def output_error(target: str, e: OSError) -> OutputError:
    """`e` as one message naming `target` (the user's path) and what to do."""
    if isinstance(e, OutputError):
        return e
    err = OutputError(f"cannot write {target}: {_advice(e)}")
    err.errno = getattr(e, "errno", None)
    return err


_CHUNK = 1 << 20


def _open_regular(path: str) -> int:
    """A read-only descriptor of `path`, refused by type first so that a FIFO, device, socket or folder is
    neither opened (opening a FIFO blocks until a writer comes) nor read (/dev/zero never ends)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file: {path}") from None
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"{path} is a folder, not a file: give a file inside it")
    if not stat.S_ISREG(st.st_mode):
        raise FormatError(f"{path} is {_kind(st.st_mode)}, not a regular file: save it to a file first")
    # O_NONBLOCK: should the path be swapped for a FIFO after the check, opening it still does not block
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FormatError(f"{path} is not a regular file: save it to a file first")
    return fd


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def read_bytes(path: str | os.PathLike, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the input file `path`: the one guarded reader every input goes through. Regular files only
    (checked before opening, so nothing blocks); at most `limit` bytes, counted as they are read (a file whose
    size reads as 0, as /proc files do, is capped too); FormatError naming the cap above it."""
    path = os.fspath(path)
    fd = _open_regular(path)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise _too_big(path, f"{size} bytes", limit)
        session = _SESSION.get()
        if session is not None:
            session.protect(path)
        # the size the file states is read at once (one allocation); whatever follows is read in chunks
        # up to the cap, since a pipe or a /proc file states 0
        first = _read_upto(fd, size) if size else b""
        pieces, total = [first], len(first)
        while True:
            piece = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not piece:
                break
            pieces.append(piece)
            total += len(piece)
            if total > limit:
                raise _too_big(path, f"more than {limit} bytes", limit)
    finally:
        os.close(fd)
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _read_upto(fd: int, n: int) -> bytes:
    with os.fdopen(os.dup(fd), "rb", buffering=0) as f:
        return f.read(n) or b""


def read_head(path: str | os.PathLike, n: int) -> bytes:
    """The first `n` bytes of the input file `path` (for telling its format), with `read_bytes`'s checks."""
    path = os.fspath(path)
    fd = _open_regular(path)
    try:
        return os.read(fd, n)
    finally:
        os.close(fd)


def _too_big(path: str, size: str, limit: int) -> FormatError:
    return FormatError(f"{path} is {size}, above the {limit}-byte limit for this kind of file", 0, "file size")


def _staged_tag(pid: int | None = None) -> str:
    """What every staged file's name holds: the writing process's id, so that a parent whose worker was killed
    (-9: no cleanup of its own) finds exactly that worker's files (`remove_staged`)."""
    return f".skinbridge-{os.getpid() if pid is None else pid}-"


def remove_staged(folder: str | os.PathLike, pid: int) -> list[str]:
    """Remove the staged `.part` (and `.old`) files process `pid` left under `folder`; returns them."""
    tag, removed = _staged_tag(pid), []
    for here, _, files in os.walk(folder):
        for name in files:
            if tag in name and name.endswith((".part", ".old")):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(here, name))
                    removed.append(os.path.join(here, name))
    return removed


def _identity(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class OutputSession:
    """The guard and the staged files of one run that writes (see the module docstring)."""

    def __init__(self, root: str | None = None, inputs=()):
        self.root = os.path.realpath(root) if root else None
        self._root_given = root
        self.inputs: dict[str, tuple | None] = {}  # real path → (st_dev, st_ino)
        self.staged: list[tuple[str, str]] = []  # (staged file, target)
        self.created: list[str] = []  # folders this session made, outermost first
        self.written: list[str] = []
        for p in inputs:
            self.protect(p)

    # -- the guard --------------------------------------------------------------------------------------------
    def protect(self, path: str | os.PathLike) -> None:
        """An input of the run: never written, nothing written inside it."""
        if not path:
            return
        real = os.path.realpath(os.fspath(path))
        if real not in self.inputs:
            self.inputs[real] = _identity(real)

    def check(self, path: str) -> None:
        """OutputError when writing `path` would touch an input or leave the output folder."""
        real = os.path.realpath(path)
        ident = _identity(real)
        for inp, inp_ident in self.inputs.items():
            if real == inp or (ident is not None and ident == inp_ident):
                raise OutputError(f"refusing to write {path}: it is the input {inp}; choose another output "
                                  "folder or name")
            if _inside(real, inp):
                raise OutputError(f"refusing to write {path}: it lies inside the input {inp}; choose another "
                                  "output folder")
        if self.root is not None and not _inside(real, self.root):
            raise OutputError(f"refusing to write {path}: it is outside the output folder {self._root_given}")
        if any(t == real for _, t in self.staged):
            raise OutputError(f"refusing to write {path} twice in one run (two outputs have the same name)")

    def makedirs(self, folder: str) -> None:
        """Make `folder` (guarded like a file: removed again when the session rolls back)."""
        folder = os.fspath(folder)
        self.check(folder)
        self._makedirs(os.path.realpath(folder), folder)

    # -- staging ----------------------------------------------------------------------------------------------
    def _makedirs(self, folder: str, target: str) -> None:
        missing = []
        f = os.path.abspath(folder)
        while not os.path.isdir(f):
            if os.path.lexists(f):
                raise OutputError(f"cannot write {target}: {f} is a file, not a folder; choose another output "
                                  "folder")
            missing.append(f)
            parent = os.path.dirname(f)
            if parent == f:
                break
            f = parent
        for d in reversed(missing):
            try:
                os.mkdir(d)
            except FileExistsError:
                continue
            except OSError as e:
                raise output_error(target, e) from None
            self.created.append(d)

    def stage(self, path: str, data: bytes | Iterable[bytes]) -> None:
        path = os.fspath(path)
        self.check(path)
        target = os.path.realpath(path)
        self._makedirs(os.path.dirname(target), path)
        if os.path.isdir(target):
            raise OutputError(f"cannot write {path}: a folder has that name; choose another output name")
        if fail_hook is not None:
            fail_hook(path)
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)[:60]}{_staged_tag()}", suffix=".part",
                                       dir=os.path.dirname(target))
        except OSError as e:
            raise output_error(path, e) from None
        self.staged.append((tmp, target))
        try:
            with os.fdopen(fd, "wb") as f:
                _write_all(f, data)
            _chmod_default(tmp)
        except OSError as e:
            raise output_error(path, e) from None

    def commit(self) -> list[str]:
        """Rename every staged file into place, in the order written. A file it replaces is kept as a hard
        link until all are in place, so a rename failing half-way puts the replaced files back."""
        backups: list[tuple[str, str | None]] = []  # (target, its previous content's link or None)
        done: list[str] = []
        try:
            for tmp, target in self.staged:
                backup = None
                if os.path.lexists(target):
                    backup = tmp[:-len(".part")] + ".old"
                    try:
                        os.link(target, backup)
                    except OSError:  # no hard links here: the old file cannot be kept
                        backup = None
                backups.append((target, backup))
                try:
                    os.replace(tmp, target)
                except OSError as e:
                    raise output_error(target, e) from None
                done.append(target)
        except BaseException:
            for target, backup in reversed(backups):
                try:
                    if backup is not None:
                        os.replace(backup, target)
                    elif target in done:
                        os.unlink(target)
                except OSError:
                    pass
            raise
        for _, backup in backups:
            if backup is not None:
                try:
                    os.unlink(backup)
                except OSError:
                    pass
        self.staged = []
        self.written += done
        return done

    def abort(self) -> None:
        """Remove every staged file and every folder this session created (when empty)."""
        for tmp, _ in self.staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        self.staged = []
        for d in reversed(self.created):
            try:
                os.rmdir(d)
            except OSError:
                pass
        self.created = []


@contextlib.contextmanager
def output_session(root: str | None = None, inputs=()):
    """Guard and stage every `write_atomic` of the block; commit when it ends, roll back when it raises.
    Sessions do not nest: an inner block joins the outer session (its files commit with the outer ones)."""
    outer = _SESSION.get()
    if outer is not None:
        for p in inputs:
            outer.protect(p)
        yield outer
        return
    session = OutputSession(root, inputs)
    token = _SESSION.set(session)
    try:
        yield session
    except BaseException:
        session.abort()
        raise
    finally:
        _SESSION.reset(token)
    try:
        for check in commit_checks:
            check()
        session.commit()
    except BaseException:
        session.abort()
        raise


def current_session() -> OutputSession | None:
    return _SESSION.get()


def output_path(folder: str | os.PathLike, rel: str) -> str:
    """The path of `rel` (a name made from file content, or a relative path) inside `folder`; OutputError when it
    leaves `folder` (`..`, an absolute path, a symlink pointing out) or when the running session refuses it (an
    input, outside its output folder). Exporters ask this before making a file, `write_atomic` asks again."""
    folder = os.fspath(folder)
    path = os.path.normpath(os.path.join(folder, rel))
    if os.path.isabs(rel) or not _inside(os.path.realpath(path), os.path.realpath(folder)):
        raise OutputError(f"refusing to write {path}: it is outside the output folder {folder}")
    session = current_session()
    if session is not None:
        session.check(path)
    return path


def may_write(folder: str | os.PathLike, rel: str) -> bool:
    """`output_path`'s decision without the error: for optional files an exporter skips when refused."""
    try:
        output_path(folder, rel)
    except OutputError:
        return False
    return True


def makedirs(folder: str | os.PathLike) -> None:
    """Make `folder` through the running session (guarded, undone on rollback), else directly."""
    folder = os.fspath(folder)
    session = current_session()
    if session is not None:
        session.makedirs(folder)
        return
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise output_error(folder, e) from None


def protect(path: str | os.PathLike) -> None:
    """Mark `path` as an input of the running session (no-op outside a session)."""
    session = _SESSION.get()
    if session is not None:
        session.protect(path)


def _chmod_default(path: str) -> None:
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def _write_all(f, data) -> None:
    """`data` into the open file `f`: bytes at once, or an iterable of byte pieces as they come (a writer that
    makes a large file in pieces never holds all of it)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        f.write(data)
    else:
        for piece in data:
            f.write(piece)


def write_atomic(path: str | os.PathLike, data: bytes | Iterable[bytes]) -> None:
    """Write `data` (bytes, or byte pieces) to `path`: staged and guarded inside an output session, else to a
    temporary file beside `path` renamed into place; no partial file is ever left, also when making a piece
    fails."""
    path = os.fspath(path)
    session = _SESSION.get()
    if session is not None:
        session.stage(path, data)
        return
    if fail_hook is not None:
        fail_hook(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise output_error(path, e) from None
    if os.path.isdir(path):
        raise OutputError(f"cannot write {path}: a folder has that name; choose another output name")
    try:
        fd, tmp = tempfile.mkstemp(prefix=_staged_tag(), suffix=".part", dir=folder)
    except OSError as e:
        raise output_error(path, e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            _write_all(f, data)
        _chmod_default(tmp)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise output_error(path, e) from None
        raise
