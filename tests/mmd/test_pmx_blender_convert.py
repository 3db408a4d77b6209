"""The mapping half (no bpy): PMX records ⇄ core Scene. Every sample maps to the core model and back
byte-identical; positions, directions and angles convert separately; IK limits stay raw and convert to Blender
only for display, exactly and without "fixing" reversed or NaN limits."""
from __future__ import annotations

import numpy as np
import pytest

from skinbridge.io_pmx.model import convert
from skinbridge.io_pmx.model import pmx
from support.pmx_samples import SAMPLES, build_full_model
from support.bytes_compare import assert_same_bytes

KNEE_LOWER = np.array([0xC0490FDB, 0, 0], np.uint32).view(np.float32)  # (-π, 0, 0)
KNEE_UPPER = np.array([0xBC0EFA35, 0, 0], np.uint32).view(np.float32)  # (-0.5°, 0, 0)
# a knee pointing down, bone X = +X: columns x = (1,0,0), y = (0,0,-1), z = (0,1,0) (docs/mmd.md §4.5)
KNEE_REST = np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]])


@pytest.mark.parametrize("name", SAMPLES)
def test_samples_map_to_core_and_back_byte_identical(testdata, name):
    data = (testdata / "pmx" / name).read_bytes()
    scene, warnings = convert.to_scene(pmx.read(data), "x")
    model, more = convert.from_scene(scene)
    assert warnings == [] and more == []
    assert_same_bytes(pmx.write(model), data, pmx.read)


def test_every_record_kind_maps_and_back_byte_identical():
    data = pmx.write(build_full_model())  # every deform, morph and bone-flag kind, soft body, PMX 2.1
    scene, _ = convert.to_scene(pmx.read(data), "x")
    model, _ = convert.from_scene(scene)
    assert_same_bytes(pmx.write(model), data, pmx.read)


def test_axes_scale_winding_and_uv():
    p = np.array([[1.0, 2.0, 3.0]])
    np.testing.assert_allclose(convert.positions_to_blender(p, 0.08), [[0.08, 0.24, 0.16]])
    np.testing.assert_allclose(convert.positions_to_pmx(convert.positions_to_blender(p, 0.08), 0.08), p)
    np.testing.assert_array_equal(convert.directions_to_blender(p), [[1.0, 3.0, 2.0]])  # no scale
    np.testing.assert_array_equal(convert.winding(np.array([0, 1, 2])), [[2, 1, 0]])
    np.testing.assert_array_equal(convert.uv_to_blender(np.float32([[0.25, 0.75]])), [[0.25, 0.25]])


def test_knee_limit_to_blender_local_axes_and_back_bit_exact():
    lo, hi = convert.angles_to_blender(KNEE_LOWER, KNEE_UPPER, KNEE_REST)
    assert lo[0] == -KNEE_UPPER[0] > 0  # +0.5°: the positive minimum Blender's ik_min cannot hold
    np.testing.assert_array_equal(hi[0], np.float32(np.pi))
    back_lo, back_hi = convert.angles_to_pmx(lo, hi, KNEE_REST)
    assert back_lo[0].view(np.uint32) == 0xC0490FDB and back_hi[0].view(np.uint32) == 0xBC0EFA35
    # not an axis swap of a position: the knee limit is not scaled and not Y/Z-swapped as a vector
    assert convert.limit_axes(KNEE_REST).tolist() == np.diag([-1.0, 1.0, -1.0]).tolist()


def test_reversed_and_nan_limits_are_kept_not_fixed():
    lo, hi = convert.angles_to_blender(np.float32([0.5, 0, 0]), np.float32([-0.5, 0, 0]), KNEE_REST)
    assert lo[0] > hi[0]  # still reversed after the interval mapping
    back = convert.angles_to_pmx(np.float32([np.nan, 0, 0]), np.float32([1, 0, 0]), KNEE_REST)
    assert np.isnan(back[1][0])


def test_scale_is_stored_and_export_uses_its_inverse(testdata):
    m = pmx.read_file(testdata / "pmx" / "mmdtools_megurine_luka.pmx")
    scene, _ = convert.to_scene(m, "luka", metres_per_unit=0.2)
    assert scene.extras["pmx"]["scale"] == 0.2
    center = scene.skeleton.bones[0].bind[:3, 3]
    np.testing.assert_allclose(center, convert.positions_to_blender(m.bones[0].position, 0.2))
    out, _ = convert.from_scene(scene)
    np.testing.assert_array_equal(out.bones[0].position, m.bones[0].position)
