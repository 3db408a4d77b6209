"""Binding an MDB to its GR2 skeleton without Blender: the lookup by the name inside the GR2 (beside the MDB, then
`--skeleton-path` folders), the core skeleton in the MDB's metres, and SKIN joints through the filtered order."""
from __future__ import annotations

import pathlib
import shutil

import numpy as np
import pytest

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


def _skeleton_moved(names: list[str], offset) -> bytes:
    """The sample skeleton written by our GR2 writer, the bones `names` moved by `offset` metres (their children
    with them: each moved bone's rest placement is recomputed from its bind)."""
    from skinbridge.io_mdb.gr2 import convert as gr2_convert
    from skinbridge.io_mdb.gr2 import export as gr2_export
    from skinbridge.io_mdb.gr2 import gr2, skeleton

    (skel,) = skeleton.skeletons(gr2.read(SKELETON.read_bytes()))
    core = gr2_convert.core_skeleton(skel)
    for b in core.bones:
        if b.name in names:
            b.bind = np.array(b.bind)
            b.bind[:3, 3] += offset
    core.set_rest_from_binds()
    return gr2_export.skeleton_file(core)


def _face_bones() -> list[str]:
    from skinbridge.io_mdb.gr2 import gr2, skeleton

    (skel,) = skeleton.skeletons(gr2.read(SKELETON.read_bytes()))
    return [b.name for b in skel.bones if b.name.startswith("f_")]


MOVES = [(axis, sign * step) for axis in range(3) for sign in (1, -1) for step in (0.01, 0.02)]


@pytest.mark.default_leg
@pytest.mark.parametrize("axis,step", MOVES, ids=[f"{'xyz'[a]}{s * 100:+g}cm" for a, s in MOVES])
def test_of_two_skeletons_of_one_name_the_part_binds_to_the_one_its_vertices_fit(tmp_path, axis, step):
    """Issue 50 item 4: two skeleton files of the name the head's SKIN packets give, both written by our
    writer, one with the face bones `f_*` moved 1 or 2 cm: the head binds to the unmoved one though the moved
    one comes first by name (the old rule's choice), and the report names both."""
    shutil.copy(HEAD, tmp_path / "head.mdb")
    offset = np.zeros(3)
    offset[axis] = step
    (tmp_path / "a_moved.gr2").write_bytes(_skeleton_moved(_face_bones(), offset))
    (tmp_path / "b_right.gr2").write_bytes(_skeleton_moved([], offset))
    scene, warnings = convert.load(str(tmp_path / "head.mdb"), HEAD.read_bytes())
    right, _, _ = gr2_bind.bind(["P_HHF_skel"], str(HEAD))  # the sample skeleton, alone beside the sample head
    heads = scene.skeleton.binds()[:, :3, 3]
    assert np.abs(heads - right.binds()[:, :3, 3]).max() < 1e-5  # every bone, the face bones with them
    (report,) = [w for w in warnings if "skeleton files hold" in w]
    assert f"bound to {tmp_path / 'b_right.gr2'} (its rest fits" in report and "not chosen: a_moved.gr2 (" in report


def test_the_eyes_tell_two_skeletons_apart_by_the_centre_of_the_eyeballs(tmp_path):
    """The eyes are pivots: the eyeball vertices, weighted wholly to `eyeL` or `eyeR`, lie on a sphere about the
    eye bone. Eyes moved 1 cm (as far as the public Genasi skeletons' eyes lie apart) lose to the unmoved ones."""
    shutil.copy(HEAD, tmp_path / "head.mdb")
    (tmp_path / "a_moved.gr2").write_bytes(_skeleton_moved(["eyeL", "eyeR"], np.array([0.0, -0.01, 0.0])))
    (tmp_path / "b_right.gr2").write_bytes(_skeleton_moved([], np.zeros(3)))
    _, path, warnings = gr2_bind.bind(["P_HHF_skel"], str(tmp_path / "head.mdb"),
                                      skins_of=convert.skins_of(mdb.read(HEAD.read_bytes())))
    assert path == str(tmp_path / "b_right.gr2")
    assert "a_moved.gr2 (2 bone differences)" in warnings[0]  # eyeL and eyeR, nothing else


def test_skeletons_the_vertices_cannot_tell_apart_leave_the_first_by_name_and_info_lists_them(tmp_path):
    shutil.copy(HEAD, tmp_path / "head.mdb")
    right = _skeleton_moved([], np.zeros(3))
    (tmp_path / "a.gr2").write_bytes(right)
    (tmp_path / "b.gr2").write_bytes(right)
    scene, warnings = convert.load(str(tmp_path / "head.mdb"), HEAD.read_bytes())
    (report,) = [w for w in warnings if "skeleton files hold" in w]
    assert report == (f"2 skeleton files hold P_HHF_skel: bound to {tmp_path / 'a.gr2'} (the part's SKIN vertices "
                      "tell them apart at no bone, so the first by name); not chosen: b.gr2 (0 bone differences)")
    from skinbridge.io_mdb.mdb import info

    (tmp_path / "b.gr2").write_bytes(_skeleton_moved(_face_bones(), np.array([0.0, 0.02, 0.0])))
    found = info.info(HEAD.read_bytes(), str(tmp_path / "head.mdb"))["skeleton_files"]
    assert found["file"] == str(tmp_path / "a.gr2") and found["skeleton"] == "P_HHF_skel"
    assert [c["file"] for c in found["candidates"]] == [str(tmp_path / "a.gr2"), str(tmp_path / "b.gr2")]
    assert found["candidates"][0]["bone_differences"] < found["candidates"][1]["bone_differences"]
    alone = info.info(HEAD.read_bytes(), str(HEAD))["skeleton_files"]
    assert alone["candidates"] == [{"file": str(SKELETON)}]  # one file: nothing to fit against


def test_a_file_whose_root_has_no_skeletons_pointer_is_known_to_hold_none_without_decompressing():
    from skinbridge.io_mdb.gr2 import export as gr2_export
    from skinbridge.io_mdb.gr2 import gr2, skeleton
    from skinbridge.core import model as cm

    for path in sorted(GR2_DIR.iterdir()):
        if path.suffix.lower() == ".gr2":
            data = path.read_bytes()
            assert gr2.may_hold_skeletons(data) == bool(skeleton.skeletons(gr2.read(data))), path.name
    assert gr2.may_hold_skeletons(_skeleton_moved([], np.zeros(3)))  # our writer's skeleton file
    motion = gr2_export.animation_file(cm.Animation("a", 1.0, []), "P_HHF_skel")
    assert not gr2.may_hold_skeletons(motion) and not skeleton.skeletons(gr2.read(motion))
    assert gr2.may_hold_skeletons(b"not a granny file")  # what does not parse is left to the full read
