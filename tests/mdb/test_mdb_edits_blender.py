"""Issue 46, the edit campaign's MDB / GR2 faults (docs/testing.md §6): each edit made with bpy as `bench/edits`
makes it (`bench/edit_kinds.apply`), exported with the export operator's defaults or `export_mdb`, then the
written file compared with the shared sample record by record."""
from __future__ import annotations

import pathlib
import shutil
import sys

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.blender import ops_common  # noqa: E402
from skinbridge.core.errors import ExportError  # noqa: E402
from skinbridge.io_mdb.gr2 import gr2  # noqa: E402
from skinbridge.io_mdb.mdb import blender_io, mdb  # noqa: E402

pytestmark = [pytest.mark.blender]

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import edit_kinds  # noqa: E402


def _import(path) -> None:
    assert bpy.ops.import_scene.skinbridge_mdb(filepath=str(path)) == {"FINISHED"}


def _export(tmp_path, name="out.mdb") -> tuple[bytes, list[str]]:
    out = tmp_path / name
    warnings = blender_io.export_mdb(bpy.context, str(out))
    return out.read_bytes(), warnings


@pytest.fixture
def head(testdata, tmp_path):
    """The head and the GR2 skeleton its SKIN packets name, side by side (as in the shared samples)."""
    for name in ("ovr_P_HEF_head83.MDB", "ovr_P_HEF_skel83.GR2"):
        shutil.copy(testdata / "gr2" / name, tmp_path / name)
    return tmp_path / "ovr_P_HEF_head83.MDB"


@pytest.mark.default_leg
@pytest.mark.parametrize("sample", ["mdb/kaedrin_fx_skydome_black.mdb", "mdb/nwnlibd_PLC_MC_BALCONY3.MDB"])
def test_the_model_imported_twice_is_written_as_the_file_was(clean_scene, testdata, tmp_path, sample):
    path = testdata / sample
    _import(path)
    _import(path)
    assert _export(tmp_path)[0] == path.read_bytes()  # the copy the second import left selected
    for ob in bpy.context.view_layer.objects:
        ob.select_set(False)
    bpy.context.view_layer.objects.active = None
    with pytest.raises(ExportError, match="2 MDB models could be exported"):
        _export(tmp_path, "none.mdb")


@pytest.mark.default_leg
def test_a_rigged_model_imported_twice_is_written_as_the_file_was(clean_scene, head, tmp_path):
    _import(head)
    _import(head)
    assert _export(tmp_path)[0] == head.read_bytes()


@pytest.mark.default_leg
def test_a_file_with_a_nan_normal_warns_and_exports_a_moved_vertex(clean_scene, testdata, tmp_path):
    path = testdata / "mdb" / "ovr_P_EEF_DMCB_Helm05.MDB"
    result = blender_io.import_mdb(bpy.context, str(path))
    assert any("not finite numbers" in w and "vertex 106" in w for w in result.warnings)
    edit_kinds.apply("move-vertex")  # vertex 0 of the helm: far from vertex 106
    data, _ = _export(tmp_path)
    skin = mdb.read(path.read_bytes()).of_type("SKIN")[0]
    after = mdb.read(data).of_type("SKIN")[0]
    near = np.zeros(len(skin.vertices), bool)
    near[skin.faces[(skin.faces == 0).any(axis=1)].reshape(-1)] = True
    assert not near[106]
    assert after.vertices[~near].tobytes() == skin.vertices[~near].tobytes()  # vertex 106's NaN included
    assert after.vertices[0]["position"].tobytes() != skin.vertices[0]["position"].tobytes()
    # a vertex of a face of vertex 106 moved: 106's normal and frame are made again, finite
    helm = next(o for o in bpy.data.objects if o.type == "MESH" and o.name.startswith("P_EEF_DMCB_Helm05"))
    other = int(next(v for v in skin.faces[(skin.faces == 106).any(axis=1)][0] if v != 106))
    helm.data.vertices[other].co.z += 0.01
    after = mdb.read(_export(tmp_path, "near.mdb")[0]).of_type("SKIN")[0]
    assert np.isfinite(after.vertices[106]["normal"]).all() and np.isfinite(after.vertices[106]["tangent"]).all()


def test_a_deleted_face_keeps_the_other_vertices_bytes(clean_scene, testdata, tmp_path):
    """The campaign's "rounded UVs" were the records after the deleted face's three vertices, compared by index:
    the written records are the file's, byte for byte."""
    path = testdata / "mdb" / "kaedrin_plc_cus_cliffcc_01.MDB"
    _import(path)
    edit_kinds.apply("delete-faces")  # face 0 of the COL3 packet, and its three vertices, used by no other face
    before, after = mdb.read(path.read_bytes()).packets, mdb.read(_export(tmp_path)[0]).packets
    assert after[0].vertices.tobytes() == before[0].vertices[3:].tobytes()
    assert np.array_equal(after[0].faces, before[0].faces[1:] - 3)
    for a, b in zip(after[1:], before[1:]):
        assert a.vertices.tobytes() == b.vertices.tobytes() and a.faces.tobytes() == b.faces.tobytes()


@pytest.mark.default_leg
def test_a_shape_key_is_named_and_baked_as_shown(clean_scene, testdata, tmp_path):
    path = testdata / "mdb" / "kaedrin_fx_skydome_black.mdb"
    _import(path)
    edit_kinds.apply("add-shape-key")  # a key "Edited" moving vertex 0 (value 1: the mesh shows it)
    ob = next(o for o in bpy.data.objects if o.type == "MESH")
    data, warnings = _export(tmp_path)
    assert any("shape key 'Edited'" in w and "baked" in w for w in warnings)
    before, after = mdb.read(path.read_bytes()).packets[0].vertices, mdb.read(data).packets[0].vertices
    shown = ob.data.shape_keys.key_blocks["Edited"].data[0].co
    assert np.allclose(after["position"][0], shown, atol=0)
    assert after["position"][1:].tobytes() == before["position"][1:].tobytes()
    ob.data.shape_keys.key_blocks["Edited"].value = 0.0  # not shown: the file as it was, the key named
    data, warnings = _export(tmp_path, "zero.mdb")
    assert data == path.read_bytes()
    assert any("shape key 'Edited' is not written" in w for w in warnings)


@pytest.mark.default_leg
@pytest.mark.parametrize("edit, said", [("rename-bone", "bone renamed ('LLeg1' → 'LLeg1_renamed')"),
                                        ("move-bone-rest", "rest pose of bone 'LLeg1' changed")])
def test_a_skeleton_edit_the_mdb_cannot_hold_is_said(clean_scene, head, tmp_path, edit, said):
    _import(head)
    edit_kinds.apply(edit)
    data, warnings = _export(tmp_path)
    assert data == head.read_bytes()  # SKIN packets hold bone indices and the skeleton's name only
    assert any(said in w and "P_HHF_skel (a GR2 file)" in w for w in warnings), warnings


@pytest.mark.default_leg
def test_a_gr2_from_a_file_keeps_where_it_came_from(clean_scene, testdata, tmp_path):
    path = testdata / "gr2" / "ovr_P_HEF_skel83.GR2"
    assert bpy.ops.import_scene.skinbridge_gr2(filepath=str(path)) == {"FINISHED"}
    out = tmp_path / "skel.gr2"
    assert bpy.ops.export_scene.skinbridge_gr2(filepath=str(out)) == {"FINISHED"}
    a, b = gr2.read(path.read_bytes()).root, gr2.read(out.read_bytes()).root
    assert b["ArtToolInfo"]["FromArtToolName"] == a["ArtToolInfo"]["FromArtToolName"] == "3D Studio MAX"
    assert b["ExporterInfo"]["ExporterName"] == a["ExporterInfo"]["ExporterName"]
    assert b["FromFileName"] == a["FromFileName"]
    assert b["Skeletons"][0]["Name"] == a["Skeletons"][0]["Name"] == "P_HHF_skel"
    # made from scratch: ours
    arm = bpy.data.armatures.new("New")
    ob = bpy.data.objects.new("New", arm)
    bpy.context.scene.collection.objects.link(ob)
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    bpy.context.view_layer.objects.active = ob
    bpy.ops.object.mode_set(mode="EDIT")
    arm.edit_bones.new("root").tail = (0, 0, 1)
    bpy.ops.object.mode_set(mode="OBJECT")
    for o in list(bpy.data.objects):
        if o != ob:
            bpy.data.objects.remove(o)
    fresh = tmp_path / "fresh.gr2"
    assert bpy.ops.export_scene.skinbridge_gr2(filepath=str(fresh)) == {"FINISHED"}
    assert gr2.read(fresh.read_bytes()).root["ArtToolInfo"]["FromArtToolName"] == "SkinBridge"


def _gr2_export(tmp_path, name: str) -> pathlib.Path:
    out = tmp_path / "out" / name
    out.parent.mkdir(exist_ok=True)
    assert bpy.ops.export_scene.skinbridge_gr2(filepath=str(out)) == {"FINISHED"}
    return out


def _differences(path, written) -> list:
    from skinbridge import formats  # the registry: only to name the format to the diff
    from skinbridge.core.diff import diff_files

    return diff_files(formats.identify_file(str(path)), path.read_bytes(), written.read_bytes(), 10_000).differences


@pytest.mark.default_leg
def test_a_gr2_skeleton_is_written_again_with_only_the_edit(clean_scene, testdata, tmp_path):
    path = testdata / "gr2" / "ovr_P_HEF_skel83.GR2"
    assert bpy.ops.import_scene.skinbridge_gr2(filepath=str(path)) == {"FINISHED"}
    assert _gr2_export(tmp_path, "same.gr2").read_bytes() == path.read_bytes()  # Granny's own bytes
    edit_kinds.apply("rename-bone")
    diffs = _differences(path, _gr2_export(tmp_path, "renamed.gr2"))
    assert [(d.field, d.value_a, d.value_b) for d in diffs] == [("Name", "LLeg1", "LLeg1_renamed")]


@pytest.mark.default_leg
def test_a_gr2_animation_is_written_again_with_only_the_edited_track(clean_scene, testdata, tmp_path):
    for name in ("ovr_P_HEF_skel83.GR2", "ovr_p_hhf_glaive01.GR2"):
        shutil.copy(testdata / "gr2" / name, tmp_path / name)
    motion = tmp_path / "ovr_p_hhf_glaive01.GR2"
    assert bpy.ops.import_scene.skinbridge_gr2(filepath=str(tmp_path / "ovr_P_HEF_skel83.GR2")) == {"FINISHED"}
    assert bpy.ops.import_scene.skinbridge_gr2(filepath=str(motion)) == {"FINISHED"}
    assert _gr2_export(tmp_path, "same.gr2").with_name("ovr_p_hhf_glaive01.gr2").read_bytes() == motion.read_bytes()
    touched = edit_kinds.apply("key-move")  # a key of FHip1's rotation
    assert "FHip1" in touched.names
    diffs = _differences(motion, _gr2_export(tmp_path, "moved.gr2").with_name("ovr_p_hhf_glaive01.gr2"))
    assert diffs and all("TransformTracks" in d.record and "(FHip1)" in d.record for d in diffs), diffs[:3]


@pytest.mark.default_leg
def test_the_skeleton_an_mdb_import_built_exports_as_its_gr2_file(clean_scene, head, tmp_path):
    _import(head)
    out = _gr2_export(tmp_path, "P_HHF_skel.gr2")
    assert out.read_bytes() == (head.parent / "ovr_P_HEF_skel83.GR2").read_bytes()


@pytest.mark.default_leg
def test_a_renamed_ribcage_keeps_its_skin_index(clean_scene, head, tmp_path):
    """SKIN indices follow the GR2 skeleton's names on disk (Ribcage last): renaming Ribcage in Blender must not
    move it, nor the bones after it, in the MDB written."""
    _import(head)
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    arm.data.bones["Ribcage"].name = "Chest"  # its vertex group follows, as in the UI
    data, warnings = _export(tmp_path)
    assert data == head.read_bytes()
    assert any("'Ribcage' → 'Chest'" in w for w in warnings)


@pytest.mark.default_leg
def test_a_mesh_added_to_a_gr2_skeleton_is_said_not_written(clean_scene, testdata, tmp_path):
    """A GR2 holds the skeleton and its animations: a mesh added in Blender is not written, and File › Export's
    report names it (the campaign's add-mesh on a skeleton was lost without a word); the skeleton keeps its bytes."""
    path = testdata / "gr2" / "ovr_P_HEF_skel83.GR2"
    assert bpy.ops.import_scene.skinbridge_gr2(filepath=str(path)) == {"FINISHED"}
    edit_kinds.apply("add-mesh")
    assert _gr2_export(tmp_path, "added.gr2").read_bytes() == path.read_bytes()
    warned = ops_common.LAST_OUTCOME.warnings
    assert any("1 mesh object(s) not written (AddedCube); export them as MDB" in w for w in warned), warned
