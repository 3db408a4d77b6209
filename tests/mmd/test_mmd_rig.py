"""Without Blender: the bone-mapping table and keyword matching, `--bone-map`, helper bones, the control
layer built on PMX records (parents, flags, layers, IK, the knee limit bits), the zero-weight 上半身2 and the
arm-angle rest transforms. The Blender side (Fox.glb, the demo humanoid, items 1-4) is in
test_mmd_rig_blender.py."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from skinbridge.core.errors import ExportError
from skinbridge.io_pmx.rig import arm_angle as mmd_arm_angle
from skinbridge.io_pmx.rig import bone_map as mmd_bone_map
from skinbridge.io_pmx.rig import names as rig_names
from skinbridge.io_pmx.rig import rig as mmd_rig
from skinbridge.io_pmx.model import pmx
from skinbridge.io_pmx.model.validate import validate
from support import mmd_extras

FOX = ["_rootJoint", "b_Root_00", "b_Hip_01", "b_Spine01_02", "b_Spine02_03", "b_Neck_04", "b_Head_05",
       "b_RightUpperArm_06", "b_RightForeArm_07", "b_RightHand_08", "b_LeftUpperArm_09", "b_LeftForeArm_010",
       "b_LeftHand_011", "b_Tail01_012", "b_Tail02_013", "b_Tail03_014", "b_LeftLeg01_015", "b_LeftLeg02_016",
       "b_LeftFoot01_017", "b_LeftFoot02_018", "b_RightLeg01_019", "b_RightLeg02_020", "b_RightFoot01_021",
       "b_RightFoot02_022"]
FOX_PARENTS = [-1, 0, 1, 2, 3, 4, 5, 4, 7, 8, 4, 10, 11, 2, 13, 14, 2, 16, 17, 18, 2, 20, 21, 22]


def _chain_names(side_word: str) -> list[str]:
    return [f"{side_word}{x}" for x in ("UpLeg", "Leg", "Foot", "ToeBase")]


# one body per naming convention: (names, parents) → expected MMD names
CONVENTIONS = {
    "mixamo": (["mixamorig:Hips", "mixamorig:Spine", "mixamorig:Spine1", "mixamorig:Spine2", "mixamorig:Neck",
                "mixamorig:Head", "mixamorig:LeftShoulder", "mixamorig:LeftArm", "mixamorig:LeftForeArm",
                "mixamorig:LeftHand", "mixamorig:LeftHandThumb1", "mixamorig:LeftHandIndex2",
                "mixamorig:LeftUpLeg", "mixamorig:LeftLeg", "mixamorig:LeftFoot", "mixamorig:LeftToeBase"]),
    "vrm0": (["J_Bip_C_Hips", "J_Bip_C_Spine", "J_Bip_C_Chest", "J_Bip_C_UpperChest", "J_Bip_C_Neck",
              "J_Bip_C_Head", "J_Bip_L_Shoulder", "J_Bip_L_UpperArm", "J_Bip_L_LowerArm", "J_Bip_L_Hand",
              "J_Bip_L_Thumb1", "J_Bip_L_Index2", "J_Bip_L_UpperLeg", "J_Bip_L_LowerLeg", "J_Bip_L_Foot",
              "J_Bip_L_ToeBase"]),
    "unity_vrm1": (["hips", "spine", "chest", "upperChest", "neck", "head", "leftShoulder", "leftUpperArm",
                    "leftLowerArm", "leftHand", "leftThumbMetacarpal", "leftIndexIntermediate", "leftUpperLeg",
                    "leftLowerLeg", "leftFoot", "leftToes"]),
    "rigify": (["DEF-spine", "DEF-spine.001", "DEF-spine.002", "DEF-spine.003", "DEF-spine.004", "DEF-spine.006",
                "DEF-shoulder.L", "DEF-upper_arm.L", "DEF-forearm.L", "DEF-hand.L", "DEF-thumb.01.L",
                "DEF-f_index.02.L", "DEF-thigh.L", "DEF-shin.L", "DEF-foot.L", "DEF-toe.L"]),
    "unreal": (["pelvis", "spine_01", "spine_02", "spine_03", "neck_01", "head", "clavicle_l", "upperarm_l",
                "lowerarm_l", "hand_l", "thumb_01_l", "index_02_l", "thigh_l", "calf_l", "foot_l", "ball_l"]),
    "blender": (["Hips", "Spine", "Chest", "UpperChest", "Neck", "Head", "shoulder.L", "upper_arm.L",
                 "forearm.L", "hand.L", "thumb.01.L", "f_index.02.L", "thigh.L", "shin.L", "foot.L", "toe.L"]),
}
EXPECTED = ["下半身", "上半身", "上半身2", "上半身3", "首", "頭", "左肩", "左腕", "左ひじ", "左手首", "左親指０",
            "左人指２", "左足", "左ひざ", "左足首", "左つま先"]
# parents of the 16 bones above: hips root, spine chain, arm off the top spine, thumb and index on the hand,
# leg off the hips
PARENTS = [-1, 0, 1, 2, 3, 4, 3, 6, 7, 8, 9, 9, 0, 12, 13, 14]


@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_table_maps_each_naming_convention(convention):
    names = CONVENTIONS[convention]
    m = mmd_bone_map.map_bones(names, PARENTS)
    got = [m.mmd[i] for i in range(len(names))]
    # a few conventions have no standard finger names in the table: they still map by keyword
    assert got == EXPECTED, list(zip(names, got))
    assert m.warnings == []


def test_the_table_documents_every_convention_it_claims():
    rows = dict(rig_names.BONE_TABLE)
    for mmd in ("全ての親", "下半身", "上半身", "上半身2", "首", "頭", "腕", "ひじ", "手首", "足", "ひざ", "足首",
                "つま先", "肩", "目"):
        assert mmd in rows
    for name in ("mixamorig:LeftUpLeg", "J_Bip_R_LowerLeg", "rightUpperArm", "DEF-thigh.R", "calf_r",
                 "upper_arm.R", "左ひざ", "Thigh_R", "UpperArm.R"):
        assert rig_names.TABLE.get(rig_names.normalised_name(name), "")[:1] in "左右", name


def test_fox_names_map_by_keywords_in_chain_order():
    m = mmd_bone_map.map_bones(FOX, FOX_PARENTS)
    assert m.warnings == []
    exported = {n: m.exported_name(i) for i, n in enumerate(FOX)}
    assert m.merged(0) and m.merged(1)  # _rootJoint and b_Root_00 merge into 全ての親
    assert exported["_rootJoint"] == exported["b_Root_00"] == "全ての親"
    expected = {"b_Hip_01": "下半身", "b_Spine01_02": "上半身", "b_Spine02_03": "上半身2", "b_Neck_04": "首",
                "b_Head_05": "頭"}
    for side, word in (("左", "Left"), ("右", "Right")):
        for part, mmd in (("UpperArm", "腕"), ("ForeArm", "ひじ"), ("Hand", "手首"), ("Leg01", "足"),
                          ("Leg02", "ひざ"), ("Foot01", "足首"), ("Foot02", "つま先")):
            src = next(n for n in FOX if f"_{word}{part}_" in n)
            expected[src] = side + mmd
    for name, mmd in expected.items():
        assert exported[name] == mmd, name
    for tail in ("b_Tail01_012", "b_Tail02_013", "b_Tail03_014"):
        assert exported[tail] == tail and m.how[FOX.index(tail)] == ""


@pytest.mark.parametrize("name, side", [("LeftArm", "L"), ("mixamorig:RightHand", "R"), ("upper_arm.L", "L"),
                                        ("Bip01 R Thigh", "R"), ("J_Bip_L_Foot", "L"), ("左腕", "L"),
                                        ("thigh_r", "R"), ("Spine", None), ("LeftRight", None),
                                        ("b_LeftLeg01_015", "L")])
def test_left_right_detection(name, side):
    assert rig_names.side_of(name) == side


def test_keywords_cover_other_rigs():
    names = ["Bip01", "Bip01 Pelvis", "Bip01 Spine", "Bip01 L Thigh", "Bip01 L Calf", "Bip01 L Foot",
             "Bip01 L Toe0", "Bip01 L Clavicle", "Bip01 L UpperArm", "Bip01 L Forearm", "Bip01 L Hand",
             "Bip01 HeadNub"]
    parents = [-1, 0, 1, 1, 3, 4, 5, 2, 7, 8, 9, 2]
    m = mmd_bone_map.map_bones(names, parents)
    assert [m.mmd[i] for i in range(1, 11)] == ["下半身", "上半身", "左足", "左ひざ", "左足首", "左つま先", "左肩",
                                                "左腕", "左ひじ", "左手首"]
    assert m.merged(0)  # the ancestor of the pelvis
    assert m.mmd[11] is None and m.how[11] == ""  # a tip keeps its name


def test_unmapped_leg_chain_is_reported_not_guessed():
    names = ["Hips", "Spine", "leg_A.L", "leg_B.L", "leg_C.L", "thigh.R", "shin.R", "foot.R"]
    parents = [-1, 0, 0, 2, 3, 0, 5, 6]
    m = mmd_bone_map.map_bones(names, parents)
    assert (m.mmd[2], m.mmd[3], m.mmd[4]) == ("左足", "左ひざ", None)  # "leg" fills 足, ひざ only
    assert any("left leg chain incomplete" in w and "左足首" in w for w in m.warnings), m.warnings
    assert mmd_bone_map.leg_chain_ok(m, "R") and not mmd_bone_map.leg_chain_ok(m, "L")
    model = _model([(n, p, (0, 10 - k, 0)) for k, (n, p) in enumerate(zip(names, parents))])
    warnings = mmd_rig.apply(model)
    assert any("left leg" in w for w in warnings)
    names_out = [b.name for b in model.bones]
    assert "右足ＩＫ" in names_out and "左足ＩＫ" not in names_out and "左足IK親" not in names_out


def test_bone_map_overrides_the_table_and_null_drops():
    names = CONVENTIONS["mixamo"]
    m = mmd_bone_map.map_bones(names, PARENTS, bone_map={"mixamorig:Spine2": "胸", "mixamorig:Neck": "首X",
                                                    "mixamorig:LeftHandIndex2": None, "NoSuchBone": "x"})
    assert m.mmd[3] == "胸" and m.how[3] == "bone map"
    assert m.mmd[4] == "首X"
    assert m.dropped(11)
    assert [m.mmd[i] for i in (0, 1, 2, 5)] == ["下半身", "上半身", "上半身2", "頭"]
    assert any("NoSuchBone" in w for w in m.warnings)


def test_bone_map_file_is_checked(tmp_path):
    good = tmp_path / "map.json"
    good.write_text(json.dumps({"Hips": "下半身", "Prop": None}, ensure_ascii=False), encoding="utf-8")
    assert mmd_bone_map.load_bone_map(str(good)) == {"Hips": "下半身", "Prop": None}
    for text, message in (("[1, 2]", "expected a JSON object"), ('{"Hips": 3}', "expected a bone name"),
                          ("{not json", "not a UTF-8 JSON")):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        with pytest.raises(ExportError, match=message):
            mmd_bone_map.load_bone_map(str(bad))
    with pytest.raises(ExportError, match="missing.json"):
        mmd_bone_map.load_bone_map(str(tmp_path / "missing.json"))


# ------------------------------------------------------------------------------------------------------------
# records

def _model(bones, weights=None) -> pmx.PmxModel:
    """bones: (name, parent index, position in MMD units); weights: per vertex [(bone name, weight), ...]."""
    m = pmx.PmxModel(name="t")
    for name, parent, p in bones:
        m.bones.append(pmx.PmxBone(name=name, position=np.float32(p), parent=parent, flags=0x1B, tail_bone=-1))
    index = {b.name: i for i, b in enumerate(m.bones)}
    weights = weights or [[(m.bones[0].name, 1.0)]]
    v = np.zeros(len(weights), pmx.vertex_dtype(0))
    v["bones"] = -1
    for k, influences in enumerate(weights):
        v["deform"][k] = {1: pmx.BDEF1, 2: pmx.BDEF2}.get(len(influences), pmx.BDEF4)
        for s, (name, w) in enumerate(influences):
            v["bones"][k, s], v["weights"][k, s] = index[name], w
        v["position"][k] = m.bones[v["bones"][k, 0]].position
    m.vertices = v
    m.indices = np.zeros(0, np.int32)
    return m


HUMAN = [("Root", -1, (0, 0, 0)), ("Hips", 0, (0, 10, 0)), ("Spine", 1, (0, 12, 0)), ("Neck", 2, (0, 16, 0)),
         ("Head", 3, (0, 17, 0)), ("LeftArm", 2, (2, 15, 0)), ("LeftForeArm", 5, (5, 15, 0)),
         ("LeftHand", 6, (8, 15, 0)), ("RightArm", 2, (-2, 15, 0)), ("RightForeArm", 8, (-5, 15, 0)),
         ("RightHand", 9, (-8, 15, 0)),
         ("LeftUpLeg", 1, (1, 9.5, 0)), ("LeftLeg", 11, (1, 5, 0)), ("LeftFoot", 12, (1, 1, 0)),
         ("LeftToeBase", 13, (1, 0, -1)), ("RightUpLeg", 1, (-1, 9.5, 0)), ("RightLeg", 15, (-1, 5, 0)),
         ("RightFoot", 16, (-1, 1, 0)), ("RightToeBase", 17, (-1, 0, -1))]


def _by_name(m: pmx.PmxModel) -> dict[str, int]:
    return {b.name: i for i, b in enumerate(m.bones)}


def test_control_layer_parents_flags_layers_ik_and_knee_bits():
    m = _model(HUMAN)
    assert mmd_rig.apply(m) == []
    k = _by_name(m)
    parent = {b.name: (m.bones[b.parent].name if b.parent >= 0 else None) for b in m.bones}
    assert m.bones[0].name == "全ての親" and "Root" not in k  # the root bone merges into 全ての親
    assert {c: parent[c] for c in ("全ての親", "センター", "グルーブ", "腰", "上半身", "上半身2", "下半身")} == {
        "全ての親": None, "センター": "全ての親", "グルーブ": "センター", "腰": "グルーブ", "上半身": "腰",
        "上半身2": "上半身", "下半身": "腰"}
    for side in "左右":
        assert parent[side + "足"] == "下半身"
        assert parent[side + "足IK親"] == "全ての親"
        assert parent[side + "足ＩＫ"] == side + "足IK親"
        assert parent[side + "つま先ＩＫ"] == side + "足ＩＫ"
        leg_ik, toe_ik = m.bones[k[side + "足ＩＫ"]], m.bones[k[side + "つま先ＩＫ"]]
        assert (leg_ik.flags, leg_ik.layer, toe_ik.flags, toe_ik.layer) == (0x3E, 1, 0x3E, 2)
        assert (leg_ik.ik.target, leg_ik.ik.loop, float(leg_ik.ik.limit_angle)) == (k[side + "足首"], 40, 2.0)
        knee, thigh = leg_ik.ik.links
        assert (knee.bone, thigh.bone, thigh.lower, thigh.upper) == (k[side + "ひざ"], k[side + "足"], None, None)
        assert knee.lower.view(np.uint32).tolist() == [0xC0490FDB, 0, 0]
        assert knee.upper.view(np.uint32).tolist() == [0xBC0EFA35, 0, 0]
        assert (toe_ik.ik.target, toe_ik.ik.loop, float(toe_ik.ik.limit_angle)) == (k[side + "つま先"], 3, 4.0)
        assert [(x.bone, x.lower) for x in toe_ik.ik.links] == [(k[side + "足首"], None)]
        assert m.bones[k[side + "足IK親"]].flags == 0x1F
        assert (m.bones[k[side + "つま先"]].flags, m.bones[k[side + "つま先"]].layer) == (0x12, 2)
        for part in ("足", "ひざ", "足首"):
            assert (m.bones[k[side + part]].flags, m.bones[k[side + part]].layer) == (0x1B, 0)
        np.testing.assert_array_equal(leg_ik.position, m.bones[k[side + "足首"]].position)
        assert m.bones[k[side + "足IK親"]].position[1] == 0
    flags = {n: m.bones[k[n]].flags for n in ("全ての親", "センター", "グルーブ", "腰", "上半身", "上半身2", "下半身")}
    assert flags == {"全ての親": 0x1F, "センター": 0x1E, "グルーブ": 0x1E, "腰": 0x1A, "上半身": 0x1B,
                     "上半身2": 0x1B, "下半身": 0x1A}
    # exact code points: full-width ＩＫ in 足ＩＫ / つま先ＩＫ, ASCII IK in 足IK親
    assert "左足\uff29\uff2b" in k and "右つま先\uff29\uff2b" in k and "左足IK親" in k
    # parents first, every bone below 全ての親
    for i, b in enumerate(m.bones):
        assert b.parent < i
        j = i
        while m.bones[j].parent >= 0:
            j = m.bones[j].parent
        assert j == 0
    assert [f for f in validate(m, for_export=True) if f.severity == "error"] == []
    assert pmx.read(pmx.write(m)).bones[k["左足ＩＫ"]].ik.links[0].lower.view(np.uint32)[0] == 0xC0490FDB


def test_single_spine_gets_a_zero_weight_upper_body_2():
    weights = [[(n, 1.0)] for n, _, _ in HUMAN[1:]]
    m = _model(HUMAN, weights)
    mmd_rig.apply(m)
    k = _by_name(m)
    upper2 = k["上半身2"]
    assert m.bones[upper2].parent == k["上半身"]
    for child in ("首", "左腕", "右腕"):
        assert m.bones[k[child]].parent == upper2
    v = m.vertices
    assert not ((v["bones"] == upper2) & (v["weights"] != 0)).any()
    assert m.bones[k["上半身"]].tail_bone == upper2
    # the position sits between 上半身 and 首
    assert m.bones[k["上半身"]].position[1] < m.bones[upper2].position[1] < m.bones[k["首"]].position[1]


def test_helpers_are_dropped_and_their_weights_go_to_the_nearest_exported_ancestor_never_bone_0():
    bones = HUMAN + [("SpineCollider", 2, (0, 13, 1)), ("LeftArmTwist", 5, (3, 15, 0)),
                     ("LeftHandIK_target", 7, (9, 15, 0)), ("FootPole.L", 0, (1, 5, -3)),
                     ("Armature_ctrl", 0, (0, 0, 0))]
    weights = [[("SpineCollider", 0.5), ("Neck", 0.5)], [("LeftHandIK_target", 1.0)], [("FootPole.L", 1.0)],
               [("Root", 0.25), ("LeftArm", 0.75)], [("LeftArmTwist", 1.0)]]
    m = _model(bones, weights)
    warnings = mmd_rig.apply(m)
    k = _by_name(m)
    for gone in ("SpineCollider", "LeftHandIK_target", "FootPole.L", "Armature_ctrl"):
        assert gone not in k
    assert "LeftArmTwist" in k  # a twist bone with weights is kept under its own name
    assert any("helper bone(s) dropped" in w and "SpineCollider" in w for w in warnings)
    v = m.vertices
    # collider under 上半身 → 上半身; both halves of the first vertex stay two bones
    assert sorted(zip(v["bones"][0, :2].tolist(), v["weights"][0, :2].tolist())) == sorted(
        [(k["上半身"], 0.5), (k["首"], 0.5)])
    assert (v["deform"][1], v["bones"][1, 0]) == (pmx.BDEF1, k["左手首"])
    # the pole's nearest exported ancestor is 全ての親: its weight goes to 下半身 instead, never bone 0
    assert (v["deform"][2], v["bones"][2, 0]) == (pmx.BDEF1, k["下半身"])
    # the merged root keeps its weight on 全ての親 (a merge, not a dropped helper)
    assert v["bones"][3, :2].tolist() == [0, k["左腕"]]
    assert [f for f in validate(m, for_export=True) if f.severity == "error"] == []


def test_two_bones_merging_into_one_make_a_valid_vertex():
    bones = [("_rootJoint", -1, (0, 0, 0)), ("b_Root_00", 0, (0, 0, 0))] + [
        (n, p + 1, pos) for n, p, pos in HUMAN[1:]]
    m = _model(bones, [[("_rootJoint", 0.3), ("b_Root_00", 0.7)],
                       [("_rootJoint", 0.2), ("b_Root_00", 0.3), ("Hips", 0.5)]])
    mmd_rig.apply(m)
    v = m.vertices
    assert (v["deform"][0], v["bones"][0].tolist(), v["weights"][0].tolist()) == (pmx.BDEF1, [0, -1, -1, -1],
                                                                                  [1, 0, 0, 0])
    assert v["deform"][1] == pmx.BDEF4 and sorted(zip(v["bones"][1].tolist(), v["weights"][1].tolist()))[-2:] == [
        (0, 0.5), (_by_name(m)["下半身"], 0.5)]
    assert [f for f in validate(m, for_export=True) if f.severity == "error"] == []


def test_existing_mmd_model_keeps_its_control_bones(testdata):
    m = pmx.read_file(testdata / "pmx" / "mmdtools_megurine_luka.pmx")
    old = {b.name: b for b in m.bones}
    mmd_rig.apply(m)
    k = _by_name(m)
    assert [b.name for b in m.bones].count("左足ＩＫ") == 1 and [b.name for b in m.bones].count("センター") == 1
    np.testing.assert_array_equal(m.bones[k["センター"]].position, old["センター"].position)
    assert m.bones[k["左足ＩＫ"]].ik.target == k["左足首"]
    assert [f for f in validate(m, for_export=True) if f.severity == "error"] == []


# ------------------------------------------------------------------------------------------------------------
# arm angle

def test_arm_angle_rest_transforms_turn_upper_arms_down_about_plus_y():
    # Blender axes: left arm along +X, right along -X, at height 1.5; forearms and hands below them
    parents = [-1, 0, 1, 2, 0, 4, 5, 0]
    heads = np.array([[0, 0, 1.0], [0.2, 0, 1.5], [0.5, 0, 1.5], [0.8, 0, 1.5], [-0.2, 0, 1.5], [-0.5, 0, 1.5],
                      [-0.8, 0, 1.5], [0, 0, 1.7]])
    d = mmd_arm_angle.arm_angle_rest_transforms(parents, heads, {1: "L", 4: "R"}, 30)
    moved = np.einsum("nij,nj->ni", d[:, :3, :3], heads) + d[:, :3, 3]
    for arm, tip in ((1, 2), (4, 5)):
        before, after = heads[tip] - heads[arm], moved[tip] - moved[arm]
        cos = before @ after / np.linalg.norm(before) / np.linalg.norm(after)
        assert math.degrees(math.acos(min(1.0, cos))) == pytest.approx(30, abs=1e-9)
        assert after[2] < before[2]  # the tip drops on both sides
        np.testing.assert_allclose(moved[arm], heads[arm], atol=1e-12)  # turned about its own head
    # the hand moves rigidly with the arm; the body and head stay
    np.testing.assert_allclose(d[3], d[1], atol=1e-12)
    np.testing.assert_allclose(d[[0, 7]], np.tile(np.eye(4), (2, 1, 1)), atol=0)
    # +θ for the left arm about +Y, −θ for the right
    c, s = math.cos(math.radians(30)), math.sin(math.radians(30))
    np.testing.assert_allclose(d[1, :3, :3], [[c, 0, s], [0, 1, 0], [-s, 0, c]], atol=1e-12)
    np.testing.assert_allclose(d[4, :3, :3], [[c, 0, -s], [0, 1, 0], [s, 0, c]], atol=1e-12)
    assert np.allclose(mmd_arm_angle.arm_angle_rest_transforms(parents, heads, {1: "L"}, 0), np.eye(4))


def test_arm_angle_on_records_without_the_rig_keeps_names():
    m = _model(HUMAN, [[("LeftForeArm", 1.0)], [("Spine", 1.0)]])
    before = [b.position.copy() for b in m.bones]
    warnings = mmd_rig.apply(m, rig=False, arm_angle=30)
    assert warnings == [] and [b.name for b in m.bones] == [n for n, _, _ in HUMAN]
    k = _by_name(m)
    # MMD axes: the left arm (+X) drops (−Y)
    d = m.bones[k["LeftForeArm"]].position - m.bones[k["LeftArm"]].position
    assert math.degrees(math.atan2(-d[1], d[0])) == pytest.approx(30, abs=1e-4)
    np.testing.assert_array_equal(m.bones[k["Spine"]].position, before[k["Spine"]])
    np.testing.assert_allclose(m.vertices["position"][0], m.bones[k["LeftForeArm"]].position, atol=1e-5)
    np.testing.assert_array_equal(m.vertices["position"][1], before[k["Spine"]])


def test_exported_parents_tell_the_vmd_exporter_the_pmx_hierarchy():
    """`exported_parents` (no records needed) names the parent every bone gets in the rigged PMX."""
    for bones in (HUMAN, [(n, p, (0, 0, 0)) for n, p in zip(FOX, FOX_PARENTS)]):
        m = _model(bones)
        mapping = mmd_bone_map.map_bones([b.name for b in m.bones], [b.parent for b in m.bones])
        expected = mmd_rig.exported_parents(mapping)
        mmd_rig.apply(m)
        parent = {b.name: (m.bones[b.parent].name if b.parent >= 0 else None) for b in m.bones}
        for i, name in enumerate(mapping.names):
            if expected[i] is not None:
                assert parent[mapping.exported_name(i)] == expected[i], name
    fox = mmd_bone_map.map_bones(FOX, FOX_PARENTS)
    assert mmd_rig.exported_parents(fox)[FOX.index("b_Spine01_02")] == "腰"  # not the hips, as in Blender
    assert mmd_rig.exported_parents(fox)[FOX.index("b_Root_00")] is None


def test_mmd_rig_keeps_every_bone_and_ik_chain_of_an_mmd_model(testdata):
    """Issue 31 item 2: Luka with necktie and hair IK chains (ﾈｸﾀｲＩＫ, 左髪ＩＫ, 右髪ＩＫ, their tips) added by our
    writer: after the rig every input bone is there, and every IK chain with its target, links, limits, loop
    and angle (7 IK bones in, 7 out)."""
    src = pmx.read(mmd_extras.luka_with_ik_chains(testdata / "pmx" / mmd_extras.LUKA))
    m = pmx.read(mmd_extras.luka_with_ik_chains(testdata / "pmx" / mmd_extras.LUKA))
    warnings = mmd_rig.apply(m)
    assert not any("dropped" in w for w in warnings), warnings
    k = _by_name(m)
    assert {b.name for b in src.bones} <= set(k)
    assert len([b for b in src.bones if b.ik is not None]) == 7
    assert len([b for b in m.bones if b.ik is not None]) == 7
    assert mmd_extras.missing_chains(src, m) == []
    # the tips hang on their IK bones, after them
    for name, _, _, _ in mmd_extras.IK_CHAINS + (("左足ＩＫ", 0, 0, 0), ("右つま先ＩＫ", 0, 0, 0)):
        assert m.bones[k[name + "先"]].parent == k[name] < k[name + "先"]
    assert [f for f in validate(m, for_export=True) if f.severity == "error"] == []
