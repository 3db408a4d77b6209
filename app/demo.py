"""`skinbridge demo`: a skinned T-pose humanoid with Mixamo's bone names (without its `mixamorig:` namespace, so
every name fits the 15 bytes of a VMD and the demo converts without a warning) and a walk, built in code,
exported with every exporter we have, read back and checked; prints a table, warnings on stderr."""
from __future__ import annotations

import math
import os
import sys
import time

import bpy
import numpy as np

from .. import formats
from ..core import model as cm
from ..blender import compat
from ..blender import scene as bscene
from ..core.formatspec import DemoRow
from . import pipeline
from .options import ConvertOptions

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
PREFIX = ""  # the --mmd-rig bone map knows Mixamo names with and without the namespace
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
    "LeftUpLeg": (0, 30, 0.0), "RightUpLeg": (0, 30, math.pi),
    "LeftLeg": (0, 25, 0.5), "RightLeg": (0, 25, math.pi + 0.5),
    "LeftArm": (2, 25, math.pi), "RightArm": (2, 25, 0.0), "Spine1": (1, 6, 0.0),
}


def add_walk(arm_ob, frames: int = 24) -> bpy.types.Action:
    """A looping walk: legs, knees and arms swing, hips bob; keyed on quaternion F-curves (channelbags)."""
    action = bpy.data.actions.new("Walk")
    slot = action.slots.new(id_type="OBJECT", name=arm_ob.name)
    bag = compat.channelbag_for_slot(action, slot)
    steps = np.arange(0, frames + 1, 3, dtype=np.float64)
    phase = 2 * np.pi * steps / frames
    for bone, (axis, amp, ph) in WALK.items():
        name = PREFIX + bone
        half = np.radians(amp) * np.sin(phase + ph) / 2
        if bone.endswith("Leg") and not bone.endswith("UpLeg"):
            # knees bend one way only, the way human knees do: the shin swings back (+Y, the model faces −Y),
            # i.e. about the knee's local X (world −X) by a negative angle; never quite straight (2° at least)
            half = -np.radians(2 + amp * (1 + np.sin(phase + ph)) / 2) / 2
        q = np.zeros((len(steps), 4))
        q[:, 0] = np.cos(half)
        q[:, 1 + axis] = np.sin(half)
        for c in range(4):
            fc = compat.new_fcurve(bag, f'pose.bones["{name}"].rotation_quaternion', index=c, group_name=name)
            fc.keyframe_points.add(len(steps))
            fc.keyframe_points.foreach_set("co", np.stack([steps + 1, q[:, c]], 1).reshape(-1).astype(np.float32))
            fc.update()
    fc = compat.new_fcurve(bag, f'pose.bones["{PREFIX}Hips"].location', index=1, group_name=PREFIX + "Hips")
    bob = 0.03 * np.cos(2 * phase)
    fc.keyframe_points.add(len(steps))
    fc.keyframe_points.foreach_set("co", np.stack([steps + 1, bob], 1).reshape(-1).astype(np.float32))
    fc.update()
    arm_ob.animation_data_create()
    arm_ob.animation_data.action = action
    arm_ob.animation_data.action_slot = slot
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, frames + 1
    return action




def _skin_texture(mesh_ob, outdir: str) -> None:
    """A small image, saved as Skin.png in the demo's folder, on the skin material: every exporter has a texture
    to write or reference (the Wallpaper Engine puppet warns about a material without one)."""
    size = 8
    img = bpy.data.images.new("Skin", size, size)
    shade = np.linspace(0.85, 1.0, size, dtype=np.float32)[:, None] * np.array([0.8, 0.6, 0.5], np.float32)
    px = np.ones((size, size, 4), np.float32)
    px[:, :, :3] = shade[:, None, :]
    img.pixels.foreach_set(px.reshape(-1))
    img.filepath_raw = os.path.join(outdir, "Skin.png")
    img.file_format = "PNG"
    img.save()
    mat = mesh_ob.data.materials[0]
    if mat.node_tree is None:  # Blender 5 gives every material a node tree (and deprecates use_nodes)
        mat.use_nodes = True
    nodes = mat.node_tree.nodes
    bsdf = next(n for n in nodes if n.type == "BSDF_PRINCIPLED")
    node = nodes.new("ShaderNodeTexImage")
    node.image = img
    mat.node_tree.links.new(node.outputs["Color"], bsdf.inputs["Base Color"])


def run_demo(output: str | None) -> int:
    """Build the humanoid, hand it to every format with a demo (the registry's `demo` capability), print the
    table; 0 when every row is ok. The caller (cli.py's `_bpy`) has registered the add-on."""
    outdir = os.path.abspath(output or "skinbridge-demo")
    os.makedirs(outdir, exist_ok=True)
    pipeline.reset_scene()
    t0 = time.perf_counter()
    result = bscene.build_scene(bpy.context, humanoid_scene(), "Humanoid")
    arm_ob = result.armature
    mesh_ob = next(o for o in result.objects if o.type == "MESH")
    _skin_texture(mesh_ob, outdir)
    bpy.context.scene.render.fps = 30  # the walk's keys on whole frames of MMD's 30 fps: a VMD without resampling
    add_walk(arm_ob)
    bpy.context.scene.frame_set(1)
    print(f"built humanoid: {len(arm_ob.data.bones)} bones, {len(mesh_ob.data.vertices)} vertices, "
          f"action Walk ({time.perf_counter() - t0:.2f} s)")
    rows, warnings = [], []
    for spec in formats.with_capability("demo"):
        try:
            more_rows, more = spec.get("demo")(bpy.context, outdir, arm_ob, mesh_ob, ConvertOptions(target=spec.target))
        except Exception as e:  # a format whose demo fails is a FAILED row, the others still run
            more_rows, more = [DemoRow(spec.label, "", 0, checked=f"{type(e).__name__}: {e}", ok=False)], []
        rows += more_rows
        warnings += [f"{spec.name}: {w}" for w in more]
        bpy.context.scene.frame_set(1)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    header = ("exporter", "file", "bytes", "verts", "tris", "bones/tracks", "time", "checked", "result")
    table = [(r.exporter, r.path, r.size, r.vertices, r.triangles, r.bones, f"{r.seconds:.2f}s", r.checked,
              "ok" if r.ok else "FAILED") for r in rows]
    widths = [max(len(str(r[i])) for r in table + [header]) for i in range(len(header))]
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths)))
    for r in table:
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)))
    return 0 if rows and all(r.ok for r in rows) else 1
