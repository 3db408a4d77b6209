"""A PMD written from the format description (docs/mmd.md §2.11), field by field, sharing nothing with the reader
(io_pmx/model/pmd.py): a leg with a knee under an IK, an eye that follows, a base and one skin morph, two materials
(a shared toon with a sphere map, the file's own toon), two rigid bodies and a joint. tests/mmd/test_pmd.py reads
it; the hostile suite (hostile_pmd.py) cuts and smashes it."""
from __future__ import annotations

import struct


def _name(text: str, size: int) -> bytes:
    raw = text.encode("cp932")
    assert len(raw) < size
    return raw + b"\0" + b"\xfd" * (size - len(raw) - 1)  # MMD pads after the NUL with garbage


# bones: (name, parent, tail, type, ik field, position); a leg with a knee under an IK, and an eye that follows
BONES = [
    ("センター", -1, 1, 1, 0, (0.0, 8.0, 0.0)),
    ("左足", 0, 2, 0, 0, (1.0, 10.0, 0.0)),
    ("左ひざ", 1, 3, 4, 0, (1.0, 5.5, -0.2)),
    ("左足首", 2, -1, 0, 0, (1.0, 1.0, 0.0)),
    ("左足ＩＫ", 0, -1, 2, 0, (1.0, 1.0, 0.0)),
    ("頭", 0, 6, 0, 0, (0.0, 18.0, 0.0)),
    ("両目", 5, -1, 0, 0, (0.0, 19.0, -0.5)),
    ("左目", 5, 6, 5, 30, (0.3, 19.0, -0.5)),
]
VERTICES = [((x, y, 0.0), (0.0, 0.0, -1.0), (x / 4, y / 20), b0, b1, w, edge)
            for (x, y, b0, b1, w, edge) in [(0, 0, 3, 3, 100, 0), (2, 0, 3, 3, 100, 0), (1, 6, 2, 1, 60, 0),
                                            (0, 12, 1, 0, 50, 1), (2, 12, 1, 0, 50, 0), (1, 20, 5, 5, 100, 1)]]
INDICES = [0, 1, 2, 2, 3, 4, 3, 4, 5]
BASE = [(3, (0.0, 12.0, 0.0)), (4, (2.0, 12.0, 0.0)), (5, (1.0, 20.0, 0.0))]
SKIN = ("あ", 3, [(2, (0.0, 0.5, 0.0)), (0, (0.1, 0.0, 0.0))])  # base entries 2 and 0: vertices 5 and 3
TOONS = ["toon01.bmp", "toon02.bmp", "mytoon.bmp"] + [f"toon{i:02d}.bmp" for i in range(4, 11)]


def write_pmd(*, extensions: bool = True, physics: bool = True, second_ik: bool = False) -> bytes:
    """`second_ik`: a second IK on 左足ＩＫ (target 左ひざ, link 左足), as some old models have."""
    out = [b"Pmd", struct.pack("<f", 1.0), _name("テスト", 20), _name("comment", 256)]
    out.append(struct.pack("<I", len(VERTICES)))
    for p, n, uv, b0, b1, w, e in VERTICES:
        out.append(struct.pack("<8f2H2B", *p, *n, *uv, b0, b1, w, e))
    out.append(struct.pack("<I", len(INDICES)) + struct.pack(f"<{len(INDICES)}H", *INDICES))
    out.append(struct.pack("<I", 2))
    for diffuse, toon, edge, count, tex in [((1, 0.5, 0.5, 1.0), 1, 1, 6, "skin.png*skin.sph"),
                                            ((0.2, 0.2, 0.2, 0.98), 2, 0, 3, "")]:
        out.append(struct.pack("<4ff3f3fbBI", *diffuse, 5.0, 0.1, 0.1, 0.1, 0.4, 0.3, 0.3, toon, edge, count))
        out.append(_name(tex, 20))
    out.append(struct.pack("<H", len(BONES)))
    for name, parent, tail, kind, ik, pos in BONES:
        out.append(_name(name, 20) + struct.pack("<hhBh3f", parent, tail, kind, ik, *pos))
    out.append(struct.pack("<H", 1 + second_ik) + struct.pack("<HHBHf2H", 4, 3, 2, 40, 0.5, 2, 1))
    if second_ik:
        out.append(struct.pack("<HHBHfH", 4, 2, 1, 10, 0.25, 1))
    out.append(struct.pack("<H", 2))
    out.append(_name("base", 20) + struct.pack("<IB", len(BASE), 0))
    out += [struct.pack("<I3f", i, *p) for i, p in BASE]
    out.append(_name(SKIN[0], 20) + struct.pack("<IB", len(SKIN[2]), SKIN[1]))
    out += [struct.pack("<I3f", i, *p) for i, p in SKIN[2]]
    out.append(struct.pack("<BH", 1, 1))                       # morph list: morph 1
    out.append(struct.pack("<B", 1) + _name("足", 50))          # one bone list
    out.append(struct.pack("<I", 2) + struct.pack("<HBHB", 1, 1, 2, 1))
    if not extensions:
        return b"".join(out)
    out.append(struct.pack("<B", 1) + _name("test", 20) + _name("english", 256))
    out += [_name(f"bone{i}", 20) for i in range(len(BONES))] + [_name("a", 20), _name("Legs", 50)]
    out += [_name(t, 100) for t in TOONS]
    if not physics:
        return b"".join(out)
    out.append(struct.pack("<I", 2))
    for name, bone, shape, pos, mode in [("頭", 5, 0, (0.0, 1.0, 0.0), 0), ("髪", 6, 1, (0.0, -1.0, 0.5), 1)]:
        out.append(_name(name, 20) + struct.pack("<hBHB3f3f3f5fB", bone, 1, 0xFFFE, shape, 1, 1, 1, *pos, 0, 0, 0,
                                                  1.0, 0.5, 0.5, 0.0, 0.5, mode))
    out.append(struct.pack("<I", 1) + _name("首", 20) + struct.pack("<ii24f", 0, 1, *range(24)))
    return b"".join(out)
