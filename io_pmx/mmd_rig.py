"""The MMD control rig (`--mmd-rig`), bone mapping (`--bone-map`) and arm angle (`--arm-angle`), on PMX records.

No bpy. Seed 003 §2, §3.4 and §4 define what the user needs; reference/pmx.md §1.10 gives the flags, layers and
IK settings of the semi-standard (準標準) bones. Everything here works on the records `convert.from_scene`
built (MMD axes: left-handed, Y up, the model faces −Z; MMD units), after the export gathered the model at rest,
so the result never depends on the pose, action or frame the user is looking at.

**1. Mapping** (`map_bones`): each source bone gets an MMD name, or keeps its own, or is merged into 全ての親,
or is dropped as a helper. In order of precedence:

* the user's `--bone-map FILE.json`: `{"source bone": "MMD name"}`; a `null` value drops the bone as a helper;
* `BONE_TABLE` below, an exact match after `normalised_name` (case, separators and a `prefix:` such as
  `mixamorig:` ignored): MMD names themselves, Mixamo, VRM 0.x (`J_Bip_L_UpperArm`), VRM 1.0 / Unity humanoid
  (`leftUpperArm`), Rigify deform bones (`DEF-upper_arm.L`), Unreal (`upperarm_l`) and common Blender names
  (`upper_arm.L`, `Thigh_R`, ...);
* keyword matching (`_KEYWORDS`): the name is split into words (camelCase, digits, separators), its side is
  read from left/right, L/R, 左/右, and each limb is filled in chain order: a leg's bones with generic words
  ("Leg01", "Leg02", "Foot01", "Foot02") take 足, ひざ, 足首, つま先 in turn from the hip down, an arm's take
  肩, 腕, ひじ, 手首, a spine's 上半身, 上半身2, 上半身3; an explicit word (thigh, knee/shin/calf, ankle, toe,
  shoulder/clavicle, forearm/elbow, hand/wrist, chest) fixes its slot. Tips (end, tip, top, nub) and twist
  bones keep their names.

A bone that is an ancestor of the body (下半身 or 上半身), or a root named root/master/全ての親, merges into
全ての親. Helper bones (colliders, handles, poles, targets, IK/control/MCH/ORG/WGT bones, twist bones without
weights) are dropped: their children move to the nearest exported ancestor and their weights go there too
(seed §3.4), never to 全ての親 (bone 0): if 全ての親 is the nearest, to 下半身 (else センター). A leg chain
that is not found in full (足, ひざ, 足首) is reported and gets no IK; nothing is guessed from positions.

**2. Control layer** (`apply`, seed §4):
全ての親 → センター → グルーブ → 腰 → {上半身 → 上半身2, 下半身 → {左足, 右足}};
全ての親 → 左足IK親 → 左足ＩＫ → 左つま先ＩＫ (and 右). 足ＩＫ targets 足首 with links [ひざ limited to
X ∈ [−π, −0.5°] (float32 0xC0490FDB, 0xBC0EFA35), Y = Z = 0; 足 unlimited], loop 40, unit angle 2.0, layer 1;
つま先ＩＫ targets つま先 with the link [足首], loop 3, unit angle 4.0, layer 2; つま先 (and what hangs on it)
is deformed on layer 2 with flags 0x12. `足IK親` is ASCII "IK", `足ＩＫ`/`つま先ＩＫ` full-width U+FF29 U+FF2B.
A source with one spine bone gets a zero-weight 上半身2 between 上半身 and its children. Bones come parents
first: the four trunk control bones, the source bones, then the leg IK bones. Placement (the issue is
silent): 全ての親 at the origin; センター and グルーブ under the pelvis at 60 % of its height (as in the default
models, where センター sits below the hips); 腰 at the pelvis head; 足IK親 on the floor under the ankle; the
IK bones at the heads of their targets.

**3. Arm angle** (`arm_angle_rest_transforms`): the one function giving the rest transforms that
`--arm-angle θ` produces; the PMX export here and the VMD exporter both use it, so that the model and its
motions share the same rest pose (seed §5.4).
"""
from __future__ import annotations

import json
import math
import os
import re
import unicodedata
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import ExportError
from . import pmx
from .pmx import BoneFlag

# ------------------------------------------------------------------------------------------------------------
# Names

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

# PMX space knee limit (reference/pmx.md §0): exactly these float32 bits
KNEE_LOWER = np.array([0xC0490FDB, 0, 0], np.uint32).view(np.float32)  # (−π, 0, 0)
KNEE_UPPER = np.array([0xBC0EFA35, 0, 0], np.uint32).view(np.float32)  # (−0.5°, 0, 0) = −0.0087266

# flags and layers of reference/pmx.md §1.10
FLAGS = {ROOT: 0x1F, CENTER: 0x1E, GROOVE: 0x1E, WAIST: 0x1A, UPPER: 0x1B, UPPER2: 0x1B, LOWER: 0x1A,
         IK_PARENT: 0x1F, LEG_IK: 0x3E, TOE_IK: 0x3E, LEG: 0x1B, KNEE: 0x1B, ANKLE: 0x1B, TOE: 0x12}
LAYERS = {LEG_IK: 1, TOE_IK: 2, TOE: 2}
LEG_IK_LOOP, LEG_IK_ANGLE = 40, np.float32(2.0)
TOE_IK_LOOP, TOE_IK_ANGLE = 3, np.float32(4.0)
CONTROL_NAMES_E = {ROOT: "master", CENTER: "center", GROOVE: "groove", WAIST: "waist", UPPER2: "upper body2"}
CENTER_HEIGHT = 0.6  # センター/グルーブ height as a fraction of the pelvis head's height

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
TRUNK = (ROOT, LOWER, UPPER, UPPER2, UPPER3, "首", "頭")

# Keyword matching: word → (group, first slot, last slot). Groups fill their slots in chain order.
GROUPS = {
    "leg": (LEG, KNEE, ANKLE, TOE), "arm": ("肩", "腕", "ひじ", "手首"), "spine": (UPPER, UPPER2, UPPER3),
    "thumb": ("親指０", "親指１", "親指２"), "index": ("人指１", "人指２", "人指３"),
    "middle": ("中指１", "中指２", "中指３"), "ring": ("薬指１", "薬指２", "薬指３"),
    "pinky": ("小指１", "小指２", "小指３"), "pelvis": (LOWER,), "neck": ("首",), "head": ("頭",), "eye": ("目",),
}
FINGERS = {"thumb", "index", "middle", "ring", "pinky"}
SIDED_GROUPS = {"leg", "arm", "thumb", "index", "middle", "ring", "pinky", "eye"}
_KEYWORDS: dict[str, tuple[str, int, int]] = {
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
_PRIORITY = ("thumb", "index", "middle", "ring", "pinky", "little", "toe", "toes", "toebase", "ball", "ankle",
             "foot", "feet", "knee", "shin", "calf", "lowerleg", "tibia", "thigh", "upleg", "upperleg", "femur",
             "leg", "hand", "wrist", "forearm", "lowerarm", "elbow", "upperarm", "uparm", "humerus", "shoulder",
             "clavicle", "collar", "collarbone", "arm", "eye", "head", "neck", "upperchest", "chest", "upperbody",
             "spine", "hip", "hips", "pelvis", "lowerbody")
_COMPOUNDS = {("up", "leg"): "upleg", ("upper", "leg"): "upperleg", ("lower", "leg"): "lowerleg",
              ("fore", "arm"): "forearm", ("upper", "arm"): "upperarm", ("lower", "arm"): "lowerarm",
              ("up", "arm"): "uparm", ("upper", "chest"): "upperchest", ("toe", "base"): "toebase",
              ("upper", "body"): "upperbody", ("lower", "body"): "lowerbody", ("collar", "bone"): "collarbone"}
_LEFT = {"left", "l", "lf", "lft"}
_RIGHT = {"right", "r", "rt", "rgt"}
_ROOT_WORDS = {"root", "master", "rootjoint"}
_TIP_WORDS = {"end", "tip", "top", "nub", "null"}
_TWIST_WORDS = {"twist", "roll"}
_HELPER_WORDS = {"collider", "collision", "handle", "pole", "target", "tgt", "ik", "ctrl", "ctl", "control",
                 "controller", "helper", "mch", "org", "wgt", "driver", "locator"}
_CONTROL_NAMES = {CENTER, GROOVE, WAIST} | {p + c for p in SIDES.values()
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
        if i + 1 < len(raw) and (raw[i], raw[i + 1]) in _COMPOUNDS:
            out.append(_COMPOUNDS[(raw[i], raw[i + 1])])
            i += 2
        else:
            out.append(raw[i])
            i += 1
    return out


def side_of(name: str) -> str | None:
    """'L', 'R' or None (no side, or both)."""
    w = set(words(name))
    left = bool(w & _LEFT) or "左" in name
    right = bool(w & _RIGHT) or "右" in name
    return "L" if left and not right else "R" if right and not left else None


# ------------------------------------------------------------------------------------------------------------
# Mapping

@dataclass
class BoneMapping:
    """What becomes of each source bone. `mmd[i]` is its MMD name (None: it keeps its own name); `how[i]` says
    why: 'bone map', 'table', 'keyword', 'root' (merged into 全ての親), 'helper' (dropped) or ''."""

    names: list[str]
    parents: list[int]
    mmd: list[str | None]
    how: list[str]
    warnings: list[str] = field(default_factory=list)

    def merged(self, i: int) -> bool:
        return self.how[i] == "root"

    def dropped(self, i: int) -> bool:
        return self.how[i] == "helper"

    def exported_name(self, i: int) -> str:
        return ROOT if self.merged(i) else self.mmd[i] or self.names[i]

    def index(self, mmd_name: str) -> int | None:
        for i, m in enumerate(self.mmd):
            if m == mmd_name and not self.dropped(i):
                return i
        return None

    def table(self) -> list[tuple[str, str, str]]:
        """(source name, exported name or '(dropped)', how) per bone, for reports."""
        return [(n, "(dropped)" if self.dropped(i) else self.exported_name(i), self.how[i])
                for i, n in enumerate(self.names)]


def load_bone_map(path: str) -> dict[str, str | None]:
    """`--bone-map FILE.json`: one JSON object {"source bone name": "MMD bone name" or null (drop as helper)}."""
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read().decode("utf-8-sig"))
    except OSError as e:
        raise ExportError(f"--bone-map {path}: {e.strerror or e}") from e
    except (UnicodeDecodeError, ValueError) as e:
        raise ExportError(f"--bone-map {path}: not a UTF-8 JSON file ({e})") from e
    return check_bone_map(data, f"--bone-map {path}")


def check_bone_map(data, where: str = "bone map") -> dict[str, str | None]:
    if not isinstance(data, dict):
        raise ExportError(f"{where}: expected a JSON object {{\"source bone\": \"MMD name\"}}, got {type(data).__name__}")
    for k, v in data.items():
        if not (v is None or (isinstance(v, str) and v.strip())):
            raise ExportError(f"{where}: bone {k!r} maps to {v!r}; expected a bone name or null")
    return dict(data)


def _depths(parents: list[int]) -> list[int]:
    depth = [-1] * len(parents)
    for i in range(len(parents)):
        chain = []
        j = i
        while j >= 0 and depth[j] < 0 and j not in chain:
            chain.append(j)
            j = parents[j] if 0 <= parents[j] < len(parents) else -1
        base = depth[j] if j >= 0 else -1
        for k in reversed(chain):
            base += 1
            depth[k] = base
    return depth


def _ancestors(parents: list[int], i: int) -> list[int]:
    out, seen = [], {i}
    p = parents[i]
    while 0 <= p < len(parents) and p not in seen:
        out.append(p)
        seen.add(p)
        p = parents[p]
    return out


def map_bones(names: list[str], parents: list[int], weighted=None, bone_map: dict | None = None) -> BoneMapping:
    """Map source bones to MMD names (see the module docstring). `weighted[i]`: bone i deforms some vertex."""
    n = len(names)
    parents = [int(p) if 0 <= int(p) < n else -1 for p in parents]
    weighted = [True] * n if weighted is None else [bool(w) for w in weighted]
    mmd: list[str | None] = [None] * n
    how = [""] * n
    warnings: list[str] = []
    taken: dict[str, int] = {}

    def take(i: int, name: str, why: str) -> bool:
        if name in taken:
            warnings.append(f"bone {names[i]}: {name} is already {names[taken[name]]}; keeps its name")
            return False
        mmd[i], how[i] = name, why
        taken[name] = i
        return True

    bone_map = dict(bone_map or {})
    index = {nm: i for i, nm in enumerate(names)}
    for src, dst in bone_map.items():
        if src not in index:
            warnings.append(f"bone map: no bone named {src!r} in the armature")
        elif dst is None:
            how[index[src]] = "helper"
        elif dst == ROOT:
            how[index[src]] = "root"
        else:
            take(index[src], dst, "bone map")
    depth = _depths(parents)
    order = sorted(range(n), key=lambda i: (depth[i], i))
    for i in order:  # our own control bones, then the table
        if how[i]:
            continue
        if names[i] in _CONTROL_NAMES:  # merges into the control bone the rig builds
            how[i] = "control"
            continue
        hit = TABLE.get(normalised_name(names[i]))
        if hit == ROOT:  # a "root" under the body (a hair root, say) is not the model's root: keeps its name
            how[i] = "root" if all(how[a] == "root" for a in _ancestors(parents, i)) else ""
        elif hit is not None:
            take(i, hit, "table")
    word_sets = [words(nm) for nm in names]
    candidates: dict[tuple[str, str | None], list[tuple[int, int, int]]] = {}
    for i in order:  # keywords
        if how[i]:
            continue
        w = word_sets[i]
        ws = set(w)
        if ws & _HELPER_WORDS or (ws & _TWIST_WORDS and not weighted[i]):
            how[i] = "helper"
            continue
        if ws & _TIP_WORDS or ws & _TWIST_WORDS:
            continue
        if ws & _ROOT_WORDS and all(how[a] == "root" for a in _ancestors(parents, i)):
            how[i] = "root"
            continue
        word = next((k for k in _PRIORITY if k in ws), None)
        if word is None:
            continue
        group, lo, hi = _KEYWORDS[word]
        numbers = [int(x) for x in w if x.isdigit()]
        if group in FINGERS and numbers and 1 <= numbers[-1] <= hi - lo + 1:  # thumb.01, Index2: the segment
            lo = hi = lo + numbers[-1] - 1
        side = side_of(names[i])
        if (group in SIDED_GROUPS) != (side is not None):
            continue
        candidates.setdefault((group, side), []).append((i, lo, hi))
    for (group, side), items in candidates.items():
        slots = GROUPS[group]
        prefix = SIDES[side] if side else ""
        next_free = 0
        for i, lo, hi in items:  # already in chain (depth) order
            slot = max(lo, next_free)
            while slot <= hi and prefix + slots[slot] in taken:
                slot += 1
            if slot > hi:
                continue
            if take(i, prefix + slots[slot], "keyword"):
                next_free = slot + 1
    # ancestors of the body merge into 全ての親
    body = [i for i in range(n) if mmd[i] in (LOWER, UPPER) and how[i] != "helper"]
    for b in body:
        for a in _ancestors(parents, b):
            if mmd[a] is None and how[a] in ("", "root"):
                how[a] = "root"
    mapping = BoneMapping(list(names), parents, mmd, how, warnings)
    _check_legs(mapping)
    return mapping


def _check_legs(m: BoneMapping) -> None:
    """A leg chain 足 → ひざ → 足首 must be complete and connected to be rigged; else it is reported."""
    for side, prefix in SIDES.items():
        found = {r: m.index(prefix + r) for r in (LEG, KNEE, ANKLE)}
        missing = [prefix + r for r, i in found.items() if i is None]
        if len(missing) == 3:
            leggy = [nm for i, nm in enumerate(m.names) if m.mmd[i] is None and m.how[i] == ""
                     and side_of(nm) == side and any(_KEYWORDS.get(w, ("",))[0] == "leg" for w in words(nm))]
            if leggy:
                m.warnings.append(f"{'left' if side == 'L' else 'right'} leg not mapped ({', '.join(leggy)} look "
                                  f"like leg bones but the chain is not clear); no {prefix}{LEG_IK}: map it with "
                                  f"--bone-map")
            continue
        if missing:
            m.warnings.append(f"{'left' if side == 'L' else 'right'} leg chain incomplete: no "
                              f"{', '.join(missing)}; no {prefix}{LEG_IK}: map it with --bone-map")
            continue
        chain = [found[LEG], found[KNEE], found[ANKLE]]
        for upper, lower in zip(chain, chain[1:]):
            if upper not in _ancestors(m.parents, lower):
                m.warnings.append(f"{'left' if side == 'L' else 'right'} leg chain broken: "
                                  f"{m.names[lower]} ({m.mmd[lower]}) does not descend from {m.names[upper]} "
                                  f"({m.mmd[upper]}); no {prefix}{LEG_IK}")
                break


def leg_chain_ok(m: BoneMapping, side: str) -> bool:
    prefix = SIDES[side]
    chain = [m.index(prefix + r) for r in (LEG, KNEE, ANKLE)]
    if None in chain:
        return False
    return all(a in _ancestors(m.parents, b) for a, b in zip(chain, chain[1:]))


# ------------------------------------------------------------------------------------------------------------
# Arm angle: the rest transforms shared with the VMD exporter

def _rotation_about_y(angle: float, point) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    r = np.array([[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1]], np.float64)
    t = np.eye(4)
    t[:3, 3] = point
    back = np.eye(4)
    back[:3, 3] = -np.asarray(point, np.float64)
    return t @ r @ back


def arm_angle_rest_transforms(parents, heads, arms: dict[int, str], angle_degrees: float) -> np.ndarray:
    """The rest transforms `--arm-angle θ` produces, as one (N, 4, 4) array D in Blender axes: a bone whose
    rest (world) matrix was M rests at D[i] @ M afterwards.

    `parents`: parent index per bone (−1 for a root); `heads`: (N, 3) bone heads in Blender axes (any unit: the
    translations of D come out in the same unit); `arms`: upper-arm bone index → 'L' (the character's left, +X)
    or 'R'. The left upper arm turns by +θ and the right by −θ about Blender's +Y axis through its head, so a
    T-pose arm's tip drops by θ on both sides; everything below an upper arm moves with it rigidly; every
    other bone keeps D = identity. This is the only place that defines the arm-angle rest pose: the PMX
    export (`apply`) and the VMD exporter both call it."""
    parents = np.asarray(parents, np.int64)
    heads = np.asarray(heads, np.float64).reshape(-1, 3)
    n = len(parents)
    out = np.tile(np.eye(4), (n, 1, 1))
    done = np.zeros(n, bool)
    theta = math.radians(float(angle_degrees))
    for start in range(n):
        chain = []
        i = start
        while i >= 0 and not done[i]:
            if i in chain:
                raise ValueError(f"bone {i} is in a parent cycle")
            chain.append(i)
            i = int(parents[i]) if -1 <= parents[i] < n else -1
        for j in reversed(chain):
            p = int(parents[j])
            d = out[p] if 0 <= p < n else np.eye(4)
            if j in arms and theta:
                moved_head = d[:3, :3] @ heads[j] + d[:3, 3]
                d = _rotation_about_y(theta if arms[j] == "L" else -theta, moved_head) @ d
            out[j] = d
            done[j] = True
    return out


def skeleton_arm_angle_rest(skeleton, angle_degrees: float, bone_map: dict | None = None) -> np.ndarray:
    """`arm_angle_rest_transforms` for a core Skeleton (Blender axes): the upper arms found by `map_bones`
    (with the same `bone_map` as the model export), heads from the bind matrices. For the VMD exporter."""
    names, parents = skeleton.names, [int(p) for p in skeleton.parents]
    mapping = map_bones(names, parents, None, bone_map)
    arms = {i: side for side, prefix in SIDES.items() if (i := mapping.index(prefix + "腕")) is not None}
    heads = skeleton.binds()[:, :3, 3]
    return arm_angle_rest_transforms(parents, heads, arms, angle_degrees)


# ------------------------------------------------------------------------------------------------------------
# Records

_SWAP4 = np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1]], np.float64)  # MMD ⇄ Blender axes


def _weighted_bones(model: pmx.PmxModel) -> np.ndarray:
    n = len(model.bones)
    out = np.zeros(n, bool)
    v = model.vertices
    if len(v) and n:
        count = np.array(pmx.DEFORM_BONE_COUNT + (0,) * 251, np.int64)[v["deform"]]
        used = (np.arange(4)[None, :] < count[:, None]) & (v["weights"] != 0) & (v["bones"] >= 0) & (v["bones"] < n)
        out[np.unique(v["bones"][used])] = True
    return out


def _new_bone(name: str, name_e: str, position, parent: int, flags: int, layer: int = 0) -> pmx.PmxBone:
    b = pmx.PmxBone(name=name, name_e=name_e, position=np.asarray(position, np.float32).reshape(3).copy(),
                    parent=parent, layer=layer, flags=flags)
    if flags & BoneFlag.TAIL_IS_BONE:
        b.tail_bone = -1
    else:
        b.tail_offset = np.zeros(3, np.float32)
    return b


def _set_flags(b: pmx.PmxBone, flags: int) -> None:
    """The table's flags, keeping the optional parts the bone already has (append, axes, IK, ...)."""
    keep = b.flags & ~0x1F
    tail_is_bone = bool(flags & BoneFlag.TAIL_IS_BONE)
    if tail_is_bone and b.tail_bone is None:
        b.tail_bone = -1
    if not tail_is_bone:
        b.tail_bone = None
        if b.tail_offset is None:
            b.tail_offset = np.zeros(3, np.float32)
    if tail_is_bone:
        b.tail_offset = None
    b.flags = int(keep | flags)


def apply(model: pmx.PmxModel, rig: bool = True, bone_map: dict | str | None = None,
          arm_angle: float = 0.0) -> list[str]:
    """Add the MMD control layer to `model` (PMX records, in place) and/or turn its arms by `arm_angle` degrees;
    returns warnings. `bone_map`: a dict or the path of a JSON file (`load_bone_map`)."""
    if isinstance(bone_map, (str, os.PathLike)):
        bone_map = load_bone_map(os.fspath(bone_map))
    elif bone_map is not None:
        bone_map = check_bone_map(bone_map)
    if not rig and not arm_angle:
        return []
    if not math.isfinite(float(arm_angle)):
        raise ExportError(f"--arm-angle {arm_angle} is not a finite number of degrees")
    if not model.bones:
        return ["no armature: the MMD rig and the arm angle need bones"]
    names = [b.name for b in model.bones]
    parents = [int(b.parent) for b in model.bones]
    mapping = map_bones(names, parents, _weighted_bones(model), bone_map)
    warnings = list(mapping.warnings)
    if rig:
        warnings += _build_rig(model, mapping)
    if arm_angle:
        if rig:
            arms = {i: side for side, prefix in SIDES.items() for i, b in enumerate(model.bones)
                    if b.name == prefix + "腕"}
        else:
            arms = {i: side for side, prefix in SIDES.items() if (i := mapping.index(prefix + "腕")) is not None}
        if not arms:
            warnings.append(f"--arm-angle {arm_angle:g}: no upper arm (腕) found; nothing turned")
        else:
            warnings += _turn_arms(model, arms, float(arm_angle))
    return warnings


# -- the control layer ---------------------------------------------------------------------------------------

_COPIED_FIELDS = ("name", "name_e", "position", "parent", "layer", "flags", "tail_bone", "tail_offset",
                  "append_parent", "append_ratio", "fixed_axis", "local_x", "local_z", "external_key", "ik")


def _kept(m: BoneMapping) -> list[int]:
    """Source bones exported as themselves (not merged into a control bone, not dropped)."""
    return [i for i in range(len(m.names)) if not m.dropped(i) and not m.merged(i) and m.how[i] != "control"]


def rig_parents(m: BoneMapping) -> dict[int, tuple[str, int | str]]:
    """The parent each source bone has in the rigged PMX: ('src', source index) or ('new', control bone name);
    only for bones exported as themselves. 下半身 and 上半身 hang on 腰, 上半身2 on 上半身, 左足/右足 on
    下半身; others keep their nearest exported ancestor, and what hung on 全ての親 moves under 下半身 (else 腰).
    When the source has a single spine bone, the children of 上半身 hang on the inserted 上半身2 (see
    `exported_parents`). The VMD exporter needs this: a bone whose PMX parent differs from its Blender parent
    (上半身 under 腰 instead of the hips) takes its keys relative to the PMX parent."""
    n = len(m.names)
    role = {name: i for i in range(n) if (name := m.mmd[i]) is not None and not m.dropped(i)}
    pelvis = role.get(LOWER)
    kept = _kept(m)
    kept_set = set(kept)

    def kept_ancestor(i: int) -> int | None:
        for a in _ancestors(m.parents, i):
            if a in kept_set:
                return a
            if m.merged(a) or m.how[a] == "control":
                return None
        return None

    out: dict[int, tuple[str, int | str]] = {}
    for i in kept:
        name = m.mmd[i] or ""
        if name in (LOWER, UPPER):
            out[i] = ("new", WAIST)
        elif name == UPPER2 and role.get(UPPER) is not None:
            out[i] = ("src", role[UPPER])
        elif name[1:] == LEG and name[:1] in "左右" and pelvis is not None:
            out[i] = ("src", pelvis)
        elif (a := kept_ancestor(i)) is not None:
            out[i] = ("src", a)
        elif pelvis is not None and pelvis != i:
            out[i] = ("src", pelvis)
        else:
            out[i] = ("new", WAIST)
    return out


def exported_parents(m: BoneMapping) -> list[str | None]:
    """Per source bone, the name of its parent in the rigged PMX (None for bones merged into 全ての親 or a
    control bone, or dropped as helpers): `rig_parents` in exported names, with the inserted 上半身2."""
    parents = rig_parents(m)
    upper = m.index(UPPER)
    insert_upper2 = upper is not None and m.index(UPPER2) is None
    out: list[str | None] = [None] * len(m.names)
    for i, (kind, p) in parents.items():
        if kind == "new":
            out[i] = p
        elif insert_upper2 and p == upper:
            out[i] = UPPER2
        else:
            out[i] = m.exported_name(p)
    return out


def _build_rig(model: pmx.PmxModel, m: BoneMapping) -> list[str]:
    warnings: list[str] = []
    src = model.bones
    n = len(src)
    pos = np.array([b.position for b in src], np.float64).reshape(n, 3)
    role = {name: i for i in range(n) if (name := m.mmd[i]) is not None and not m.dropped(i)}
    pelvis = role.get(LOWER)
    kept = _kept(m)
    kept_set = set(kept)
    # anchor of the trunk controls: the pelvis head, else the first kept bone without a kept ancestor
    if pelvis is not None:
        anchor = pos[pelvis]
    else:
        tops = [i for i in kept if not kept_set.intersection(_ancestors(m.parents, i))]
        anchor = pos[tops[0]] if tops else np.zeros(3)
    unit = max(float(anchor[1]) * 0.1, 0.5)  # display length of the control bones' tails (MMD units)

    new: list[pmx.PmxBone] = []
    new_of_src: dict[int, int] = {}
    control_src = {m.names[i]: i for i in range(n) if m.how[i] == "control"}

    def control(name: str, position, parent: int, flags: int, layer: int = 0, name_e: str = "") -> int:
        b = _new_bone(name, name_e or CONTROL_NAMES_E.get(name, ""), position, parent, flags, layer)
        if name in control_src:  # the source already has this control bone: it merges, keeping its place
            s = src[control_src[name]]
            b.position = np.asarray(s.position, np.float32).copy()
            b.name_e = s.name_e or b.name_e
            new_of_src[control_src[name]] = len(new)
        new.append(b)
        return len(new) - 1

    root = control(ROOT, np.zeros(3), -1, FLAGS[ROOT])
    center_pos = np.array([anchor[0], anchor[1] * CENTER_HEIGHT, anchor[2]])
    center = control(CENTER, center_pos, root, FLAGS[CENTER])
    groove = control(GROOVE, center_pos, center, FLAGS[GROOVE])
    waist = control(WAIST, anchor, groove, FLAGS[WAIST])
    new[root].tail_bone = center
    for k in (center, groove, waist):
        new[k].tail_offset = np.float32([0, unit, 0])
    for i in range(n):
        if m.merged(i):
            new_of_src[i] = root

    parent_of = rig_parents(m)  # ('new', control bone name) or ('src', source index)
    control_index = {CENTER: center, GROOVE: groove, WAIST: waist, ROOT: root}

    # parents-first order of the kept source bones, stable in source order
    src_order: list[int] = []
    state: dict[int, int] = {}

    def place(i: int) -> None:
        if state.get(i) == 2:
            return
        if state.get(i) == 1:
            raise ExportError(f"--mmd-rig: bone {m.names[i]} ({m.mmd[i]}) would become its own ancestor; "
                              f"fix the mapping with --bone-map")
        state[i] = 1
        kind, p = parent_of[i]
        if kind == "src":
            place(p)
        state[i] = 2
        src_order.append(i)

    for i in kept:
        place(i)

    # a zero-weight 上半身2 between 上半身 and its children when the source has a single spine bone
    upper = role.get(UPPER)
    upper2_new = None
    if upper is not None and role.get(UPPER2) is None:
        children = [i for i in kept if parent_of[i] == ("src", upper)]
        neck = role.get("首")
        top = pos[neck] if neck is not None else (pos[children].mean(axis=0) if children else pos[upper])
        upper2_pos = (pos[upper] + top) / 2
    for i in src_order:
        copy = pmx.PmxBone(**{f: getattr(src[i], f) for f in _COPIED_FIELDS})
        if m.mmd[i] is not None:
            copy.name = m.mmd[i]
            copy.name_e = copy.name_e or m.names[i]
        new_of_src[i] = len(new)
        new.append(copy)
        if i == upper and role.get(UPPER2) is None:
            upper2_new = len(new)
            new.append(_new_bone(UPPER2, CONTROL_NAMES_E[UPPER2], upper2_pos, new_of_src[upper], FLAGS[UPPER2]))
    for i in src_order:
        kind, p = parent_of[i]
        new[new_of_src[i]].parent = control_index[p] if kind == "new" else (
            upper2_new if upper2_new is not None and p == upper else new_of_src[p])

    # dropped helpers: weights and references to the nearest exported ancestor, never 全ての親 (bone 0)
    fallback = new_of_src[pelvis] if pelvis is not None else center
    for i in range(n):
        if i in new_of_src:
            continue
        if m.how[i] == "control":  # a source control bone this rig does not build (e.g. no leg chain)
            new_of_src[i] = root
            continue
        target = next((new_of_src[a] for a in _ancestors(m.parents, i) if a in new_of_src), root)
        new_of_src[i] = fallback if target == root else target
    dropped = [m.names[i] for i in range(n) if m.dropped(i)]
    if dropped:
        warnings.append(f"--mmd-rig: {len(dropped)} helper bone(s) dropped, their weights moved to the nearest "
                        f"exported ancestor: {', '.join(dropped)}")
    lookup = np.full(n + 1, -1, np.int64)  # lookup[n] stays -1: "none"
    for s, k in new_of_src.items():
        lookup[s] = k
    for i in src_order:
        _remap_bone_references(new[new_of_src[i]], lookup, n, warnings)

    # leg IK (after the source bones, so that every bone it names comes first)
    by_name = {b.name: k for k, b in enumerate(new)}
    for side, prefix in SIDES.items():
        if not leg_chain_ok(m, side):
            continue
        leg, knee, ankle = (by_name[prefix + r] for r in (LEG, KNEE, ANKLE))
        toe = by_name.get(prefix + TOE)
        ankle_pos = np.asarray(new[ankle].position, np.float64)
        ik_parent = control(prefix + IK_PARENT, [ankle_pos[0], 0.0, ankle_pos[2]], root, FLAGS[IK_PARENT],
                            name_e=f"leg IKP_{side}")
        leg_ik = control(prefix + LEG_IK, ankle_pos, ik_parent, FLAGS[LEG_IK], LAYERS[LEG_IK], f"leg IK_{side}")
        new[ik_parent].tail_bone = leg_ik
        new[leg_ik].tail_offset = np.float32([0, 0, unit])
        new[leg_ik].ik = pmx.PmxIK(target=ankle, loop=LEG_IK_LOOP, limit_angle=LEG_IK_ANGLE, links=[
            pmx.PmxIKLink(knee, KNEE_LOWER.copy(), KNEE_UPPER.copy()), pmx.PmxIKLink(leg)])
        if toe is None:
            warnings.append(f"--mmd-rig: no {prefix}{TOE}, so no {prefix}{TOE_IK}")
            continue
        toe_ik = control(prefix + TOE_IK, new[toe].position, leg_ik, FLAGS[TOE_IK], LAYERS[TOE_IK], f"toe IK_{side}")
        new[toe_ik].tail_offset = np.float32([0, -unit, 0])
        new[toe_ik].ik = pmx.PmxIK(target=toe, loop=TOE_IK_LOOP, limit_angle=TOE_IK_ANGLE,
                                   links=[pmx.PmxIKLink(ankle)])

    # flags, layers and tails of the body bones
    by_name = {b.name: k for k, b in enumerate(new)}
    for name, k in by_name.items():
        base = name[1:] if name[:1] in ("左", "右") and name[1:] in (LEG, KNEE, ANKLE, TOE) else name
        if base in (UPPER, UPPER2, LOWER, LEG, KNEE, ANKLE, TOE):
            _set_flags(new[k], FLAGS[base])
    for a, b in ((UPPER, UPPER2), (UPPER2, UPPER3 if UPPER3 in by_name else "首")):
        if a in by_name and b in by_name:
            new[by_name[a]].tail_bone = by_name[b]
    if LOWER in by_name:
        lower = new[by_name[LOWER]]
        legs = [new[by_name[p + LEG]].position for p in SIDES.values() if p + LEG in by_name]
        drop = float(np.mean([x[1] for x in legs]) - lower.position[1]) if legs else 0.0
        lower.tail_offset = np.float32([0, drop if drop < 0 else -unit, 0])
    for prefix in SIDES.values():
        for a, b in ((LEG, KNEE), (KNEE, ANKLE), (ANKLE, TOE)):
            if prefix + a in by_name and prefix + b in by_name:
                new[by_name[prefix + a]].tail_bone = by_name[prefix + b]
        if prefix + TOE in by_name:  # つま先 and what hangs on it deform after 足ＩＫ (layer 1) has moved them
            for k in _subtree(new, by_name[prefix + TOE]):
                new[k].layer = max(int(new[k].layer), LAYERS[TOE])

    _remap_model_references(model, lookup, n)
    model.bones = new
    _display_frames(model)
    return warnings


def _subtree(bones: list[pmx.PmxBone], top: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for k, b in enumerate(bones):
        children.setdefault(b.parent, []).append(k)
    out, stack = [], [top]
    while stack:
        k = stack.pop()
        out.append(k)
        stack.extend(children.get(k, []))
    return out


def _remap_bone_references(b: pmx.PmxBone, lookup: np.ndarray, n: int, warnings: list[str]) -> None:
    """Tail, append parent and IK of a copied source bone: source indices → new indices."""
    def one(i):
        return int(lookup[i]) if 0 <= i < n else (i if i < 0 else -1)

    if b.tail_bone is not None:
        b.tail_bone = one(b.tail_bone)
    if b.append_parent is not None:
        b.append_parent = one(b.append_parent)
    if b.ik is not None:
        links = []
        for link in b.ik.links:
            t = one(link.bone)
            if t < 0:
                warnings.append(f"bone {b.name}: IK link {link.bone} is not a bone; link removed")
                continue
            links.append(pmx.PmxIKLink(t, link.lower, link.upper))
        b.ik = pmx.PmxIK(target=one(b.ik.target), loop=b.ik.loop, limit_angle=b.ik.limit_angle, links=links)


def _remap_model_references(model: pmx.PmxModel, lookup: np.ndarray, n: int) -> None:
    """Every other bone index in the model (vertices, bone morphs, rigid bodies, display frames) from source
    indices to new ones; merged and dropped bones go where their weights went."""
    def one(i):
        return int(lookup[i]) if 0 <= i < n else (i if i < 0 else -1)

    v = model.vertices
    if len(v):
        bones = v["bones"].astype(np.int64)
        inside = (bones >= 0) & (bones < n)
        v["bones"] = np.where(inside, lookup[np.clip(bones, 0, n)], bones).astype(np.int32)
        _merge_duplicate_influences(v)
    for morph in model.morphs:
        if morph.kind == pmx.MORPH_BONE and len(morph.offsets):
            o = morph.offsets["bone"].astype(np.int64)
            morph.offsets["bone"] = np.where((o >= 0) & (o < n), lookup[np.clip(o, 0, n)], -1)
            morph.offsets = morph.offsets[morph.offsets["bone"] >= 0]
    for body in model.rigid_bodies:
        body.bone = one(body.bone)
    for frame in model.display_frames:
        seen, elements = set(), []
        for kind, index in frame.elements:
            if kind == 0:
                index = one(index)
                if index < 0:
                    continue
            if (kind, index) not in seen:
                seen.add((kind, index))
                elements.append((kind, index))
        frame.elements = elements


def _merge_duplicate_influences(v: np.ndarray) -> None:
    """A vertex naming one bone twice (two source bones merged into one): weights summed into the first slot;
    BDEF2/SDEF left with one bone become BDEF1, BDEF4/QDEF keep their type with the slot cleared (-1, 0)."""
    deform = v["deform"].astype(np.int64)
    bones, weights = v["bones"], v["weights"]
    count = np.array(pmx.DEFORM_BONE_COUNT + (0,) * 251, np.int64)[deform]
    for k in range(1, 4):
        for j in range(k):
            same = (k < count) & (bones[:, k] == bones[:, j]) & (bones[:, k] >= 0)
            if not same.any():
                continue
            two = same & ((deform == pmx.BDEF2) | (deform == pmx.SDEF))
            if two.any():
                v["deform"][two] = pmx.BDEF1
                bones[two, 1:] = -1
                weights[two] = (1, 0, 0, 0)
                for key in ("sdef_c", "sdef_r0", "sdef_r1"):
                    v[key][two] = 0
            four = same & ~two
            if four.any():
                weights[four, j] += weights[four, k]
                weights[four, k] = 0
                bones[four, k] = -1
            deform = v["deform"].astype(np.int64)
            count = np.array(pmx.DEFORM_BONE_COUNT + (0,) * 251, np.int64)[deform]


def _display_frames(model: pmx.PmxModel) -> None:
    """Root holds 全ての親; every bone the user operates is in some frame (new frames for what is not)."""
    bones = model.bones
    frames = model.display_frames
    listed = {i for f in frames for kind, i in f.elements if kind == 0}
    root_frame = next((f for f in frames if f.special and f.name == "Root"), None)
    if root_frame is None:
        root_frame = pmx.PmxDisplayFrame("Root", "Root", 1, [])
        frames.insert(0, root_frame)
    root_frame.elements = [(0, 0)] + [(k, i) for k, i in root_frame.elements if not (k == 0 and i == 0)]
    listed.add(0)
    if not any(f.special and f.name == "表情" for f in frames):
        frames.insert(1, pmx.PmxDisplayFrame("表情", "Exp", 1, [(1, i) for i in range(len(model.morphs))]))
    groups = (("センター", "Center", lambda b: b.name in (CENTER, GROOVE)),
              ("IK", "IK", lambda b: b.name[1:] in (IK_PARENT, LEG_IK, TOE_IK)),
              ("体", "Body", lambda b: True))
    for name, name_e, wanted in groups:
        items = [(0, i) for i, b in enumerate(bones) if i not in listed and b.flags & BoneFlag.OPERABLE
                 and b.flags & BoneFlag.VISIBLE and wanted(b)]
        if items:
            frames.append(pmx.PmxDisplayFrame(name, name_e, 0, items))
            listed.update(i for _, i in items)


# -- arm angle on records ------------------------------------------------------------------------------------

def _turn_arms(model: pmx.PmxModel, arms: dict[int, str], angle: float) -> list[str]:
    """Turn the upper arms with `arm_angle_rest_transforms` and re-pose everything they carry with linear blend
    skinning: bone heads and axes, vertex positions, normals and SDEF points, vertex morph offsets."""
    warnings: list[str] = []
    bones = model.bones
    n = len(bones)
    parents = [int(b.parent) for b in bones]
    pos = np.array([b.position for b in bones], np.float64).reshape(n, 3)
    # MMD and Blender axes differ by the Y↔Z swap only (the scale does not matter for a rotation about a head)
    d_blender = arm_angle_rest_transforms(parents, pos[:, [0, 2, 1]], arms, angle)
    d = _SWAP4 @ d_blender @ _SWAP4
    moved = np.flatnonzero(np.abs(d - np.eye(4)).max(axis=(1, 2)) > 0)
    for k in moved:
        b = bones[k]
        r, t = d[k, :3, :3], d[k, :3, 3]
        b.position = (r @ np.asarray(b.position, np.float64) + t).astype(np.float32)
        for name in ("tail_offset", "fixed_axis", "local_x", "local_z"):
            value = getattr(b, name)
            if value is not None:
                setattr(b, name, (r @ np.asarray(value, np.float64)).astype(np.float32))
    v = model.vertices
    if len(v) and len(moved):
        count = np.array(pmx.DEFORM_BONE_COUNT + (0,) * 251, np.int64)[v["deform"]]
        j = v["bones"].astype(np.int64)
        w = v["weights"].astype(np.float64)
        used = (np.arange(4)[None, :] < count[:, None]) & (j >= 0) & (j < n)
        w = np.where(used, w, 0)
        affected = (np.isin(j, moved) & used & (w != 0)).any(axis=1)
        rows = np.flatnonzero(affected)
        if len(rows):
            blend = np.einsum("vk,vkij->vij", w[rows], d[np.where(used[rows], j[rows], 0)])
            lin, off = blend[:, :3, :3], blend[:, :3, 3]
            p = v["position"][rows].astype(np.float64)
            v["position"][rows] = (np.einsum("vij,vj->vi", lin, p) + off).astype(np.float32)
            nor = np.einsum("vij,vj->vi", lin, v["normal"][rows].astype(np.float64))
            length = np.linalg.norm(nor, axis=1, keepdims=True)
            v["normal"][rows] = np.where(length > 0, nor / np.where(length > 0, length, 1), nor).astype(np.float32)
            sdef = rows[v["deform"][rows] == pmx.SDEF]
            if len(sdef):
                at = np.searchsorted(rows, sdef)
                for key in ("sdef_c", "sdef_r0", "sdef_r1"):
                    q = v[key][sdef].astype(np.float64)
                    v[key][sdef] = (np.einsum("vij,vj->vi", lin[at], q) + off[at]).astype(np.float32)
            row_of = np.full(len(v), -1, np.int64)
            row_of[rows] = np.arange(len(rows))
            for morph in model.morphs:
                if morph.kind != pmx.MORPH_VERTEX or not len(morph.offsets):
                    continue
                idx = morph.offsets["vertex"].astype(np.int64)
                r_ = np.where((idx >= 0) & (idx < len(v)), row_of[np.clip(idx, 0, len(v) - 1)], -1)
                sel = np.flatnonzero(r_ >= 0)
                if len(sel):
                    o = morph.offsets["offset"][sel].astype(np.float64)
                    morph.offsets["offset"][sel] = np.einsum("vij,vj->vi", lin[r_[sel]], o).astype(np.float32)
    on_arms = [r.name for r in model.rigid_bodies if 0 <= r.bone < n and r.bone in set(moved.tolist())]
    if on_arms:
        warnings.append(f"--arm-angle: rigid bodies on the arms are not turned: {', '.join(on_arms)}")
    return warnings
