#!/usr/bin/env python3
"""NWN2 MDB import and export against Blender's glTF import and export of the same mesh, in the same run.

usage: bench/mdb.py [--size L] [--repeat N] [--json FILE]

The model is bench/models.py's tube of the chosen size (L: 200,000 vertices, 100 bones) with its weights,
cut into four meshes of at most 65,536 vertices (MDB faces are u16), written as one MDB of four SKIN packets
(tangent frame as the real files have it) and, for the baseline, as a GLB that Blender's own exporter writes
from the same four meshes and their armature. Every Blender measurement runs in its own fresh process; the
figures are the import (file → Blender data) and the export (Blender data → file) seconds, and their ratio to
glTF's. The issue asks for import ≤ 0.5× and export ≤ 0.3× glTF at size L.

`measure(size, tmp, repeat, timeout)` returns the rows in bench/run's shape, for its table.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import runpy
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]

runpy.run_path(str(ROOT / "bench" / "_checkout.py"))  # `skinbridge` importable before its first import

from skinbridge.bench.timing import fastest_worker, fresh_blender, measured_row, text_table  # noqa: E402

PARTS = 4  # at size L (200,000 vertices): four meshes of at most 65,536 vertices; larger models get more
MAX_VERTICES = 65536  # MDB faces are u16
LIMITS = {"import": 0.5, "export": 0.3}  # × glTF
SKELETON = "bench_skel"


def split_mesh(cmesh, parts: int = PARTS):
    """The mesh cut into `parts` (or more, so that none exceeds 65,536 vertices) runs of whole vertex ranges;
    a triangle goes to the part holding all three of its vertices (the few that straddle a cut are dropped).
    Each part keeps its vertices in order."""
    import numpy as np

    from skinbridge.core import model as cm

    nv = cmesh.vertex_count
    parts = max(parts, -(-nv // MAX_VERTICES))
    bounds = np.linspace(0, nv, parts + 1).astype(np.int64)
    out = []
    for k in range(parts):
        a, b = int(bounds[k]), int(bounds[k + 1])
        tris = cmesh.triangles
        inside = ((tris >= a) & (tris < b)).all(axis=1)
        part = cm.Mesh(f"{cmesh.name}_{k}", cmesh.positions[a:b], (tris[inside] - a).astype(np.int32),
                       normals=cmesh.normals[a:b], uvs=[(n, uv[a:b]) for n, uv in cmesh.uvs],
                       joints=cmesh.joints[a:b], weights=cmesh.weights[a:b],
                       material_indices=np.zeros(int(inside.sum()), np.int32), materials=[0])
        out.append(part)
    return out


def mdb_bytes(parts) -> bytes:
    """Four SKIN packets of the parts, with the tube's tangent frame (t along the ring, b = −(n × t))."""
    import numpy as np

    from skinbridge.io_mdb.mdb import convert, mdb

    packets = []
    for p in parts:
        n = p.normals.astype(np.float32)
        t = np.stack([-n[:, 1], n[:, 0], np.zeros(len(n), np.float32)], axis=1)
        t4 = np.concatenate([t, np.ones((len(n), 1), np.float32)], axis=1)
        tangents, binormals, sign = convert.tangent_frame(n, t4)
        vertices = convert.mesh_vertices("SKIN", p.positions, n, p.uvs[0][1], tangents, binormals, sign,
                                         p.weights.astype(np.float32), p.joints.astype(np.uint8))
        packets.append(mdb.MeshPacket("SKIN", mdb.raw_name(p.name), mdb.Material(diffuse_map=mdb.raw_name("bench")),
                                      vertices, p.triangles.astype(np.uint16), mdb.raw_name(SKELETON)))
    return mdb.write(mdb.MdbFile(packets))


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def worker(spec: dict) -> dict:
    """One measurement in this (fresh) process, with the process's peak resident memory (MiB)."""
    import resource

    got = _measure(spec)
    got["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return got


def _measure(spec: dict) -> dict:
    bpy = fresh_blender()
    context = bpy.context
    task, files = spec["task"], spec["files"]
    out = pathlib.Path(tempfile.mkdtemp(prefix="skinbridge-bench-mdb-"))
    if task == "write_glb":  # setup: Blender's exporter writes the baseline file from the same meshes
        from skinbridge.bench import models
        from skinbridge.blender import scene as bscene
        from skinbridge.core import model as cm

        scene = models.build(spec["size"])
        parts = split_mesh(scene.meshes[0])
        bscene.build_scene(context, cm.Scene("BenchMDB", scene.skeleton, parts, scene.materials), "BenchMDB")
        r = bpy.ops.export_scene.gltf(filepath=files["glb"], export_format="GLB", export_animations=False)
        assert r == {"FINISHED"}, r
        return {"seconds": 0.0}
    if task == "gltf_import":
        return {"seconds": _timed(lambda: bpy.ops.import_scene.gltf(filepath=files["glb"]))}
    if task == "gltf_export":
        bpy.ops.import_scene.gltf(filepath=files["glb"])
        return {"seconds": _timed(lambda: bpy.ops.export_scene.gltf(
            filepath=str(out / "again.glb"), export_format="GLB", export_animations=False))}
    from skinbridge.io_mdb.mdb import blender_io

    if task == "mdb_import":
        return {"seconds": _timed(lambda: blender_io.import_mdb(context, files["mdb"]))}
    if task == "mdb_export":
        blender_io.import_mdb(context, files["mdb"])
        again = out / "again.mdb"
        seconds = _timed(lambda: blender_io.export_mdb(context, str(again)))
        return {"seconds": seconds, "identical": again.read_bytes() == pathlib.Path(files["mdb"]).read_bytes()}
    raise ValueError(task)


def run_worker(spec: dict, repeat: int, timeout: float) -> dict:
    return fastest_worker(pathlib.Path(__file__).resolve(), spec, repeat, timeout)


def measure(size: str = "L", tmp: pathlib.Path | None = None, repeat: int = 1, timeout: float = 900) -> list[dict]:
    from skinbridge.bench import models

    tmp = pathlib.Path(tmp or tempfile.mkdtemp(prefix="skinbridge-bench-mdb-"))
    tmp.mkdir(parents=True, exist_ok=True)
    scene = models.build(size)
    parts = split_mesh(scene.meshes[0])
    nv = sum(p.vertex_count for p in parts)
    files = {"mdb": str(tmp / f"bench_{size}.mdb"), "glb": str(tmp / f"bench_{size}.glb")}
    pathlib.Path(files["mdb"]).write_bytes(mdb_bytes(parts))
    del scene, parts
    got = run_worker({"task": "write_glb", "files": files, "size": size}, 1, timeout)
    if "error" in got:
        return [{"size": size, "vertices": nv, "format": "glTF (MDB mesh)", "stage": "setup", "status": "error",
                 "error": got["error"]}]
    rows = []
    for fmt, prefix in (("glTF (MDB mesh)", "gltf"), ("MDB", "mdb")):
        for stage in ("import", "export"):
            got = run_worker({"task": f"{prefix}_{stage}", "files": files, "size": size}, repeat, timeout)
            rows.append(measured_row(got, size=size, vertices=nv, format=fmt, stage=stage))
    for r in rows:
        base = next((g for g in rows if g["format"] == "glTF (MDB mesh)" and g["stage"] == r["stage"]
                     and g["status"] == "ok"), None)
        if r["format"] == "MDB" and r["status"] == "ok" and base is not None:
            r["x_gltf"] = r["seconds"] / base["seconds"]
            r["within_limit"] = r["x_gltf"] <= LIMITS[r["stage"]]
    return rows


def _figures(r: dict) -> str:
    x = f"{r['x_gltf']:.2f}" if "x_gltf" in r else ""
    limit = (f"≤{LIMITS[r['stage']]}" + (" ok" if r["within_limit"] else " OVER")) if "x_gltf" in r else ""
    extra = "" if "identical" not in r else f"  re-export identical={r['identical']}"
    return f"{r['seconds']:>8.3f} {x:>6} {limit:>6}{extra}"


def table(rows: list[dict]) -> str:
    return text_table(f"{'model':<5} {'format':<16} {'stage':<7} {'seconds':>8} {'×glTF':>6} {'limit':>6}", rows,
                      lambda r: f"{r['size']:<5} {r['format']:<16} {r['stage']:<7}", _figures)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="L")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--worker")
    args = ap.parse_args(argv)
    if args.worker:
        print("RESULT " + json.dumps(worker(json.loads(args.worker))), flush=True)
        return 0
    rows = measure(args.size, repeat=args.repeat)
    print(table(rows))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["status"] == "ok" and r.get("within_limit", True) for r in rows) else 1


if __name__ == "__main__":
    from skinbridge.blender.compat import exit_process  # Blender 4.5's wheel hangs in teardown

    exit_process(main())
