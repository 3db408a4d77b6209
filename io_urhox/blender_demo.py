"""The demo's UrhoX rows: the humanoid exported as UMD2 and its walk as UANI, read back and checked against
Blender's evaluated mesh with core/skinning.py."""
from __future__ import annotations

import os
import time

import bpy
import numpy as np

from ..blender.mesh import evaluated_world_positions
from ..core import skinning
from ..core.formatspec import DemoRow
from ..core.transforms import BLENDER_TO_GLTF
from .model import convert as model_convert
from .model import umd2
from .model.blender_io import export_mdl
from .motion import convert as motion_convert
from .motion import uani
from .motion.blender_io import export_actions


def _check_umd2(path: str, arm_ob, mesh_ob) -> dict:
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
    expected = skinning.skin(v["POSITION0"], v["BLENDINDICES0"], v["BLENDWEIGHTS0"],
                             skinning.skin_matrices(world, bind))
    got = evaluated_world_positions(mesh_ob) @ BLENDER_TO_GLTF[:3, :3].T
    diag = float(np.linalg.norm(np.asarray(m.bbox_max) - m.bbox_min))
    bpy.context.scene.frame_set(1)
    return {"bytes": len(data), "vertices": len(v), "triangles": sum(g.lods[0].index_count // 3 for g in m.geometries),
            "bones": len(m.bones), "identical": umd2.write(m) == data,
            "skin_error": float(np.abs(got - expected).max()) / diag}


def _check_uani(mdl_path: str, ani_path: str, mesh_ob) -> dict:
    """Skin the written model with the written animation (core/skinning.py, the engine's slerp) at every
    scene frame and compare with Blender's evaluated mesh."""
    data = open(ani_path, "rb").read()
    anim_rec = uani.read(data)
    model = umd2.read(open(mdl_path, "rb").read())
    scene_core, _ = model_convert.to_scene(model, "check", "urhox")
    skel = scene_core.skeleton
    roots = {b.name for b in skel.bones if b.parent < 0}
    anim, _ = motion_convert.to_core(anim_rec, "check", "urhox", roots)
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


def demo_rows(context, outdir: str, arm_ob, mesh_ob, options) -> tuple[list[DemoRow], list[str]]:
    """`options`: a fresh ConvertOptions of the demo's, for the package exporters."""
    rows: list[DemoRow] = []

    path = os.path.join(outdir, "Humanoid.mdl")
    t = time.perf_counter()
    warnings = export_mdl(context, path)
    elapsed = time.perf_counter() - t
    c = _check_umd2(path, arm_ob, mesh_ob)
    ok = c["identical"] and c["skin_error"] < 1e-5 and c["bones"] == len(arm_ob.data.bones)
    rows.append(DemoRow("UrhoX model (UMD2)", os.path.relpath(path), c["bytes"], c["vertices"], c["triangles"],
                        c["bones"], round(elapsed, 2), f"re-read identical={c['identical']}; walk frame 9 skin error "
                        f"{c['skin_error']:.1e}·diag", ok))

    t = time.perf_counter()
    ani_paths, more = export_actions(context, outdir, arm_ob)
    elapsed = time.perf_counter() - t
    warnings += more
    for ani_path in (p for p in ani_paths if p.endswith(".ani")):
        c = _check_uani(path, ani_path, mesh_ob)
        ok = c["identical"] and c["skin_error"] < 1e-4
        rows.append(DemoRow("UrhoX animation (UANI v2)", os.path.relpath(ani_path), c["bytes"], "", "", c["tracks"],
                     round(elapsed, 2), f"re-read identical={c['identical']}; {c['frames']} frames skinned by "
                     f"core vs Blender, max error {c['skin_error']:.1e}·diag", ok))
    return rows, warnings
