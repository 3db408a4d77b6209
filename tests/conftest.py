"""Shared test setup: a private Blender user folder, the `skinbridge` package, paths and scene fixtures."""
from __future__ import annotations

import importlib
import os
import pathlib
import sys
import tempfile

# Before anything imports bpy: keep Blender's user files out of $HOME.
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="skinbridge-bl-user-"))

import pytest  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
TESTDATA = ROOT.parent / "shared" / "testdata"


def _ensure_package_importable() -> None:
    try:
        importlib.import_module("skinbridge")
        return
    except ImportError:
        pass
    # The checkout's folder name is not the package name: expose it as `skinbridge` through a link.
    link_dir = pathlib.Path(tempfile.mkdtemp(prefix="skinbridge-pkg-"))
    (link_dir / "skinbridge").symlink_to(ROOT, target_is_directory=True)
    sys.path.insert(0, str(link_dir))
    importlib.import_module("skinbridge")


_ensure_package_importable()


@pytest.fixture(scope="session")
def testdata() -> pathlib.Path:
    if not TESTDATA.is_dir():
        pytest.fail(f"../shared/testdata not found at {TESTDATA}")
    return TESTDATA


@pytest.fixture(scope="session")
def addon():
    """The add-on registered once in this process (through skinbridge.register())."""
    bpy = pytest.importorskip("bpy")
    import skinbridge

    skinbridge.register()
    yield skinbridge
    skinbridge.unregister()


@pytest.fixture
def clean_scene(addon):
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    yield bpy.context.scene


def run_cli(*args: str, timeout: float = 600) -> "subprocess.CompletedProcess":
    """Run the real command line (cli.py as a script, as `blender -P` would) in a fresh process."""
    import subprocess

    env = dict(os.environ)
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="session")
def fox_mdl(tmp_path_factory, testdata) -> pathlib.Path:
    """Fox.glb converted once per test session by `skinbridge convert`."""
    out = tmp_path_factory.mktemp("fox")
    r = run_cli("convert", testdata / "gltf" / "Fox.glb", "--to", "urhox", "-o", out)
    assert r.returncode == 0, r.stderr
    return out / "Fox.mdl"
