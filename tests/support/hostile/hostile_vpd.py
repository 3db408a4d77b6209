"""Hostile VPD poses (MikuMikuDance, text; layout: docs/mmd.md, "VPD poses"), built line by line: MMD's layout
(cp932, CRLF, `%f` numbers, MMD's comments) with bone and morph blocks. The codec keeps the file's bytes, so every
file it accepts writes back byte for byte; each case breaks one rule of the layout or one budget."""
from __future__ import annotations

from .hostile_cases import REJECT, VALID, Case

BINARY = False


def lines(bones: int = 2, morphs: int = 1, count: int | None = None) -> list[str]:
    out = ["Vocaloid Pose Data file", "", "初音ミク.osm;\t\t// 親ファイル名",
           f"{bones if count is None else count};\t\t\t\t// 総ポーズボーン数", ""]
    for i in range(bones):
        out += [f"Bone{i}{{{('センター', '左腕')[i % 2]}", f"  0.000000,{i:.6f},-0.000000;\t\t\t\t// trans x,y,z",
                "  0.000000,0.000000,0.382683,0.923880;\t\t// Quaternion x,y,z,w", "}", ""]
    for i in range(morphs):
        out += [f"Morph{i}{{まばたき", "  0.500000;\t\t\t\t// weight", "}", ""]
    return out


def text(rows: list[str], newline: str = "\r\n") -> bytes:
    return (newline.join(rows) + newline).encode("cp932")


def cases() -> list[Case]:
    base = lines()
    return [
        Case("vpd: base", text(base), VALID, "two bones and a morph"),
        Case("vpd: LF", text(base, "\n"), VALID, "Unix line ends"),
        Case("vpd: no morphs", text(lines(morphs=0)), VALID, "MMD's own poses hold bones only"),
        Case("vpd: empty", b"", REJECT, "nothing"),
        Case("vpd: signature only", text(base[:1]), REJECT, "no model name"),
        Case("vpd: count too high", text(lines(count=3)), REJECT, "count above the blocks"),
        Case("vpd: huge count", text(lines(count=1 << 40)), REJECT, "count over the budget"),
        Case("vpd: two translations", text(base[:6] + [base[6]] * 2 + base[7:]), REJECT, "4 numbers expected"),
        Case("vpd: unclosed block", text(base[:-2]), REJECT, "ends inside the morph block"),
        Case("vpd: not Shift-JIS", text(base)[:-20] + b"\x81", REJECT, "a lead byte alone"),
        Case("vpd: binary", b"Vocaloid Pose Data file\r\n" + bytes(range(256)), REJECT, "not text"),
    ]


def seeds() -> list[tuple[str, bytes]]:
    return [("generated pose", text(lines())), ("generated LF pose", text(lines(bones=3, morphs=0), "\n"))]
