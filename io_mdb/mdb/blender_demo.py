"""The demo's NWN2 row: the humanoid exported as an MDB (one SKIN per mesh, skeleton named by the options or
`Humanoid_skel`), read back and checked."""
from __future__ import annotations

import os
import time

import numpy as np

from ...blender.mesh import evaluated_world_positions
from ...core.formatspec import DemoRow
from . import bones as mdb_bones
from . import blender_io, check, mdb

SKELETON = "Humanoid_skel"


def demo_rows(context, outdir: str, arm_ob, mesh_ob, options) -> tuple[list[DemoRow], list[str]]:
    path = os.path.join(outdir, "Humanoid.mdb")
    skeleton = options.skeleton or SKELETON
    t = time.perf_counter()
    warnings = blender_io.export_mdb(context, path, skeleton=skeleton, limit_weights=True)
    elapsed = time.perf_counter() - t
    data = open(path, "rb").read()
    m = mdb.read(data)
    skins = m.of_type("SKIN")
    errors = sum(f.severity == "error" for f in check.validate(m))
    n_filtered = len(mdb_bones.skin_bone_order([b.name for b in arm_ob.data.bones]))
    pos = np.concatenate([p.vertices["position"] for p in skins]) if skins else np.zeros((0, 3), np.float32)
    weights = np.concatenate([p.vertices["weights"] for p in skins]) if skins else np.zeros((0, 4), np.float32)
    bones = np.concatenate([p.vertices["bones"] for p in skins]) if skins else np.zeros((0, 4), np.uint8)
    arm_ob.data.pose_position = "REST"
    try:
        rest = evaluated_world_positions(mesh_ob)
    finally:
        arm_ob.data.pose_position = "POSE"
    bbox_error = float(np.abs(np.concatenate([pos.min(0) - rest.min(0), pos.max(0) - rest.max(0)])).max()) \
        if len(pos) else float("inf")
    sums_ok = bool(np.all(np.abs(weights.astype(np.float64).sum(axis=1) - 1) <= 1e-4))
    indices_ok = bool(np.all(bones[weights > 0] < n_filtered))
    identical = mdb.write(m) == data
    ok = identical and errors == 0 and len(skins) >= 1 and bbox_error < 1e-5 and sums_ok and indices_ok and \
        all(mdb.text_of(p.skeleton) == skeleton for p in skins)
    checked = (f"re-read identical={identical}; check errors {errors}; {len(skins)} SKIN, skeleton {skeleton}; "
               f"bounds vs Blender rest {bbox_error:.1e}; weights sum 1: {sums_ok}; indices < {n_filtered}: "
               f"{indices_ok}")
    row = DemoRow("Neverwinter Nights 2 model (MDB)", os.path.relpath(path), len(data), len(pos),
                  sum(len(p.faces) for p in skins), n_filtered, round(elapsed, 2), checked, ok)
    return [row], warnings
