"""Binding an MDB to its GR2 skeleton without Blender: the lookup by the name inside the GR2 (beside the MDB, then
`--skeleton-path` folders), the core skeleton in the MDB's metres, and SKIN joints through the filtered order."""
from __future__ import annotations

import pathlib
import shutil

import numpy as np

from skinbridge import formats
from skinbridge.io_mdb import EXPORT_OPTIONS
from skinbridge.io_mdb.gr2 import bind as gr2_bind
from skinbridge.io_mdb.mdb import convert, mdb

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
HEAD = GR2_DIR / "ovr_P_HEF_head83.MDB"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"


def test_the_skeleton_beside_the_head_is_found_by_the_name_inside_it():
    m = mdb.read(HEAD.read_bytes())
    names = convert.skin_skeleton_names(m)
    assert names == ["P_HHF_skel"]  # no file of that name: the GR2 names it inside
    skeleton, path, warnings = gr2_bind.bind(names, str(HEAD))
    assert path == str(SKELETON) and warnings == []
    assert len(skeleton.bones) == 88 and skeleton.names[56] == "Head"
    head = skeleton.bones[56].bind[:3, 3]
    assert np.allclose(head, [0.0, -0.0765, 1.8104], atol=1e-4)  # metres, Z up: the head's height
    assert not skeleton.bones[skeleton.names.index("ap_hand_left")].deform


def test_skeleton_path_folders_are_searched_after_the_mdbs_own(tmp_path):
    part = tmp_path / "part"
    lib = tmp_path / "lib"
    part.mkdir()
    lib.mkdir()
    shutil.copy(HEAD, part / "head.mdb")
    names = convert.skin_skeleton_names(mdb.read(HEAD.read_bytes()))
    skeleton, path, warnings = gr2_bind.bind(names, str(part / "head.mdb"))
    assert skeleton is None and path is None and warnings == []
    scene, warnings = convert.load(str(part / "head.mdb"), HEAD.read_bytes())
    assert scene.skeleton is None and any("--skeleton-path" in w for w in warnings)
    (lib / "not_a_skeleton.gr2").write_bytes(b"nothing")  # passed over
    shutil.copy(SKELETON, lib / "any name.GR2")
    skeleton, path, warnings = gr2_bind.bind(names, str(part / "head.mdb"), str(lib))
    assert path == str(lib / "any name.GR2") and skeleton.name == "P_HHF_skel" and warnings == []


def test_load_binds_every_skin_vertex_to_named_bones():
    scene, warnings = convert.load(str(HEAD), HEAD.read_bytes())
    assert scene.skeleton is not None and len(scene.skeleton.bones) == 88
    names = scene.skeleton.names
    for mesh in scene.meshes:
        live = mesh.weights > 0
        assert (mesh.joints[live] >= 0).all() and (mesh.joints[live] < len(names)).all()
    head = scene.meshes[0]
    heaviest = {names[j] for j in head.joints[np.arange(len(head.joints)), head.weights.argmax(1)]}
    # the cutscene-head mesh: lips on face bones (index below 16), the scalp on Head (index 45 of the body list)
    assert {"Head", "Neck", "f_jaw", "f_um"} <= heaviest and not any(n.startswith("ap_") for n in heaviest)
    assert not any("without a skeleton" in w for w in warnings)


def test_skeleton_path_is_an_option_every_target_takes_and_no_export_property():
    option, takers = formats.option_takers()["skeleton_path"]
    assert option.reading and option.cli_flag == "--skeleton-path"
    assert set(takers) == set(formats.targets())
    assert "skeleton_path" not in {o.name for o in EXPORT_OPTIONS}
