"""The demo's MikuMikuDance rows: the humanoid exported as PMX, with the MMD rig, and its walk as VMD, read
back and checked."""
from __future__ import annotations

import os
import time

import numpy as np

from ...blender.mesh import evaluated_world_positions
from ...core.formatspec import DemoRow
from ..model import pmx
from ..model.validate import validate
from ..motion import vmd
from . import blender_io as pmx_io


def _check_pmx(path: str, mesh_ob) -> dict:
    """Read the PMX back: byte-identical rewrite, no validator error, and its vertices (MMD axes, 12.5 units a
    metre) equal to Blender's rest mesh."""
    data = open(path, "rb").read()
    m = pmx.read(data)
    errors = sum(f.severity == "error" for f in validate(m, for_export=True))
    pos = np.asarray(m.vertices["position"], np.float64)
    blender = pos[:, [0, 2, 1]] * 0.08  # MMD (x, y, z) · 0.08 → Blender (x, z, y)
    out = {"bytes": len(data), "vertices": len(pos), "triangles": len(m.indices) // 3, "bones": len(m.bones),
           "identical": pmx.write(m) == data, "errors": errors,
           "control": {"全ての親", "センター", "左足ＩＫ", "右足ＩＫ"} <= {b.name for b in m.bones}}
    if mesh_ob is not None:
        arm = mesh_ob.find_armature()
        arm.data.pose_position = "REST"
        rest = evaluated_world_positions(mesh_ob)
        arm.data.pose_position = "POSE"
        diag = float(np.linalg.norm(rest.max(0) - rest.min(0)))
        out["rest_error"] = float(np.abs(blender - rest).max()) / diag if len(pos) == len(rest) else float("inf")
    return out


def _check_vmd(path: str, pmx_path: str) -> dict:
    data = open(path, "rb").read()
    motion = vmd.read(data)
    bones = {b.name for b in pmx.read(open(pmx_path, "rb").read()).bones}
    names = vmd.key_names(motion.bone_keys["name"])
    return {"bytes": len(data), "identical": vmd.write(motion) == data, "keys": len(names),
            "tracks": len(set(names)), "frames": len(set(motion.bone_keys["frame"].tolist())),
            "unknown": sorted(set(names) - bones)}


def demo_rows(context, outdir: str, arm_ob, mesh_ob, options) -> tuple[list[DemoRow], list[str]]:
    """`options`: a fresh ConvertOptions of the demo's, for the package exporters."""
    rows: list[DemoRow] = []
    warnings: list[str] = []

    pmx_path = os.path.join(outdir, "Humanoid.pmx")
    t = time.perf_counter()
    warnings += pmx_io.export_pmx(context, pmx_path)
    elapsed = time.perf_counter() - t
    c = _check_pmx(pmx_path, mesh_ob)
    ok = c["identical"] and c["errors"] == 0 and c["rest_error"] < 1e-5 and c["bones"] == len(arm_ob.data.bones)
    rows.append(DemoRow("MikuMikuDance model (PMX 2.0)", os.path.relpath(pmx_path), c["bytes"], c["vertices"],
                 c["triangles"], c["bones"], round(elapsed, 2), f"re-read identical={c['identical']}; validator "
                 f"errors {c['errors']}; rest mesh vs Blender {c['rest_error']:.1e}·diag", ok))

    options.mmd_rig = True
    mmd_dir = os.path.join(outdir, "MMD")
    t = time.perf_counter()
    written, more = pmx_io.export_target(context, mmd_dir, "Humanoid", options)
    elapsed = time.perf_counter() - t
    warnings += more
    rigged = next(p for p in written if p.endswith(".pmx"))
    c = _check_pmx(rigged, None)
    ok = c["identical"] and c["errors"] == 0
    rows.append(DemoRow("PMX with --mmd-rig", os.path.relpath(rigged), c["bytes"], c["vertices"], c["triangles"],
                 c["bones"], round(elapsed, 2), f"re-read identical={c['identical']}; validator errors {c['errors']}; "
                 f"control bones {'present' if c['control'] else 'MISSING'}", ok and c["control"]))
    for vmd_path in (p for p in written if p.endswith(".vmd")):
        v = _check_vmd(vmd_path, rigged)
        ok = v["identical"] and not v["unknown"]
        rows.append(DemoRow("MikuMikuDance motion (VMD)", os.path.relpath(vmd_path), v["bytes"], "", "", v["tracks"],
                     round(elapsed, 2), f"re-read identical={v['identical']}; {v['keys']} bone keys on {v['frames']} "
                     f"frames, all on bones of the PMX: {not v['unknown']}", ok))
    return rows, warnings
