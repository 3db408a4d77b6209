"""`convert Fox.glb --to pmx` (model, textures and a VMD per action, no rig) against `--to urhox` in the same
process and run: the issue asks for at most 1.5× the UrhoX time.

    .venv/bin/python bench/pmx_convert.py [--repeat N] [--file PATH]

Prints the best of N runs of each, in seconds, and their ratio.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="skinbridge-bench-"))
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOX = os.path.join(_ROOT, "..", "shared", "testdata", "gltf", "Fox.glb")


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
    parser.add_argument("--file", default=FOX)
    args = parser.parse_args()
    _import_package()
    import bpy  # noqa: F401

    from skinbridge.app.options import ConvertOptions
    from skinbridge.app.pipeline import convert_file

    best = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            for target in ("urhox", "pmx"):
                out = os.path.join(tmp, f"{target}-{time.perf_counter_ns()}")
                t0 = time.perf_counter()
                convert_file(args.file, out, "Fox", ConvertOptions(target=target))
                dt = time.perf_counter() - t0
                best[target] = min(best.get(target, dt), dt)
    print(f"{os.path.basename(args.file)}: --to urhox {best['urhox']:.3f} s, --to pmx {best['pmx']:.3f} s, "
          f"ratio {best['pmx'] / best['urhox']:.2f} (best of {args.repeat})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
