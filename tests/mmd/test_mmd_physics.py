"""MMD physics both ways: Luka's rigid bodies and joints as Blender rigid bodies and Generic Spring constraints
with the file's values, written back byte-identical, edits written back field by field; and the "Add MMD
Physics to Chain" operator on the demo humanoid, whose bodies babylon-mmd parses strictly and Blender
simulates."""
from __future__ import annotations

import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from mathutils import Matrix  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_io  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_physics as blender_physics  # noqa: E402
from skinbridge.io_pmx.model import pmx  # noqa: E402
from skinbridge.io_pmx.model import convert  # noqa: E402
from skinbridge.io_pmx.model.units import METRES_PER_UNIT  # noqa: E402
from support.bytes_compare import assert_same_bytes  # noqa: E402

pytestmark = pytest.mark.blender

LUKA = "mmdtools_megurine_luka.pmx"
RIGID_FIELDS = ("name", "bone", "group", "no_collision_mask", "shape", "size", "position", "rotation", "mass",
                "linear_damping", "angular_damping", "restitution", "friction", "mode")
JOINT_FIELDS = ("name", "kind", "rigid_a", "rigid_b", "position", "rotation", "translation_lower",
                "translation_upper", "rotation_lower", "rotation_upper", "spring_translation", "spring_rotation")


def _differences(a: pmx.PmxModel, b: pmx.PmxModel) -> list[tuple]:
    out = []
    for kind, fields, xs, ys in (("rigid", RIGID_FIELDS, a.rigid_bodies, b.rigid_bodies),
                                 ("joint", JOINT_FIELDS, a.joints, b.joints)):
        assert len(xs) == len(ys)
        for i, (x, y) in enumerate(zip(xs, ys)):
            for f in fields:
                if not np.array_equal(np.asarray(getattr(x, f)), np.asarray(getattr(y, f))):
                    out.append((kind, i, f))
    return out


def _objects(kind):
    return [o for o in bpy.data.objects if o.get(blender_physics.KIND_PROP) == kind]


def test_luka_physics_in_blender_and_back(clean_scene, testdata, tmp_path):
    src = testdata / "pmx" / LUKA
    model = pmx.read(src.read_bytes())
    arm = blender_io.import_pmx(bpy.context, str(src)).armature
    bodies, joints = blender_physics.physics_objects(arm)
    assert (len(bodies), len(joints)) == (71, 57) == (len(model.rigid_bodies), len(model.joints))
    assert bpy.context.scene.rigidbody_world is not None
    scale = METRES_PER_UNIT
    world = np.array(arm.matrix_world)
    from skinbridge.blender import scene as bscene

    bone_names = bscene.barm_names(arm)  # Blender bone of each PMX bone
    for ob, r in zip(bodies, model.rigid_bodies):
        rb = ob.rigid_body
        assert rb.collision_shape == ("SPHERE", "BOX", "CAPSULE")[r.shape]
        # (the world matrix comes back from Bullet's float32 transform: export compares within 2e-5)
        np.testing.assert_allclose(ob.dimensions, blender_physics.rigid_dimensions(r.shape, r.size, scale),
                                   rtol=2e-5, atol=1e-7)
        for got, want in ((rb.mass, r.mass), (rb.linear_damping, r.linear_damping),
                          (rb.angular_damping, r.angular_damping), (rb.friction, r.friction),
                          (rb.restitution, r.restitution)):
            assert np.float32(got) == np.float32(want), ob.name
        assert ob[blender_physics.GROUP_PROP] == r.group
        assert ob[blender_physics.MASK_PROP] == r.no_collision_mask
        assert rb.kinematic == (r.mode == 0)
        rest = np.linalg.inv(world) @ np.array(blender_physics.rest_matrix(ob))
        np.testing.assert_allclose(rest[:3, 3], convert.positions_to_blender(r.position[None], scale)[0],
                                   atol=1e-6)
        if r.mode == 0:  # follows its bone: parented to it
            assert ob.parent == arm and ob.parent_bone == bone_names[r.bone]
        else:  # its bone follows it: the whole transform (mode 1) or the rotation (mode 2)
            follow = [c for c in arm.pose.bones[bone_names[r.bone]].constraints
                      if blender_physics.followed_body(c) == ob]
            assert len(follow) == 1 and follow[0].enabled
            assert follow[0].type == ("COPY_TRANSFORMS" if r.mode == 1 else "COPY_ROTATION")
    for ob, j in zip(joints, model.joints):
        c = ob.rigid_body_constraint
        assert c.type == "GENERIC_SPRING"
        assert (c.object1, c.object2) == (bodies[j.rigid_a], bodies[j.rigid_b])
        # the empty's axes are the joint's X, Y, −Z (docs/mmd.md §4.3): rotation limits of X and Y swap lower
        # and upper and negate, Z's stay; translation limits of Z swap and negate
        lo = np.float32([c.limit_ang_x_lower, c.limit_ang_y_lower, c.limit_ang_z_lower])
        hi = np.float32([c.limit_ang_x_upper, c.limit_ang_y_upper, c.limit_ang_z_upper])
        np.testing.assert_array_equal(lo, [-j.rotation_upper[0], -j.rotation_upper[1], j.rotation_lower[2]])
        np.testing.assert_array_equal(hi, [-j.rotation_lower[0], -j.rotation_lower[1], j.rotation_upper[2]])
        stiff = np.float32([c.spring_stiffness_ang_x, c.spring_stiffness_ang_y, c.spring_stiffness_ang_z])
        np.testing.assert_array_equal(stiff, j.spring_rotation)
        lin = np.float32([c.limit_lin_x_upper, c.limit_lin_y_upper, c.limit_lin_z_lower])
        np.testing.assert_allclose(lin, j.translation_upper * [scale, scale, -scale], rtol=1e-6)
        # the empty's Y axis is MMD's Y, Blender's Z (up) turned by the joint's rotation
        mmd_y = np.array(blender_physics.euler_to_blender(j.rotation).to_matrix())[:, 2]
        np.testing.assert_allclose(np.array(ob.matrix_world.to_3x3().normalized())[:, 1], mmd_y, atol=1e-6)
    # excluded pairs that share a collision collection get disabled-collision constraints
    ncc = _objects("ncc")
    assert ncc and all(o.rigid_body_constraint.disable_collisions for o in ncc)
    for o in ncc:
        a, b = o.rigid_body_constraint.object1, o.rigid_body_constraint.object2
        assert any(x and y for x, y in zip(a.rigid_body.collision_collections, b.rigid_body.collision_collections))
    # unchanged: byte-identical
    out = tmp_path / "same.pmx"
    blender_io.export_pmx(bpy.context, str(out))
    assert_same_bytes(out.read_bytes(), src.read_bytes(), pmx.read)
    # one mass and one joint limit changed: those fields, and nothing else
    body = next(o for o in bodies if o.rigid_body.mass != 2.5)
    k_body = bodies.index(body)
    body.rigid_body.mass = 2.5
    joints[3].rigid_body_constraint.limit_ang_x_upper = 0.25
    out2 = tmp_path / "edited.pmx"
    blender_io.export_pmx(bpy.context, str(out2))
    edited = pmx.read(out2.read_bytes())
    assert _differences(model, edited) == [("rigid", k_body, "mass"), ("joint", 3, "rotation_lower")]
    assert edited.rigid_bodies[k_body].mass == np.float32(2.5)
    assert edited.joints[3].rotation_lower[0] == np.float32(-0.25)
    np.testing.assert_array_equal(edited.joints[3].rotation_lower[1:], model.joints[3].rotation_lower[1:])


def test_chain_operator_on_the_demo(clean_scene, tmp_path, addon):
    from skinbridge.app import demo
    from skinbridge.blender import scene as bscene
    from support.babylon import babylon_parse

    result = bscene.build_scene(bpy.context, demo.humanoid_scene(), "Humanoid")
    arm = result.armature
    chain = [demo.PREFIX + n for n in ("LeftArm", "LeftForeArm", "LeftHand")]
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="POSE")
    with bpy.context.temp_override(selected_pose_bones=[arm.pose.bones[n] for n in reversed(chain)]):
        assert bpy.ops.pose.skinbridge_mmd_physics_chain() == {"FINISHED"}
    bpy.ops.object.mode_set(mode="OBJECT")
    bodies, joints = blender_physics.physics_objects(arm)
    assert (len(bodies), len(joints)) == (3, 2)
    assert [b.rigid_body.kinematic for b in bodies] == [True, False, False]
    out = tmp_path / "chain.pmx"
    blender_io.export_pmx(bpy.context, str(out))
    model = pmx.read(out.read_bytes())
    names = [b.name_e or b.name for b in model.bones]  # (names too long for a VMD are shortened)
    assert [r.bone for r in model.rigid_bodies] == [names.index(n) for n in chain]
    assert [r.shape for r in model.rigid_bodies] == [2, 2, 2]
    assert [r.mode for r in model.rigid_bodies] == [0, 2, 2]
    assert [(j.rigid_a, j.rigid_b) for j in model.joints] == [(0, 1), (1, 2)]
    # each capsule lies along its bone: its axis (MMD local Y) from head to tail
    for r, n in zip(model.rigid_bodies, chain):
        bone = arm.data.bones[n]
        head = convert.positions_to_pmx(np.array(bone.head_local)[None], 0.08)[0]
        tail = convert.positions_to_pmx(np.array(bone.tail_local)[None], 0.08)[0]
        np.testing.assert_allclose(r.position, (head + tail) / 2, atol=1e-4)
        rot = np.array(blender_physics.euler_to_blender(r.rotation).to_matrix())
        axis = rot[:, 2]  # Blender local Z: the capsule's axis
        along = np.array(bone.tail_local) - np.array(bone.head_local)
        assert abs(np.dot(axis, along / np.linalg.norm(along))) > 0.999
        assert r.size[1] * 0.08 + 2 * r.size[0] * 0.08 == pytest.approx(np.linalg.norm(along), rel=1e-5)
    (parsed,) = babylon_parse([out]).values()
    assert "error" not in parsed and parsed["warnings"] == []
    assert (parsed["rigidBodies"], parsed["joints"]) == (3, 2)
    # a short simulation: the dynamic capsules (and the bones following them) move, nothing becomes NaN
    scene = bpy.context.scene
    scene.frame_set(1)
    start = {b.name: np.array(b.evaluated_get(bpy.context.evaluated_depsgraph_get()).matrix_world) for b in bodies}
    hand_start = np.array(arm.pose.bones[chain[-1]].matrix)
    for f in range(2, 31):
        scene.frame_set(f)
    deps = bpy.context.evaluated_depsgraph_get()
    end = {b.name: np.array(b.evaluated_get(deps).matrix_world) for b in bodies}
    moved = [float(np.abs(end[n][:3, 3] - start[n][:3, 3]).max()) for n in start]
    print(f"\nchain capsules moved by {moved} m over frames 1–30")
    assert all(np.isfinite(m).all() for m in end.values())
    assert moved[0] < 1e-6 and moved[1] > 1e-3 and moved[2] > 1e-3
    hand_end = np.array(arm.pose.bones[chain[-1]].matrix)
    assert np.isfinite(hand_end).all() and np.abs(hand_end - hand_start).max() > 1e-3
    assert math.isfinite(float(end[bodies[2].name][0, 0]))


def test_joint_turns_are_bounded_in_mmds_order(clean_scene):
    """A turn MMD's Bullet splits into X, Y, Z angles (a, b, c) in the joint's frame (R = Rx·Ry·Rz, Bullet's
    6-DOF order) is, in Blender, the turn Rx(−a)·Ry(−b)·Rz(c) in the joint empty's frame: Bullet there takes
    the angles in the same order, and each lies inside the constraint's limits exactly when MMD's does."""
    rng = np.random.default_rng(3)
    flip = Matrix(((1, 0, 0), (0, 0, 1), (0, 1, 0)))  # MMD ⇄ Blender axes (a reflection)
    arm = bpy.data.objects.new("model", bpy.data.armatures.new("model"))
    bpy.context.scene.collection.objects.link(arm)
    blender_physics.ensure_world(bpy.context)
    coll = blender_physics._physics_collection(bpy.context, arm)
    for _ in range(20):
        lower, upper = np.sort(rng.uniform(-1.2, 1.2, (2, 3)), axis=0).astype(np.float32)
        rec = pmx.PmxJoint(name="j", rotation=np.float32(rng.uniform(-3, 3, 3)), rotation_lower=lower,
                           rotation_upper=upper)
        ob = blender_physics.add_joint(bpy.context, coll, arm, rec, None, None, 1.0)
        c = ob.rigid_body_constraint
        lo = np.array([getattr(c, f"limit_ang_{a}_lower") for a in "xyz"])
        hi = np.array([getattr(c, f"limit_ang_{a}_upper") for a in "xyz"])
        frame = ob.matrix_basis.to_3x3().normalized()  # (no parent; matrix_world is not evaluated yet)
        joint = flip @ blender_physics.euler_to_blender(rec.rotation).to_matrix() @ flip  # in MMD's axes
        angles = rng.uniform(-1.4, 1.4, 3)
        turn = Matrix.Rotation(angles[0], 3, "X") @ Matrix.Rotation(angles[1], 3, "Y") @ \
            Matrix.Rotation(angles[2], 3, "Z")
        in_blender = flip @ joint @ turn @ joint.inverted() @ flip  # the same turn of body B, Blender's axes
        seen = np.array((frame.transposed() @ in_blender @ frame).to_euler("ZYX"))  # R = Rx·Ry·Rz
        np.testing.assert_allclose(seen, angles * [-1, -1, 1], atol=1e-5)
        inside_mmd = (angles >= lower) & (angles <= upper)
        assert ((seen >= lo - 1e-6) & (seen <= hi + 1e-6) == inside_mmd).all()
