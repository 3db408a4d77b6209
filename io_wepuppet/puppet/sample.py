"""A flat image-plane puppet built in code: a grid of quads in the image's XY plane (pixels, centred), a chain
of bones along it, and a wave clip that bends the chain. Used by the demo and the benchmark; no bpy."""
from __future__ import annotations

import math

import numpy as np

from ..texture import tex
from . import convert, mdl


def wave_puppet(width: int = 256, height: int = 128, cols: int = 17, rows: int = 5, bones: int = 5,
                samples: int = 25, fps: float = 12.0, image: bool = True) -> tuple[mdl.Model, tex.Texture | None]:
    """(records, texture). The grid has cols × rows vertices; bone i stands at x = −w/2 + i·w/bones along the
    middle, each vertex weighted to the two bones around it; the clip turns every bone about Z by
    0.25·sin(2π k / (samples − 1) + i/2) (the last sample equals the first: a loop)."""
    xs = np.linspace(-width / 2, width / 2, cols)
    ys = np.linspace(-height / 2, height / 2, rows)
    gx, gy = np.meshgrid(xs, ys)
    n = cols * rows
    v = np.zeros(n, mdl.vertex_dtype(mdl.FORMAT_NARROW))
    v["position"][:, 0], v["position"][:, 1] = gx.ravel(), gy.ravel()
    v["uv0"][:, 0] = (gx.ravel() + width / 2) / width
    v["uv0"][:, 1] = (height / 2 - gy.ravel()) / height  # WE's V runs down the image
    step = width / bones
    f = np.clip((gx.ravel() + width / 2) / step, 0, bones - 1)
    lo = np.minimum(np.floor(f).astype(np.int64), bones - 1)
    hi = np.minimum(lo + 1, bones - 1)
    t = (f - lo).astype(np.float32)
    v["joints"][:, 0], v["joints"][:, 1] = lo, hi
    v["weights"][:, 0] = np.where(lo == hi, 1.0, 1.0 - t)
    v["weights"][:, 1] = np.where(lo == hi, 0.0, t)
    quads = (np.arange(rows - 1)[:, None] * cols + np.arange(cols - 1)[None, :]).ravel()
    tris = np.stack([quads, quads + 1, quads + cols, quads + 1, quads + cols + 1, quads + cols], axis=1).ravel()
    index_type = "<u4" if n > 0xFFFF else "<u2"
    mesh = mdl.Mesh(["materials/wave.json"], mdl.FLAG_INDEX32 if n > 0xFFFF else 0, None, None, mdl.FORMAT_NARROW,
                    v, tris.astype(index_type))
    skeleton = mdl.Skeleton(1, [])
    for i in range(bones):
        local = np.eye(4)
        local[0, 3] = -width / 2 if i == 0 else step
        skeleton.bones.append(mdl.Bone("Root" if i == 0 else f"Bone {i}", 1, i - 1,
                                       convert.to_column_major(local).astype("<f4")))
    k = np.arange(samples)
    s = np.zeros((bones, samples, 9), np.float32)
    for i in range(bones):
        s[i, :, 0] = -width / 2 if i == 0 else step
        s[i, :, 5] = 0.25 * np.sin(2 * math.pi * k / (samples - 1) + i / 2) if i else 0.0
        s[i, :, 6:9] = 1.0
    clip = mdl.Clip(1, 0, "Wave", "loop", np.float32(fps), samples - 1, 0, np.zeros(bones, "<u4"), s)
    model = mdl.Model("MDLV0013", mdl.FORMAT_NARROW, 1, [mesh],
                      [mdl.Section("MDLS0001", skeleton), mdl.Section("MDLA0001", mdl.Animations(1, [clip]))])
    texture = None
    if image:
        yy, xx = np.mgrid[0:height, 0:width]
        rgba = np.stack([(xx * 255 // max(width - 1, 1)), (yy * 255 // max(height - 1, 1)),
                         ((xx // 16 + yy // 16) % 2) * 200 + 55, np.full_like(xx, 255)], axis=-1).astype(np.uint8)
        texture = tex.from_rgba(rgba)
    return model, texture
