"""Hostile Valve SMD / VTA text, built line by line (grammar: docs/source.md §2, §3).

The base reference has two nodes, one skeleton frame and two triangles whose vertex lines take each form a
line can have: GoldSrc (no link columns), link count 0, and links. The base VTA has a frame 0 over all six
corners and one named shape. Each case breaks one rule of the grammar or one limit of the reader.
"""
from __future__ import annotations

from .hostile_cases import ANY, MAP_ERROR, REJECT, SEMANTIC, VALID, WARN, Case

BYTE_EXACT = False  # text: the writer formats (numbers within 1e-6), it does not give the file back byte for byte

HEAD = ['version 1', 'nodes', '0 "root" -1', '1 "arm" 0', 'end', 'skeleton', 'time 0',
        '0  0.000000 0.000000 0.000000  0.000000 0.000000 0.000000',
        '1  0.000000 0.000000 1.000000  1.570796 0.000000 0.000000', 'end']
VERTS = ['0  0.000000 0.000000 0.000000  0.000000 0.000000 1.000000  0.000000 0.000000',
         '0  1.000000 0.000000 0.000000  0.000000 0.000000 1.000000  1.000000 0.000000 0',
         '0  0.000000 1.000000 0.000000  0.000000 0.000000 1.000000  0.000000 1.000000 1 1 1.000000',
         '1  1.000000 1.000000 0.000000  0.000000 0.000000 1.000000  1.000000 1.000000 2 0 0.500000 1 0.500000',
         '0  0.000000 1.000000 0.000000  0.000000 0.000000 1.000000  0.000000 1.000000 1 1 1.000000',
         '0  1.000000 0.000000 0.000000  0.000000 0.000000 1.000000  1.000000 0.000000 0']


def lines(verts=None, head=None, tail=("end",)) -> list[str]:
    verts = VERTS if verts is None else verts
    out = list(HEAD if head is None else head) + ["triangles"]
    for k in range(0, len(verts), 3):
        out += ["skin"] + verts[k:k + 3]
    return out + list(tail)


def text(rows: list[str], newline: str = "\n") -> bytes:
    return (newline.join(rows) + newline).encode()


def vta_lines() -> list[str]:
    rows = ['version 1', 'nodes', '0 "root" -1', 'end', 'skeleton', 'time 0', 'time 1 # smile', 'end',
            'vertexanimation', 'time 0']
    rows += [f"{i} {v.split()[1]} {v.split()[2]} {v.split()[3]} 0.000000 0.000000 1.000000"
             for i, v in enumerate(VERTS)]
    rows += ['time 1', '3 1.000000 1.000000 0.500000 0.000000 0.000000 1.000000', 'end']
    return rows


def _with(rows: list[str], at: int, new: str | None) -> list[str]:
    rows = list(rows)
    if new is None:
        del rows[at]
    else:
        rows[at] = new
    return rows


def cases() -> list[Case]:
    base = lines()
    vertex0 = base.index(VERTS[0])
    linked = base.index(VERTS[3])
    c = [
        Case("smd: base reference", text(base), VALID, "every vertex line form"),
        Case("smd: base VTA", text(vta_lines()), VALID, "frame 0 and a named shape"),
        Case("smd: CRLF", text(base, "\r\n"), VALID, "Windows line ends"),
        Case("smd: indented and commented", text(["// Created by Crowbar"] + ["  " + r for r in base]), VALID,
             "indentation and a // comment line"),
        Case("smd: version 2", text(_with(base, 0, "version 2")), REJECT, "only version 1 exists"),
        Case("smd: no version", text(base[1:]), REJECT, "missing version line"),
        Case("smd: empty", b"", REJECT, "nothing"),
        Case("smd: binary", bytes(range(256)) * 4, REJECT, "not text"),
        Case("smd: 8 fields", text(_with(base, vertex0, VERTS[0].rsplit(" ", 1)[0])), REJECT,
             "vertex line with fewer than 9 fields"),
        Case("smd: link count past the line", text(_with(base, linked, VERTS[3].replace(" 2 0 0.5", " 3 0 0.5"))),
             REJECT, "link count above what the line holds"),
        Case("smd: link count 33", text(_with(base, linked, VERTS[3].replace(" 2 0 0.500000 1 0.500000",
                                                                            " 33" + " 1 0.030000" * 33))),
             REJECT, "link count above 32"),
        Case("smd: link count -1", text(_with(base, linked, VERTS[3].replace(" 2 0 0.5", " -1 0 0.5"))), REJECT,
             "negative link count"),
        Case("smd: link count 1.5", text(_with(base, linked, VERTS[3].replace(" 2 0 0.5", " 1.5 0 0.5"))), REJECT,
             "fractional link count"),
        Case("smd: not a number", text(_with(base, vertex0, VERTS[0].replace("1.000000", "one"))), REJECT,
             "a word where a number belongs"),
        Case("smd: two triangle lines", text(_with(base, vertex0 + 2, None)), REJECT,
             "a triangle with fewer than 3 vertex lines"),
        Case("smd: long line", text(_with(base, vertex0, VERTS[0] + " " * (64 << 10))), REJECT, "line over 64 KiB"),
        Case("smd: time without number", text(_with(base, HEAD.index("time 0"), "time")), REJECT, "time line"),
        Case("smd: row before time", text(_with(base, HEAD.index("time 0"), None)), REJECT, "bone row before time"),
        Case("smd: bone row of 6", text(_with(base, 7, HEAD[7].rsplit(" ", 1)[0])), REJECT, "skeleton row fields"),
        Case("smd: node line", text(_with(base, 2, "root -1")), REJECT, "node line without id"),
        Case("smd: cut after triangles", text(base[:-1]), WARN, "block cut by the end at a record boundary"),
        Case("smd: cut inside a triangle", text(base[:-2]), REJECT, "block cut inside a record"),
        Case("smd: nan", text(_with(base, vertex0, VERTS[0].replace("0.000000 0.000000 1.000000", "nan nan nan",
                                                                     1))), SEMANTIC, "NaN normal kept"),
        Case("smd: unknown bone", text(_with(base, linked, VERTS[3].replace(" 2 0 0.5", " 2 9 0.5"))), MAP_ERROR,
             "link bone names no node"),
        Case("smd: unknown parent bone", text(_with(base, vertex0, "7" + VERTS[0][1:])), MAP_ERROR,
             "parent bone names no node"),
        Case("smd: unknown skeleton bone", text(_with(base, 7, "5" + HEAD[7][1:])), MAP_ERROR,
             "skeleton row names no node"),
        Case("smd: parent cycle", text(_with(_with(base, 2, '0 "root" 1'), 3, '1 "arm" 0')), MAP_ERROR,
             "nodes parent each other"),
        Case("smd: duplicate node", text(_with(base, 3, '0 "arm" 0')), MAP_ERROR, "node id twice"),
        Case("smd: small link", text(_with(base, linked, VERTS[3].replace("0.500000 1 0.500000",
                                                                          "0.010000 1 0.500000"))), VALID,
             "links under 0.05 are imported as written"),
        Case("smd: unknown line", text(base[:1] + ["$cd fish"] + base[1:]), WARN, "unknown line skipped"),
        Case("smd: many nodes", text(["version 1", "nodes"] + [f'{i} "n" -1' for i in range((1 << 20) + 1)]
                                     + ["end"]), REJECT, "more than 2^20 nodes"),
        Case("smd: many frames", text(["version 1", "nodes", '0 "r" -1', "end", "skeleton"]
                                      + ["time 0"] * ((1 << 20) + 1) + ["end"]), REJECT, "more than 2^20 frames"),
        Case("smd: huge numbers", text(_with(base, vertex0, VERTS[0].replace("1.000000", "1e308"))), VALID,
             "large but finite"),
        Case("smd: huge id", text(_with(base, vertex0, "99999999999999999999" + VERTS[0][1:])), ANY, "id past int64"),
        Case("smd: vta row past frame 0", text(vta_lines()[:-1] + ["9 0 0 0 0 0 1", "end"]), ANY,
             "shape row of a corner that frame 0 lacks"),
        Case("smd: motion without frames", text(["version 1", "nodes", '0 "r" -1', "end", "skeleton", "end"]),
             VALID, "an empty skeleton block"),
        Case("smd: vta 6 fields", text(_with(vta_lines(), 10, "0 0 0 0 0 1")), REJECT, "flex row fields"),
    ]
    return c


def seeds() -> list[tuple[str, bytes]]:
    return [("generated SMD reference", text(lines())), ("generated VTA", text(vta_lines())),
            ("generated SMD animation", text(HEAD[:-1] + ["time 1", HEAD[7], "time 2", HEAD[8], "end"]))]
