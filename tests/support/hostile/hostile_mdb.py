"""Hostile NWN2 MDB files, built field by field (layout: docs/nwn2.md §2).

The base file has one packet of every kind the codec reads: SKIN (three vertices, one face), RIGD, COL2,
WALK (walk flags), COLS, HOOK, HAIR, HELM and a raw TRRN, so that every count and every offset is attacked.
"""
from __future__ import annotations

from .hostile_cases import ANY, REJECT, SEMANTIC, VALID, WARN, Case, Layout, count_attacks, poison

PACKETS = ("SKIN", "RIGD", "COL2", "WALK", "COLS", "HOOK", "HAIR", "HELM", "TRRN")


def _name(b: Layout, label: str, text: str) -> None:
    b.raw(label, text.encode().ljust(32, b"\0"))


def _material(b: Layout, p: str) -> None:
    for m in ("diffuse", "normal", "tint", "glow"):
        _name(b, f"{p} {m} map", f"{m}_tex" if m == "diffuse" else "")
    b.put(f"{p} Kd", "3f", 1, 1, 1)
    b.put(f"{p} Ks", "3f", 0.5, 0.5, 0.5)
    b.put(f"{p} specular level", "f", 1)
    b.put(f"{p} specular power", "f", 10)
    b.put(f"{p} flags", "I", 0)


def _body(b: Layout, t: str) -> None:
    p = t
    if t in ("SKIN", "RIGD", "COL2"):
        _name(b, f"{p} name", f"base_{t}")
        if t == "SKIN":
            _name(b, f"{p} skeleton", "P_HHM_skel")
        _material(b, p)
        b.put(f"{p} vertex count", "I", 3)
        b.put(f"{p} face count", "I", 1)
        for i in range(3):
            v = f"{p} vertex {i}"
            b.put(f"{v} position", "3f", float(i), float(i == 2), 0)
            b.put(f"{v} normal", "3f", 0, 0, 1)
            if t == "SKIN":
                b.put(f"{v} weights", "4f", 0.75, 0.25, 0, 0)
                b.put(f"{v} bones", "4B", 0, 1, 0, 0)
            if t != "COL2":
                b.put(f"{v} tangent", "3f", 1, 0, 0)
                b.put(f"{v} binormal", "3f", 0, -1, 0)
            b.put(f"{v} uvw", "3f", float(i), -float(i == 2), 1)
            if t == "SKIN":
                b.put(f"{v} bone count", "f", 2)
        b.put(f"{p} face 0", "3H", 0, 1, 2)
    elif t == "WALK":
        _name(b, f"{p} name", "base_W")
        b.put(f"{p} ui flags", "I", 0)
        b.put(f"{p} vertex count", "I", 3)
        b.put(f"{p} face count", "I", 2)
        for i in range(3):
            b.put(f"{p} vertex {i}", "3f", float(i), float(i == 2), 0)
        b.put(f"{p} face 0", "3H", 0, 1, 2)
        b.put(f"{p} face 0 flags", "I", 0x41)
        b.put(f"{p} face 1", "3H", 2, 1, 0)
        b.put(f"{p} face 1 flags", "I", 0)
    elif t == "COLS":
        b.put(f"{p} count", "I", 2)
        b.put(f"{p} sphere 0", "If", 1, 0.5)
        b.put(f"{p} sphere 1", "If", 4, 0.25)
    elif t in ("HOOK", "HAIR", "HELM"):
        _name(b, f"{p} name", {"HOOK": "HP_door01", "HAIR": "HFM_Hair", "HELM": "HFM_Helm"}[t])
        if t == "HOOK":
            b.put(f"{p} point type", "H", 0)
            b.put(f"{p} point size", "H", 1)
        else:
            b.put(f"{p} enum", "I", 1)
        b.put(f"{p} position", "3f", 0, 0, 1.5)
        b.put(f"{p} orientation", "9f", 0, 1, 0, -1, 0, 0, 0, 0, 1)
    else:
        b.raw(f"{p} body", bytes(range(24)))


def build() -> Layout:
    # bodies first, to know their sizes; then the file with header, keys and the same bodies
    bodies = {}
    for t in PACKETS:
        body = Layout()
        _body(body, t)
        bodies[t] = body
    b = Layout()
    b.raw("signature", b"NWN2")
    b.put("major", "H", 1)
    b.put("minor", "H", 12)
    b.put("packet count", "I", len(PACKETS))
    at = 12 + 8 * len(PACKETS)
    for t in PACKETS:
        b.raw(f"key {t} type", t.encode())
        b.put(f"key {t} offset", "I", at)
        at += 8 + len(bodies[t].buf)
    for t in PACKETS:
        b.raw(f"{t} type", t.encode())
        b.put(f"{t} size", "I", len(bodies[t].buf))
        start = len(b.buf)
        for label, off in bodies[t].at.items():
            b.at[label] = start + off
            if label in bodies[t].fmt:
                b.fmt[label] = bodies[t].fmt[label]
        b.buf += bodies[t].buf
    return b


def _u32(b: Layout, label: str) -> int:
    return int.from_bytes(b.buf[b.at[label]:b.at[label] + 4], "little")


def _zero_counts(b: Layout, t: str) -> bytes:
    data = bytearray(b.set(f"{t} vertex count", 0))
    at = b.at[f"{t} face count"]
    data[at:at + 4] = bytes(4)
    return bytes(data)


def cases() -> list[Case]:
    b = build()
    p = "MDB"
    out = [Case(f"{p}: base", b.bytes(), VALID, "base")]
    counts = [f"{t} vertex count" for t in ("SKIN", "RIGD", "COL2", "WALK")]
    counts += [f"{t} face count" for t in ("SKIN", "RIGD", "COL2", "WALK")] + ["COLS count", "packet count"]
    out += count_attacks(b, counts, p)
    out += count_attacks(b, [f"{t} size" for t in PACKETS], p)
    for label in ("major", "packet count", "key SKIN offset", "SKIN size", "WALK face count", "HOOK position",
                  "TRRN body"):
        out.append(Case(f"{p}: cut before {label}", b.bytes()[:b.at[label]], REJECT, "truncated"))
    for k, label in enumerate(("SKIN vertex 0 position", "SKIN vertex 1 weights", "RIGD vertex 2 normal",
                               "COL2 vertex 0 uvw", "WALK vertex 1", "HOOK orientation", "HELM position",
                               "SKIN Kd")):
        for what, data in poison(b.buf, b.at[label], k):
            out.append(Case(f"{p}: {label} {what}", data, SEMANTIC, "non-finite float"))
    out += [
        Case(f"{p}: signature NWN1", b.set("signature", b"NWN1", fmt="4s"), REJECT, "magic"),
        Case(f"{p}: version 2.0", b.set("major", 2), WARN, "unknown version"),
        Case(f"{p}: key type differs from packet", b.set("key RIGD type", b"COL3", fmt="4s"), REJECT, "key type"),
        Case(f"{p}: offset backwards", b.set("key RIGD offset", b.at["SKIN type"]), REJECT, "backwards"),
        Case(f"{p}: offset past the end", b.set("key HELM offset", len(b.buf) + 100), REJECT, "outside"),
        Case(f"{p}: offset 0", b.set("key SKIN offset", 0), REJECT, "inside the header"),
        Case(f"{p}: HOOK size 10", b.set("HOOK size", 10), REJECT, "point packet too short"),
        Case(f"{p}: SKIN size one short", b.set("SKIN size", _u32(b, "SKIN size") - 1), REJECT, "size < counts"),
        Case(f"{p}: trailing bytes", b.bytes() + b"\x07\x07", WARN, "bytes after the last packet"),
        Case(f"{p}: unknown packet type", b.set("key TRRN type", b"ZZZZ", fmt="4s")[:b.at["TRRN type"]]
             + b"ZZZZ" + b.bytes()[b.at["TRRN type"] + 4:], WARN, "unknown packet"),
        Case(f"{p}: SKIN face -> vertex 9", b.set("SKIN face 0", 0, 1, 9), SEMANTIC, "vertex index"),
        Case(f"{p}: RIGD face -> vertex 65535", b.set("RIGD face 0", 0xFFFF, 1, 2), SEMANTIC, "vertex index"),
        Case(f"{p}: WALK face -> vertex 3", b.set("WALK face 1", 3, 1, 0), SEMANTIC, "vertex index"),
        Case(f"{p}: SKIN weights sum 2", b.set("SKIN vertex 0 weights", 1, 1, 0, 0), SEMANTIC, "weights sum"),
        Case(f"{p}: SKIN bone count 9", b.set("SKIN vertex 1 bone count", 9.0), SEMANTIC, "bone count"),
        Case(f"{p}: SKIN bone index 255", b.set("SKIN vertex 0 bones", 255, 255, 255, 255), ANY, "bone index"),
        Case(f"{p}: SKIN empty skeleton", b.set("SKIN skeleton", bytes(32), fmt="32s"), SEMANTIC, "skeleton"),
        Case(f"{p}: 32-byte name", b.set("RIGD name", b"N" * 32, fmt="32s"), VALID, "unterminated name"),
        Case(f"{p}: WALK reserved flag bits", b.set("WALK face 0 flags", 0xFFFFFFFF), SEMANTIC, "walk flags"),
        Case(f"{p}: COLS radius -1", b.set("COLS sphere 0", 1, -1.0), SEMANTIC, "radius"),
        Case(f"{p}: COLS bone 2^32-1", b.set("COLS sphere 1", 0xFFFFFFFF, 0.5), ANY, "bone index"),
        Case(f"{p}: HAIR shortening 7", b.set("HAIR enum", 7), SEMANTIC, "enum"),
        Case(f"{p}: HELM hiding 0xFFFFFFFF", b.set("HELM enum", 0xFFFFFFFF), SEMANTIC, "enum"),
        Case(f"{p}: WALK ui flags 1", b.set("WALK ui flags", 1), SEMANTIC, "ui flags"),
        Case(f"{p}: RIGD counts 0 (body kept as extra)", _zero_counts(b, "RIGD"), WARN, "empty mesh, surplus bytes"),
        Case(f"{p}: WALK counts 0 (body kept as extra)", _zero_counts(b, "WALK"), WARN, "empty walk mesh"),
        Case(f"{p}: no packets", b.bytes()[:8] + b"\0\0\0\0", VALID, "empty model"),
    ]
    return out


def seeds() -> list[tuple[str, bytes]]:
    return [("generated MDB (every packet type)", build().bytes())]


def shrink(data: bytes, keep: int = 48) -> bytes:
    """The same file with at most `keep` vertices and faces per mesh packet (indices folded into range), so that
    the fuzzer's mutations reach every packet of a large real file."""
    from skinbridge.io_mdb.mdb import mdb

    m = mdb.read(data)
    for p in m.packets:
        if isinstance(p, (mdb.MeshPacket, mdb.WalkPacket)):
            n = min(len(p.vertices), keep)
            p.vertices = p.vertices[:n]
            p.faces = p.faces[:keep].copy()
            if isinstance(p, mdb.WalkPacket):
                p.faces["v"] %= max(n, 1)
            else:
                p.faces %= max(n, 1)
    return mdb.write(m)
