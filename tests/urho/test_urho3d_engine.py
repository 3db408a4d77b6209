"""The independent Urho3D evaluation of tests/support/urho_engine.py checked on the samples, and the UrhoX
profile's bone limit counted by that rule (bones with weighted vertices)."""
from __future__ import annotations

import numpy as np

from support.urho_engine import Engine, diagonal


def test_engine_rest_is_the_bind_pose_for_a_clean_file(testdata):
    """Ninja's initial pose is its bind pose: the engine evaluation without animation gives back the rest
    positions, which checks the offset-matrix convention of the evaluator."""
    from skinbridge.io_urhox.model import umd2

    engine = Engine(umd2.read((testdata / "urho3d" / "Ninja.mdl").read_bytes()))
    rest = engine.skin(None, 0.0)
    assert np.abs(rest - engine.positions).max() <= 1e-4 * diagonal(engine.positions)


def test_the_urhox_refusal_counts_weighted_bones(testdata):
    """Above 64 bones the UrhoX profile refuses, naming how many bones deform: those with weighted vertices,
    not every bone flagged as deforming."""
    import copy

    from skinbridge.core.errors import ExportError
    from skinbridge.io_urhox.model import convert, umd2

    model = umd2.read((testdata / "urho3d" / "Kachujin.mdl").read_bytes())
    v = model.vertex_buffers[0].vertices
    weighted = len(np.unique(v["BLENDINDICES0"][v["BLENDWEIGHTS0"] > 0]))
    scene, _ = convert.to_scene(model, "K", "urho3d")
    for k in range(6):  # extra bones that deform nothing
        extra = copy.deepcopy(scene.skeleton.bones[-1])
        extra.name = f"extra{k}"
        scene.skeleton.bones.append(extra)
    assert all(b.deform for b in scene.skeleton.bones)
    try:
        convert.from_scene(scene, "urhox")
    except ExportError as e:
        assert f"70 bones ({weighted} deforming)" in str(e), str(e)
    else:
        raise AssertionError("70 bones were not refused under urhox")
