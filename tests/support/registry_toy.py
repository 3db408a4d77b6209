"""What the registry tests share (tests/core/test_registry.py without Blender, test_registry_blender.py with it):
the toy format, everything it is in this file alone (a 16-byte magic, a one-bone model, a codec of a few lines;
docs/architecture.md §8), a quad in it, a 64-byte file of another format named `.mdl` too, and the command line
run in this process."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from skinbridge.core import model as cm
from skinbridge.core.binary import Reader, Writer
from skinbridge.core.errors import FormatError
from skinbridge.core.formatspec import FormatSpec

MAGIC = b"SKINBRIDGE-TOY\x00\x01"  # 16 bytes


@dataclass
class Toy:
    positions: np.ndarray  # (V, 3) float32, Blender axes
    triangles: np.ndarray  # (T, 3) uint32


def toy_read(data: bytes) -> Toy:
    r = Reader(data)
    if r.bytes(16, "magic") != MAGIC:
        raise FormatError("not a toy file", 0, "magic")
    positions = r.array("<f4", 3 * r.u32("vertex count"), "positions").reshape(-1, 3)
    triangles = r.array("<u4", 3 * r.u32("triangle count"), "triangles").reshape(-1, 3)
    if not r.at_end():
        raise FormatError(f"{r.remaining()} bytes after the triangles", len(data) - r.remaining(), "end of file")
    return Toy(positions, triangles)


def toy_write(toy: Toy) -> bytes:
    w = Writer()
    w.bytes(MAGIC)
    w.u32(len(toy.positions))
    w.array(np.asarray(toy.positions, "<f4"))
    w.u32(len(toy.triangles))
    w.array(np.asarray(toy.triangles, "<u4"))
    return w.getvalue()


def toy_semantic(toy: Toy) -> list[str]:
    if len(toy.triangles) and int(toy.triangles.max()) >= len(toy.positions):
        raise FormatError("a triangle names a vertex that does not exist", None, "triangles")
    return []


def toy_scene(toy: Toy, name: str) -> cm.Scene:
    toy_semantic(toy)
    bone = cm.Bone("root", -1, np.eye(4), np.zeros(3), np.array([1.0, 0, 0, 0]), np.ones(3))
    n = len(toy.positions)
    mesh = cm.Mesh(name, toy.positions.astype(np.float32), toy.triangles.astype(np.int32),
                   joints=np.zeros((n, 1), np.int32), weights=np.ones((n, 1), np.float32))
    return cm.Scene(name=name, skeleton=cm.Skeleton(name, [bone]), meshes=[mesh])


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def toy_load(path, data, with_animations, motions=()):
    return toy_scene(toy_read(data), _stem(path)), []


def toy_info(data, path):
    toy = toy_read(data)
    return {"format": "toy", "vertices": len(toy.positions), "triangles": len(toy.triangles)}


def toy_check(path, data, out):
    try:
        toy = toy_read(data)
    except FormatError as e:
        out(f"error: file: {e}")
        return 1
    out("0 error(s), 0 warning(s)")
    out("roundtrip: identical" if toy_write(toy) == data else "roundtrip: differs")
    return 0


def toy_import(context, path, options):
    from skinbridge.blender import scene as bscene

    return bscene.build_scene(context, toy_scene(toy_read(open(path, "rb").read()), _stem(path)), _stem(path)).warnings


def toy_export(context, outdir, name, options):
    from skinbridge.blender import scene as bscene

    scene, warnings = bscene.gather_scene(context)
    parts, offset = [], 0
    tris = []
    for mesh in scene.meshes:
        parts.append(mesh.positions)
        tris.append(mesh.triangles + offset)
        offset += len(mesh.positions)
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, name + ".toy")
    with open(path, "wb") as f:
        f.write(toy_write(Toy(np.concatenate(parts), np.concatenate(tris))))
    return [path], warnings


TOY = FormatSpec(
    name="toy", label="Toy model", kind="model", extensions=(".toy",),
    sniff=lambda head: head[:16] == MAGIC, head=16, target="toy", folder_suffix="_TOY",
    capabilities={"read": toy_read, "write": toy_write, "semantic": toy_semantic, "info": toy_info,
                  "check": toy_check, "load": toy_load, "blender_import": toy_import, "export_target": toy_export})


def quad() -> Toy:
    return Toy(np.array([[0, 0, 0], [1, 0, 0], [1, 0, 1], [0, 0, 1]], np.float32),
               np.array([[0, 1, 2], [0, 2, 3]], np.uint32))


MDLV_64 = b"MDLV0013\0" + bytes(55)  # a Wallpaper Engine puppet head: content decides, not `.mdl`


def cli(capsys, *args) -> tuple[int, str, str]:
    """`skinbridge ARGS` run by cli.main in this process (so a format registered here is seen): status, stdout,
    stderr."""
    from skinbridge import cli as command_line  # only here: the toy format needs no command line

    code = command_line.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err
