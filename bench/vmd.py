"""VMD read and Blender import seconds for a 200-bone, 5,000-frame motion (every bone keyed on
every frame: 1,000,000 bone keys, non-linear curves), onto a 200-bone chain armature made as a PMX import
would make it. Prints the figures; `--bones`/`--frames`/`--step` change the size."""
from __future__ import annotations

import argparse
import math
import time

import numpy as np


def make_motion(bones: int, frames: int, step: int = 1):
    from skinbridge.io_pmx.motion import vmd

    f = np.arange(0, frames, step, dtype=np.uint32)
    n = bones * len(f)
    keys = vmd.new_bone_keys(n)
    rng = np.random.default_rng(7)
    keys["name"] = np.repeat(np.array([vmd.encode_name(f"bone{i:03d}") for i in range(bones)]), len(f))
    keys["frame"] = np.tile(f, bones)
    t = np.tile(f, bones).astype(np.float64) / 30
    phase = np.repeat(rng.uniform(0, 6, bones), len(f))
    angle = 0.8 * np.sin(t + phase)
    keys["rotation"] = np.stack([np.sin(angle / 2), 0 * t, 0 * t, np.cos(angle / 2)], 1)
    keys["position"] = np.stack([np.sin(t), np.cos(t), 0 * t], 1) * 2
    keys["interpolation"] = vmd.build_interpolation(np.tile(np.array([[30, 10, 90, 120]] * 4, np.uint8), (n, 1, 1)))
    return vmd.Motion(bone_keys=keys)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bones", type=int, default=200)
    ap.add_argument("--frames", type=int, default=5000)
    ap.add_argument("--step", type=int, default=1)
    a = ap.parse_args(argv)
    import os
    import tempfile

    import bpy
    import skinbridge
    from skinbridge.io_pmx.blender_side import blender_motion_import
    from skinbridge.io_pmx.motion import vmd

    data = vmd.write(make_motion(a.bones, a.frames, a.step))
    path = os.path.join(tempfile.mkdtemp(), "bench.vmd")
    with open(path, "wb") as fh:
        fh.write(data)
    t0 = time.perf_counter()
    m = vmd.read(data)
    t_read = time.perf_counter() - t0
    try:
        skinbridge.register()
    except ValueError:
        pass
    bpy.ops.wm.read_factory_settings(use_empty=True)
    arm = bpy.data.objects.new("rig", bpy.data.armatures.new("rig"))
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    prev = None
    for i in range(a.bones):
        eb = arm.data.edit_bones.new(f"bone{i:03d}")
        eb.head = (0, 0, 0.1 * i)
        eb.tail = (0, 0, 0.1 * i + 0.1)
        eb.parent = prev
        prev = eb
    bpy.ops.object.mode_set(mode="OBJECT")
    t0 = time.perf_counter()
    acts, _ = blender_motion_import.import_vmd(bpy.context, [path], arm)
    t_import = time.perf_counter() - t0
    points = sum(len(fc.keyframe_points) for layer in acts[0].layers for s in layer.strips for cb in s.channelbags
                 for fc in cb.fcurves)
    print(f"VMD {len(data) / 1e6:.1f} MB, {len(m.bone_keys)} bone keys ({a.bones} bones x "
          f"{math.ceil(a.frames / a.step)} frames)")
    print(f"read: {t_read:.3f} s")
    print(f"Blender import: {t_import:.2f} s ({points} keyframe points)")


if __name__ == "__main__":
    main()
    from skinbridge.blender.compat import exit_process  # Blender 4.5's wheel hangs in teardown

    exit_process(0)
