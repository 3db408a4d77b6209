"""Shared test setup: a private Blender user folder, the `skinbridge` package, paths and scene fixtures."""
from __future__ import annotations

import atexit
import importlib
import importlib.metadata
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import types

# Before anything imports bpy: keep Blender's user files and caches out of $HOME; removed at the session's end
# (and by the exit below, after Blender's own exit handler).
_USER = tempfile.mkdtemp(prefix="skinbridge-bl-user-")
_TEMP_DIRS = [_USER]
atexit.register(lambda: [shutil.rmtree(d, ignore_errors=True) for d in _TEMP_DIRS])
os.environ.setdefault("BLENDER_USER_RESOURCES", _USER)
os.environ.setdefault("XDG_CACHE_HOME", os.path.join(_USER, "cache"))

import pytest  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
TESTDATA = ROOT.parent / "shared" / "testdata"
INTEROP = ROOT.parent / "shared" / "interop"  # files other tools wrote, read in place as the samples are
SAMPLE_ROOTS = (TESTDATA, INTEROP)  # what the suites that walk every sample walk


def sample_files() -> list[pathlib.Path]:
    """Every file of the sample folders (the test data, then the interop files), sorted within each."""
    return [p for root in SAMPLE_ROOTS if root.is_dir() for p in sorted(root.rglob("*")) if p.is_file()]

# tests/ is on the path (pytest's prepend import mode puts this file's folder there), which serves `support.*` and
# `conftest`: a helper two test modules share lives in tests/support/, never in a test module
# (docs/testing.md §3, tests/core/test_test_layout.py).


def _ensure_package_importable() -> None:
    found = importlib.util.find_spec("skinbridge")
    if found is not None and found.origin and pathlib.Path(found.origin).resolve().parent == ROOT:
        importlib.import_module("skinbridge")
        return
    # The checkout's folder name is not the package name, or the venv's link names another checkout (a git
    # worktree beside this one): expose this checkout as `skinbridge` through a link of its own, first on the path.
    link_dir = pathlib.Path(tempfile.mkdtemp(prefix="skinbridge-pkg-"))
    _TEMP_DIRS.append(str(link_dir))
    (link_dir / "skinbridge").symlink_to(ROOT, target_is_directory=True)
    sys.path.insert(0, str(link_dir))
    importlib.import_module("skinbridge")


_ensure_package_importable()


def pytest_configure(config):
    """Without the sample files most tests cannot run (and some modules list them at import): one line says so
    instead of hundreds of failures."""
    if not TESTDATA.is_dir():
        raise pytest.UsageError(f"../shared/testdata not found at {TESTDATA}: the tests read their sample files "
                                "there (README: `bash tools/run test`)")


@pytest.fixture(scope="session")
def testdata() -> pathlib.Path:
    return TESTDATA


@pytest.fixture(scope="session")
def interop() -> pathlib.Path:
    """The folder of files other tools wrote (Blender Source Tools' exports in `bst_written`), beside the
    samples; a test that reads it fails without it (never skips)."""
    if not INTEROP.is_dir():
        pytest.fail(f"{INTEROP} not found: the interop files are read there, beside ../shared/testdata")
    return INTEROP


@pytest.fixture(scope="session")
def addon():
    """The add-on registered once in this process (through skinbridge.register())."""
    pytest.importorskip("bpy")
    import skinbridge

    skinbridge.register()
    yield skinbridge
    skinbridge.unregister()


@pytest.fixture
def clean_scene(addon):
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    yield bpy.context.scene


@pytest.fixture
def prefs(clean_scene):
    """The preferences of SkinBridge enabled as an add-on (Blender keeps them under its module name)."""
    import bpy

    from skinbridge.app import preferences

    entry = bpy.context.preferences.addons.new()
    entry.module = preferences.ADDON
    yield preferences.preferences(bpy.context)
    entry = bpy.context.preferences.addons.get(preferences.ADDON)
    if entry is not None:  # a factory reset (the command line's empty scene) removed it already
        bpy.context.preferences.addons.remove(entry)


def run_cli(*args: str, timeout: float = 600) -> "subprocess.CompletedProcess":
    """Run the real command line (cli.py as a script, as `blender -P` would) in a fresh process."""

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


# -- the `blender` mark: each test module says it (README: `bash tools/run test`); a cheap check here --------

_BLENDER_FIXTURES = {"addon", "clean_scene", "fox_mdl"}
_BLENDER_MODULES = ("bpy", "bpy_extras", "mathutils", "bmesh")


def _module_has_bpy(module) -> bool:
    """A module that imported bpy (or a module of Blender's) at its top level."""
    return any(isinstance(value, types.ModuleType) and value.__name__.split(".")[0] in _BLENDER_MODULES
               for value in vars(module).values())


_BODIES: dict[str, set[str]] = {}


def _functions_importing_bpy(filename: str) -> set[str]:
    """Names of the functions of a test file whose body imports bpy (or a module of Blender's), read once."""
    if filename not in _BODIES:
        import ast  # only here: the collection hook alone parses test files

        found = set()
        try:
            tree = ast.parse(pathlib.Path(filename).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            tree = ast.Module(body=[], type_ignores=[])
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    isinstance(n, ast.Import) and any(a.name.split(".")[0] in _BLENDER_MODULES for a in n.names)
                    or isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] in _BLENDER_MODULES
                    or isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "importorskip" and n.args
                    and getattr(n.args[0], "value", None) in _BLENDER_MODULES for n in ast.walk(fn)):
                found.add(fn.name)
        _BODIES[filename] = found
    return _BODIES[filename]


def _body_has_bpy(item) -> bool:
    function = getattr(item, "function", None)
    code = getattr(function, "__code__", None)
    return code is not None and function.__name__ in _functions_importing_bpy(code.co_filename)


def _default_leg() -> bool:
    """The bpy wheel installed is the default Blender (5.2), read from its package data: bpy is not imported."""
    try:
        version = importlib.metadata.version("bpy")
    except importlib.metadata.PackageNotFoundError:
        return True
    return tuple(int(p) for p in version.split(".")[:2] if p.isdigit()) >= (5, 2)


def pytest_collection_modifyitems(config, items):
    if not _default_leg():  # the matrices run in the default leg only (docs/testing.md §2): deselected here
        kept = [item for item in items if item.get_closest_marker("default_leg") is None]
        if len(kept) < len(items):
            config.hook.pytest_deselected(items=[i for i in items if i.get_closest_marker("default_leg")])
            items[:] = kept
    unmarked = [item.nodeid for item in items if item.get_closest_marker("blender") is None and (
        _BLENDER_FIXTURES & set(getattr(item, "fixturenames", ()))
        or getattr(item, "module", None) is not None and _module_has_bpy(item.module) or _body_has_bpy(item))]
    if unmarked:
        raise pytest.UsageError(f"{len(unmarked)} tests need Blender (bpy at the top of their module or in their "
                                f"body, or one of the fixtures {sorted(_BLENDER_FIXTURES)}) but lack the `blender` "
                                "mark, e.g. "
                                f"{unmarked[0]}: add `pytestmark = pytest.mark.blender` or @pytest.mark.blender")


# -- Blender 4.5: its wheel hangs in interpreter teardown once a class was registered -----------------------

_session = None


def pytest_sessionfinish(session, exitstatus):
    global _session
    _session = session


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """After the summary: once bpy is loaded, end the process here with pytest's exit status (exit 5, no
    tests, stays 5), after the exit handlers, skipping Blender's teardown: it hangs on 4.5 and writes its
    shader cache again after our temporary folders were removed."""
    from skinbridge.blender import compat

    if _session is None or "bpy" not in sys.modules:
        return
    writer = getattr(config.pluginmanager.get_plugin("terminalreporter"), "_tw", None)
    if writer is not None:
        writer.flush()
    compat.exit_process(int(_session.exitstatus), hard=True)
