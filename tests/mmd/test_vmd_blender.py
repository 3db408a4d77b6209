"""Through Blender: VMD motions ⇄ actions on a PMX-imported armature.

Item 1 (codec: every sample reads and writes back byte-identical, a copy cut after the morph group reads with
a warning) is `test_vmd_codec.py`; here the samples also come back byte-identical *through Blender* (item 2),
the generated motion of item 3 keeps frames, blocks and values and re-derives only an edited key's block,
Blender's evaluation equals `core.skinning`'s MMD rule (item 4), bad input is refused per
docs/architecture.md §7.1 (item 6).
Item 5 (MMD rig exports) is `test_vmd_blender_rig.py`; item 7 is `bench/vmd.py`.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.core.errors import FormatError  # noqa: E402
from skinbridge.core.transforms import quat_multiply  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_io  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_motion_export  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_motion_import  # noqa: E402
from skinbridge.io_pmx.model import pmx  # noqa: E402
from skinbridge.io_pmx.motion import vmd  # noqa: E402
from skinbridge.io_pmx.motion import channels as vc  # noqa: E402
from support.bytes_compare import assert_same_bytes  # noqa: E402

pytestmark = pytest.mark.blender

LUKA = "mmdtools_megurine_luka.pmx"
SAMPLES = ("babylonmmd_physics_toggle_test_yyb10th.vmd", "mlibgo_shagamu.vmd")
GENERATED_BONES = ("センター", "左足", "左ひざ", "上半身", "首")


@pytest.fixture
def luka(clean_scene, testdata):
    # MMD's evaluation of a motion that these tests compare with has physics off
    result = blender_io.import_pmx(bpy.context, str(testdata / "pmx" / LUKA), physics=False)
    return result.armature


def _key_set(m: vmd.Motion) -> list:
    return sorted((bytes(k["name"]), int(k["frame"])) for k in m.bone_keys)


def _records_by_key(m: vmd.Motion) -> dict:
    return {(vmd.decode_name(bytes(k["name"])), int(k["frame"])): k for k in m.bone_keys}


def _tol(b):
    b = np.asarray(b, np.float64)
    return np.maximum(1e-5, 4 * np.spacing(np.abs(b).astype(np.float32)))


def _assert_keys_equal(a: vmd.Motion, b: vmd.Motion):
    """Item 2/3: same key set; per key frame, position within tolerance, rotation up to sign, identical block."""
    assert _key_set(a) == _key_set(b)
    ra, rb = _records_by_key(a), _records_by_key(b)
    for key, x in ra.items():
        y = rb[key]
        assert np.all(np.abs(y["position"] - x["position"]) <= _tol(x["position"])), key
        qa, qb = x["rotation"].astype(np.float64), y["rotation"].astype(np.float64)
        qa = qa if np.any(qa) else np.array([0, 0, 0, 1.0])
        qb = qb if np.any(qb) else np.array([0, 0, 0, 1.0])
        assert min(np.abs(qa - qb).max(), np.abs(qa + qb).max()) <= 1e-5, key
        assert bytes(x["interpolation"]) == bytes(y["interpolation"]), key
    assert sorted((bytes(k["name"]), int(k["frame"]), float(k["weight"])) for k in a.morph_keys) == \
        sorted((bytes(k["name"]), int(k["frame"]), float(k["weight"])) for k in b.morph_keys)


# ------------------------------------------------------------------------------------------------------------
# The motion of item 3

def _axis_angle(axis, angle):
    axis = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    return np.concatenate([[math.cos(angle / 2)], axis * math.sin(angle / 2)])


def _curve(rng):
    """A non-linear curve: x1 < x2 mostly, some x1 > x2 (MMD allows it); y off the diagonal."""
    while True:
        c = rng.integers(0, 128, 4)
        if abs(int(c[0]) - int(c[1])) > 15 or abs(int(c[2]) - int(c[3])) > 15:
            return c


def generated_motion(seed: int = 9) -> tuple[vmd.Motion, dict]:
    rng = np.random.default_rng(seed)
    recs = []
    for name in GENERATED_BONES:
        frames = np.cumsum(np.concatenate([[int(rng.integers(0, 5))], rng.integers(7, 31, 4)]))
        q = np.array([1.0, 0, 0, 0])
        for k, f in enumerate(frames):
            rec = vmd.new_bone_keys(1)[0]
            rec["name"] = vmd.encode_name(name)
            rec["frame"] = int(f)
            if name == "センター":
                rec["position"] = rng.uniform(-30, 30, 3)
            else:
                if k:
                    q = quat_multiply(q, _axis_angle(rng.normal(size=3), math.radians(rng.uniform(40, 120))))
                x, y, z = -q[1], -q[3], -q[2]  # any rotation; stored in MMD's x,y,z,w order
                rec["rotation"] = (x, y, z, q[0])
            curves = np.stack([_curve(rng) for _ in range(4)])
            while len({tuple(c) for c in curves}) < 4:
                curves = np.stack([_curve(rng) for _ in range(4)])
            rec["interpolation"] = vmd.build_interpolation(curves)
            recs.append(rec)
    keys = np.array(recs, vmd.BONE_KEY)
    for i in (3, 12):  # two keys with the physics toggle off
        keys[i]["interpolation"][2:4] = vmd.PHYSICS_OFF
    keys = keys[rng.permutation(len(keys))]  # stored unsorted
    m = vmd.Motion(bone_keys=keys)
    m.model_name = "巡音ルカ"
    morphs = np.zeros(6, vmd.MORPH_KEY)
    for i, (n, f, w) in enumerate([("あ", 0, 0.0), ("あ", 10, 1.0), ("あ", 25, 0.25), ("まばたき", 5, 1.0),
                                   ("まばたき", 9, 0.0), ("存在しない", 3, 0.5)]):
        morphs[i] = (vmd.encode_name(n), f, w)
    m.morph_keys = morphs
    ik = np.zeros(2, vmd.IK_STATE)
    ik[0] = (vmd.encode_name("左足ＩＫ", 20), 0)
    ik[1] = (vmd.encode_name("右足ＩＫ", 20), 1)
    ik2 = ik.copy()
    ik2[0]["enabled"] = 1
    m.property_keys = [vmd.PropertyKey(0, 1, ik), vmd.PropertyKey(40, 1, ik2)]
    return m, {"physics": 2}


def _import(tmp_path, arm, motion: vmd.Motion, name="gen.vmd", **options):
    path = tmp_path / name
    path.write_bytes(vmd.write(motion))
    acts, warnings = blender_motion_import.import_vmd(bpy.context, [str(path)], arm, **options)
    return acts[0], warnings, path


# ------------------------------------------------------------------------------------------------------------
# Item 2: the samples through Blender

@pytest.mark.parametrize("name", SAMPLES)
def test_sample_round_trip_through_blender(luka, testdata, tmp_path, name):
    path = testdata / "pmx" / name
    original = vmd.read_file(path)
    acts, warnings = blender_motion_import.import_vmd(bpy.context, [str(path)], luka)
    # keys for bones / morphs Luka lacks are listed with counts
    bones = {b.name for b in luka.data.bones}
    names, which = vmd.distinct_names(original.bone_keys["name"])
    missing = [n for n in names if n not in bones]
    assert missing
    text = "\n".join(warnings)
    for n in missing:
        assert f"{n} ({int(np.sum(which == names.index(n)))})" in text
    out = tmp_path / "out.vmd"
    more = blender_motion_export.export_vmd(bpy.context, str(out), luka, acts[0])
    assert more == []
    back = vmd.read_file(out)
    _assert_keys_equal(original, back)
    assert_same_bytes(out.read_bytes(), path.read_bytes(), vmd.read)  # unchanged motion: byte-identical through Blender


def test_sample_physics_bytes_and_ik_keys_survive(luka, testdata, tmp_path):
    path = testdata / "pmx" / SAMPLES[0]
    acts, _ = blender_motion_import.import_vmd(bpy.context, [str(path)], luka)
    act = acts[0]
    paths = [fc.data_path for layer in act.layers for strip in layer.strips for cb in strip.channelbags
             for fc in cb.fcurves]
    assert any(".constraints[" in p and p.endswith(".influence") for p in paths)  # IK on/off keys
    assert any(p.startswith("key_blocks[") for p in paths)  # morph keys on shape keys
    back = vmd.read(vmd.write(blender_motion_export.export_motion(bpy.context, act, luka)[0]))
    assert int(vmd.physics_off(back.bone_keys["interpolation"]).sum()) == 9


# ------------------------------------------------------------------------------------------------------------
# Item 3

@pytest.mark.slow
def test_generated_motion_round_trip(luka, tmp_path):
    motion, _ = generated_motion()
    act, warnings, path = _import(tmp_path, luka, motion)
    assert any("存在しない (1)" in w for w in warnings)
    assert any("GENERATED" in w and "センター" in w for w in warnings)  # its Y/Z channels mix MMD axes
    back, more = blender_motion_export.export_motion(bpy.context, act, luka)
    _assert_keys_equal(motion, back)
    assert_same_bytes(vmd.write(back), path.read_bytes(), vmd.read)
    assert int(vmd.physics_off(back.bone_keys["interpolation"]).sum()) == 2
    # the curves really are in Blender: rotation F-curves carry GENERATED keys
    types = []
    for layer in act.layers:
        for strip in layer.strips:
            for cb in strip.channelbags:
                for fc in cb.fcurves:
                    if fc.data_path.endswith("rotation_quaternion"):
                        types += [k.type for k in fc.keyframe_points]
    assert "GENERATED" in types and "KEYFRAME" in types


def _fcurve(act, path, index):
    for layer in act.layers:
        for strip in layer.strips:
            for cb in strip.channelbags:
                fc = cb.fcurves.find(path, index=index)
                if fc is not None:
                    return fc
    return None


@pytest.mark.slow
def test_edited_key_rederives_only_its_block(luka, tmp_path):
    motion, _ = generated_motion()
    act, _, _ = _import(tmp_path, luka, motion)
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    center = sorted((k for k in motion.bone_keys if vmd.decode_name(bytes(k["name"])) == "センター"),
                    key=lambda k: k["frame"])
    k = 2
    frame = float(center[k]["frame"]) * fps / 30
    prev = float(center[k - 1]["frame"]) * fps / 30
    # move the key (and its handles, as the Graph Editor does) on the location X curve: MMD X
    fc = _fcurve(act, 'pose.bones["センター"].location', 0)
    kp = next(p for p in fc.keyframe_points if abs(p.co[0] - frame) < 1e-4)
    dy = 0.37
    kp.co[1] += dy
    kp.handle_left[1] += dy
    kp.handle_right[1] += dy
    fc.update()
    kp = next(p for p in fc.keyframe_points if abs(p.co[0] - frame) < 1e-4)  # update() may move the points
    before = next(p for p in fc.keyframe_points if abs(p.co[0] - prev) < 1e-4)
    back, _ = blender_motion_export.export_motion(bpy.context, act, luka)
    ra, rb = _records_by_key(motion), _records_by_key(back)
    assert ra.keys() == rb.keys()
    edited = ("センター", int(center[k]["frame"]))
    for key in ra:
        if key != edited:
            assert ra[key].tobytes() == rb[key].tobytes(), key  # every other key, block included, unchanged
    new = rb[edited]
    assert abs(float(new["position"][0]) - (float(center[k]["position"][0]) + dy / 0.08)) < 1e-4
    # X re-derived from the handles of the segment into the key; Y, Z, R and the physics bytes kept
    x0, y0, x1, y1 = before.co[0], before.co[1], kp.co[0], kp.co[1]
    expect_x = np.round(127 * np.array([(before.handle_right[0] - x0) / (x1 - x0),
                                        (before.handle_right[1] - y0) / (y1 - y0),
                                        (kp.handle_left[0] - x0) / (x1 - x0),
                                        (kp.handle_left[1] - y0) / (y1 - y0)]))
    old_curves = vmd.curves(center[k]["interpolation"])
    new_curves = vmd.curves(new["interpolation"])
    np.testing.assert_array_equal(new_curves[0], np.clip(expect_x, 0, 127))
    assert not np.array_equal(new_curves[0], old_curves[0])
    np.testing.assert_array_equal(new_curves[1:], old_curves[1:])
    np.testing.assert_array_equal(vmd.physics_bytes(new["interpolation"]),
                                  vmd.physics_bytes(center[k]["interpolation"]))


# ------------------------------------------------------------------------------------------------------------
# Item 4: Blender's evaluation equals the MMD rule

def _heads_blender(arm, vmd_frame: float) -> np.ndarray:
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    f = vmd_frame * fps / 30
    bpy.context.scene.frame_set(int(math.floor(f)), subframe=f - math.floor(f))
    world = np.array(arm.matrix_world)
    return np.array([(world @ np.append(np.array(pb.head), 1.0))[:3] for pb in arm.pose.bones])


def _compare_evaluation(arm, model: pmx.PmxModel, motion: vmd.Motion, label: str) -> float:
    for pb in arm.pose.bones:  # IK off (MMD rule here evaluates no IK); append stays on
        for c in pb.constraints:
            if c.type in ("IK", "LIMIT_ROTATION"):
                c.enabled = False
    rig = vc.mmd_rig(model)
    tracks = vc.match_tracks(rig, motion)
    index = {b.name: i for i, b in enumerate(arm.pose.bones)}
    order = np.array([index[n] for n in rig.names])
    key_frames = np.unique(np.concatenate([tr.frames for tr in tracks.values()]))
    frames = list(key_frames)
    for a, b in zip(key_frames[:-1], key_frames[1:]):
        frames += [a + (b - a) * s for s in (0.25, 0.5, 0.75)]
    rest = np.array([np.array(b.head_local) for b in arm.data.bones])
    diag = float(np.linalg.norm(np.ptp(rest, axis=0)))
    worst = 0.0
    for f in frames:
        world = vc.evaluate_mmd(rig, tracks, f)
        mmd_heads = vc.positions_to_blender(world[:, :3, 3], 0.08)
        bl = _heads_blender(arm, f)[order]
        worst = max(worst, float(np.abs(bl - mmd_heads).max()))
    print(f"{label}: largest bone-head difference {worst:.3g} (diagonal {diag:.3g}, {worst / diag:.3g} of it)")
    assert worst <= 1e-4 * diag, label
    return worst


@pytest.mark.slow
def test_blender_evaluates_the_generated_motion_as_mmd(luka, testdata, tmp_path):
    motion, _ = generated_motion()
    act, _, _ = _import(tmp_path, luka, motion)
    model = pmx.read((testdata / "pmx" / LUKA).read_bytes())
    _compare_evaluation(luka, model, motion, "generated")


@pytest.mark.parametrize("name", SAMPLES)
def test_blender_evaluates_the_samples_as_mmd(luka, testdata, name):
    motion = vmd.read_file(testdata / "pmx" / name)
    blender_motion_import.import_vmd(bpy.context, [str(testdata / "pmx" / name)], luka)
    model = pmx.read((testdata / "pmx" / LUKA).read_bytes())
    _compare_evaluation(luka, model, motion, name)


@pytest.mark.slow
def test_time_maps_with_the_scene_frame_rate(luka, tmp_path):
    bpy.context.scene.render.fps = 60
    motion, _ = generated_motion()
    act, _, path = _import(tmp_path, luka, motion, mmd_time=False)
    fc = _fcurve(act, 'pose.bones["首"].rotation_quaternion', 0)
    real = sorted(p.co[0] for p in fc.keyframe_points if p.type == "KEYFRAME")
    frames = sorted(int(k["frame"]) for k in motion.bone_keys if vmd.decode_name(bytes(k["name"])) == "首")
    np.testing.assert_allclose(real, np.array(frames) * 2.0)
    back, _ = blender_motion_export.export_motion(bpy.context, act, luka)
    assert_same_bytes(vmd.write(back), path.read_bytes(), vmd.read)


# ------------------------------------------------------------------------------------------------------------
# Export of actions made in Blender; resampling; baking; names

def test_action_made_in_blender_exports_at_its_keys(luka, tmp_path):
    pb = luka.pose.bones["首"]
    pb.rotation_mode = "QUATERNION"
    scene = bpy.context.scene
    scene.render.fps = 30
    for f, angle in ((0, 0.0), (10, 0.6), (25, -0.3)):
        pb.rotation_quaternion = _axis_angle((1, 0, 0), angle)
        pb.keyframe_insert("rotation_quaternion", frame=f)
    pb2 = luka.pose.bones["センター"]
    for f, z in ((0, 0.0), (7.5, 0.4), (20, 0.1)):  # 7.5 falls between whole frames: resampled to 7 and 8
        pb2.location = (0, 0, z)
        pb2.keyframe_insert("location", frame=f)
    act = luka.animation_data.action
    motion, warnings = blender_motion_export.export_motion(bpy.context, act, luka)
    by = {}
    for k in motion.bone_keys:
        by.setdefault(vmd.decode_name(bytes(k["name"])), []).append(int(k["frame"]))
    assert sorted(by["首"]) == [0, 10, 25]
    assert sorted(by["センター"]) == [0, 7, 8, 20]
    assert any("resampled" in w for w in warnings)
    # blocks from Blender's auto-clamped handles: non-linear, within 0..127
    neck = sorted((k for k in motion.bone_keys if vmd.decode_name(bytes(k["name"])) == "首"), key=lambda k: k["frame"])
    assert not np.array_equal(vmd.curves(neck[1]["interpolation"])[3], vmd.LINEAR_CURVE)
    # MMD's evaluation of the export at the keys equals Blender's pose
    model_world = None
    baked, _ = blender_motion_export.export_motion(bpy.context, act, luka, bake=True)
    assert sorted(int(k["frame"]) for k in baked.bone_keys if vmd.decode_name(bytes(k["name"])) == "首") == \
        list(range(0, 26))
    del model_world


def test_a_single_key_between_whole_frames_exports(luka):
    """A bone keyed once, at a time between two of VMD's whole frames: its value is written where the motion
    has frames (a curve of one key has no segment to cut)."""
    scene = bpy.context.scene
    scene.render.fps = 30
    pb = luka.pose.bones["センター"]
    pb.location = (0, 0, 0.4)
    pb.keyframe_insert("location", frame=7.5)
    neck = luka.pose.bones["首"]
    neck.rotation_mode = "QUATERNION"
    for f in (0, 10):
        neck.keyframe_insert("rotation_quaternion", frame=f)
    motion, _ = blender_motion_export.export_motion(bpy.context, luka.animation_data.action, luka)
    centre = [k for k in motion.bone_keys if vmd.decode_name(bytes(k["name"])) == "センター"]
    assert centre and {int(k["frame"]) for k in centre} <= {7, 8}
    values = np.array([k["position"] for k in centre], np.float64)
    assert np.allclose(values, values[0]) and np.abs(values[0]).max() > 0


def test_long_names_are_reported(clean_scene):
    ob = bpy.data.objects.new("rig", bpy.data.armatures.new("rig"))
    bpy.context.scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    bpy.ops.object.mode_set(mode="EDIT")
    eb = ob.data.edit_bones.new("b_RightForeArm_0123")
    eb.tail = (0, 0, 1)
    bpy.ops.object.mode_set(mode="OBJECT")
    pb = ob.pose.bones[0]
    pb.keyframe_insert("location", frame=0)
    pb.location = (1, 0, 0)
    pb.keyframe_insert("location", frame=10)
    motion, warnings = blender_motion_export.export_motion(bpy.context, ob.animation_data.action, ob)
    assert any("b_RightForeArm_0123" in w and "15" in w for w in warnings)
    assert bytes(motion.bone_keys["name"][0]) == b"b_RightForeArm_"


# ------------------------------------------------------------------------------------------------------------
# Item 6: bad input

def _count_data():
    return {n: len(getattr(bpy.data, n)) for n in ("actions", "objects", "cameras")}


@pytest.mark.parametrize("name", SAMPLES)
def test_bad_input_is_refused_and_imports_nothing(luka, testdata, tmp_path, name):
    data = (testdata / "pmx" / name).read_bytes()
    m = vmd.read(data)
    before = _count_data()
    header = 50
    cases = {
        "short header": data[:40],
        "bad signature": b"Vocaloid Motion Data 0001".ljust(30, b"\0") + data[30:],
        "count past the end": data[:header] + (0xFFFFFFF0).to_bytes(4, "little") + data[header + 4:],
        "cut inside bone keys": data[:header + 4 + 111 * (len(m.bone_keys) // 2) + 7],
        "cut inside the camera group": data[:header + 8 + 111 * len(m.bone_keys) + 23 * len(m.morph_keys) + 2],
    }
    for label, bad in cases.items():
        p = tmp_path / f"{label}.vmd"
        p.write_bytes(bad)
        with pytest.raises(FormatError):
            blender_motion_import.import_vmd(bpy.context, [str(p)], luka)
        assert _count_data() == before, label
    # a copy cut after the morph group imports with a warning
    cut = tmp_path / "cut.vmd"
    cut.write_bytes(data[:header + 8 + 111 * len(m.bone_keys) + 23 * len(m.morph_keys)])
    acts, warnings = blender_motion_import.import_vmd(bpy.context, [str(cut)], luka)
    assert any("ends after the morph keys" in w for w in warnings)
    out = tmp_path / "cut_out.vmd"
    blender_motion_export.export_vmd(bpy.context, str(out), luka, acts[0])
    assert_same_bytes(out.read_bytes(), cut.read_bytes(), vmd.read)


@pytest.mark.slow
def test_non_finite_values_import_with_warning_and_export_refuses(luka, tmp_path):
    motion, _ = generated_motion()
    motion.bone_keys[0]["position"][0] = np.nan
    name = vmd.decode_name(bytes(motion.bone_keys[0]["name"]))
    path = tmp_path / "nan.vmd"
    path.write_bytes(vmd.write(motion))
    acts, warnings = blender_motion_import.import_vmd(bpy.context, [str(path)], luka)
    assert any("not finite" in w and name in w for w in warnings)
    from skinbridge.core.errors import ExportError

    with pytest.raises(ExportError, match=name):
        blender_motion_export.export_motion(bpy.context, acts[0], luka)


@pytest.mark.slow
def test_import_is_atomic(luka, tmp_path, monkeypatch):
    motion, _ = generated_motion()
    path = tmp_path / "m.vmd"
    path.write_bytes(vmd.write(motion))
    before = _count_data()

    def failing(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(blender_motion_import, "_camera", failing)
    motion.camera_keys = np.zeros(2, vmd.CAMERA_KEY)
    path.write_bytes(vmd.write(motion))
    with pytest.raises(RuntimeError):
        blender_motion_import.import_vmd(bpy.context, [str(path)], luka)
    assert _count_data() == before
    assert luka.animation_data is None or luka.animation_data.action is None


def test_no_armature_is_an_error(clean_scene, testdata):
    from skinbridge.core.errors import ExportError

    with pytest.raises(ExportError):
        blender_motion_import.import_vmd(bpy.context, [str(testdata / "pmx" / SAMPLES[1])], None)


# ------------------------------------------------------------------------------------------------------------
# Camera, operators, convert

def _camera_motion() -> vmd.Motion:
    m = vmd.Motion()
    m.model_name = "カメラ・照明"
    keys = np.zeros(3, vmd.CAMERA_KEY)
    rng = np.random.default_rng(3)
    for i, f in enumerate((0, 12, 40)):
        keys[i]["frame"] = f
        keys[i]["distance"] = -45 + 5 * i
        keys[i]["position"] = rng.uniform(-10, 10, 3)
        keys[i]["rotation"] = rng.uniform(-1, 1, 3)
        keys[i]["interpolation"] = vc.camera_block(rng.integers(0, 128, (1, 6, 4)))[0]
        keys[i]["view_angle"] = 30 + i
    m.camera_keys = keys
    return m


def test_camera_keys_make_an_animated_camera(luka, tmp_path):
    m = _camera_motion()
    path = tmp_path / "cam.vmd"
    path.write_bytes(vmd.write(m))
    acts, _ = blender_motion_import.import_vmd(bpy.context, [str(path)], luka)
    cams = [o for o in bpy.data.objects if o.type == "CAMERA"]
    assert len(cams) == 1 and cams[0].parent is not None
    rig = cams[0].parent
    bpy.context.scene.frame_set(0)
    np.testing.assert_allclose(np.array(rig.location), vc.positions_to_blender(m.camera_keys["position"][0], 0.08),
                               atol=1e-5)
    assert abs(cams[0].location[1] - m.camera_keys["distance"][0] * 0.08) < 1e-5
    assert abs(cams[0].data.angle - math.radians(30)) < 1e-5
    out = tmp_path / "cam_out.vmd"
    blender_motion_export.export_vmd(bpy.context, str(out), luka, acts[0])
    assert_same_bytes(out.read_bytes(), path.read_bytes(), vmd.read)


def test_operators(luka, testdata, tmp_path):
    path = testdata / "pmx" / SAMPLES[0]
    bpy.context.view_layer.objects.active = luka
    assert bpy.ops.import_anim.skinbridge_vmd(filepath=str(path)) == {"FINISHED"}
    out = tmp_path / "op.vmd"
    assert bpy.ops.export_anim.skinbridge_vmd(filepath=str(out)) == {"FINISHED"}
    assert_same_bytes(out.read_bytes(), path.read_bytes(), vmd.read)
    bad = tmp_path / "bad.vmd"
    bad.write_bytes(b"nope")
    with pytest.raises(RuntimeError, match="shorter than the 50-byte VMD header"):  # reported as an ERROR
        bpy.ops.import_anim.skinbridge_vmd(filepath=str(bad))


@pytest.mark.slow
def test_convert_writes_model_and_a_vmd_per_action(testdata, tmp_path):
    from conftest import run_cli

    out = tmp_path / "out"
    r = run_cli("convert", testdata / "pmx" / LUKA, "--motion", testdata / "pmx" / SAMPLES[0], "--to", "pmx",
                "-o", out)
    assert r.returncode == 0, r.stderr
    written = out / (SAMPLES[0][:-4] + ".vmd")
    assert written.is_file() and (out / (LUKA[:-4] + ".pmx")).is_file()
    assert_same_bytes(written.read_bytes(), (testdata / "pmx" / SAMPLES[0]).read_bytes(), pmx.read)
