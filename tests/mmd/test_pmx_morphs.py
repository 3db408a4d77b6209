"""Without Blender: what each kind of MMD morph does at a weight (io_pmx/model/morphs.py), on small records
whose results are worked out by hand here (docs/mmd.md §4.7)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from skinbridge.io_pmx.model import morphs, pmx
from support.pmx_records import offsets


def _morph(kind: int, rows: list[tuple]) -> pmx.PmxMorph:
    return pmx.PmxMorph(name=f"m{kind}", kind=kind, offsets=offsets(kind, rows))


def test_group_and_flip_pass_weights_to_their_members():
    vertex_a, vertex_b = pmx.PmxMorph(name="a"), pmx.PmxMorph(name="b")
    group = _morph(pmx.MORPH_GROUP, [(0, 0.5), (1, 2.0)])
    flip = _morph(pmx.MORPH_FLIP, [(0, 1.0), (1, 0.75)])
    ms = [vertex_a, vertex_b, group, flip]
    np.testing.assert_allclose(morphs.effective_weights(ms, [0.25, 0, 0.5, 0]), [0.25 + 0.25, 1.0, 0.5, 0])
    # flip: index int(3 · w) − 1: w 0.2 → −1 (none), 0.4 → 0 (a at 1.0), 0.7 → 1 (b at 0.75), 1.0 → the last
    for w, expected in ((0.2, [0, 0]), (0.4, [1.0, 0]), (0.7, [0, 0.75]), (1.0, [0, 0.75])):
        np.testing.assert_allclose(morphs.effective_weights(ms, [0, 0, 0, w])[:2], expected)
    # a group naming itself or a loop of groups ends
    loop = [_morph(pmx.MORPH_GROUP, [(1, 1.0)]), _morph(pmx.MORPH_GROUP, [(0, 1.0)])]
    assert np.isfinite(morphs.effective_weights(loop, [1, 0])).all()


def test_bone_morph_moves_and_turns_by_the_weight():
    s, c = math.sin(math.radians(10)), math.cos(math.radians(10))  # a 20° turn about X, at half weight 10°
    # q = (sin 10°, 0, 0, cos 10°)² = (2sc, 0, 0, c² − s²): the 20° turn
    bone = _morph(pmx.MORPH_BONE, [(1, (2.0, 0, -4.0), (2 * s * c, 0, 0, c * c - s * s)),
                                   (7, (1, 1, 1), (0, 0, 0, 1))])
    out = morphs.bone_offsets([bone], np.array([0.5]), 5)
    assert list(out) == [1]  # bone 7 is not in the model
    t, q = out[1]
    np.testing.assert_allclose(t, [1.0, 0, -2.0])
    np.testing.assert_allclose(q, [s, 0, 0, c], atol=1e-7)


def test_material_morph_multiplies_then_adds_on_every_field():
    mats = [pmx.PmxMaterial(diffuse=np.float32([0.5, 1.0, 0.25, 1.0]), edge_size=np.float32(2)),
            pmx.PmxMaterial(diffuse=np.float32([1, 1, 1, 1]))]
    rows = [(0, 0, (0.5, 2, 1, 0.5), (1, 1, 1), 1, (1, 1, 1), (1, 1, 1, 1), 3, (0.5, 1, 1, 1), (1, 1, 1, 1),
             (1, 1, 1, 1)),
            (-1, 1, (0.1, 0, 0, 0), (0, 0, 0), 0, (0, 0, 0), (0, 0, 0, 0), 1, (0, 0, 0, 0), (0, 0, 0, 0),
             (0, 0, 0, 0))]
    out = morphs.material_values(mats, [_morph(pmx.MORPH_MATERIAL, rows)], np.array([0.5]))
    # multiply: base · (1 + (value − 1) · 0.5), then add value · 0.5 (material −1: every material)
    np.testing.assert_allclose(out[0]["diffuse"], [0.5 * 0.75 + 0.05, 1.0 * 1.5, 0.25, 1.0 * 0.75])
    np.testing.assert_allclose(out[0]["edge_size"], [2 * 2 + 0.5])
    np.testing.assert_allclose(out[0]["texture_tint"], [0.75, 1, 1, 1])
    np.testing.assert_allclose(out[1]["diffuse"], [1.05, 1, 1, 1])


def test_uv_morphs_add_their_offsets_per_set():
    uv = _morph(pmx.MORPH_UV, [(2, (0.5, -0.5, 0, 0)), (2, (0.25, 0, 0, 0)), (9, (1, 1, 1, 1))])
    add3 = _morph(pmx.MORPH_UV3, [(0, (1, 2, 3, 4))])
    out = morphs.uv_offsets([uv, add3, pmx.PmxMorph()], np.array([2.0, 0.5, 1.0]), 4)
    assert sorted(out) == [pmx.MORPH_UV, pmx.MORPH_UV3]
    np.testing.assert_allclose(out[pmx.MORPH_UV][2], [1.5, -1.0, 0, 0])
    np.testing.assert_allclose(out[pmx.MORPH_UV3][0], [0.5, 1, 1.5, 2])
    assert not out[pmx.MORPH_UV][[0, 1, 3]].any()


@pytest.mark.parametrize("kind", [pmx.MORPH_IMPULSE, pmx.MORPH_VERTEX])
def test_kinds_without_a_record_effect_here_change_nothing(kind):
    m = _morph(kind, [])
    assert morphs.bone_offsets([m], np.ones(1), 3) == {}
    assert morphs.uv_offsets([m], np.ones(1), 3) == {}
