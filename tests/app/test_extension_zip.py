"""The add-on as users get it: built and validated by Blender's own extension tool, installed and enabled in
a fresh headless Blender, and its format code importable in a Python that has no bpy at all."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import time
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTDATA = ROOT.parent / "shared" / "testdata"
INTEROP = ROOT.parent / "shared" / "interop"  # files other tools wrote, kept out of the zip as the samples are
MODULE = "bl_ext.user_default.skinbridge"
OPERATORS = ("import_scene.skinbridge_urhox", "export_scene.skinbridge_urhox")  # registered only while enabled
TEST_DATA_SUFFIXES = {".glb", ".gltf", ".pmx", ".pmd", ".vmd", ".mdb", ".tex", ".mdl", ".ani", ".smd", ".vta"}
MUST_HAVE = ("blender_manifest.toml", "__init__.py", "formats.py", "core/", "blender/", "app/",
             "i18n/zh_HANS.tsv", "i18n/zh_HANT.tsv", "i18n/ja_JP.tsv", "i18n/keep_english.txt")  # the UI languages
MUST_NOT_HAVE = ("tests/", "bench/", "tools/", ".venv/", ".ci/", ".git/")


def _bpy_dir() -> pathlib.Path:
    # find_spec, not import: importing bpy here would start Blender in the test process.
    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("bpy wheel not installed (bash tools/run sets it up)")
    return pathlib.Path(list(spec.submodule_search_locations)[0])


def _blender_ext(*args: str) -> subprocess.CompletedProcess:
    scripts = next(_bpy_dir().glob("[0-9]*.[0-9]*/scripts"))  # the wheel holds one version folder
    cmd = [sys.executable, str(scripts / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"), args[0],
           "--valid-tags", str(scripts / "modules" / "_bpy_internal" / "extensions" / "tags.py"), *args[1:]]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _report(label: str, seconds: float) -> None:
    sys.stderr.write(f"\n[timing] {label}: {seconds:.3f} s\n")


@pytest.fixture(scope="module")
def built_zip(tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("dist")
    t0 = time.perf_counter()
    proc = _blender_ext("build", "--source-dir", str(ROOT), "--output-dir", str(out))
    _report("extension build (blender_ext.py build)", time.perf_counter() - t0)
    assert proc.returncode == 0, f"build failed:\n{proc.stdout}\n{proc.stderr}"
    zips = list(out.glob("*.zip"))
    assert len(zips) == 1, f"expected one zip in {out}, got {zips}\n{proc.stdout}"
    return zips[0]


@pytest.fixture(scope="module")
def zip_names(built_zip) -> list[str]:
    with zipfile.ZipFile(built_zip) as zf:
        assert zf.testzip() is None
        return zf.namelist()


@pytest.mark.blender
def test_manifest_validates():
    proc = _blender_ext("validate", str(ROOT))
    assert proc.returncode == 0 and "Success" in proc.stdout, f"{proc.stdout}\n{proc.stderr}"


@pytest.mark.blender
def test_built_zip_validates(built_zip):
    assert built_zip.name.startswith("skinbridge-") and built_zip.suffix == ".zip", built_zip.name
    proc = _blender_ext("validate", str(built_zip))
    assert proc.returncode == 0 and "Success" in proc.stdout, f"{proc.stdout}\n{proc.stderr}"


@pytest.mark.blender
def test_zip_holds_the_addon(zip_names):
    for required in MUST_HAVE:
        if required.endswith("/"):
            assert any(n.startswith(required) and n.endswith(".py") for n in zip_names), (
                f"no Python file under {required} in the zip: {sorted(zip_names)}")
        else:
            assert required in zip_names, f"{required} missing from the zip: {sorted(zip_names)}"
    from skinbridge import formats

    packages = {"core/", "blender/", "app/"}
    for spec in formats.all_specs():  # every module a registered format names is shipped
        for value in [spec.operators, *spec.capabilities.values()]:
            if isinstance(value, str):
                module = value.partition(":")[0]
                packages.add(module.split(".")[0] + "/")
                assert module.replace(".", "/") + ".py" in zip_names, f"{spec.name}: {module} missing from the zip"
    for package in packages:
        assert package + "__init__.py" in zip_names, f"{package}__init__.py missing from the zip"
    assert not any("fingerprint" in n for n in zip_names), "test-only code shipped in the zip"


@pytest.mark.blender
def test_zip_leaves_out_development_files(zip_names):
    leaked = [n for n in zip_names if n.startswith(MUST_NOT_HAVE) or "__pycache__/" in n or n.endswith(".pyc")]
    assert not leaked, f"development files in the zip: {leaked}"
    assert not any(n.endswith(".zip") for n in zip_names)


@pytest.mark.blender
def test_zip_holds_no_test_data(built_zip, zip_names):
    by_suffix = [n for n in zip_names if pathlib.PurePosixPath(n).suffix.lower() in TEST_DATA_SUFFIXES]
    assert not by_suffix, f"model/animation files in the zip: {by_suffix}"
    if not TESTDATA.is_dir():
        pytest.fail(f"../shared/testdata not found at {TESTDATA}")
    samples = [p for root in (TESTDATA, INTEROP) for p in root.rglob("*") if p.is_file()]
    testdata_digests = {
        hashlib.sha256(p.read_bytes()).hexdigest(): p.relative_to(TESTDATA.parent)
        for p in samples if p.stat().st_size > 0
    }
    testdata_names = {p.name.lower() for p in samples if p.suffix.lower() != ".md"}
    with zipfile.ZipFile(built_zip) as zf:
        copied = [(n, str(testdata_digests[d])) for n in zip_names if not n.endswith("/")
                  if (d := hashlib.sha256(zf.read(n)).hexdigest()) in testdata_digests]
    assert not copied, f"sample files of ../shared in the zip: {copied}"
    same_name = [n for n in zip_names if pathlib.PurePosixPath(n).name.lower() in testdata_names]
    assert not same_name, f"files named like sample files of ../shared in the zip: {same_name}"


# Runs in a fresh Python with its own Blender user folder; prints one JSON line with what it saw.
_INSTALL_SCRIPT = r"""
import json, os, sys, time
sys.modules["skinbridge"] = None   # the venv exposes the checkout as `skinbridge`: the zip must not need it
t0 = time.perf_counter()
import bpy, addon_utils
out = {"import_bpy_s": time.perf_counter() - t0}
module = sys.argv[2]

def operators():
    return {"import_scene.skinbridge_urhox": "skinbridge_urhox" in dir(bpy.ops.import_scene),
            "export_scene.skinbridge_urhox": "skinbridge_urhox" in dir(bpy.ops.export_scene)}

out["operators_before"] = operators()
t0 = time.perf_counter()
try:
    out["install_result"] = sorted(bpy.ops.extensions.package_install_files(
        filepath=sys.argv[1], repo="user_default", enable_on_install=True))
except Exception as exc:
    out["install_error"] = repr(exc)
out["install_s"] = time.perf_counter() - t0
out["enabled"] = addon_utils.check(module)[1] and module in bpy.context.preferences.addons
mod = sys.modules.get(module)
out["module_file"] = getattr(mod, "__file__", None)
out["extensions_dir"] = bpy.utils.user_resource("EXTENSIONS")
out["operators_enabled"] = operators()
t0 = time.perf_counter()
addon_utils.disable(module, default_set=True)
out["disable_s"] = time.perf_counter() - t0
out["enabled_after_disable"] = addon_utils.check(module)[1] or module in bpy.context.preferences.addons
out["operators_disabled"] = operators()
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def installed(built_zip, tmp_path_factory) -> dict:
    user = tmp_path_factory.mktemp("bl_user")
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(user), PYTHONDONTWRITEBYTECODE="1")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _INSTALL_SCRIPT, str(built_zip), MODULE],
                          capture_output=True, text=True, timeout=300, env=env, cwd=str(user))
    wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"install script failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    result = json.loads(lines[-1][len("RESULT "):])
    result.update(wall_s=wall, stdout=proc.stdout, stderr=proc.stderr, user=str(user))
    _report("headless install subprocess, wall (start python, import bpy, install+enable, disable)", wall)
    _report("  of which import bpy", result["import_bpy_s"])
    _report("  of which package_install_files + enable", result["install_s"])
    _report("  of which disable", result["disable_s"])
    return result


def _log(result: dict) -> str:
    return f"\n--- stdout ---\n{result['stdout']}\n--- stderr ---\n{result['stderr']}"


@pytest.mark.blender
def test_zip_installs_and_enables_headless(installed):
    assert "install_error" not in installed, installed["install_error"] + _log(installed)
    assert installed["install_result"] == ["FINISHED"], _log(installed)
    assert installed["enabled"], f"{MODULE} not enabled after install" + _log(installed)
    installed_dir = pathlib.Path(installed["extensions_dir"]) / "user_default" / "skinbridge"
    assert pathlib.Path(installed["module_file"]).resolve() == (installed_dir / "__init__.py").resolve()
    assert (installed_dir / "blender_manifest.toml").is_file()
    assert not (installed_dir / "tests").exists()
    # addon_utils prints register() failures instead of raising them.
    assert "Traceback" not in installed["stdout"] + installed["stderr"], _log(installed)


@pytest.mark.blender
def test_installed_addon_registers_urhox_operators(installed):
    assert installed["enabled"], f"{MODULE} not enabled after install" + _log(installed)
    assert installed["operators_before"] == dict.fromkeys(OPERATORS, False)
    assert installed["operators_enabled"] == dict.fromkeys(OPERATORS, True), (
        "UrhoX operators missing after enabling the installed extension" + _log(installed))


@pytest.mark.blender
def test_installed_addon_disables_cleanly(installed):
    assert installed["enabled"], f"{MODULE} not enabled after install" + _log(installed)
    assert not installed["enabled_after_disable"], _log(installed)
    assert installed["operators_disabled"] == dict.fromkeys(OPERATORS, False), (
        "operators left registered after disable" + _log(installed))
    assert "Traceback" not in installed["stdout"] + installed["stderr"], _log(installed)


# ---------------------------------------------------------------------------------------------------------
# The format code in a Python without Blender.

def _python_without_bpy_env(tmp_path: pathlib.Path) -> dict:
    link_dir = tmp_path / "pkgpath"
    link_dir.mkdir()
    (link_dir / "skinbridge").symlink_to(ROOT, target_is_directory=True)
    import numpy  # the one runtime dependency, and nothing else of the venv's site-packages

    (link_dir / "numpy").symlink_to(pathlib.Path(numpy.__file__).parent, target_is_directory=True)
    venv = pathlib.Path(sys.prefix).resolve()
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and not pathlib.Path(p).resolve().is_relative_to(venv))
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH")}
    env.update(PATH=path, PYTHONPATH=str(link_dir), PYTHONDONTWRITEBYTECODE="1",
               BLENDER_USER_RESOURCES=str(tmp_path / "never_used"))
    return env


_PLAIN_PROBE = r"""
import importlib, importlib.util, json, sys
out = {"executable": sys.executable, "prefix": sys.prefix, "path": sys.path,
       "bpy_findable": importlib.util.find_spec("bpy") is not None,
       "numpy": importlib.util.find_spec("numpy") is not None, "imported": {}, "errors": {}}
if out["numpy"]:
    for name in sys.argv[1:]:
        try:
            mod = importlib.import_module(name)
            out["imported"][name] = getattr(mod, "__file__", None)
        except Exception as exc:
            out["errors"][name] = f"{type(exc).__name__}: {exc}"
out["bpy_loaded"] = sorted(m for m in sys.modules if m == "bpy" or m.startswith(("bpy.", "bpy_", "mathutils")))
print("RESULT " + json.dumps(out))
"""


def _run_plain(tmp_path: pathlib.Path, modules: list[str]) -> dict:
    env = _python_without_bpy_env(tmp_path)
    # this interpreter without its site-packages (-S): no bpy there, numpy and the package through PYTHONPATH
    proc = subprocess.run([sys.executable, "-S", "-c", _PLAIN_PROBE, *modules],
                          capture_output=True, text=True, timeout=120, env=env, cwd=str(tmp_path))
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"{proc.stdout}\n{proc.stderr}"
    out = json.loads(lines[-1][len("RESULT "):])
    venv = str(pathlib.Path(sys.prefix).resolve())
    assert not any(p and str(pathlib.Path(p).resolve()).startswith(venv) for p in out["path"]), out["path"]
    assert not out["bpy_findable"], f"{out['executable']} can import bpy: not a Blender-free Python"
    assert out["numpy"], f"{out['executable']} found no numpy"
    for name, file in out["imported"].items():
        assert file is None or file.startswith(str(tmp_path / "pkgpath")), f"{name} came from {file}"
    return out


def test_core_and_umd2_import_without_bpy(tmp_path):
    wanted = ["skinbridge", "skinbridge.core", "skinbridge.io_urhox.model.umd2"]
    out = _run_plain(tmp_path, wanted)
    assert not out["errors"], f"import failed in plain {out['executable']}: {out['errors']}"
    assert sorted(out["imported"]) == sorted(wanted)
    assert out["bpy_loaded"] == [], f"bpy/mathutils imported: {out['bpy_loaded']}"


def _pure_modules() -> list[str]:
    """Every module docs/architecture.md §2 says must work without Blender: core/, io_*/ (but ops.py,
    blender_* modules and the modules of blender_* sub-packages), and the package __init__ files (including
    blender/__init__.py)."""
    names = ["skinbridge"]
    if (ROOT / "blender" / "__init__.py").is_file():
        names.append("skinbridge.blender")
    for package in sorted([ROOT / "core", *ROOT.glob("io_*")]):
        if not (package / "__init__.py").is_file():
            continue
        for py in sorted(package.rglob("*.py")):
            parts = py.relative_to(ROOT).with_suffix("").parts
            if py.name == "ops.py" or any(p.startswith("blender_") for p in parts[1:]) and parts[-1] != "__init__":
                continue  # a Blender part (its package __init__ still imports without bpy)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            names.append(".".join(("skinbridge", *parts)))
    return names


def test_every_pure_module_imports_without_bpy(tmp_path):
    modules = _pure_modules()
    assert "skinbridge.core" in modules
    out = _run_plain(tmp_path, modules)
    assert not out["errors"], f"import failed in plain {out['executable']}: {out['errors']}"
    assert out["bpy_loaded"] == [], f"bpy/mathutils imported: {out['bpy_loaded']}"
