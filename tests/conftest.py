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

# Test modules import each other and the hostile helpers by bare name (`from test_pmx_codec import ...`,
# `import hostile_cases`), the names pytest's prepend import mode gives them; with every test folder on the path
# this works across folders too, and each module is imported once under one name. tests/ itself is on the path
# already (this file's folder), which serves `support.*`, `conftest`, `umd2_samples` and the like.
for _folder in sorted(pathlib.Path(__file__).resolve().parent.iterdir(), reverse=True):
    if _folder.is_dir() and _folder.name != "support" and any(_folder.glob("*.py")) and str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))


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


# -- the `blender` marker: every test that imports bpy or runs our code in a Python of its own ----------------

_BLENDER_FIXTURES = {"addon", "clean_scene", "fox_mdl"}
_BLENDER_NAMES = {"bpy", "run_cli", "bpy_extras", "mathutils", "bmesh"}
_BLENDER_CONSTS = {"bpy", "cli.py", "bench"}  # importorskip("bpy"); a script of ours run in a subprocess


def _code_uses_blender(code, globs: dict, seen: set) -> bool:
    """Whether a function's code (with the functions of the test folder it calls) imports bpy, runs the CLI
    or runs one of our scripts in a subprocess."""
    if code in seen:
        return False
    seen.add(code)
    for name in code.co_names:
        if name in _BLENDER_NAMES or name.startswith(("bpy.", "blender_", "skinbridge.blender", "skinbridge.app")) \
                or ".blender_" in name:
            return True
    for const in code.co_consts:
        if isinstance(const, str) and const in _BLENDER_CONSTS:
            return True
        if hasattr(const, "co_names") and _code_uses_blender(const, globs, seen):
            return True
    for name in code.co_names:
        target = globs.get(name)
        if isinstance(target, type(sys)) and "bpy" in vars(target):  # a helper module that imports bpy
            return True
        if _in_tests(target) and _code_uses_blender(target.__code__, target.__globals__, seen):
            return True
    return False


def _in_tests(obj) -> bool:
    code = getattr(obj, "__code__", None)
    return code is not None and pathlib.Path(code.co_filename).resolve().is_relative_to(ROOT / "tests")


_module_imports_bpy: dict = {}


def _imports_bpy_at_top(module) -> bool:
    """`import bpy` or `pytest.importorskip("bpy")` among the module's top-level statements."""
    path = getattr(module, "__file__", None)
    if path not in _module_imports_bpy:
        import ast

        found = False
        for node in ast.parse(pathlib.Path(path).read_text(encoding="utf-8")).body:
            for sub in ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) else ():
                if isinstance(sub, ast.Import) and any(a.name.split(".")[0] == "bpy" for a in sub.names) or \
                        isinstance(sub, ast.Call) and getattr(sub.func, "attr", None) == "importorskip" and \
                        sub.args and getattr(sub.args[0], "value", None) == "bpy":
                    found = True
        _module_imports_bpy[path] = found
    return _module_imports_bpy[path]


def _uses_blender(item) -> bool:
    module = getattr(item, "module", None)
    if module is not None and (isinstance(vars(module).get("bpy"), type(sys)) or _imports_bpy_at_top(module)):
        return True
    if _BLENDER_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    seen: set = set()
    funcs = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info is not None else ()):
        funcs.extend(d.func for d in defs)
    for func in funcs:
        func = getattr(func, "__func__", func)
        func = getattr(func, "__wrapped__", func)
        if _in_tests(func) and _code_uses_blender(func.__code__, func.__globals__, seen):
            return True
    return False


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _uses_blender(item):
            item.add_marker(pytest.mark.blender)


# -- Blender 4.5: its wheel hangs in interpreter teardown once a class was registered -----------------------

_session = None


def pytest_sessionfinish(session, exitstatus):
    global _session
    _session = session


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """After the summary: on Blender 4.5 only, end the process here with pytest's exit status (exit 5, no
    tests, stays 5), skipping the teardown that hangs."""
    from skinbridge.blender import compat

    if _session is None or not compat.needs_hard_exit():
        return
    writer = getattr(config.pluginmanager.get_plugin("terminalreporter"), "_tw", None)
    if writer is not None:
        writer.flush()
    compat.exit_process(int(_session.exitstatus))
