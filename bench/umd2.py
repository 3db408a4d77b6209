"""UMD2 speed on a synthetic skinned mesh: 200,000 vertices, 100 bones, 4 random float weights per vertex.

    bash tools/run bench            (or: .venv/bin/python bench/umd2.py [--vertices N])

Prints seconds for: core → UMD2 bytes (mapping + codec), UMD2 bytes → core (codec + mapping), Blender import
of that file, and Blender export of the imported scene.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="skinbridge-bench-"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import numpy as np  # noqa: E402


def synthetic_scene(n_vertices: int, n_bones: int = 100, seed: int = 1):
    from skinbridge.core import model as cm

    rng = np.random.default_rng(seed)
    cols = 500
    rows = max(2, n_vertices // cols)
    x, y = np.meshgrid(np.linspace(0, 5, cols), np.linspace(0, 2, rows))
    pos = np.stack([x.ravel(), y.ravel(), 0.1 * np.sin(x.ravel() * 3)], 1).astype(np.float32)
    a = (np.arange(rows - 1)[:, None] * cols + np.arange(cols - 1)[None, :]).ravel()
    tris = np.concatenate([np.stack([a, a + 1, a + cols + 1], 1), np.stack([a, a + cols + 1, a + cols], 1)])
    skel = cm.Skeleton("Bench")
    for i in range(n_bones):
        bind = np.eye(4)
        bind[:3, 3] = (5.0 * i / n_bones, 1.0, 0.0)
        skel.bones.append(cm.Bone(f"bone{i:03d}", i - 1 if i else -1, bind, np.zeros(3), np.array([1.0, 0, 0, 0]),
                                  np.ones(3)))
    skel.set_rest_from_binds()
    w = rng.random((len(pos), 4)).astype(np.float32)
    w /= w.sum(1, keepdims=True)
    joints = np.stack([rng.choice(n_bones, 4, replace=False) for _ in range(1)] * len(pos)).astype(np.int32)
    joints = (joints + rng.integers(0, n_bones, (len(pos), 1))) % n_bones
    mesh = cm.Mesh("Bench", pos, tris.astype(np.int32), normals=np.tile([0, 0, 1], (len(pos), 1)).astype(np.float32),
                   uvs=[("UVMap", pos[:, :2] / 5)], joints=joints, weights=w,
                   material_indices=np.zeros(len(tris), np.int32), materials=[0])
    return cm.Scene("Bench", skel, [mesh], [cm.Material("M")])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vertices", type=int, default=200_000)
    args = ap.parse_args()
    from skinbridge.io_urhox import convert, umd2

    scene = synthetic_scene(args.vertices)
    rows = []
    t = time.perf_counter()
    model, _ = convert.from_scene(scene)
    data = umd2.write(model)
    rows.append(("core → UMD2 bytes (mapping + codec)", time.perf_counter() - t))
    t = time.perf_counter()
    convert.to_scene(umd2.read(data))
    rows.append(("UMD2 bytes → core (codec + mapping)", time.perf_counter() - t))

    import bpy

    import skinbridge
    from skinbridge.io_urhox import blender_io

    skinbridge.register()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.mdl")
        with open(path, "wb") as f:
            f.write(data)
        t = time.perf_counter()
        blender_io.import_mdl(bpy.context, path)
        rows.append(("Blender import of the file", time.perf_counter() - t))
        t = time.perf_counter()
        blender_io.export_mdl(bpy.context, os.path.join(tmp, "again.mdl"))
        rows.append(("Blender export of the imported scene", time.perf_counter() - t))
    print(f"UMD2 bench: {len(scene.meshes[0].positions):,} vertices, {len(scene.meshes[0].triangles):,} triangles, "
          f"{len(scene.skeleton.bones)} bones, 4 weights per vertex, file {len(data):,} bytes")
    for label, seconds in rows:
        print(f"  {label:<40} {seconds:8.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
