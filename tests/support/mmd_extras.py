"""Luka variants our PMX writer makes for the tests of issue 31: the stock model with the hair and necktie IK
chains a stock model often has (ﾈｸﾀｲＩＫ, 左髪ＩＫ, 右髪ＩＫ and their tips), and with one morph of every kind
added (group, bone, material, UV, additional UV 1-4, flip, impulse)."""
from __future__ import annotations

import pathlib

import numpy as np

from skinbridge.io_pmx.model import pmx
from skinbridge.io_pmx.model.pmx import BoneFlag

LUKA = "mmdtools_megurine_luka.pmx"  # in the testdata fixture's pmx/ folder
IK_FLAGS = BoneFlag.ROTATABLE | BoneFlag.MOVABLE | BoneFlag.VISIBLE | BoneFlag.OPERABLE | BoneFlag.IK
PLAIN_FLAGS = BoneFlag.ROTATABLE | BoneFlag.VISIBLE | BoneFlag.OPERABLE
# the chains added: IK bone name, parent name, target name, link names (the first one limited)
IK_CHAINS = (("ﾈｸﾀｲＩＫ", "上半身2", "ﾈｸﾀｲ３", ("ﾈｸﾀｲ２", "ﾈｸﾀｲ１")),
             ("左髪ＩＫ", "頭", "左後髪前列４", ("左後髪前列３", "左後髪前列２", "左後髪前列１")),
             ("右髪ＩＫ", "頭", "右後髪前列３", ("右後髪前列２", "右後髪前列１")))


def _bone(name: str, parent: int, position, flags: int) -> pmx.PmxBone:
    return pmx.PmxBone(name=name, name_e="", position=np.asarray(position, "<f4"), parent=parent, flags=int(flags),
                       tail_offset=np.zeros(3, "<f4"))


def luka_with_ik_chains(path: pathlib.Path) -> bytes:
    """Luka with a three-bone necktie under 上半身2 and the three IK chains of IK_CHAINS, each with a tip
    (名前先) hanging on its IK bone; the PMX bytes our writer makes."""
    m = pmx.read_file(path)
    index = {b.name: i for i, b in enumerate(m.bones)}
    neck = np.asarray(m.bones[index["首"]].position, np.float64)
    for k, name in enumerate(("ﾈｸﾀｲ１", "ﾈｸﾀｲ２", "ﾈｸﾀｲ３")):
        parent = index["上半身2"] if k == 0 else index[f"ﾈｸﾀｲ{'１２'[k - 1]}"]
        index[name] = len(m.bones)
        m.bones.append(_bone(name, parent, neck + (0, -1.0 - 1.5 * k, -0.8), PLAIN_FLAGS))
    for name, parent, target, links in IK_CHAINS:
        at = m.bones[index[target]].position
        ik_index = len(m.bones)
        ik_bone = _bone(name, index[parent], at, IK_FLAGS)
        ik_bone.layer = 1
        ik_bone.ik = pmx.PmxIK(target=index[target], loop=15, limit_angle=np.float32(0.5), links=[
            pmx.PmxIKLink(index[links[0]], np.float32([-1.0, 0, -0.25]), np.float32([0.5, 0, 0.25])),
            *(pmx.PmxIKLink(index[n]) for n in links[1:])])
        m.bones.append(ik_bone)
        m.bones.append(_bone(name + "先", ik_index, np.asarray(at) + (0, -0.5, 0), BoneFlag.OPERABLE))
        index[name] = ik_index
    return pmx.write(m)
