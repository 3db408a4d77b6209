"""`skinbridge diff` cases of bench/scale: two files of N records that differ in every record, so the walk and the
placing of offsets run over all of them while the output stays at the default 50 lines (a VMD of N bone keys:
the numpy columns; an SMD of N bones: one Python object per bone)."""
from __future__ import annotations

import pathlib
import struct


def _vmd(n: int, shift: int) -> bytes:
    key = b"".join(struct.pack("<15sI3f4f64s", f"b{k % 1000}".encode(), k + shift, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                               1.0, bytes(64)) for k in range(n))
    return b"Vocaloid Motion Data 0002\0\0\0\0\0" + b"model".ljust(20, b"\0") + struct.pack("<I", n) + key + bytes(16)


def _vmd_keys(n: int, folder: pathlib.Path) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a.vmd").write_bytes(_vmd(n, 0))
    (folder / "b.vmd").write_bytes(_vmd(n, 1))
    return ["diff", str(folder / "a.vmd"), str(folder / "b.vmd")]


def _smd(n: int, name: str) -> str:
    nodes = "".join(f'{k} "{name}{k}" {k - 1}\n' for k in range(n))
    bones = "".join(f"{k} 0 0 1 0 0 0\n" for k in range(n))
    return f"version 1\nnodes\n{nodes}end\nskeleton\ntime 0\n{bones}end\n"


def _smd_bones(n: int, folder: pathlib.Path) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a.smd").write_text(_smd(n, "bone"))
    (folder / "b.smd").write_text(_smd(n, "Bone"))
    return ["diff", str(folder / "a.smd"), str(folder / "b.smd")]


CASES = [dict(name="diff vmd keys", n=200_000, build=_vmd_keys, what="bone keys, every one's frame different"),
         dict(name="diff smd bones", n=20_000, build=_smd_bones, what="bones, every one's name different")]
