"""Issue 50 item 3: `render` and `compare` take `--skeleton-path` (a folder or an archive), as `convert` does: the
shared head alone in a folder, its skeleton elsewhere (a folder, a hak pack) binds with it and compares bone for
bone with the loose head beside its skeleton; without it the head has no bones."""
from __future__ import annotations

import os
import pathlib

import pytest

from conftest import run_cli
from support.png_decode import decode_png

from skinbridge import cli
from skinbridge.io_mdb.archive import archive

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
HEAD = GR2_DIR / "ovr_P_HEF_head83.MDB"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"


@pytest.fixture
def apart(tmp_path) -> tuple[pathlib.Path, pathlib.Path, pathlib.Path]:
    """(the head alone in a folder, a folder holding its skeleton, a hak pack holding it)."""
    part, lib = tmp_path / "part", tmp_path / "lib"
    part.mkdir()
    lib.mkdir()
    os.symlink(HEAD, part / "head.mdb")
    os.symlink(SKELETON, lib / "skel.gr2")
    pack = tmp_path / "skels.hak"
    pack.write_bytes(archive.write_erf([("skel.gr2", SKELETON.read_bytes())]))
    return part / "head.mdb", lib, pack


def test_compare_takes_skeleton_path_a_folder_or_a_pack(apart, capsys):
    head, lib, pack = apart
    # B: the loose head, beside its skeleton
    assert cli.main(["compare", str(head), str(HEAD), "--rest"]) == 1
    captured = capsys.readouterr()
    assert "A: " + str(head) + " (0 bones" in captured.out and "SKIN packet(s) without a skeleton" in captured.err
    for where in (lib, pack):
        assert cli.main(["compare", str(head), str(HEAD), "--rest", "--skeleton-path", str(where)]) == 0
        out = capsys.readouterr().out
        assert f"A: {head} (88 bones" in out and "result: same within the tolerances" in out, out


@pytest.mark.blender
@pytest.mark.slow
def test_render_takes_skeleton_path(apart, tmp_path):
    """One render (a render costs seconds): the head binds its skeleton (without --skeleton-path the import warns
    "SKIN packet(s) without a skeleton", as test_compare_takes_skeleton_path_a_folder_or_a_pack shows for the
    same load) and the sheet is written."""
    head, lib, _ = apart
    bound = tmp_path / "bound.png"
    r = run_cli("render", head, "--skeleton-path", lib, "-o", bound)
    assert r.returncode == 0, r.stderr
    assert "SKIN packet(s) without a skeleton" not in r.stderr, r.stderr
    assert decode_png(bound.read_bytes()).shape[0] > 100
