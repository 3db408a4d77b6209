"""Hostile `.ani` files in the three layouts (docs/urho.md §4.1–§4.4; io_urhox/motion/uani.py docstring):
classic Urho3D UANI, UrhoX UANI version 2, rbfx UAN2 versions 1..4 with variant (attribute) tracks."""
from __future__ import annotations

import struct

from .hostile_cases import ANY, REJECT, SEMANTIC, VALID, WARN, Case, Layout, count_attacks, poison

KEYS = [(0.0, (0, 0, 0), (1, 0, 0, 0), (1, 1, 1)), (0.5, (0, 1, 0), (0.7071, 0.7071, 0, 0), (1, 2, 1))]


def _key(b: Layout, prefix: str, mask: int, key) -> None:
    t, pos, rot, scale = key
    b.put(f"{prefix} time", "f", t)
    if mask & 1:
        b.put(f"{prefix} position", "3f", *pos)
    if mask & 2:
        b.put(f"{prefix} rotation", "4f", *rot)
    if mask & 4:
        b.put(f"{prefix} scale", "3f", *scale)


def classic(magic: str = "UANI", version: int | None = None, variant_tracks: bool = True) -> Layout:
    """Classic Urho3D (magic UANI, no version) or rbfx (UAN2 + version) with two bone tracks."""
    b = Layout()
    b.raw("magic", magic.encode())
    if version is not None:
        b.put("version", "I", version)
    b.cstring("animation name", "Walk")
    b.put("length", "f", 0.5)
    b.put("track count", "I", 2)
    weights = 0 if version is None or version < 3 else 3 if version >= 4 else 1
    for i, (name, mask) in enumerate((("root", 7), ("child", 2))):
        b.cstring(f"track {i} name", name)
        b.put(f"track {i} channel mask", "B", mask)
        if weights:
            b.put(f"track {i} weights", f"{weights}f", *([1.0] * weights))
        b.put(f"track {i} key count", "I", len(KEYS))
        for k, key in enumerate(KEYS):
            _key(b, f"track {i} key {k}", mask, key)
    if version is not None and version >= 2:
        tracks = _variant_tracks(version) if variant_tracks else []
        b.put("variant track count", "I", len(tracks))
        for i, raw in enumerate(tracks):
            b.raw(f"variant track {i}", raw)
    b.at["end"] = len(b.buf)
    return b


def _variant_head(name: str, vtype: int, interpolation: int, version: int, count: int) -> bytes:
    head = name.encode() + b"\0" + bytes([vtype, interpolation]) + struct.pack("<f", 0.5)
    if version >= 3:
        head += struct.pack("<f", 1.0)
    return head + struct.pack("<I", count)


def _variant_tracks(version: int) -> list[bytes]:
    floats = _variant_head("alpha", 3, 1, version, 2) + struct.pack("<ffff", 0, 0.0, 0.5, 1.0)
    # a VARIANTMAP key: time, VLE count 1, key hash, item type STRING, "hi"
    vmap = _variant_head("meta", 15, 0, version, 1) + struct.pack("<f", 0.25) + b"\x01" + struct.pack("<I", 7) \
        + b"\x09hi\0"
    return [floats, vmap]


def urhox(interpolation: int = 1, version: int = 2) -> Layout:
    b = Layout()
    b.raw("magic", b"UANI")
    b.put("version", "I", version)
    b.put("length", "f", 0.5)
    b.put("track count", "I", 1)
    name = b"root"
    b.put("track 0 name length", "I", len(name))
    b.raw("track 0 name", name)
    b.put("track 0 interpolation", "B", interpolation)
    b.put("track 0 key count", "I", len(KEYS))
    for k, key in enumerate(KEYS):
        _key(b, f"track 0 key {k}", 7, key)
    b.put("trigger count", "I", 0)
    b.put("metadata count", "I", 0)
    b.at["end"] = len(b.buf)
    return b


def _variant_file(raw: bytes, version: int = 4) -> bytes:
    """An rbfx file whose only variant track is `raw` (a variant-track record)."""
    b = classic("UAN2", version, variant_tracks=False)
    data = bytearray(b.bytes())
    struct.pack_into("<I", data, b.at["variant track count"], 1)
    return bytes(data) + raw


def _nested(depth: int, version: int = 4) -> bytes:
    value = b"\x01\x0e" * depth + b"\x01\x00"  # VLE 1 then item type VARIANTVECTOR, `depth` times; then NONE
    return _variant_file(_variant_head("deep", 14, 0, version, 1) + struct.pack("<f", 0) + value, version)


UNCHECKED = None  # io_urhox/motion/convert.py to_core warns with uani.check's findings


def _floats(b: Layout, prefix: str, labels: dict[str, int]) -> list[Case]:
    out = []
    for n, (label, k) in enumerate(labels.items()):
        for kind, data in poison(b.buf, b.at[label] + 4 * k, n):
            out.append(Case(f"{prefix}: {label}[{k}] = {kind}", data, SEMANTIC, f"non-finite {label}", UNCHECKED))
    return out


def cases() -> list[Case]:
    out: list[Case] = []
    layouts = {"urho3d": classic(), "urhox": urhox(), "rbfx v1": classic("UAN2", 1), "rbfx v2": classic("UAN2", 2),
               "rbfx v3": classic("UAN2", 3), "rbfx v4": classic("UAN2", 4)}
    for p, b in layouts.items():
        out.append(Case(f"{p}: base", b.bytes(), WARN if "variant track count" in b.at else VALID, "base"))
        counts = [c for c in b.at if c.endswith("count") and not c.startswith("metadata")
                  and c != "trigger count"]
        out += count_attacks(b, counts, p)
        for label, at in b.at.items():
            if label not in ("magic", "end"):
                out.append(Case(f"{p}: cut before {label}", b.bytes()[:at], REJECT, "truncated"))
        out.append(Case(f"{p}: trailing bytes", b.bytes() + b"\x00\x01", WARN, "bytes after the layout"))
    c = layouts["urho3d"]
    out += _floats(c, "urho3d", {"length": 0, "track 0 key 1 time": 0, "track 0 key 0 position": 1,
                                 "track 0 key 1 rotation": 0, "track 0 key 0 scale": 2,
                                 "track 1 key 1 rotation": 3})
    out += [
        Case("urho3d: unterminated animation name", b"UANI" + b"Walk" * 8, REJECT, "string without terminator"),
        Case("urho3d: cut inside track 1 name", c.cut("track 1 name", 3), REJECT, "string without terminator"),
        Case("urho3d: times go backwards", c.set("track 0 key 1 time", -1.0), SEMANTIC, "keys out of order",
             UNCHECKED),
        Case("urho3d: channel mask 0 (time-only keys)", _mask(c, 0), ANY, "no channels"),
        Case("urho3d: channel mask 0xFF (high bits)", _mask(c, 0xFF), ANY, "unknown mask bits"),
        Case("urho3d: magic UANX", c.set("magic", b"UANX", fmt="4s"), REJECT, "magic"),
        Case("urho3d: only the magic", b"UANI", REJECT, "magic only"),
        Case("urho3d: zero tracks", b"UANI" + b"\0" + struct.pack("<fI", 1.0, 0), VALID, "empty animation"),
        Case("urho3d: zero-length animation, keys at 0", c.set("length", 0.0), ANY, "length 0"),
        Case("urho3d: negative length", c.set("length", -1.0), ANY, "negative length"),
    ]
    x = layouts["urhox"]
    out += _floats(x, "urhox", {"length": 0, "track 0 key 0 time": 0, "track 0 key 1 rotation": 2})
    out += [
        Case("urhox: name length past the end", x.set("track 0 name length", len(x.buf)), REJECT, "string > file"),
        Case("urhox: name length 2^32-1", x.set("track 0 name length", 0xFFFFFFFF), REJECT, "string > file"),
        Case("urhox: name not UTF-8", x.set("track 0 name", b"\xff\xfe\x00\xc3", fmt="4s"), ANY, "bad UTF-8"),
        Case("urhox: interpolation 7", x.set("track 0 interpolation", 7), WARN, "unknown interpolation"),
        Case("urhox: version 15", x.set("version", 15), WARN, "undocumented version"),
        Case("urhox: trigger count 1, no trigger bytes", x.set("trigger count", 1), WARN, "unknown trigger layout"),
        Case("urhox: metadata count 2^32-1", x.set("metadata count", 0xFFFFFFFF), WARN, "kept raw"),
    ]
    r = layouts["rbfx v4"]
    out += _floats(classic("UAN2", 4, variant_tracks=False), "rbfx v4", {"track 0 weights": 1})
    out += [
        Case("rbfx: version 0", r.set("version", 0), REJECT, "version out of range"),
        Case("rbfx: version 5", r.set("version", 5), REJECT, "version out of range"),
        Case("rbfx: variant type 30", _variant_file(_variant_head("x", 30, 0, 4, 0)), REJECT, "type out of range"),
        Case("rbfx: variant type 255", _variant_file(_variant_head("x", 255, 0, 4, 0)), REJECT, "type out of range"),
        Case("rbfx: variants nested 17 deep", _nested(17), REJECT, "deep nesting"),
        Case("rbfx: variants nested 10 deep", _nested(10), WARN, "nesting within the limit"),
        Case("rbfx: variants nested 100000 deep", _nested(100000), REJECT, "very deep nesting"),
        Case("rbfx: VLE count 2^28-1", _variant_file(_variant_head("b", 10, 0, 4, 1) + b"\0\0\0\0"
                                                      + b"\xff\xff\xff\x7f"), REJECT, "buffer size > file"),
        Case("rbfx: string vector count > file", _variant_file(_variant_head("s", 23, 0, 4, 1) + b"\0\0\0\0"
                                                                + b"\xff\x7f"), REJECT, "count > file"),
        Case("rbfx: unterminated string variant", _variant_file(_variant_head("s", 9, 0, 4, 1) + b"\0\0\0\0abc"),
             REJECT, "string without terminator"),
        Case("rbfx: custom variant with a type hash", _variant_file(_variant_head("c", 27, 0, 4, 1) + b"\0" * 4
                                                                     + b"\x01\0\0\0"), REJECT, "unknown size"),
        Case("rbfx: custom variant without a type hash", _variant_file(_variant_head("c", 27, 0, 4, 1) + b"\0" * 8),
             WARN, "empty custom"),
        Case("rbfx: spline string track", _variant_file(_variant_head("s", 9, 3, 4, 1) + b"\0\0\0\0a\0b\0c\0"),
             WARN, "tangents of variable size"),
        Case("rbfx: spline float track cut in its tangents", _variant_file(_variant_head("f", 3, 3, 4, 1)
                                                                            + b"\0" * 12), REJECT, "truncated"),
        Case("rbfx: variant key count 2^32-1", _variant_file(_variant_head("f", 3, 0, 4, 0xFFFFFFFF)), REJECT,
             "count"),
        Case("rbfx: variant map item type 200", _variant_file(_variant_head("m", 15, 0, 4, 1) + b"\0\0\0\0\x01"
                                                               + b"\0\0\0\0" + b"\xc8"), REJECT, "item type"),
    ]
    return out


def _mask(b: Layout, mask: int) -> bytes:
    """Track 1 with another channel mask, its keys re-laid for it (so the layout stays consistent)."""
    head = b.bytes()[:b.at["track 1 channel mask"]]
    body = Layout()
    body.put(None, "B", mask)
    body.put(None, "I", len(KEYS))
    for key in KEYS:
        _key(body, "k", mask, key)
    return head + body.bytes()


def seeds() -> list[tuple[str, bytes]]:
    out = [("generated urhox", urhox().bytes()), ("generated urhox step", urhox(0).bytes())]
    out += [(f"generated UAN2 v{v}", classic("UAN2", v).bytes()) for v in (1, 2, 3, 4)]
    out.append(("generated UAN2 nested variants", _nested(6)))
    return out
