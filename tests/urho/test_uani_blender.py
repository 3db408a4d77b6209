"""In Blender: `.ani` files ⇄ actions (items 3, 4, 5), plus the bridge's rules: GENERATED keys,
step/hold keys, channel masks, Bézier and constraint sampling, triggers, naming, atomic import and
read-only export."""
from __future__ import annotations

import json

import numpy as np
import pytest

from support.evaluation import evaluated_positions, sample_times

pytestmark = pytest.mark.blender

NINJA_CLIPS = ("Ninja_Walk", "Ninja_Idle1")
TOL = 1e-4  # of the bounding-box diagonal


@pytest.fixture
def ninja(clean_scene, testdata):
    """Ninja.mdl imported (Urho3D axes); returns (armature, mesh object, core scene)."""
    import bpy
    from skinbridge.io_urhox.model import blender_io, convert, umd2

    path = testdata / "urho3d" / "Ninja.mdl"
    result = blender_io.import_mdl(bpy.context, str(path), "urho3d")
    scene, _ = convert.to_scene(umd2.read(path.read_bytes()), "Ninja", "urho3d")
    mesh = next(o for o in result.objects if o.type == "MESH")
    return result.armature, mesh, scene


def _core_anim(path, scene, profile="urho3d"):
    from skinbridge.io_urhox.motion import convert as motion_convert, uani

    roots = {b.name for b in scene.skeleton.bones if b.parent < 0}
    rec = uani.read(path.read_bytes())
    anim, _ = motion_convert.to_core(rec, path.stem, profile, roots)
    return rec, anim


def _fps():
    import bpy

    return bpy.context.scene.render.fps / bpy.context.scene.render.fps_base


def _gap_degrees(rec) -> float:
    worst = 0.0
    for t in rec.tracks:
        q = t.rotations.astype(np.float64)
        d = np.abs(np.sum(q[1:] * q[:-1], axis=1))
        if len(d):
            worst = max(worst, float(np.degrees(2 * np.arccos(np.clip(d, 0, 1))).max()))
    return worst


def _compare_records(a, b, time_tol=1e-6, value_tol=1e-5):
    assert [t.name for t in a.tracks] == [t.name for t in b.tracks]
    for ta, tb in zip(a.tracks, b.tracks):
        assert ta.channel_mask == tb.channel_mask, ta.name
        assert ta.key_count == tb.key_count, ta.name
        np.testing.assert_allclose(ta.times, tb.times, atol=time_tol, rtol=0, err_msg=ta.name)
        for key in ("positions", "scales"):
            va, vb = getattr(ta, key), getattr(tb, key)
            assert (va is None) == (vb is None)
            if va is not None:
                np.testing.assert_allclose(va, vb, atol=value_tol, rtol=0, err_msg=ta.name)
        if tb.rotations is not None:
            d = np.minimum(np.abs(ta.rotations - tb.rotations).max(1), np.abs(ta.rotations + tb.rotations).max(1))
            assert d.max() <= value_tol, ta.name


# -- item 3 ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("clip", NINJA_CLIPS)
def test_ninja_blender_equals_engine_slerp(ninja, testdata, clip):
    import bpy
    from skinbridge.blender import action as bact
    from skinbridge.core import skinning
    from skinbridge.io_urhox.motion import blender_io as motion_io

    arm, mesh, scene = ninja
    path = testdata / "urho3d" / f"{clip}.ani"
    acts, warnings = motion_io.import_ani(bpy.context, [str(path)], arm, "urho3d")
    assert [a.name for a in acts] == [clip] and warnings == []
    assert arm.animation_data.action == acts[0]
    rec, anim = _core_anim(path, scene)
    assert _gap_degrees(rec) > 30  # far enough apart for component-wise interpolation to part from slerp
    generated = sum(1 for cb in bact._channelbags(acts[0]) for fc in cb.fcurves
                    for k in fc.keyframe_points if k.type == "GENERATED")
    assert generated > 0
    core_mesh = scene.meshes[0]
    diag = float(np.linalg.norm(np.ptp(core_mesh.positions, axis=0)))
    times = sample_times(np.unique(np.concatenate([t.times for t in rec.tracks]).astype(np.float64)))
    worst = 0.0
    for t in times:
        got = evaluated_positions(mesh, t, _fps())
        world = skinning.evaluate_animation(scene.skeleton, anim, t)
        expected = skinning.skin_mesh(core_mesh, scene.skeleton, world)
        worst = max(worst, float(np.abs(got - expected).max()) / diag)
    assert worst <= TOL, f"{clip}: {worst:.3g} of the diagonal"


def test_without_generated_keys_blender_would_part_from_slerp(ninja, testdata):
    """The check above is sharp: the same import with no GENERATED keys is off by more than the tolerance."""
    from skinbridge.blender import action as bact
    from skinbridge.core import skinning

    arm, mesh, scene = ninja
    rec, anim = _core_anim(testdata / "urho3d" / "Ninja_Walk.ani", scene)
    act, _ = bact.build_action(arm, anim, _fps(), tolerance=10.0)
    bact.assign(arm, act)
    core_mesh = scene.meshes[0]
    diag = float(np.linalg.norm(np.ptp(core_mesh.positions, axis=0)))
    times = sample_times(np.unique(np.concatenate([t.times for t in rec.tracks]).astype(np.float64)),
                         fractions=(0.25, 0.75))
    worst = max(float(np.abs(evaluated_positions(mesh, t, _fps()) - skinning.skin_mesh(
        core_mesh, scene.skeleton, skinning.evaluate_animation(scene.skeleton, anim, t))).max()) / diag
        for t in times)
    assert worst > TOL


# -- item 4 ---------------------------------------------------------------------------------------------

def test_ninja_round_trip_through_blender_classic(ninja, testdata, tmp_path):
    import bpy
    from support.fingerprint import scene_fingerprint
    from skinbridge.io_urhox.motion import blender_io as motion_io, uani

    arm, _, _ = ninja
    paths = [str(testdata / "urho3d" / f"{c}.ani") for c in NINJA_CLIPS]
    motion_io.import_ani(bpy.context, paths, arm, "urho3d")
    before = scene_fingerprint()
    written, warnings = motion_io.export_actions(bpy.context, str(tmp_path), arm, "urho3d", "urho3d")
    assert scene_fingerprint() == before
    assert warnings == []
    assert sorted(p.rsplit("/", 1)[1] for p in written) == sorted(f"{c}.ani" for c in NINJA_CLIPS)
    for clip in NINJA_CLIPS:
        original = uani.read((testdata / "urho3d" / f"{clip}.ani").read_bytes())
        back = uani.read((tmp_path / "Animations" / f"{clip}.ani").read_bytes())
        assert back.variant == "urho3d" and back.name == original.name
        assert abs(float(back.length) - float(original.length)) <= 1e-6
        _compare_records(back, original)


def test_generated_keys_dropped_only_while_on_the_slerp_path(ninja, testdata, tmp_path):
    import bpy
    from skinbridge.blender import action as bact
    from skinbridge.io_urhox.motion import blender_io as motion_io, uani

    arm, _, _ = ninja
    (act,), _ = motion_io.import_ani(bpy.context, [str(testdata / "urho3d" / "Ninja_Walk.ani")], arm, "urho3d")
    original = uani.read((testdata / "urho3d" / "Ninja_Walk.ani").read_bytes())
    # move one GENERATED key of one bone off the path (a user edit): that key is exported as a real key
    curves = [fc for cb in bact._channelbags(act) for fc in cb.fcurves if "rotation_quaternion" in fc.data_path]
    fc = next(f for f in curves if any(k.type == "GENERATED" for k in f.keyframe_points))
    bone = fc.data_path.split('"')[1]
    k = next(k for k in fc.keyframe_points if k.type == "GENERATED")
    frame = k.co[0]
    k.co[1] += 0.05
    fc.update()
    motion_io.export_actions(bpy.context, str(tmp_path), arm, "urho3d", "urho3d", actions=[act])
    back = uani.read((tmp_path / "Animations" / "Ninja_Walk.ani").read_bytes())
    for ta, tb in zip(back.tracks, original.tracks):
        if ta.name != bone:
            assert ta.key_count == tb.key_count
        else:
            assert ta.key_count > tb.key_count
            assert np.isclose(ta.times, frame / _fps(), atol=1e-6).any()


# -- item 5 ---------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_cli_motion_round_trip(testdata, tmp_path):
    from conftest import run_cli
    from skinbridge.io_urhox.motion import uani

    src = testdata / "urho3d" / "Ninja_Walk.ani"
    r = run_cli("convert", testdata / "urho3d" / "Ninja.mdl", "--motion", src, "--to", "urhox",
                "--profile", "urho3d", "--ani-format", "urho3d", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "Animations" / "Ninja_Walk.ani"
    assert out.is_file(), r.stdout + r.stderr
    _compare_records(uani.read(out.read_bytes()), uani.read(src.read_bytes()))


def _armature(name="Rig", bones=("root", "child")):
    import bpy

    arm = bpy.data.armatures.new(name)
    ob = bpy.data.objects.new(name, arm)
    bpy.context.scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    bpy.ops.object.mode_set(mode="EDIT")
    parent = None
    for i, b in enumerate(bones):
        eb = arm.edit_bones.new(b)
        eb.head = (0, 0, i)
        eb.tail = (0, 0, i + 1)
        eb.parent = parent
        parent = eb
    bpy.ops.object.mode_set(mode="OBJECT")
    return ob


def _action(ob, name, curves):
    """An action for ``ob``: curves = [(bone, prop, index, [(frame, value), ...], interpolation)]."""
    import bpy
    from skinbridge.blender import compat

    act = bpy.data.actions.new(name)
    slot = act.slots.new(id_type="OBJECT", name=ob.name)
    cb = compat.channelbag_for_slot(act, slot)
    for bone, prop, index, keys, interp in curves:
        fc = compat.new_fcurve(cb, f'pose.bones["{bone}"].{prop}', index=index, group_name=bone)
        for f, v in keys:
            k = fc.keyframe_points.insert(f, v)
            k.interpolation = interp
        fc.update()
    ad = ob.animation_data_create()
    ad.action = act
    ad.action_slot = slot
    return act


def test_action_names_go_through_the_naming_rule(clean_scene, tmp_path):
    import bpy
    from skinbridge.io_urhox.motion import blender_io as motion_io

    ob = _armature()
    names = ["../../x", "/etc/x", "C:\\x", "con", "a|b"]
    acts = [_action(ob, n, [("root", "location", 0, [(0, 0.0), (10, 1.0)], "LINEAR")]) for n in names]
    assert [a.name for a in acts] == names
    written, _ = motion_io.export_actions(bpy.context, str(tmp_path / "out"), ob, actions=acts)
    assert [p.rsplit("/", 1)[1] for p in written] == ["x.ani", "x-2.ani", "x-3.ani", "con_.ani", "a_b.ani"]
    files = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert all(str(f).startswith("out/Animations/") for f in files) and len(files) == 5


# -- the bridge's rules ---------------------------------------------------------------------------------

def _export_one(ob, act, tmp_path, fmt):
    import bpy
    from skinbridge.io_urhox.motion import blender_io as motion_io, uani

    written, warnings = motion_io.export_actions(bpy.context, str(tmp_path / fmt), ob, fmt, "urhox", actions=[act])
    return uani.read(open(written[0], "rb").read()), warnings


def test_step_tracks_and_hold_keys(clean_scene, tmp_path):
    from skinbridge.io_urhox.motion import convert as motion_convert

    ob = _armature()
    fps = _fps()
    act = _action(ob, "Steps", [
        ("root", "location", 0, [(0, 0.0), (12, 1.0), (24, 3.0)], "CONSTANT"),
        ("child", "location", 0, [(0, 0.0), (12, 1.0)], "CONSTANT"),
        ("child", "scale", 1, [(0, 1.0), (24, 2.0)], "LINEAR"),
    ])
    rec, warnings = _export_one(ob, act, tmp_path, "urhox")
    root, child = rec.tracks
    assert root.interpolation == 0 and root.key_count == 3  # every channel CONSTANT: UrhoX steps
    assert child.interpolation == 1  # mixed: linear with a hold key
    np.testing.assert_allclose(child.times, [0, 12 / fps - motion_convert.HOLD_GAP, 12 / fps, 24 / fps], atol=1e-6)
    np.testing.assert_allclose(child.positions[:, 0], [0, 0, 1, 1], atol=1e-6)
    np.testing.assert_allclose(child.scales[:, 1], [1, 1 + (12 / fps - 1e-4) / (24 / fps), 1.5, 2], atol=1e-5)
    assert any("hold keys" in w for w in warnings)
    rec, warnings = _export_one(ob, act, tmp_path, "urho3d")
    root = rec.tracks[0]
    np.testing.assert_allclose(root.times, [0, 12 / fps - 1e-4, 12 / fps, 24 / fps - 1e-4, 24 / fps], atol=1e-6)
    np.testing.assert_allclose(root.positions[:, 0], [0, 0, 1, 1, 3], atol=1e-6)
    assert root.channel_mask == 1
    assert any("hold keys" in w for w in warnings)


def test_classic_mask_from_fcurves_and_per_bone_union_of_times(clean_scene, tmp_path):
    ob = _armature()
    act = _action(ob, "Masks", [
        ("root", "rotation_quaternion", 0, [(0, 1.0), (10, 0.9)], "LINEAR"),
        ("root", "rotation_quaternion", 3, [(0, 0.0), (10, 0.3)], "LINEAR"),
        ("child", "location", 2, [(0, 0.0), (6, 1.0)], "LINEAR"),
        ("child", "scale", 0, [(3, 1.0), (9, 2.0)], "LINEAR"),
    ])
    rec, _ = _export_one(ob, act, tmp_path, "urho3d")
    assert [(t.name, t.channel_mask) for t in rec.tracks] == [("root", 2), ("child", 5)]
    fps = _fps()
    np.testing.assert_allclose(rec.tracks[1].times, np.array([0, 3, 6, 9]) / fps, atol=1e-6)
    # scale clamps before its first key and interpolates at the location key
    np.testing.assert_allclose(rec.tracks[1].scales[:, 0], [1, 1, 1.5, 2], atol=1e-6)
    rec, _ = _export_one(ob, act, tmp_path, "urhox")
    assert all(t.channel_mask == 7 for t in rec.tracks)


def test_bezier_resampled_only_where_it_curves(clean_scene, tmp_path):
    ob = _armature()
    act = _action(ob, "Curvy", [
        ("root", "location", 0, [(0, 0.0), (10, 1.0)], "BEZIER"),  # auto handles: eased, curved
        ("child", "location", 0, [(0, 0.0), (10, 1.0)], "LINEAR"),
    ])
    rec, _ = _export_one(ob, act, tmp_path, "urho3d")
    fps = _fps()
    root, child = rec.tracks
    np.testing.assert_allclose(root.times * fps, np.arange(11), atol=1e-4)
    fc = act.layers[0].strips[0].channelbags[0].fcurves[0]
    np.testing.assert_allclose(root.positions[:, 0], [fc.evaluate(f) for f in range(11)], atol=1e-6)
    assert child.key_count == 2
    # a Bézier segment whose handles lie on the line is straight: not resampled
    for k in fc.keyframe_points:
        k.handle_left_type = k.handle_right_type = "FREE"
    k0, k1 = fc.keyframe_points
    k0.handle_right = (3, 0.3)
    k1.handle_left = (7, 0.7)
    rec, _ = _export_one(ob, act, tmp_path, "urho3d")
    assert rec.tracks[0].key_count == 2


def test_constrained_bone_sampled_from_the_evaluated_pose(clean_scene, tmp_path):
    import bpy
    from support.fingerprint import scene_fingerprint

    ob = _armature()
    act = _action(ob, "Con", [
        ("root", "location", 0, [(0, 0.0), (10, 1.0)], "LINEAR"),
        ("child", "location", 1, [(0, 0.0), (10, 1.0)], "LINEAR"),
    ])
    con = ob.pose.bones["child"].constraints.new("LIMIT_LOCATION")
    con.use_max_y = True
    con.max_y = 0.5
    con.owner_space = "LOCAL"
    bpy.context.scene.frame_set(3)
    before = scene_fingerprint()
    rec, warnings = _export_one(ob, act, tmp_path, "urho3d")
    assert scene_fingerprint() == before
    assert any("constraints" in w and "child" in w for w in warnings)
    root, child = rec.tracks
    assert root.key_count == 2 and child.key_count == 11
    # parent-relative: the child's head sits 1 along its parent's Y; the limit (not the curve's 1.0) holds it
    np.testing.assert_allclose(child.positions[:, 1], 1 + np.minimum(np.arange(11) / 10, 0.5), atol=1e-5)


def test_sampling_frames_skips_deforming_the_meshes(clean_scene, tmp_path):
    """while constrained bones are sampled frame by frame, the armature modifiers that this armature
    drives are off (no mesh is deformed per frame); afterwards they are on again and the scene is as it was."""
    import bpy
    from support.fingerprint import scene_fingerprint

    ob = _armature()
    act = _action(ob, "Con", [("child", "location", 1, [(0, 0.0), (6, 1.0)], "LINEAR")])
    ob.pose.bones["child"].constraints.new("LIMIT_LOCATION").use_max_y = True
    me = bpy.data.meshes.new("Skin")
    me.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 1)], [], [(0, 1, 2)])
    skin = bpy.data.objects.new("Skin", me)
    bpy.context.scene.collection.objects.link(skin)
    skin.vertex_groups.new(name="child").add([0, 1, 2], 1.0, "REPLACE")
    driven = skin.modifiers.new("Armature", "ARMATURE")
    driven.object = ob
    other = skin.modifiers.new("Other", "ARMATURE")  # drives from another armature: left alone
    other.object = None
    seen = []

    def record(scene, *args):
        seen.append((driven.show_viewport, other.show_viewport))

    bpy.context.scene.frame_set(2)  # the pose of the current frame, as Blender shows it
    before = scene_fingerprint()
    bpy.app.handlers.frame_change_post.append(record)
    try:
        rec, warnings = _export_one(ob, act, tmp_path, "urho3d")
    finally:
        bpy.app.handlers.frame_change_post.remove(record)
    assert [t.key_count for t in rec.tracks] == [7] and any("constraints" in w for w in warnings)
    assert len(seen) >= 7
    assert all(s == (False, True) for s in seen[:7]), seen
    assert driven.show_viewport and other.show_viewport
    from support.fingerprint import diff_fingerprints
    assert scene_fingerprint() == before, diff_fingerprints(before, scene_fingerprint())


def test_triggers_become_pose_markers_and_back(ninja, testdata, tmp_path):
    import bpy
    from skinbridge.io_urhox.motion import blender_io as motion_io, triggers

    arm, _, _ = ninja
    src = tmp_path / "in"
    src.mkdir()
    (src / "Ninja_Walk.ani").write_bytes((testdata / "urho3d" / "Ninja_Walk.ani").read_bytes())
    (src / "Ninja_Walk.xml").write_text('<animation><trigger time="0.5" type="String" value="Step"/>'
                                        '<trigger normalizedtime="1" type="Int" value="7"/></animation>')
    (act,), _ = motion_io.import_ani(bpy.context, [str(src / "Ninja_Walk.ani")], arm, "urho3d")
    fps = _fps()
    assert sorted((m.frame, m.name) for m in act.pose_markers) == [(round(0.5 * fps), "Step"),
                                                                   (round(1.08333 * fps), "7")]
    written, _ = motion_io.export_actions(bpy.context, str(tmp_path / "out"), arm, "urho3d", "urho3d")
    side = tmp_path / "out" / "Animations" / "Ninja_Walk.xml"
    assert str(side) in written
    got = triggers.read_triggers(side, 1.08333)
    assert got[0] == (0.5, "Step")
    assert abs(got[1][0] - 1.08333) < 1e-5 and got[1][1] == 7


def test_unmatched_tracks_listed_and_import_is_atomic(ninja, testdata, monkeypatch):
    import bpy
    from skinbridge.blender import action as bact
    from skinbridge.io_urhox.motion import blender_io as motion_io

    arm, _, _ = ninja
    arm.data.bones["Joint3"].name = "Renamed"
    acts, warnings = motion_io.import_ani(bpy.context, [str(testdata / "urho3d" / "Ninja_Walk.ani")], arm, "urho3d")
    assert len(warnings) == 1 and "Joint3" in warnings[0] and "1 track" in warnings[0]
    n_actions = len(bpy.data.actions)
    assigned = arm.animation_data.action
    real = bact.build_action
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("injected")
        return real(*args, **kwargs)

    monkeypatch.setattr(bact, "build_action", failing)
    with pytest.raises(RuntimeError, match="injected"):
        motion_io.import_ani(bpy.context, [str(testdata / "urho3d" / f"{c}.ani") for c in NINJA_CLIPS], arm,
                               "urho3d")
    assert len(bpy.data.actions) == n_actions
    assert arm.animation_data.action == assigned


def test_bad_file_imports_nothing(ninja, tmp_path):
    import bpy
    from skinbridge.core.errors import FormatError
    from skinbridge.io_urhox.motion import blender_io as motion_io

    arm, _, _ = ninja
    bad = tmp_path / "bad.ani"
    bad.write_bytes(b"UANI\0\0\0\0")
    n = len(bpy.data.actions)
    with pytest.raises(FormatError):
        motion_io.import_ani(bpy.context, [str(bad)], arm, "urho3d")
    assert len(bpy.data.actions) == n


def test_operators(ninja, testdata, tmp_path):
    import bpy
    from skinbridge.io_urhox.motion import uani

    arm, _, _ = ninja
    bpy.context.view_layer.objects.active = arm
    d = testdata / "urho3d"
    assert bpy.ops.import_anim.skinbridge_urhox_ani(directory=str(d), files=[{"name": f"{c}.ani"} for c in NINJA_CLIPS],
                                          profile="urho3d") == {"FINISHED"}
    assert {"Ninja_Walk", "Ninja_Idle1"} <= set(bpy.data.actions.keys())
    assert bpy.ops.export_anim.skinbridge_urhox_ani(directory=str(tmp_path), ani_format="urho3d",
                                          profile="urho3d") == {"FINISHED"}
    for c in NINJA_CLIPS:
        _compare_records(uani.read((tmp_path / "Animations" / f"{c}.ani").read_bytes()),
                         uani.read((d / f"{c}.ani").read_bytes()))
    assert json.loads(bpy.data.actions["Ninja_Walk"]["skinbridge_ani"])["urho"]["name"] == "Walk"
