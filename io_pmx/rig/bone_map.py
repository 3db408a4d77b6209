"""Which MMD bone each source bone becomes (`map_bones`, for `--mmd-rig` and `--bone-map`; no bpy).

docs/mmd.md §5.1 and §5.4. Each source bone gets an MMD name, or keeps its own, or is merged into 全ての親, or is
dropped as a helper. In order of precedence:

* the user's `--bone-map FILE.json`: `{"source bone": "MMD name"}`; a `null` value drops the bone as a helper;
* `mmd_names.BONE_TABLE`, an exact match after `normalised_name` (case, separators and a `prefix:` such as
  `mixamorig:` ignored): MMD names themselves, Mixamo, VRM 0.x (`J_Bip_L_UpperArm`), VRM 1.0 / Unity humanoid
  (`leftUpperArm`), Rigify deform bones (`DEF-upper_arm.L`), Unreal (`upperarm_l`) and common Blender names
  (`upper_arm.L`, `Thigh_R`, ...);
* keyword matching (`mmd_names.KEYWORDS`): the name is split into words (camelCase, digits, separators), its
  side is read from left/right, L/R, 左/右, and each limb is filled in chain order: a leg's bones with generic
  words ("Leg01", "Leg02", "Foot01", "Foot02") take 足, ひざ, 足首, つま先 in turn from the hip down, an arm's
  take 肩, 腕, ひじ, 手首, a spine's 上半身, 上半身2, 上半身3; an explicit word (thigh, knee/shin/calf, ankle,
  toe, shoulder/clavicle, forearm/elbow, hand/wrist, chest) fixes its slot. Tips (end, tip, top, nub) and
  twist bones keep their names.

A bone that is an ancestor of the body (下半身 or 上半身), or a root named root/master/全ての親, merges into
全ての親. Helper bones (colliders, handles, poles, targets, IK/control/MCH/ORG/WGT bones, twist bones without
weights) are dropped: their children move to the nearest exported ancestor and their weights go there too
(docs/mmd.md §5.4), except the bones an IK chain or append (付与) of the model itself uses (`keep`). A leg
chain that is not found in full (足, ひざ, 足首) is reported and gets no IK; nothing is guessed from positions.
"""
from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from ...core.budget import load_json
from ...core.errors import ExportError, FormatError
from ...core.fileio import read_bytes
from .names import (
    ANKLE, CONTROL_NAMES, FINGERS, GROUPS, HELPER_WORDS, KEYWORDS, KNEE, LEG, LEG_IK, LOWER, PRIORITY, ROOT,
    ROOT_WORDS, SIDED_GROUPS, SIDES, TABLE, TIP_WORDS, TWIST_WORDS, UPPER, normalised_name, side_of, words,
)


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


MAX_BONE_MAP_BYTES = 1 << 24  # a bone map is a small JSON object


def load_bone_map(path: str) -> dict[str, str | None]:
    """`--bone-map FILE.json`: one JSON object {"source bone name": "MMD bone name" or null (drop as helper)}."""
    try:
        raw = read_bytes(path, MAX_BONE_MAP_BYTES)
    except OSError as e:
        raise ExportError(f"--bone-map {path}: {e.strerror or e}") from e
    except FormatError as e:  # not a regular file, or above the cap
        raise ExportError(f"--bone-map {e}") from e
    try:
        data = load_json(raw.decode("utf-8-sig"), "bone map")
    except FormatError as e:  # nested too deep
        raise ExportError(f"--bone-map {path}: {e}") from e
    except (UnicodeDecodeError, ValueError) as e:
        raise ExportError(f"--bone-map {path}: not a UTF-8 JSON file ({e})") from e
    return check_bone_map(data, f"--bone-map {path}")


def check_bone_map(data, where: str = "bone map") -> dict[str, str | None]:
    if not isinstance(data, dict):
        raise ExportError(f"{where}: expected a JSON object {{\"source bone\": \"MMD name\"}}, "
                          f"got {type(data).__name__}")
    for k, v in data.items():
        if not (v is None or (isinstance(v, str) and v.strip())):
            raise ExportError(f"{where}: bone {k!r} maps to {v!r}; expected a bone name or null")
    return dict(data)


def depths(parents: list[int]) -> list[int]:
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


def ancestors(parents: list[int], i: int) -> list[int]:
    out, seen = [], {i}
    p = parents[i]
    while 0 <= p < len(parents) and p not in seen:
        out.append(p)
        seen.add(p)
        p = parents[p]
    return out


def map_bones(names: list[str], parents: list[int], weighted=None, bone_map: dict | None = None,
              keep: Collection[int] = ()) -> BoneMapping:
    """Map source bones to MMD names (see the module docstring). `weighted[i]`: bone i deforms some vertex;
    `keep`: bones the model's own IK chains and appends (付与) use, never dropped as helpers by their names
    (only the user's bone map can drop them)."""
    n = len(names)
    keep = set(keep)
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
    depth = depths(parents)
    order = sorted(range(n), key=lambda i: (depth[i], i))
    for i in order:  # our own control bones, then the table
        if how[i]:
            continue
        if names[i] in CONTROL_NAMES:  # merges into the control bone the rig builds
            how[i] = "control"
            continue
        hit = TABLE.get(normalised_name(names[i]))
        if hit == ROOT:  # a "root" under the body (a hair root, say) is not the model's root: keeps its name
            how[i] = "root" if all(how[a] == "root" for a in ancestors(parents, i)) else ""
        elif hit is not None:
            take(i, hit, "table")
    word_sets = [words(nm) for nm in names]
    candidates: dict[tuple[str, str | None], list[tuple[int, int, int]]] = {}
    for i in order:  # keywords
        if how[i]:
            continue
        w = word_sets[i]
        ws = set(w)
        if i not in keep and (ws & HELPER_WORDS or (ws & TWIST_WORDS and not weighted[i])):
            how[i] = "helper"
            continue
        if ws & TIP_WORDS or ws & TWIST_WORDS:
            continue
        if ws & ROOT_WORDS and all(how[a] == "root" for a in ancestors(parents, i)):
            how[i] = "root"
            continue
        word = next((k for k in PRIORITY if k in ws), None)
        if word is None:
            continue
        group, lo, hi = KEYWORDS[word]
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
        for a in ancestors(parents, b):
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
                     and side_of(nm) == side and any(KEYWORDS.get(w, ("",))[0] == "leg" for w in words(nm))]
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
            if upper not in ancestors(m.parents, lower):
                m.warnings.append(f"{'left' if side == 'L' else 'right'} leg chain broken: "
                                  f"{m.names[lower]} ({m.mmd[lower]}) does not descend from {m.names[upper]} "
                                  f"({m.mmd[upper]}); no {prefix}{LEG_IK}")
                break


def leg_chain_ok(m: BoneMapping, side: str) -> bool:
    prefix = SIDES[side]
    chain = [m.index(prefix + r) for r in (LEG, KNEE, ANKLE)]
    if None in chain:
        return False
    return all(a in ancestors(m.parents, b) for a, b in zip(chain, chain[1:]))
