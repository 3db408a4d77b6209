"""Through Blender: PMX import/export keeps everything MMD needs (item 1), export is read-only and
independent of pose/action/frame, also when it fails (item 2), invalid IK limits set in Blender are refused
naming the bone (item 3), the exported Luka parses in babylon-mmd without warnings (item 4). Item 5 is
bench/pmx_blender.py."""
from __future__ import annotations

import os

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from support.fingerprint import data_lengths  # noqa: E402

from support.failures import export_fails_at, import_fails_at  # noqa: E402
from support.fingerprint import diff_fingerprints, scene_fingerprint  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_io  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_mmd as blender_mmd  # noqa: E402
from skinbridge.io_pmx.model import pmx  # noqa: E402
from support.babylon import babylon_parse  # noqa: E402
from support.pmx_samples import build_full_model  # noqa: E402
from support.bytes_compare import assert_same_bytes  # noqa: E402

pytestmark = pytest.mark.blender

LUKA = "mmdtools_megurine_luka.pmx"




def _close(a, b, err=""):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    tol = np.maximum(1e-5, 4 * np.spacing(np.abs(b).astype(np.float32)))
    assert a.shape == b.shape and np.all(np.abs(a - b) <= tol), err


def _armature():
    return next(o for o in bpy.data.objects if o.type == "ARMATURE")


@pytest.fixture
def luka(clean_scene, testdata):
    path = testdata / "pmx" / LUKA
    assert bpy.ops.import_scene.skinbridge_pmx(filepath=str(path)) == {"FINISHED"}
    return path


def _export(tmp_path, name="out.pmx"):
    out = tmp_path / name
    assert bpy.ops.export_scene.skinbridge_pmx(filepath=str(out)) == {"FINISHED"}
    return out


def _assert_models_equal(a: pmx.PmxModel, b: pmx.PmxModel) -> None:
    # bones: count, order, names, parents, flags, tails, append data, axes, IK table
    assert [x.name for x in a.bones] == [x.name for x in b.bones]
    for x, y in zip(a.bones, b.bones, strict=True):
        where = f"bone {x.name}"
        assert (x.name_e, x.parent, x.layer, x.flags, x.tail_bone, x.append_parent, x.external_key) == \
               (y.name_e, y.parent, y.layer, y.flags, y.tail_bone, y.append_parent, y.external_key), where
        _close(y.position, x.position, where)
        for f in ("tail_offset", "append_ratio", "fixed_axis", "local_x", "local_z"):
            assert (getattr(x, f) is None) == (getattr(y, f) is None), where
            if getattr(x, f) is not None:
                _close(getattr(y, f), getattr(x, f), f"{where} {f}")
        assert (x.ik is None) == (y.ik is None), where
        if x.ik is not None:
            assert (x.ik.target, x.ik.loop, float(x.ik.limit_angle)) == \
                (y.ik.target, y.ik.loop, float(y.ik.limit_angle))
            assert len(x.ik.links) == len(y.ik.links), where
            for k, (l1, l2) in enumerate(zip(x.ik.links, y.ik.links)):
                assert l1.bone == l2.bone and l1.has_limit == l2.has_limit, f"{where} link {k}"
                if l1.has_limit:  # IK limits bit-for-bit
                    assert l1.lower.tobytes() == l2.lower.tobytes() and l1.upper.tobytes() == l2.upper.tobytes()
    # vertices: positions, normals, UVs, additional UVs, edge scale within tolerance; skinning exact
    va, vb = a.vertices, b.vertices
    assert va.dtype == vb.dtype and len(va) == len(vb)
    for f in ("position", "normal", "uv", "add_uv", "edge_scale", "weights", "sdef_c", "sdef_r0", "sdef_r1"):
        _close(vb[f], va[f], f)
    np.testing.assert_array_equal(va["deform"], vb["deform"])
    np.testing.assert_array_equal(va["bones"], vb["bones"])
    np.testing.assert_array_equal(a.indices, b.indices)
    # morphs of every type: count, order, content
    assert [(m.name, m.name_e, m.panel, m.kind, len(m.offsets)) for m in a.morphs] == \
           [(m.name, m.name_e, m.panel, m.kind, len(m.offsets)) for m in b.morphs]
    for m1, m2 in zip(a.morphs, b.morphs):
        for f in m1.offsets.dtype.names:
            if m1.offsets[f].dtype.kind == "f":
                _close(m2.offsets[f], m1.offsets[f], f"morph {m1.name} {f}")
            else:
                np.testing.assert_array_equal(m1.offsets[f], m2.offsets[f], err_msg=f"morph {m1.name} {f}")
    # materials, textures, display frames, rigid bodies, joints, soft bodies: equal
    assert a.textures == b.textures
    for records, spec in ((("materials", pmx.MATERIAL_HEAD), ("rigid_bodies", pmx.RIGID_BODY),
                           ("joints", pmx.JOINT), ("soft_bodies", pmx.SOFT_BODY))):
        assert len(getattr(a, records)) == len(getattr(b, records)), records
        for x, y in zip(getattr(a, records), getattr(b, records)):
            assert (x.name, x.name_e) == (y.name, y.name_e)
            for f, _, _ in spec:
                np.testing.assert_array_equal(np.asarray(getattr(x, f)), np.asarray(getattr(y, f)),
                                              f"{records} {x.name} {f}")
    assert [(m.toon, m.memo, m.index_count) for m in a.materials] == \
        [(m.toon, m.memo, m.index_count) for m in b.materials]
    assert [(f.name, f.name_e, f.special, f.elements) for f in a.display_frames] == \
           [(f.name, f.name_e, f.special, f.elements) for f in b.display_frames]
    assert (a.name, a.name_e, a.comment, a.comment_e) == (b.name, b.name_e, b.comment, b.comment_e)


# -- item 1 ---------------------------------------------------------------------------------------

def test_luka_round_trip_keeps_everything(luka, tmp_path):
    original = pmx.read_file(luka)
    out = _export(tmp_path)
    again = pmx.read_file(out)
    _assert_models_equal(original, again)
    knee = next(b for b in again.bones if b.name == "左足ＩＫ").ik.links[0]
    assert knee.lower.view(np.uint32).tolist() == [0xC0490FDB, 0, 0]
    assert knee.upper.view(np.uint32).tolist() == [0xBC0EFA35, 0, 0]
    assert_same_bytes(out.read_bytes(), luka.read_bytes(), pmx.read)  # in fact every byte comes back


def test_every_morph_type_and_record_kind_round_trips(clean_scene, tmp_path):
    path = tmp_path / "full.pmx"
    path.write_bytes(pmx.write(build_full_model()))  # SDEF, QDEF, group..impulse morphs, soft body, all flags
    result = blender_io.import_pmx(bpy.context, str(path))
    assert not [w for w in result.warnings if "not found" not in w]
    out = _export(tmp_path, "again.pmx")
    _assert_models_equal(pmx.read_file(path), pmx.read_file(out))


def test_blender_side_of_luka(luka):
    arm = _armature()
    knee = arm.pose.bones["左ひざ"]
    ik = knee.constraints[blender_mmd.IK_NAME]
    assert (ik.type, ik.subtarget, ik.chain_count, ik.use_tail) == ("IK", "左足ＩＫ", 2, True)
    assert knee.use_ik_limit_x and knee.ik_min_x == 0.0 and knee.ik_max_x == pytest.approx(np.pi)
    override = knee.constraints[blender_mmd.LIMIT_NAME]  # the positive minimum ik_min_x cannot hold
    assert override.type == "LIMIT_ROTATION" and override.owner_space == "LOCAL" and override.use_limit_x
    assert override.min_x == pytest.approx(np.radians(0.5), abs=1e-7) and override.max_x == pytest.approx(np.pi)
    eye = arm.pose.bones["左目"].constraints[blender_mmd.APPEND_ROTATION]
    assert (eye.type, eye.subtarget, eye.target_space, eye.owner_space) == \
           ("TRANSFORM", "両目", "LOCAL_OWNER_ORIENT", "LOCAL")
    assert {c.name for c in arm.data.collections_all} >= {"Root", "ＩＫ", "足"}
    assert {b.name for b in arm.data.collections_all["ＩＫ"].bones} == \
        {"左足ＩＫ", "右足ＩＫ", "左つま先ＩＫ", "右つま先ＩＫ"}
    assert blender_mmd.pmx_names(arm.data.bones["左ひざ"]) == ("左ひざ", "knee_L")
    mesh = next(o for o in bpy.data.objects if o.type == "MESH")
    assert len(mesh.data.vertices) == 27607 and len(mesh.data.shape_keys.key_blocks) == 40
    assert all(f"pmx_add_uv{k}" in mesh.data.attributes for k in range(1, 5))
    mats = mesh.data.materials
    assert len(mats) == 31 and blender_mmd.PROP in mats[0]


def test_append_rotation_follows_its_parent(luka):
    arm = _armature()
    parent, child = arm.pose.bones["両目"], arm.pose.bones["左目"]  # append rotation, ratio 1
    parent.rotation_mode = "XYZ"
    parent.rotation_euler = (0.3, 0.0, 0.0)
    bpy.context.view_layer.update()
    delta = (child.matrix @ child.bone.matrix_local.inverted()).to_quaternion()
    assert delta.angle == pytest.approx(0.3, abs=1e-4)


def test_leg_ik_moves_the_ankle_to_the_ik_bone(luka):
    arm = _armature()
    ik_bone, ankle = arm.pose.bones["左足ＩＫ"], arm.pose.bones["左足首"]
    ik_bone.location = (0.0, 0.0, 0.08)  # lift the foot: the knee bends
    bpy.context.view_layer.update()
    assert np.linalg.norm(np.array(ankle.head) - np.array(ik_bone.head)) < 0.02
    knee = arm.pose.bones["左ひざ"]
    unbent = knee.parent.matrix @ knee.parent.bone.matrix_local.inverted() @ knee.bone.matrix_local
    bend = (unbent.inverted() @ knee.matrix).to_euler()
    assert bend.x > 0.05  # bends backwards: positive local X, as the limit allows


def test_bone_translated_in_blender_keeps_its_japanese_name(luka, tmp_path):
    """A Japanese bone name turned into ASCII in Blender (knee.L, for Blender's tools) is a translation: the
    Japanese name MMD and the VMDs call it by stays, the new name is its English name (docs/mmd.md §4.8)."""
    arm = _armature()
    arm.data.bones["左ひざ"].name = "knee.L"
    again = pmx.read_file(_export(tmp_path))
    original = pmx.read_file(luka)
    assert [b.name for b in again.bones] == [b.name for b in original.bones]
    assert [b.name_e for b in again.bones] == [("knee.L" if b.name == "左ひざ" else b.name_e) for b in original.bones]


def test_bone_collection_edits_become_display_frames(luka, tmp_path):
    arm = _armature()
    arm.data.collections_all["ＩＫ"].unassign(arm.data.bones["右つま先ＩＫ"])
    again = pmx.read_file(_export(tmp_path))
    frame = next(f for f in again.display_frames if f.name == "ＩＫ")
    assert [again.bones[i].name for _, i in frame.elements] == ["左足ＩＫ", "右足ＩＫ", "左つま先ＩＫ"]


def test_changed_limit_is_exported_from_blender(luka, tmp_path):
    arm = _armature()
    arm.pose.bones["左ひざ"].constraints[blender_mmd.LIMIT_NAME].min_x = np.radians(10.0)
    again = pmx.read_file(_export(tmp_path))
    link = next(b for b in again.bones if b.name == "左足ＩＫ").ik.links[0]
    assert link.upper[0] == pytest.approx(-np.radians(10.0), abs=1e-6)
    assert link.lower.view(np.uint32)[0] == 0xC0490FDB  # the unchanged end keeps its bits


# -- item 2 ---------------------------------------------------------------------------------------

def _play_action_at_frame_12():
    arm = _armature()
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="POSE")
    for name, frame, value in (("センター", 1, (0, 0, 0)), ("センター", 24, (0.1, 0.2, 0.3)),
                               ("左足ＩＫ", 1, (0, 0, 0)), ("左足ＩＫ", 24, (0, 0.1, 0.1))):
        pb = arm.pose.bones[name]
        pb.location = value
        pb.keyframe_insert("location", frame=frame)
    head = arm.pose.bones["頭"]
    head.rotation_mode = "XYZ"
    for frame, x in ((1, 0.0), (24, 0.8)):
        head.rotation_euler = (x, 0, 0)
        head.keyframe_insert("rotation_euler", frame=frame)
    mesh = next(o for o in bpy.data.objects if o.type == "MESH")
    key = mesh.data.shape_keys.key_blocks["あ"]
    key.value = 0.7
    bpy.context.scene.frame_set(12)
    assert arm.animation_data.action is not None


@pytest.mark.slow
def test_export_during_an_action_is_byte_identical_to_rest(luka, tmp_path):
    at_rest = _export(tmp_path, "rest.pmx").read_bytes()
    _play_action_at_frame_12()
    before = scene_fingerprint()
    playing = _export(tmp_path, "playing.pmx").read_bytes()
    assert diff_fingerprints(before, scene_fingerprint()) == []
    assert playing == at_rest


@pytest.mark.parametrize("stage", ["skeleton", "meshes", "write"])
def test_failed_export_leaves_scene_and_no_file(luka, tmp_path, monkeypatch, stage):
    _play_action_at_frame_12()
    export_fails_at(monkeypatch, stage, bpy.ops.export_scene.skinbridge_pmx, tmp_path / "x.pmx")


@pytest.mark.parametrize("stage", ["armature", "mesh", "pmx_lengths", "pmx_constraints", "pmx_mesh",
                                   "pmx_materials"])
def test_import_failing_while_building_removes_everything(clean_scene, testdata, stage, monkeypatch):
    import_fails_at(monkeypatch, stage, bpy.ops.import_scene.skinbridge_pmx, filepath=str(testdata / "pmx" / LUKA))


def test_bad_files_are_refused_before_anything_is_built(clean_scene, testdata, tmp_path):
    before = data_lengths()
    data = (testdata / "pmx" / LUKA).read_bytes()
    cut = tmp_path / "cut.pmx"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match="offset"):
        bpy.ops.import_scene.skinbridge_pmx(filepath=str(cut))
    m = pmx.read(data)
    m.bones[5].parent = 999
    bad = tmp_path / "bad_parent.pmx"
    bad.write_bytes(pmx.write(m))
    with pytest.raises(RuntimeError, match="bone 5 .左目.*parent"):
        bpy.ops.import_scene.skinbridge_pmx(filepath=str(bad))
    assert data_lengths() == before


# -- item 3 ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["reversed", "nan_override", "nan_ik_min"])
def test_invalid_ik_limits_are_refused_naming_the_bone(luka, tmp_path, how):
    arm = _armature()
    knee = arm.pose.bones["左ひざ"]
    if how == "reversed":
        override = knee.constraints[blender_mmd.LIMIT_NAME]
        override.min_x, override.max_x = 1.0, 0.5
    elif how == "nan_override":
        knee.constraints[blender_mmd.LIMIT_NAME].max_x = float("nan")
    else:
        arm.pose.bones["右ひざ"].ik_min_y = float("nan")
    bpy.context.view_layer.update()  # the edited limits re-pose the knee (and the rigid body on it) first
    before = scene_fingerprint()
    with pytest.raises(RuntimeError) as e:
        bpy.ops.export_scene.skinbridge_pmx(filepath=str(tmp_path / "x.pmx"))
    bone = "右ひざ" if how == "nan_ik_min" else "左ひざ"
    assert bone in str(e.value) and ("lower exceeds upper" in str(e.value) or "not finite" in str(e.value))
    assert diff_fingerprints(before, scene_fingerprint()) == []
    assert os.listdir(tmp_path) == []


# -- item 4 ---------------------------------------------------------------------------------------

@pytest.mark.slow
def test_exported_luka_parses_in_babylon_mmd_without_warnings(luka, tmp_path):
    out = _export(tmp_path)
    (result,) = babylon_parse([out]).values()
    assert "error" not in result and result["warnings"] == []
    original = pmx.read_file(luka)
    assert (result["vertices"], result["bones"], result["morphs"], result["rigidBodies"], result["joints"]) == \
           (len(original.vertices), len(original.bones), len(original.morphs), len(original.rigid_bodies),
            len(original.joints))
    leg = next(ik for ik in result["ik"] if ik["bone"] == "左足ＩＫ")
    np.testing.assert_array_equal(np.float32(leg["links"][0]["lower"]), original.bones[113].ik.links[0].lower)
    np.testing.assert_array_equal(np.float32(leg["links"][0]["upper"]), original.bones[113].ik.links[0].upper)


# -- menus, file handler, convert --------------------------------------------------------------------

def test_operators_menus_and_file_handler_are_registered(addon):
    assert hasattr(bpy.types, "IMPORT_SCENE_OT_skinbridge_pmx") or bpy.ops.import_scene.skinbridge_pmx.idname()
    assert "IO_FH_skinbridge_pmx" in dir(bpy.types)
    fh = bpy.types.IO_FH_skinbridge_pmx
    assert fh.bl_file_extensions == ".pmx" and fh.bl_export_operator == "export_scene.skinbridge_pmx"


def test_convert_to_pmx(addon, testdata, tmp_path):
    from skinbridge.app.pipeline import ConvertOptions, convert_file

    src = testdata / "pmx" / LUKA
    written, warnings = convert_file(str(src), str(tmp_path), "luka", ConvertOptions(target="pmx"))
    assert written == [str(tmp_path / "luka.pmx")]
    assert_same_bytes((tmp_path / "luka.pmx").read_bytes(), src.read_bytes(), pmx.read)


@pytest.mark.parametrize("name", ["babylonmmd_constraint_test.pmx", "babylonmmd_bone_flag_test.pmx",
                                  "mlibgo_sample_pmx21_utf8.pmx"])
def test_other_tools_samples_come_back_byte_identical(clean_scene, testdata, tmp_path, name):
    """Models of other tools through File › Import and Export unchanged: an empty model name stays empty (not the
    armature's), and a model of bones alone (0 vertices; the PMX 2.1 one too) is written as bones alone."""
    src = testdata / "pmx" / name
    model = pmx.read(src.read_bytes())
    assert model.name == "" or len(model.vertices) == 0  # what each sample is here for
    assert bpy.ops.import_scene.skinbridge_pmx(filepath=str(src)) == {"FINISHED"}
    out = tmp_path / name
    assert bpy.ops.export_scene.skinbridge_pmx(filepath=str(out)) == {"FINISHED"}
    assert_same_bytes(out.read_bytes(), src.read_bytes(), pmx.read, name)
