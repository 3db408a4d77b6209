"""The GR2 reading budget where Blender runs (issue 45, items 1, 2 and 8; docs/nwn2.md §5.4): an MDB beside a GR2
bomb and a 5 GB sparse `.gr2` converts and imports as it does beside its skeleton alone, with a warning naming
each file passed over, within 1 GB of the same command's peak memory; a `--motion` that loops is refused in one
line. Each command runs in a child under the 3 GB address space of commands that start Blender."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import sys

import pytest

from support import limited
from support.hostile import hostile_gr2_forge as forge

from skinbridge.io_mdb.gr2 import MAGIC

pytestmark = [pytest.mark.blender, pytest.mark.slow]

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
HEAD = GR2_DIR / "ovr_P_HEF_head83.MDB"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"


def skeleton_bomb(claim: int) -> bytes:
    return forge.bomb(claim, source=SKELETON)  # a skeleton's bomb: the search decompresses it
ROOT = pathlib.Path(__file__).resolve().parents[2]
GIGABYTE = 1 << 30
# a child that imports this checkout as `skinbridge`, registers the add-on and runs the MDB import operator
IMPORT = (
    "import json, pathlib, shutil, sys, tempfile\n"
    "link = pathlib.Path(tempfile.mkdtemp(prefix='skinbridge-pkg-')) / 'skinbridge'\n"
    f"link.symlink_to({str(ROOT)!r}, target_is_directory=True)\n"
    "sys.path.insert(0, str(link.parent))\n"
    "import bpy\n"
    "import skinbridge\n"
    "skinbridge.register()\n"
    "result = bpy.ops.import_scene.skinbridge_mdb(filepath=sys.argv[1])\n"
    "rigs = [o for o in bpy.data.objects if o.type == 'ARMATURE']\n"
    "print(json.dumps([sorted(result), [len(r.data.bones) for r in rigs], sorted(o.name for o in bpy.data.objects)]))\n"
    "shutil.rmtree(str(link.parent), True)\n"
    # the bpy 4.5 wheel can hang in its own teardown after a script ends (blender/compat.py needs_hard_exit): the
    # scene is printed, so leave at once
    "sys.stdout.flush()\n"
    "import os\n"
    "os._exit(0)\n")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """good/: the head and its skeleton; hostile/: the same, after a 5 GB sparse .gr2 (Granny magic, then holes)
    and a bomb (58 sections claiming 24 MiB each of one shared stream; its root holds a Skeletons pointer, so the
    search decompresses it), both sorting before the skeleton."""
    root = tmp_path_factory.mktemp("gr2-beside")
    out = {}
    for name in ("good", "hostile"):
        out[name] = root / name
        out[name].mkdir()
        shutil.copy(HEAD, out[name] / "head.mdb")
        shutil.copy(SKELETON, out[name] / "skel.gr2")
    with open(out["hostile"] / "a_big.gr2", "wb") as fh:
        fh.write(MAGIC)
        fh.truncate(5 << 30)
    (out["hostile"] / "b_bomb.gr2").write_bytes(skeleton_bomb(24 << 20))
    (root / "loop.gr2").write_bytes(forge.empty_loop())
    out["loop"] = root / "loop.gr2"
    yield out
    os.unlink(out["hostile"] / "a_big.gr2")


def _env(tmp_path: pathlib.Path) -> dict:
    return dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "blender-user"))


def _passed_over(stderr: str, folder: pathlib.Path) -> None:
    lines = [ln for ln in stderr.splitlines() if "not read while looking for skeleton P_HHF_skel" in ln]
    assert len(lines) == 2, stderr[-3000:]
    assert str(folder / "a_big.gr2") in lines[0] and "above the 67108864-byte limit" in lines[0]
    assert str(folder / "b_bomb.gr2") in lines[1] and "budget" in lines[1]


def test_convert_of_an_mdb_beside_a_bomb_and_a_5_gb_gr2_passes_over_both(folders, tmp_path):
    runs = {}
    for name in ("good", "hostile"):
        runs[name] = limited.cli("convert", folders[name] / "head.mdb", "--to", "smd", "-o", tmp_path / name,
                                 address_space=limited.BLENDER_LIMIT, timeout=60, env=_env(tmp_path))
        assert runs[name].returncode == 0, runs[name].stderr[-3000:]
    good, hostile = runs["good"], runs["hostile"]
    _passed_over(hostile.stderr, folders["hostile"])
    assert sorted(os.listdir(tmp_path / "hostile")) == sorted(os.listdir(tmp_path / "good")) == ["head.qc", "head.smd"]
    for name in ("head.qc", "head.smd"):
        assert (tmp_path / "hostile" / name).read_bytes() == (tmp_path / "good" / name).read_bytes()
    assert hostile.peak_rss <= good.peak_rss + GIGABYTE, (hostile.peak_rss, good.peak_rss)
    assert hostile.seconds < good.seconds + 10


def test_the_import_operator_beside_a_bomb_and_a_5_gb_gr2_builds_the_same_scene(folders, tmp_path):
    runs = {name: limited.run_limited([sys.executable, "-c", IMPORT, str(folders[name] / "head.mdb")],
                                      limited.BLENDER_LIMIT, 60, env=_env(tmp_path)) for name in ("good", "hostile")}
    for outcome in runs.values():
        assert outcome.returncode == 0, outcome.stderr[-3000:]
    good, hostile = (json.loads(runs[name].stdout.splitlines()[-1]) for name in ("good", "hostile"))
    assert good == hostile and good[0] == ["FINISHED"] and good[1] == [88]
    _passed_over(runs["hostile"].stdout + runs["hostile"].stderr, folders["hostile"])
    assert runs["hostile"].peak_rss <= runs["good"].peak_rss + GIGABYTE
    assert runs["hostile"].seconds < runs["good"].seconds + 10


def test_a_motion_whose_inline_array_loops_two_billion_times_is_refused_in_one_line(folders, tmp_path):
    out = tmp_path / "out"
    outcome = limited.cli("convert", folders["good"] / "head.mdb", "--to", "smd", "-o", out, "--motion",
                          folders["loop"], address_space=limited.BLENDER_LIMIT, timeout=10, env=_env(tmp_path))
    assert limited.one_line_refusal(outcome), (outcome.returncode, outcome.seconds, outcome.stderr[-3000:])
    assert "ExtendedData: count 2147483647 needs at least" in outcome.stderr
    assert not out.exists()
