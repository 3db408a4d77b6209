"""The glb → UrhoX pipeline: textures, PBR material XML, batch conversion, file names."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from conftest import ROOT, run_cli
from skinbridge.core.naming import NameAllocator, safe_file_name
from skinbridge.io_urhox.model import umd2
from support.gltf_numpy import Glb
from support.gltf_write import textured_quads_glb
from support.png_decode import decode_png
from support.bytes_compare import assert_same_bytes


def test_naming_rule_sequence():
    names = NameAllocator()
    got = [names.take(n) for n in ("../../x", "/etc/x", "C:\\x", "con", "a\x00b")]
    assert got == ["x", "x-2", "x-3", "con_", "a_b"]


@pytest.mark.parametrize("raw,safe", [
    ("a|b", "a_b"), ("  .hidden. ", "hidden"), ("", "unnamed"), ("...", "unnamed"), ("LPT9.txt", "LPT9_.txt"),
    ('q"<>*?:', "q______"), ("é" * 80, "é" * 50),
])
def test_naming_rule_cases(raw, safe):
    assert safe_file_name(raw) == safe
    assert len(safe_file_name(raw).encode()) <= 100


@pytest.mark.blender
@pytest.mark.slow
def test_fox_textures_and_material(fox_mdl, testdata):
    out = fox_mdl.parent
    glb = Glb(testdata / "gltf" / "Fox.glb")
    pngs = sorted((out / "Textures").iterdir())
    assert len(pngs) == 1 and pngs[0].suffix == ".png"
    view = glb.json["bufferViews"][glb.json["images"][0]["bufferView"]]
    embedded = glb.bin[view["byteOffset"]:view["byteOffset"] + view["byteLength"]]
    np.testing.assert_array_equal(decode_png(pngs[0].read_bytes()), decode_png(embedded))

    xmls = sorted((out / "Materials").iterdir())
    assert len(xmls) == 1
    root = ET.parse(xmls[0]).getroot()
    assert root.tag == "material"
    assert root.find("technique").get("name").endswith("/PBRDiff.xml")
    diffuse = [t for t in root.findall("texture") if t.get("unit") == "diffuse"]
    assert len(diffuse) == 1
    rel = diffuse[0].get("name")
    assert not os.path.isabs(rel) and (out / rel).resolve() == pngs[0].resolve()
    params = {p.get("name"): [float(x) for x in p.get("value").split()] for p in root.findall("parameter")}
    pbr = glb.json["materials"][0]["pbrMetallicRoughness"]
    np.testing.assert_allclose(params["MatDiffColor"], pbr.get("baseColorFactor", [1, 1, 1, 1]), atol=1e-6)
    np.testing.assert_allclose(params["Metallic"], [pbr.get("metallicFactor", 1.0)], atol=1e-6)
    np.testing.assert_allclose(params["Roughness"], [pbr.get("roughnessFactor", 1.0)], atol=1e-6)
    np.testing.assert_allclose(params["MatEmissiveColor"], glb.json["materials"][0].get("emissiveFactor", [0, 0, 0]))


@pytest.mark.blender
@pytest.mark.slow
def test_batch_with_parallel_jobs(testdata, tmp_path):
    from support.umd2_samples import posed_umd2

    generated = tmp_path / "posed.mdl"
    generated.write_bytes(umd2.write(posed_umd2()))
    corrupt = tmp_path / "corrupt.glb"
    corrupt.write_bytes(b"glTF\x02\x00\x00\x00garbage")
    out = tmp_path / "OUT"
    r = run_cli("convert", testdata / "gltf" / "Fox.glb", generated, corrupt, "--to", "urhox", "-o", out, "-j", "2")
    assert r.returncode == 1
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "corrupt.glb" in errors[0]
    assert (out / "Fox" / "Fox.mdl").stat().st_size == 130698
    assert (out / "Fox" / "Textures").is_dir() and (out / "Fox" / "Materials").is_dir()
    assert umd2.read((out / "posed" / "posed.mdl").read_bytes()).bones
    assert not (out / "corrupt").exists() or not any((out / "corrupt").rglob("*.mdl"))
    assert sorted(p.name for p in out.iterdir()) in (["Fox", "posed"], ["Fox", "corrupt", "posed"])
    assert_same_bytes(generated.read_bytes(), umd2.write(posed_umd2()), umd2.read)  # the input is untouched


@pytest.mark.blender
@pytest.mark.slow
def test_names_from_content_stay_inside_the_output_folder(tmp_path):
    hostile = ["../../x", "/etc/x", "C:\\x", "con", "a|b"]
    src = tmp_path / "in" / "names.glb"
    src.parent.mkdir()
    src.write_bytes(textured_quads_glb(hostile, hostile))
    out = tmp_path / "deep" / "OUT"
    r = run_cli("convert", src, "--to", "urhox", "-o", out)
    assert r.returncode == 0, r.stderr
    expected = ["a_b", "con_", "x", "x-2", "x-3"]
    assert sorted(p.stem for p in (out / "Textures").iterdir()) == expected
    assert sorted(p.stem for p in (out / "Materials").iterdir()) == expected
    everything = {p.resolve() for p in tmp_path.rglob("*") if p.is_file()}
    assert everything == {src.resolve()} | {p.resolve() for p in out.rglob("*") if p.is_file()}


@pytest.mark.blender
def test_cli_as_a_blender_script_converts_identically(fox_mdl, testdata, tmp_path):
    """`blender -b -P cli.py -- convert ...`: Blender runs the file as __main__ with its own argv."""
    out = tmp_path / "as_script"
    boot = (f"import runpy, sys; sys.argv = ['blender', '-b', '-P', {str(ROOT / 'cli.py')!r}, '--', 'convert', "
            f"{str(testdata / 'gltf' / 'Fox.glb')!r}, '--to', 'urhox', '-o', {str(out)!r}]; "
            f"runpy.run_path({str(ROOT / 'cli.py')!r}, run_name='__main__')")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", boot], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    assert_same_bytes((out / "Fox.mdl").read_bytes(), fox_mdl.read_bytes(), umd2.read)
