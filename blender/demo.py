"""`skinbridge demo`: a skinned T-pose humanoid with Mixamo bone names and a walk, built in code, exported
with every exporter we have, read back and checked; prints a table."""
from __future__ import annotations

import math
import os
import time

import bpy
import numpy as np
from bpy_extras import anim_utils

from ..core import model as cm
from ..core import skinning
from ..core.transforms import BLENDER_TO_GLTF
from . import scene as bscene
from .mesh import evaluated_world_positions

# name, parent, head (Blender axes: Z up, the character faces −Y, metres)
HUMANOID = [
    ("Hips", None, (0.0, 0.0, 1.0)),
    ("Spine", "Hips", (0.0, 0.0, 1.1)),
    ("Spine1", "Spine", (0.0, 0.0, 1.25)),
    ("Spine2", "Spine1", (0.0, 0.0, 1.4)),
    ("Neck", "Spine2", (0.0, 0.0, 1.55)),
    ("Head", "Neck", (0.0, 0.0, 1.65)),
]
for side, sx in (("Left", 1.0), ("Right", -1.0)):
    HUMANOID += [
        (f"{side}Shoulder", "Spine2", (0.05 * sx, 0.0, 1.5)),
        (f"{side}Arm", f"{side}Shoulder", (0.18 * sx, 0.0, 1.5)),
        (f"{side}ForeArm", f"{side}Arm", (0.45 * sx, 0.0, 1.5)),
        (f"{side}Hand", f"{side}ForeArm", (0.7 * sx, 0.0, 1.5)),
        (f"{side}UpLeg", "Hips", (0.1 * sx, 0.0, 0.95)),
        (f"{side}Leg", f"{side}UpLeg", (0.1 * sx, 0.0, 0.52)),
        (f"{side}Foot", f"{side}Leg", (0.1 * sx, 0.0, 0.1)),
        (f"{side}ToeBase", f"{side}Foot", (0.1 * sx, -0.12, 0.02)),
    ]
PREFIX = "mixamorig:"
TAIL = {"Head": (0.0, 0.0, 1.85), "LeftHand": (0.85, 0.0, 1.5), "RightHand": (-0.85, 0.0, 1.5),
        "LeftToeBase": (0.1, -0.2, 0.02), "RightToeBase": (-0.1, -0.2, 0.02)}


def _frame(head, tail) -> np.ndarray:
    """A bone matrix whose Y axis points from head to tail (Blender's bone convention)."""
    y = np.subtract(tail, head).astype(np.float64)
    y /= np.linalg.norm(y)
    hint = np.array([0.0, -1.0, 0.0]) if abs(y[1]) < 0.9 else np.array([0.0, 0.0, 1.0])
    x = np.cross(y, hint)
    x /= np.linalg.norm(x)
    z = np.cross(x, y)
    m = np.eye(4)
    m[:3, 0], m[:3, 1], m[:3, 2], m[:3, 3] = x, y, z, head
    return m


def humanoid_scene() -> cm.Scene:
    names = [n for n, _, _ in HUMANOID]
    heads = {n: np.array(h) for n, _, h in HUMANOID}
    first_child = {}
    for n, p, _ in HUMANOID:
        if p and p not in first_child:
            first_child[p] = n
    skel = cm.Skeleton(name="Humanoid")
    tails = {}
    for n, p, h in HUMANOID:
        tail = np.array(TAIL[n]) if n in TAIL else heads[first_child[n]]
        if n.endswith("Shoulder") or n == "Spine2":
            tail = heads[first_child[n]] if n.endswith("Shoulder") else heads["Neck"]
        tails[n] = tail
        skel.bones.append(cm.Bone(PREFIX + n, names.index(p) if p else -1, _frame(h, tail), np.zeros(3),
                                  np.array([1.0, 0, 0, 0]), np.ones(3)))
    skel.set_rest_from_binds()

    # A box around every bone; vertices at the head end share weight with the parent.
    pos, tris, joints, weights = [], [], [], []
    for i, (n, p, _) in enumerate(HUMANOID):
        head, tail = heads[n], tails[n]
        frame = _frame(head, tail)
        length = np.linalg.norm(tail - head)
        r = 0.07 if ("Leg" in n or "Spine" in n or n == "Hips") else 0.05 if "Arm" in n else 0.04
        if n == "Head":
            r = 0.1
        base = len(pos)
        for k, along in enumerate((0.0, length)):
            for sx, sz in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                pos.append(frame[:3, :3] @ np.array([sx * r, along, sz * r]) + head)
                pi = names.index(p) if p else i
                if k == 0 and p:
                    joints.append((i, pi, 0, 0))
                    weights.append((0.6, 0.4, 0, 0))
                else:
                    joints.append((i, 0, 0, 0))
                    weights.append((1.0, 0, 0, 0))
        quads = [(0, 1, 2, 3), (4, 7, 6, 5), (0, 4, 5, 1), (1, 5, 6, 2), (2, 6, 7, 3), (3, 7, 4, 0)]
        for a, b, c, d in quads:
            tris += [(base + a, base + c, base + b), (base + a, base + d, base + c)]
    pos = np.array(pos, dtype=np.float32)
    tri = np.array(tris, dtype=np.int32)
    # outward normals per vertex (from the box centre axis), UVs from a cylindrical projection
    mesh = cm.Mesh("Humanoid", pos, tri, joints=np.array(joints, np.int32), weights=np.array(weights, np.float32))
    mesh.uvs = [("UVMap", np.stack([(np.arctan2(pos[:, 0], -pos[:, 1]) / (2 * np.pi)) + 0.5, pos[:, 2] / 2], 1)
                 .astype(np.float32))]
    mesh.material_indices = np.zeros(len(tri), np.int32)
    mesh.materials = [0]
    return cm.Scene(name="Humanoid", skeleton=skel, meshes=[mesh],
                    materials=[cm.Material("Skin", base_color=(0.8, 0.6, 0.5, 1.0), roughness=0.6)])


WALK = {  # bone: (axis index of rotation_euler-equivalent, amplitude degrees, phase)
    "LeftUpLeg": (0, 30, 0.0), "RightUpLeg": (0, 30, math.pi), "LeftLeg": (0, 25, 0.5), "RightLeg": (0, 25, math.pi + 0.5),
    "LeftArm": (2, 25, math.pi), "RightArm": (2, 25, 0.0), "Spine1": (1, 6, 0.0),
}


def add_walk(arm_ob, frames: int = 24) -> bpy.types.Action:
    """A looping walk: legs, knees and arms swing, hips bob; keyed on quaternion F-curves (channelbags)."""
    action = bpy.data.actions.new("Walk")
    slot = action.slots.new(id_type="OBJECT", name=arm_ob.name)
    bag = anim_utils.action_ensure_channelbag_for_slot(action, slot)
    steps = np.arange(0, frames + 1, 3, dtype=np.float64)
    phase = 2 * np.pi * steps / frames
    for bone, (axis, amp, ph) in WALK.items():
        name = PREFIX + bone
        half = np.radians(amp) * np.sin(phase + ph) / 2
        if bone.endswith("Leg") and not bone.endswith("UpLeg"):
            half = np.radians(amp) * (1 + np.sin(phase + ph)) / 4  # knees bend one way only
        q = np.zeros((len(steps), 4))
        q[:, 0] = np.cos(half)
        q[:, 1 + axis] = np.sin(half)
        for c in range(4):
            fc = bag.fcurves.new(f'pose.bones["{name}"].rotation_quaternion', index=c, group_name=name)
            fc.keyframe_points.add(len(steps))
            fc.keyframe_points.foreach_set("co", np.stack([steps + 1, q[:, c]], 1).reshape(-1).astype(np.float32))
            fc.update()
    fc = bag.fcurves.new(f'pose.bones["{PREFIX}Hips"].location', index=1, group_name=PREFIX + "Hips")
    bob = 0.03 * np.cos(2 * phase)
    fc.keyframe_points.add(len(steps))
    fc.keyframe_points.foreach_set("co", np.stack([steps + 1, bob], 1).reshape(-1).astype(np.float32))
    fc.update()
    arm_ob.animation_data_create()
    arm_ob.animation_data.action = action
    arm_ob.animation_data.action_slot = slot
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, frames + 1
    return action




def _check_umd2(path: str, arm_ob, mesh_ob) -> dict:
    from ..io_urhox import umd2

    data = open(path, "rb").read()
    m = umd2.read(data)
    v = m.vertex_buffers[0].vertices
    # Pose the written skeleton as Blender poses the armature at frame 9 and skin with core/skinning.py.
    bpy.context.scene.frame_set(9)
    index = {b.name: i for i, b in enumerate(m.bones)}
    world = np.zeros((len(m.bones), 4, 4))
    arm_world = np.array(arm_ob.matrix_world)
    for pb in arm_ob.pose.bones:
        i = index[pb.name]
        rest = arm_world @ np.array(pb.bone.matrix_local)
        pose = arm_world @ np.array(pb.matrix)
        bind_file = np.linalg.inv(np.vstack([m.bones[i].offset.reshape(3, 4), [0, 0, 0, 1]]))
        world[i] = BLENDER_TO_GLTF @ pose @ np.linalg.inv(rest) @ np.linalg.inv(BLENDER_TO_GLTF) @ bind_file
    bind = np.array([np.linalg.inv(np.vstack([b.offset.reshape(3, 4), [0, 0, 0, 1]])) for b in m.bones])
    expected = skinning.skin(v["POSITION0"], v["BLENDINDICES0"], v["BLENDWEIGHTS0"], skinning.skin_matrices(world, bind))
    got = evaluated_world_positions(mesh_ob) @ BLENDER_TO_GLTF[:3, :3].T
    diag = float(np.linalg.norm(np.asarray(m.bbox_max) - m.bbox_min))
    bpy.context.scene.frame_set(1)
    return {"bytes": len(data), "vertices": len(v), "triangles": sum(g.lods[0].index_count // 3 for g in m.geometries),
            "bones": len(m.bones), "identical": umd2.write(m) == data,
            "skin_error": float(np.abs(got - expected).max()) / diag}


def _check_uani(mdl_path: str, ani_path: str, mesh_ob) -> dict:
    """Skin the written model with the written animation (core/skinning.py, the engine's slerp) at every
    scene frame and compare with Blender's evaluated mesh."""
    from ..io_urhox import ani_convert, convert, uani, umd2

    data = open(ani_path, "rb").read()
    anim_rec = uani.read(data)
    model = umd2.read(open(mdl_path, "rb").read())
    scene_core, _ = convert.to_scene(model, "check", "urhox")
    skel = scene_core.skeleton
    roots = {b.name for b in skel.bones if b.parent < 0}
    anim, _ = ani_convert.to_core(anim_rec, "check", "urhox", roots)
    mesh = scene_core.meshes[0]
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    start = bpy.context.scene.frame_start
    worst = 0.0
    frames = range(start, bpy.context.scene.frame_end + 1)
    diag = float(np.linalg.norm(np.asarray(model.bbox_max) - model.bbox_min))
    for f in frames:
        bpy.context.scene.frame_set(f)
        world = skinning.evaluate_animation(skel, anim, (f - start) / fps)
        expected = skinning.skin_mesh(mesh, skel, world)
        got = evaluated_world_positions(mesh_ob)
        worst = max(worst, float(np.abs(got - expected).max()) / diag)
    bpy.context.scene.frame_set(start)
    return {"bytes": len(data), "tracks": len(anim_rec.tracks), "frames": len(frames),
            "identical": uani.write(anim_rec) == data, "skin_error": worst}


def _check_pmx(path: str, mesh_ob) -> dict:
    """Read the PMX back: byte-identical rewrite, no validator error, and its vertices (MMD axes, 12.5 units a
    metre) equal to Blender's rest mesh."""
    from ..io_pmx import pmx
    from ..io_pmx.validate import validate

    data = open(path, "rb").read()
    m = pmx.read(data)
    errors = sum(f.severity == "error" for f in validate(m, for_export=True))
    pos = np.asarray(m.vertices["position"], np.float64)
    blender = pos[:, [0, 2, 1]] * 0.08  # MMD (x, y, z) · 0.08 → Blender (x, z, y)
    out = {"bytes": len(data), "vertices": len(pos), "triangles": len(m.indices) // 3, "bones": len(m.bones),
           "identical": pmx.write(m) == data, "errors": errors,
           "control": {"全ての親", "センター", "左足ＩＫ", "右足ＩＫ"} <= {b.name for b in m.bones}}
    if mesh_ob is not None:
        arm = mesh_ob.find_armature()
        arm.data.pose_position = "REST"
        rest = evaluated_world_positions(mesh_ob)
        arm.data.pose_position = "POSE"
        diag = float(np.linalg.norm(rest.max(0) - rest.min(0)))
        out["rest_error"] = float(np.abs(blender - rest).max()) / diag if len(pos) == len(rest) else float("inf")
    return out


def _check_vmd(path: str, pmx_path: str) -> dict:
    from ..io_pmx import pmx, vmd

    data = open(path, "rb").read()
    motion = vmd.read(data)
    bones = {b.name for b in pmx.read(open(pmx_path, "rb").read()).bones}
    names = vmd.key_names(motion.bone_keys["name"])
    return {"bytes": len(data), "identical": vmd.write(motion) == data, "keys": len(names),
            "tracks": len(set(names)), "frames": len(set(motion.bone_keys["frame"].tolist())),
            "unknown": sorted(set(names) - bones)}


def run_demo(output: str | None) -> int:
    outdir = os.path.abspath(output or "skinbridge-demo")
    os.makedirs(outdir, exist_ok=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    from .. import register

    try:
        register()
    except ValueError:
        pass
    t0 = time.perf_counter()
    result = bscene.build_scene(bpy.context, humanoid_scene(), "Humanoid")
    arm_ob = result.armature
    mesh_ob = next(o for o in result.objects if o.type == "MESH")
    add_walk(arm_ob)
    bpy.context.scene.frame_set(1)
    print(f"built humanoid: {len(arm_ob.data.bones)} bones, {len(mesh_ob.data.vertices)} vertices, "
          f"action Walk ({time.perf_counter() - t0:.2f} s)")
    rows = []
    from ..io_urhox import blender_io

    path = os.path.join(outdir, "Humanoid.mdl")
    t = time.perf_counter()
    warnings = blender_io.export_mdl(bpy.context, path)
    elapsed = time.perf_counter() - t
    c = _check_umd2(path, arm_ob, mesh_ob)
    ok = c["identical"] and c["skin_error"] < 1e-5 and c["bones"] == len(HUMANOID)
    rows.append(("UrhoX model (UMD2)", os.path.relpath(path), c["bytes"], c["vertices"], c["triangles"], c["bones"],
                 f"{elapsed:.2f}s", f"re-read identical={c['identical']}; walk frame 9 skin error "
                 f"{c['skin_error']:.1e}·diag", "ok" if ok else "FAILED"))
    from ..io_urhox.blender_ani import export_actions

    t = time.perf_counter()
    ani_paths, more = export_actions(bpy.context, outdir, arm_ob)
    elapsed = time.perf_counter() - t
    warnings += more
    for ani_path in (p for p in ani_paths if p.endswith(".ani")):
        c = _check_uani(path, ani_path, mesh_ob)
        ok = c["identical"] and c["skin_error"] < 1e-4
        rows.append(("UrhoX animation (UANI v2)", os.path.relpath(ani_path), c["bytes"], "", "", c["tracks"],
                     f"{elapsed:.2f}s", f"re-read identical={c['identical']}; {c['frames']} frames skinned by "
                     f"core vs Blender, max error {c['skin_error']:.1e}·diag", "ok" if ok else "FAILED"))
    from ..io_pmx import blender_io as pmx_io

    pmx_path = os.path.join(outdir, "Humanoid.pmx")
    t = time.perf_counter()
    warnings += pmx_io.export_pmx(bpy.context, pmx_path)
    elapsed = time.perf_counter() - t
    c = _check_pmx(pmx_path, mesh_ob)
    ok = c["identical"] and c["errors"] == 0 and c["rest_error"] < 1e-5 and c["bones"] == len(HUMANOID)
    rows.append(("MikuMikuDance model (PMX 2.0)", os.path.relpath(pmx_path), c["bytes"], c["vertices"],
                 c["triangles"], c["bones"], f"{elapsed:.2f}s", f"re-read identical={c['identical']}; validator "
                 f"errors {c['errors']}; rest mesh vs Blender {c['rest_error']:.1e}·diag", "ok" if ok else "FAILED"))
    from ..convert_options import ConvertOptions

    mmd_dir = os.path.join(outdir, "MMD")
    t = time.perf_counter()
    written, more = pmx_io.export_target(bpy.context, mmd_dir, "Humanoid", ConvertOptions(mmd_rig=True))
    elapsed = time.perf_counter() - t
    warnings += more
    rigged = next(p for p in written if p.endswith(".pmx"))
    c = _check_pmx(rigged, None)
    ok = c["identical"] and c["errors"] == 0
    rows.append(("PMX with --mmd-rig", os.path.relpath(rigged), c["bytes"], c["vertices"], c["triangles"],
                 c["bones"], f"{elapsed:.2f}s", f"re-read identical={c['identical']}; validator errors {c['errors']}; "
                 f"control bones {'present' if c['control'] else 'MISSING'}", "ok" if ok and c["control"] else "FAILED"))
    for vmd_path in (p for p in written if p.endswith(".vmd")):
        v = _check_vmd(vmd_path, rigged)
        ok = v["identical"] and not v["unknown"]
        rows.append(("MikuMikuDance motion (VMD)", os.path.relpath(vmd_path), v["bytes"], "", "", v["tracks"],
                     f"{elapsed:.2f}s", f"re-read identical={v['identical']}; {v['keys']} bone keys on {v['frames']} "
                     f"frames, all on bones of the PMX: {not v['unknown']}", "ok" if ok else "FAILED"))
    for w in warnings:
        print(f"warning: {w}")
    header = ("exporter", "file", "bytes", "verts", "tris", "bones/tracks", "time", "checked", "result")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths)))
    for r in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)))
    return 0 if all(r[-1] == "ok" for r in rows) else 1
