"""The command line on DMX: `convert --to dmx` writes the model, one animation DMX per action and the QC naming
them, `compare` finds the output folder equal to its source, and `--motion` puts an animation DMX onto a DMX
model."""
from __future__ import annotations

import pytest

from conftest import run_cli

pytestmark = [pytest.mark.blender, pytest.mark.slow]


def test_convert_fox_to_dmx_and_compare(testdata, tmp_path):
    out = tmp_path / "fox"
    r = run_cli("convert", testdata / "gltf" / "Fox.glb", "--to", "dmx", "-o", out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["Fox.dmx", "Fox.qc", "Run.dmx", "Survey.dmx", "Walk.dmx"]
    r = run_cli("compare", testdata / "gltf" / "Fox.glb", out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "result: same within the tolerances" in r.stdout
    assert "animations: 3 in A, 3 in B, 3 by name" in r.stdout


def test_convert_a_dmx_model_with_a_dmx_motion(testdata, tmp_path):
    """Fox as DMX, then its model with its Walk DMX as `--motion`, written as SMD: the reference and Walk."""
    dmx_out, smd_out = tmp_path / "dmx", tmp_path / "smd"
    assert run_cli("convert", testdata / "gltf" / "Fox.glb", "--to", "dmx", "-o", dmx_out).returncode == 0
    r = run_cli("convert", dmx_out / "Fox.dmx", "--motion", dmx_out / "Walk.dmx", "--to", "smd", "-o", smd_out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in smd_out.iterdir()) == ["Fox.qc", "Fox.smd", "Walk.smd"]
    assert '$sequence "Walk" "Walk.smd" fps 24' in (smd_out / "Fox.qc").read_text()
