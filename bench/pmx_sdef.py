"""SDEF in Blender on a Luka-size model: Luka (27,607 vertices, 188 bones) with her 5,021 two-bone (BDEF2)
vertices turned into SDEF vertices (C, R0 and R1 at the middle of their two bones' heads), written by our writer.

    .venv/bin/python bench/pmx_sdef.py [--repeat N] [--frames F]

Prints the best of N runs, in seconds, of the import with SDEF on and off, the time per frame of playing F
frames of a motion that turns every bone of an SDEF vertex (scene.frame_set, the Armature modifier and, when
on, the SDEF handler and modifier), and whether export, posed with SDEF on, writes the file it read.
"""
from __future__ import annotations

import argparse
import math
import os
import runpy
import sys
import tempfile
import time

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="skinbridge-bench-"))
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LUKA = os.path.join(_ROOT, "..", "shared", "testdata", "pmx", "mmdtools_megurine_luka.pmx")


def _import_package():
    runpy.run_path(os.path.join(_ROOT, "bench", "_checkout.py"))  # this checkout's `skinbridge`


def sdef_luka(src: str, out: str) -> int:
    """Write Luka with her BDEF2 vertices as SDEF to `out`; returns how many."""
    import numpy as np

    from skinbridge.io_pmx.model import pmx

    with open(src, "rb") as f:
        model = pmx.read(f.read())
    v = model.vertices
    two = np.flatnonzero(v["deform"] == pmx.BDEF2)
    heads = np.array([b.position for b in model.bones], np.float32)
    c = 0.5 * (heads[v["bones"][two, 0]] + heads[v["bones"][two, 1]])
    v["deform"][two] = pmx.SDEF
    for key in ("sdef_c", "sdef_r0", "sdef_r1"):
        v[key][two] = c
    with open(out, "wb") as f:
        f.write(pmx.write(model))
    return len(two)


def _motion(arm, frames: int) -> None:
    """Every bone of an SDEF vertex turned 30° about its X at the motion's middle, at rest at both ends."""
    from skinbridge.io_pmx.blender_side import blender_sdef

    names = set()
    for ob in arm.children:
        data = blender_sdef._cache.get(ob.session_uid)
        if data is not None:
            names.update(data.bone_names)
    for name in sorted(names):
        pb = arm.pose.bones[name]
        pb.rotation_mode = "QUATERNION"
        for frame, angle in ((0, 0.0), (frames // 2, math.radians(30)), (frames, 0.0)):
            pb.rotation_quaternion = (math.cos(angle / 2), math.sin(angle / 2), 0, 0)
            pb.keyframe_insert("rotation_quaternion", frame=frame)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--frames", type=int, default=60)
    args = parser.parse_args()
    _import_package()
    import bpy

    from skinbridge.io_pmx.blender_side import blender_io, blender_sdef

    blender_sdef.register_handlers()
    work = tempfile.mkdtemp(prefix="skinbridge-bench-")
    src, out = os.path.join(work, "luka_sdef.pmx"), os.path.join(work, "out.pmx")
    count = sdef_luka(LUKA, src)
    print(f"model: Luka with {count} SDEF vertices")
    for on in (False, True):
        imports, frames = [], []
        for _ in range(args.repeat):
            bpy.ops.wm.read_factory_settings(use_empty=True)
            t = time.perf_counter()
            result = blender_io.import_pmx(bpy.context, src, physics=False, sdef=on)
            imports.append(time.perf_counter() - t)
            arm = result.armature
            scene = bpy.context.scene
            blender_sdef.set_on(arm, True)
            scene.frame_set(1)  # the handler reads the meshes once
            blender_sdef.set_on(arm, on)
            _motion(arm, args.frames)
            scene.frame_set(0)
            t = time.perf_counter()
            for f in range(1, args.frames + 1):
                scene.frame_set(f)
            frames.append((time.perf_counter() - t) / args.frames)
        state = "on" if on else "off"
        print(f"import, SDEF {state}: {min(imports):.3f} s (best of {args.repeat})")
        print(f"playback, SDEF {state}: {1000 * min(frames):.2f} ms per frame (best of {args.repeat})")
    bpy.context.scene.frame_set(args.frames // 2)
    blender_io.export_pmx(bpy.context, out)
    with open(src, "rb") as a, open(out, "rb") as b:
        print(f"export posed with SDEF on, byte-identical to the input: {a.read() == b.read()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
