"""Animation trigger sidecars: ``<anim>.xml`` and ``<anim>.json`` beside a `.ani` (docs/urho.md §4.5).

XML: ``<animation><trigger time="s" | normalizedtime="0..1" type="String" value="..."/>...</animation>``.
JSON (read by Urho3D when there is no XML): ``{"triggers": [{"time" | "normalizedTime": n, "type": ...,
"value": ...}]}``. A normalized time is multiplied by the animation length, as the engine does. A trigger
with neither time is skipped, as the engine does; triggers are returned in file order (the engine sorts
them by time when it loads them).

Values come back typed: ``Int``/``Int64`` -> int, ``Bool`` -> bool, ``Float``/``Double`` -> float,
``String`` -> str, no type -> None; any other Urho3D variant type (``Vector3``, ...) -> ``RawValue(type,
text)`` so that ``write_triggers`` gives it back unchanged.

Hostile input: the file is refused above ``MAX_SIDECAR_BYTES``; an XML document type declaration (the
only way to declare entities, internal or external) is refused before anything in it is expanded; JSON
nesting too deep for the parser is refused. Every fault is a ``FormatError``.
"""
from __future__ import annotations

import json
import math
import os
import xml.etree.ElementTree as ET
from typing import NamedTuple

from ...core.errors import FormatError
from ...core.fileio import read_bytes

MAX_SIDECAR_BYTES = 4 << 20


class RawValue(NamedTuple):
    """A trigger value of a variant type this module does not convert: its type name and text."""

    type: str
    text: str


# -- reading ------------------------------------------------------------------------------------------

def read_triggers(source, length: float) -> list[tuple[float, object]]:
    """Triggers of a sidecar as ``[(time_seconds, value), ...]``.

    ``source`` is the text (str or bytes; XML or JSON, told apart by the first character) or a path
    (``os.PathLike``, or a str that does not start with ``<`` or ``{``).
    """
    text = _load(source)
    stripped = text.lstrip(b"\xef\xbb\xbf \t\r\n") if isinstance(text, bytes) else text.lstrip("\ufeff \t\r\n")
    if stripped[:1] in (b"{", "{"):
        return _read_json(text, length)
    return _read_xml(text, length)


def _load(source) -> str | bytes:
    if isinstance(source, os.PathLike) or (isinstance(source, str) and source.lstrip("\ufeff \t\r\n")[:1]
                                           not in ("<", "{")):
        data = read_bytes(source, MAX_SIDECAR_BYTES)
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    elif isinstance(source, str):
        if len(source) > MAX_SIDECAR_BYTES:
            raise FormatError(f"sidecar is {len(source)} characters, above the {MAX_SIDECAR_BYTES} limit",
                              0, "file size")
        return source
    else:
        raise TypeError(f"expected text, bytes or a path, not {type(source).__name__}")
    if len(data) > MAX_SIDECAR_BYTES:
        raise FormatError(f"sidecar is {len(data)} bytes, above the {MAX_SIDECAR_BYTES} limit", 0, "file size")
    return data


class _NoDoctype(ET.TreeBuilder):
    def doctype(self, name, pubid, system):
        raise FormatError("a document type declaration (DTD, entities) is not allowed in a trigger file",
                          None, "xml doctype")


def _read_xml(text: str | bytes, length: float) -> list[tuple[float, object]]:
    parser = ET.XMLParser(target=_NoDoctype())
    try:
        parser.feed(text)
        root = parser.close()
    except ET.ParseError as e:
        line, column = e.position
        raise FormatError(f"not well-formed XML at line {line}, column {column}: {e}", None, "xml") from None
    except (ValueError, RecursionError, LookupError) as e:
        if isinstance(e, FormatError):
            raise
        raise FormatError(f"XML could not be parsed: {e}", None, "xml") from None
    triggers = []
    for i, elem in enumerate(root.findall("trigger")):
        attrs = elem.attrib
        if "normalizedtime" in attrs:
            time = _number(attrs["normalizedtime"], f"trigger {i} normalizedtime") * float(length)
        elif "time" in attrs:
            time = _number(attrs["time"], f"trigger {i} time")
        else:
            continue
        triggers.append((time, trigger_value(attrs.get("type"), attrs.get("value", ""), f"trigger {i}")))
    return triggers


def _read_json(text: str | bytes, length: float) -> list[tuple[float, object]]:
    try:
        root = json.loads(text)
    except (ValueError, RecursionError, LookupError) as e:
        raise FormatError(f"not valid JSON: {e}", None, "json") from None
    entries = root.get("triggers", []) if isinstance(root, dict) else None
    if not isinstance(entries, list):
        raise FormatError("expected an object with a 'triggers' array", None, "json triggers")
    triggers = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise FormatError(f"trigger {i} is not an object", None, f"trigger {i}")
        if entry.get("normalizedTime") is not None:
            time = _number(entry["normalizedTime"], f"trigger {i} normalizedTime") * float(length)
        elif entry.get("time") is not None:
            time = _number(entry["time"], f"trigger {i} time")
        else:
            continue
        triggers.append((time, trigger_value(entry.get("type"), entry.get("value", ""), f"trigger {i}")))
    return triggers


def _number(raw, field: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise FormatError(f"expected a number, found {raw!r:.40}", None, field)
    try:
        return float(raw)
    except (ValueError, OverflowError):
        raise FormatError(f"expected a number, found {raw!r:.40}", None, field) from None


def trigger_value(vtype, raw, field: str):
    if vtype is None or vtype == "":
        return None
    if not isinstance(vtype, str):
        raise FormatError(f"type must be a string, found {vtype!r:.40}", None, f"{field} type")
    key = vtype.lower()
    if key in ("int", "int64"):
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        try:
            return int(str(raw).strip())
        except ValueError:
            raise FormatError(f"expected an integer, found {raw!r:.40}", None, f"{field} value") from None
    if key in ("float", "double"):
        return _number(raw, f"{field} value")
    if key == "bool":
        if isinstance(raw, bool):
            return raw
        return str(raw).strip().lower() in ("true", "yes", "1")
    text = raw if isinstance(raw, str) else json.dumps(raw)
    if key == "string":
        return text
    return RawValue(vtype, text)


# -- writing ------------------------------------------------------------------------------------------

def write_triggers(triggers, fmt: str = "xml") -> str:
    """The sidecar text (``fmt`` "xml" or "json") for ``[(time_seconds, value), ...]``; times are written
    in seconds with every digit needed to read back the same float."""
    triggers = list(triggers)
    typed = [(_time_text(time, i), *typed_value(value, i)) for i, (time, value) in enumerate(triggers)]
    if fmt == "json":
        entries = []
        for (time, vtype, text), (_, value) in zip(typed, triggers):
            entry = {"time": float(time)}
            if vtype is not None:
                # Urho3D's JSON reader takes numbers and booleans as JSON numbers and booleans
                native = value if isinstance(value, (bool, int, float)) else text
                entry.update(type=vtype, value=native)
            entries.append(entry)
        return json.dumps({"triggers": entries}, indent="\t", ensure_ascii=False) + "\n"
    if fmt != "xml":
        raise ValueError(f"unknown sidecar format {fmt!r}")
    lines = ['<?xml version="1.0"?>', "<animation>"]
    for i, (time, vtype, text) in enumerate(typed):
        attrs = f'time="{time}"'
        if vtype is not None:
            attrs += f' type="{_attr(vtype, i)}" value="{_attr(text, i)}"'
        lines.append(f"\t<trigger {attrs} />")
    lines.append("</animation>")
    return "\n".join(lines) + "\n"


def _time_text(time, index: int) -> str:
    time = float(time)
    if not math.isfinite(time):
        raise ValueError(f"trigger {index}: time {time} is not finite")
    return repr(time)


def typed_value(value, index: int) -> tuple[str | None, str]:
    if value is None:
        return None, ""
    if isinstance(value, RawValue):
        return value.type, value.text
    if isinstance(value, bool):
        return "Bool", "true" if value else "false"
    if isinstance(value, int):
        return ("Int" if -2**31 <= value < 2**31 else "Int64"), str(value)
    if isinstance(value, float):
        return "Float", repr(value)
    if isinstance(value, str):
        return "String", value
    raise ValueError(f"trigger {index}: value of type {type(value).__name__} cannot be written")


_ATTR_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\t": "&#9;", "\n": "&#10;",
                 "\r": "&#13;"}


def _attr(text: str, index: int) -> str:
    out = []
    for ch in text:
        if ch in _ATTR_ESCAPES:
            out.append(_ATTR_ESCAPES[ch])
        elif ord(ch) < 0x20 or 0xD800 <= ord(ch) <= 0xDFFF or ch in "\ufffe\uffff":
            raise ValueError(f"trigger {index}: character U+{ord(ch):04X} cannot be stored in XML")
        else:
            out.append(ch)
    return "".join(out)
