"""Issue 50 item 3: `bench/corpus` round-trips GR2. Its codec row compares records (our writer stores the sections
the game compresses, so the bytes differ): the shared skeleton and the two glaive animations pass every stage,
through Blender too (File › Export of an untouched import writes the file again byte for byte)."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.slow]

ROOT = pathlib.Path(__file__).resolve().parents[2]
GR2_DIR = ROOT.parent / "shared" / "testdata" / "gr2"


def test_corpus_rows_of_the_shared_gr2_files_pass_every_stage(tmp_path):
    folder = tmp_path / "gr2"
    folder.mkdir()
    for path in sorted(GR2_DIR.glob("*.GR2")):
        os.symlink(path, folder / path.name)
    out = tmp_path / "corpus.json"
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "corpus"), str(folder), "-j", "1", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    rows = {(g["format"], g["kind"]): g for g in json.loads(out.read_text())["summary"]}
    stages = ("tried", "info", "check", "codec", "blender", "compare")
    assert tuple(rows[("gr2", "model")][s] for s in stages) == (1, 1, 1, 1, 1, 1)
    assert tuple(rows[("gr2", "motion")][s] for s in stages) == (2, 2, 2, 2, 2, 2)
