"""The sample head's SKIN weights against its GR2 skeleton's rest bones (docs/nwn2.md §5.4, "Nearest bones"),
read from the MDB and GR2 bytes through our codecs only (no mapping, no armature): the SKIN index order of
io_mdb/mdb/bones.py puts each vertex's heaviest bone nearer than any other reading of the indices does, and the share
of vertices whose heaviest bone is among the 3 bones nearest to the vertex is measured per reading of "nearest".
No reading reaches 95 %: the game's weights give the mouth and jaw of the full head mostly to `Head`, among
face bones packed a few centimetres apart (figures and reasons in the docs)."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from skinbridge.io_mdb.gr2 import gr2, skeleton as gr2_skeleton
from skinbridge.io_mdb.mdb import bones, mdb
from support import nearest_bones as nb

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
HEAD = GR2_DIR / "ovr_P_HEF_head83.MDB"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"
FULL_HEAD = "P_HEF_Head83"  # the one packet with the cutscene-head flag and face bones; the others are LODs and eyes


@pytest.fixture(scope="module")
def rig() -> nb.Rig:
    (skel,) = gr2_skeleton.skeletons(gr2.read(SKELETON.read_bytes()))
    return nb.Rig(skel)


@pytest.fixture(scope="module")
def packets() -> list[mdb.MeshPacket]:
    m = mdb.read(HEAD.read_bytes())
    return [p for p in m.packets if isinstance(p, mdb.MeshPacket) and p.type == "SKIN"]


def test_the_stored_bind_pose_is_the_composed_rest_pose(rig):
    assert np.abs(rig.origins - rig.composed).max() < 1e-5  # metres: 7.6e-6 measured


def test_the_skin_index_order_puts_the_heaviest_bone_nearest(rig, packets):
    """Mean distance from a vertex to its heaviest bone (segments) under our order and under the readings it
    rejects: the raw skeleton index, no face-bone rule, Ribcage kept in place."""
    face = [i for i, n in enumerate(rig.names) if n.startswith("f_")]
    kept = [i for i, n in enumerate(rig.names) if not n.startswith(("ap_", "f_"))]

    def orders(head: bool) -> dict[str, list[int]]:
        return {"ours": bones.skin_bone_order(rig.names, head), "raw": list(range(len(rig.names))),
                "no face rule": bones.skin_bone_order(rig.names, False),
                "Ribcage in place": face + kept[len(face):] if head else kept}

    mean = {}
    for name in orders(False):
        d = []
        for p in packets:
            order = orders(bones.uses_head_bones(p.material.flags))[name]
            heaviest = nb.heaviest(p, order)
            all_d = nb.distances(p.vertices["position"].astype(np.float64), rig, "segment")
            d.append(all_d[np.arange(len(heaviest)), heaviest])
        mean[name] = float(np.concatenate(d).mean())
    assert mean["ours"] == pytest.approx(0.0397, abs=5e-4)  # metres
    assert min(v for k, v in mean.items() if k != "ours") > 1.5 * mean["ours"]  # 7.2 cm the nearest other


@pytest.mark.parametrize("reading, candidates, full_head, everything", [
    ("origin", "all", (84, 514), (247, 1051)),       # the first measurement: 23.5 %
    ("segment", "all", (332, 514), (712, 1051)),     # 67.7 %
    ("segment", "reachable", (360, 514), (867, 1051)),  # 82.5 %: the LODs 449 of 479 (no face bones to bind)
    ("origin", "used", (145, 514), (682, 1051)),     # 64.9 %
    ("segment", "used", (398, 514), (935, 1051)),    # 89.0 %: the highest of these readings
])
def test_share_of_vertices_whose_heaviest_bone_is_among_the_3_nearest(rig, packets, reading, candidates,
                                                                       full_head, everything):
    hits = nb.hits(packets, rig, reading, candidates)
    assert hits[FULL_HEAD] == full_head
    assert tuple(map(sum, zip(*hits.values()))) == everything
    if candidates == "used":  # the LODs and eyes weigh 2 bones each: any vertex passes among 3 of them
        assert all(h == n for name, (h, n) in hits.items() if name != FULL_HEAD)


def test_the_folder_tool_prints_the_sample_heads_shares(capsys):
    """tools/nearest_bones.py on the sample folder: the head paired with the skeleton of its prefix, and the
    figures the tests above assert for it."""
    import runpy  # the tool is a script, not a package module

    tool = runpy.run_path(str(pathlib.Path(__file__).resolve().parents[2] / "tools" / "nearest_bones.py"))
    assert tool["main"]([str(GR2_DIR)]) == 0
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines()]
    head = next(r for r in rows if r[0] == HEAD.name)
    assert head[1:] == [SKELETON.name, "1051", "23.5 %", "67.7 %", "82.5 %", "89.0 %"]
