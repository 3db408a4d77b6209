"""MMD bone names and the words other tools' bone names are made of (no bpy): the semi-standard (準標準) names
the rig builds, `BONE_TABLE` (MMD name → names of Mixamo, VRM 0.x / 1.0, Unity humanoid, Rigify, Unreal and
common Blender rigs), `normalised_name` (the key names compare by), `words` and `side_of` (the keyword
matching of `mmd_bone_map`), and the keyword table itself.
"""
from __future__ import annotations

import re
import unicodedata

ROOT = "全ての親"
CENTER = "センター"
GROOVE = "グルーブ"
WAIST = "腰"
UPPER = "上半身"
UPPER2 = "上半身2"
UPPER3 = "上半身3"
LOWER = "下半身"
LEG, KNEE, ANKLE, TOE = "足", "ひざ", "足首", "つま先"
IK_PARENT = "足IK親"  # ASCII "IK"
LEG_IK = "足\uff29\uff2b"  # 足ＩＫ, full-width
TOE_IK = "つま先\uff29\uff2b"  # つま先ＩＫ, full-width
SIDES = {"L": "左", "R": "右"}

# The documented table: MMD name (without 左/右) → names other tools use. `{Left}`/`{L}`/`{l}` stand for the
# side word (Left/Right), letter (L/R) or lower-case letter; names compare after `normalised_name`.
BONE_TABLE: tuple[tuple[str, tuple[str, ...]], ...] = (
    # trunk (no side)
    (ROOT, ("全ての親", "root", "master", "rootjoint")),
    (LOWER, ("下半身", "Hips", "Hip", "pelvis", "J_Bip_C_Hips", "DEF-spine", "LowerBody", "lower_body")),
    (UPPER, ("上半身", "Spine", "J_Bip_C_Spine", "DEF-spine.001", "spine_01", "UpperBody", "upper_body")),
    (UPPER2, ("上半身2", "Spine1", "Chest", "J_Bip_C_Chest", "DEF-spine.002", "spine_02")),
    (UPPER3, ("上半身3", "Spine2", "UpperChest", "upper_chest", "J_Bip_C_UpperChest", "DEF-spine.003",
              "spine_03")),
    ("首", ("首", "Neck", "J_Bip_C_Neck", "DEF-spine.004", "neck_01", "DEF-neck")),
    ("頭", ("頭", "Head", "J_Bip_C_Head", "DEF-spine.006", "DEF-head")),
    # sided: 左X / 右X
    ("目", ("{左}目", "{Left}Eye", "J_Adj_{L}_FaceEye", "eye.{L}", "eye_{l}", "DEF-eye.{L}")),
    ("肩", ("{左}肩", "{Left}Shoulder", "J_Bip_{L}_Shoulder", "DEF-shoulder.{L}", "shoulder.{L}", "shoulder_{l}",
           "clavicle_{l}", "clavicle.{L}")),
    ("腕", ("{左}腕", "{Left}Arm", "{Left}UpperArm", "J_Bip_{L}_UpperArm", "DEF-upper_arm.{L}", "upper_arm.{L}",
           "upperarm_{l}", "upperarm.{L}", "arm.{L}", "arm_{l}")),
    ("ひじ", ("{左}ひじ", "{Left}ForeArm", "{Left}LowerArm", "J_Bip_{L}_LowerArm", "DEF-forearm.{L}",
             "forearm.{L}", "forearm_{l}", "lowerarm_{l}", "lowerarm.{L}", "elbow.{L}", "elbow_{l}")),
    ("手首", ("{左}手首", "{Left}Hand", "J_Bip_{L}_Hand", "DEF-hand.{L}", "hand.{L}", "hand_{l}", "wrist.{L}")),
    (LEG, ("{左}足", "{Left}UpLeg", "{Left}UpperLeg", "J_Bip_{L}_UpperLeg", "DEF-thigh.{L}", "thigh.{L}",
           "thigh_{l}", "upperleg.{L}", "upleg.{L}")),
    (KNEE, ("{左}ひざ", "{Left}Leg", "{Left}LowerLeg", "J_Bip_{L}_LowerLeg", "DEF-shin.{L}", "shin.{L}",
            "shin_{l}", "calf_{l}", "calf.{L}", "lowerleg.{L}", "knee.{L}", "knee_{l}")),
    (ANKLE, ("{左}足首", "{Left}Foot", "J_Bip_{L}_Foot", "DEF-foot.{L}", "foot.{L}", "foot_{l}", "ankle.{L}",
             "ankle_{l}")),
    (TOE, ("{左}つま先", "{Left}ToeBase", "{Left}Toes", "{Left}Toe", "J_Bip_{L}_ToeBase", "DEF-toe.{L}",
           "toe.{L}", "toe_{l}", "toes.{L}", "ball_{l}")),
    # fingers: Mixamo 1-3, Unity/VRM0 Proximal/Intermediate/Distal, VRM1 Metacarpal/Proximal/Distal (thumb),
    # Rigify DEF-thumb.01-03 / DEF-f_index.01-03, Unreal thumb_01_l
    ("親指０", ("{左}親指０", "{Left}HandThumb1", "{Left}ThumbProximal", "{left}ThumbMetacarpal",
              "J_Bip_{L}_Thumb1", "DEF-thumb.01.{L}", "thumb_01_{l}")),
    ("親指１", ("{左}親指１", "{Left}HandThumb2", "{Left}ThumbIntermediate", "J_Bip_{L}_Thumb2",
              "DEF-thumb.02.{L}", "thumb_02_{l}")),
    ("親指２", ("{左}親指２", "{Left}HandThumb3", "{Left}ThumbDistal", "J_Bip_{L}_Thumb3", "DEF-thumb.03.{L}",
              "thumb_03_{l}")),
    *((f"{mmd}{digit}", (f"{{左}}{mmd}{digit}", f"{{Left}}Hand{mixamo}{k}", f"{{Left}}{mixamo}{unity}",
                         f"J_Bip_{{L}}_{mixamo}{k}", f"DEF-f_{rigify}.0{k}.{{L}}", f"{rigify}_0{k}_{{l}}"))
      for mmd, mixamo, rigify in (("人指", "Index", "index"), ("中指", "Middle", "middle"),
                                  ("薬指", "Ring", "ring"), ("小指", "Little", "pinky"))
      for k, (digit, unity) in enumerate((("１", "Proximal"), ("２", "Intermediate"), ("３", "Distal")), 1)),
    *((f"小指{d}", (f"{{Left}}HandPinky{k}",)) for k, d in enumerate("１２３", 1)),
)

# Keyword matching: word → (group, first slot, last slot). Groups fill their slots in chain order.
GROUPS = {
    "leg": (LEG, KNEE, ANKLE, TOE), "arm": ("肩", "腕", "ひじ", "手首"), "spine": (UPPER, UPPER2, UPPER3),
    "thumb": ("親指０", "親指１", "親指２"), "index": ("人指１", "人指２", "人指３"),
    "middle": ("中指１", "中指２", "中指３"), "ring": ("薬指１", "薬指２", "薬指３"),
    "pinky": ("小指１", "小指２", "小指３"), "pelvis": (LOWER,), "neck": ("首",), "head": ("頭",), "eye": ("目",),
}
FINGERS = {"thumb", "index", "middle", "ring", "pinky"}
SIDED_GROUPS = {"leg", "arm", "thumb", "index", "middle", "ring", "pinky", "eye"}
KEYWORDS: dict[str, tuple[str, int, int]] = {
    **dict.fromkeys(("thigh", "upleg", "upperleg", "femur"), ("leg", 0, 0)),
    "leg": ("leg", 0, 1),
    **dict.fromkeys(("knee", "shin", "calf", "lowerleg", "tibia"), ("leg", 1, 1)),
    "ankle": ("leg", 2, 2), "foot": ("leg", 2, 3), "feet": ("leg", 2, 3),
    **dict.fromkeys(("toe", "toes", "toebase", "ball"), ("leg", 3, 3)),
    **dict.fromkeys(("shoulder", "clavicle", "collar", "collarbone"), ("arm", 0, 0)),
    **dict.fromkeys(("upperarm", "uparm", "humerus"), ("arm", 1, 1)),
    "arm": ("arm", 1, 2),
    **dict.fromkeys(("forearm", "lowerarm", "elbow"), ("arm", 2, 2)),
    **dict.fromkeys(("hand", "wrist"), ("arm", 3, 3)),
    "spine": ("spine", 0, 2), "chest": ("spine", 1, 2), "upperchest": ("spine", 2, 2), "upperbody": ("spine", 0, 0),
    "thumb": ("thumb", 0, 2), "index": ("index", 0, 2), "middle": ("middle", 0, 2), "ring": ("ring", 0, 2),
    "pinky": ("pinky", 0, 2), "little": ("pinky", 0, 2),
    **dict.fromkeys(("hip", "hips", "pelvis", "lowerbody"), ("pelvis", 0, 0)),
    "neck": ("neck", 0, 0), "head": ("head", 0, 0), "eye": ("eye", 0, 0),
}
# most specific first: a finger word beats "hand", "toe" beats "foot", "forearm" beats "arm", ...
PRIORITY = ("thumb", "index", "middle", "ring", "pinky", "little", "toe", "toes", "toebase", "ball", "ankle",
             "foot", "feet", "knee", "shin", "calf", "lowerleg", "tibia", "thigh", "upleg", "upperleg", "femur",
             "leg", "hand", "wrist", "forearm", "lowerarm", "elbow", "upperarm", "uparm", "humerus", "shoulder",
             "clavicle", "collar", "collarbone", "arm", "eye", "head", "neck", "upperchest", "chest", "upperbody",
             "spine", "hip", "hips", "pelvis", "lowerbody")
COMPOUNDS = {("up", "leg"): "upleg", ("upper", "leg"): "upperleg", ("lower", "leg"): "lowerleg",
              ("fore", "arm"): "forearm", ("upper", "arm"): "upperarm", ("lower", "arm"): "lowerarm",
              ("up", "arm"): "uparm", ("upper", "chest"): "upperchest", ("toe", "base"): "toebase",
              ("upper", "body"): "upperbody", ("lower", "body"): "lowerbody", ("collar", "bone"): "collarbone"}
LEFT_WORDS = {"left", "l", "lf", "lft"}
RIGHT_WORDS = {"right", "r", "rt", "rgt"}
ROOT_WORDS = {"root", "master", "rootjoint"}
TIP_WORDS = {"end", "tip", "top", "nub", "null"}
TWIST_WORDS = {"twist", "roll"}
HELPER_WORDS = {"collider", "collision", "handle", "pole", "target", "tgt", "ik", "ctrl", "ctl", "control",
                 "controller", "helper", "mch", "org", "wgt", "driver", "locator"}
CONTROL_NAMES = {CENTER, GROOVE, WAIST} | {p + c for p in SIDES.values()
                                             for c in (IK_PARENT, LEG_IK, TOE_IK, "足IK", "つま先IK")}


def normalised_name(name: str) -> str:
    """The key names compare by in `BONE_TABLE`: NFKC, lower case, text before the last ':' or '|' dropped
    (`mixamorig:`), spaces, '_', '.', '-' removed."""
    base = re.split(r"[:|]", unicodedata.normalize("NFKC", name))[-1]
    return re.sub(r"[\s_.\-]+", "", base).lower()


def _expand(pattern: str) -> list[tuple[str | None, str]]:
    if "{" not in pattern:
        return [(None, pattern)]
    out = []
    for side, word, letter, kanji in (("L", "Left", "L", "左"), ("R", "Right", "R", "右")):
        out.append((side, pattern.replace("{Left}", word).replace("{left}", word.lower()).replace("{L}", letter)
                    .replace("{l}", letter.lower()).replace("{左}", kanji)))
    return out


def _table() -> dict[str, str]:
    out: dict[str, str] = {}
    for mmd, names in BONE_TABLE:
        for pattern in names:
            for side, name in _expand(pattern):
                out.setdefault(normalised_name(name), (SIDES[side] if side else "") + mmd)
    return out


TABLE = _table()


def words(name: str) -> list[str]:
    """Lower-case words of a bone name: camelCase, letter/digit and separator boundaries; compounds joined
    (`UpLeg` → `upleg`, `ForeArm` → `forearm`)."""
    base = re.split(r"[:|]", unicodedata.normalize("NFKC", name))[-1]
    s = re.sub(r"([a-z])([A-Z])", r"\1 \2", base)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", s)
    s = re.sub(r"([A-Za-z])(\d)|(\d)([A-Za-z])", lambda m: " ".join(g for g in m.groups() if g), s)
    raw = [t.lower() for t in re.split(r"[^0-9A-Za-z]+", s) if t]
    out: list[str] = []
    i = 0
    while i < len(raw):
        if i + 1 < len(raw) and (raw[i], raw[i + 1]) in COMPOUNDS:
            out.append(COMPOUNDS[(raw[i], raw[i + 1])])
            i += 2
        else:
            out.append(raw[i])
            i += 1
    return out


def side_of(name: str) -> str | None:
    """'L', 'R' or None (no side, or both)."""
    w = set(words(name))
    left = bool(w & LEFT_WORDS) or "左" in name
    right = bool(w & RIGHT_WORDS) or "右" in name
    return "L" if left and not right else "R" if right and not left else None
