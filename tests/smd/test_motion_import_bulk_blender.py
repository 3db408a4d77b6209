"""A motion import maps, fits and measures all bones at once where it once went bone by bone
(blender/armature.py, blender/action.py; bench/dmx_motion.py times it), and takes the fingerprints it keeps from
the arrays it gave Blender instead of reading every curve back. On BST's walkn (154 bones, 149 of them fitted):
the bulk helpers give exactly what the per-bone ones give, the DMX motion's kept state is what reading the
curves back gives, and export reads the file's own keys back for every kept track (their fingerprints match
the curves)."""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge import formats  # noqa: E402
from skinbridge.blender import action as bact  # noqa: E402
from skinbridge.blender import armature as barm  # noqa: E402
from skinbridge.io_smd.dmx import blender_io as blender_dmx  # noqa: E402
from skinbridge.io_smd.dmx import convert as dmx_convert  # noqa: E402

pytestmark = pytest.mark.blender

WALKN = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "dmx" / "bst_walkn.dmx.gz"


def test_walkn_bulk_import_equals_bone_by_bone_and_keeps_fingerprints_of_its_curves(clean_scene):
    scene, _ = dmx_convert.load(str(WALKN), WALKN.read_bytes())
    formats.get("dmx").get("motion_loader")(bpy.context, str(WALKN), None, None)
    (arm,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    act = arm.animation_data.action
    names = [b.name for b in arm.data.bones]

    rests = barm.rest_matrices(arm)
    assert np.array_equal(rests, np.array([np.array(b.matrix_local, np.float64) for b in arm.data.bones]))
    assert bact.local_rests(arm, names) == [bact.local_rest(arm, n) for n in names]
    frames = barm.bone_frames(arm)
    of = [frames[n] for n in names]
    rng = np.random.default_rng(47)
    for channel, width in (("t", 3), ("r", 4), ("s", 3)):
        v = rng.normal(size=(len(of), width))
        assert np.array_equal(barm.to_basis_of(of, channel, v),
                              np.array([f.to_basis(channel, v[k][None])[0] for k, f in enumerate(of)]))
        assert np.array_equal(barm.from_basis_of(of, channel, v),
                              np.array([f.from_basis(channel, v[k][None])[0] for k, f in enumerate(of)]))

    assert json.loads(act[blender_dmx.KEPT_PROP])["curves"] == bact.curve_fingerprints(arm, act)
    kept = bact.kept_keys(act)["tracks"]
    assert len(kept) == 149
    got = {t.bone: t for t in bact.read_action(bpy.context, arm, act)[0].tracks}
    for track in scene.animations[0].tracks:
        if track.bone in kept:  # the file's keys, not values sampled from the fitted curves
            assert np.array_equal(got[track.bone].rotations, track.rotations), track.bone
            assert np.array_equal(got[track.bone].translations, track.translations), track.bone
