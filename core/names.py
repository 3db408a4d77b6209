"""Names whose bytes are not valid in their format's encoding.

Codecs keep such a name as read (UTF-8 formats decode with surrogateescape, so read → write gives the same
bytes); everything past the codec needs real text: Blender refuses strings with lone surrogates, and so does any
UTF-8 stream or file name. The mapping to the core model therefore shows each bad byte as U+FFFD and warns
naming the element and the byte; `check` lists the same names as warning findings (docs/urho.md, docs/mmd.md,
docs/source.md, docs/wallpaper_engine.md: "Names"). The name as read stays in the element's extras
(`RAW_KEY`, a JSON-safe string: Blender keeps it in the bone's property), and a writer of bytes asks
`file_name` for it: while the name is the one shown at import, the file gets its original bytes back.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any, Callable

import numpy as np

from .findings import Finding

REPLACEMENT = "\ufffd"
RAW_KEY = "raw_name"  # in an element's extras: its name as read, while it held bytes that did not decode
_SURROGATE = re.compile("[\ud800-\udfff]")


def bad_byte(text: str) -> int | None:
    """Byte offset, within the name as stored, of its first byte that did not decode; None for a valid name."""
    m = _SURROGATE.search(text)
    if m is None:
        return None
    return len(text[:m.start()].encode("utf-8", "surrogateescape"))


def shown(text: str) -> str:
    """The name as text: every byte that did not decode becomes U+FFFD."""
    return _SURROGATE.sub(REPLACEMENT, text) if _SURROGATE.search(text) else text


def stored_bytes(text: str) -> bytes:
    """The bytes a name read with surrogateescape came from (lone surrogates that are not escapes as U+FFFD)."""
    return text.encode("utf-8", "surrogateescape") if all(
        "\udc80" <= c <= "\udcff" for c in _SURROGATE.findall(text)) else shown(text).encode("utf-8")


def file_name(name: str, extras: dict | None) -> str:
    """The name to write for an element named `name` in the core model: the name as read (`RAW_KEY` in its
    extras, bytes that did not decode included) while `name` is still what import showed for it, else `name`."""
    raw = (extras or {}).get(RAW_KEY)
    return raw if isinstance(raw, str) and raw != name and shown(raw) == name else name


def problem(text: str, encoding: str = "UTF-8") -> str | None:
    """Why a name is not valid text, naming its first bad byte, or None."""
    at = bad_byte(text)
    if at is None:
        return None
    raw = stored_bytes(text)
    return f"byte {at} of the name (0x{raw[at]:02x}) is not valid {encoding}; shown as U+FFFD"


def finding(element: str, text: str, offset: int | None, field: str = "name",
            encoding: str = "UTF-8") -> Finding | None:
    """The `check` finding of one name: a warning with the file offset of its first bad byte."""
    why = problem(text, encoding)
    if why is None:
        return None
    at = None if offset is None else offset + (bad_byte(text) or 0)
    return Finding("warning", element, at, field, why + " on import")


def findings(names: list[tuple[str, str, int | None]], field: str = "name", encoding: str = "UTF-8"
             ) -> list[Finding]:
    """Findings of (element, name, file offset of the name) triples; valid names give none."""
    out = []
    for element, text, offset in names:
        f = finding(element, text, offset, field, encoding) if _SURROGATE.search(text) else None
        if f is not None:
            out.append(f)
    return out


def clean(obj: Any, where: Callable[[str], str] | None = None, path: str = "") -> list[str]:
    """Replace, in place, every bad byte of every string of a core Scene (its dataclasses, lists, tuples and
    dicts, extras included) with U+FFFD; one warning per distinct name changed, naming the first place it was
    found, `where(original)` adding its position in the file."""
    warned: dict[str, str] = {}
    _clean(obj, path, where, warned, set())
    return list(warned.values())


def _value(value: Any, path: str, where, warned: dict[str, str], seen: set[int]) -> Any:
    """`value` with its names made valid: a new str or tuple where one changed, else `value` (cleaned in place)."""
    if isinstance(value, str):
        if not _SURROGATE.search(value):
            return value
        if value not in warned:
            place = where(value) if where is not None else ""
            warned[value] = f"{path or 'name'} {shown(value)!r}: {problem(value)}{place}"
        return shown(value)
    if isinstance(value, tuple):
        items = tuple(_value(v, f"{path}[{i}]", where, warned, seen) for i, v in enumerate(value))
        return items if any(a is not b for a, b in zip(items, value)) else value
    _clean(value, path, where, warned, seen)
    return value


def _clean(obj: Any, path: str, where, warned: dict[str, str], seen: set[int]) -> None:
    if isinstance(obj, (str, bytes, int, float, tuple, np.ndarray, np.generic)) or obj is None or id(obj) in seen:
        return
    seen.add(id(obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            new = _value(value, f"{path}.{f.name}" if path else f.name, where, warned, seen)
            if new is not value:
                setattr(obj, f.name, new)
                if f.name == "name" and isinstance(getattr(obj, "extras", None), dict):
                    obj.extras[RAW_KEY] = value  # for `file_name`; `_clean` leaves this key as it is
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            new = _value(value, f"{path}[{i}]", where, warned, seen)
            if new is not value:
                obj[i] = new
    elif isinstance(obj, dict):
        for key in list(obj):
            if key == RAW_KEY:
                continue
            value = obj[key]
            new_key = _value(key, f"{path} key", where, warned, seen) if isinstance(key, str) else key
            new = _value(value, f"{path}[{new_key!r}]", where, warned, seen)
            if new_key is not key:
                del obj[key]
            if new_key is not key or new is not value:
                obj[new_key] = new


def positions(places: dict[str, int | str]) -> Callable[[str], str]:
    """A `where` for `clean`: a name's file offset (int) or line ("line 4") from a {name as read: place} map."""
    def where(text: str) -> str:
        place = places.get(text)
        if place is None:
            return ""
        return f" (file offset {place + (bad_byte(text) or 0)})" if isinstance(place, int) else f" ({place})"
    return where


def cleaned(places_of: Callable[[Any], dict[str, int | str]] | None = None) -> Callable:
    """Decorator of a mapping `to_scene(records, ...) -> (scene, warnings)`: the scene's names are made valid
    text (`clean`) and each changed one is warned about, placed by `places_of(records)`."""
    def wrap(to_scene: Callable) -> Callable:
        @functools.wraps(to_scene)
        def mapped(records, *args, **kwargs):
            scene, warnings = to_scene(records, *args, **kwargs)
            where = positions(places_of(records)) if places_of is not None else None
            return scene, list(warnings) + clean(scene, where)
        return mapped
    return wrap
