#!/usr/bin/env python3
"""A textured Wallpaper Engine puppet imported by SkinBridge against Blender's glTF import of the same model.

usage: bench/wetex_import.py [--side N] [--repeat R] [--profile] [--json FILE]

The puppet (io_wepuppet/puppet/sample.py's wave grid, 20,000 vertices) is four meshes, each drawn by its own
material whose `.tex` is a DXT5 texture of N² pixels (default 2048) with LZ4-packed mips, written by our `.tex`
writer (`tex.write`, `tex.lz4_compress`): a figure on a transparent ground, as puppet textures are, its DXT5
blocks made here. SkinBridge's import is timed alone and followed by reading each image's pixels once; the glTF
file is exported from that scene (so both importers read the same model and pixels) and imported into an empty
scene, followed by reading each image's pixels once (Blender decodes an image file only when its pixels are
first asked for). Both are run R times (default 3) in turn, each step's fastest time kept. `--profile` prints
where SkinBridge's first import spends its time (cProfile, cumulative).
"""
from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import os
import pathlib
import pstats
import runpy
import tempfile
import time

runpy.run_path(str(pathlib.Path(__file__).resolve().parent / "_checkout.py"))
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="skinbridge-bl-user-"))

import numpy as np  # noqa: E402

TEXTURES = 4


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def picture(side: int, seed: int) -> np.ndarray:
    """(side, side, 4) uint8: a soft figure (an ellipse of gradients and grain) on a transparent ground."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:side, 0:side].astype(np.float32) / side
    inside = ((xx - 0.5) / 0.35) ** 2 + ((yy - 0.5) / 0.45) ** 2 < 1
    rgba = np.zeros((side, side, 4), np.uint8)
    grain = rng.integers(0, 24, (side, side))
    rgba[..., 0] = np.clip(255 * xx + grain, 0, 255)
    rgba[..., 1] = np.clip(255 * yy + grain, 0, 255)
    rgba[..., 2] = (seed * 60) % 256
    rgba[..., 3] = 255
    rgba[~inside] = 0
    return rgba


def dxt5_blocks(rgba: np.ndarray) -> bytes:
    """A plain DXT5 encoding (colour and alpha endpoints the block's extremes, indices by projection)."""
    h, w = rgba.shape[:2]
    b = rgba.reshape(h // 4, 4, w // 4, 4, 4).transpose(0, 2, 1, 3, 4).reshape(-1, 16, 4).astype(np.int32)
    n = len(b)
    out = np.zeros((n, 16), np.uint8)
    a = b[..., 3]
    a0, a1 = a.max(1), a.min(1)
    out[:, 0], out[:, 1] = a0, a1
    span = np.maximum(a0 - a1, 1)[:, None]
    t = np.clip(np.rint((a0[:, None] - a) * 7 / span), 0, 7).astype(np.int64)  # 0 → a0, 7 → a1
    code = np.select([t == 0, t == 7], [0, 1], t + 1)  # eight-value palette order: a0, a1, then in between
    code = np.where((a0 == a1)[:, None], 0, code).astype(np.uint64)
    bits = (code << (3 * np.arange(16, dtype=np.uint64))).sum(1, dtype=np.uint64)
    out[:, 2:8] = (bits[:, None] >> (8 * np.arange(6, dtype=np.uint64)) & np.uint64(255)).astype(np.uint8)
    rgb = b[..., :3]
    lum = rgb @ np.array([2, 4, 1])
    hi = np.take_along_axis(rgb, lum.argmax(1)[:, None, None], 1)[:, 0]
    lo = np.take_along_axis(rgb, lum.argmin(1)[:, None, None], 1)[:, 0]

    def pack(c):
        return (c[:, 0] >> 3) << 11 | (c[:, 1] >> 2) << 5 | c[:, 2] >> 3

    c0, c1 = pack(hi), pack(lo)
    swap = c0 < c1
    c0, c1 = np.where(swap, c1, c0), np.where(swap, c0, c1)
    hi, lo = np.where(swap[:, None], lo, hi), np.where(swap[:, None], hi, lo)
    d = (hi - lo)[:, None, :]
    s = ((rgb - lo[:, None, :]) * d).sum(2) / np.maximum((d * d).sum(2), 1)
    step = np.clip(np.rint((1 - s) * 3), 0, 3).astype(np.int64)  # 0 → c0, 3 → c1
    idx = np.choose(step, [0, 2, 3, 1]).astype(np.uint32)
    idx = np.where((c0 == c1)[:, None], 0, idx)
    word = (idx << (2 * np.arange(16, dtype=np.uint32))).sum(1, dtype=np.uint32)
    out[:, 8], out[:, 9], out[:, 10], out[:, 11] = c0 & 255, c0 >> 8, c1 & 255, c1 >> 8
    out[:, 12:16] = word.astype("<u4").view(np.uint8).reshape(n, 4)
    return out.tobytes()


def texture_file(side: int, seed: int) -> bytes:
    from skinbridge.io_wepuppet.texture import tex

    mips = []
    for level in tex.make_mips(picture(side, seed)):
        if level.shape[0] % 4 or level.shape[1] % 4:
            break
        raw = dxt5_blocks(level)
        mips.append(tex.Mip(level.shape[1], level.shape[0], tex.lz4_compress(raw), 1, len(raw)))
    t = tex.Texture(tex.FORMAT_DXT5, 2, side, side, side, side, 0, "TEXB0003", -1, images=[mips])
    return tex.write(t)


def write_project(folder: str, side: int) -> str:
    """models/bench_puppet.mdl with four meshes, materials/tex<k>.json and materials/tex<k>.tex."""
    from skinbridge.io_wepuppet.puppet import convert, sample
    from skinbridge.io_wepuppet.texture.material import material_doc

    model, _ = sample.wave_puppet(width=2048, height=1024, cols=100, rows=50, bones=10, samples=25, image=False)
    base = model.meshes[0]
    meshes = []
    for k in range(TEXTURES):
        v = base.vertices.copy()
        v["position"][:, 1] += 1100 * k
        meshes.append(dataclasses.replace(base, materials=[f"materials/tex{k}.json"], vertices=v))
    model.meshes = meshes
    os.makedirs(os.path.join(folder, "models"))
    os.makedirs(os.path.join(folder, "materials"))
    for k in range(TEXTURES):
        with open(os.path.join(folder, "materials", f"tex{k}.json"), "w") as f:
            json.dump(material_doc(f"tex{k}"), f)
        with open(os.path.join(folder, "materials", f"tex{k}.tex"), "wb") as f:
            f.write(texture_file(side, k))
    path = os.path.join(folder, "models", "bench_puppet.mdl")
    with open(path, "wb") as f:
        f.write(convert.write_model(model))
    return path


def _keep(rows: dict, key: str, seconds: float) -> None:
    rows[key] = min(rows.get(key, seconds), seconds)


def read_pixels(images) -> None:
    for img in images:
        px = np.empty(img.size[0] * img.size[1] * img.channels, np.float32)
        img.pixels.foreach_get(px)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--side", type=int, default=2048)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    import bpy

    import skinbridge as sb
    from skinbridge.io_wepuppet.puppet import blender_io

    work = tempfile.mkdtemp(prefix="skinbridge-wetex-bench-")
    setup, src = _timed(lambda: write_project(work, args.side))
    rows = {}

    def fresh():
        bpy.ops.wm.read_factory_settings(use_empty=True)
        try:
            sb.register()
        except ValueError:
            pass

    gltf = os.path.join(work, "same.glb")
    prof = cProfile.Profile() if args.profile else None
    for k in range(args.repeat):  # alternating, each step's fastest kept: a busy machine slows both alike
        fresh()
        if prof is not None and k == 0:
            prof.enable()
        seconds, _ = _timed(lambda: blender_io.import_wepuppet(bpy.context, src))
        if prof is not None and k == 0:
            prof.disable()
        _keep(rows, "import", seconds)
        images = [i for i in bpy.data.images if i.get("skinbridge_we_tex")]
        assert len(images) == TEXTURES, [i.name for i in bpy.data.images]
        _keep(rows, "read pixels", _timed(lambda: read_pixels(images))[0])
        if k == 0:
            bpy.ops.export_scene.gltf(filepath=gltf, export_animations=False)
        fresh()
        _keep(rows, "gltf import", _timed(lambda: bpy.ops.import_scene.gltf(filepath=gltf))[0])
        images = [i for i in bpy.data.images if i.type == "IMAGE"]
        assert len(images) == TEXTURES, [i.name for i in bpy.data.images]
        _keep(rows, "gltf read pixels", _timed(lambda: read_pixels(images))[0])
    rows["gltf import + read pixels"] = rows["gltf import"] + rows["gltf read pixels"]
    ours = rows["import"]
    theirs = rows["gltf import + read pixels"]
    print(f"puppet of {TEXTURES} meshes, {TEXTURES} DXT5 LZ4 textures of {args.side}² (written in {setup:.1f} s)")
    for k, v in rows.items():
        print(f"  {k:28s} {v:7.2f} s")
    print(f"  import / (glTF import + read pixels)  {ours / theirs:.2f} (target ≤ 1.5)")
    print(f"  (import + read pixels) / (glTF import + read pixels)  {(ours + rows['read pixels']) / theirs:.2f}")
    if prof is not None:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"side": args.side, "seconds": rows, "ratio": ours / theirs}, f, indent=1)
    return 0


if __name__ == "__main__":
    from skinbridge.blender.compat import exit_process  # Blender 4.5's wheel hangs in teardown

    exit_process(main())
