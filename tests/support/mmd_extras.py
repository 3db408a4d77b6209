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


def missing_chains(src: pmx.PmxModel, out: pmx.PmxModel) -> list[str]:
    """What of `src`'s bones and IK chains `out` lacks or changed (by name): bones, IK targets, links, limits
    (exact float32 bits), loop counts and unit angles; empty when `out` keeps them all."""
    by_name = {b.name: b for b in out.bones}
    problems = [f"bone {b.name} missing" for b in src.bones if b.name not in by_name]
    for b in src.bones:
        if b.ik is None or b.name not in by_name:
            continue
        ik, got = b.ik, by_name[b.name].ik
        if got is None:
            problems.append(f"{b.name}: no IK")
            continue
        want = (src.bones[ik.target].name, ik.loop, np.float32(ik.limit_angle),
                [(src.bones[k.bone].name, _bits(k.lower), _bits(k.upper)) for k in ik.links])
        have = (out.bones[got.target].name, got.loop, np.float32(got.limit_angle),
                [(out.bones[k.bone].name, _bits(k.lower), _bits(k.upper)) for k in got.links])
        if want != have:
            problems.append(f"{b.name}: IK {have} instead of {want}")
    return problems


def _bits(v) -> tuple | None:
    return None if v is None else tuple(np.asarray(v, "<f4").view("<u4").tolist())


# the morphs `luka_with_every_morph` adds, by kind (PMX morph type)
EVERY_MORPH = {pmx.MORPH_GROUP: "テスト群", pmx.MORPH_BONE: "テスト骨", pmx.MORPH_MATERIAL: "テスト材質",
               pmx.MORPH_UV: "テストUV", pmx.MORPH_UV1: "テスト追加UV1", pmx.MORPH_UV2: "テスト追加UV2",
               pmx.MORPH_UV3: "テスト追加UV3", pmx.MORPH_UV4: "テスト追加UV4", pmx.MORPH_FLIP: "テストフリップ",
               pmx.MORPH_IMPULSE: "テスト衝撃"}  # each fits a VMD name (15 cp932 bytes)
MORPHED_BONES = ("頭", "左腕")  # neither is the other's ancestor, so each one's pose is its morph alone


def _offsets(kind: int, rows: list[tuple]) -> np.ndarray:
    out = pmx.empty_records(pmx.MORPH_OFFSETS[kind], len(rows))
    for i, row in enumerate(rows):
        for (name, _, _), value in zip(pmx.MORPH_OFFSETS[kind], row):
            out[name][i] = value
    return out


def _material_row(material: int, operation: int, base: float) -> tuple:
    """Every field of a material offset, values that differ per field (diffuse, specular, power, ambient, edge
    colour, edge size, texture / sphere / toon tints)."""
    return (material, operation, (base, base * 0.5, base * 1.5, base * 0.25), (base, 0.1, 0.2), base * 3,
            (0.3, base, 0.1), (0.1, 0.2, 0.3, base), base * 2, (base, 1, 1, 1), (1, base, 1, 1), (1, 1, base, 1))


def luka_with_every_morph(path: pathlib.Path) -> bytes:
    """Luka with one morph of every kind but vertex added after its own (written as PMX 2.1): a group (あ at
    0.5, the bone morph at 1), a bone morph (頭 moved and turned, 左腕 turned), a material morph (multiply on
    material 0, add on material 1), UV and additional UV 1-4 morphs on the first vertices, a flip (あ, い) and
    an impulse on rigid body 0."""
    m = pmx.read_file(path)
    index = {b.name: i for i, b in enumerate(m.bones)}
    morph_index = {mo.name: i for i, mo in enumerate(m.morphs)}
    first = len(m.morphs)
    order = list(EVERY_MORPH)
    at = {kind: first + k for k, kind in enumerate(order)}
    rows = {
        pmx.MORPH_GROUP: [(morph_index["あ"], 0.5), (at[pmx.MORPH_BONE], 1.0)],
        pmx.MORPH_BONE: [(index["頭"], (0.0, 0.5, -0.25), (0.1736482, 0.0, 0.0, 0.9848078)),
                         (index["左腕"], (0.0, 0.0, 0.0), (0.0, 0.2588190, 0.0, 0.9659258))],
        pmx.MORPH_MATERIAL: [_material_row(0, 0, 0.5), _material_row(1, 1, 0.25)],
        pmx.MORPH_FLIP: [(morph_index["あ"], 1.0), (morph_index["い"], 1.0)],
        pmx.MORPH_IMPULSE: [(0, 0, (0.0, 1.0, 0.0), (0.0, 0.0, 0.5))],
    }
    for k, kind in enumerate(range(pmx.MORPH_UV, pmx.MORPH_UV4 + 1)):
        rows[kind] = [(v, (0.01 * (v % 7) + k, -0.02 * k, 0.5 * k, 0.25)) for v in range(0, 400, 3)]
    for kind in order:
        m.morphs.append(pmx.PmxMorph(name=EVERY_MORPH[kind], name_e="", panel=4, kind=kind,
                                     offsets=_offsets(kind, rows[kind])))
    m.version = None  # flip and impulse morphs are PMX 2.1: the writer picks the version they need
    return pmx.write(m)
