"""The files of a project folder that a project export copies (docs/architecture.md §7.1 "Budgets"; the project
export of docs/wallpaper_engine.md §7): regular files inside the folder only, each streamed in pieces, never
read whole. No bpy.

* every path is resolved (`os.path.realpath`) and refused when it lands outside the project folder: a link to
  `/etc/hostname` or to a file in a folder beside the project is not copied, with one warning naming it;
* a link to a file inside the project is copied as a regular file holding that file's bytes;
* a link to a folder is not followed (a link may loop, and the files it leads to inside the project are copied
  from where they are); pipes (FIFOs), devices and sockets are skipped; each with one warning naming it;
* a file is opened without following a link (`O_NOFOLLOW`) and checked to be regular on the open descriptor,
  so a file swapped for a link or a pipe after the walk is refused, not followed or waited on.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Iterator

from ...core.errors import FormatError
from ...core.fileio import protect

CHUNK = 1 << 20  # bytes read and written at a time


def _inside(real: str, base: str) -> bool:
    return real.startswith(base.rstrip(os.sep) + os.sep)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "a special file"


def _link_text(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def project_files(root: str, skip: str | None = None) -> tuple[dict[str, str], list[str]]:
    """(relative path with `/` → the real path of the regular file to copy, warnings) of the project folder
    `root`; `skip` is a folder not to walk (the export's own output folder, when it lies inside the project)."""
    base = os.path.realpath(root)
    skip_real = os.path.realpath(skip) if skip else None
    out: dict[str, str] = {}
    warnings: list[str] = []

    def unreadable(e: OSError) -> None:
        name = os.path.relpath(e.filename, base) if e.filename else "?"
        warnings.append(f"project folder {name!r} cannot be read ({(e.strerror or str(e)).lower()}): its files are "
                        "not copied")

    for folder, dirs, names in os.walk(base, onerror=unreadable):  # links to folders are listed, never entered
        for d in list(dirs):
            path = os.path.join(folder, d)
            if os.path.islink(path):
                dirs.remove(d)
                rel = os.path.relpath(path, base).replace(os.sep, "/")
                where = "leading out of the project" if not _inside(os.path.realpath(path), base) else "to a folder"
                warnings.append(f"{rel}: a link {where} ({_link_text(path)}): not copied")
            elif skip_real is not None and os.path.realpath(path) == skip_real:
                dirs.remove(d)
        for name in names:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, base).replace(os.sep, "/")
            real = os.path.realpath(path)
            if not _inside(real, base):
                warnings.append(f"{rel}: a link leading out of the project ({_link_text(path)}): not copied")
                continue
            try:
                mode = os.stat(real).st_mode
            except OSError:
                warnings.append(f"{rel}: a link to nothing ({_link_text(path)}): not copied")
                continue
            if not stat.S_ISREG(mode):
                warnings.append(f"{rel}: {_kind(mode)}, not a regular file: not copied")
                continue
            out[rel] = real
    return out, warnings


def pieces(path: str, rel: str) -> Iterator[bytes]:
    """The bytes of the regular file `path` (a real path, as `project_files` gives) in pieces of `CHUNK` bytes,
    for `write_atomic`; the file becomes an input of the running output session at once, so it is never written
    over. FormatError naming `rel` when it is no longer a regular file."""
    protect(path)
    return _pieces(path, rel)


def _pieces(path: str, rel: str) -> Iterator[bytes]:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_BINARY", 0))
    except OSError as e:
        raise FormatError(f"project file {rel} cannot be read ({(e.strerror or str(e)).lower()})", None,
                          "project file") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FormatError(f"project file {rel} is no longer a regular file", None, "project file")
        while True:
            piece = os.read(fd, CHUNK)
            if not piece:
                return
            yield piece
    finally:
        os.close(fd)
