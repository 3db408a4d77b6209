"""Hostile VMD motions, built field by field (layout: docs/mmd.md §3): header, bone keys, morph
keys, then the optional groups (camera + light), self-shadow, property (show / IK)."""
from __future__ import annotations

import struct

from .hostile_cases import ANY, REJECT, SEMANTIC, VALID, WARN, Case, Layout, count_attacks, poison

SIGNATURE = b"Vocaloid Motion Data 0002"


def _name(text: str, size: int) -> bytes:
    return text.encode("cp932").ljust(size, b"\0")


def build() -> Layout:
    b = Layout()
    b.raw("signature", SIGNATURE.ljust(30, b"\0"))
    b.raw("model name", _name("初音ミク", 20))
    b.put("bone key count", "I", 2)
    for i, name in enumerate(("センター", "左足ＩＫ")):
        p = f"bone key {i}"
        b.raw(f"{p} name", _name(name, 15))
        b.put(f"{p} frame", "I", 10 * i)
        b.put(f"{p} position", "3f", 0, float(i), 0)
        b.put(f"{p} rotation", "4f", 0, 0, 0, 1)
        b.raw(f"{p} interpolation", bytes([20, 20, 0, 0, 20, 20, 20, 20, 107, 107, 107, 107, 107, 107, 107, 107] * 4))
    b.put("morph key count", "I", 1)
    b.raw("morph key 0 name", _name("まばたき", 15))
    b.put("morph key 0 frame", "I", 5)
    b.put("morph key 0 weight", "f", 1.0)
    b.put("camera key count", "I", 1)
    b.put("camera key 0 frame", "I", 0)
    b.put("camera key 0 distance", "f", -45)
    b.put("camera key 0 position", "3f", 0, 10, 0)
    b.put("camera key 0 rotation", "3f", 0, 0, 0)
    b.raw("camera key 0 interpolation", bytes([20, 107, 20, 107] * 6))
    b.put("camera key 0 view angle", "I", 30)
    b.put("camera key 0 perspective", "B", 0)
    b.put("light key count", "I", 1)
    b.put("light key 0 frame", "I", 0)
    b.put("light key 0 color", "3f", 0.6, 0.6, 0.6)
    b.put("light key 0 direction", "3f", -0.5, -1, 0.5)
    b.put("self-shadow key count", "I", 1)
    b.put("self-shadow key 0 frame", "I", 0)
    b.put("self-shadow key 0 mode", "B", 1)
    b.put("self-shadow key 0 distance", "f", 0.1)
    b.put("property key count", "I", 1)
    b.put("property key 0 frame", "I", 0)
    b.put("property key 0 visible", "B", 1)
    b.put("property key 0 IK state count", "I", 2)
    for k, name in enumerate(("左足ＩＫ", "右足ＩＫ")):
        b.raw(f"property key 0 IK {k} name", _name(name, 20))
        b.put(f"property key 0 IK {k} enabled", "B", k)
    b.at["end"] = len(b.buf)
    return b


OPTIONAL_GROUP_STARTS = ("camera key count", "self-shadow key count", "property key count")


def cases() -> list[Case]:
    b = build()
    out = [Case("base", b.bytes(), VALID, "base"), Case("header only (49 bytes)", b.bytes()[:49], REJECT, "short")]
    out += count_attacks(b, [label for label in b.at if label.endswith("count")], "VMD")
    for label, at in b.at.items():
        if label in ("signature", "end"):
            continue
        expect = WARN if label in OPTIONAL_GROUP_STARTS else REJECT
        out.append(Case(f"VMD: cut before {label}", b.bytes()[:at], expect, "truncated"))
    for label, k in {"bone key 0 position": 1, "bone key 1 rotation": 3, "morph key 0 weight": 0,
                     "camera key 0 distance": 0, "light key 0 direction": 2, "self-shadow key 0 distance": 0}.items():
        for kind, data in poison(b.buf, b.at[label] + 4 * k, len(out)):
            out.append(Case(f"VMD: {label}[{k}] = {kind}", data, SEMANTIC, f"non-finite {label}"))
    out += [
        Case("VMD: signature of version 1 ('Vocaloid Motion Data file')",
             b.set("signature", b"Vocaloid Motion Data file".ljust(30, b"\0"), fmt="30s"), REJECT, "old version"),
        Case("VMD: signature garbage", b.set("signature", b"\xff" * 30, fmt="30s"), REJECT, "signature"),
        Case("VMD: bone name without NUL, not cp932", b.set("bone key 0 name", b"\x81" * 15, fmt="15s"), ANY,
             "name"),
        Case("VMD: model name cut mid-character", b.set("model name", b"a" * 19 + b"\x82", fmt="20s"), ANY, "name"),
        Case("VMD: frame 2^32-1", b.set("bone key 1 frame", 0xFFFFFFFF), ANY, "huge frame"),
        Case("VMD: all-zero quaternion", b.set("bone key 0 rotation", 0, 0, 0, 0), ANY, "zero quaternion"),
        Case("VMD: shadow mode 9", b.set("self-shadow key 0 mode", 9), ANY, "unknown mode"),
        Case("VMD: camera group without its light count", b.cut("light key count"), REJECT, "partial group"),
        Case("VMD: trailing bytes", b.bytes() + b"\0\0\0", WARN, "bytes after the property group"),
        Case("VMD: property key cut inside its IK states", b.cut("property key 0 IK 1 name", 5), REJECT,
             "truncated"),
        Case("VMD: 10000 bone keys", _many_keys(10_000), VALID, "many keys"),
    ]
    return out


def _many_keys(n: int) -> bytes:
    b = build()
    key = b.bytes()[b.at["bone key 0 name"]:b.at["bone key 1 name"]]
    head = b.bytes()[:b.at["bone key count"]] + struct.pack("<I", n) + key * n
    return head + b.bytes()[b.at["morph key count"]:]


def seeds() -> list[tuple[str, bytes]]:
    return [("generated VMD with every group", build().bytes())]
