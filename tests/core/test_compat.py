"""One extension for Blender 4.5 LTS, 5.0 and 5.2 LTS: the compatibility layer, the per-version environments,
the `blender` marks and the exit of processes that loaded the 4.5 wheel."""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import time

import pytest
from support.tools import missing

from conftest import ROOT
from skinbridge.blender import compat
from skinbridge.io_urhox.model import umd2
from support.bytes_compare import assert_same_bytes

VENVS = {"4.5": ROOT / ".venv-4.5", "5.0": ROOT / ".venv", "5.2": ROOT / ".venv-5.2"}
EXPECTED = {"4.5": ((4, 5), (3, 11), 1), "5.0": ((5, 0), (3, 11), 1), "5.2": ((5, 2), (3, 13), 2)}


def _venv_python(version: str) -> pathlib.Path | None:
    py = VENVS[version] / "bin" / "python"
    return py if py.exists() else None


def _run(args, timeout=120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)


# -- pure parts (no bpy) ---------------------------------------------------------------------------------

def test_exit_process_without_blender_keeps_the_code_and_never_loads_bpy():
    code = ("import sys; from skinbridge.blender import compat; print('out', end=''); "
            "assert compat.blender_version() is None and not compat.needs_hard_exit(); "
            "compat.exit_process(7) if 'bpy' not in sys.modules else sys.exit(99)")
    r = _run([sys.executable, "-c", code])
    assert (r.returncode, r.stdout) == (7, "out"), r.stderr


def test_manifest_accepts_blender_45():
    text = (ROOT / "blender_manifest.toml").read_text(encoding="utf-8")
    assert re.search(r'^blender_version_min = "4\.5\.0"$', text, re.M)
    assert '"/.venv-*/"' in text  # the per-version environments stay out of the zip


DEPRECATED = re.compile(r"\bnp\.(float|int|bool|object|str|long|unicode|complex)\b(?!\d|_)|\bnp\.(product|cumproduct|"
                        r"in1d|trapz|row_stack|alltrue|sometrue|round_|asfarray|find_common_type|msort|NaN|Inf|"
                        r"PINF|NINF|infty|float_|complex_|unicode_|string_|cast|mat)\b(?!\w)|"
                        r"\.(tostring|itemset|newbyteorder)\(\)|numpy\.core\b|np\.core\b")


def test_no_numpy_alias_removed_in_numpy_2():
    hits = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[0].startswith((".venv", ".git")) or "node_modules" in rel.parts or path == pathlib.Path(__file__):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if DEPRECATED.search(code):
                hits.append(f"{rel}:{n}: {line.strip()}")
    assert hits == []


def test_the_pattern_finds_the_aliases_numpy_2_removed():
    for bad in ("np.float", "x.astype(np.int)", "np.in1d(a, b)", "np.trapz(y)", "np.row_stack(r)",
                "np.product(s)", "np.bool", "a.tostring()", "np.NaN"):
        assert DEPRECATED.search(bad), bad
    for fine in ("np.float32", "np.int64", "np.bool_", "np.isin(a, b)", "np.prod(s)", "np.trapezoid(y)",
                 "np.vstack(r)", "np.intc", "np.nan", "dtype.newbyteorder('<')"):
        assert not DEPRECATED.search(fine), fine


# -- tools/run and .ci/run ---------------------------------------------------------------------------

def _tools_run(*args, env=None):
    return _run(["bash", str(ROOT / "tools" / "run"), *args], env=env, timeout=60)


@pytest.mark.parametrize("version", ["4.5", "5.0", "5.2"])
def test_tools_run_names_each_versions_own_venv(version):
    r = _tools_run("env", "--blender", version)
    if r.returncode == 3:
        pytest.skip(f"no Python for Blender {version} here: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [version, str(VENVS[version] / "bin" / "python")]


def test_tools_run_rejects_an_unknown_version():
    r = _tools_run("env", "--blender", "4.2")
    assert r.returncode == 2 and "use 4.5, 5.0 or 5.2" in r.stderr


def _fake_path(tmp_path) -> dict:
    """A PATH with a `python3.13` (and `pyenv`) that exit 127, as an unselected pyenv shim does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("python3.13", "pyenv"):
        (bin_dir / name).write_text("#!/bin/sh\necho 'pyenv: python3.13: command not found' >&2\nexit 127\n")
        (bin_dir / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "SKINBRIDGE_BLENDER", "CI")}
    env["PATH"] = f"{bin_dir}:/usr/bin:/bin"
    return env


def test_tools_run_finds_a_python_by_running_it_not_by_its_name(tmp_path):
    env = _fake_path(tmp_path)
    if os.path.exists("/usr/bin/python3.13") or _run(["/usr/bin/python3", "-V"]).stdout.startswith("Python 3.13"):
        pytest.skip("this machine has a system Python 3.13")
    r = _tools_run("env", "--blender", "5.2", env=env)
    assert r.returncode == 3 and "needs Python 3.13" in r.stderr, (r.stdout, r.stderr)
    r = _tools_run("env", env=env)  # the default falls back to a version whose Python runs
    assert r.returncode in (0, 3)
    assert not r.stdout.startswith("5.2")


def test_ci_with_a_missing_python_fails_and_without_ci_skips(tmp_path):
    env = _fake_path(tmp_path)
    if _run(["bash", str(ROOT / "tools" / "run"), "env"], env=env).returncode != 0:
        pytest.skip("no Python 3.11 outside pyenv on this machine")
    ci = _run(["bash", str(ROOT / ".ci" / "run"), "--dry-run"], env={**env, "CI": "true"}, timeout=60)
    assert ci.returncode == 1 and "Blender 5.2: its Python is missing: FAILED" in ci.stderr, ci.stderr
    local = _run(["bash", str(ROOT / ".ci" / "run"), "--dry-run"], env=env, timeout=60)
    assert local.returncode == 0 and "Blender 5.2: its Python is missing: skipped" in local.stderr, local.stderr


def test_ci_runs_the_whole_suite_on_the_default_and_blender_tests_on_the_others():
    r = _run(["bash", str(ROOT / ".ci" / "run"), "--dry-run"], timeout=60)
    default = _tools_run("env").stdout.split()[0]
    lines = [line for line in r.stderr.splitlines() if "would run" in line]
    assert lines[0].endswith(f"bash tools/run test --blender {default} ")
    others = sorted(line.split()[1].rstrip(",") for line in lines[1:])
    assert all(line.endswith("-m blender") for line in lines[1:])
    assert set(others) | {default} <= {"4.5", "5.0", "5.2"} and default not in others


# -- the `blender` marks -------------------------------------------------------------------------------

@pytest.mark.slow
def test_blender_marker_follows_what_each_test_uses():
    r = _run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "blender", "-p", "no:cacheprovider",
              "tests/urho/test_umd2_codec.py", "tests/mmd/test_pmx_blender_bench.py", "tests/mmd/test_vmd_codec.py",
              "tests/app/test_compare.py"], cwd=ROOT)
    marked = {line for line in r.stdout.splitlines() if "::" in line}
    files = {line.split("::")[0] for line in marked}
    assert "tests/mmd/test_pmx_blender_bench.py" in files  # module-level importorskip("bpy")
    assert "tests/mmd/test_vmd_codec.py" not in files  # codec only (its node subprocess is not ours)
    # the fox_mdl fixture runs the CLI
    assert any(line.startswith("tests/urho/test_umd2_codec.py::") for line in marked)
    assert "tests/app/test_compare.py::test_nearest_distances_match_brute_force" not in marked  # pure numpy
    assert any(line.startswith("tests/app/test_compare.py::") for line in marked)


# -- Blender -----------------------------------------------------------------------------------------

@pytest.mark.blender
def test_running_blender_is_one_we_support():
    bpy = pytest.importorskip("bpy")
    import numpy as np

    version = tuple(bpy.app.version)
    want = {v[0]: v for v in EXPECTED.values()}.get(version[:2])
    assert want is not None, version
    assert sys.version_info[:2] == want[1]
    assert int(np.__version__.split(".")[0]) == want[2]
    assert compat.blender_version() == version


@pytest.mark.blender
def test_channelbag_is_made_once_in_the_first_layer_and_strip(clean_scene):
    import bpy

    act = bpy.data.actions.new("Walk")
    slot = act.slots.new(id_type="OBJECT", name="Rig")
    bag = compat.channelbag_for_slot(act, slot)
    assert compat.channelbag_for_slot(act, slot) == bag
    assert (len(act.layers), len(act.layers[0].strips)) == (1, 1)
    other = act.slots.new(id_type="OBJECT", name="Cam")
    bag2 = compat.channelbag_for_slot(act, other)
    assert (len(act.layers), len(act.layers[0].strips)) == (1, 1)
    assert [b.slot for b in compat.channelbags(act)] == [slot, other] and bag2.slot == other


@pytest.mark.blender
def test_fcurves_land_in_their_group_in_order(clean_scene):
    import bpy

    act = bpy.data.actions.new("Walk")
    bag = compat.channelbag_for_slot(act, act.slots.new(id_type="OBJECT", name="Rig"))
    for bone, prop in (("a", "location"), ("b", "location"), ("a", "scale")):
        for i in range(3):
            compat.new_fcurve(bag, f'pose.bones["{bone}"].{prop}', index=i, group_name=bone)
    compat.new_fcurve(bag, "location", index=0)
    assert [g.name for g in bag.groups] == ["a", "b"]
    got = [(fc.data_path, fc.array_index, fc.group.name if fc.group else None) for fc in bag.fcurves]
    assert got == ([('pose.bones["a"].location', i, "a") for i in range(3)]
                   + [('pose.bones["a"].scale', i, "a") for i in range(3)]
                   + [('pose.bones["b"].location', i, "b") for i in range(3)] + [("location", 0, None)])


@pytest.mark.blender
def test_pose_bone_flags(clean_scene):
    import bpy

    arm = bpy.data.armatures.new("A")
    ob = bpy.data.objects.new("A", arm)
    clean_scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    bpy.ops.object.mode_set(mode="EDIT")
    for name in ("x", "y"):
        eb = arm.edit_bones.new(name)
        eb.tail = (0, 0, 1)
    bpy.ops.object.mode_set(mode="OBJECT")
    x, y = ob.pose.bones["x"], ob.pose.bones["y"]
    for flag in ("select", "hide"):
        compat.set_pose_bone_flag(x, flag, True)
        compat.set_pose_bone_flag(y, flag, False)
        assert (compat.pose_bone_flag(x, flag), compat.pose_bone_flag(y, flag)) == (True, False)
        compat.set_pose_bone_flag(x, flag, False)
        assert compat.pose_bone_flag(x, flag) is False
    with pytest.raises(ValueError):
        compat.pose_bone_flag(x, "lock")


HANG = """
import atexit, os, sys, tempfile, bpy
from skinbridge.blender import compat
ours = tempfile.mkdtemp(prefix="ours-")
atexit.register(os.rmdir, ours)  # our own exit handlers still run
class SKINBRIDGE_OT_probe(bpy.types.Operator):
    bl_idname = "wm.skinbridge_probe"
    bl_label = "probe"
    def execute(self, context):
        return {"FINISHED"}
bpy.utils.register_class(SKINBRIDGE_OT_probe)
print("last line", end="")
compat.exit_process(int(sys.argv[1]))
"""


@pytest.mark.parametrize("version", ["4.5", "5.0", "5.2"])
def test_a_process_with_a_registered_class_ends_quickly_with_its_code(version, tmp_path):
    """The 4.5 wheel hangs in interpreter teardown after register_class; exit_process must not."""
    py = _venv_python(version)
    if py is None:
        missing(f"{VENVS[version].name} is not set up (bash tools/run setup --blender {version})")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "user"), "PYTHONPATH": str(_pkg_parent(tmp_path)),
           "TMPDIR": str(tmp)}
    for code in (0, 3):
        start = time.monotonic()
        r = _run([str(py), "-c", HANG, str(code)], timeout=60, env=env)
        assert (r.returncode, r.stdout) == (code, "last line"), r.stderr[-2000:]
        assert time.monotonic() - start < 30
    assert list(tmp.iterdir()) == []  # Blender's session folder goes, as on a normal exit, and ours


def _pkg_parent(tmp_path) -> pathlib.Path:
    parent = tmp_path / "pkg"
    if not parent.exists():
        parent.mkdir()
        (parent / "skinbridge").symlink_to(ROOT, target_is_directory=True)
    return parent


PYTEST_SESSION = """
import bpy
import pytest

pytestmark = pytest.mark.blender  # our conftest refuses a bpy test without it

def test_registers_and_{outcome}():
    class SKINBRIDGE_OT_probe(bpy.types.Operator):
        bl_idname = "wm.skinbridge_probe"
        bl_label = "probe"
        def execute(self, context):
            return {{"FINISHED"}}
    bpy.utils.register_class(SKINBRIDGE_OT_probe)
    assert {ok}
"""


@pytest.mark.parametrize("version", ["4.5", "5.2"])
def test_a_pytest_session_on_each_blender_ends_with_its_exit_status(version, tmp_path):
    """Our conftest's end-of-session hook: the status stays pytest's (1 failed, 5 nothing collected)."""
    py = _venv_python(version)
    if py is None:
        missing(f"{VENVS[version].name} is not set up (bash tools/run setup --blender {version})")
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "user"),
           "PYTHONPATH": f"{ROOT / 'tests'}:{_pkg_parent(tmp_path)}"}
    cases = {"passes": ("True", 0), "fails": ("False", 1)}
    for outcome, (ok, status) in cases.items():
        (tmp_path / f"test_{outcome}.py").write_text(PYTEST_SESSION.format(outcome=outcome, ok=ok))
        r = _run([str(py), "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q",
                  str(tmp_path / f"test_{outcome}.py")], timeout=90, env=env, cwd=tmp_path)
        assert r.returncode == status, r.stdout[-2000:] + r.stderr[-2000:]
        assert f"1 {'passed' if status == 0 else 'failed'}" in r.stdout  # the summary got out before the exit
    r = _run([str(py), "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q", "-k", "nothing",
              str(tmp_path / "test_passes.py")], timeout=90, env=env, cwd=tmp_path)
    assert r.returncode == 5, r.stdout[-2000:]


POOL = """
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor


def work(x):
    import bpy
    import skinbridge
    from skinbridge.blender import compat

    skinbridge.register()  # what a `convert -j` worker does; on 4.5 its teardown then hangs
    compat.guard_worker_exit()
    return x * 2


if __name__ == "__main__":
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        print(pool.submit(work, 21).result())
    print("shut down")
"""


@pytest.mark.parametrize("version", ["4.5", "5.2"])
def test_a_worker_pool_that_loaded_blender_shuts_down(version, tmp_path):
    """`convert -j`: the pool waits for its workers to end, which on 4.5 needs the worker guard."""
    py = _venv_python(version)
    if py is None:
        missing(f"{VENVS[version].name} is not set up (bash tools/run setup --blender {version})")
    (tmp_path / "pool.py").write_text(POOL)
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "user"), "PYTHONPATH": str(_pkg_parent(tmp_path))}
    r = _run([str(py), str(tmp_path / "pool.py")], timeout=90, env=env, cwd=tmp_path)
    assert (r.returncode, r.stdout.split()) == (0, ["42", "shut", "down"]), r.stderr[-2000:]


@pytest.mark.parametrize("version", ["4.5", "5.0", "5.2"])
@pytest.mark.blender
def test_fox_converts_to_the_same_bytes_on_each_blender(version, fox_mdl, testdata, tmp_path):
    """Fox.glb → Fox.mdl through Blender's glTF importer and our exporter, in that version's environment:
    130698 bytes, the same as this session's."""
    py = _venv_python(version)
    if py is None:
        missing(f"{VENVS[version].name} is not set up (bash tools/run setup --blender {version})")
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "user")}
    env.pop("PYTHONPATH", None)
    start = time.monotonic()
    r = _run([str(py), str(ROOT / "cli.py"), "convert", str(testdata / "gltf" / "Fox.glb"), "--to", "urhox",
              "-o", str(tmp_path / "out")], timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert time.monotonic() - start < 120
    got = (tmp_path / "out" / "Fox.mdl").read_bytes()
    assert len(got) == 130698
    assert_same_bytes(got, fox_mdl.read_bytes(), umd2.read)
