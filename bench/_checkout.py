"""Makes `import skinbridge` work in a bench script run outside tools/run, where the checkout's folder is not
named `skinbridge`: a link of that name to the checkout, in a temporary folder put first on sys.path.

A script runs this file by its path (`runpy.run_path`) before its first `skinbridge` import: the package that
would hold this module cannot be imported by name until this has run."""
from __future__ import annotations

import importlib.util
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]

_found = importlib.util.find_spec("skinbridge")
if _found is None or not _found.origin or pathlib.Path(_found.origin).resolve().parent != ROOT:
    # not importable, or the venv's link names another checkout (a git worktree beside this one): this one first
    _link = pathlib.Path(tempfile.mkdtemp(prefix="skinbridge-pkg-"))
    (_link / "skinbridge").symlink_to(ROOT, target_is_directory=True)
    sys.path.insert(0, str(_link))
