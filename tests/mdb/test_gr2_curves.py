"""Granny curve formats: our encoder's curves decoded and evaluated against scipy's B-spline (an independent
evaluation), within each format's quantisation error; the sample animation's curves decode and loop.

Granny's knot array holds one time per control; the textbook B-spline it evaluates has knots u_m = knot[m − 1]
and controls P_m = control[m], indices clamped to the curve (docs/nwn2.md §5.5). The scipy spline below is built
from that statement alone; our evaluator follows Granny's windowed form.
"""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from skinbridge.io_mdb.gr2 import curves as gr2_curves, gr2

scipy_interpolate = pytest.importorskip("scipy.interpolate")

GR2_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "gr2"
ANIMATION = GR2_DIR / "ovr_p_ddf_glaive01.GR2"
DURATION = 1.5


def _reference(knots: np.ndarray, controls: np.ndarray, degree: int, times: np.ndarray) -> np.ndarray:
    n, d = len(knots), degree
    c_index = np.clip(np.arange(-d, n), 0, n - 1)          # P_−d … P_n−1
    u_index = np.clip(np.arange(-d, n + d + 1) - 1, 0, n - 1)  # u_−d … u_n+d: the base interval is [u_0, u_n]
    spline = scipy_interpolate.BSpline(knots.astype(np.float64)[u_index], controls.astype(np.float64)[c_index], d)
    return spline(times)


def _knots(n: int, rng) -> np.ndarray:
    """Increasing times from 0 to DURATION, unevenly spaced, with Granny's near-zero second knot."""
    inner = np.sort(rng.uniform(0.05, DURATION - 0.05, n - 3))
    return np.concatenate([[0.0, 0.0005], inner, [DURATION]]).astype(np.float32)


def _quaternions(n: int, rng) -> np.ndarray:
    """A smooth path of unit quaternions (x y z w) with no sign flips between neighbours."""
    angle = np.linspace(0, 2.5, n)
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    q = np.concatenate([np.sin(angle / 2)[:, None] * axis, np.cos(angle / 2)[:, None]], axis=1)
    q += rng.normal(0, 0.02, q.shape)
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def _times(knots: np.ndarray) -> np.ndarray:
    return np.concatenate([np.linspace(0, DURATION, 301), knots, (knots[:-1] + knots[1:]) / 2])


VECTOR_FORMATS = [("D3K16uC16u", 3, 16), ("D3K8uC8u", 3, 8), ("DaK16uC16u", 3, 16), ("DaK8uC8u", 9, 8),
                  ("DaK32fC32f", 3, 32), ("DaK32fC32f", 4, 32)]


@pytest.mark.parametrize("degree", [1, 2, 3])
@pytest.mark.parametrize("fmt,dimension,bits", VECTOR_FORMATS, ids=lambda v: str(v))
def test_vector_curve_decodes_to_the_bspline_of_its_knots_within_quantisation(fmt, dimension, bits, degree):
    rng = np.random.default_rng(dimension * 10 + degree + bits)
    knots = _knots(20, rng)
    controls = rng.uniform(-50, 80, (20, dimension)).astype(np.float32)
    fields = gr2_curves.encode(fmt, degree, knots, controls)
    curve = gr2_curves.decode(fields)
    assert (curve.format, curve.degree, curve.dimension, len(curve.knots)) == (fmt, degree, dimension, 20)
    if bits == 32:
        assert np.array_equal(curve.knots, knots) and np.array_equal(curve.controls, controls)
        knot_error = control_error = 0.0
    else:
        top = 2 ** bits - 1
        knot_error = 0.5 / curve.one_over_knot_scale
        control_error = 0.5 * (controls.max(axis=0) - controls.min(axis=0)) / top * (1 + 1e-5) + 1e-5
    assert np.abs(curve.knots - knots).max() <= knot_error * (1 + 1e-5) + 1e-7
    assert np.all(np.abs(curve.controls - controls) <= control_error)
    times = _times(curve.knots)
    ours = gr2_curves.evaluate(curve, times)
    # the decoded curve is scipy's spline of the decoded knots and controls (float32 arithmetic aside) ...
    assert np.abs(ours - _reference(curve.knots, curve.controls, degree, times)).max() < 1e-4
    # ... and within the controls' quantisation of the spline of the original controls on those knots
    exact = _reference(curve.knots, controls, degree, times)
    assert np.all(np.abs(ours - exact) <= control_error + 1e-4)


@pytest.mark.parametrize("degree", [1, 2, 3])
@pytest.mark.parametrize("fmt,bits", [("D4nK16uC15u", 15), ("D4nK8uC7u", 7), ("DaK32fC32f", 32)])
def test_quaternion_curve_decodes_to_the_bspline_of_its_knots_within_quantisation(fmt, bits, degree):
    rng = np.random.default_rng(bits + degree)
    knots = _knots(24, rng)
    q = _quaternions(24, rng)
    curve = gr2_curves.decode(gr2_curves.encode(fmt, degree, knots, q))
    if bits == 32:
        error = 0.0
    else:
        entries = gr2_curves.encode(fmt, degree, knots, q)["ScaleOffsetTableEntries"]
        selectors = (entries >> (4 * np.arange(4))) & 0xF
        step = np.abs(gr2_curves.QUATERNION_TABLE[selectors, 0]).max() / (2 ** bits - 1)
        # three components within half a step; the fourth, rebuilt as √(1 − Σ others²) ≥ 1/2, within
        # Σ |x_i| · step/2 / (1/2) ≤ √3 · step
        error = 1.8 * step
    assert np.abs(curve.controls - q).max() <= error + 1e-6
    times = _times(curve.knots)
    raw = gr2_curves.evaluate(curve, times)
    assert np.abs(raw - _reference(curve.knots, curve.controls, degree, times)).max() < 1e-5
    assert np.abs(raw - _reference(curve.knots, q, degree, times)).max() <= error + 1e-5
    # Granny's orientation sampling: one Newton step of normalisation, q · (3 − |q|²) / 2
    normalised = gr2_curves.evaluate(curve, times, normalize=True)
    expected = raw * ((3 - (raw * raw).sum(axis=1)) / 2)[:, None]
    assert np.allclose(normalised, expected, atol=1e-7)
    assert np.abs(np.linalg.norm(normalised, axis=1) - 1).max() < 2e-3


def test_quaternion_top_bits_hold_the_left_out_component_and_its_sign():
    # (x y z w) = (0.6, 0, -0.8, 0): z is the largest, left out (index 2: high bit on the second value), negative
    q = np.array([[0.6, 0.0, -0.8, 0.0]], np.float32)
    fields = gr2_curves.encode("D4nK16uC15u", 0, [0.0], q)
    a, b, c = fields["KnotsControls"][1:4].astype(int)
    assert a & 0x8000 and b & 0x8000 and not c & 0x8000
    assert np.abs(gr2_curves.decode(fields).controls - q).max() < 1e-4


@pytest.mark.parametrize("fmt,values", [("D3Constant32f", [1.5, -2.0, 3.25]), ("D4Constant32f", [0, 0, 0.6, 0.8]),
                                        ("DaConstant32f", list(range(9)))])
def test_constants_hold_their_value_at_every_time(fmt, values):
    curve = gr2_curves.decode(gr2_curves.encode(fmt, 0, [0.0], [values]))
    assert curve.kind == "constant"
    out = gr2_curves.evaluate(curve, [0.0, 0.3, 10.0])
    assert np.array_equal(out, np.tile(np.float32(values), (3, 1)))


def test_identity_gives_the_callers_identity():
    curve = gr2_curves.decode(gr2_curves.encode("DaIdentity", 0, [], np.zeros((1, 9))))
    assert curve.kind == "identity" and curve.dimension == 9
    assert np.array_equal(gr2_curves.evaluate(curve, [0.0, 1.0], np.eye(3).ravel()), np.tile(np.eye(3).ravel(), (2, 1)))


def test_sample_curves_decode_and_loop():
    """The sample's root track: 16-bit positions and 15-bit quaternions of degree 2 over the animation's
    duration; NWN2's attack loops, so the first and last poses agree, and the quaternions are unit length."""
    f = gr2.read(ANIMATION.read_bytes())
    (animation,) = f.root["Animations"]
    track = f.root["TrackGroups"][0]["TransformTracks"][0]
    position = gr2_curves.decode(track["PositionCurve"]["CurveData"])
    orientation = gr2_curves.decode(track["OrientationCurve"]["CurveData"])
    assert (position.format, position.degree, len(position.knots)) == ("D3K16uC16u", 2, 70)
    assert (orientation.format, orientation.degree, len(orientation.knots)) == ("D4nK16uC15u", 2, 68)
    assert abs(position.knots[-1] - animation["Duration"]) < 1e-4
    assert np.all(np.diff(position.knots) > 0)
    assert np.allclose(np.linalg.norm(orientation.controls, axis=1), 1, atol=1e-6)
    ends = gr2_curves.evaluate(position, [0.0, animation["Duration"]])
    assert np.allclose(ends[0], ends[1], atol=1e-3)
    assert np.array_equal(ends[0], position.controls[0].astype(np.float64))
