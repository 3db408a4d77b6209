"""PMX through Blender on Luka (27,607 vertices, 188 bones, 39 morphs, 71 rigid bodies).

    .venv/bin/python bench/pmx_blender.py [--repeat N] [--file PATH]

Prints the best of N runs, in seconds, for: Blender import (parse, check, map, build armature/mesh/shape
keys/materials, MMD constraints and extras) and Blender export (gather rest data, map, validate, write), and
whether the exported file is byte-identical to the input.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="skinbridge-bench-"))
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LUKA = os.path.join(_ROOT, "..", "shared", "testdata", "pmx", "mmdtools_megurine_luka.pmx")


def _import_package():
    try:
        import skinbridge  # noqa: F401
    except ImportError:  # the checkout's folder is not named skinbridge: expose it through a link
        link_dir = tempfile.mkdtemp(prefix="skinbridge-pkg-")
        os.symlink(_ROOT, os.path.join(link_dir, "skinbridge"))
        sys.path.insert(0, link_dir)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--file", default=LUKA)
    args = parser.parse_args()
    _import_package()
    import bpy

    from skinbridge.io_pmx.blender_side import blender_io

    src = os.path.abspath(args.file)
    out = os.path.join(tempfile.mkdtemp(prefix="skinbridge-bench-"), "out.pmx")
    imports, exports = [], []
    for _ in range(args.repeat):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        t = time.perf_counter()
        blender_io.import_pmx(bpy.context, src)
        imports.append(time.perf_counter() - t)
        t = time.perf_counter()
        blender_io.export_pmx(bpy.context, out)
        exports.append(time.perf_counter() - t)
    with open(src, "rb") as a, open(out, "rb") as b:
        identical = a.read() == b.read()
    print(f"file: {os.path.basename(src)}")
    print(f"blender import: {min(imports):.3f} s (best of {args.repeat})")
    print(f"blender export: {min(exports):.3f} s (best of {args.repeat})")
    print(f"exported file byte-identical to the input: {identical}")
    return 0


if __name__ == "__main__":
    from skinbridge.blender.compat import exit_process  # Blender 4.5's wheel hangs in teardown

    exit_process(main())
