"""The `skinbridge` command line: info, convert errors, help."""
from __future__ import annotations

import json
import struct

import pytest

from conftest import run_cli

pytestmark = pytest.mark.blender


def _info(*paths):
    r = run_cli("info", *paths)
    docs, buf = [], ""
    for line in r.stdout.splitlines(keepends=True):
        buf += line
        if line.startswith("}"):
            docs.append(json.loads(buf))
            buf = ""
    return r, docs


def test_info_on_the_fox_we_wrote(fox_mdl):
    r, [doc] = _info(fox_mdl)
    assert r.returncode == 0, r.stderr
    # Fox.glb (testdata README): 1728 vertices, 576 triangles, 24 joints
    counts = (doc["format"], doc["version"], doc["vertices"], doc["triangles"], doc["bones"])
    assert counts == ("UMD2", 2, 1728, 576, 24)
    assert doc["animations"] == [] and doc["warnings"] == []


def test_info_on_a_classic_animation(testdata):
    path = testdata / "urho3d" / "Ninja_Walk.ani"
    data = path.read_bytes()
    # independent reading of the header: "UANI", cstring name, f32 length, u32 track count
    end = data.index(b"\0", 4)
    name = data[4:end].decode()
    length, tracks = struct.unpack_from("<fI", data, end + 1)
    r, [doc] = _info(path)
    assert r.returncode == 0, r.stderr
    [anim] = doc["animations"]
    assert anim["name"] == name == "Walk"
    assert abs(anim["length"] - length) < 1e-7 and anim["tracks"] == tracks == 24
    assert doc["warnings"] == []


def test_info_on_several_files_and_a_bad_one(testdata, tmp_path):
    bad = tmp_path / "bad.mdl"
    bad.write_bytes(b"UMD2\x05\x00")
    r, docs = _info(testdata / "urho3d" / "Box.mdl", bad)
    assert r.returncode == 1
    assert len(docs) == 1 and docs[0]["format"] == "UMDL"
    assert "bad.mdl" in r.stderr and "offset" in r.stderr


def test_convert_reports_a_missing_or_unreadable_input(tmp_path):
    junk = tmp_path / "junk.mdl"
    junk.write_bytes(b"not a model")
    r = run_cli("convert", tmp_path / "missing.glb", junk, "--to", "urhox", "-o", tmp_path / "out")
    assert r.returncode == 1
    assert "missing.glb" in r.stderr and "junk.mdl" in r.stderr and "magic" in r.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.mdl"))


def test_convert_refuses_name_with_several_inputs(tmp_path):
    r = run_cli("convert", "a.glb", "b.glb", "--to", "urhox", "-n", "X")
    assert r.returncode == 2 and "one input" in r.stderr


def test_help_lists_the_commands():
    r = run_cli("--help")
    assert r.returncode == 0
    for cmd in ("convert", "info", "demo"):
        assert cmd in r.stdout


@pytest.mark.slow
def test_demo_runs_and_checks(tmp_path):
    r = run_cli("demo", "-o", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "UrhoX model (UMD2)" in r.stdout and " ok" in r.stdout
    assert (tmp_path / "Humanoid.mdl").stat().st_size > 0


def test_check_pmx_sample_and_a_corrupt_copy(testdata, tmp_path):
    sample = testdata / "pmx" / "babylonmmd_constraint_test.pmx"
    r = run_cli("check", sample)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "roundtrip: identical" in r.stdout and "0 error(s)" in r.stdout
    data = bytearray(sample.read_bytes())
    # header: "PMX " f32 version, u8 globals count N, N globals; then 4 text buffers; then i32 vertex count
    n = data[8]
    pos = 9 + n
    for _ in range(4):
        pos += 4 + int.from_bytes(data[pos:pos + 4], "little")
    data[pos:pos + 4] = (10**7).to_bytes(4, "little")
    bad = tmp_path / "bad.pmx"
    bad.write_bytes(bytes(data))
    r = run_cli("check", bad)
    assert r.returncode == 1
    assert f"offset {pos}" in r.stdout or f"@ {pos}" in r.stdout, r.stdout
