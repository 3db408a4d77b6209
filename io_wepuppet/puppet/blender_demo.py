"""The demo's Wallpaper Engine rows: a flat image-plane puppet built in code (bone chain, wave clip) written as
a project (models/, materials/), and the demo's humanoid exported with `convert --to wepuppet`; each read back
and checked."""
from __future__ import annotations

import json
import os
import time

import numpy as np

from ...core.fileio import write_atomic
from ...core.formatspec import DemoRow
from ...core.skinning import evaluate_animation, skin_mesh
from ..texture import tex
from . import blender_io, convert, mdl, sample


def _deform_error(model: mdl.Model) -> float:
    """Largest difference (fraction of the bounding-box diagonal) over every sample between the core skinning
    of the mapped scene and the file-space evaluation of docs/wallpaper_engine.md §3, mapped to Blender axes."""
    scene, _ = convert.to_scene(model, "check", textures=False)
    mesh, clip, anim = scene.meshes[0], model.animations.clips[0], scene.animations[0]
    world_bind = convert.world_binds(model.skeleton)
    v = model.meshes[0].vertices
    diag = float(np.linalg.norm(np.ptp(mesh.positions, axis=0))) or 1.0
    worst = 0.0
    parents = [b.parent for b in model.skeleton.bones]
    for k in range(clip.length + 1):
        local = convert.sample_matrices(clip.samples[:, k])
        world = np.empty_like(local)
        for i, p in enumerate(parents):
            world[i] = local[i] if p < 0 else world[p] @ local[i]
        skin = world @ np.linalg.inv(world_bind)
        p = np.concatenate([v["position"].astype(np.float64), np.ones((len(v), 1))], axis=1)
        moved = np.einsum("vk,vkij,vj->vi", v["weights"].astype(np.float64), skin[v["joints"].astype(np.int64)], p)
        ref = convert.METRES_PER_UNIT * moved[:, :3] @ convert.AXES.T
        ours = skin_mesh(mesh, scene.skeleton, evaluate_animation(scene.skeleton, anim, k / float(clip.fps)))
        worst = max(worst, float(np.abs(ours - ref).max()) / diag)
    return worst


def demo_rows(context, outdir: str, arm_ob, mesh_ob, options) -> tuple[list[DemoRow], list[str]]:
    rows: list[DemoRow] = []
    warnings: list[str] = []
    project = os.path.join(outdir, "WallpaperEngine")
    t = time.perf_counter()
    model, texture = sample.wave_puppet()
    data = convert.write_model(model)
    path = os.path.join(project, "models", "wave_puppet.mdl")
    write_atomic(path, data)
    tex_path = os.path.join(project, "materials", "wave.tex")
    write_atomic(tex_path, tex.write(texture))
    write_atomic(os.path.join(project, "materials", "wave.json"),
                 json.dumps({"passes": [{"blending": "translucent", "cullmode": "nocull", "depthtest": "disabled",
                                         "depthwrite": "disabled", "shader": "genericimage2",
                                         "textures": ["wave"]}]}, indent=1).encode("utf-8"))
    write_atomic(os.path.join(project, "models", "wave.json"),
                 json.dumps({"autosize": True, "material": "materials/wave.json",
                             "puppet": "models/wave_puppet.mdl"}, indent="\t").encode("utf-8"))
    elapsed = time.perf_counter() - t
    back = mdl.read(open(path, "rb").read())
    identical = mdl.write(back) == data and len(data) == mdl.PAD_SIZE
    error = _deform_error(back)
    t_back = tex.read(open(tex_path, "rb").read())
    mips_ok = all(np.array_equal(tex.mip_pixels(t_back, 0, j), m)
                  for j, m in enumerate(tex.make_mips(tex.mip_pixels(t_back, 0, 0))))
    clip = back.animations.clips[0]
    rows.append(DemoRow("Wallpaper Engine puppet (MDLV0013), built in code", os.path.relpath(path), len(data),
                        len(back.meshes[0].vertices), len(back.meshes[0].indices) // 3, len(back.skeleton.bones),
                        round(elapsed, 2), f"re-read identical={identical}; wave clip {clip.length + 1} samples "
                        f"deform vs reference {error:.1e}·diag; .tex mips floor-mean={mips_ok}",
                        identical and error < 1e-5 and mips_ok))

    t = time.perf_counter()
    written, more = blender_io.export_target(context, os.path.join(outdir, "WallpaperEngine_humanoid"), "Humanoid",
                                             options)
    elapsed = time.perf_counter() - t
    warnings += more
    mdl_path = next(p for p in written if p.endswith(".mdl"))
    raw = open(mdl_path, "rb").read()
    m = mdl.read(raw)
    identical = mdl.write(m) == raw
    bones = len(m.skeleton.bones) if m.skeleton else 0
    rows.append(DemoRow("Wallpaper Engine puppet (convert --to wepuppet)", os.path.relpath(mdl_path), len(raw),
                        sum(len(x.vertices) for x in m.meshes), sum(len(x.indices) // 3 for x in m.meshes), bones,
                        round(elapsed, 2), f"re-read identical={identical}; {len(written)} files; clips "
                        f"{[c.name for c in m.animations.clips] if m.animations else []}",
                        identical and bones == len(arm_ob.data.bones)))
    return rows, warnings
