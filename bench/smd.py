"""SMD codec and Blender import/export against their baselines, on a synthetic model of bench/models.py.

usage: .venv/bin/python bench/smd.py [--size S|L|XL] [--repeat N] [--no-blender]

Prints, for the reference SMD written from the model (and its animation SMD):
  * codec read of the reference against `np.loadtxt` of its numeric block (the vertex lines, material lines
    left out), and codec write against `np.savetxt(fmt='%.6f')` of that block; both baselines timed in the
    same run. The issue asks read ≥ 1.5× loadtxt and write ≥ 1.5× '%.6f'.
  * Blender import (reference + animation) and export (reference + animation) of SMD and, in the same run,
    of UMD2+UANI written from the same model; the issue asks SMD ≤ codec time + 1.2 × UMD2.
Best of --repeat runs each (Blender steps: each in a fresh factory-settings scene).
"""
from __future__ import annotations

import argparse
import io
import pathlib
import runpy
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]

runpy.run_path(str(ROOT / "bench" / "_checkout.py"))  # `skinbridge` importable before its first import

from skinbridge.bench import models  # noqa: E402
from skinbridge.bench.timing import best_of  # noqa: E402
from skinbridge.io_smd.smd import scene_files as smd_files  # noqa: E402
from skinbridge.io_smd.smd import smd  # noqa: E402


def numeric_block(data: bytes) -> bytes:
    """The vertex lines of the triangles block (every line but the material lines)."""
    text = data.split(b"\ntriangles\n", 1)[1].split(b"\nend\n", 1)[0]
    lines = text.split(b"\n")
    del lines[0::4]
    return b"\n".join(lines) + b"\n"


def codec_rows(ref_path: str, repeat: int) -> dict:
    data = pathlib.Path(ref_path).read_bytes()
    block = numeric_block(data)
    read_s, records = best_of(repeat, lambda: smd.read(data))
    loadtxt_s, table = best_of(repeat, lambda: np.loadtxt(io.BytesIO(block)))
    write_s, out = best_of(repeat, lambda: smd.write(records))
    savetxt_s, _ = best_of(repeat, lambda: np.savetxt(io.BytesIO(), table, fmt="%.6f"))
    same = smd.write(records) == data and len(smd.read(out).triangles) == len(records.triangles)
    return {"bytes": len(data), "block_bytes": len(block), "rows": len(table), "read": read_s,
            "loadtxt": loadtxt_s, "write": write_s, "savetxt": savetxt_s, "roundtrip": same}


def blender_rows(files: dict, repeat: int, tmp: pathlib.Path) -> dict:
    import bpy

    from skinbridge import formats, register
    from skinbridge.app.options import ConvertOptions
    from skinbridge.blender.selection import find_armature

    def fresh():
        bpy.ops.wm.read_factory_settings(use_empty=True)
        try:
            register()
        except ValueError:
            pass

    def do_import(fmt):
        spec = formats.get(fmt)
        options = ConvertOptions(target=spec.target or fmt, profile="urho3d", import_profile="urho3d") \
            if fmt == "umd2" else ConvertOptions(target="smd")
        model, motions = files[fmt]
        spec.get("blender_import")(bpy.context, model, options)
        arm = find_armature(bpy.context, required=True)
        for m in motions:
            formats.identify_file(m).get("motion_loader")(bpy.context, m, arm, options)

    def do_export(fmt):
        spec = formats.get(fmt)
        options = ConvertOptions(target=spec.target, profile="urho3d") if fmt == "umd2" else \
            ConvertOptions(target="smd")
        return spec.get("export_target")(bpy.context, str(tmp / f"out_{fmt}"), "again", options)

    out = {}
    for fmt in ("smd", "umd2"):
        out[f"{fmt}_import"], _ = best_of(repeat, lambda: do_import(fmt), fresh)

        def prepared():
            fresh()
            do_import(fmt)

        out[f"{fmt}_export"], _ = best_of(repeat, lambda: do_export(fmt), prepared)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", default="L", choices=sorted(models.SIZES))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-blender", action="store_true")
    args = ap.parse_args()
    scene = models.build(args.size)
    print(f"model {args.size}: {models.describe(scene)}")
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="smd-bench-"))
    paths = smd_files.write_scene(scene, str(tmp / "smd"), "model")
    c = codec_rows(paths[0], args.repeat)
    print(f"reference SMD: {c['bytes'] / 1e6:.1f} MB, numeric block {c['block_bytes'] / 1e6:.1f} MB, "
          f"{c['rows']:,} vertex lines")
    print(f"read    {c['read']:.3f} s   np.loadtxt {c['loadtxt']:.3f} s   ratio {c['loadtxt'] / c['read']:.2f} "
          f"(≥ 1.5)")
    print(f"write   {c['write']:.3f} s   '%.6f'     {c['savetxt']:.3f} s   ratio {c['savetxt'] / c['write']:.2f} "
          f"(≥ 1.5)")
    ok = c["loadtxt"] / c["read"] >= 1.5 and c["savetxt"] / c["write"] >= 1.5 and c["roundtrip"]
    if not args.no_blender:
        from skinbridge.io_urhox import scene_files

        umd2 = scene_files.write_scene(scene, str(tmp / "umd2"), "model")
        anim_read = sum(best_of(args.repeat, lambda p=p: smd.read(pathlib.Path(p).read_bytes()))[0]
                        for p in paths[1:])
        records = [smd.read(pathlib.Path(p).read_bytes()) for p in paths]
        anim_write = sum(best_of(args.repeat, lambda r=r: smd.write(r))[0] for r in records[1:])
        b = blender_rows({"smd": (paths[0], paths[1:]), "umd2": (umd2[0], umd2[1:])}, args.repeat, tmp)
        read_all, write_all = c["read"] + anim_read, c["write"] + anim_write
        limit_i = read_all + 1.2 * b["umd2_import"]
        limit_e = write_all + 1.2 * b["umd2_export"]
        print(f"import  SMD {b['smd_import']:.2f} s   UMD2+UANI {b['umd2_import']:.2f} s   limit {limit_i:.2f} s")
        print(f"export  SMD {b['smd_export']:.2f} s   UMD2+UANI {b['umd2_export']:.2f} s   limit {limit_e:.2f} s")
        ok = ok and b["smd_import"] <= limit_i and b["smd_export"] <= limit_e
    print("ok" if ok else "NOT MET")
    return 0 if ok else 1


if __name__ == "__main__":
    from skinbridge.blender.compat import exit_process  # Blender 4.5's wheel hangs in teardown

    exit_process(main())
