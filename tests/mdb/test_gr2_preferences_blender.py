"""The skeleton folders of the add-on's preferences (README "Neverwinter Nights 2", docs/nwn2.md §5.4): an MDB
import (File › Import, drag and drop) looks for the GR2 skeleton its SKIN packets name beside the MDB, then in
the operator's Skeleton Path, then in the folders the preferences list, in that order."""
from __future__ import annotations

import os
import pathlib

import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.app import preferences  # noqa: E402  (after the bpy check: this module needs Blender)
from skinbridge.blender.ops_common import LAST_OUTCOME  # noqa: E402
from skinbridge.io_mdb.gr2 import convert as gr2_convert, export as gr2_export, gr2, skeleton as gr2_skeleton  # noqa: E402

pytestmark = pytest.mark.blender

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
HEAD = GR2_DIR / "ovr_P_HEF_head83.MDB"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"
HEAD_Z = 1.8104  # the Head bone's rest height in the sample skeleton, metres (tests/mdb/test_gr2_bind.py)
LIFT = 1.0  # metres the test's own copy of the skeleton stands higher, to tell the two apart


def _folder(tmp_path: pathlib.Path, name: str, **links: pathlib.Path) -> pathlib.Path:
    """A folder holding symlinks to the test data (never copies), file name → target."""
    folder = tmp_path / name
    folder.mkdir()
    for file_name, target in links.items():
        os.symlink(target, folder / file_name.replace("_dot_", "."))
    return folder


def _lifted_skeleton(folder: pathlib.Path) -> pathlib.Path:
    """The sample skeleton LIFT metres higher, written by our GR2 writer under the same name P_HHF_skel."""
    (skel,) = gr2_skeleton.skeletons(gr2.read(SKELETON.read_bytes()))
    core = gr2_convert.core_skeleton(skel)
    for bone in core.bones:
        bone.bind = bone.bind.copy()
        bone.bind[2, 3] += LIFT
    core.set_rest_from_binds()
    path = folder / "lifted.gr2"
    path.write_bytes(gr2_export.skeleton_file(core))
    return path


def _import_head(folder: pathlib.Path, **options) -> float | None:
    """Import the head linked in `folder` as a drop does (directory and files); the Head bone's rest height, None
    when no armature was made."""
    before = set(bpy.data.objects)
    assert bpy.ops.import_scene.skinbridge_mdb(directory=str(folder), files=[{"name": "head.mdb"}],
                                               filepath=str(folder / "head.mdb"), **options) == {"FINISHED"}
    rigs = [ob for ob in set(bpy.data.objects) - before if ob.type == "ARMATURE"]
    if not rigs:
        return None
    (rig,) = rigs
    assert len(rig.data.bones) == 88
    return float(rig.data.bones["Head"].head_local[2])


def test_the_head_finds_its_skeleton_through_the_preferences_only(prefs, tmp_path):
    part = _folder(tmp_path, "part", head_dot_mdb=HEAD)
    library = _folder(tmp_path, "library", any_name_dot_GR2=SKELETON)
    assert _import_head(part) is None  # nothing beside the head, nothing listed: no bones
    assert any("skeleton folders of the add-on's preferences" in w for w in LAST_OUTCOME.warnings)
    prefs.folders_skeleton_path.add().path = str(tmp_path / "gone")  # a folder that is gone is passed over
    prefs.folders_skeleton_path.add().path = str(library)
    assert _import_head(part) == pytest.approx(HEAD_Z, abs=1e-4)
    prefs.folders_skeleton_path.clear()
    assert _import_head(part) is None


def test_beside_then_skeleton_path_then_preferences(prefs, tmp_path):
    part = _folder(tmp_path, "part", head_dot_mdb=HEAD)
    given = tmp_path / "given"
    given.mkdir()
    _lifted_skeleton(given)
    library = _folder(tmp_path, "library", skel_dot_gr2=SKELETON)
    prefs.folders_skeleton_path.add().path = str(library)
    assert _import_head(part) == pytest.approx(HEAD_Z, abs=1e-4)  # the preferences' folder
    # the operator's Skeleton Path comes before the preferences
    assert _import_head(part, skeleton_path=str(given)) == pytest.approx(HEAD_Z + LIFT, abs=1e-4)
    beside = _folder(tmp_path, "beside", head_dot_mdb=HEAD, skel_dot_gr2=SKELETON)
    # the MDB's own folder comes first of all
    assert _import_head(beside, skeleton_path=str(given)) == pytest.approx(HEAD_Z, abs=1e-4)


def test_the_folder_list_is_edited_by_its_operators(prefs):
    assert bpy.ops.skinbridge.folder_add(option="skeleton_path") == {"FINISHED"}
    assert bpy.ops.skinbridge.folder_add(option="skeleton_path") == {"FINISHED"}
    prefs.folders_skeleton_path[0].path, prefs.folders_skeleton_path[1].path = "/a", "/b"
    assert bpy.ops.skinbridge.folder_remove(option="skeleton_path", index=0) == {"FINISHED"}
    assert [f.path for f in prefs.folders_skeleton_path] == ["/b"]
    assert preferences.preferred_folders(bpy.context, "skeleton_path") == [os.path.abspath("/b")]
    assert bpy.ops.skinbridge.folder_remove(option="skeleton_path", index=5) == {"CANCELLED"}
    assert bpy.ops.skinbridge.folder_add(option="no_such_option") == {"CANCELLED"}
