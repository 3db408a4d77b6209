"""`skinbridge check` for DMX on the shared pipeline (core/check.py `Checker`): the element graph's findings, then
the write-back compared.

Findings name the element (its index in the file and its name) and the attribute: a reference to an element the
file lacks (a binary -2 stub or a text id naming no element, which Valve's tools resolve from other files: a
warning; an index past the element table: an error, nothing can resolve it), and elements sharing one id (the
second cannot be referred to: a warning). Reader warnings (bytes after the last element) come first.
"""
from __future__ import annotations

from ...core.check import Checker, Findings
from ...core.findings import Finding, first_difference
from . import dmx
from .records import AttrType, DmxFile, Element, Stub, references


def _where(k: int, e: Element) -> str:
    return f"element {k} ({e.type} {e.name!r})"


def validate(d: DmxFile) -> list[Finding]:
    out = Findings()
    out.warnings(d.warnings)
    owner: dict = {}
    for k, e in enumerate(d.elements):
        if e.id is not None and owner.setdefault(e.id, k) != k:
            out.add("warning", _where(k, e), None, "id", f"id {e.id} is element {owner[e.id]}'s too")
        for a in e.attributes:
            if a.type != AttrType.ELEMENT:
                continue
            for ref in references(a.value, a.array):
                if isinstance(ref, Stub) and ref.index is not None:
                    out.add("error", _where(k, e), None, a.name,
                            f"refers to element {ref.index}, past the {len(d.elements)} of the file")
                elif isinstance(ref, Stub):
                    out.add("warning", _where(k, e), None, a.name, f"refers to element {ref.id}, not in the file")
    return out.items


def _differs(data: bytes, written: bytes, records: DmxFile) -> str:
    at = first_difference(data, written)
    if records.gzip is not None or records.binary:
        return f"roundtrip: differs at offset {at}" + (" (of the gzip stream)" if records.gzip else "")
    line = data.count(b"\n", 0, at) + 1
    return f"roundtrip: differs at line {line}"


def _channel_of(d: DmxFile) -> dict[int, str]:
    """The name of the DmeChannel whose log each log and log layer element is (`Bone_p`): every channel's log is
    named alike ("Vector3 log"), so a difference in one names its channel too."""
    out: dict[int, str] = {}
    for e in d.elements:
        log = e.value("log") if e.type == "DmeChannel" else None
        if isinstance(log, Element) and e.name:
            out.setdefault(id(log), e.name)
            for layer in references(log.value("layers") or [], True):
                if isinstance(layer, Element):
                    out.setdefault(id(layer), e.name)
    return out


def diff_view(d: DmxFile) -> dict:
    """What `skinbridge diff` compares of two DMX files: the header, the string table, then each element with its
    attributes, an element attribute naming the indices of the elements it refers to (each element is compared
    once, at its place in the file, not again wherever it is referred to). The text layout is left out. A
    channel's log and its layers are named with the channel: "Vector3 log (channel Bone_p)"."""
    index = {id(e): k for k, e in enumerate(d.elements)}
    channel = _channel_of(d)

    def ref(e):
        if isinstance(e, Element):
            return f"element {index[id(e)]}" if id(e) in index else f"element ({e.name})"
        return e if e is None else str(e)

    def attributes(attrs) -> list[dict]:
        return [{"name": a.name, "type": a.type.name, "value": (
            ([ref(e) for e in references(a.value, a.array)] if a.array else ref(a.value))
            if a.type == AttrType.ELEMENT else a.value)} for a in attrs]

    return {"encoding": d.encoding, "encoding_version": d.encoding_version, "format": d.format,
            "format_version": d.format_version, "strings": d.strings,
            "prefix": [attributes(attrs) for attrs in d.prefix],
            "elements": [{"type": e.type, "name": e.name if id(e) not in channel else f"{e.name} (channel "
                          f"{channel[id(e)]})", "id": e.id, "attributes": attributes(e.attributes)}
                         for e in d.elements], "tail": d.tail}


check = Checker(read=dmx.read, validate=validate, write=dmx.write, differs=_differs)
