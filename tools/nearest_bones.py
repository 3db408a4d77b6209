"""Every skinned MDB of a folder against its GR2 skeleton: the share of vertices whose heaviest bone is among the
3 bones nearest to the vertex, per reading of "nearest" (docs/nwn2.md §5.4, "Nearest bones").

    PYTHONPATH=<folder holding the skinbridge package> python tools/nearest_bones.py DIR [--pair prefix|lookup]

A part's skeleton: with `--pair prefix` (the default) the `.gr2` of the same folder whose name shares the part's
first 6 characters (`P_HFF_Head83.MDB` and `P_HFF_skel83.GR2`), else none; with `--pair lookup` the one the
importer finds (io_mdb/gr2/bind.py: the first `.gr2` beside it holding the skeleton the SKIN packets name).
Prints one row per part and a total per reading; exits 1 when no part was paired.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the measurement shared with tests/mdb/test_gr2_nearest_bones.py

from skinbridge.io_mdb.gr2 import bind, gr2, skeleton  # noqa: E402
from skinbridge.io_mdb.mdb import convert, mdb  # noqa: E402
from support import nearest_bones as nb  # noqa: E402

READINGS = [("origin", "all"), ("segment", "all"), ("segment", "reachable"), ("segment", "used")]


def _skeleton(part: pathlib.Path, m: mdb.MdbFile, pair: str) -> tuple[str, skeleton.Gr2Skeleton] | None:
    if pair == "lookup":
        names = convert.skin_skeleton_names(m)
        return bind.find_skeleton(names[0], [str(part.parent)]) if names else None
    for g in sorted(part.parent.iterdir()):
        if g.suffix.lower() == ".gr2" and g.name[:6].lower() == part.name[:6].lower():
            found = skeleton.skeletons(gr2.read(g.read_bytes()))
            if found:
                return str(g), found[0]
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=pathlib.Path)
    ap.add_argument("--pair", choices=("prefix", "lookup"), default="prefix")
    args = ap.parse_args(argv)
    totals = {r: [0, 0] for r in READINGS}
    print("part | skeleton | vertices | " + " | ".join(f"{a}/{b}" for a, b in READINGS))
    for part in sorted(p for p in args.folder.rglob("*") if p.suffix.lower() == ".mdb"):
        m = mdb.read(part.read_bytes())
        packets = [p for p in m.packets if isinstance(p, mdb.MeshPacket) and p.type == "SKIN"]
        found = _skeleton(part, m, args.pair) if packets else None
        if not found:
            continue
        rig = nb.Rig(found[1])
        cells = []
        for reading in READINGS:
            hit, n = map(sum, zip(*nb.hits(packets, rig, *reading).values()))
            totals[reading][0] += hit
            totals[reading][1] += n
            cells.append(f"{100 * hit / n:.1f} %")
        print(f"{part.relative_to(args.folder)} | {pathlib.Path(found[0]).name} | {n} | " + " | ".join(cells))
    if not totals[READINGS[0]][1]:
        print("no skinned part with a skeleton", file=sys.stderr)
        return 1
    print("all | | " + str(totals[READINGS[0]][1]) + " | "
          + " | ".join(f"{100 * h / n:.1f} %" for h, n in totals.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
