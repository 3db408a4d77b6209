"""The demo's SMD rows: the humanoid exported as a reference SMD and each action as an animation SMD, read
back and skinned with core/skinning.py against Blender's evaluated mesh."""
from __future__ import annotations

import os
import time

import numpy as np

from ...blender import action as bact
from ...blender.mesh import evaluated_world_positions
from ...core.formatspec import DemoRow
from . import blender_io, convert, smd


def _corners(mesh_ob) -> np.ndarray:
    co = evaluated_world_positions(mesh_ob)
    corner_vertex = np.empty(len(mesh_ob.data.loops), np.int32)
    mesh_ob.data.loops.foreach_get("vertex_index", corner_vertex)
    return co[corner_vertex]


def demo_rows(context, outdir: str, arm_ob, mesh_ob, options) -> tuple[list[DemoRow], list[str]]:
    rows: list[DemoRow] = []
    scene = context.scene
    saved_frame = scene.frame_current
    ad = arm_ob.animation_data
    saved = (ad.action, ad.action_slot) if ad is not None else None
    path = os.path.join(outdir, "Humanoid.smd")
    t0 = time.perf_counter()
    warnings = blender_io.export_reference(context, path)
    elapsed = time.perf_counter() - t0
    data = open(path, "rb").read()
    ref = smd.read(data)
    diag = float(np.linalg.norm(ref.triangles.positions.max(0) - ref.triangles.positions.min(0))) or 1.0
    single = len(mesh_ob.data.loops) == len(ref.triangles.parents)
    rest_error = float(np.abs(convert.skinned_corners(ref, None, 0) - _corners(mesh_ob)).max()) / diag \
        if single and ad is None else 0.0
    ok = len(ref.nodes) == len(arm_ob.data.bones) and rest_error < 1e-5
    rows.append(DemoRow("Valve SMD reference", os.path.relpath(path), len(data), len(ref.triangles.parents),
                        len(ref.triangles), len(ref.nodes), round(elapsed, 2),
                        f"{int(max(ref.triangles.link_counts.max(), 0))} links max; re-read", ok))
    try:
        t0 = time.perf_counter()
        written, more = blender_io.export_animations(context, outdir, arm_ob)
        elapsed = time.perf_counter() - t0
        warnings += more
        actions = {a.name: a for a in bact.armature_actions(arm_ob)}
        for anim_path in written:
            anim = smd.read(open(anim_path, "rb").read())
            act = actions.get(os.path.splitext(os.path.basename(anim_path))[0])
            worst = float("nan")
            if act is not None and single:
                bact.assign(arm_ob, act)
                start = int(act.frame_range[0])
                count = len(anim.skeleton)
                worst = 0.0
                for k in sorted({0, count // 2, count - 1}):
                    scene.frame_set(start + k)
                    worst = max(worst, float(np.abs(convert.skinned_corners(ref, anim, k)
                                                    - _corners(mesh_ob)).max()) / diag)
            ok = worst < 1e-4
            rows.append(DemoRow("Valve SMD animation", os.path.relpath(anim_path), os.path.getsize(anim_path), "", "",
                                len(anim.nodes), round(elapsed, 2),
                                f"{len(anim.skeleton)} frames skinned by core vs Blender, max error "
                                f"{worst:.1e}·diag", ok))
    finally:
        if saved is not None:
            ad.action, ad.action_slot = saved[0], saved[1]
        scene.frame_set(saved_frame)
    return rows, warnings
