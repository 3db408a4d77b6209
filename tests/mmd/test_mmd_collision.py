"""MMD's collision rule (group and 16-bit non-collision mask) and its layout on Blender's 20 collision
collections: every pair MMD lets collide shares a collection, and every pair that shares one although MMD keeps
it apart is handed back for a disabled-collision constraint (no bpy)."""
from __future__ import annotations

import numpy as np

from skinbridge.io_pmx.model import pmx
from skinbridge.io_pmx.model.collision import SLOTS, collides, collision_layout


def _check(groups, masks) -> tuple[np.ndarray, np.ndarray]:
    member, apart = collision_layout(groups, masks)
    meet = collides(groups, masks)
    share = (member.astype(int) @ member.T.astype(int)) > 0
    off = ~np.eye(len(groups), dtype=bool)
    assert member.shape == (len(groups), SLOTS)
    assert not (meet & off & ~share).any(), "a pair MMD lets collide shares no collection"
    np.testing.assert_array_equal(apart, share & ~meet & off)
    return member, apart


def test_the_rule_reads_both_masks():
    # group 0 keeps everything; group 1 masks group 0 out; group 2 masks itself out
    groups, masks = [0, 1, 2, 2], [0xFFFF, 0xFFFE, 0xFFFB, 0xFFFB]
    meet = collides(groups, masks)
    assert not meet[0, 1] and not meet[1, 0]  # one side's mask is enough to keep them apart
    assert meet[0, 2] and meet[1, 2]
    assert not meet[2, 3]  # one group, masked: apart
    assert meet[0, 0] and not meet[2, 2]
    member, apart = _check(groups, masks)
    assert apart[2, 3] and apart.sum() == 2  # the only pair Blender's collections cannot keep apart


def test_luka_layout(testdata):
    model = pmx.read((testdata / "pmx" / "mmdtools_megurine_luka.pmx").read_bytes())
    groups = [r.group for r in model.rigid_bodies]
    masks = [r.no_collision_mask for r in model.rigid_bodies]
    member, apart = _check(groups, masks)
    meet = collides(groups, masks)
    iu = np.triu_indices(len(groups), 1)
    assert int(meet[iu].sum()) == 1502  # the pairs MMD lets collide (the count)
    # only bodies of one kind (group and mask) whose mask excludes their own group share a collection wrongly
    for i, j in zip(*np.nonzero(apart)):
        assert (groups[i], masks[i]) == (groups[j], masks[j]) and not (masks[i] >> groups[i]) & 1


def test_random_models_and_more_kinds_than_collections():
    rng = np.random.default_rng(7)
    for n in (1, 5, 30, 64):
        groups = rng.integers(0, 16, n)
        masks = rng.integers(0, 1 << 16, n)
        _check(groups, masks)
