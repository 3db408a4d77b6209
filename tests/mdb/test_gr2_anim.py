"""GR2 animations to core Animations (no Blender): the sample's track groups, durations, frame rate and keys;
the keys checked against scipy's B-spline of each curve's decoded knots and controls; `info` and `load` agree;
hostile fields are refused with FormatError."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from skinbridge import formats
from skinbridge.core.errors import FormatError
from skinbridge.io_mdb.gr2 import (animation as gr2_animation, check as gr2_check, convert as gr2_convert,
                                   curves as gr2_curves, gr2, info as gr2_info)

scipy_interpolate = pytest.importorskip("scipy.interpolate")

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
ANIMATION = GR2_DIR / "ovr_p_ddf_glaive01.GR2"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"
GROUPS = [("P_DDFtail_skel", 12), ("P_DDFcapewing_skel", 44), ("P_DDF_skel", 67)]


@pytest.fixture(scope="module")
def sample() -> gr2.Gr2File:
    return gr2.read(ANIMATION.read_bytes())


def _scipy(curve: gr2_curves.Curve, times: np.ndarray) -> np.ndarray:
    """The textbook B-spline of Granny's curve: knots u_m = knot[m − 1], controls P_m = control[m], clamped."""
    n, d = len(curve.knots), curve.degree
    c = curve.controls.astype(np.float64)[np.clip(np.arange(-d, n), 0, n - 1)]
    u = curve.knots.astype(np.float64)[np.clip(np.arange(-d, n + d + 1) - 1, 0, n - 1)]
    return scipy_interpolate.BSpline(u, c, d)(times)


def test_sample_animation_groups_duration_and_frame_rate(sample):
    (anim,) = gr2_animation.animations(sample)
    assert [(g.name, len(g.tracks)) for g in anim.groups] == GROUPS
    assert anim.duration == pytest.approx(5 / 3, abs=1e-6)
    assert anim.fps == 30.0  # TimeStep 1/240 · Oversampling 8
    times = anim.times()
    assert len(times) == 51 and times[0] == 0 and times[-1] == anim.duration
    assert np.allclose(np.diff(times), 1 / 30)


def test_core_keys_are_the_curves_at_every_frame(sample):
    (anim,) = gr2_animation.animations(sample)
    core, warnings = gr2_convert.core_animations(sample, "glaive")
    assert warnings == []
    assert [(a.name, a.length, len(a.tracks)) for a in core] == [
        (f"glaive_{name}", anim.duration, count) for name, count in GROUPS]
    units = 100.0
    checked = 0
    for group, animation in zip(anim.groups, core):
        for source, track in zip(group.tracks, animation.tracks):
            assert track.bone == source.name
            if source.position.kind == "bspline":
                assert np.array_equal(track.translation_times, anim.times())
                expected = _scipy(source.position, anim.times()) / units
                assert np.abs(track.translations - expected).max() < 1e-6
                checked += 1
            else:
                assert len(track.translations) == 1 and track.translation_times[0] == 0
            if source.orientation.kind == "bspline":
                q = _scipy(source.orientation, anim.times())
                q *= ((3 - (q * q).sum(axis=1)) / 2)[:, None]  # Granny's one-step normalisation
                assert np.abs(track.rotations - q[:, [3, 0, 1, 2]]).max() < 1e-5
                assert np.abs(np.linalg.norm(track.rotations, axis=1) - 1).max() < 1e-3
                checked += 1
            assert track.scales is None  # every scale/shear curve of the sample is the identity
    assert checked > 100


def test_info_lists_what_the_import_makes(sample):
    summary = gr2_info.info(ANIMATION.read_bytes(), str(ANIMATION))
    (a,) = summary["animations"]
    assert [(g["name"], g["transform_tracks"]) for g in a["track_groups"]] == GROUPS
    assert a["fps"] == 30.0 and a["frames"] == 51 and a["duration"] == pytest.approx(5 / 3, abs=1e-6)
    body = a["track_groups"][2]
    assert body["vector_tracks"] == 18 and sum(body["curve_formats"].values()) == 3 * 67
    assert set(body["curve_formats"]) <= set(gr2_curves.FORMAT_NAMES)
    scene, _ = gr2_convert.load(str(ANIMATION), ANIMATION.read_bytes())
    assert scene.skeleton is None
    assert [len(x.tracks) for x in scene.animations] == [g["transform_tracks"] for g in a["track_groups"]]
    assert all(x.length == a["duration"] for x in scene.animations)


def test_registry_kinds_and_skeleton_load():
    spec = formats.identify_file(ANIMATION)
    assert spec.name == "gr2" and spec.has("motion_loader")
    assert formats.file_kind(ANIMATION, spec) == "motion"
    assert formats.file_kind(SKELETON, spec) == "model"
    scene, _ = gr2_convert.load(str(SKELETON), SKELETON.read_bytes())
    assert len(scene.skeleton.bones) == 88 and scene.animations == []


def test_for_bones_picks_the_group_that_moves_most_bones(sample):
    animations, warnings = gr2_convert.for_bones(sample, "glaive", {"Tail01", "Tail02", "LCape1"})
    assert [(a.name, len(a.tracks)) for a in animations] == [("glaive", 12)]
    assert "P_DDFcapewing_skel" in warnings[0] and "P_DDF_skel" in warnings[0]
    assert gr2_convert.for_bones(sample, "glaive", {"NoSuchBone"})[0] == []


@pytest.mark.parametrize("field,value", [("Degree", 7), ("Duration", float("nan")), ("Duration", 1e12)])
def test_hostile_fields_are_refused_with_format_error(field, value):
    f = gr2.read(ANIMATION.read_bytes())
    anim = f.root["Animations"][0]
    if field == "Degree":
        data = anim["TrackGroups"][0]["TransformTracks"][0]["PositionCurve"]["CurveData"]
        assert gr2_curves.format_of(data) == "D3K16uC16u"
        data["CurveDataHeader_D3K16uC16u"]["Degree"] = value
    else:
        anim[field] = value
    with pytest.raises(FormatError):
        gr2_convert.core_animations(f, "x")
    assert gr2_check.validate(gr2_check.read(ANIMATION.read_bytes())) == []
