"""Wallpaper Engine packages (`scene.pkg`, docs/wallpaper_engine.md §7.1): the files of a workshop project in one
file, read as the folder they stand for and written from one. No bpy.

Layout (the one notscuffed/repkg's `PackageReader` and `PackageWriter` read and write), little-endian: a string is
an int32 byte count and that many bytes (no NUL).

    string  magic             "PKGV" and four digits ("PKGV0009" in a 2020 workshop item)
    int32   count
    count × string  path      relative, `/`-separated ("materials/noise.tex")
            int32   offset    from the start of the data: the end of this header
            int32   size
    data

A package is untrusted input. `read_index` refuses, each in one line naming the offset and the field
(FormatError): a header cut short, a magic that is not `PKGV`, a count larger than the bytes left could hold, a
path that is empty, absolute, climbs (`..`), holds `.`/empty parts, a drive or a NUL, two entries of one path
(case ignored, as on Windows) or a file that is also another entry's folder, an offset or size negative or
past the data, and entries whose bytes overlap. Nothing is written by the reader.

`unpacked(folder)` is how every reader of a project sees a folder holding `scene.pkg`: as a private folder (made
once per package and process, removed when the process ends) holding what its unpacked folder would hold: the
folder's own files (project.json, the preview) and, over them, the package's entries, byte for byte.
`pack(files)` writes a package: entries in the order given, each one's bytes right after the one before.
"""
from __future__ import annotations

import atexit
import os
import shutil
import struct
import tempfile
from dataclasses import dataclass

from ...core.budget import fits
from ...core.errors import FormatError
from ...core.fileio import read_bytes
from ...core.paths import why_unsafe
from ..puppet.project_docs import PROJECT_FILE, SCENE_FILE
from . import files as project_files

PACKAGE_FILE = "scene.pkg"
EXTENSION = ".pkg"
DEFAULT_MAGIC = "PKGV0009"  # what the one public package we have (2020) holds
MAGIC_PREFIX = b"PKGV"
MAX_MAGIC = 32  # RePKG reads the magic with this cap
MAX_PATH = 255  # and a path with this one
ENTRY_MIN = 4 + 1 + 4 + 4  # length, at least one byte of path, offset, size


@dataclass(frozen=True)
class Entry:
    path: str
    offset: int  # from the start of the data
    size: int
    at: int  # where its record (the path's length) starts in the file


@dataclass
class Package:
    magic: str
    entries: list[Entry]
    data_start: int  # the end of the header

    def slices(self, data: bytes) -> dict[str, memoryview]:
        """Each entry's bytes (views of `data`), in the package's order."""
        view = memoryview(data)
        return {e.path: view[self.data_start + e.offset:self.data_start + e.offset + e.size] for e in self.entries}


def is_package(head: bytes) -> bool:
    """A package's first bytes: a magic of 4..32 bytes beginning `PKGV`."""
    return len(head) >= 8 and 4 <= struct.unpack_from("<i", head)[0] <= MAX_MAGIC and head[4:8] == MAGIC_PREFIX


def _int(data: bytes, at: int, field: str) -> int:
    if at + 4 > len(data):
        raise FormatError(f"header cut short: 4 bytes needed, {max(len(data) - at, 0)} left", at, field)
    return struct.unpack_from("<i", data, at)[0]


def _string(data: bytes, at: int, cap: int, field: str) -> tuple[str, int]:
    n = _int(data, at, f"{field} length")
    if n < 0 or n > cap:
        raise FormatError(f"length {n} outside 0..{cap}", at, f"{field} length")
    if at + 4 + n > len(data):
        raise FormatError(f"header cut short: {n} bytes needed, {len(data) - at - 4} left", at + 4, field)
    raw = bytes(data[at + 4:at + 4 + n])
    try:
        return raw.decode("utf-8"), at + 4 + n
    except UnicodeDecodeError:
        raise FormatError(f"not UTF-8 text ({raw[:40]!r})", at + 4, field) from None


def why_bad_path(path: str) -> str | None:
    """Why an entry's path cannot name a file inside the project; None for a plain relative path."""
    why = why_unsafe(path)
    if why is not None and why != "path climbs out of the model's folder":
        return why
    parts = path.replace("\\", "/").split("/")
    if ".." in parts:
        return "path climbs with '..'"
    if any(p in ("", ".") for p in parts):
        return "path has an empty or '.' part"
    if ":" in path:
        return "path holds ':' (a drive or a stream)"
    return why


def read_index(data: bytes) -> Package:
    """The header of the package `data`, every entry checked against the rest (see the module docstring)."""
    magic, at = _string(data, 0, MAX_MAGIC, "magic")
    if not magic.encode("utf-8").startswith(MAGIC_PREFIX):
        raise FormatError(f"magic {magic!r} is not PKGV…: not a Wallpaper Engine package", 4, "magic")
    count = _int(data, at, "entry count")
    fits(count, ENTRY_MIN, len(data) - at - 4, at, "entry count")
    at += 4
    entries, seen, folders = [], {}, {}
    for k in range(count):
        start = at
        path, at = _string(data, at, MAX_PATH, f"entry {k} path")
        why = why_bad_path(path)
        if why is not None:
            raise FormatError(f"{path!r}: {why}", start + 4, f"entry {k} path")
        offset, size = _int(data, at, f"entry {k} offset"), _int(data, at + 4, f"entry {k} size")
        if offset < 0:
            raise FormatError(f"{path!r}: negative offset {offset}", at, f"entry {k} offset")
        if size < 0:
            raise FormatError(f"{path!r}: negative size {size}", at + 4, f"entry {k} size")
        key = path.replace("\\", "/").lower()
        if key in seen:
            raise FormatError(f"{path!r}: a second entry of that path (entry {seen[key]})", start + 4,
                              f"entry {k} path")
        seen[key] = k
        parts = key.split("/")
        for n in range(1, len(parts)):
            folders.setdefault("/".join(parts[:n]), k)
        entries.append(Entry(path, offset, size, start))
        at += 8
    for e in entries:  # a folder of one entry named as another entry's file cannot be unpacked
        key = e.path.replace("\\", "/").lower()
        if key in folders:
            raise FormatError(f"{e.path!r} is a file and the folder of entry {folders[key]}", e.at + 4, "entry path")
    held = len(data) - at
    for e in entries:
        field_at = e.at + 4 + len(e.path.encode("utf-8"))
        if e.offset > held:
            raise FormatError(f"{e.path!r}: offset {e.offset} past the {held} bytes of data", field_at, "entry offset")
        if e.offset + e.size > held:
            raise FormatError(f"{e.path!r}: {e.size} bytes at {e.offset} end past the {held} bytes of data",
                              field_at + 4, "entry size")
    last = None
    for e in sorted((e for e in entries if e.size), key=lambda e: (e.offset, e.at)):
        if last is not None and e.offset < last.offset + last.size:
            raise FormatError(f"{e.path!r} (bytes {e.offset}..{e.offset + e.size}) overlaps {last.path!r} (bytes "
                              f"{last.offset}..{last.offset + last.size})", e.at + 4 + len(e.path.encode("utf-8")),
                              "entry offset")
        last = e
    return Package(magic, entries, at)


def read(data: bytes) -> tuple[Package, dict[str, memoryview]]:
    """The package `data`: its header and each entry's bytes, in its order."""
    package = read_index(data)
    return package, package.slices(data)


def _string_bytes(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack("<i", len(raw)) + raw


def pack(files, magic: str = DEFAULT_MAGIC) -> bytes:
    """A package of `files` ((path, bytes) in the order to write): each entry's bytes right after the one
    before, offsets from the end of the header. ValueError for a path a reader would refuse."""
    files = list(files)
    if not magic.encode("utf-8").startswith(MAGIC_PREFIX) or len(magic.encode("utf-8")) > MAX_MAGIC:
        raise ValueError(f"package magic {magic!r} is not PKGV… of at most {MAX_MAGIC} bytes")
    head = [_string_bytes(magic), struct.pack("<i", len(files))]
    offset = 0
    for path, data in files:
        why = why_bad_path(path)
        if why is not None or len(path.encode("utf-8")) > MAX_PATH:
            raise ValueError(f"cannot pack {path!r}: {why or f'longer than {MAX_PATH} bytes'}")
        head += [_string_bytes(path), struct.pack("<ii", offset, len(data))]
        offset += len(data)
    if offset > 0x7FFFFFFF:
        raise ValueError(f"the files hold {offset} bytes, above the 2 GiB a package's int32 offsets can address")
    return b"".join(head + [bytes(d) for _, d in files])


# ------------------------------------------------------------------------------------------------------------
# a folder holding scene.pkg, seen as its unpacked folder

_STAGED: dict[tuple, tuple[str, list[str]]] = {}


def package_in(where: str) -> str | None:
    """The package of `where`: that file when it is one (any name), else the `scene.pkg` of the project folder
    `where`, when it holds one as a regular file of its own."""
    if os.path.isfile(where) and where.lower().endswith(EXTENSION):
        return where
    path = os.path.join(where, PACKAGE_FILE)
    real, base = os.path.realpath(path), os.path.realpath(where)
    return path if os.path.isfile(real) and real.startswith(base.rstrip(os.sep) + os.sep) else None


def _remove_staged() -> None:
    for tmp, _ in _STAGED.values():
        shutil.rmtree(tmp, ignore_errors=True)
    _STAGED.clear()


def _named(pkg_path: str, e: FormatError) -> FormatError:
    """`e` with the same offset and field, its line naming the package first."""
    err = FormatError(f"{os.path.basename(pkg_path)}: {e}")
    err.offset, err.field = e.offset, e.field
    return err


def _stage(folder: str, pkg_path: str) -> tuple[str, list[str]]:
    data = read_bytes(pkg_path)
    try:
        package, members = read(data)
    except FormatError as e:
        raise _named(pkg_path, e) from None
    if not _STAGED:
        atexit.register(_remove_staged)
    tmp = tempfile.mkdtemp(prefix="skinbridge-pkg-")
    try:
        loose, warnings = project_files.project_files(folder)
        shadowed = []
        for rel, src in loose.items():
            if rel == os.path.basename(pkg_path):
                continue
            target = os.path.join(tmp, *rel.split("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                for piece in project_files.pieces(src, rel):
                    f.write(piece)
        for entry in package.entries:
            path, view = entry.path, members[entry.path]
            target = os.path.join(tmp, *path.replace("\\", "/").split("/"))
            try:
                if os.path.isfile(target):
                    with open(target, "rb") as f:
                        if f.read() != view:
                            shadowed.append(path)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as f:
                    f.write(view)
            except OSError as e:  # a folder beside the package of the entry's name, or a file of its folder's
                why = (e.strerror or str(e)).lower()
                raise _named(pkg_path, FormatError(f"{path!r} cannot be unpacked beside the files of its folder "
                                                   f"({why})", entry.at + 4, "entry path")) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if shadowed:
        warnings.append(f"{len(shadowed)} file{'s' if len(shadowed) > 1 else ''} beside {PACKAGE_FILE} differ from "
                        f"its entries of the same path (the package's are read): {', '.join(shadowed[:5])}"
                        + (" …" if len(shadowed) > 5 else ""))
    return tmp, warnings


def unpacked(where: str) -> tuple[str, list[str]]:
    """(the folder to read the project of `where` from, warnings). `where` is a project folder or a package: a
    folder without `scene.pkg` is read as it is; a package (or a folder holding `scene.pkg`) is read from a private
    folder holding what its unpacked folder would hold (module docstring). FormatError for a package
    `read_index` refuses."""
    pkg_path = package_in(where)
    if pkg_path is None:
        return where, []
    st = os.stat(pkg_path)
    key = (os.path.realpath(pkg_path), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _STAGED or not os.path.isdir(_STAGED[key][0]):
        _STAGED[key] = _stage(os.path.dirname(os.path.abspath(pkg_path)), pkg_path)
    tmp, warnings = _STAGED[key]
    return tmp, list(warnings)


def locate(path: str) -> tuple[str, str, str, list[str]]:
    """A project given as `path` (its project.json, its scene.json or its package): (where it lives: its folder,
    or its package when it has one, the folder its files are read from, the file of that folder to read,
    warnings). A package holding neither file, with no project.json beside it, is a FormatError."""
    path = os.path.abspath(path)
    folder, name = os.path.dirname(path), os.path.basename(path)
    given = path if name.lower().endswith(EXTENSION) else folder
    pkg_path = package_in(given)
    root, warnings = unpacked(given)
    if pkg_path is None:
        return folder, root, path, warnings
    if given == path:  # the package itself: its project.json (beside it), else its scene.json
        for candidate in (PROJECT_FILE, SCENE_FILE):
            if os.path.isfile(os.path.join(root, candidate)):
                return pkg_path, root, os.path.join(root, candidate), warnings
        raise FormatError(f"{name} holds no {SCENE_FILE} and no {PROJECT_FILE} is beside it", None, "file")
    return pkg_path, root, os.path.join(root, name), warnings


def index_of(where: str) -> Package | None:
    """The header of the package of `where` (its entry order and magic, for writing it back), if it has one."""
    pkg_path = package_in(where) if where else None
    return read_index(read_bytes(pkg_path)) if pkg_path else None


def members(path: str) -> dict[str, str]:
    """The registry's `members` capability: the files of the project of `path` (its project.json, scene.json or
    package; relative path → a file holding its bytes), as its unpacked folder holds them."""
    return project_files.project_files(locate(path)[1])[0]
