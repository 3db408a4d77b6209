"""Granny 2 files as core Scenes (docs/nwn2.md §5.4, §5.5): the registry's `load`, `semantic` and `kind_of` of a
`.gr2`, for `compare`, the Blender import and `convert --motion`.

A NWN2 GR2 is a skeleton or an animation. A skeleton becomes a core Skeleton in the MDB's metres and axes
(`core_skeleton`: the same bones an MDB bound to it gets, `bind`); the scene of a skeleton file holds it and no
mesh. NWN2's GR2 files are 3ds Max exports, Z up like the MDB, in centimetres (`UnitsPerMeter` 100): the
skeleton's world positions scaled by 1 / UnitsPerMeter, with no axis change.

The core animation of a track group keys every channel at the animation's frames (and at its end): positions in
metres, rotations w x y z, scales the diagonal of the scale/shear (a shear is dropped with a warning). A constant
or identity channel is one key at 0; an identity scale/shear is no scale channel.
"""
from __future__ import annotations

import os

import numpy as np

from ...core import model as cm
from ...core.transforms import affine_inverse, matrix_to_trs
from ...core.errors import FormatError
from ...core.fileio import read_bytes
from . import MAGIC, animation, gr2, skeleton

SHEAR_TOLERANCE = 1e-4


def core_skeleton(skel: skeleton.Gr2Skeleton) -> cm.Skeleton:
    """The skeleton in the MDB's metres and axes: bind = rest = the world transforms the local ones compose
    (a SKIN mesh is bound at the skeleton's rest pose: nw2fbx links its clusters there). Attachment bones
    (`ap_*`) are no deform bones: no SKIN index reaches them."""
    scale = 1.0 / skel.units_per_metre
    world = skel.world_matrices()
    world[:, :3, 3] *= scale
    out = cm.Skeleton(skel.name)
    for b, bind in zip(skel.bones, world):
        out.bones.append(cm.Bone(b.name, b.parent, bind, np.zeros(3), np.array([1.0, 0, 0, 0]), np.ones(3),
                                 deform=not b.name.startswith("ap_"), extras={"gr2": {"flags": b.flags}}))
    # rest = bind: `Skeleton.set_rest_from_binds`, for all bones in one stack (the same values, 5 ms less)
    local = world.copy()
    parents = out.parents
    child = parents >= 0
    local[child] = affine_inverse(world[parents[child]]) @ world[child]
    t, r, s = matrix_to_trs(local)
    for i, b in enumerate(out.bones):
        b.rest_translation, b.rest_rotation, b.rest_scale = t[i].copy(), r[i].copy(), s[i].copy()
    return out


def to_core(anim: animation.Gr2Animation, group: animation.Gr2TrackGroup, name: str, units: float
            ) -> tuple[cm.Animation, list[str]]:
    """One track group of an animation as a core Animation (metres, w x y z rotations)."""
    warnings = []
    times = anim.times()
    tracks = []
    for track in group.tracks:
        s = animation.sample_track(track, times)
        (pt, p), (rt, r) = s["position"], s["orientation"]
        core = cm.Track(track.name, pt, p / units, rt, r[:, [3, 0, 1, 2]])
        if s["scale_shear"] is not None:
            st, m = s["scale_shear"]
            m = m.reshape(-1, 3, 3)
            diagonal = np.diagonal(m, axis1=1, axis2=2).copy()
            shear = np.abs(m - diagonal[:, :, None] * np.eye(3)).max(initial=0.0)
            if shear > SHEAR_TOLERANCE:
                warnings.append(f"{name}: bone {track.name}: scale/shear has off-diagonal terms up to {shear:.3g}; "
                                "only its diagonal (the scale) is kept")
            core.scale_times, core.scales = st, diagonal
        tracks.append(core)
    extras = {"gr2": {"animation": anim.name, "track_group": group.name, "duration": anim.duration,
                      "time_step": anim.time_step, "oversampling": anim.oversampling, "fps": anim.fps}}
    return cm.Animation(name, float(anim.duration), tracks, extras=extras), warnings


def core_animations(f: gr2.Gr2File, stem: str) -> tuple[list[cm.Animation], list[str]]:
    """Every track group of every animation as a core Animation, named after the file (and the group when the
    file has several)."""
    found = animation.animations(f)
    several = sum(len(a.groups) for a in found) > 1
    out, warnings = [], []
    for anim in found:
        for group in anim.groups:
            core, more = to_core(anim, group, f"{stem}_{group.name}" if several else stem,
                                 animation.units_per_metre(f))
            out.append(core)
            warnings += more
    return out, warnings


def for_bones(f: gr2.Gr2File, stem: str, bones: set[str]) -> tuple[list[cm.Animation], list[str]]:
    """Per animation, the track group that moves most of `bones` (the first on a tie) as a core Animation named
    after the file; the other groups are named in a warning. No animation when no group names any bone."""
    found = animation.animations(f)
    out, warnings = [], []
    for anim in found:
        if not anim.groups:
            continue
        matches = [len(bones & {t.name for t in g.tracks}) for g in anim.groups]
        best = int(np.argmax(matches))
        if matches[best] == 0:
            continue
        name = stem if len(found) == 1 else f"{stem}_{len(out)}"
        core, more = to_core(anim, anim.groups[best], name, animation.units_per_metre(f))
        out.append(core)
        warnings += more
        others = [g.name for i, g in enumerate(anim.groups) if i != best]
        if others:
            warnings.append(f"{name}: track group {anim.groups[best].name} ({matches[best]} of its "
                            f"{len(anim.groups[best].tracks)} tracks name bones) imported; not imported: "
                            f"{', '.join(others)}")
    return out, warnings


def to_scene(f: gr2.Gr2File, name: str) -> tuple[cm.Scene, list[str]]:
    """The file's first skeleton as a scene (a skeleton that cannot be built is refused, naming its bone)."""
    warnings = list(f.warnings)
    found = skeleton.skeletons(f)
    core = None
    if found:
        first = found[0]
        problems = first.problems()
        if problems:
            i, field, message = problems[0]
            raise FormatError(f"skeleton {first.name} bone {i} ({first.bones[i].name}): {message}", None, field)
        core = core_skeleton(first)
    if len(found) > 1:
        warnings.append(f"{len(found)} skeletons ({', '.join(s.name for s in found)}): only {found[0].name} read")
    return cm.Scene(name, skeleton=core), warnings


def kind_of(data: bytes) -> str:
    """"model" for a file holding a skeleton, "motion" for one holding only animations."""
    f = gr2.read(data)
    return "model" if f.root.get("Skeletons") else "motion"


def load(path: str, data: bytes, with_animations: bool = True, motions=()) -> tuple[cm.Scene, list[str]]:
    """The registry's `load`: a `.gr2` as a core Scene without Blender, its first skeleton (as an MDB import
    binds it) and, with `with_animations`, every track group of its animations and of the `.gr2` motions given
    (an output folder's `<action>.gr2` beside its skeleton file)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    f = gr2.read(data)
    scene, warnings = to_scene(f, stem or "gr2")
    if not with_animations:
        return scene, warnings
    scene.animations, more = core_animations(f, stem)
    warnings += more
    for motion in motions:
        raw = read_bytes(motion)
        if not raw.startswith(MAGIC):
            warnings.append(f"{os.path.basename(motion)}: not a GR2 file; left out")
            continue
        found, more = core_animations(gr2.read(raw), os.path.splitext(os.path.basename(motion))[0])
        scene.animations += found
        warnings += more
    return scene, warnings


def semantic(f: gr2.Gr2File) -> list[str]:
    """What an import runs after the read: the skeletons' problems, and every animation's curves decoded (the
    sampling an import adds is bounded by MAX_FRAMES)."""
    out = skeleton.semantic(f)
    animation.animations(f)
    return out
