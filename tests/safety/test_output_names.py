"""Names taken from file content (and from input file names) never put a file outside the
output folder: UMD2 model and material names, UANI motion names and their trigger sidecars, PMX texture
paths. glTF texture and material names are covered by test_pipeline.py; VMD names join when a VMD motion
loader exists (the registry's `motion_loader` capability)."""
from __future__ import annotations

import pathlib
import shutil
import struct

import numpy as np
import pytest

from conftest import run_cli

pytestmark = pytest.mark.blender

HOSTILE = ["../../x", "/etc/x", "C:\\x", "con", "a|b"]
EXPECTED = ["a_b", "con_", "x", "x-2", "x-3"]  # the naming rule of docs/architecture.md §7.2, in input order


def _everything(root: pathlib.Path) -> set[pathlib.Path]:
    return {p.resolve() for p in root.rglob("*") if p.is_file()}


def _assert_confined(tmp_path: pathlib.Path, inputs: set[pathlib.Path], out: pathlib.Path) -> None:
    written = _everything(tmp_path) - {p.resolve() for p in inputs}
    assert written, "nothing was written"
    outside = [p for p in written if out.resolve() not in p.parents]
    assert not outside, f"written outside {out}: {outside}"


def test_umd2_model_and_material_names_from_a_hostile_file_name(testdata, tmp_path):
    """Material names of an imported UMD2 come from the file name (`<stem>_<geometry>`)."""
    src = tmp_path / "in" / "a" / "..\\..\\con.mdl"  # one file whose name holds backslashes and `..`
    src.parent.mkdir(parents=True)
    shutil.copyfile(testdata / "urho3d" / "Ninja.mdl", src)
    out = tmp_path / "deep" / "OUT"
    r = run_cli("convert", src, "--to", "urhox", "-o", out)
    assert r.returncode == 0, r.stderr
    _assert_confined(tmp_path, {src}, out)
    assert sorted(p.name for p in out.glob("*.mdl")) == ["con_.mdl"]
    assert sorted(p.stem for p in (out / "Materials").iterdir()) == ["con_0", "con_1"]


def test_blender_material_names_become_safe_material_xml_names(addon, clean_scene, tmp_path):
    import bpy
    from support.blender_scenes import build_posed_scene
    from skinbridge.app.options import ConvertOptions
    from skinbridge.io_urhox import blender_io

    build_posed_scene()
    body = bpy.data.objects["Body"]
    for name in HOSTILE:
        body.data.materials.append(bpy.data.materials.new(name))
    assert [m.name for m in body.data.materials] == HOSTILE
    out = tmp_path / "deep" / "OUT"
    written, _ = blender_io.export_target(bpy.context, str(out), "m", ConvertOptions())
    assert sorted(p.stem for p in (out / "Materials").iterdir()) == EXPECTED
    assert all(out.resolve() in pathlib.Path(p).resolve().parents for p in written)
    _assert_confined(tmp_path, set(), out)


def _classic_ani(name: str, source: bytes) -> bytes:
    """`source` (a classic UANI) with its animation name replaced."""
    end = source.index(b"\0", 4)
    return b"UANI" + name.encode() + b"\0" + source[end + 1:]


def test_uani_motion_names_and_sidecars(testdata, tmp_path):
    src = testdata / "urho3d" / "Ninja.mdl"
    motions = tmp_path / "in"
    motions.mkdir()
    walk = (testdata / "urho3d" / "Ninja_Walk.ani").read_bytes()
    paths = []
    for i, stem in enumerate(["..\\..\\nul", "a|b"]):
        p = motions / f"{stem}.ani"
        p.write_bytes(_classic_ani("../../../evil" if i == 0 else "C:\\evil", walk))
        (motions / f"{stem}.xml").write_text('<animation><trigger time="0.1" type="String" value="../x" />'
                                             "</animation>")
        paths.append(p)
    out = tmp_path / "deep" / "OUT"
    args = ["convert", src, "--to", "urhox", "--profile", "urho3d", "--ani-format", "urho3d", "-o", out]
    for p in paths:
        args += ["--motion", p]
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    _assert_confined(tmp_path, set(motions.iterdir()), out)
    names = sorted(p.name for p in (out / "Animations").iterdir())
    assert names == ["a_b.ani", "a_b.xml", "nul_.ani", "nul_.xml"], names


def _png() -> bytes:
    from skinbridge.core.png import encode_png

    return encode_png(np.full((2, 2, 3), 200, np.uint8))


def test_pmx_texture_paths(tmp_path):
    """PMX texture paths point anywhere (`../../x.png`, absolute, drive letters): an image outside the model's
    folder is not opened (a warning says so), no placeholder stands in for it in the package, and nothing is
    written outside OUT."""
    from support.hostile import hostile_pmx

    model_dir = tmp_path / "models" / "m"
    model_dir.mkdir(parents=True)
    (tmp_path / "x.png").write_bytes(_png())  # what `../../x.png` finds
    b = hostile_pmx.build(2.0, 1)
    old = b"tex/a.png"
    new = b"../../x.png"
    at = b.at["texture 0 length"]
    data = b.bytes()[:at] + struct.pack("<I", len(new)) + new + b.bytes()[at + 4 + len(old):]
    src = model_dir / "m.pmx"
    src.write_bytes(data)
    out = tmp_path / "deep" / "OUT"
    r = run_cli("convert", src, "--to", "urhox", "-o", out)
    assert r.returncode == 0, r.stderr
    _assert_confined(tmp_path, {src, tmp_path / "x.png"}, out)
    assert "'../../x.png' not opened (path climbs out of the model's folder)" in r.stderr
    assert not (out / "Textures").exists()  # the placeholder of the unopened image is not written
