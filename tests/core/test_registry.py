"""The format registry: a format defined in this file alone (a 16-byte magic, a one-bone model, a codec of a
few lines) is registered in-process and every part of SkinBridge that lists formats handles it: the command
line (`info`, `check`, `convert --to toy`, `compare`), the File › Import / Export operators, the drag-and-drop
handler, the hostile suite's generators and the fuzz target. And the content of a file decides its format:
two files both named `x.mdl` go to different formats; `X.MDB` and `x.mdb` to the same.
"""
from __future__ import annotations

import json
import os
import pathlib
import random
import shutil
from dataclasses import dataclass

import numpy as np
import pytest

from skinbridge import formats
from skinbridge.core import model as cm
from skinbridge.core.binary import Reader, Writer
from skinbridge.core.errors import FormatError
from skinbridge.core.formatspec import FormatSpec

MAGIC = b"SKINBRIDGE-TOY\x00\x01"  # 16 bytes


# -- the toy format: everything it is, in this file ------------------------------------------------------------

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


def _quad() -> Toy:
    return Toy(np.array([[0, 0, 0], [1, 0, 0], [1, 0, 1], [0, 0, 1]], np.float32),
               np.array([[0, 1, 2], [0, 2, 3]], np.uint32))


@pytest.fixture
def toy_file(tmp_path):
    path = tmp_path / "quad.toy"
    path.write_bytes(toy_write(_quad()))
    return path


@pytest.fixture
def toy_registered():
    formats.register(TOY)
    yield TOY
    formats.unregister("toy")


def _cli(capsys, *args) -> tuple[int, str, str]:
    from skinbridge import cli

    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# -- without Blender -------------------------------------------------------------------------------------------

def test_toy_through_info_check_and_compare(toy_registered, toy_file, tmp_path, capsys):
    code, out, _ = _cli(capsys, "info", toy_file)
    assert code == 0 and json.loads(out)["vertices"] == 4 and json.loads(out)["triangles"] == 2
    code, out, _ = _cli(capsys, "check", toy_file)
    assert code == 0 and "roundtrip: identical" in out
    same = tmp_path / "same.toy"
    shutil.copy(toy_file, same)
    code, out, _ = _cli(capsys, "compare", toy_file, same, "--rest")
    assert code == 0, out
    moved = _quad()
    moved.positions[2, 2] += 0.5
    other = tmp_path / "moved.toy"
    other.write_bytes(toy_write(moved))
    code, out, _ = _cli(capsys, "compare", toy_file, other, "--rest")
    assert code == 1 and "difference" in out


def test_the_registry_is_code_only(toy_registered):
    assert formats.get("toy") is TOY
    assert formats.identify(MAGIC + bytes(8), "anything.bin") is TOY
    assert "toy" in formats.targets()
    formats.unregister("toy")
    with pytest.raises(FormatError, match="SKINBRIDGE-TOY"):
        formats.identify(MAGIC + bytes(8), "quad.toy")
    formats.register(TOY)


def test_toy_through_the_hostile_generators_and_the_fuzz_target(toy_registered, toy_file, monkeypatch):
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).parent.parent / "hostile"))
    import hostile_registry
    from hostile_cases import exercise, generic_cases, problems

    monkeypatch.setattr(hostile_registry, "_testdata_of", lambda spec: [("quad", toy_file.read_bytes())])
    codec = hostile_registry.codec_for(TOY)
    cases = generic_cases(codec)
    assert len(cases) > 50
    for case in cases:
        out = exercise(codec, case.data)  # a crash (anything but FormatError) raises here
        assert not problems(case, out, has_semantic=True), case.name
    rng = random.Random(7)
    seed = bytearray(toy_file.read_bytes())
    rejected = 0
    for _ in range(2000):  # the fuzz target, in-process
        data = bytearray(seed)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.3:
            data = data[: rng.randrange(len(data))]
        rejected += exercise(codec, bytes(data)).rejected is not None
    assert rejected > 0


# -- content decides -------------------------------------------------------------------------------------------

MDLV_64 = b"MDLV0013\0" + bytes(55)


def test_two_files_named_x_mdl_go_to_their_own_formats(tmp_path, testdata):
    umd2_dir, we_dir = tmp_path / "a", tmp_path / "b"
    umd2_dir.mkdir()
    we_dir.mkdir()
    shutil.copy(testdata / "urho3d" / "Box.mdl", umd2_dir / "x.mdl")
    (we_dir / "x.mdl").write_bytes(MDLV_64)
    assert formats.identify_file(umd2_dir / "x.mdl").name == "umd2"
    puppet = formats.identify_file(we_dir / "x.mdl")
    assert puppet.name != "umd2" and ".mdl" in puppet.extensions


def test_an_mdlv_file_never_reaches_the_urhox_reader(tmp_path, capsys, monkeypatch):
    """With no puppet format registered: one line naming MDLV0013 and .mdl from info, check, convert, render
    and compare, and the UrhoX reader is never called."""
    from skinbridge.io_urhox.model import umd2

    path = tmp_path / "x.mdl"
    path.write_bytes(MDLV_64)
    for spec in [s for s in formats.all_specs() if s.sniff is not None and s.sniff(MDLV_64)]:
        monkeypatch.setattr(formats, "_SPECS", {k: v for k, v in formats._SPECS.items() if v is not spec})

    def never(*args, **kwargs):
        raise AssertionError("the UrhoX reader was called")

    monkeypatch.setattr(umd2, "read", never)
    for args in (("info", path), ("check", path), ("compare", path, path, "--rest")):
        code, out, err = _cli(capsys, *args)
        text = out + err
        assert code != 0 and "MDLV0013" in text and ".mdl" in text and "Traceback" not in text, (args, text)


def test_upper_and_lower_case_extensions_get_the_same_spec(tmp_path, testdata):
    source = sorted((testdata / "mdb").iterdir())[0]
    upper, lower = tmp_path / "X.MDB", tmp_path / "y.mdb"
    shutil.copy(source, upper)
    shutil.copy(source, lower)
    assert formats.identify_file(upper) is formats.identify_file(lower)
    # and where content says nothing, the extension decides without regard to case
    silent = FormatSpec(name="silent", label="Silent", kind="model", extensions=(".zzq",))
    formats.register(silent)
    try:
        assert formats.identify(b"\0" * 64, "A.ZZQ") is silent
        assert formats.identify(b"\0" * 64, "a.zzq") is silent
    finally:
        formats.unregister("silent")


def test_unknown_content_names_its_extension_and_first_bytes():
    with pytest.raises(FormatError) as e:
        formats.identify(b"\x89WHAT\x00\x01\x02" + bytes(60), "thing.Bin")
    assert ".bin" in str(e.value) and "89 57 48 41 54" in str(e.value)
