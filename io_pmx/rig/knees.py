"""Knee limits that fit the motions written with them (no bpy).

The rig (`mmd_rig`) limits each ひざ IK link to X ∈ [−180°, −0.5°]: a human knee, whose shin swings back.
MMD's IK starts from the keyed pose and keeps the knee inside its limit, so a knee key on the other side is
hidden at whole frames (the runtime starts on the target) and flips to the allowed side between frames. A
leg may bend the other way, or both ways (Fox's hind legs swing a shin forward by up to 17° now and then).
So, for a rigged export with its motions:

* the sign of each knee's limit follows how its knee keys bend: the X twist of each key (the rotation about
  the PMX X axis, `twist_x`), counted over every motion; more keys bending forward (twist > +0.5°) than back
  gives [+0.5°, +180°] (float32 bits of the rig's limit, negated and swapped); with no bending keys, the
  leg's rest decides (a knee behind the line from hip to ankle bends forward);
* keys bending the other way (beyond the 0.5° margin) widen the limit's inner edge just past the farthest of
  them, so that MMD's IK, which starts from the keyed knee, stays on the side the source is on; such a knee
  is reported per motion with its frames;
* every knee key is written inside its knee's limit (its X twist, clamped into the limit; the Y and Z parts
  of a key are dropped, the limit holds them at 0): IK on, MMD solves the knee from that start to where the
  IK bone puts the ankle.
"""
from __future__ import annotations

import numpy as np

from ..model import pmx
from ..motion import vmd
from .names import KNEE, SIDES

MARGIN = np.radians(0.5)


def twist_x(rot_xyzw: np.ndarray) -> np.ndarray:
    """The angle (radians, −π..π) of the rotation about the X axis in each (x, y, z, w) quaternion."""
    q = np.asarray(rot_xyzw, np.float64).reshape(-1, 4)
    return _wrap(2 * np.arctan2(q[:, 0], q[:, 3]))


def _negated(v: np.ndarray) -> np.ndarray:
    """−v in float32, with +0 where v is 0 (not −0: the rig writes +0 bits for Y and Z)."""
    return (-np.asarray(v, np.float32) + np.float32(0)).astype(np.float32)


def _wrap(a: np.ndarray) -> np.ndarray:
    return (a + np.pi) % (2 * np.pi) - np.pi


def knee_links(model: pmx.PmxModel) -> dict[str, list[pmx.PmxIKLink]]:
    """Knee name → the IK links that limit it (normally one, in 足ＩＫ)."""
    names = {SIDES[s] + KNEE for s in SIDES}
    out: dict[str, list] = {}
    for b in model.bones:
        if b.ik is None:
            continue
        for link in b.ik.links:
            if 0 <= link.bone < len(model.bones) and model.bones[link.bone].name in names and link.lower is not None:
                out.setdefault(model.bones[link.bone].name, []).append(link)
    return out


def _rest_bends_forward(model: pmx.PmxModel, knee: str) -> bool:
    """Whether a knee lies behind (+Z: MMD models face −Z) the line from its hip to its ankle at rest."""
    by_name = {b.name: i for i, b in enumerate(model.bones)}
    side = knee[0]
    try:
        hip, kn, ankle = (np.asarray(model.bones[by_name[side + n]].position, np.float64)
                          for n in ("足", KNEE, "足首"))
    except KeyError:
        return False
    d = ankle - hip
    t = np.clip(np.dot(kn - hip, d) / max(np.dot(d, d), 1e-12), 0, 1)
    return float((kn - (hip + t * d))[2]) > 1e-6 * max(1.0, float(np.linalg.norm(d)))


def fit_knees(model: pmx.PmxModel, motions: list[tuple[str, vmd.Motion]]) -> list[str]:
    """Set each knee's limit sign from its keys in `motions` ((label, motion)) and put every knee key inside
    its limit, in place. Returns warnings: knees bending both ways (with frames), keys moved into the limit."""
    warnings: list[str] = []
    links = knee_links(model)
    for knee, ks in links.items():
        field = vmd.encode_name(knee)
        angles = []
        for _, m in motions:
            sel = m.bone_keys["name"] == field
            angles.append(twist_x(m.bone_keys["rotation"][sel]) if sel.any() else np.zeros(0))
        every = np.concatenate(angles) if angles else np.zeros(0)
        forward = int((every > MARGIN).sum())
        back = int((every < -MARGIN).sum())
        bends_forward = forward > back if forward != back else _rest_bends_forward(model, knee)
        for link in ks:
            lo = np.asarray(link.lower, np.float32).copy()
            hi = np.asarray(link.upper, np.float32).copy()
            if bends_forward and hi[0] <= 0:  # the rig's [−180°, −0.5°] mirrored: [+0.5°, +180°]
                link.lower, link.upper = _negated(hi), _negated(lo)
            elif not bends_forward and lo[0] >= 0:
                link.lower, link.upper = _negated(hi), _negated(lo)
        # keys bending the other way widen the limit just past them (reported below): MMD's IK starts from
        # the keyed knee and stays on that side, where the source is
        if bends_forward and (every < -MARGIN).any():
            for link in ks:
                link.lower = np.float32([every.min() - MARGIN, 0, 0])
        elif not bends_forward and (every > MARGIN).any():
            for link in ks:
                link.upper = np.float32([every.max() + MARGIN, 0, 0])
        lo_x, hi_x = float(ks[0].lower[0]), float(ks[0].upper[0])
        for (label, m), a in zip(motions, angles):
            if not len(a):
                continue
            sel = np.flatnonzero(m.bone_keys["name"] == field)
            frames = m.bone_keys["frame"][sel]
            wrong = (a < -MARGIN) if bends_forward else (a > MARGIN)
            if wrong.any():
                listed = ", ".join(str(int(f)) for f in np.sort(frames[wrong])[:12])
                more = ", ..." if wrong.sum() > 12 else ""
                how = "bends both ways" if (~wrong & (np.abs(a) > MARGIN)).any() else "bends against its limit"
                warnings.append(f"{label}: {knee} {how} (mostly {'forward' if bends_forward else 'back'}; its "
                                f"limit is widened to {np.degrees(lo_x):.1f}°..{np.degrees(hi_x):.1f}° about X to "
                                f"hold the keys bending the other way), at frames {listed}{more}")
            clamped = np.clip(a, lo_x, hi_x)
            moved = np.abs(clamped - a) > MARGIN
            if moved.any() and not wrong.any():
                warnings.append(f"{label}: {int(moved.sum())} key(s) of {knee} moved into its limit")
            rot = np.zeros((len(sel), 4))
            rot[:, 0], rot[:, 3] = np.sin(clamped / 2), np.cos(clamped / 2)
            m.bone_keys["rotation"][sel] = rot
    return warnings
