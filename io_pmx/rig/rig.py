"""The MMD control rig (`--mmd-rig`) on PMX records, and `apply`, which adds it and/or turns the arms (no bpy).

docs/mmd.md §5.2 defines what the user needs and gives the flags, layers and IK settings of the
semi-standard (準標準) bones. Everything here works on the records `convert.from_scene` built (MMD axes:
left-handed, Y up, the model faces −Z; MMD units), after the export gathered the model at rest, so the result
never depends on the pose, action or frame the user is looking at. Which source bone becomes which MMD bone is
`mmd_bone_map`; the arm angle is `mmd_arm_angle`.

Control layer: 全ての親 → センター → グルーブ → 腰 → {上半身 → 上半身2, 下半身 → {左足, 右足}};
全ての親 → 左足IK親 → 左足ＩＫ → 左つま先ＩＫ (and 右). 足ＩＫ targets 足首 with links [ひざ limited to
X ∈ [−π, −0.5°] (float32 0xC0490FDB, 0xBC0EFA35), Y = Z = 0; 足 unlimited], loop 40, unit angle 2.0, layer 1;
つま先ＩＫ targets つま先 with the link [足首], loop 3, unit angle 4.0, layer 2; つま先 (and what hangs on it)
is deformed on layer 2 with flags 0x12. `足IK親` is ASCII "IK", `足ＩＫ`/`つま先ＩＫ` full-width U+FF29 U+FF2B.
A source with one spine bone gets a zero-weight 上半身2 between 上半身 and its children. Bones come parents
first: the four trunk control bones, the source bones, then the leg IK bones. Placement (the issue is
silent): 全ての親 at the origin; センター and グルーブ under the pelvis at 60 % of its height (as in the default
models, where センター sits below the hips); 腰 at the pelvis head; 足IK親 on the floor under the ankle; the
IK bones at the heads of their targets. Dropped helpers' weights go to the nearest exported ancestor, never to
全ての親 (bone 0): if 全ての親 is the nearest, to 下半身 (else センター).
"""
from __future__ import annotations

import math
import os

import numpy as np

from ...core.errors import ExportError
from ..model import pmx
from .arm_angle import turn_arms
from .bone_map import BoneMapping, ancestors, check_bone_map, leg_chain_ok, load_bone_map, map_bones
from .names import (
    ANKLE, CENTER, GROOVE, IK_PARENT, KNEE, LEG, LEG_IK, LOWER, ROOT, SIDES, TOE, TOE_IK, UPPER, UPPER2, UPPER3,
    WAIST,
)
from ..model.pmx import BoneFlag

# PMX space knee limit (docs/mmd.md §5.3): exactly these float32 bits
KNEE_LOWER = np.array([0xC0490FDB, 0, 0], np.uint32).view(np.float32)  # (−π, 0, 0)
KNEE_UPPER = np.array([0xBC0EFA35, 0, 0], np.uint32).view(np.float32)  # (−0.5°, 0, 0) = −0.0087266

# flags and layers of docs/mmd.md §5.2
FLAGS = {ROOT: 0x1F, CENTER: 0x1E, GROOVE: 0x1E, WAIST: 0x1A, UPPER: 0x1B, UPPER2: 0x1B, LOWER: 0x1A,
         IK_PARENT: 0x1F, LEG_IK: 0x3E, TOE_IK: 0x3E, LEG: 0x1B, KNEE: 0x1B, ANKLE: 0x1B, TOE: 0x12}
LAYERS = {LEG_IK: 1, TOE_IK: 2, TOE: 2}
LEG_IK_LOOP, LEG_IK_ANGLE = 40, np.float32(2.0)
TOE_IK_LOOP, TOE_IK_ANGLE = 3, np.float32(4.0)
CONTROL_NAMES_E = {ROOT: "master", CENTER: "center", GROOVE: "groove", WAIST: "waist", UPPER2: "upper body2"}
CENTER_HEIGHT = 0.6  # センター/グルーブ height as a fraction of the pelvis head's height


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
    mapping = map_bones(names, parents, _weighted_bones(model), bone_map, keep=chain_bones(model.bones))
    warnings = list(mapping.warnings)
    if rig:
        warnings += _complete_rig(model) if has_rig(model) else _build_rig(model, mapping)
    if arm_angle:
        if rig:
            arms = {i: side for side, prefix in SIDES.items() for i, b in enumerate(model.bones)
                    if b.name == prefix + "腕"}
        else:
            arms = {i: side for side, prefix in SIDES.items() if (i := mapping.index(prefix + "腕")) is not None}
        if not arms:
            warnings.append(f"--arm-angle {arm_angle:g}: no upper arm (腕) found; nothing turned")
        else:
            warnings += turn_arms(model, arms, float(arm_angle))
    return warnings


def chain_bones(bones: list[pmx.PmxBone]) -> set[int]:
    """The bones the model's own IK chains and appends (付与) use: IK bones with their targets, links and
    everything hanging on them (the tips, ﾈｸﾀｲＩＫ先), appended bones and their append parents. The rig keeps
    them even when their names read like helpers (ＩＫ), so that the model's chains survive."""
    n = len(bones)
    out: set[int] = set()
    for i, b in enumerate(bones):
        if b.ik is not None:
            out.add(i)
            out.update(k for k in [b.ik.target, *(link.bone for link in b.ik.links)] if 0 <= k < n)
        if b.append_parent is not None and 0 <= b.append_parent < n:
            out.update((i, b.append_parent))
    children: dict[int, list[int]] = {}
    for i, b in enumerate(bones):
        children.setdefault(int(b.parent), []).append(i)
    stack = [i for i, b in enumerate(bones) if b.ik is not None]
    while stack:
        for c in children.get(stack.pop(), []):
            if c not in out:
                out.add(c)
                stack.append(c)
    return out


# -- a model that has its rig ----------------------------------------------------------------------------------

def has_rig(model: pmx.PmxModel) -> bool:
    """An MMD model already: it has センター and an IK bone (its own control layer, which the rig keeps)."""
    return any(b.name == CENTER for b in model.bones) and any(b.ik is not None for b in model.bones)


def _complete_rig(model: pmx.PmxModel) -> list[str]:
    """The control bones a rigged MMD model lacks that hang nothing else of it elsewhere: 全ての親 over the
    bones without a parent, 足IK親 over a 足ＩＫ without a parent. Every bone the model has keeps its record
    (parent, layer, flags, IK, tail), indices moved past the bones inserted; a control bone that would come
    between a bone and its parent (グルーブ, 腰, 上半身2) is left out, since it would change the order MMD
    deforms the bones in (docs/mmd.md §5.2)."""
    bones = model.bones
    n = len(bones)
    names = {b.name: i for i, b in enumerate(bones)}
    add_root = ROOT not in names
    ik_parents = {i: prefix for prefix in SIDES.values() if (i := names.get(prefix + LEG_IK)) is not None
                  and prefix + IK_PARENT not in names and bones[i].parent < 0}
    if not add_root and not ik_parents:
        return []
    new: list[pmx.PmxBone] = []
    lookup = np.full(n + 1, -1, np.int64)
    root = names.get(ROOT)
    if add_root:
        new.append(_new_bone(ROOT, "master", np.zeros(3), -1, FLAGS[ROOT]))
        root = None
    for i, b in enumerate(bones):
        if i in ik_parents:
            at = np.asarray(b.position, np.float64)
            new.append(_new_bone(ik_parents[i] + IK_PARENT, f"leg IKP_{'L' if ik_parents[i] == '左' else 'R'}",
                                 [at[0], 0.0, at[2]], -1, FLAGS[IK_PARENT]))
        lookup[i] = len(new)
        new.append(b)
    warnings: list[str] = []
    for i, b in enumerate(bones):
        _remap_bone_references(b, lookup, n, warnings)
        b.parent = int(lookup[b.parent]) if 0 <= b.parent < n else -1
    top = 0 if add_root else int(lookup[root])
    for k, b in enumerate(new):  # a bone without a parent hangs on 全ての親 when that comes first
        if b.name[1:] == IK_PARENT and k not in lookup[:n]:
            b.parent = top if top < k else -1
            b.tail_bone = k + 1
            new[k + 1].parent = k
        elif b.parent < 0 and top < k:
            b.parent = top
    if add_root:
        new[0].tail_bone = int(lookup[names[CENTER]])
    _remap_model_references(model, lookup, n)
    model.bones = new
    _display_frames(model)
    added = [b.name for k, b in enumerate(new) if k not in set(lookup[:n].tolist())]
    return [f"--mmd-rig: the model has its MMD rig; kept as it is, with {', '.join(added)} added"]


# -- the control layer ---------------------------------------------------------------------------------------

_COPIED_FIELDS = ("name", "name_e", "position", "parent", "layer", "flags", "tail_bone", "tail_offset",
                  "append_parent", "append_ratio", "fixed_axis", "local_x", "local_z", "external_key", "ik")


def _kept(m: BoneMapping) -> list[int]:
    """Source bones exported as themselves (not merged into a control bone, not dropped, not hanging on a
    control bone: those follow the control bone the rig builds, `_control_ancestor`)."""
    return [i for i in range(len(m.names)) if not m.dropped(i) and not m.merged(i) and m.how[i] != "control"
            and _control_ancestor(m, i) is None]


def _control_ancestor(m: BoneMapping, i: int) -> int | None:
    """The source leg IK control bone (左足ＩＫ, ...) bone i hangs on, passing only dropped helpers; else None
    (what hangs on センター, グルーブ or 腰 is placed by `rig_parents`)."""
    for a in ancestors(m.parents, i):
        if m.how[a] == "control":
            return None if m.names[a] in (CENTER, GROOVE, WAIST) else a
        if not m.dropped(a):
            return None
    return None


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
        for a in ancestors(m.parents, i):
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


class _RigBones:
    """The rigged model's bone list as it is built, and where each source bone went."""

    def __init__(self, src: list[pmx.PmxBone], m: BoneMapping) -> None:
        self.src = src
        self.new: list[pmx.PmxBone] = []
        self.new_of_src: dict[int, int] = {}
        self.control_src = {m.names[i]: i for i in range(len(src)) if m.how[i] == "control"}

    def control(self, name: str, position, parent: int, flags: int, layer: int = 0, name_e: str = "") -> int:
        b = _new_bone(name, name_e or CONTROL_NAMES_E.get(name, ""), position, parent, flags, layer)
        if name in self.control_src:  # the source already has this control bone: it merges, keeping its place
            s = self.src[self.control_src[name]]
            b.position = np.asarray(s.position, np.float32).copy()
            b.name_e = s.name_e or b.name_e
            self.new_of_src[self.control_src[name]] = len(self.new)
        self.new.append(b)
        return len(self.new) - 1


def _build_rig(model: pmx.PmxModel, m: BoneMapping) -> list[str]:
    warnings: list[str] = []
    src = model.bones
    n = len(src)
    pos = np.array([b.position for b in src], np.float64).reshape(n, 3)
    role = {name: i for i in range(n) if (name := m.mmd[i]) is not None and not m.dropped(i)}
    pelvis = role.get(LOWER)
    kept = _kept(m)
    anchor = _trunk_anchor(m, pos, kept, pelvis)
    unit = max(float(anchor[1]) * 0.1, 0.5)  # display length of the control bones' tails (MMD units)
    rb = _RigBones(src, m)
    control_index = _add_trunk_controls(rb, anchor, unit)
    root = control_index[ROOT]
    for i in range(n):
        if m.merged(i):
            rb.new_of_src[i] = root
    parent_of = rig_parents(m)  # ('new', control bone name) or ('src', source index)
    src_order = _parents_first(m, kept, parent_of)
    _add_source_bones(rb, m, src_order, parent_of, control_index, role, pos, kept)
    # dropped helpers: weights and references to the nearest exported ancestor, never 全ての親 (bone 0)
    lookup = _map_unexported(rb, m, rb.new_of_src[pelvis] if pelvis is not None else control_index[CENTER], root)
    dropped = [m.names[i] for i in range(n) if m.dropped(i)]
    if dropped:
        warnings.append(f"--mmd-rig: {len(dropped)} helper bone(s) dropped, their weights moved to the nearest "
                        f"exported ancestor: {', '.join(dropped)}")
    for i in src_order:
        _remap_bone_references(rb.new[rb.new_of_src[i]], lookup, n, warnings)
    _add_leg_ik(rb, m, root, unit, warnings, lookup)  # after the source bones: every bone it names comes first
    _add_control_children(rb, m, lookup, root, warnings)
    _set_body_bones(rb.new, unit)
    _remap_model_references(model, lookup, n)
    model.bones = rb.new
    _display_frames(model)
    return warnings


def _trunk_anchor(m: BoneMapping, pos: np.ndarray, kept: list[int], pelvis: int | None) -> np.ndarray:
    """Where the trunk controls stand: the pelvis head, else the first kept bone without a kept ancestor."""
    if pelvis is not None:
        return pos[pelvis]
    kept_set = set(kept)
    tops = [i for i in kept if not kept_set.intersection(ancestors(m.parents, i))]
    return pos[tops[0]] if tops else np.zeros(3)


def _add_trunk_controls(rb: _RigBones, anchor: np.ndarray, unit: float) -> dict[str, int]:
    """全ての親, センター, グルーブ and 腰: their new indices by name."""
    root = rb.control(ROOT, np.zeros(3), -1, FLAGS[ROOT])
    center_pos = np.array([anchor[0], anchor[1] * CENTER_HEIGHT, anchor[2]])
    center = rb.control(CENTER, center_pos, root, FLAGS[CENTER])
    groove = rb.control(GROOVE, center_pos, center, FLAGS[GROOVE])
    waist = rb.control(WAIST, anchor, groove, FLAGS[WAIST])
    rb.new[root].tail_bone = center
    for k in (center, groove, waist):
        rb.new[k].tail_offset = np.float32([0, unit, 0])
    return {CENTER: center, GROOVE: groove, WAIST: waist, ROOT: root}


def _parents_first(m: BoneMapping, kept: list[int], parent_of: dict) -> list[int]:
    """The kept source bones parents first, stable in source order; a mapping that makes a bone its own
    ancestor is an error."""
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
    return src_order


def _add_source_bones(rb: _RigBones, m: BoneMapping, src_order: list[int], parent_of: dict,
                      control_index: dict[str, int], role: dict[str, int], pos: np.ndarray, kept: list[int]) -> None:
    """Copies of the kept source bones under their MMD names and rig parents; a zero-weight 上半身2 between
    上半身 and its children when the source has a single spine bone."""
    new, new_of_src = rb.new, rb.new_of_src
    upper = role.get(UPPER)
    upper2_new = None
    if upper is not None and role.get(UPPER2) is None:
        children = [i for i in kept if parent_of[i] == ("src", upper)]
        neck = role.get("首")
        top = pos[neck] if neck is not None else (pos[children].mean(axis=0) if children else pos[upper])
        upper2_pos = (pos[upper] + top) / 2
    for i in src_order:
        copy = pmx.PmxBone(**{f: getattr(rb.src[i], f) for f in _COPIED_FIELDS})
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


def _map_unexported(rb: _RigBones, m: BoneMapping, fallback: int, root: int) -> np.ndarray:
    """Source bones not exported go to the nearest exported ancestor (`fallback` instead of 全ての親; source
    control bones this rig does not build, e.g. without a leg chain, to 全ての親); the source → new index
    lookup, with lookup[n] = -1 for "none"."""
    n = len(rb.src)
    new_of_src = rb.new_of_src
    for i in range(n):
        if i in new_of_src:
            continue
        if m.how[i] == "control":
            new_of_src[i] = root
            continue
        target = next((new_of_src[a] for a in ancestors(m.parents, i) if a in new_of_src), root)
        new_of_src[i] = fallback if target == root else target
    lookup = np.full(n + 1, -1, np.int64)
    for s, k in new_of_src.items():
        lookup[s] = k
    return lookup


def _add_leg_ik(rb: _RigBones, m: BoneMapping, root: int, unit: float, warnings: list[str],
                lookup: np.ndarray) -> None:
    """足IK親, 足ＩＫ and つま先ＩＫ of each side whose leg chain is complete; an IK bone the source already has
    keeps its own IK record (target, links, limits, loop, angle), its indices mapped through `lookup`."""
    new = rb.new
    by_name = {b.name: k for k, b in enumerate(new)}
    for side, prefix in SIDES.items():
        if not leg_chain_ok(m, side):
            continue
        leg, knee, ankle = (by_name[prefix + r] for r in (LEG, KNEE, ANKLE))
        toe = by_name.get(prefix + TOE)
        ankle_pos = np.asarray(new[ankle].position, np.float64)
        ik_parent = rb.control(prefix + IK_PARENT, [ankle_pos[0], 0.0, ankle_pos[2]], root, FLAGS[IK_PARENT],
                               name_e=f"leg IKP_{side}")
        leg_ik = rb.control(prefix + LEG_IK, ankle_pos, ik_parent, FLAGS[LEG_IK], LAYERS[LEG_IK], f"leg IK_{side}")
        new[ik_parent].tail_bone = leg_ik
        new[leg_ik].tail_offset = np.float32([0, 0, unit])
        new[leg_ik].ik = pmx.PmxIK(target=ankle, loop=LEG_IK_LOOP, limit_angle=LEG_IK_ANGLE, links=[
            pmx.PmxIKLink(knee, KNEE_LOWER.copy(), KNEE_UPPER.copy()), pmx.PmxIKLink(leg)])
        if toe is None:
            warnings.append(f"--mmd-rig: no {prefix}{TOE}, so no {prefix}{TOE_IK}")
            continue
        toe_ik = rb.control(prefix + TOE_IK, new[toe].position, leg_ik, FLAGS[TOE_IK], LAYERS[TOE_IK],
                            f"toe IK_{side}")
        new[toe_ik].tail_offset = np.float32([0, -unit, 0])
        new[toe_ik].ik = pmx.PmxIK(target=toe, loop=TOE_IK_LOOP, limit_angle=TOE_IK_ANGLE,
                                   links=[pmx.PmxIKLink(ankle)])
    n = len(rb.src)
    for name, s in rb.control_src.items():
        k = rb.new_of_src.get(s)
        if rb.src[s].ik is not None and k is not None and new[k].name == name and new[k].ik is not None:
            new[k].ik = rb.src[s].ik
            _remap_bone_references(new[k], lookup, n, warnings, ik_only=True)


def _add_control_children(rb: _RigBones, m: BoneMapping, lookup: np.ndarray, root: int,
                          warnings: list[str]) -> None:
    """Source bones hanging on a source control bone (the tips 左足ＩＫ先) follow the control bone the rig
    built, after it; `lookup` is updated for the control bones and these bones."""
    n = len(rb.src)
    depth = {i: len(ancestors(m.parents, i)) for i in range(n)}
    late = sorted((i for i in range(n) if not m.dropped(i) and not m.merged(i) and m.how[i] != "control"
                   and _control_ancestor(m, i) is not None), key=lambda i: (depth[i], i))
    built = {s for s in rb.control_src.values() if rb.new_of_src.get(s, root) != root}
    lost = []
    for i in late:
        p = next(a for a in ancestors(m.parents, i) if not m.dropped(a))
        if p not in built:
            lost.append(m.names[i])
            continue
        copy = pmx.PmxBone(**{f: getattr(rb.src[i], f) for f in _COPIED_FIELDS})
        copy.parent = rb.new_of_src[p]
        rb.new_of_src[i] = len(rb.new)
        rb.new.append(copy)
        built.add(i)
    for s in built:
        lookup[s] = rb.new_of_src[s]
    for i in late:
        if i in built:
            _remap_bone_references(rb.new[rb.new_of_src[i]], lookup, n, warnings)
    if lost:
        warnings.append(f"--mmd-rig: {len(lost)} bone(s) hang on a control bone the rig does not build; their "
                        f"weights moved to 全ての親's subtree: {', '.join(lost)}")


def _set_body_bones(new: list[pmx.PmxBone], unit: float) -> None:
    """Flags, layers and tails of the body bones."""
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


def _remap_bone_references(b: pmx.PmxBone, lookup: np.ndarray, n: int, warnings: list[str],
                            ik_only: bool = False) -> None:
    """Tail, append parent and IK of a copied source bone: source indices → new indices."""
    def one(i):
        return int(lookup[i]) if 0 <= i < n else (i if i < 0 else -1)

    if b.tail_bone is not None and not ik_only:
        b.tail_bone = one(b.tail_bone)
    if b.append_parent is not None and not ik_only:
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
