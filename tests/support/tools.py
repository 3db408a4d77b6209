"""External tools some tests need (node with babylon-mmd, atheris). `bash tools/run` installs them; where one is
missing the test fails when CI is set (a missing tool on the CI machine is a failure) and skips elsewhere."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / "tools" / "node_modules"
JS = ROOT / "tests" / "js"


def missing(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: a missing tool is a failure)")
    pytest.skip(reason)


def node_with_babylon() -> str:
    """The path of node, with babylon-mmd installed in tools/node_modules."""
    node = shutil.which("node")
    if node is None:
        missing("node is not installed (needed to run babylon-mmd)")
    if not (NODE_MODULES / "babylon-mmd" / "package.json").is_file():
        missing(f"babylon-mmd is not installed in {NODE_MODULES} (bash tools/run runs npm install in tools/)")
    return node


def babylon_parse(script: str, paths: list[pathlib.Path]) -> dict[str, dict]:
    """tests/js/`script` run by node on `paths` (babylon-mmd parsing them): what it printed for each file, by the
    file's path as given."""
    node = node_with_babylon()
    done = subprocess.run([node, str(JS / script), str(NODE_MODULES), *map(str, paths)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return {r["file"]: r for r in json.loads(done.stdout)}


def atheris():
    try:
        import atheris as module
    except ImportError:
        missing("atheris (tools/requirements.txt) is not installed")
    return module
