"""Issue 50 items 1-2 in Blender (docs/nwn2.md §5.8): File › Import from inside an archive (the shared head in a
hak pack, its skeleton in another pack, against the loose files), a hostile archive refused in one report, and
a GR2 import reading its file once and decompressing each section once."""
from __future__ import annotations

import pathlib
import zipfile

import bpy
import numpy as np
import pytest

from skinbridge.io_mdb.archive import archive
from skinbridge.io_mdb.gr2 import blender_io as gr2_blender
from skinbridge.io_mdb.gr2 import gr2

pytestmark = pytest.mark.blender

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
HEAD = GR2_DIR / "ovr_P_HEF_head83.MDB"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"


def _new(before: set) -> list:
    return [ob for ob in bpy.data.objects if ob not in before]


def _rest(rig) -> dict[str, np.ndarray]:
    return {b.name: np.array(b.matrix_local) for b in rig.data.bones}


def _deformed(objects) -> dict[str, np.ndarray]:
    """Each skinned mesh's evaluated vertices (its armature modifier applied) by object name."""
    deps = bpy.context.evaluated_depsgraph_get()
    out = {}
    for ob in objects:
        if ob.type == "MESH":
            mesh = ob.evaluated_get(deps).to_mesh()
            out[ob.name.split(".")[0]] = np.array([tuple(ob.matrix_world @ v.co) for v in mesh.vertices])
            ob.evaluated_get(deps).to_mesh_clear()
    return out


def _pose(rig) -> None:
    rig.pose.bones["Head"].rotation_mode = "XYZ"
    rig.pose.bones["Head"].rotation_euler = (0.4, 0.1, -0.3)
    bpy.context.view_layer.update()


def test_a_head_in_a_pack_imports_with_its_skeleton_from_another_pack_as_the_loose_files_do(clean_scene, tmp_path):
    heads = tmp_path / "heads.hak"
    heads.write_bytes(archive.write_erf([("ovr_P_HEF_head83.mdb", HEAD.read_bytes()),
                                         ("face.tga", b"")]))
    skels = tmp_path / "skels.zip"
    with zipfile.ZipFile(skels, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(SKELETON, "lod-merged/ovr_P_HEF_skel83.GR2")
    before = set(bpy.data.objects)
    assert bpy.ops.import_scene.skinbridge_mdb(filepath=str(HEAD)) == {"FINISHED"}
    loose = _new(before)
    (loose_rig,) = [ob for ob in loose if ob.type == "ARMATURE"]
    before = set(bpy.data.objects)
    # one .mdb in the pack: no list to choose from; the skeleton pack through the operator's Skeleton Path
    assert bpy.ops.import_scene.skinbridge_nwn2_archive(filepath=str(heads), skeleton_path=str(skels)) \
        == {"FINISHED"}
    packed = _new(before)
    (rig,) = [ob for ob in packed if ob.type == "ARMATURE"]
    assert sorted(ob.name.split(".")[0] for ob in packed) == sorted(ob.name.split(".")[0] for ob in loose)
    a, b = _rest(rig), _rest(loose_rig)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    _pose(rig)
    _pose(loose_rig)
    got, expected = _deformed(packed), _deformed(loose)
    assert got.keys() == expected.keys()
    assert max(float(np.abs(got[k] - expected[k]).max()) for k in got) == 0.0
    assert rig.users_collection[0].name.split(".")[0] == "ovr_P_HEF_head83"  # its member's name, not the pack's


def test_a_pack_of_several_members_imports_the_one_named_or_chosen(clean_scene, tmp_path):
    pack = tmp_path / "mixed.hak"
    pack.write_bytes(archive.write_erf([("ovr_P_HEF_head83.mdb", HEAD.read_bytes()),
                                        ("ovr_P_HEF_skel83.gr2", SKELETON.read_bytes())]))
    assert archive.member_names(str(pack)) == ["ovr_P_HEF_head83.mdb", "ovr_P_HEF_skel83.gr2"]
    with pytest.raises(RuntimeError, match="holds 2 models and skeletons: name one as Member"):
        bpy.ops.import_scene.skinbridge_nwn2_archive(filepath=str(pack))
    before = set(bpy.data.objects)
    assert bpy.ops.import_scene.skinbridge_nwn2_archive(filepath=str(pack), member="ovr_P_HEF_skel83.gr2") \
        == {"FINISHED"}
    (rig,) = _new(before)
    assert rig.type == "ARMATURE" and len(rig.data.bones) == 88 and rig.name.startswith("P_HHF_skel")
    before = set(bpy.data.objects)
    # the head finds the skeleton in its own pack, as a loose head finds the one beside it
    assert bpy.ops.import_scene.skinbridge_nwn2_archive(filepath=str(pack), member="ovr_P_HEF_head83.mdb") \
        == {"FINISHED"}
    assert sum(ob.type == "ARMATURE" for ob in _new(before)) == 1


def test_a_hostile_archive_is_refused_in_one_report(clean_scene, tmp_path):
    bad = tmp_path / "bad.hak"
    bad.write_bytes(archive.write_erf([("a.mdb", b"NWN2" * 4)])[:150])
    before = set(bpy.data.objects)
    with pytest.raises(RuntimeError) as e:
        bpy.ops.import_scene.skinbridge_nwn2_archive(filepath=str(bad))
    assert "bad.hak" in str(e.value) and "shorter than the 160-byte ERF header" in str(e.value)
    assert _new(before) == []


def test_a_gr2_import_reads_its_file_once_and_decompresses_each_section_once(clean_scene, tmp_path, monkeypatch):
    expected = len(gr2.read(SKELETON.read_bytes()).sections)
    reads, sections = [], []
    read_bytes, decompress = archive.read_bytes, gr2.decompress_section
    monkeypatch.setattr(archive, "read_bytes", lambda *a, **k: reads.append(a[0]) or read_bytes(*a, **k))
    monkeypatch.setattr(gr2, "decompress_section", lambda d, s: sections.append(s) or decompress(d, s))
    gr2_blender.import_file(bpy.context, str(SKELETON), None)
    assert reads == [str(SKELETON)]
    assert len(sections) == expected  # 6 for the public skeleton (before: 3 reads, 18 decompressions)


def test_convert_to_mdb_with_hak_writes_a_pack_of_the_mdb_in_the_output_folder(clean_scene, tmp_path):
    from skinbridge.app import pipeline  # imports bpy: after the fixture set Blender up
    from skinbridge.app.options import ConvertOptions  # as pipeline

    out = tmp_path / "out"
    written, _ = pipeline.convert_file(str(HEAD), str(out), "head",
                                       ConvertOptions(target="mdb", skeleton="P_HHF_skel", hak="my_module"))
    assert sorted(pathlib.Path(p).name for p in written) == ["head.mdb", "my_module.hak"]
    pack = archive.Archive(str(out / "my_module.hak"))
    assert pack.data[:8] == b"HAK V1.1" and pack.names() == ["head.mdb"]
    assert pack.read("head.mdb") == (out / "head.mdb").read_bytes()
    for bad in ("../evil", "sub/evil.hak", "C:evil"):
        with pytest.raises(Exception, match="give a file name"):
            pipeline.convert_file(str(HEAD), str(tmp_path / "bad"), "head",
                                  ConvertOptions(target="mdb", skeleton="P_HHF_skel", hak=bad))
    assert not (tmp_path / "evil.hak").exists() and not (tmp_path / "bad").exists()


def test_the_member_chosen_in_the_list_is_imported(clean_scene, tmp_path):
    """What the popup does after the archive is chosen (the dialog itself needs a window): the list holds the
    archive's models and skeletons, and the one picked in it is imported."""
    from skinbridge.io_mdb import ops  # imports bpy: after the fixture set Blender up

    pack = tmp_path / "mixed.hak"
    pack.write_bytes(archive.write_erf([("ovr_P_HEF_head83.mdb", HEAD.read_bytes()),
                                        ("ovr_P_HEF_skel83.gr2", SKELETON.read_bytes())]))
    ops.LISTED[str(pack)] = [(n, n, "") for n in archive.member_names(str(pack))]
    before = set(bpy.data.objects)
    assert bpy.ops.import_scene.skinbridge_nwn2_archive(filepath=str(pack), choosing=True,
                                                        listed="ovr_P_HEF_skel83.gr2") == {"FINISHED"}
    (rig,) = _new(before)
    assert rig.type == "ARMATURE" and str(pack) not in ops.LISTED
