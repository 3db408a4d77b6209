"""Issue 35: a `.gr2` through the registry's `load` (what `compare` reads): the skeleton file as a core Scene
with its 88 bones in metres, the same skeleton an MDB bound to it gets; an animation file has no skeleton."""
from __future__ import annotations

import pathlib

import numpy as np

from skinbridge import formats
from skinbridge.core.compare import compare_scenes
from skinbridge.core.fileio import read_bytes
from skinbridge.io_mdb.gr2 import gr2, skeleton as gr2_skeleton
from skinbridge.io_mdb.mdb import convert

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"
ANIMATION = GR2_DIR / "ovr_p_ddf_glaive01.GR2"
HEAD = GR2_DIR / "ovr_P_HEF_head83.MDB"


def _load(path: pathlib.Path):
    spec = formats.identify_file(path)
    assert spec.name == "gr2"
    return spec.get("load")(str(path), read_bytes(str(path)), True, ())


def test_skeleton_file_loads_as_its_skeleton_in_metres():
    scene, warnings = _load(SKELETON)
    assert warnings == [] and scene.meshes == []
    skel = scene.skeleton
    assert len(skel) == 88 and skel.names[0] == "P_HHF_skel" and skel.bones[0].parent == -1
    # the file's own inverse world transforms (stored by the exporter, only read by us), in metres, undo the
    # binds we compose from the local transforms: within the exporter's float32 drift (docs/nwn2.md §5.3)
    (raw,) = gr2_skeleton.skeletons(gr2.read(SKELETON.read_bytes()))
    inverse = np.stack([b.inverse_world for b in raw.bones]).astype(np.float64)
    inverse[:, :3, 3] /= raw.units_per_metre
    product = skel.binds() @ inverse - np.eye(4)
    assert np.abs(product[:, :3, :3]).max() < 2e-4
    assert np.abs(product[:, :3, 3]).max() < 1e-4  # metres: 4e-5 of the 2.2 m extent is 9e-5
    head = skel.bones[skel.index("Head")].bind[:3, 3]
    assert 1.7 < head[2] < 1.9  # a standing woman's head in metres, Z up
    assert [b.deform for b in skel.bones] == [not n.startswith("ap_") for n in skel.names]


def test_skeleton_compares_equal_to_the_head_bound_to_it():
    a, _ = _load(SKELETON)
    b, _ = convert.load(str(HEAD), read_bytes(str(HEAD)))
    result = compare_scenes(a, b, rest=True)
    assert [d.part for d in result.differences] == ["mesh"] * 3  # counts: the skeleton file has no mesh
    assert "skeleton: 88 bones in A, 88 in B, 88 by the same name" in result.notes


def test_animation_file_loads_without_a_skeleton():
    scene, warnings = _load(ANIMATION)
    assert scene.skeleton is None and scene.meshes == []
    assert warnings == []  # its animations are the scene's (scene.animations), not warnings


def test_a_part_without_its_skeleton_says_a_convert_loses_its_weights(tmp_path):
    alone = tmp_path / HEAD.name  # no .gr2 beside it
    alone.write_bytes(HEAD.read_bytes())
    scene, warnings = convert.load(str(alone), alone.read_bytes())
    assert scene.skeleton is None
    [w] = [w for w in warnings if "without a skeleton" in w]
    assert w.startswith("5 SKIN packet(s) without a skeleton (P_HHF_skel not found)")
    assert "a convert writes the meshes rigid" in w and "--skeleton-path" in w
