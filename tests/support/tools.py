"""External tools some tests need (node with babylon-mmd, atheris). `bash tools/run` installs them; where one is
missing the test fails when CI is set (a missing tool on the CI machine is a failure) and skips elsewhere."""
from __future__ import annotations

import os
import pathlib
import shutil

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / "tools" / "node_modules"


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


def atheris():
    try:
        import atheris as module
    except ImportError:
        missing("atheris (tools/requirements.txt) is not installed")
    return module
