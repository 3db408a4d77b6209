"""The smoke bench (`bench/run --smoke`): the S model through every row, in a subprocess, so that CI runs
the benchmark code paths. Figures are not checked against targets here (the machine is shared); only
that every row is present and measured. It runs in the default Blender's leg only (no `blender` mark): its
35 worker processes cost 90 s a leg, and each row's import and export are the format's own, which the
format's Blender-facing tests run on every supported version."""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow]

ROOT = pathlib.Path(__file__).resolve().parents[2]

FORMAT_STAGES = ("codec read", "codec write", "import", "export")
STAGES = {"glTF (Blender)": ("import", "export"), "floor": ("import",)}


def test_smoke_bench_rows(tmp_path):
    out = tmp_path / "bench.json"
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "run"), "--smoke", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    report = json.loads(out.read_text())
    rows = report["rows"]
    assert "S" in report["models"]
    from skinbridge import formats

    benched = [f for f in formats.with_capability("write_scene") if f.has("blender_import")]
    labels = {r["format"] for r in rows if r["size"] == "S" and r["stage"] == "codec read"}
    assert len(labels) == len(benched) >= 2, labels  # one row group per format of the registry
    for fmt, stages in [*STAGES.items(), *((label, FORMAT_STAGES) for label in labels)]:
        for stage in stages:
            found = [r for r in rows if r["size"] == "S" and r["format"] == fmt and r["stage"] == stage]
            assert len(found) == 1, (fmt, stage)
            r = found[0]
            assert r["status"] == "ok", r
            assert r["seconds"] > 0 and r["peak_mib"] > 0, r
    for r in rows:
        assert r["status"] == "ok", r
        if r["stage"] in ("import", "export") and not r["format"].startswith("glTF (") and r["format"] != "floor" \
                and r["size"] != "Luka":
            assert r["x_gltf"] > 0, r
    codec = [r for r in rows if r["size"] == "S" and r["stage"] == "codec read"]
    assert all(r["identical"] for r in codec), codec  # read → write gives back the same bytes
    assert any(line.startswith("S     UMD2+UANI       import") for line in p.stdout.splitlines())
