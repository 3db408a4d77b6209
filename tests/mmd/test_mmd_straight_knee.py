"""A knee straight at rest (the hair test model's legs: hip, knee and ankle in a line) stays straight in Blender,
as in MMD, and still bends as soon as its foot comes nearer the hip (docs/mmd.md §4.5, issue 48): the knee's
IK-limit override is muted by a driver just while the IK bone is as far from the hip as at rest. The bend
expected is the triangle's (law of cosines) of the thigh, the shin and the hip-to-target distance."""
from __future__ import annotations

import math

import numpy as np
import pytest

from skinbridge.io_pmx.model import pmx
from support import mmd_hair

pytestmark = pytest.mark.blender


def _import(tmp_path):
    bpy = pytest.importorskip("bpy")
    from skinbridge.io_pmx.blender_side import blender_io  # imports bpy: this module's tests only

    path = tmp_path / "hair.pmx"
    path.write_bytes(pmx.write(mmd_hair.hair_model()))
    arm = blender_io.import_pmx(bpy.context, str(path), physics=False).armature
    bpy.context.view_layer.update()
    return bpy, arm


def _leg(arm, side: str) -> np.ndarray:
    """Hip, knee and ankle heads (armature space)."""
    return np.array([arm.pose.bones[side + n].head for n in ("足", "ひざ", "足首")], np.float64)


def _bend(points: np.ndarray) -> float:
    """Degrees between the thigh and the shin; positive while the knee lies in front (−Y) of hip-to-ankle."""
    hip, knee, ankle = points
    a, b = knee - hip, ankle - knee
    angle = math.degrees(math.acos(np.clip(a @ b / np.linalg.norm(a) / np.linalg.norm(b), -1, 1)))
    along = ankle - hip
    off = knee - hip - along * ((knee - hip) @ along) / (along @ along)
    return angle if off[1] <= 0 else -angle


def _expected_bend(rest: np.ndarray, hip: np.ndarray, target: np.ndarray) -> float:
    thigh, shin = np.linalg.norm(rest[1] - rest[0]), np.linalg.norm(rest[2] - rest[1])
    d = np.linalg.norm(target - hip)
    return 180.0 - math.degrees(math.acos((thigh ** 2 + shin ** 2 - d ** 2) / (2 * thigh * shin)))


def _move(bpy, pb, dz: float) -> None:
    """Moves a pose bone by `dz` along the armature's Z (MMD's up)."""
    from mathutils import Matrix

    pb.matrix = Matrix.Translation((0.0, 0.0, dz)) @ pb.matrix
    bpy.context.view_layer.update()


def test_straight_knee_stays_straight_at_rest(clean_scene, tmp_path, capfd):
    capfd.readouterr()
    bpy, arm = _import(tmp_path)
    assert "cycle" not in capfd.readouterr().err.lower()  # the driver reads no bone of the chain
    for side in ("左", "右"):
        rest = np.array([arm.data.bones[side + n].head_local for n in ("足", "ひざ", "足首")], np.float64)
        assert abs(rest[:, 0] - rest[0, 0]).max() < 1e-7 and abs(rest[:, 1] - rest[0, 1]).max() < 1e-7
        np.testing.assert_allclose(_leg(arm, side), rest, atol=1e-6)  # was: knee head 0.26 mm off
        assert abs(_bend(_leg(arm, side))) < 1e-4  # degrees; was 0.078°
        fc = arm.animation_data.drivers.find(f'pose.bones["{side}ひざ"].constraints["PMX IK limit"].mute')
        assert fc.driver.is_simple_expression and fc.driver.is_valid  # runs without Python scripts
        assert arm.pose.bones[side + "ひざ"].constraints["PMX IK limit"].mute


def test_straight_knee_bends_when_the_foot_or_the_hips_come_nearer(clean_scene, tmp_path):
    bpy, arm = _import(tmp_path)
    rest = _leg(arm, "左")
    ik, center = arm.pose.bones["左足ＩＫ"], arm.pose.bones["センター"]
    for lift in (0.0008, 0.08, 0.3):  # the foot lifted 0.8 mm to 30 cm (the leg is 72 cm)
        _move(bpy, ik, lift)
        got = _leg(arm, "左")
        assert np.linalg.norm(got[2] - np.array(ik.head)) < 2e-4, lift  # the ankle on its IK bone
        assert _bend(got) == pytest.approx(_expected_bend(rest, rest[0], np.array(ik.head)), abs=0.05), lift
        assert not arm.pose.bones["左ひざ"].constraints["PMX IK limit"].mute
        _move(bpy, ik, -lift)
        np.testing.assert_allclose(_leg(arm, "左"), rest, atol=1e-6)  # straight again
    # the hips lowered by a key on センター: read through 下半身's pose, under frame_set
    center.keyframe_insert("location", frame=1)
    _move(bpy, center, -0.05)
    center.keyframe_insert("location", frame=10)
    for frame in (10, 1, 10):
        bpy.context.scene.frame_set(frame)
        got = _leg(arm, "左")
        expected = _expected_bend(rest, got[0], rest[2]) if frame == 10 else 0.0
        assert _bend(got) == pytest.approx(expected, abs=0.05), frame
        assert expected == 0.0 or expected > 30
