"""The bench script reports Blender import and export seconds for Luka."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.slow]

pytest.importorskip("bpy")
BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench" / "pmx_blender.py"


def test_bench_prints_import_and_export_seconds(testdata):
    done = subprocess.run([sys.executable, str(BENCH), "--repeat", "1", "--file",
                           str(testdata / "pmx" / "mmdtools_megurine_luka.pmx")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    seconds = {k: float(v) for k, v in re.findall(r"blender (import|export): ([0-9.]+) s", done.stdout)}
    assert set(seconds) == {"import", "export"} and all(0 < s < 30 for s in seconds.values()), done.stdout
    assert "byte-identical to the input: True" in done.stdout
