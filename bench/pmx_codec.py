"""Print PMX codec read and write seconds for Luka (27607 vertices, 188 bones), best of a few runs.

usage: .venv/bin/python bench/pmx_codec.py [FILE.pmx] [--repeat N]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "testdata" / "pmx" / "mmdtools_megurine_luka.pmx"

try:
    import skinbridge  # noqa: F401
except ImportError:  # run outside tools/run: expose the checkout as `skinbridge`
    link_dir = pathlib.Path(tempfile.mkdtemp(prefix="skinbridge-pkg-"))
    (link_dir / "skinbridge").symlink_to(ROOT, target_is_directory=True)
    sys.path.insert(0, str(link_dir))

from skinbridge.io_pmx.model import pmx  # noqa: E402
from skinbridge.bench.timing import best_of  # noqa: E402
from skinbridge.io_pmx.model import validate  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("file", nargs="?", default=str(DEFAULT))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    data = pathlib.Path(args.file).read_bytes()
    read_s, model = best_of(args.repeat, lambda: pmx.read(data))
    write_s, out = best_of(args.repeat, lambda: pmx.write(model))
    check_s, _ = best_of(args.repeat, lambda: validate.validate(model, for_export=True))
    print(f"file: {args.file} ({len(data)} bytes, {len(model.vertices)} vertices, {len(model.bones)} bones)")
    print(f"pmx read:     {read_s:.4f} s")
    print(f"pmx write:    {write_s:.4f} s")
    print(f"pmx validate: {check_s:.4f} s")
    print(f"roundtrip: {'identical' if out == data else 'DIFFERS'}")
    return 0 if out == data else 1


if __name__ == "__main__":
    from skinbridge.blender.compat import exit_process  # Blender 4.5's wheel hangs in teardown

    exit_process(main())
