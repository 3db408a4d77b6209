"""MMD physics simulating in Blender: MMD's collision rule in Bullet (a pair MMD lets collide stops, pairs the
masks exclude pass through), Luka's bones on their bodies at every frame of a fixed 1/60 s simulation, and the
operators of the sidebar's MMD panel (build, off for posing, clear back to rest, rebuild, bake) with the export
still byte-identical."""
from __future__ import annotations

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.io_pmx.blender_side import blender_io  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_physics as bp  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_physics_sim as sim  # noqa: E402
from skinbridge.io_pmx.model import pmx  # noqa: E402
from support.bytes_compare import assert_same_bytes  # noqa: E402

pytestmark = pytest.mark.blender

LUKA = "mmdtools_megurine_luka.pmx"


def _armature(name: str = "model"):
    arm = bpy.data.objects.new(name, bpy.data.armatures.new(name))
    bpy.context.scene.collection.objects.link(arm)
    bp.ensure_world(bpy.context)
    return arm


def _body(arm, name, group, mask, shape, size, height, x, mode):
    coll = bp._physics_collection(bpy.context, arm)
    rec = pmx.PmxRigidBody(name=name, group=group, no_collision_mask=mask, shape=shape,
                           size=np.float32(size), position=np.float32([x, height, 0]), rotation=np.float32([0, 0, 0]),
                           mass=np.float32(1), linear_damping=np.float32(0), angular_damping=np.float32(0),
                           restitution=np.float32(0), friction=np.float32(0.5), mode=mode)
    return bp.add_rigid_body(bpy.context, coll, arm, rec, None, 1.0)


def _run(scene, frames: int) -> None:
    scene.render.fps = 30
    sim.set_world_step(scene)
    assert scene.rigidbody_world.substeps_per_frame == 2  # a 1/60 s step
    for f in range(1, frames + 1):
        scene.frame_set(f)


def test_collision_rule_in_bullet(clean_scene):
    """Three balls dropped 0.5 m onto three kinematic slabs (half height 0.05 m): of different groups, kept by
    both masks (it stops on the slab); of different groups, the ball's mask excluding the slab's group (it falls
    through); of one group whose mask excludes itself (through, although Blender's collections alone would
    make them collide)."""
    arm = _armature()
    cases = {"meet": (0, 0xFFFF, 1, 0xFFFF), "masked": (2, 0xFFFF, 3, 0xFFFF & ~(1 << 2)),
             "same group": (4, 0xFFFF & ~(1 << 4), 4, 0xFFFF & ~(1 << 4))}
    balls = {}
    for k, (what, (g_slab, m_slab, g_ball, m_ball)) in enumerate(cases.items()):
        _body(arm, f"slab {what}", g_slab, m_slab, 1, [0.5, 0.05, 0.5], 0.0, 3.0 * k, 0)
        balls[what] = _body(arm, f"ball {what}", g_ball, m_ball, 0, [0.1, 0, 0], 0.5, 3.0 * k, 1)
    made = sim.apply_collisions(bpy.context, arm)
    assert made == 1  # the same-group pair: a disabled-collision constraint
    _run(bpy.context.scene, 40)
    deps = bpy.context.evaluated_depsgraph_get()
    z = {what: ball.evaluated_get(deps).matrix_world.translation.z for what, ball in balls.items()}
    print(f"\nball heights after 40 frames: {z}")
    assert z["meet"] == pytest.approx(0.15, abs=0.01)  # resting on the slab: 0.05 + its 0.1 radius
    assert z["masked"] < -0.5 and z["same group"] < -0.5  # 0.5 m fall and then some: through the slab


def _follow_errors(arm, bodies, offsets, deps) -> tuple[float, float]:
    worst_angle = worst_distance = 0.0
    for ob, bone in bodies:
        want = np.array(ob.evaluated_get(deps).matrix_world @ offsets[ob.name])
        got = np.array(arm.matrix_world @ arm.pose.bones[bone].matrix)
        assert np.isfinite(want).all() and np.isfinite(got).all(), bone
        turn = want[:3, :3].T @ got[:3, :3]
        worst_angle = max(worst_angle, math.degrees(math.acos(min(1.0, max(-1.0, (np.trace(turn) - 1) / 2)))))
        if int(ob.get("mmd_mode", 1)) == 1:  # mode 2 takes the rotation only
            worst_distance = max(worst_distance, float(np.linalg.norm(want[:3, 3] - got[:3, 3])))
    return worst_angle, worst_distance


@pytest.mark.parametrize("frames", [pytest.param(20, id="20 frames"),
                                    pytest.param(300, id="300 frames", marks=pytest.mark.slow)])
def test_luka_bones_stay_on_their_bodies(clean_scene, testdata, frames):
    arm = blender_io.import_pmx(bpy.context, str(testdata / "pmx" / LUKA)).armature
    bodies, _ = bp.physics_objects(arm)
    dynamic = [(ob, ob[bp.BONE_PROP]) for ob in bodies if not ob.rigid_body.kinematic and ob.get(bp.BONE_PROP)]
    assert len(dynamic) == 57
    rest = {ob.name: np.array(bp.rest_matrix(ob).translation) for ob, _ in dynamic}
    offsets = {ob.name: bp.rest_matrix(ob).inverted() @ arm.matrix_world @ arm.data.bones[bone].matrix_local
               for ob, bone in dynamic}
    scene = bpy.context.scene
    scene.render.fps = 30
    sim.set_world_step(scene)
    worst = (0.0, 0.0)
    for f in range(1, frames + 1):
        scene.frame_set(f)
        angle, distance = _follow_errors(arm, dynamic, offsets, bpy.context.evaluated_depsgraph_get())
        worst = (max(worst[0], angle), max(worst[1], distance))
    deps = bpy.context.evaluated_depsgraph_get()
    moved = max(float(np.linalg.norm(np.array(ob.evaluated_get(deps).matrix_world.translation) - rest[ob.name]))
                for ob, _ in dynamic)
    print(f"\n{frames} frames: worst bone-to-body {worst[0]:.2e}° {worst[1] * 1000:.2e} mm; bodies moved up to "
          f"{moved:.3f} m")
    assert worst[0] <= 1.0 and worst[1] <= 1e-3
    assert 0.005 < moved < 0.5  # they swing (the test is not of bodies at rest), and nothing flies off


def test_operators_and_export(clean_scene, testdata, tmp_path):
    src = testdata / "pmx" / LUKA
    model = pmx.read(src.read_bytes())
    model.rigid_bodies[5].angular_damping = np.float32(2.0)  # outside Blender's 0–1
    edited = tmp_path / "luka_damping.pmx"
    edited.write_bytes(pmx.write(model))
    result = blender_io.import_pmx(bpy.context, str(edited), physics=False)
    notes = [w for w in result.warnings if "outside Blender's ranges" in w]
    assert len(notes) == 1 and model.rigid_bodies[5].name in notes[0] and "angular damping 2" in notes[0]
    bpy.ops.wm.read_factory_settings(use_empty=True)  # that import was for its warnings
    assert bpy.ops.import_scene.skinbridge_pmx(filepath=str(edited), physics=False) == {"FINISHED"}
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    bpy.context.view_layer.objects.active = arm
    assert not sim.is_on(arm)  # imported with physics off
    bones = sorted({ob[bp.BONE_PROP] for ob in bp.physics_objects(arm)[0] if ob.get(bp.BONE_PROP)})
    assert bpy.ops.skinbridge.mmd_physics_build() == {"FINISHED"} and sim.is_on(arm)
    _run(bpy.context.scene, 10)
    posed = max(float(np.abs(np.array(arm.pose.bones[b].matrix) - np.array(arm.data.bones[b].matrix_local)).max())
                for b in bones)
    assert posed > 1e-3  # the bodies moved the bones
    assert bpy.ops.skinbridge.mmd_physics_toggle() == {"FINISHED"} and not sim.is_on(arm)
    arm.pose.bones[bones[0]].rotation_mode = "XYZ"
    arm.pose.bones[bones[0]].rotation_euler = (0.3, 0, 0)  # posing by hand while physics is off
    bpy.context.view_layer.update()
    assert bpy.ops.skinbridge.mmd_physics_clear() == {"FINISHED"}
    bpy.context.view_layer.update()
    for b in bones:  # back at rest
        np.testing.assert_allclose(np.array(arm.pose.bones[b].matrix), np.array(arm.data.bones[b].matrix_local),
                                   atol=1e-5)
    assert not sim._helpers(arm, sim.TRACK) and not sim._helpers(arm, sim.NCC)
    assert bpy.ops.skinbridge.mmd_physics_rebuild() == {"FINISHED"} and sim.is_on(arm)
    assert len(sim._helpers(arm, sim.TRACK)) == 57
    bpy.context.scene.frame_end = 20
    assert bpy.ops.skinbridge.mmd_physics_bake() == {"FINISHED"}
    assert bpy.context.scene.rigidbody_world.point_cache.is_baked
    out = tmp_path / "same.pmx"
    blender_io.export_pmx(bpy.context, str(out))
    assert_same_bytes(out.read_bytes(), edited.read_bytes(), pmx.read)  # the damping of 2 written back


def test_gravity_is_mmds_unless_something_else_falls(clean_scene, testdata):
    """The build sets the scene's gravity to MMD's 98 units/s² at the import scale (7.84 m/s² at 0.08), since
    Blender's gravity is the scene's; with another rigid body in the scene it leaves it and says so."""
    src = str(testdata / "pmx" / LUKA)
    blender_io.import_pmx(bpy.context, src)
    assert tuple(bpy.context.scene.gravity) == pytest.approx((0.0, 0.0, -7.84))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    crate = bpy.data.objects.new("crate", bpy.data.meshes.new("crate"))
    bpy.context.scene.collection.objects.link(crate)
    bp.ensure_world(bpy.context)
    bp._rigid_body_of(bpy.context, crate)  # an active body of the user's: it falls by the scene's gravity too
    result = blender_io.import_pmx(bpy.context, src)
    assert tuple(bpy.context.scene.gravity) == pytest.approx((0.0, 0.0, -9.81))
    notes = [w for w in result.warnings if "scene gravity" in w]
    assert len(notes) == 1 and "crate" in notes[0] and "7.84" in notes[0]
