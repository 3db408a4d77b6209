"""SDEF in Blender against babylon-mmd's SDEF CPU skinning (`SdefMesh.applySkeleton`, tests/js/mmd_sdef_skinning.mjs):
an arm our PMX writer makes (upper arm, elbow, wrist; a tube whose vertices around the elbow carry SDEF weights),
posed by a VMD our writer makes (the upper arm turned, the elbow bent 90°), physics off, no IK. Blender's
evaluated mesh equals babylon-mmd's SDEF positions within 1e-4 of the model's height, where linear blend
skinning (babylon-mmd's `getPositionData(true, true)`) is more than 1e-3 of the height off; with the switch off
Blender gives the linear blend; export writes the file it read, SDEF on and posed."""
from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from mathutils import Quaternion, Vector  # noqa: E402
from skinbridge.io_pmx.blender_side import blender_io, blender_motion_import, blender_sdef  # noqa: E402
from skinbridge.io_pmx.model import pmx  # noqa: E402
from skinbridge.io_pmx.model.convert import positions_to_pmx  # noqa: E402
from skinbridge.io_pmx.model.pmx import BoneFlag  # noqa: E402
from skinbridge.io_pmx.motion import vmd  # noqa: E402
from support.sidebar import StandInPanel  # noqa: E402
from support.tools import JS, NODE_MODULES, node_with_babylon  # noqa: E402

pytestmark = pytest.mark.blender

FLAGS = int(BoneFlag.ROTATABLE | BoneFlag.VISIBLE | BoneFlag.OPERABLE)
TOP, ELBOW, BOTTOM = 16.0, 12.0, 8.0  # the arm hangs along MMD's -Y: shoulder, elbow, wrist
HEIGHT = TOP - BOTTOM
RING, RADIUS, STEP = 8, 0.6, 0.5


def arm_model() -> pmx.PmxModel:
    """Three bones and a tube of rings every 0.5 units: above 13 on the upper arm, below 11 on the forearm, in
    between SDEF on both (w0 from 1 to 0) about the elbow, with R0 and R1 off the axis."""
    m = pmx.PmxModel(name="SDEF腕", name_e="sdef arm")
    for name, y, parent in (("腕", TOP, -1), ("ひじ", ELBOW, 0), ("手首", BOTTOM, 1)):
        m.bones.append(pmx.PmxBone(name=name, name_e="", position=np.array([0, y, 0], np.float32), parent=parent,
                                   layer=0, flags=FLAGS, tail_offset=np.array([0, -4, 0], np.float32)))
    ys = np.arange(TOP, BOTTOM - 1e-6, -STEP)
    angles = 2 * np.pi * np.arange(RING) / RING
    n = len(ys) * RING
    v = np.zeros(n, pmx.vertex_dtype(0))
    y = np.repeat(ys, RING)
    a = np.tile(angles, len(ys))
    v["position"] = np.stack([RADIUS * np.cos(a), y, RADIUS * np.sin(a)], axis=1)
    v["normal"] = np.stack([np.cos(a), np.zeros(n), np.sin(a)], axis=1)
    v["uv"] = np.stack([a / (2 * np.pi), (TOP - y) / HEIGHT], axis=1)
    v["edge_scale"] = 1
    v["bones"] = -1
    upper, lower = y >= ELBOW + 1, y <= ELBOW - 1
    mid = ~upper & ~lower
    v["deform"] = np.where(mid, pmx.SDEF, pmx.BDEF1)
    v["bones"][:, 0] = np.where(lower, 1, 0)
    v["bones"][mid, 1] = 1
    w0 = ((y[mid] - (ELBOW - 1)) / 2).astype(np.float32)
    v["weights"][:, 0] = 1
    v["weights"][mid, 0] = w0
    v["weights"][mid, 1] = np.float32(1) - w0
    v["sdef_c"][mid] = (0, ELBOW, 0)
    v["sdef_r0"][mid] = (0.05, ELBOW + 0.5, 0.1)
    v["sdef_r1"][mid] = (-0.05, ELBOW - 0.5, -0.1)
    m.vertices = v
    tris = []
    for r in range(len(ys) - 1):
        for k in range(RING):
            p, q = r * RING + k, r * RING + (k + 1) % RING
            tris += [p, q, q + RING, p, q + RING, p + RING]
    m.indices = np.array(tris, np.int32)
    m.materials = [pmx.PmxMaterial("腕", "arm", draw_flags=0x01, index_count=len(tris))]
    return m


def bend_motion() -> vmd.Motion:
    """Frame 0: 腕 turned 0.5 rad about MMD's Z, ひじ bent 90° about MMD's X."""
    keys = vmd.new_bone_keys(2)
    for rec, name, axis, angle in ((keys[0], "腕", 2, 0.5), (keys[1], "ひじ", 0, math.pi / 2)):
        rec["name"] = vmd.encode_name(name)
        rec["frame"] = 0
        q = [0.0, 0.0, 0.0, math.cos(angle / 2)]
        q[axis] = math.sin(angle / 2)
        rec["rotation"] = q
    m = vmd.Motion(bone_keys=keys)
    m.model_name = "SDEF腕"
    return m


def babylon_skinning(model_path, motion_path) -> dict:
    node = node_with_babylon()
    done = subprocess.run([node, str(JS / "mmd_sdef_skinning.mjs"), str(NODE_MODULES), str(model_path),
                           str(motion_path), "0"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout[done.stdout.index("{"):])
    assert [m["kind"] for m in out["meshes"]] == ["SdefMesh"]
    return {k: np.array(out["meshes"][0][k], np.float64).reshape(-1, 3) for k in ("rest", "linear", "sdef")}


def in_file_order(rest: np.ndarray, values: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """babylon-mmd's per-vertex `values` reordered to the file's vertices, matched by rest position."""
    at = {tuple(np.round(p, 4)): i for i, p in enumerate(rest)}
    order = np.array([at[tuple(np.round(p, 4))] for p in positions.astype(np.float64)])
    return values[order]


def evaluated_mmd(ob, scale: float) -> np.ndarray:
    depsgraph = bpy.context.evaluated_depsgraph_get()
    me = ob.evaluated_get(depsgraph).data
    co = np.empty(len(me.vertices) * 3, np.float32)
    me.vertices.foreach_get("co", co)
    world = np.array(ob.matrix_world)
    co = co.reshape(-1, 3).astype(np.float64) @ world[:3, :3].T + world[:3, 3]
    return positions_to_pmx(co, scale)


@pytest.mark.default_leg
def test_sdef_matches_babylon_mmd(clean_scene, tmp_path):
    model = arm_model()
    data = pmx.write(model)
    model_path, motion_path = tmp_path / "sdef_arm.pmx", tmp_path / "bend.vmd"
    model_path.write_bytes(data)
    motion_path.write_bytes(vmd.write(bend_motion()))
    ref = babylon_skinning(model_path, motion_path)
    file_pos = model.vertices["position"]
    linear = in_file_order(ref["rest"], ref["linear"], file_pos)
    sdef = in_file_order(ref["rest"], ref["sdef"], file_pos)
    is_sdef = model.vertices["deform"] == pmx.SDEF
    # the pose bends the SDEF vertices away from the linear blend, and only them
    assert np.abs(sdef - linear)[is_sdef].max() > 1e-3 * HEIGHT
    np.testing.assert_allclose(sdef[~is_sdef], linear[~is_sdef], atol=1e-5 * HEIGHT)

    context = bpy.context
    result = blender_io.import_pmx(context, str(model_path), physics=False)
    arm = result.armature
    ob = next(o for o in result.objects if o.type == "MESH")
    assert ob.modifiers[-1].name == blender_sdef.MODIFIER and blender_sdef.is_on(arm)
    scale = float(blender_io.blender_mmd.stored_extras(arm, [])["scale"])
    blender_motion_import.import_vmd(context, [str(motion_path)], arm)
    context.scene.frame_set(1)
    context.scene.frame_set(0)
    got = evaluated_mmd(ob, scale)
    assert np.abs(got - sdef).max() < 1e-4 * HEIGHT, np.abs(got - sdef).max()

    assert blender_sdef.set_on(arm, False) == 1  # the switch: linear blend skinning alone
    context.view_layer.update()
    off = evaluated_mmd(ob, scale)
    assert np.abs(off - linear).max() < 1e-4 * HEIGHT
    assert np.abs(off - sdef)[is_sdef].max() > 1e-3 * HEIGHT
    blender_sdef.set_on(arm, True)
    context.view_layer.update()
    np.testing.assert_allclose(evaluated_mmd(ob, scale), got, atol=1e-6 * HEIGHT)

    # export reads the model at rest without the correction: the file it read, byte for byte
    out = tmp_path / "out.pmx"
    blender_io.export_pmx(context, str(out))
    assert out.read_bytes() == data
    np.testing.assert_allclose(evaluated_mmd(ob, scale), got, atol=1e-6 * HEIGHT)  # and SDEF shows again


def test_import_option_and_panel_switch(clean_scene, tmp_path):
    """File › Import with SDEF off makes the modifier switched off; the MMD panel's button switches it on."""
    path = tmp_path / "sdef_arm.pmx"
    path.write_bytes(pmx.write(arm_model()))
    assert bpy.ops.import_scene.skinbridge_pmx(filepath=str(path), sdef=False) == {"FINISHED"}
    arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    assert len(blender_sdef.modifiers(arm)) == 1 and not blender_sdef.is_on(arm)
    bpy.context.view_layer.objects.active = arm
    panel = bpy.types.VIEW3D_PT_skinbridge_mmd_sdef
    assert panel.poll(bpy.context)
    panel.draw(StandInPanel(), bpy.context)  # fails on an operator Blender does not have
    assert bpy.ops.skinbridge.mmd_sdef_toggle() == {"FINISHED"}
    assert blender_sdef.is_on(arm)
    assert bpy.ops.skinbridge.mmd_sdef_toggle() == {"FINISHED"}
    assert not blender_sdef.is_on(arm)


def test_rotations_match_mathutils():
    """The per-frame quaternion, slerp and rotation helpers against mathutils, half turns and near-identity too."""
    rng = np.random.default_rng(54)
    axes = rng.normal(size=(40, 3))
    angles = np.concatenate([rng.uniform(-np.pi, np.pi, 34), [np.pi, -np.pi, 1e-9, 0.0, np.pi - 1e-7, 3.0]])
    qs = [Quaternion(Vector(a).normalized(), float(t)) for a, t in zip(axes, angles)]
    mats = np.array([np.array(q.to_matrix()) * rng.uniform(0.5, 2.0) for q in qs])  # a uniform scale divides out
    got = blender_sdef.quaternions(mats)
    want = np.array([tuple(q.normalized()) for q in qs])
    assert np.minimum(np.abs(got - want).max(axis=1), np.abs(got + want).max(axis=1)).max() < 1e-6
    t = rng.uniform(0, 1, 20)
    mixed = blender_sdef.slerp(want[:20], want[20:], t)
    v = rng.normal(size=(20, 3))
    turned = blender_sdef.rotate(mixed, v)
    for k in range(20):
        a, b = qs[k].normalized(), qs[20 + k].normalized()
        if a.dot(b) < 0:
            b = -b
        ref = a.slerp(b, float(t[k])) @ Vector(v[k])
        assert np.abs(np.array(ref) - turned[k]).max() < 1e-6
