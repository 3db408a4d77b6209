"""VMD export onto a rigged PMX (`--mmd-rig` / `--arm-angle`): retargeting through world transforms; and
`convert --to pmx`'s motions (`build_target_motions`), plain or retargeted.

The rigged PMX has another hierarchy than the Blender armature (上半身 hangs on 腰, not on the hips; control
bones are inserted; helpers are dropped; roots merge into 全ての親) and, with `--arm-angle`, another rest
pose. Local keys can therefore not be carried over bone by bone. Instead, at every frame exported:

* Blender evaluates the action (the armature's pose at that time, NLA off); each source bone b gives its
  deformation M_b = posed world · rest world⁻¹ (Blender world axes);
* the PMX bone k made from b must deform its own rest (which is D_b · Blender rest, D_b the arm-angle rest
  transform of `mmd_arm_angle.arm_angle_rest_transforms`, identity off the arms) as b deforms Blender's:
  S_k = K · M_b · D_b⁻¹ · K⁻¹ (K: Blender world → MMD axes and units), so its MMD world matrix is
  W_k = S_k · T(head_k);
* 全ての親 takes the deformation of the deepest source bone merged into it (the root motion), so センター,
  グルーブ, 腰 and 足IK親 stay at rest under it; an IK bone takes the deformation of its IK target (so that
  MMD with IK on lands where the motion puts the foot); other bones without a source (the inserted 上半身2)
  stay at rest relative to their parent;
* the key is the local transform MMD composes to W_k: rotation R_p⁻¹ R_k, position R_p⁻¹ (t_k − t_p) −
  (head_k − head_p), with 付与 (append) contributions taken out as `core.skinning.mmd_world_matrices` adds
  them.

Frames: every whole 30-fps frame that is a key of the action, and for keys between whole frames the whole
frames on both sides (`whole_frames`; a 24-fps action gets nearly every frame); every whole frame inside a
segment of a bone curve that is not a straight line (Bézier, easing): a PMX-local key composes several source
curves (上半身 = hips · spine), which one 4-channel VMD block cannot follow; `bake`: every whole frame. The
action is evaluated on every whole and half frame of its range. IK bones (and the bones they hang from) are
also keyed wherever an IK bone's world path leaves the straight line between two keys by more than
`PATH_TOLERANCE` of the model's height (`vmd_retarget.path_keys`): a linear block moves the IK target along
that line while the source's ankle curves.

Curves: each segment's block passes every channel through the source at the segment's middle (the half
frame; `vmd_retarget.midpoint_fractions`, `fraction_curves`); for rotations over one-frame segments the point
on the slerp arc is chosen along the chain, parents first, to put each bone's farthest child where the source
has it (`vmd_retarget.fit_chain_fractions`). IK state keys are not written (MMD's default, IK on). Bones that
never leave their rest get no keys. Scale in the pose cannot be held by a VMD: it is dropped with a warning.
With the rig the knee limits follow the knee keys (`mmd_knees.fit_knees`, in `build_target_motions`).

The pure part (world matrices → MMD keys) is `vmd_retarget.rigged_keys`.
"""
from __future__ import annotations

import math
import os
import re

import numpy as np

from ...blender import action as bact
from ...blender import armature as barm
from ...core.errors import ExportError
from ...core.fileio import output_path, write_atomic
from ...core.naming import NameAllocator
from ..motion import vmd
from ..motion import channels
from . import blender_morphs
from .blender_motion_curves import INTERP, WHOLE, Curve, channelbags, vmd_frames, whole_frames
from .blender_motion_export import assemble, export_morphs, export_motion, motion_actions
from .blender_motion_model import BONE_PATH, mmd_names_of, model_metres_per_unit, unescape
from ..rig.arm_angle import arm_angle_rest_transforms
from ..rig.bone_map import depths, load_bone_map, map_bones
from ..rig.knees import fit_knees
from ..rig.names import ROOT, SIDES
from ..motion.retarget import fit_chain_fractions, fraction_curves, midpoint_fractions, path_keys, rigged_keys

PATH_TOLERANCE = 1e-4  # of the model's height: how far an IK bone's path may leave the line between two keys


def build_target_motions(context, options, metres_per_unit: float | None, model, names: dict | None = None,
                         bone_map: dict | None = None) -> tuple[list[tuple[str, vmd.Motion]], list[str]]:
    """`convert --to pmx`'s motions for `model`, the PMX records about to be written: one (file stem, motion)
    per action of the model's armature, made in memory. Plain: each action's keys (`export_motion`), bone
    names through `names` (Blender bone → the shortened name the PMX uses). With `--mmd-rig` or `--arm-angle`:
    retargeted onto `model` (its bones, parents and rest positions are the ones `mmd_rig.apply` made, see
    `export_rigged_motion`), and with the rig the knee limits of `model` are fitted to the knee keys
    (`mmd_knees.fit_knees`). `bone_map`: the `--bone-map` as loaded (its file is read once per conversion)."""
    arm_ob = next((o for o in context.view_layer.objects if o.type == "ARMATURE"), None)
    if arm_ob is None:
        return [], []
    actions = motion_actions(arm_ob)
    if not actions:
        return [], []
    allocator = NameAllocator()
    pending, warnings = [], []
    rigged = bool(options.mmd_rig or options.arm_angle)
    for act in actions:
        if rigged:
            motion, more = export_rigged_motion(context, act, arm_ob, model, options.arm_angle,
                                                bone_map,
                                                mmd_rig=bool(options.mmd_rig), metres_per_unit=metres_per_unit)
        else:
            motion, more = export_motion(context, act, arm_ob, names=names, metres_per_unit=metres_per_unit,
                                         model_name=model.name)
        warnings += more
        pending.append((allocator.take(act.name, ".vmd"), motion))
    if options.mmd_rig:
        warnings += fit_knees(model, pending)
    return pending, warnings


def write_motions(outdir: str, pending: list[tuple[str, vmd.Motion]]) -> list[str]:
    """OUTDIR/<stem>.vmd for each (stem, motion); none is written if the output guard refuses any (an input)."""
    for stem, _ in pending:
        output_path(outdir, stem + ".vmd")
    data = [(stem, vmd.write(motion)) for stem, motion in pending]
    written = []
    for stem, raw in data:
        out = os.path.join(outdir, stem + ".vmd")
        write_atomic(out, raw)
        written.append(out)
    return written


def _rig_sources(model, arm_ob, bone_map, mmd_rig: bool = True) -> tuple:
    """(source skeleton, its `mmd_map_bones` mapping, the source bone index each PMX bone follows or
    None). Without the rig (`--arm-angle` alone) the PMX keeps the source names."""

    if isinstance(bone_map, (str, os.PathLike)):
        bone_map = load_bone_map(os.fspath(bone_map))
    skel = barm.read_skeleton(arm_ob)
    mmd_of = mmd_names_of(arm_ob)
    names = [mmd_of.get(n, n) for n in skel.names]  # the names the PMX export starts from
    parents = [int(p) for p in skel.parents]
    exported = {b.name for b in model.bones}  # the rig kept these (its own IK chains), helper-like names or not
    mapping = map_bones(names, parents, None, bone_map, keep=[i for i, nm in enumerate(names) if nm in exported])
    by_name: dict[str, int] = {}
    merged = [i for i in range(len(names)) if mapping.merged(i)]
    for i in range(len(names)):
        if mapping.dropped(i) or mapping.merged(i):
            continue
        by_name.setdefault(mapping.exported_name(i) if mmd_rig else names[i], i)
    if mmd_rig and merged:  # the root motion: the deepest bone merged into 全ての親
        depth = depths(parents)
        by_name.setdefault(ROOT, max(merged, key=lambda i: (depth[i], i)))
    # a name too long for a VMD was shortened in the PMX (vmd_names), the full one kept as English name
    src = [by_name.get(b.name, by_name.get(b.name_e) if vmd.name_problem(b.name_e) else None) for b in model.bones]
    return skel, mapping, src


def _posed_world(context, arm_ob, act, xs: np.ndarray, names: list[str]) -> np.ndarray:
    """(F, B, 4, 4) world matrices of bones `names` at Blender frames `xs`, as Blender evaluates the armature
    with `act` assigned (NLA off). The scene's frame, the action and its slot are restored."""
    scene = context.scene
    ad = arm_ob.animation_data or arm_ob.animation_data_create()
    saved = (scene.frame_current, scene.frame_subframe, ad.action, ad.action_slot, ad.use_nla)
    out = np.zeros((len(xs), len(names), 4, 4))
    try:
        if ad.action != act:
            ad.action = act
        slot = bact.slot_for(arm_ob, act)
        if slot is not None and ad.action_slot != slot:
            ad.action_slot = slot
        ad.use_nla = False
        for f, x in enumerate(xs):
            base = math.floor(x + 1e-9)
            scene.frame_set(int(base), subframe=float(max(x - base, 0.0)))
            deps = context.evaluated_depsgraph_get()
            ev = arm_ob.evaluated_get(deps)
            world = np.array(ev.matrix_world, np.float64)
            for b, n in enumerate(names):
                out[f, b] = world @ np.array(ev.pose.bones[n].matrix, np.float64)
    finally:
        ad.use_nla = saved[4]
        if ad.action != saved[2]:
            ad.action = saved[2]
        if saved[3] is not None and ad.action_slot != saved[3]:
            try:
                ad.action_slot = saved[3]
            except (TypeError, RuntimeError):
                pass
        scene.frame_set(saved[0], subframe=saved[1])
    return out


def _key_samples(model, deform: np.ndarray, base: np.ndarray, moving: list[int]) -> dict[int, np.ndarray]:
    """Which evaluated frames (indices into `deform`) each moving bone is keyed on: the frames of the action
    (`base`); for IK bones, and the bones they hang from, also every frame where an IK bone's world path
    leaves the straight line between two keys by more than `PATH_TOLERANCE` of the model's height (a linear
    block moves the IK target along that line while the source's ankle curves)."""
    n = len(model.bones)
    heads = np.array([b.position for b in model.bones], np.float64).reshape(-1, 3)
    ys = model.vertices["position"][:, 1] if len(model.vertices) else heads[:, 1]
    height = float(ys.max() - ys.min()) if len(ys) else 1.0
    ik = [k for k, b in enumerate(model.bones) if b.ik is not None and np.isfinite(deform[:, k]).all()]
    out = {k: base for k in moving}
    if not ik or len(deform) < 3:
        return out
    d = deform[:, ik]
    world = np.einsum("fkij,kj->fki", d[..., :3, :3], heads[ik]) + d[..., :3, 3]
    extended = path_keys(world, base, PATH_TOLERANCE * max(height, 1e-9))
    chain = set()
    for k in ik:
        while 0 <= k < n and k not in chain:
            chain.add(k)
            k = int(model.bones[k].parent)
    for k in moving:
        if k in chain:
            out[k] = extended
    return out


def export_rigged_motion(context, act, arm_ob, model, arm_angle: float = 0.0, bone_map=None,
                         bake: bool = False, mmd_rig: bool = True, metres_per_unit: float | None = None
                         ) -> tuple[vmd.Motion, list[str]]:
    """The VMD of one action for `model`, the rigged PMX exported from `arm_ob` (read-only; see above).
    `metres_per_unit`: metres per MMD unit the PMX was written with (None: the model's own)."""

    fps = bact.fps_of(context.scene)
    metres_per_unit = model_metres_per_unit(arm_ob) if metres_per_unit is None else metres_per_unit
    warnings: list[str] = []
    skel, mapping, src = _rig_sources(model, arm_ob, bone_map, mmd_rig)
    m = vmd.Motion()
    m.model_name = model.name or arm_ob.name
    if vmd.name_problem(m.model_name, vmd.MODEL_NAME_SIZE):
        warnings.append(f"model name {m.model_name!r} {vmd.name_problem(m.model_name, vmd.MODEL_NAME_SIZE)}")
    xs, curved = _curve_times(act, arm_ob, fps)
    if xs:
        frames = _rig_frames(act.name, np.concatenate(xs), curved, fps, bake, warnings)
        # every whole frame in the range is evaluated: IK bones get keys where their world path bends
        dense = np.arange(frames[0], frames[-1] + 1) if len(frames) else frames
        base = frames - (frames[0] if len(frames) else 0)
        # and every half frame: each segment's curves pass through the source at its middle
        halves = np.arange(2 * dense[0], 2 * dense[-1] + 1) / 2.0 if len(dense) else dense.astype(np.float64)
        deform = _rig_deformations(context, act, arm_ob, model, skel, mapping, src, halves * fps / vmd.FPS,
                                   metres_per_unit, arm_angle)
        m.bone_keys = _rigged_bone_keys(act.name, model, deform, dense, base, warnings)
        dropped = [skel.names[i] for i in range(len(skel.names)) if mapping.dropped(i)]
        if dropped:
            warnings.append(f"{act.name}: bones dropped by the MMD rig keep no keys (their vertices follow the "
                            f"bone they were merged into): {', '.join(dropped)}")
    parts, more = export_morphs(act, arm_ob, None, fps, bake)
    warnings += more
    m.morph_keys = assemble(parts, None, vmd.MORPH_KEY)
    bad = ~np.all(np.isfinite(m.bone_keys["position"]), axis=1) | ~np.all(np.isfinite(m.bone_keys["rotation"]), axis=1)
    if bad.any():
        raise ExportError(f"action {act.name}: bone {vmd.decode_name(bytes(m.bone_keys['name'][bad][0]))} has a "
                          "non-finite value")
    return m, warnings


def _curve_times(act, arm_ob, fps: float) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The key times of every live bone curve of the action, and the whole VMD frames inside its segments
    that are not straight lines (Bézier, easings), which are sampled on every whole frame."""
    xs, curved = [], []
    for cb in channelbags(act, bact.slot_for(arm_ob, act)):
        for fc in cb.fcurves:
            mt = BONE_PATH.match(fc.data_path) or re.match(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\.', fc.data_path)
            if mt and not fc.mute and len(fc.keyframe_points) and unescape(mt.group(1)) in arm_ob.data.bones:
                c = Curve(fc)
                xs.append(c.x)
                change = (c.y[1:] != c.y[:-1]) & (c.interp[:-1] != INTERP["LINEAR"])
                for i in np.flatnonzero(change):
                    v0, v1 = vmd_frames(c.x[[i, i + 1]], fps)
                    curved.append(np.arange(int(math.ceil(v0)), int(math.floor(v1)) + 1))
    return xs, curved


def _rig_frames(action: str, allx: np.ndarray, curved: list[np.ndarray], fps: float, bake: bool,
                warnings: list[str]) -> np.ndarray:
    """The whole VMD frames to key (see above): every frame of the range when baking."""
    if bake:
        v0, v1 = vmd_frames(np.array([allx.min(), allx.max()]), fps)
        return np.arange(max(int(math.floor(v0 + WHOLE)), 0), int(math.ceil(v1 - WHOLE)) + 1)
    frames, moved = whole_frames(allx, fps)
    if moved:
        warnings.append(f"{action}: keys between whole 30-fps frames resampled onto the frames around them")
    if curved:
        frames = np.unique(np.concatenate([frames] + curved))
        frames = frames[frames >= 0]
    return frames


def _rig_deformations(context, act, arm_ob, model, skel, mapping, src, times: np.ndarray, metres_per_unit: float,
                      arm_angle: float) -> np.ndarray:
    """S_k (see above) of every PMX bone at every time: (times, bones, 4, 4), NaN for bones without a
    source that are not IK bones."""
    used = sorted({s for s in src if s is not None})
    binds = skel.binds()
    with blender_morphs.at_rest(arm_ob):  # bone morphs travel as morph keys, not inside the bone keys
        posed = _posed_world(context, arm_ob, act, times, [skel.names[i] for i in used])
    heads = binds[:, :3, 3]
    arms = {i: side for side, prefix in SIDES.items() if (i := mapping.index(prefix + "腕")) is not None}
    d = arm_angle_rest_transforms([int(p) for p in skel.parents], heads, arms, float(arm_angle or 0.0))
    k4 = np.eye(4)
    k4[:3, :3] = channels.SWAP_YZ / metres_per_unit
    k4_inv = np.linalg.inv(k4)
    n = len(model.bones)
    deform = np.full((len(times), n, 4, 4), np.nan)
    col = {s: c for c, s in enumerate(used)}
    for k, s in enumerate(src):
        if s is None:
            continue
        mb = posed[:, col[s]] @ np.linalg.inv(binds[s])
        deform[:, k] = k4 @ mb @ np.linalg.inv(d[s]) @ k4_inv
    for k, b in enumerate(model.bones):  # IK bones follow their targets
        if src[k] is None and b.ik is not None and 0 <= b.ik.target < n and src[b.ik.target] is not None:
            deform[:, k] = deform[:, b.ik.target]
    return deform


def _rigged_bone_keys(action: str, model, deform: np.ndarray, dense: np.ndarray, base: np.ndarray,
                      warnings: list[str]) -> np.ndarray:
    """The VMD bone keys of the PMX bones that leave their rest, from their deformations on the half-frame
    grid of `dense`; each segment's block passes through the source at its middle."""
    n = len(model.bones)
    pos_h, rot_h, worst = rigged_keys(model, deform)
    pos_h[np.abs(pos_h) < 1e-6] = 0.0
    pos, rot = pos_h[::2], rot_h[::2]
    if worst > 1e-4:
        warnings.append(f"{action}: the pose scales bones (by up to {worst:.3g}), which a VMD cannot hold; "
                        "scale dropped")
    moving = [k for k in range(n) if np.abs(pos[:, k]).max() > 0 or
              np.abs(np.abs(rot[:, k, 3]) - 1).max() > 1e-12]
    fields, more = vmd.encode_names([model.bones[k].name for k in moving])
    warnings += more
    which = _key_samples(model, deform[::2], base, moving)
    heads_mmd = np.array([bb.position for bb in model.bones], np.float64).reshape(-1, 3)
    target = np.einsum("hkij,kj->hki", deform[..., :3, :3], heads_mmd) + deform[..., :3, 3]
    chain = fit_chain_fractions(model, pos_h, rot_h, target, {k: which[k] for k in moving})
    keys = vmd.new_bone_keys(sum(len(which[k]) for k in moving))
    block = vmd.build_interpolation(vmd.linear_curves())
    at = 0
    for k, field in zip(moving, fields):
        idx = which[k]
        sl = slice(at, at + len(idx))
        at += len(idx)
        keys["name"][sl] = field
        keys["frame"][sl] = dense[idx]
        keys["position"][sl] = pos[idx, k]
        keys["rotation"][sl] = rot[idx, k]
        keys["interpolation"][sl] = block
        if len(idx) > 1:  # half-grid samples: start 2a, middle a + b, end 2b of each segment [a, b]
            a_, b_ = idx[:-1], idx[1:]
            samples = np.stack([2 * a_, a_ + b_, 2 * b_], axis=1)
            frac, live = midpoint_fractions(pos_h[samples, k], rot_h[samples, k])
            fitted = chain.get(k, np.full(len(idx), np.nan))[1:]
            frac[:, 3] = np.where(np.isnan(fitted), frac[:, 3], fitted)
            curves = fraction_curves(frac, live)
            keys["interpolation"][sl][1:] = vmd.build_interpolation(curves)
    return keys
