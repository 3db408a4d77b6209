#!/usr/bin/env python3
"""Granny 2 skeletons: reading the largest public GR2 skeleton and building its armature, against an MDB import
of the same bone count, in the same run.

usage: bench/gr2.py [--repeat N] [--json FILE]

The public NWN2 skeleton files are the four Genasi `P_H?F_skel83.GR2` (41 KB, 88 bones each; the larger public
GR2 files are animations, without a skeleton); ../shared/testdata/gr2 holds one of them and the head that names
it. Rows: the codec read without Blender (header, Oodle1 decompression of every section, type tree, skeleton),
the decompression alone, and in fresh Blender processes the `.gr2` import (file → armature of 88 bones) and the
baseline, the head's MDB import, which finds that skeleton beside it and builds the same 88-bone armature under
its five SKIN meshes. The issue asks for the GR2 import to cost at most the MDB import plus the decompression.

bench/run calls `measure` once per model size; the rows do not depend on the size, so they come once a run.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import resource
import runpy
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
GR2_DIR = ROOT.parent / "shared" / "testdata" / "gr2"
SKELETON = GR2_DIR / "ovr_P_HEF_skel83.GR2"
HEAD = GR2_DIR / "ovr_P_HEF_head83.MDB"
# bench/run's "import" rows are against glTF's import of its synthetic models; these compare with each other
ARMATURE = "to armature"
CODEC_REPEAT = 20  # the codec read takes milliseconds: the fastest of this many

runpy.run_path(str(ROOT / "bench" / "_checkout.py"))  # `skinbridge` importable before its first import

from skinbridge.bench.timing import best_of, fastest_worker, fresh_blender, measured_row, text_table  # noqa: E402

_measured = False  # bench/run asks once per size; one set of rows is enough


def codec_figures() -> dict:
    """Seconds of the codec read (decompression and skeleton included) and of the decompression alone."""
    from skinbridge.io_mdb.gr2 import gr2, skeleton  # numpy and the codec: not for --help or a worker's bpy

    oodle1_kind = next(k for k, v in gr2.COMPRESSIONS.items() if v == "Oodle1")

    data = SKELETON.read_bytes()
    f = gr2.read(data)
    packed = [s for s in f.sections if s.compression == oodle1_kind and s.data_size]

    def decompress():
        for s in packed:
            gr2.decompress_section(data, s)

    read = best_of(CODEC_REPEAT, lambda: skeleton.skeletons(gr2.read(data)))[0]
    return {"read": read, "decompress": best_of(CODEC_REPEAT, decompress)[0],
            "bones": len(skeleton.skeletons(f)[0].bones)}


def _measure(spec: dict) -> dict:
    bpy = fresh_blender()
    if spec["task"] == "gr2_import":
        from skinbridge.io_mdb.gr2 import blender_io as gr2_blender  # bpy: only in a worker (fresh_blender)

        t = time.perf_counter()
        gr2_blender.blender_import(bpy.context, str(SKELETON), None)
    else:
        from skinbridge.io_mdb.mdb import blender_io  # bpy: only in a worker (fresh_blender)

        t = time.perf_counter()
        blender_io.import_mdb(bpy.context, str(HEAD))
    seconds = time.perf_counter() - t
    return {"seconds": seconds, "bones": sum(len(a.bones) for a in bpy.data.armatures),
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_worker(spec: dict, repeat: int, timeout: float) -> dict:
    return fastest_worker(pathlib.Path(__file__).resolve(), spec, repeat, timeout)


def _row(stage: str, got: dict) -> dict:
    return measured_row(got, size="Genasi", vertices=None, format="GR2 skeleton", stage=stage)


def measure(size: str = "", tmp: pathlib.Path | None = None, repeat: int = 1, timeout: float = 900) -> list[dict]:
    """The rows in bench/run's shape (once a process: the sample does not depend on `size`)."""
    global _measured
    if _measured or not SKELETON.is_file() or not HEAD.is_file():
        return []
    _measured = True
    codec = codec_figures()
    rows = [_row("codec read", {"seconds": codec["read"], "bones": codec["bones"]}),
            _row("decompress", {"seconds": codec["decompress"]})]
    rows.append(_row(ARMATURE, run_worker({"task": "gr2_import"}, repeat, timeout)))
    baseline = _row(ARMATURE, run_worker({"task": "mdb_import"}, repeat, timeout))
    baseline["format"] = "MDB head + GR2"
    rows.append(baseline)
    gr2_row = rows[2]
    if gr2_row["status"] == "ok" and baseline["status"] == "ok":
        limit = baseline["seconds"] + codec["decompress"]
        gr2_row["limit_seconds"] = limit
        gr2_row["within_limit"] = gr2_row["seconds"] <= limit
    return rows


def _figures(r: dict) -> str:
    limit = "" if "limit_seconds" not in r else f"≤{r['limit_seconds']:.3f} " + ("ok" if r["within_limit"] else "OVER")
    return f"{r['seconds']:>8.4f} {r.get('bones', ''):>5}  {limit}"


def table(rows: list[dict]) -> str:
    return text_table(f"{'format':<16} {'stage':<12} {'seconds':>8} {'bones':>5}  limit (MDB import + decompression)",
                      rows, lambda r: f"{r['format']:<16} {r['stage']:<12}", _figures)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per import; the fastest is kept")
    ap.add_argument("--json", metavar="FILE", help="write the rows here")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print("RESULT " + json.dumps(_measure(json.loads(args.worker))), flush=True)
        return 0
    rows = measure(repeat=args.repeat, timeout=args.timeout)
    print(table(rows))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))
    return 1 if any(r["status"] == "error" for r in rows) else 0


if __name__ == "__main__":
    from skinbridge.blender.compat import exit_process  # Blender 4.5's wheel hangs in teardown

    exit_process(main())
