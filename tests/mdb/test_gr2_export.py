"""Core animations and skeletons written as GR2 files and read back: the same pose at every key and half key
(the core's linear / slerp interpolation against Granny's evaluation of what we wrote), the skeleton's bones."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from skinbridge.core import model as cm
from skinbridge.core.errors import ExportError
from skinbridge.core.transforms import quat_to_matrix3, slerp
from skinbridge.io_mdb.gr2 import (animation as gr2_animation, convert as gr2_convert, curves as gr2_curves,
                                   export as gr2_export, gr2, skeleton as gr2_skeleton)

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"
ANIMATION = GR2_DIR / "ovr_p_ddf_glaive01.GR2"


@pytest.fixture(scope="module")
def genasi() -> cm.Skeleton:
    (skel,) = gr2_skeleton.skeletons(gr2.read(SKELETON.read_bytes()))
    return gr2_convert.core_skeleton(skel)


@pytest.fixture(scope="module")
def body() -> cm.Animation:
    """The dwarf's attack, the bones the Genasi skeleton has, as the import makes it (keys at 30 fps)."""
    (_, _, anim), _ = gr2_convert.core_animations(gr2.read(ANIMATION.read_bytes()), "glaive")
    return anim


def _core_local(track: cm.Track, t: float) -> np.ndarray:
    """The core's own interpolation: positions linear, rotations slerped, between the keys around t."""
    def around(times):
        k = int(np.clip(np.searchsorted(times, t, side="right") - 1, 0, max(len(times) - 2, 0)))
        if len(times) == 1:
            return 0, 0, 0.0
        return k, k + 1, float(np.clip((t - times[k]) / (times[k + 1] - times[k]), 0, 1))
    i, j, u = around(track.translation_times)
    position = (1 - u) * track.translations[i] + u * track.translations[j]
    i, j, u = around(track.rotation_times)
    rotation = slerp(track.rotations[i], track.rotations[j], u)
    out = np.eye(4)
    out[:3, :3], out[:3, 3] = quat_to_matrix3(rotation), position
    return out


def _granny_local(track: gr2_animation.Gr2Track, t: float) -> np.ndarray:
    s = gr2_animation.sample_track(track, np.array([t]))
    out = np.eye(4)
    out[:3, :3] = gr2_skeleton.quaternion_matrix(s["orientation"][1][-1])
    out[:3, 3] = s["position"][1][-1] / 100.0
    return out


def _heads(skel: cm.Skeleton, locals_: dict) -> np.ndarray:
    world = np.empty((len(skel.bones), 4, 4))
    for i, b in enumerate(skel.bones):
        local = locals_.get(b.name, b.rest_local)
        world[i] = local if b.parent < 0 else world[b.parent] @ local
    return world[:, :3, 3]


def test_animation_written_and_read_back_gives_the_same_pose_at_keys_and_half_keys(genasi, body):
    anim = cm.Animation("attack", body.length, [t for t in body.tracks if t.bone in genasi.names])
    assert len(anim.tracks) == 55
    back = gr2.read(gr2_export.animation_file(anim, "P_HHF_skel", genasi))
    (read,) = gr2_animation.animations(back)
    assert read.duration == pytest.approx(anim.length, abs=1e-6) and read.fps == 30.0
    (group,) = read.groups
    assert group.name == "P_HHF_skel"
    names = [t.name for t in group.tracks]
    assert names == sorted(names, key=str.encode) and set(names) == {t.bone for t in anim.tracks}
    assert {t.position.format for t in group.tracks} <= {"DaK32fC32f", "D3Constant32f"}
    assert {t.orientation.format for t in group.tracks} <= {"DaK32fC32f", "D4Constant32f"}
    assert {t.scale_shear.format for t in group.tracks} == {"DaIdentity"}
    assert {t.orientation.degree for t in group.tracks if t.orientation.kind == "bspline"} == {1}
    core_tracks = {t.bone: t for t in anim.tracks}
    granny_tracks = {t.name: t for t in group.tracks}
    height = np.ptp(_heads(genasi, {})[:, 2])
    assert 1.5 < height < 2.5
    keys = anim.tracks[0].rotation_times
    times = np.concatenate([keys, (keys[:-1] + keys[1:]) / 2])
    worst = 0.0
    for t in times:
        ours = _heads(genasi, {n: _core_local(tr, t) for n, tr in core_tracks.items()})
        granny = _heads(genasi, {n: _granny_local(tr, t) for n, tr in granny_tracks.items()})
        worst = max(worst, float(np.abs(ours - granny).max()))
    assert worst < 1e-5 * height


def test_skeleton_written_from_the_core_reads_back_as_its_bones(genasi):
    (skel,) = gr2_skeleton.skeletons(gr2.read(gr2_export.skeleton_file(genasi)))
    (original,) = gr2_skeleton.skeletons(gr2.read(SKELETON.read_bytes()))
    assert skel.name == "P_HHF_skel" and skel.names == genasi.names
    assert [b.parent for b in skel.bones] == [b.parent for b in genasi.bones]
    assert [b.flags for b in skel.bones] == [b.flags for b in original.bones]
    world = skel.world_matrices()  # centimetres
    assert np.abs(world @ np.stack([b.inverse_world for b in skel.bones]) - np.eye(4)).max() < 1e-4
    world[:, :3, 3] /= 100.0
    assert np.abs(world - genasi.binds()).max() < 1e-5


def test_constant_and_scaled_channels_choose_their_formats():
    track = cm.Track("Root", np.array([0.0]), np.array([[0.01, 0.02, 0.03]]), np.array([0.0, 1.0]),
                     np.array([[1.0, 0, 0, 0], [0.0, 0, 0, 1]]), np.array([0.0, 1.0]),
                     np.array([[1.0, 1, 1], [2.0, 2, 2]]))
    (read,) = gr2_animation.animations(gr2.read(gr2_export.animation_file(cm.Animation("a", 1.0, [track]), "S")))
    (t,) = read.groups[0].tracks
    assert (t.position.format, t.orientation.format, t.scale_shear.format) == ("D3Constant32f", "DaK32fC32f",
                                                                               "DaK32fC32f")
    assert np.array_equal(t.position.controls[0], np.float32([1, 2, 3]))
    # half-way the normalised lerp of (0,0,0,1) and (0,0,1,0) is the slerp's 90° about z
    q = gr2_curves.evaluate(t.orientation, [0.5], normalize=True)[0]
    assert np.allclose(q / np.linalg.norm(q), [0, 0, np.sqrt(0.5), np.sqrt(0.5)], atol=1e-7)
    assert np.allclose(gr2_curves.evaluate(t.scale_shear, [0.5])[0], np.diag([1.5] * 3).ravel())


def test_a_non_finite_key_is_refused_naming_the_bone():
    track = cm.Track("Spine", np.array([0.0, 1.0]), np.array([[0, 0, 0], [np.nan, 0, 0]]))
    with pytest.raises(ExportError, match="Spine"):
        gr2_export.animation_file(cm.Animation("a", 1.0, [track]), "S")
