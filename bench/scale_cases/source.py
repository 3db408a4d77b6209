"""Valve Source multipliers for bench/scale: QC projects that name one model file many times ($lod, $body,
bodygroup choices) and a DMX joint chain N deep, each converted to SMD through Blender.

Within Source's own limits (docs/source.md §7: 8 `$lod`s, 32 body parts, 32 choices a body part) a QC converts,
each file it names read and built once; above them it is refused in one line before any file is read (the
`_over` cases time that refusal). The chain is written by our DMX writer (binary 9)."""
from __future__ import annotations

import pathlib
import runpy

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]

# a two-bone model of one triangle: what the QC cases name
REF = """version 1
nodes
0 "root" -1
1 "b1" 0
end
skeleton
time 0
0 0 0 0 0 0 0
1 0 0 1 0 0 0
end
triangles
mat
0 0 0 0 0 0 1 0 0 1 0 1.0
1 1 0 0 0 0 1 1 0 1 1 1.0
0 0 1 0 0 0 1 0 1 1 1 1.0
end
"""


def _project(folder: pathlib.Path, lines: list[str]) -> list[str]:
    (folder / "ref.smd").write_text(REF)
    (folder / "lod.smd").write_text(REF)
    (folder / "m.qc").write_text("\n".join(['$modelname "m.mdl"', *lines]) + "\n")
    return ["convert", str(folder / "m.qc"), "--to", "smd", "-o", str(folder / "out")]


def lods(n: int, folder: pathlib.Path) -> list[str]:
    return _project(folder, ['$body main "ref"'] + [f'$lod {k + 1}\n{{\n\treplacemodel "ref" "lod"\n}}'
                                                   for k in range(n)])


def bodies(n: int, folder: pathlib.Path) -> list[str]:
    return _project(folder, [f'$body b{k} "ref"' for k in range(n)])


def choices(n: int, folder: pathlib.Path) -> list[str]:
    """n bodygroup choices naming one file, 32 to a bodygroup (Source's most)."""
    groups = []
    for g in range(0, n, 32):
        groups.append(f"$bodygroup g{g // 32}\n{{\n" + "".join('\tstudio "ref"\n' for _ in range(min(32, n - g)))
                      + "}")
    return _project(folder, groups)


def chain(n: int, folder: pathlib.Path, command: str = "convert") -> list[str]:
    """A binary DMX whose n joints each hang below the one before, one triangle on the first."""
    runpy.run_path(str(ROOT / "bench" / "_checkout.py"))  # `skinbridge` importable before its first import
    from skinbridge.core import model as cm  # after the line above
    from skinbridge.io_smd.dmx import dmx, write

    skel = cm.Skeleton("chain")
    for k in range(n):
        bind = np.eye(4)
        bind[2, 3] = k + 1.0
        skel.bones.append(cm.Bone(f"j{k}", k - 1, bind, np.array([0, 0, 1.0]), np.array([1.0, 0, 0, 0]),
                                  np.ones(3)))
    mesh = cm.Mesh("tri", np.eye(3, dtype=np.float32), np.array([[0, 1, 2]], np.int32))
    mesh.joints, mesh.weights = np.zeros((3, 1), np.int32), np.ones((3, 1), np.float32)
    path = folder / "chain.dmx"
    path.write_bytes(dmx.write(write.model_dmx(cm.Scene("chain", skeleton=skel, meshes=[mesh]), "chain", [])))
    if command == "check":
        return ["check", str(path)]
    return ["convert", str(path), "--to", "smd", "-o", str(folder / "out")]


CASES = [
    dict(name="source_qc_lods", n=4, build=lods, what="$lod blocks naming one file (8 at most)"),
    dict(name="source_qc_lods_over", n=400, build=lods, what="$lod blocks naming one file, above 8: refused"),
    dict(name="source_qc_bodies", n=16, build=bodies, what="$body lines naming one file (32 at most)"),
    dict(name="source_qc_bodies_over", n=250, build=bodies, what="$body lines naming one file, above 32: refused"),
    dict(name="source_qc_choices", n=256, build=choices, what="bodygroup choices naming one file, 32 a group"),
    dict(name="source_dmx_chain", n=4000, build=chain, what="joints of a DMX chain, each the child of the last"),
    dict(name="source_dmx_chain_check", n=16000, build=lambda n, f: chain(n, f, "check"),
         what="joints of a DMX chain (`check`: read, findings, write-back)"),
]
