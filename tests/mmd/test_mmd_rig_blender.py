"""Through Blender ("What it must show"):

1. Fox.glb through `skinbridge convert --to pmx --mmd-rig` maps as the issue lists, the control bones have the
   parents, targets, links and limits of docs/mmd.md §5.2, and the file passes our validator and babylon-mmd.
2. The demo humanoid (Mixamo names) maps completely without a bone map; a bone map renaming two bones wins.
3. `--arm-angle 30` on the demo humanoid: upper-arm tips 30° lower, other heads unchanged, the mesh equal to
   core/skinning.py applied to the rest export with that rotation (within 1e-5 of the bounding-box diagonal).
4. Exporting while an action plays is byte-identical to exporting at rest, and changes nothing in the scene.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from conftest import run_cli  # noqa: E402
from skinbridge.app import demo  # noqa: E402
from skinbridge.blender import scene as bscene  # noqa: E402
from support.fingerprint import diff_fingerprints, scene_fingerprint  # noqa: E402
from skinbridge.core import skinning  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_io  # noqa: E402
from skinbridge.io_pmx.model import convert  # noqa: E402
from skinbridge.io_pmx.model.units import METRES_PER_UNIT  # noqa: E402
from skinbridge.io_pmx.rig import arm_angle as mmd_arm_angle  # noqa: E402
from skinbridge.io_pmx.model import pmx  # noqa: E402
from skinbridge.io_pmx.model.validate import validate  # noqa: E402
from support.babylon import babylon_parse  # noqa: E402
from support.bytes_compare import assert_same_bytes  # noqa: E402
from support import mmd_extras  # noqa: E402

pytestmark = pytest.mark.blender

KNEE_LOWER_BITS = [0xC0490FDB, 0, 0]
KNEE_UPPER_BITS = [0xBC0EFA35, 0, 0]


def _names(m: pmx.PmxModel) -> dict[str, int]:
    return {b.name: i for i, b in enumerate(m.bones)}


def _parent_names(m: pmx.PmxModel) -> dict[str, str | None]:
    return {b.name: (m.bones[b.parent].name if b.parent >= 0 else None) for b in m.bones}


def _check_control_layer(m: pmx.PmxModel, fitted: bool = False) -> None:
    """docs/mmd.md §5.2 and §5.3, exactly. `fitted`: written with motions whose knee keys bend
    both ways, the knee limit's inner edge is widened past them (io_pmx/rig/knees.py)."""
    k = _names(m)
    parent = _parent_names(m)
    assert m.bones[0].name == "全ての親"
    assert {c: parent[c] for c in ("全ての親", "センター", "グルーブ", "腰", "上半身", "上半身2", "下半身")} == {
        "全ての親": None, "センター": "全ての親", "グルーブ": "センター", "腰": "グルーブ", "上半身": "腰",
        "上半身2": "上半身", "下半身": "腰"}
    expected_flags = {"全ての親": 0x1F, "センター": 0x1E, "グルーブ": 0x1E, "腰": 0x1A, "上半身": 0x1B,
                      "上半身2": 0x1B, "下半身": 0x1A}
    assert {n: m.bones[k[n]].flags for n in expected_flags} == expected_flags
    for side in "左右":
        ik_parent, leg_ik, toe_ik = side + "足IK親", side + "足\uff29\uff2b", side + "つま先\uff29\uff2b"
        assert "IK" in ik_parent  # ASCII in 足IK親, full-width in the IK bones
        assert (parent[side + "足"], parent[ik_parent], parent[leg_ik], parent[toe_ik]) == (
            "下半身", "全ての親", ik_parent, leg_ik)
        a, b, c = m.bones[k[ik_parent]], m.bones[k[leg_ik]], m.bones[k[toe_ik]]
        assert [(x.flags, x.layer) for x in (a, b, c)] == [(0x1F, 0), (0x3E, 1), (0x3E, 2)]
        assert (b.ik.target, b.ik.loop, float(b.ik.limit_angle)) == (k[side + "足首"], 40, 2.0)
        knee, leg = b.ik.links
        assert (knee.bone, leg.bone, leg.lower, leg.upper) == (k[side + "ひざ"], k[side + "足"], None, None)
        assert knee.lower.view(np.uint32).tolist() == KNEE_LOWER_BITS
        if fitted:
            assert 0 < knee.upper[0] < np.radians(30)  # Fox's shins swing forward by up to about 17°
            assert knee.upper.view(np.uint32).tolist()[1:] == [0, 0]
        else:
            assert knee.upper.view(np.uint32).tolist() == KNEE_UPPER_BITS
        assert (c.ik.target, c.ik.loop, float(c.ik.limit_angle)) == (k[side + "つま先"], 3, 4.0)
        assert [(x.bone, x.lower, x.upper) for x in c.ik.links] == [(k[side + "足首"], None, None)]
        assert (m.bones[k[side + "つま先"]].flags, m.bones[k[side + "つま先"]].layer) == (0x12, 2)
        assert [m.bones[k[side + p]].flags for p in ("足", "ひざ", "足首")] == [0x1B] * 3
    for i, bone in enumerate(m.bones):  # parents first; every bone descends from 全ての親
        assert bone.parent < i, bone.name
        j = i
        while m.bones[j].parent >= 0:
            j = m.bones[j].parent
        assert j == 0, bone.name


def _check_babylon(path, m: pmx.PmxModel) -> None:
    (r,) = babylon_parse([path]).values()
    assert "error" not in r, r.get("error")
    assert r["warnings"] == []
    assert r["boneNames"] == [b.name for b in m.bones]
    assert r["boneFlags"] == [int(b.flags) for b in m.bones]
    got = {x["bone"]: x for x in r["ik"]}
    for side in "左右":
        leg_ik = got[side + "足ＩＫ"]
        assert (leg_ik["target"], leg_ik["iteration"]) == (_names(m)[side + "足首"], 40)
        knee = leg_ik["links"][0]
        assert np.float32(knee["lower"]).view(np.uint32).tolist() == KNEE_LOWER_BITS
        assert np.float32(knee["upper"]).tolist() == m.bones[_names(m)[side + "足ＩＫ"]].ik.links[0].upper.tolist()
        assert leg_ik["links"][1]["lower"] is None
        assert got[side + "つま先ＩＫ"]["iteration"] == 3


# -- item 1 ---------------------------------------------------------------------------------------------------

FOX_MAPPING = {"b_Hip_01": "下半身", "b_Spine01_02": "上半身", "b_Spine02_03": "上半身2", "b_Neck_04": "首",
               "b_Head_05": "頭",
               "b_LeftUpperArm_09": "左腕", "b_LeftForeArm_010": "左ひじ", "b_LeftHand_011": "左手首",
               "b_RightUpperArm_06": "右腕", "b_RightForeArm_07": "右ひじ", "b_RightHand_08": "右手首",
               "b_LeftLeg01_015": "左足", "b_LeftLeg02_016": "左ひざ", "b_LeftFoot01_017": "左足首",
               "b_LeftFoot02_018": "左つま先",
               "b_RightLeg01_019": "右足", "b_RightLeg02_020": "右ひざ", "b_RightFoot01_021": "右足首",
               "b_RightFoot02_022": "右つま先"}


@pytest.mark.slow
def test_fox_with_mmd_rig_maps_validates_and_parses_in_babylon(testdata, tmp_path):
    plain, rigged = tmp_path / "plain", tmp_path / "rigged"
    r = run_cli("convert", testdata / "gltf" / "Fox.glb", "--to", "pmx", "-o", plain)
    assert r.returncode == 0, r.stderr
    r = run_cli("convert", testdata / "gltf" / "Fox.glb", "--to", "pmx", "--mmd-rig", "-o", rigged)
    assert r.returncode == 0, r.stderr
    rig_warnings = [line for line in r.stderr.splitlines() if line.startswith("warning")
                    and ("--mmd-rig" in line or " leg " in line or "bone map" in line)]
    assert rig_warnings == []  # nothing dropped, nothing unmapped (the motions' own warnings: tested with them)
    before = pmx.read_file(plain / "Fox.pmx")
    m = pmx.read_file(rigged / "Fox.pmx")
    k = _names(m)
    parent = _parent_names(m)
    # the mapping: each mapped bone keeps its source name as its English name
    source_of = {b.name_e: b.name for b in m.bones if b.name_e.startswith("b_")}
    assert {src: source_of[src] for src in FOX_MAPPING} == FOX_MAPPING
    # _rootJoint and b_Root_00 merge into 全ての親 (bone 0); nothing else disappears
    names = [b.name for b in m.bones]
    assert "_rootJoint" not in names and "b_Root_00" not in names and names[0] == "全ての親"
    assert len(m.bones) == len(before.bones) - 2 + 4 + 6  # merged roots; センター..腰; IK親, 足ＩＫ, つま先ＩＫ ×2
    # tail bones keep their names under 下半身
    assert (parent["b_Tail01_012"], parent["b_Tail02_013"], parent["b_Tail03_014"]) == (
        "下半身", "b_Tail01_012", "b_Tail02_013")
    # the limbs keep their chains
    for side in "左右":
        assert [parent[side + x] for x in ("ひじ", "手首", "ひざ", "足首", "つま先")] == [
            side + "腕", side + "ひじ", side + "足", side + "ひざ", side + "足首"]
        assert parent[side + "腕"] == "上半身2"
    assert (parent["首"], parent["頭"]) == ("上半身2", "首")
    _check_control_layer(m, fitted=True)
    # weights: the same vertices, each bone's weight moved with it (the roots had none)
    assert len(m.vertices) == len(before.vertices)
    old_index = {b.name_e or b.name: i for i, b in enumerate(before.bones)}
    # (a name too long for a VMD is shortened in the plain PMX, the full one kept as its English name)
    remap = np.array([k.get(FOX_MAPPING.get(b.name_e or b.name, b.name), 0) for b in before.bones])
    np.testing.assert_array_equal(np.where(before.vertices["bones"] >= 0, remap[before.vertices["bones"]], -1),
                                  m.vertices["bones"])
    np.testing.assert_array_equal(before.vertices["weights"], m.vertices["weights"])
    np.testing.assert_array_equal(before.vertices["position"], m.vertices["position"])
    for src, mmd in FOX_MAPPING.items():  # bone heads do not move
        np.testing.assert_array_equal(m.bones[k[mmd]].position, before.bones[old_index[src]].position)
    assert validate(m, for_export=True) == []
    _check_babylon(rigged / "Fox.pmx", m)


# -- item 2 ---------------------------------------------------------------------------------------------------

HUMANOID_MMD = {"Hips": "下半身", "Spine": "上半身", "Spine1": "上半身2", "Spine2": "上半身3", "Neck": "首",
                "Head": "頭"}
for _side, _mmd in (("Left", "左"), ("Right", "右")):
    HUMANOID_MMD.update({f"{_side}Shoulder": _mmd + "肩", f"{_side}Arm": _mmd + "腕", f"{_side}ForeArm": _mmd + "ひじ",
                         f"{_side}Hand": _mmd + "手首", f"{_side}UpLeg": _mmd + "足", f"{_side}Leg": _mmd + "ひざ",
                         f"{_side}Foot": _mmd + "足首", f"{_side}ToeBase": _mmd + "つま先"})


@pytest.fixture
def humanoid(clean_scene):
    result = bscene.build_scene(bpy.context, demo.humanoid_scene(), "Humanoid")
    return result.armature


def _export(path, **options) -> pmx.PmxModel:
    blender_io.export_pmx(bpy.context, str(path), **options)
    return pmx.read_file(path)


def test_demo_humanoid_maps_completely_and_a_bone_map_wins(humanoid, tmp_path):
    assert set(HUMANOID_MMD) == {n for n, _, _ in demo.HUMANOID}
    m = _export(tmp_path / "auto.pmx", mmd_rig=True)
    sources = {demo.PREFIX + n for n, _, _ in demo.HUMANOID}
    source_of = {b.name_e: b.name for b in m.bones if b.name_e in sources}
    assert source_of == {demo.PREFIX + src: mmd for src, mmd in HUMANOID_MMD.items()}  # every bone mapped
    assert not any(b.name in sources for b in m.bones)
    _check_control_layer(m)
    assert validate(m, for_export=True) == []
    _check_babylon(tmp_path / "auto.pmx", m)

    bone_map = tmp_path / "map.json"
    bone_map.write_text(json.dumps({demo.PREFIX + "Spine2": "胸", demo.PREFIX + "LeftShoulder": "左肩P"},
                                   ensure_ascii=False), encoding="utf-8")
    mapped = _export(tmp_path / "mapped.pmx", mmd_rig=True, bone_map=str(bone_map))
    names, mapped_names = [b.name for b in m.bones], [b.name for b in mapped.bones]
    assert mapped_names == [{"上半身3": "胸", "左肩": "左肩P"}.get(n, n) for n in names]
    parent = _parent_names(mapped)
    assert (parent["首"], parent["左肩P"], parent["左腕"], parent["胸"]) == ("胸", "胸", "左肩P", "上半身2")
    assert validate(mapped, for_export=True) == []


def test_export_operator_has_the_rig_options(humanoid, tmp_path):
    out = tmp_path / "op.pmx"
    assert bpy.ops.export_scene.skinbridge_pmx(filepath=str(out), mmd_rig=True, arm_angle=30.0) == {
        "FINISHED"}
    by_operator = pmx.read_file(out)
    direct = _export(tmp_path / "direct.pmx", mmd_rig=True, arm_angle=30)
    assert [b.name for b in by_operator.bones] == [b.name for b in direct.bones]
    # the angle property is a float32 in radians: the same turn within its precision
    np.testing.assert_allclose(by_operator.vertices["position"], direct.vertices["position"], atol=1e-4)


def test_rig_operator_keeps_an_mmd_models_own_ik_chains(clean_scene, testdata, tmp_path):
    """Issue 31: Luka with necktie and hair IK chains, imported and exported with MMD Rig: every bone and IK
    chain of the input (links, limits, loop, angle) is in the output, and the file validates."""
    path = tmp_path / "luka_ik.pmx"
    path.write_bytes(mmd_extras.luka_with_ik_chains(testdata / "pmx" / mmd_extras.LUKA))
    blender_io.import_pmx(bpy.context, str(path), physics=False)
    out = tmp_path / "rigged.pmx"
    assert bpy.ops.export_scene.skinbridge_pmx(filepath=str(out), mmd_rig=True) == {"FINISHED"}
    rigged = pmx.read_file(out)
    assert mmd_extras.missing_chains(pmx.read_file(path), rigged) == []
    assert [f for f in validate(rigged, for_export=True) if f.severity == "error"] == []


# -- item 3 ---------------------------------------------------------------------------------------------------

def _y_rotation(degrees: float) -> np.ndarray:
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def test_arm_angle_turns_the_arms_and_reposes_the_mesh_like_core_skinning(humanoid, tmp_path):
    rest = _export(tmp_path / "rest.pmx", mmd_rig=True)
    turned = _export(tmp_path / "turned.pmx", mmd_rig=True, arm_angle=30)
    assert [b.name for b in rest.bones] == [b.name for b in turned.bones]
    k = _names(rest)
    n = len(rest.bones)
    scale = METRES_PER_UNIT
    heads = convert.positions_to_blender(np.array([b.position for b in rest.bones]), scale)
    heads_turned = convert.positions_to_blender(np.array([b.position for b in turned.bones]), scale)
    parents = np.array([b.parent for b in rest.bones])
    arm_chain = set()
    for side in "左右":
        arm_chain.update(i for i in range(n) if k[side + "腕"] in _chain_up(parents, i))
        before = heads[k[side + "ひじ"]] - heads[k[side + "腕"]]
        after = heads_turned[k[side + "ひじ"]] - heads_turned[k[side + "腕"]]
        drop = math.degrees(math.atan2(before[2], abs(before[0])) - math.atan2(after[2], abs(after[0])))
        assert drop == pytest.approx(30, abs=1e-4), side  # the tip is 30° lower, on both sides
        assert after[1] == pytest.approx(before[1], abs=1e-6)  # about +Y: no forward or backward swing
        np.testing.assert_array_equal(heads_turned[k[side + "腕"]], heads[k[side + "腕"]])
    for i in range(n):
        if i not in arm_chain:  # bone heads outside the arm chains are unchanged
            np.testing.assert_array_equal(turned.bones[i].position, rest.bones[i].position, rest.bones[i].name)

    # the reference: the rest export skinned by core/skinning.py with each upper arm's local transform turned
    world_rest = np.tile(np.eye(4), (n, 1, 1))
    world_rest[:, :3, 3] = heads  # MMD bones have no orientation: rest = translation
    local = np.array([world_rest[i] if parents[i] < 0 else np.linalg.inv(world_rest[parents[i]]) @ world_rest[i]
                      for i in range(n)])
    for side, sign in (("左", 1), ("右", -1)):
        local[k[side + "腕"], :3, :3] = _y_rotation(30 * sign)
    world = skinning.world_matrices(parents, local)
    v = rest.vertices
    count = np.array(pmx.DEFORM_BONE_COUNT)[v["deform"]]
    used = (np.arange(4)[None, :] < count[:, None]) & (v["bones"] >= 0)
    joints = np.where(used, v["bones"], 0)
    weights = np.where(used, v["weights"], 0)
    positions = convert.positions_to_blender(v["position"], scale)
    expected = skinning.skin(positions, joints, weights, skinning.skin_matrices(world, world_rest))
    got = convert.positions_to_blender(turned.vertices["position"], scale)
    diagonal = float(np.linalg.norm(positions.max(axis=0) - positions.min(axis=0)))
    assert np.abs(got - expected).max() <= 1e-5 * diagonal
    assert np.abs(got - positions).max() > 0.1 * diagonal  # the arms did move
    assert validate(turned, for_export=True) == []


def _chain_up(parents, i):
    out = [i]
    while parents[i] >= 0:
        i = parents[i]
        out.append(i)
    return out


def test_skeleton_arm_angle_rest_is_the_same_function_for_the_vmd_exporter():
    """The VMD exporter's entry point gives, on the core skeleton, the rest transforms the PMX export wrote."""
    skel = demo.humanoid_scene().skeleton
    d = mmd_arm_angle.skeleton_arm_angle_rest(skel, 30)
    binds = skel.binds()
    left, elbow = skel.index(demo.PREFIX + "LeftArm"), skel.index(demo.PREFIX + "LeftForeArm")
    moved = d[elbow] @ binds[elbow]
    np.testing.assert_allclose(moved[:3, 3] - binds[left][:3, 3],
                               _y_rotation(30) @ (binds[elbow][:3, 3] - binds[left][:3, 3]), atol=1e-12)
    assert np.allclose(d[skel.index(demo.PREFIX + "Head")], np.eye(4))


# -- item 4 ---------------------------------------------------------------------------------------------------

def test_export_while_an_action_plays_is_byte_identical_to_rest(humanoid, tmp_path):
    options = dict(mmd_rig=True, arm_angle=30)
    blender_io.export_pmx(bpy.context, str(tmp_path / "rest.pmx"), **options)
    demo.add_walk(humanoid)
    bpy.context.view_layer.objects.active = humanoid
    bpy.ops.object.mode_set(mode="POSE")
    humanoid.pose.bones[demo.PREFIX + "Head"].rotation_quaternion = (0.9, 0.3, 0.1, 0.0)  # by hand, unkeyed
    bpy.context.scene.frame_set(9)
    assert humanoid.animation_data.action is not None
    pose = [tuple(pb.matrix_basis.col[3]) + tuple(pb.rotation_quaternion) for pb in humanoid.pose.bones]
    assert any(abs(x - y) > 1e-3 for p in pose for x, y in zip(p, (0, 0, 0, 1, 1, 0, 0, 0)))
    before = scene_fingerprint()
    blender_io.export_pmx(bpy.context, str(tmp_path / "playing.pmx"), **options)
    assert diff_fingerprints(before, scene_fingerprint()) == []
    assert_same_bytes((tmp_path / "playing.pmx").read_bytes(), (tmp_path / "rest.pmx").read_bytes(), pmx.read)


def test_a_rigged_convert_reads_the_scene_and_the_bone_map_once(humanoid, tmp_path, monkeypatch):
    """`convert --to pmx --mmd-rig --bone-map` with two actions: the exported objects are found once and the bone
    map file is read once, for the model and every motion."""
    from skinbridge.app.options import ConvertOptions
    from skinbridge.io_pmx.blender_side import blender_motion_retarget
    from skinbridge.io_pmx.rig import rig

    arm = humanoid
    arm.animation_data_create()
    for name, angle in (("Walk", 0.3), ("Wave", -0.4)):
        act = bpy.data.actions.new(name)
        arm.animation_data.action = act
        pb = arm.pose.bones[demo.PREFIX + "LeftArm"]
        pb.rotation_mode = "QUATERNION"
        for frame, a in ((0, 0.0), (10, angle)):
            pb.rotation_quaternion = (math.cos(a / 2), 0, math.sin(a / 2), 0)
            pb.keyframe_insert("rotation_quaternion", frame=frame)
    bone_map = tmp_path / "map.json"
    bone_map.write_text(json.dumps({demo.PREFIX + "Spine2": "胸"}, ensure_ascii=False), encoding="utf-8")
    calls = {"objects": 0, "bone map": 0}
    real_objects, real_load = bscene.exportable_objects, blender_io.load_bone_map

    def objects(*args, **kwargs):
        calls["objects"] += 1
        return real_objects(*args, **kwargs)

    def load(*args, **kwargs):
        calls["bone map"] += 1
        return real_load(*args, **kwargs)

    monkeypatch.setattr(bscene, "exportable_objects", objects)
    for module in (blender_io, blender_motion_retarget, rig):
        monkeypatch.setattr(module, "load_bone_map", load)
    options = ConvertOptions(target="pmx", mmd_rig=True, bone_map=str(bone_map))
    written, _ = blender_io.export_target(bpy.context, str(tmp_path / "out"), "Humanoid", options)
    assert sorted(p.rsplit("/", 1)[-1] for p in written if p.endswith(".vmd")) == ["Walk.vmd", "Wave.vmd"]
    assert calls == {"objects": 1, "bone map": 1}
    assert "胸" in [b.name for b in pmx.read_file(tmp_path / "out" / "Humanoid.pmx").bones]
