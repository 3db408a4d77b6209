"""Render time of the Fox rest sheet (`skinbridge render Fox.glb --rest`), headless Workbench.

    .venv/bin/python bench/render.py [--repeat N]

Prints seconds for: the glTF import into an empty scene, the first rest sheet (includes starting Workbench's
GPU context on this machine), the median of N more rest sheets, one posed sheet (Walk, frame 10) and a
five-frame contact sheet; then the sheet size and, per panel, the share of weighted-bone pixels inside the
mesh silhouette dilated by 3 px.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="skinbridge-bench-"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import numpy as np  # noqa: E402

FOX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "testdata", "gltf", "Fox.glb")


def _inside_share(px: np.ndarray, box, colours) -> float:
    x0, y0, x1, y1 = box
    p = px[y0:y1, x0:x1].astype(np.int64)
    mesh = (p[..., 0] == p[..., 1]) & (p[..., 1] == p[..., 2])
    bones = np.any([(p == np.array(c)).all(axis=2) for c in colours], axis=0)
    grown = mesh.copy()
    h, w = mesh.shape
    for dy in range(-3, 4):
        for dx in range(-3, 4):
            if dx * dx + dy * dy <= 9:
                shifted = np.zeros_like(mesh)
                shifted[max(-dy, 0):h + min(-dy, 0), max(-dx, 0):w + min(-dx, 0)] = \
                    mesh[max(dy, 0):h + min(dy, 0), max(dx, 0):w + min(dx, 0)]
                grown |= shifted
    return float((bones & grown).sum() / max(bones.sum(), 1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import bpy

    import skinbridge
    from skinbridge import formats
    from skinbridge.app import pipeline, render
    from skinbridge.app.options import ConvertOptions

    skinbridge.register()
    t = time.perf_counter()
    pipeline.reset_scene()
    formats.get("gltf").get("blender_import")(bpy.context, os.path.abspath(FOX), ConvertOptions())
    print(f"import Fox.glb:                 {time.perf_counter() - t:.3f} s")
    t = time.perf_counter()
    sheet = render.render_sheet(bpy.context, title="Fox.glb")
    print(f"rest sheet, first:              {time.perf_counter() - t:.3f} s")
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        sheet = render.render_sheet(bpy.context, title="Fox.glb")
        times.append(time.perf_counter() - t)
    print(f"rest sheet, median of {args.repeat}:       {statistics.median(times):.3f} s")
    t = time.perf_counter()
    render.render_sheet(bpy.context, title="Fox.glb", frames=[10], action="Walk")
    print(f"Walk frame 10 sheet:            {time.perf_counter() - t:.3f} s")
    t = time.perf_counter()
    render.render_sheet(bpy.context, title="Fox.glb", frames=render.parse_frames("0:16:4"), action="Walk")
    print(f"Walk frames 0:16:4 (5 rows):    {time.perf_counter() - t:.3f} s")
    h, w = sheet.pixels.shape[:2]
    weighted = [c for (side, is_weighted), c in render.PALETTE.items() if is_weighted]
    shares = ", ".join(f"{p.view} {100 * _inside_share(sheet.pixels, p.box, weighted):.1f} %" for p in sheet.panels)
    print(f"rest sheet {w}x{h}; weighted-bone pixels inside the silhouette (+3 px): {shares}")


if __name__ == "__main__":
    main()
    from skinbridge.blender.compat import exit_process  # Blender 4.5's wheel hangs in teardown

    exit_process(0)
