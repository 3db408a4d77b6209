"""Texture paths from files are untrusted (docs/architecture.md §7.1): which ones may be opened on import, and which
may be written into an exported file.

A model file names its textures with paths of its own (PMX: `tex\\skin.png`, Urho3D material XML, glTF URIs).
A path in a file is data, never an instruction to read from anywhere:

- on import only a file inside the model's folder tree is opened; an absolute path (`/etc/x`, `C:\\x`), a UNC
  or device path (`\\\\server\\share\\x`, `//server/x`, `\\\\?\\C:\\x`), a URL (`file:`, `http:`) or a path
  that climbs out of the folder (`../x`, also through a symbolic link) is kept as the material's data and
  reported, never opened (MMD and Blender on Windows would fetch a UNC path over the network);
- on export only a relative path that stays inside the output folder is written; anything else is replaced by
  its file name made safe by `core.naming`, with a warning.

Nothing here touches the file system except `texture_to_open` (it resolves links to see where a path lands).
"""
from __future__ import annotations

import os
import re

from .naming import safe_file_name

_DRIVE = re.compile(r"^[A-Za-z]:")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


def _parts(raw: str) -> list[str]:
    return [p for p in re.split(r"[\\/]+", raw) if p not in ("", ".")]


def why_unsafe(raw: str) -> str | None:
    """Why the texture path `raw` (as a file holds it, either slash) cannot name a file inside the model's
    folder; None when it is a plain relative path that stays inside."""
    if not raw or not raw.strip():
        return "empty path"
    if "\x00" in raw:
        return "NUL character in the path"
    if raw.startswith(("\\\\", "//")) or raw.startswith(("\\/", "/\\")):
        return "network (UNC) or device path"
    if _DRIVE.match(raw):
        return "absolute path with a drive letter"
    if raw.startswith(("/", "\\")):
        return "absolute path"
    if _SCHEME.match(raw):
        return "URL"
    depth = 0
    for part in _parts(raw):
        if part == "..":
            depth -= 1
            if depth < 0:
                return "path climbs out of the model's folder"
        else:
            depth += 1
    if depth <= 0:
        return "path names no file"
    return None


def relative_parts(raw: str) -> list[str] | None:
    """The path components of a safe relative path (".." resolved), or None when `raw` is unsafe."""
    if why_unsafe(raw) is not None:
        return None
    out: list[str] = []
    for part in _parts(raw):
        if part == "..":
            out.pop()
        else:
            out.append(part)
    return out


def texture_to_open(raw: str, model_dir: str) -> tuple[str | None, str | None]:
    """(the file to open, None) for a texture path that lands inside `model_dir`'s tree (links resolved),
    else (None, a warning naming the path and why it is not opened)."""
    why = why_unsafe(raw)
    if why is None:
        base = os.path.realpath(model_dir)
        path = os.path.join(base, *relative_parts(raw))
        real = os.path.realpath(path)
        if real == base or not real.startswith(base.rstrip(os.sep) + os.sep):
            why = "path leads out of the model's folder (symbolic link)"
        elif os.path.exists(real) and not os.path.isfile(real):  # a FIFO or device would block or never end
            why = "not a regular file"
        else:
            return path, None
    return None, f"texture {raw!r} not opened ({why}): kept as data; place the image inside the model's folder"


def texture_to_write(raw: str, separator: str = "/", outdir: str | None = None) -> tuple[str, str | None]:
    """(the path to write into an exported file, warning or None): a safe relative path as it was (joined with
    `separator`); an absolute path of this machine inside `outdir` made relative to it; else the file's name
    alone made safe, with a warning naming the original."""
    if outdir and os.path.isabs(raw):
        base = os.path.realpath(outdir)
        real = os.path.realpath(raw)
        if real.startswith(base.rstrip(os.sep) + os.sep):
            return separator.join(_parts(os.path.relpath(real, base))), None
    parts = relative_parts(raw)
    if parts is not None:
        return separator.join(parts), None
    name = safe_file_name(_parts(raw)[-1] if _parts(raw) else "")
    return name, (f"texture path {raw!r} written as {name!r} ({why_unsafe(raw)}): only relative paths inside "
                  "the output folder are written")
