"""A small MMD model our PMX writer makes for the physics tests of issue 48: a trunk (センター, 下半身, 上半身,
首, 頭, the head's body following it), straight legs with MMD's leg and toe IK, and two 6-bone hair-like
chains that hang from the head, each with its own IK bone under センター (左髪ＩＫ, 右髪ＩＫ, as many public
models have), every chain bone on a mode-1 dynamic capsule jointed to the one above; and a VMD our writer
makes that sways センター and turns 頭."""
from __future__ import annotations

import math

import numpy as np

from skinbridge.io_pmx.model import pmx
from skinbridge.io_pmx.model.pmx import BoneFlag
from skinbridge.io_pmx.motion import vmd

IK_FLAGS = BoneFlag.ROTATABLE | BoneFlag.MOVABLE | BoneFlag.VISIBLE | BoneFlag.OPERABLE | BoneFlag.IK
PLAIN_FLAGS = BoneFlag.ROTATABLE | BoneFlag.VISIBLE | BoneFlag.OPERABLE
MOVE_FLAGS = PLAIN_FLAGS | BoneFlag.MOVABLE
CHAIN = 6  # bones per hair chain
SIDES = (("左", 1.0), ("右", -1.0))
HEAD_Y = 15.0
LINK = 0.8  # units between chain bones
HAIR_GROUP = 1


def f4(*values) -> np.ndarray:
    return np.array(values, np.float32)


def _bone(m, name, parent, position, flags=PLAIN_FLAGS, layer=0) -> int:
    m.bones.append(pmx.PmxBone(name=name, name_e="", position=f4(*position), parent=parent, layer=layer,
                               flags=int(flags), tail_offset=f4(0, 0, 0)))
    return len(m.bones) - 1


def hair_names(side: str) -> list[str]:
    return [f"{side}髪{k + 1}" for k in range(CHAIN)]


def _body(name, bone, group, mask, shape, size, position, mode) -> pmx.PmxRigidBody:
    return pmx.PmxRigidBody(name=name, bone=bone, group=group, no_collision_mask=mask, shape=shape,
                            size=f4(*size), position=f4(*position), rotation=f4(0, 0, 0), mass=np.float32(1),
                            linear_damping=np.float32(0.5), angular_damping=np.float32(0.5),
                            restitution=np.float32(0), friction=np.float32(0.5), mode=mode)


def _joint(name, a, b, position, turn=0.35) -> pmx.PmxJoint:
    return pmx.PmxJoint(name=name, kind=0, rigid_a=a, rigid_b=b, position=f4(*position), rotation=f4(0, 0, 0),
                        translation_lower=f4(0, 0, 0), translation_upper=f4(0, 0, 0),
                        rotation_lower=f4(-turn, -turn, -turn), rotation_upper=f4(turn, turn, turn),
                        spring_translation=f4(0, 0, 0), spring_rotation=f4(0, 0, 0))


def _mesh(m) -> None:
    """One small weighted triangle per bone, so that the model has a mesh."""
    n = len(m.bones)
    v = np.zeros(3 * n, pmx.vertex_dtype(0))
    for i, b in enumerate(m.bones):
        v["position"][3 * i:3 * i + 3] = np.asarray(b.position) + np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0]])
    v["normal"] = (0, 0, -1)
    v["deform"] = pmx.BDEF1
    v["bones"] = -1
    v["bones"][:, 0] = np.repeat(np.arange(n), 3)
    v["weights"][:, 0] = 1
    v["edge_scale"] = 1
    m.vertices = v
    m.indices = np.arange(3 * n, dtype=np.int32)
    m.materials = [pmx.PmxMaterial("体", "body", draw_flags=0x01, index_count=3 * n)]


def hair_model() -> pmx.PmxModel:
    """The model (records; `pmx.write` makes the file)."""
    m = pmx.PmxModel(name="髪テスト", name_e="hair test", comment="SkinBridge tests", comment_e="")
    root = _bone(m, "全ての親", -1, (0, 0, 0), MOVE_FLAGS)
    center = _bone(m, "センター", root, (0, 8, 0), MOVE_FLAGS)
    lower = _bone(m, "下半身", center, (0, 10, 0))
    upper = _bone(m, "上半身", center, (0, 10, 0))
    neck = _bone(m, "首", upper, (0, 13.5, 0))
    head = _bone(m, "頭", neck, (0, HEAD_Y, 0))
    for side, x in SIDES:  # straight legs (hip, knee and ankle in a line) with MMD's leg and toe IK
        leg = _bone(m, f"{side}足", lower, (x, 10, 0))
        knee = _bone(m, f"{side}ひざ", leg, (x, 5.5, 0))
        ankle = _bone(m, f"{side}足首", knee, (x, 1.0, 0))
        toe = _bone(m, f"{side}つま先", ankle, (x, 0.0, -1.5))
        for a, b in ((leg, knee), (knee, ankle), (ankle, toe)):
            m.bones[a].flags |= BoneFlag.TAIL_IS_BONE
            m.bones[a].tail_bone, m.bones[a].tail_offset = b, None
        leg_ik = _bone(m, f"{side}足ＩＫ", root, (x, 1.0, 0), IK_FLAGS, layer=1)
        m.bones[leg_ik].ik = pmx.PmxIK(target=ankle, loop=40, limit_angle=np.float32(2.0), links=[
            pmx.PmxIKLink(knee, f4(-math.pi, 0, 0), f4(-0.0087266, 0, 0)), pmx.PmxIKLink(leg)])
        toe_ik = _bone(m, f"{side}つま先ＩＫ", leg_ik, (x, 0.0, -1.5), IK_FLAGS, layer=1)
        m.bones[toe_ik].ik = pmx.PmxIK(target=toe, loop=3, limit_angle=np.float32(4.0), links=[pmx.PmxIKLink(ankle)])
    m.rigid_bodies.append(_body("頭", head, 0, 0xFFFF, 0, (1.0, 0, 0), (0, HEAD_Y + 1.0, 0), 0))
    mask = 0xFFFF & ~(1 << HAIR_GROUP)
    for side, x in SIDES:
        chain = []
        for k, name in enumerate(hair_names(side)):
            at = (x, HEAD_Y - LINK * k, 1.0)
            chain.append(_bone(m, name, head if k == 0 else chain[-1], at))
            body = len(m.rigid_bodies)
            m.rigid_bodies.append(_body(name, chain[-1], HAIR_GROUP, mask, 2, (0.15, LINK / 2, 0),
                                        (x, at[1] - LINK / 2, 1.0), 1))
            m.joints.append(_joint(f"{name}J", 0 if k == 0 else body - 1, body, at))
        target = chain[-1]
        ik = _bone(m, f"{side}髪ＩＫ", center, m.bones[target].position, IK_FLAGS, layer=1)
        m.bones[ik].ik = pmx.PmxIK(target=target, loop=15, limit_angle=np.float32(0.5),
                                   links=[pmx.PmxIKLink(i) for i in reversed(chain[:-1])])
    _mesh(m)
    m.display_frames = [pmx.PmxDisplayFrame("Root", "Root", 1, [(0, root)]), pmx.PmxDisplayFrame("表情", "Exp", 1, [])]
    return m


def hair_model_bytes() -> bytes:
    return pmx.write(hair_model())


def _quat_x(angle: float) -> tuple:
    """MMD x, y, z, w of a turn about MMD's X axis."""
    return (math.sin(angle / 2), 0.0, 0.0, math.cos(angle / 2))


def sway_motion(last: int = 600, still_from: int | None = None) -> vmd.Motion:
    """センター swaying left and right (±3 units) and 頭 nodding every 40 frames, from frame 0 to `still_from`
    (default `last`), then a key holding at `last`: a motion of `last` frames."""
    end = last if still_from is None else still_from
    frames = list(range(0, end + 1, 40)) + ([last] if last != end or end % 40 else [])
    keys = vmd.new_bone_keys(2 * len(frames))
    for k, f in enumerate(frames):
        moving = f <= end and k % 2 == 1
        for j, name in enumerate(("センター", "頭")):
            rec = keys[2 * k + j]
            rec["name"] = vmd.encode_name(name)
            rec["frame"] = f
            rec["position"] = (3.0 if moving else 0.0, 0, 0) if name == "センター" else (0, 0, 0)
            rec["rotation"] = _quat_x(0.4 if moving else 0.0) if name == "頭" else (0, 0, 0, 1)
    m = vmd.Motion(bone_keys=keys)
    m.model_name = "髪テスト"
    return m


def ik_switches(m: vmd.Motion, frame: int) -> vmd.Motion:
    """`m` with IK on/off keys: every IK on at frame 0; at `frame` 左足ＩＫ off and 左髪ＩＫ on again."""
    names = [f"{side}{part}" for side, _ in SIDES for part in ("足ＩＫ", "つま先ＩＫ", "髪ＩＫ")]
    on = np.zeros(len(names), vmd.IK_STATE)
    for k, name in enumerate(names):
        on[k] = (vmd.encode_name(name, vmd.IK_NAME_SIZE), 1)
    later = np.zeros(2, vmd.IK_STATE)
    later[0] = (vmd.encode_name("左足ＩＫ", vmd.IK_NAME_SIZE), 0)
    later[1] = (vmd.encode_name("左髪ＩＫ", vmd.IK_NAME_SIZE), 1)
    m.property_keys = [vmd.PropertyKey(0, 1, on), vmd.PropertyKey(frame, 1, later)]
    return m


# a bone morph whose values a float32 round trip through Blender's pose would not give back bit for bit
BONE_MORPH = "頭骨"
BONE_MORPH_ROWS = (("頭", (0.0, 0.5, -0.625), (0.1736482, 0.0, 0.0, 0.9848078)),
                   ("首", (0.0, 0.0, 0.0), (0.0, 0.258819, 0.0, 0.9659258)))


def hair_model_with_bone_morph() -> pmx.PmxModel:
    """The model with `BONE_MORPH` (頭 moved and turned, 首 turned), shown in the 表情 display frame."""
    m = hair_model()
    index = {b.name: i for i, b in enumerate(m.bones)}
    rows = pmx.empty_records(pmx.MORPH_OFFSETS[pmx.MORPH_BONE], len(BONE_MORPH_ROWS))
    for r, (name, t, q) in enumerate(BONE_MORPH_ROWS):
        rows[r] = (index[name], t, q)
    m.morphs.append(pmx.PmxMorph(BONE_MORPH, "head bone", 4, pmx.MORPH_BONE, rows))
    m.display_frames[1].elements.append((1, len(m.morphs) - 1))
    return m


def fk_motion(bones=("上半身", "首", "頭"), last: int = 60) -> vmd.Motion:
    """Keys of FK bones only (no IK bone, no センター): each of `bones` turns about MMD's X and back, 0.3 rad
    at `last` / 2."""
    keys = vmd.new_bone_keys(3 * len(bones))
    for j, name in enumerate(bones):
        for k, (f, a) in enumerate(((0, 0.0), (last // 2, 0.3), (last, 0.0))):
            rec = keys[3 * j + k]
            rec["name"] = vmd.encode_name(name)
            rec["frame"] = f
            rec["rotation"] = _quat_x(a)
    return vmd.Motion(bone_keys=keys)
