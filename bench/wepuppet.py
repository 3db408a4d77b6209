#!/usr/bin/env python3
"""Wallpaper Engine rows: a flat puppet (io_wepuppet/puppet/sample.py) imported and exported by SkinBridge, against
Blender's bundled glTF import and export of the same model, measured in the same run; and the decode of a
4096² DXT5 `.tex` mip stored with LZ4.

usage: bench/wepuppet.py [--size S|L] [--json FILE]

    S   20,000 vertices, 20 bones, 250-sample clip
    L   200,000 vertices, 100 bones, 250-sample clip (the issue's row; the targets: import ≤ 0.5× and export
        ≤ 0.3× glTF's)

Each Blender step starts from factory settings with an empty scene; the glTF file is written from the puppet
SkinBridge imported (so both importers read the same model) and is read back into a fresh scene.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]

try:
    import skinbridge  # noqa: F401
except ImportError:  # outside tools/run: expose the checkout as `skinbridge`
    _link = pathlib.Path(tempfile.mkdtemp(prefix="skinbridge-pkg-"))
    (_link / "skinbridge").symlink_to(ROOT, target_is_directory=True)
    sys.path.insert(0, str(_link))
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="skinbridge-bl-user-"))

SIZES = {"S": dict(cols=200, rows=100, bones=20), "L": dict(cols=500, rows=400, bones=100)}
SAMPLES = 250


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def texture_decode_seconds() -> float:
    """A 4096² DXT5 mip as an LZ4 block of 16-byte literal runs and 16-byte matches (one sequence per two
    blocks), decompressed and decoded."""
    import numpy as np

    from skinbridge.io_wepuppet.texture import tex

    n_seq = 4096 * 4096 // 32
    rng = np.random.default_rng(1)
    seq = np.zeros((n_seq, 20), np.uint8)
    seq[:, 0], seq[:, 1], seq[:, 18] = 0xFC, 1, 16
    seq[:, 2:18] = rng.integers(0, 256, (n_seq, 16))
    src = seq.tobytes() + b"\x50abcde"
    t = tex.Texture(tex.FORMAT_DXT5, 0, 4096, 4096, 4096, 4096, 0, "TEXB0003", -1,
                    images=[[tex.Mip(4096, 4096, src, 1, 32 * n_seq + 5)]])
    data = tex.write(t)
    seconds, img = _timed(lambda: tex.mip_pixels(tex.read(data), 0, 0))
    assert img.shape == (4096, 4096, 4)
    return seconds


def measure(size: str, tmp: pathlib.Path, repeat: int = 1, timeout: float = 900) -> list[dict]:
    """Rows in bench/run's shape: the puppet's import and export beside glTF's of the same model (the fastest
    of `repeat` fresh processes), and the 4096² texture decode. Sizes other than S and L have no puppet."""
    import subprocess

    if size not in SIZES:
        return []
    tmp = pathlib.Path(tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    best = None
    for i in range(repeat):
        out = tmp / f"run{i}.json"
        p = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), "--size", size, "--json", str(out)],
                           capture_output=True, text=True, timeout=timeout)
        if p.returncode or not out.is_file():
            tail = (p.stderr or p.stdout).strip().splitlines()[-6:]
            return [{"size": size, "vertices": None, "format": "WE puppet", "stage": "import", "status": "error",
                     "error": " | ".join(tail) or f"exit {p.returncode}"}]
        got = json.loads(out.read_text())
        if best is None:
            best = got
        else:
            best["seconds"] = {k: min(v, got["seconds"][k]) for k, v in best["seconds"].items()}
    sec, nv = best["seconds"], best["vertices"]
    rows = []
    for stage in ("import", "export"):
        rows.append({"size": size, "vertices": nv, "format": "glTF (WE puppet)", "stage": stage, "status": "ok",
                     "seconds": sec[f"gltf {stage}"]})
        rows.append({"size": size, "vertices": nv, "format": "WE puppet", "stage": stage, "status": "ok",
                     "seconds": sec[stage], "x_gltf": sec[stage] / sec[f"gltf {stage}"]})
    rows.append({"size": size, "vertices": None, "format": "WE texture", "stage": "decode 4096²", "status": "ok",
                 "seconds": sec["tex 4096² DXT5 LZ4 decode"]})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="S", choices=sorted(SIZES))
    ap.add_argument("--json")
    args = ap.parse_args()
    import bpy

    from skinbridge.io_wepuppet.puppet import blender_io, convert, sample

    spec = SIZES[args.size]
    work = tempfile.mkdtemp(prefix="skinbridge-we-bench-")
    model, _ = sample.wave_puppet(width=2048, height=1024, samples=SAMPLES, fps=24.0, image=False, **spec)
    src = os.path.join(work, "bench_puppet.mdl")
    with open(src, "wb") as f:
        f.write(convert.write_model(model))
    vertices = len(model.meshes[0].vertices)
    rows = {}

    def fresh():
        bpy.ops.wm.read_factory_settings(use_empty=True)

    import skinbridge as sb

    fresh()
    try:
        sb.register()
    except ValueError:
        pass
    rows["import"], _ = _timed(lambda: blender_io.import_wepuppet(bpy.context, src))
    rows["export"], _ = _timed(lambda: blender_io.export_wepuppet(bpy.context, os.path.join(work, "out.mdl")))
    gltf = os.path.join(work, "same.glb")
    rows["gltf export"], _ = _timed(lambda: bpy.ops.export_scene.gltf(filepath=gltf, export_animations=True))
    fresh()
    rows["gltf import"], _ = _timed(lambda: bpy.ops.import_scene.gltf(filepath=gltf))
    rows["tex 4096² DXT5 LZ4 decode"] = texture_decode_seconds()
    ratio_in = rows["import"] / rows["gltf import"]
    ratio_out = rows["export"] / rows["gltf export"]
    print(f"Wallpaper Engine puppet, size {args.size}: {vertices} vertices, {spec['bones']} bones, "
          f"{SAMPLES}-sample clip")
    for k, v in rows.items():
        print(f"  {k:28s} {v:7.2f} s")
    print(f"  import / glTF import  {ratio_in:.2f} (target ≤ 0.5)")
    print(f"  export / glTF export  {ratio_out:.2f} (target ≤ 0.3)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"size": args.size, "vertices": vertices, "bones": spec["bones"], "samples": SAMPLES,
                       "seconds": rows, "import_ratio": ratio_in, "export_ratio": ratio_out}, f, indent=1)
    return 0


if __name__ == "__main__":
    from skinbridge.blender.compat import exit_process  # Blender 4.5's wheel hangs in teardown

    exit_process(main())
