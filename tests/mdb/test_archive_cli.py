"""Issue 50 item 1 on the command line: an input named `pack.hak:member.mdb` (when no file has that name) is read
from the pack by `info`, `check`, `compare`, `render` and `convert`, the part finding its skeleton in its own pack;
a hostile pack or a member it lacks is one error line, and nothing is written."""
from __future__ import annotations

import pathlib

import pytest

from conftest import run_cli

from skinbridge import cli
from skinbridge.io_mdb.archive import archive

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
HEAD = GR2_DIR / "ovr_P_HEF_head83.MDB"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"


@pytest.fixture
def pack(tmp_path) -> pathlib.Path:
    path = tmp_path / "heads.hak"
    path.write_bytes(archive.write_erf([("ovr_P_HEF_head83.mdb", HEAD.read_bytes()),
                                        ("ovr_P_HEF_skel83.gr2", SKELETON.read_bytes())]))
    return path


def test_info_check_and_compare_read_a_member(pack, capsys):
    member = f"{pack}:ovr_P_HEF_head83.mdb"
    assert cli.main(["info", member]) == 0
    assert f'"file": "{member}"' in capsys.readouterr().out
    assert cli.main(["check", member]) == 0
    assert "roundtrip: identical" in capsys.readouterr().out
    # the loose head beside its skeleton: the packed one binds the one in its pack, bone for bone
    assert cli.main(["compare", member, str(HEAD), "--rest"]) == 0
    out = capsys.readouterr().out
    assert "(88 bones" in out and "result: same within the tolerances" in out, out


def test_a_member_the_pack_lacks_or_a_hostile_pack_is_one_line(pack, tmp_path, capsys):
    assert cli.main(["info", f"{pack}:nothing.mdb"]) == 1
    assert capsys.readouterr().err.strip() == f"error: {pack}:nothing.mdb: field member name: {pack} holds no member " \
                                              "nothing.mdb"
    bad = tmp_path / "bad.hak"
    bad.write_bytes(archive.write_erf([("..x.mdb".replace("..", "ab"), b"NWN2")]).replace(b"abx", b"..x"))
    assert cli.main(["check", f"{bad}:abx.mdb"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a plain file name" in err, err


@pytest.mark.blender
@pytest.mark.slow
def test_convert_a_member_names_the_output_after_it(pack, tmp_path):
    out = tmp_path / "out"
    r = run_cli("convert", f"{pack}:ovr_P_HEF_head83.mdb", "--to", "mdb", "-o", out, "--hak", "mine")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["mine.hak", "ovr_P_HEF_head83.mdb"]
    assert (out / "ovr_P_HEF_head83.mdb").read_bytes() == HEAD.read_bytes()  # through Blender, byte for byte
    assert sorted(p.name for p in tmp_path.iterdir()) == ["heads.hak", "out"]
    # the pack read is an input of the run: a --hak of its name beside it is refused, the pack left as it was
    before = pack.read_bytes()
    r = run_cli("convert", f"{pack}:ovr_P_HEF_head83.mdb", "--to", "mdb", "-o", tmp_path, "--hak", "heads")
    assert r.returncode != 0 and f"it is the input {pack}" in r.stderr, r.stderr
    assert pack.read_bytes() == before and not (tmp_path / "ovr_P_HEF_head83.mdb").exists()
