"""The corpus runner (`bench/corpus DIR`) on a small folder of sample files copied from ../shared/testdata:
its table counts each stage per format and kind, pairs a motion with its model, records a motion without one
and a file no format claims, and names the cause of every difference."""
from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.slow]

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def corpus(tmp_path, testdata) -> pathlib.Path:
    folder = tmp_path / "corpus"
    (folder / "mdb").mkdir(parents=True)
    (folder / "urho").mkdir()
    (folder / "lone").mkdir()
    for name in ("kaedrin_fx_skydome_black.mdb", "ovr_w_rapr221_b.mdb"):
        shutil.copy(testdata / "mdb" / name, folder / "mdb")
    for name in ("Ninja.mdl", "Ninja_Walk.ani"):
        shutil.copy(testdata / "urho3d" / name, folder / "urho")
    shutil.copy(testdata / "urho3d" / "Ninja_Idle1.ani", folder / "lone")  # no model beside it
    (folder / "lone" / "noise.mdb").write_bytes(b"not a model at all")
    (folder / "lone" / "readme.txt").write_text("no format claims .txt: not tried")
    return folder


def _run(folder: pathlib.Path, out: pathlib.Path) -> tuple[subprocess.CompletedProcess, dict]:
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "corpus"), str(folder), "-j", "1", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p, json.loads(out.read_text())


def test_corpus_table_counts_and_causes(corpus, tmp_path):
    p, report = _run(corpus, tmp_path / "corpus.json")
    rows = {(g["format"], g["kind"]): g for g in report["summary"]}
    assert set(rows) == {("mdb", "model"), ("umd2", "model"), ("uani", "motion"), ("?", "?")}
    mdb = rows[("mdb", "model")]
    # both samples come back byte-identical through Blender (tests/mdb/test_mdb_blender.py keeps them so)
    assert (mdb["tried"], mdb["info"], mdb["check"], mdb["codec"], mdb["blender"], mdb["compare"]) == (2, 2, 2, 2, 2, 2)
    umd2 = rows[("umd2", "model")]
    assert (umd2["tried"], umd2["info"], umd2["check"], umd2["codec"], umd2["no Blender step"]) == (1, 1, 1, 1, 0)
    uani = rows[("uani", "motion")]
    assert (uani["tried"], uani["codec"], uani["no Blender step"]) == (2, 2, 1)
    assert rows[("?", "?")]["tried"] == 1  # the noise; readme.txt is no format's file

    files = {pathlib.Path(r["file"]).name: r for r in report["files"]}
    assert files["Ninja_Walk.ani"]["model"] == str(corpus / "urho" / "Ninja.mdl")
    # the defaults: File › Export of an imported Urho3D model starts with the profile it was imported with
    assert files["Ninja.mdl"]["export_settings"] == {}
    assert files["Ninja_Idle1.ani"]["causes"]["blender"]["cause"] == "needs a model"
    assert files["noise.mdb"]["causes"]["info"]["cause"].startswith("FormatError: ")
    for r in report["files"]:  # every stage that failed names its cause
        for stage in ("info", "check", "codec", "blender", "compare"):
            if r.get(stage) is False:
                assert r["causes"][stage]["cause"], (r["file"], stage)

    lines = p.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("format"))
    assert "codec identical" in lines[head] and "Blender identical" in lines[head]
    assert any(line.split()[:8] == ["mdb", "model", "2", "2", "2", "2", "2", "2"] for line in lines)
    assert any("? / info: 1  FormatError: " in line and "lone/noise.mdb" in line for line in lines)
    assert any("uani / blender: 1  needs a model" in line for line in lines)
