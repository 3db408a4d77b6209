"""In Blender: Urho3D files deform as the engine deforms them (`support.urho_engine.Engine`, written from the
engine's rules), binds Blender cannot hold are approximated and measured, never refused, and the file's
values come back on export."""
from __future__ import annotations

import re

import numpy as np
import pytest

from support.evaluation import evaluated_positions
from support.urho_engine import Engine, correspondence, diagonal, matched_difference, urho3d_to_blender

pytestmark = pytest.mark.blender

CLEAN_TOL = 1e-4  # of the diagonal, on vertices of bones whose binds Blender holds
WRITTEN_TOL = 1e-5  # of the diagonal, engine evaluation of written files against the originals


def _fps():
    import bpy

    return bpy.context.scene.render.fps / bpy.context.scene.render.fps_base


def _times(length: float, n: int = 8) -> np.ndarray:
    return (np.arange(n) + 0.37) * length / n


@pytest.fixture
def kachujin(clean_scene, testdata):
    """Kachujin.mdl and its walk imported; (armature, mesh, engine, walk records, import warnings)."""
    import bpy
    from skinbridge.io_urhox.motion import blender_io as motion_io, uani
    from skinbridge.io_urhox.model import blender_io, umd2

    folder = testdata / "urho3d"
    result = blender_io.import_mdl(bpy.context, str(folder / "Kachujin.mdl"), "auto")
    mesh = next(o for o in result.objects if o.type == "MESH")
    _, warnings = motion_io.import_ani(bpy.context, [str(folder / "Kachujin_Walk.ani")], result.armature,
                                         "urho3d")
    engine = Engine(umd2.read((folder / "Kachujin.mdl").read_bytes()))
    walk = uani.read((folder / "Kachujin_Walk.ani").read_bytes())
    return result.armature, mesh, engine, walk, warnings


def _warned_figure(warnings) -> float:
    found = [w for w in warnings if "cannot hold the binds" in w]
    assert len(found) == 1, warnings
    return float(re.search(r"up to ([0-9.e+-]+) of the diagonal", found[0]).group(1))


def test_kachujin_walk_deforms_as_the_engine(kachujin):
    arm, mesh, engine, walk, warnings = kachujin
    rest = urho3d_to_blender(engine.positions)
    diag = diagonal(rest)
    clean = np.array([engine.bind_is_clean(i) for i in range(len(engine.names))])
    assert 0 < clean.sum() < len(clean)  # the file mixes binds Blender holds with sheared ones
    live = engine.weights > 0
    only_clean = np.all(~live | clean[engine.joints], axis=1)
    assert only_clean.sum() > 1000 and (~only_clean).sum() > 100
    worst_clean = worst_other = 0.0
    for t in _times(float(walk.length)):
        expected = urho3d_to_blender(engine.skin(walk, t))
        got = evaluated_positions(mesh, float(t), _fps())
        d = np.linalg.norm(got - expected, axis=1) / diag
        worst_clean = max(worst_clean, float(d[only_clean].max()))
        worst_other = max(worst_other, float(d[~only_clean].max()))
    assert worst_clean <= CLEAN_TOL, worst_clean
    figure = _warned_figure(warnings)
    assert worst_other <= figure, (worst_other, figure)
    assert figure < 1e-3  # the approximation is close: Kachujin's shear is below 4e-3


def test_kachujin_target_tracks_are_listed_once_and_kept(kachujin, tmp_path):
    import bpy
    from skinbridge.io_urhox.motion import blender_io as motion_io, uani

    arm, _, _, walk, warnings = kachujin
    targets = [t.name for t in walk.tracks if t.name.endswith("_Target")]
    assert len(targets) == 64
    listing = [w for w in warnings if "match no bone" in w]
    assert len(listing) == 1
    assert all(listing[0].count(name + ",") + listing[0].endswith(name) == 1 for name in targets)
    assert not any(name in w for w in warnings if w is not listing[0] for name in targets)
    written, _ = motion_io.export_actions(bpy.context, str(tmp_path), arm, fmt="urho3d", profile="urho3d")
    out = uani.read(open(written[0], "rb").read())
    assert [t.name for t in out.tracks] == [t.name for t in walk.tracks]  # the file's order, targets included
    original = {t.name: t for t in walk.tracks}
    for t in out.tracks:
        if t.name in targets:  # kept as read: the same keys, bit for bit
            o = original[t.name]
            assert t.channel_mask == o.channel_mask
            assert np.array_equal(t.times, o.times)
            assert np.array_equal(t.positions, o.positions) and np.array_equal(t.rotations, o.rotations)


@pytest.mark.slow
def test_kachujin_written_back_equals_the_original_for_the_engine(kachujin, tmp_path):
    import bpy
    from skinbridge.io_urhox.motion import blender_io as motion_io, uani
    from skinbridge.io_urhox.model import blender_io, umd2

    arm, _, engine, walk, _ = kachujin
    blender_io.export_mdl(bpy.context, str(tmp_path / "K.mdl"), "urho3d")
    written_model = Engine(umd2.read((tmp_path / "K.mdl").read_bytes()))
    classic, _ = motion_io.export_actions(bpy.context, str(tmp_path / "classic"), arm, fmt="urho3d",
                                            profile="urho3d")
    urhox, _ = motion_io.export_actions(bpy.context, str(tmp_path / "urhox"), arm, fmt="urhox",
                                          profile="urho3d")
    diag = diagonal(engine.positions)
    pairs = correspondence(engine.positions, written_model.positions)
    for path, variant in ((classic[0], uani.VARIANT_URHO3D), (urhox[0], uani.VARIANT_URHOX)):
        anim = uani.read(open(path, "rb").read())
        assert anim.variant == variant
        assert sorted(t.name for t in anim.tracks) == sorted(t.name for t in walk.tracks)
        times = np.concatenate([_times(float(walk.length)), walk.tracks[2].times[[0, 7, 15, -1]]])
        for t in times:
            d = matched_difference(pairs, engine.skin(walk, t), written_model.skin(anim, t))
            assert d <= WRITTEN_TOL * diag, (variant, t, d / diag)


def test_kept_keys_are_written_only_while_the_curves_hold_them(kachujin, tmp_path):
    """The sheared bones' keys come back bit for bit; once a curve of one of them is edited, that bone is
    written from its curves (and the edit shows), the others still from the file's keys."""
    import bpy
    from skinbridge.blender import action as bact
    from skinbridge.io_urhox.motion import blender_io as motion_io, uani

    arm, _, engine, walk, _ = kachujin
    act = arm.animation_data.action
    kept = bact.kept_keys(act)["tracks"]
    sheared = [engine.names[i] for i in range(len(engine.names)) if not engine.bind_is_clean(i)]
    assert set(kept) <= set(engine.names) and {"RightUpLeg", "RightHandRing1"} <= set(kept) <= set(sheared)
    original = {t.name: t for t in walk.tracks}

    def export(folder):
        written, _ = motion_io.export_actions(bpy.context, str(tmp_path / folder), arm, fmt="urho3d",
                                                profile="urho3d")
        return {t.name: t for t in uani.read(open(written[0], "rb").read()).tracks}

    before = export("a")
    for name in kept:
        assert np.array_equal(before[name].times, original[name].times), name
        assert np.array_equal(before[name].rotations, original[name].rotations), name
        assert np.array_equal(before[name].positions, original[name].positions), name
    fc = next(fc for cb in bact._channelbags(act) for fc in cb.fcurves
              if fc.data_path == 'pose.bones["RightUpLeg"].location' and fc.array_index == 0)
    fc.keyframe_points[3].co.y += 0.5
    fc.update()
    after = export("b")
    edited = np.abs(after["RightUpLeg"].positions[3] - original["RightUpLeg"].positions[3]).max()
    assert edited > 0.1
    assert np.array_equal(after["RightHandRing1"].rotations, original["RightHandRing1"].rotations)


def test_a_second_import_while_the_first_plays_maps_alike(kachujin, testdata):
    """Playing an action overwrites the pose bones' keyed channels; a walk imported again then must still
    take the channels its tracks lack from the file's default pose."""
    import bpy
    from skinbridge.blender import action as bact
    from skinbridge.io_urhox.motion import blender_io as motion_io

    arm, _, _, _, warnings = kachujin
    first = arm.animation_data.action
    bpy.context.scene.frame_set(13)
    acts, again = motion_io.import_ani(bpy.context, [str(testdata / "urho3d" / "Kachujin_Walk.ani")], arm,
                                         "urho3d")
    a, b = bact.kept_keys(first)["tracks"], bact.kept_keys(acts[0])["tracks"]
    assert a.keys() == b.keys()
    for name in a:
        assert a[name]["fill"] == b[name]["fill"], name
    assert _warned_figure(again) == _warned_figure(warnings)
