"""The command line on SMD / VTA files: info, check, convert --to smd (reference, one animation SMD per action,
VTA for shape keys), compare and render."""
from __future__ import annotations

import pathlib

import pytest

from conftest import run_cli

from skinbridge.io_smd.smd import smd

pytestmark = pytest.mark.blender

SMD_DIR = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "smd"


def test_info_and_check():
    r = run_cli("info", SMD_DIR / "bst_Curve_Armature_BezierCurve_ref.smd",
                SMD_DIR / "bst_ActionFilter_X_Axis_anim.smd")
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert '"triangles": 24' in text and '"frames": 3' in text
    r = run_cli("check", SMD_DIR / "bst_Cube_Armature_GoldSource_ref.smd", SMD_DIR / "bst_Cube_NoArmature_flex.vta")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "roundtrip: identical" in r.stdout and "roundtrip: same tokens" in r.stdout


def test_check_lists_a_cycle_with_its_line(tmp_path):
    bad = tmp_path / "cycle.smd"
    bad.write_bytes(b'version 1\nnodes\n0 "a" 1\n1 "b" 0\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\nend\n')
    r = run_cli("check", bad)
    assert r.returncode == 1
    assert "line 3" in r.stdout or "line 4" in r.stdout
    assert "cycle" in r.stdout


@pytest.mark.slow
def test_convert_fox_to_smd(testdata, tmp_path):
    out = tmp_path / "fox"
    r = run_cli("convert", testdata / "gltf" / "Fox.glb", "--to", "smd", "-o", out)
    assert r.returncode == 0, r.stdout + r.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == ["Fox.qc", "Fox.smd", "Run.smd", "Survey.smd", "Walk.smd"]
    ref = smd.read((out / "Fox.smd").read_bytes())
    assert len(ref.triangles) == 576 and len(ref.nodes) == 24
    assert smd.read((out / "Walk.smd").read_bytes()).kind == "motion"
    # Run's keys from frame 20.8 on lie between whole frames at 24 fps: Run is written at 120 fps (Fox.qc)
    assert "between whole frames" not in r.stdout + r.stderr
    r = run_cli("compare", testdata / "gltf" / "Fox.glb", out)
    assert "meshes: A 1 meshes, 290 vertices, 576 triangles; B 1, 290, 576" in r.stdout, r.stdout
    assert "result: same within the tolerances" in r.stdout, r.stdout


@pytest.mark.slow
def test_convert_cube_and_compare(tmp_path):
    ref = SMD_DIR / "bst_Cube_NoArmature_ref.smd"
    out = tmp_path / "cube"
    r = run_cli("convert", ref, "--to", "smd", "-o", out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["bst_Cube_NoArmature_ref.qc", "bst_Cube_NoArmature_ref.smd"]
    r = run_cli("compare", ref, out / "bst_Cube_NoArmature_ref.smd")
    assert r.returncode == 0 and "same within the tolerances" in r.stdout, r.stdout + r.stderr


@pytest.mark.slow
def test_convert_with_the_flavour_flag(tmp_path):
    """`--flavour GOLDSRC`, the option File › Export calls Flavour: CRLF line ends and no link columns."""
    ref = SMD_DIR / "bst_Cube_Armature_ref.smd"
    out = tmp_path / "gold"
    r = run_cli("convert", ref, "--to", "smd", "--flavour", "GOLDSRC", "-o", out)
    assert r.returncode == 0, r.stdout + r.stderr
    data = (out / ref.name).read_bytes()
    assert smd.read(data).goldsrc and data.count(b"\r\n") == data.count(b"\n")
    assert not smd.read(ref.read_bytes()).goldsrc


@pytest.mark.slow
def test_render(tmp_path):
    png = tmp_path / "cube.png"
    r = run_cli("render", SMD_DIR / "bst_Cube_Armature_ref.smd", "-o", png)
    assert r.returncode == 0, r.stdout + r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
