"""Print `.ani` export and import seconds for a 100-bone, 1,000-frame action (every bone keyed on every frame
in location, quaternion rotation and scale), in both formats, best of a few runs.

usage: .venv/bin/python bench/ani.py [--bones N] [--frames N] [--repeat N]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import runpy
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="skinbridge-bl-user-"))

runpy.run_path(str(ROOT / "bench" / "_checkout.py"))  # `skinbridge` importable before its first import

import bpy  # noqa: E402

from skinbridge.blender import action as bact  # noqa: E402
from skinbridge.bench.timing import best_of  # noqa: E402
from skinbridge.core import model as cm  # noqa: E402
from skinbridge.core.transforms import quat_normalize  # noqa: E402
from skinbridge.io_urhox.motion import blender_io as motion_io  # noqa: E402


def make_armature(n: int):
    arm = bpy.data.armatures.new("Bench")
    ob = bpy.data.objects.new("Bench", arm)
    bpy.context.scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    bpy.ops.object.mode_set(mode="EDIT")
    ebs = []
    for i in range(n):
        eb = arm.edit_bones.new(f"bone{i:03d}")
        eb.head = (i * 0.01, 0, 0)
        eb.tail = (i * 0.01, 0.1, 0)
        if i:
            eb.parent = ebs[(i - 1) // 2]  # a binary tree
        ebs.append(eb)
    bpy.ops.object.mode_set(mode="OBJECT")
    return ob


def make_animation(names, frames: int, fps: float) -> cm.Animation:
    rng = np.random.default_rng(1)
    times = np.arange(frames) / fps
    anim = cm.Animation("Bench", (frames - 1) / fps)
    for name in names:
        t = np.cumsum(rng.normal(0, 0.01, (frames, 3)), axis=0)
        r = quat_normalize(np.array([1.0, 0, 0, 0]) + np.cumsum(rng.normal(0, 0.01, (frames, 4)), axis=0))
        s = 1 + 0.1 * np.sin(times[:, None] * np.array([1.0, 2.0, 3.0]))
        anim.tracks.append(cm.Track(name, times, t, times.copy(), r, times.copy(), s))
    return anim


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bones", type=int, default=100)
    ap.add_argument("--frames", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    context = bpy.context
    ob = make_armature(args.bones)
    fps = bact.fps_of(context.scene)
    anim = make_animation([b.name for b in ob.data.bones], args.frames, fps)
    act, _ = bact.build_action(ob, anim, fps)
    bact.assign(ob, act)
    keys = sum(len(fc.keyframe_points) for cb in bact._channelbags(act) for fc in cb.fcurves)
    print(f"action: {args.bones} bones, {args.frames} frames, {keys} keys on "
          f"{sum(len(cb.fcurves) for cb in bact._channelbags(act))} F-curves")
    with tempfile.TemporaryDirectory() as out:
        for fmt in ("urhox", "urho3d"):
            folder = os.path.join(out, fmt)
            seconds, (written, _) = best_of(args.repeat, lambda: motion_io.export_actions(
                context, folder, ob, fmt, actions=[act]))
            size = os.path.getsize(written[0])
            print(f"{fmt:7s} export: {seconds:.3f} s ({size} bytes)")

            def imp():
                acts, _ = motion_io.import_ani(context, [written[0]], ob, assign=False)
                return acts

            times = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                acts = imp()
                times.append(time.perf_counter() - t)
                for a in acts:
                    bpy.data.actions.remove(a)
            print(f"{fmt:7s} import: {min(times):.3f} s")
    return 0


if __name__ == "__main__":
    from skinbridge.blender.compat import exit_process  # Blender 4.5's wheel hangs in teardown

    exit_process(main())
