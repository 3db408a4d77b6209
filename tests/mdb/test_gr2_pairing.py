"""Issue 50 item 4 (partly): when several skeleton files of one folder hold the name a part's SKIN packets give,
the part binds to the first by file name as before, and the import names the others (no public source gives the
game's rule; a fit by the part's vertices was measured and does not tell them apart: docs/nwn2.md §5.4)."""
from __future__ import annotations

import os
import pathlib

from skinbridge.io_mdb.archive import archive
from skinbridge.io_mdb.gr2 import convert as gr2_convert, export as gr2_export, gr2, skeleton as gr2_skeleton
from skinbridge.io_mdb.mdb import convert

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
HEAD = GR2_DIR / "ovr_P_HEF_head83.MDB"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"


def _moved_copy() -> bytes:
    """The shared skeleton written by our writer under the same name, its face bones 2 cm forward."""
    (skel,) = gr2_skeleton.skeletons(gr2.read(SKELETON.read_bytes()))
    core = gr2_convert.core_skeleton(skel)
    for bone in core.bones:
        if bone.name.lower().startswith("f_"):
            bone.bind = bone.bind.copy()
            bone.bind[1, 3] += 0.02
    core.set_rest_from_binds()
    return gr2_export.skeleton_file(core)


def test_the_others_holding_the_name_are_named(tmp_path):
    os.symlink(HEAD, tmp_path / "head.mdb")
    os.symlink(SKELETON, tmp_path / "a_P_HEF_skel83.gr2")
    (tmp_path / "b_P_HFF_skel83.gr2").write_bytes(_moved_copy())
    (tmp_path / "c_walk.gr2").write_bytes(_moved_copy())  # not named as a skeleton file: not read for this
    scene, warnings = convert.load(str(tmp_path / "head.mdb"), HEAD.read_bytes())
    assert len(scene.skeleton) == 88
    (line,) = [w for w in warnings if "is also in" in w]
    assert line.startswith("skeleton P_HHF_skel is also in b_P_HFF_skel83.gr2: bound to a_P_HEF_skel83.gr2"), line
    # inside a pack the same: the head and both skeletons packed together
    pack = tmp_path / "all.hak"
    pack.write_bytes(archive.write_erf([("head.mdb", HEAD.read_bytes()), ("a_skel.gr2", SKELETON.read_bytes()),
                                        ("b_skel.gr2", _moved_copy())]))
    _, warnings = convert.load(f"{pack}:head.mdb", HEAD.read_bytes())
    (line,) = [w for w in warnings if "is also in" in w]
    assert line.startswith("skeleton P_HHF_skel is also in all.hak:b_skel.gr2: bound to all.hak:a_skel.gr2"), line
    _, warnings = convert.load(str(HEAD), HEAD.read_bytes())
    assert not any("is also in" in w for w in warnings)  # the shared folder holds one skeleton file
