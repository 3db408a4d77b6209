"""The PMX sample files the tests read (every one in ../shared/testdata/pmx) and a model generated in memory that
uses every record kind, for the codec, validator, Blender and babylon-mmd tests."""
from __future__ import annotations

import numpy as np

from skinbridge.io_pmx.model import pmx
from skinbridge.io_pmx.model.pmx import BoneFlag
from support.pmx_records import offsets

SAMPLES = ("mmdtools_megurine_luka.pmx", "babylonmmd_constraint_test.pmx", "babylonmmd_bone_flag_test.pmx",
           "mlibgo_sample_pmx21_utf8.pmx")
LUKA = "mmdtools_megurine_luka.pmx"


def f4(*values) -> np.ndarray:
    return np.array(values, np.float32)


def build_vertices(rng: np.random.Generator, types: list[int], n_bones: int, additional_uvs: int) -> np.ndarray:
    """Vertices the way the reader would return them (derived weights, -1 in unused bone slots)."""
    v = np.zeros(len(types), pmx.vertex_dtype(additional_uvs))
    n = len(types)
    v["position"] = rng.uniform(-10, 10, (n, 3))
    v["normal"] = rng.uniform(-1, 1, (n, 3))
    v["uv"] = rng.uniform(0, 1, (n, 2))
    v["add_uv"] = rng.uniform(-1, 1, (n, additional_uvs, 4))
    v["edge_scale"] = rng.uniform(0, 2, n)
    v["deform"] = types
    v["bones"] = -1
    for i, t in enumerate(types):
        k = pmx.DEFORM_BONE_COUNT[t]
        v["bones"][i, :k] = rng.choice(n_bones, k, replace=False)
        if t == pmx.BDEF1:
            v["weights"][i] = (1, 0, 0, 0)
        elif t in (pmx.BDEF2, pmx.SDEF):
            w = np.float32(rng.uniform(0, 1))
            v["weights"][i] = (w, np.float32(1) - w, 0, 0)
        else:
            v["weights"][i] = (0.5, 0.25, 0.125, 0.125)
        if t == pmx.SDEF:
            v["sdef_c"][i], v["sdef_r0"][i], v["sdef_r1"][i] = rng.uniform(-5, 5, (3, 3))
    return v


def build_full_model(encoding: int = pmx.ENCODING_UTF16, pmx21: bool = True) -> pmx.PmxModel:
    """Every deform type (QDEF only when pmx21), every morph type (flip/impulse only when pmx21), all bone
    flag parts, rigid bodies of each shape and mode, joints, and (pmx21) a soft body."""
    rng = np.random.default_rng(6)
    types = [0, 1, 2, 3, 4, 3, 1, 0, 2, 4] if pmx21 else [0, 1, 2, 3, 3, 1, 0, 2]
    m = pmx.PmxModel(name="全部入り", name_e="everything", comment="生成テスト\r\nline 2", comment_e="generated",
                     encoding=encoding)
    m.bones = [
        pmx.PmxBone("センター", "center", f4(0, 8, 0), -1, 0, 0x1F, tail_bone=1),
        pmx.PmxBone("上半身", "upper body", f4(0, 10, 0), 0, 0, 0x1A, tail_offset=f4(0, 2, 0)),
        pmx.PmxBone("左ひざ", "knee_L", f4(1, 4, 0), 0, 0, 0x1B, tail_bone=3),
        pmx.PmxBone("左足首", "ankle_L", f4(1, 1, 0), 2, 0, 0x1B, tail_bone=-1),
        pmx.PmxBone("左足ＩＫ", "leg IK_L", f4(1, 1, 0), 0, 1,
                    BoneFlag.ROTATABLE | BoneFlag.MOVABLE | BoneFlag.VISIBLE | BoneFlag.OPERABLE | BoneFlag.IK,
                    tail_offset=f4(0, 0, 1),
                    ik=pmx.PmxIK(target=3, loop=40, limit_angle=np.float32(2.0), links=[
                        pmx.PmxIKLink(2, lower=f4(-np.pi, 0, 0), upper=f4(-0.0087266, 0, 0)),
                        pmx.PmxIKLink(1)])),
        pmx.PmxBone("付与", "append", f4(0, 3, 0), 1, 2,
                    0x1B | BoneFlag.LOCAL_APPEND | BoneFlag.APPEND_ROTATE | BoneFlag.APPEND_MOVE
                    | BoneFlag.AFTER_PHYSICS, tail_bone=-1, append_parent=2, append_ratio=np.float32(-0.5)),
        pmx.PmxBone("軸", "axes", f4(0, 5, 0), 5, 0,
                    0x1B | BoneFlag.FIXED_AXIS | BoneFlag.LOCAL_AXES | BoneFlag.EXTERNAL_PARENT,
                    tail_bone=0, fixed_axis=f4(1, 0, 0), local_x=f4(1, 0, 0), local_z=f4(0, 0, 1),
                    external_key=7),
    ]
    n_bones = len(m.bones)
    m.vertices = build_vertices(rng, types, n_bones, additional_uvs=2)
    nv = len(m.vertices)
    m.indices = np.array([0, 1, 2, 2, 3, 4, 4, 5, 6, 6, 7, 0], np.int32)
    m.textures = ["tex\\body.png", "スフィア.spa"]
    m.materials = [
        pmx.PmxMaterial("体", "body", f4(1, 0.9, 0.8, 1), f4(0.1, 0.1, 0.1), np.float32(5), f4(0.5, 0.5, 0.5),
                        0x1F, f4(0, 0, 0, 1), np.float32(1), 0, 1, 1, 1, 3, "memo", 6),
        pmx.PmxMaterial("髪", "hair", draw_flags=0x01, texture=-1, sphere_texture=-1, sphere_mode=0,
                        shared_toon=0, toon=0, index_count=6),
    ]
    morphs = [
        pmx.PmxMorph("あ", "a", 3, pmx.MORPH_VERTEX,
                     offsets(pmx.MORPH_VERTEX, [(0, (0.1, 0.2, 0.3)), (nv - 1, (0, -1, 0))])),
        pmx.PmxMorph("骨", "bone", 4, pmx.MORPH_BONE,
                     offsets(pmx.MORPH_BONE, [(1, (0, 1, 0), (0, 0, 0.38268343, 0.9238795))])),
        *[pmx.PmxMorph(f"UV{t - pmx.MORPH_UV}", f"uv{t}", 4, t,
                       offsets(t, [(t % nv, (0.5, 0.25, 0, 1))])) for t in range(pmx.MORPH_UV, pmx.MORPH_UV4 + 1)],
        pmx.PmxMorph("材質", "material", 4, pmx.MORPH_MATERIAL, offsets(pmx.MORPH_MATERIAL, [
            (-1, 0, (1, 1, 1, 0.5), (1, 1, 1), 1, (1, 1, 1), (1, 1, 1, 1), 1, (1, 1, 1, 1), (1, 1, 1, 1),
             (1, 1, 1, 1)),
            (1, 1, (0, 0, 0, 0.1), (0, 0, 0), 0, (0, 0, 0), (0, 0, 0, 0), 0.5, (0, 0, 0, 0), (0, 0, 0, 0),
             (0, 0, 0, 0)),
        ])),
    ]
    group = pmx.PmxMorph("グループ", "group", 1, pmx.MORPH_GROUP, offsets(pmx.MORPH_GROUP, [(1, 1.0), (2, 0.5)]))
    m.morphs = [group, *morphs]
    if pmx21:
        m.morphs.append(pmx.PmxMorph("フリップ", "flip", 4, pmx.MORPH_FLIP,
                                     offsets(pmx.MORPH_FLIP, [(1, 1.0), (2, 1.0)])))
        m.morphs.append(pmx.PmxMorph("インパルス", "impulse", 4, pmx.MORPH_IMPULSE,
                                     offsets(pmx.MORPH_IMPULSE, [(1, 1, (0, 0, 1), (0, 1, 0))])))
    m.display_frames = [
        pmx.PmxDisplayFrame("Root", "Root", 1, [(0, 0)]),
        pmx.PmxDisplayFrame("表情", "Exp", 1, [(1, k) for k in range(len(m.morphs))]),
        pmx.PmxDisplayFrame("足", "Legs", 0, [(0, 2), (0, 3), (0, 4), (1, 0)]),
    ]
    m.rigid_bodies = [
        pmx.PmxRigidBody("頭", "head", 1, 0, 0xFFFE, 0, f4(1, 0, 0), f4(0, 18, 0), f4(0, 0, 0), np.float32(1),
                         np.float32(0.5), np.float32(0.5), np.float32(0), np.float32(0.5), 0),
        pmx.PmxRigidBody("髪", "hair", 5, 3, 0x00FF, 1, f4(1, 2, 3), f4(0, 16, -1), f4(0.1, 0.2, 0.3),
                         np.float32(0.2), np.float32(0.9), np.float32(0.9), np.float32(0.1), np.float32(0), 1),
        pmx.PmxRigidBody("袖", "sleeve", -1, 15, 0x8000, 2, f4(0.5, 1, 0), f4(2, 14, 0), f4(0, 0, 1.5707964),
                         np.float32(0.5), np.float32(0.5), np.float32(0.5), np.float32(0), np.float32(0.5), 2),
    ]
    m.joints = [
        pmx.PmxJoint("首", "neck", 0, 0, 1, f4(0, 17, 0), f4(0, 0, 0), f4(0, 0, 0), f4(0, 0, 0),
                     f4(-0.2, -0.1, -0.2), f4(0.2, 0.1, 0.2), f4(0, 0, 0), f4(10, 10, 10)),
    ]
    if pmx21:
        m.joints.append(pmx.PmxJoint("蝶番", "hinge", 5, 1, 2, f4(1, 15, 0)))
        anchors = pmx.empty_records(pmx.SOFT_ANCHOR, 2)
        anchors["rigid_body"] = (0, 2)
        anchors["vertex"] = (1, nv - 1)
        anchors["near_mode"] = (0, 1)
        m.soft_bodies = [pmx.PmxSoftBody(
            "スカート", "skirt", 0, 1, 4, 0xFFEF, 0x05, 2, 3, np.float32(2.5), np.float32(0.05), 1,
            f4(1, 0, 0, 0, 0, 0, 0.2, 0, 1, 0.1, 1, 0.7), f4(0.1, 1, 0.5, 0.5, 0.5, 0.5),
            np.array([0, 1, 0, 4], np.int32), f4(1, 0.5, 0.25), anchors, np.array([0, 3, nv - 1], np.int32))]
    return m
