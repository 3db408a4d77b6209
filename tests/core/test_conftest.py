"""The suite's own rules (tests/conftest.py), run on a throwaway copy of the test folder: a test that needs
Blender without the `blender` mark stops collection naming it, and a checkout without ../shared/testdata says
so in one line instead of failing test by test."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import skinbridge
from conftest import ROOT, TESTDATA

NEEDS_ADDON = '''
import pytest


@pytest.fixture
def scene(clean_scene):
    return clean_scene


def test_plain():
    pass


{mark}def test_through_a_fixture(scene):
    pass
'''


def _suite(tmp_path: pathlib.Path, module: str, with_testdata: bool = True) -> pathlib.Path:
    """A repo-shaped folder: pytest.ini, tests/conftest.py and one test module in a format folder."""
    repo = tmp_path / "repo"
    (repo / "tests" / "fmt").mkdir(parents=True)
    shutil.copy(ROOT / "pytest.ini", repo)
    shutil.copy(ROOT / "tests" / "conftest.py", repo / "tests")
    (repo / "tests" / "fmt" / "test_mod.py").write_text(module)
    if with_testdata:
        (tmp_path / "shared").mkdir()
        (tmp_path / "shared" / "testdata").symlink_to(TESTDATA, target_is_directory=True)
    return repo


def _collect(repo: pathlib.Path) -> subprocess.CompletedProcess:
    # the folder that holds the `skinbridge` link (not resolved: the link's target is the checkout itself)
    package_parent = str(pathlib.Path(skinbridge.__file__).parent.parent)
    return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                          cwd=repo, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": package_parent})


def test_a_test_that_reaches_a_blender_fixture_without_the_mark_stops_collection(tmp_path):
    r = _collect(_suite(tmp_path, NEEDS_ADDON.format(mark="")))
    assert r.returncode == 4, r.stdout + r.stderr
    assert "1 tests need Blender" in r.stderr and "tests/fmt/test_mod.py::test_through_a_fixture" in r.stderr, \
        r.stderr


def test_the_marked_test_collects(tmp_path):
    r = _collect(_suite(tmp_path, NEEDS_ADDON.format(mark="@pytest.mark.blender\n")))
    assert r.returncode == 0 and "2 tests collected" in r.stdout, r.stdout + r.stderr


def test_without_testdata_the_suite_says_so_in_one_line(tmp_path):
    r = _collect(_suite(tmp_path, NEEDS_ADDON.format(mark=""), with_testdata=False))
    lines = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    assert r.returncode == 4 and len(lines) == 1, lines
    assert "../shared/testdata not found at" in lines[0] and "test_mod" not in lines[0], lines


BPY_IN_BODY = '''
import pytest


def test_plain():
    pass


{mark}def test_imports_blender_inside():
    import bpy

    assert bpy.app.version
'''


def test_a_test_that_imports_bpy_in_its_body_without_the_mark_stops_collection(tmp_path):
    r = _collect(_suite(tmp_path, BPY_IN_BODY.format(mark="")))
    assert r.returncode == 4, r.stdout + r.stderr
    assert "1 tests need Blender" in r.stderr and "test_mod.py::test_imports_blender_inside" in r.stderr, r.stderr
    r = _collect(_suite(tmp_path / "marked", BPY_IN_BODY.format(mark="@pytest.mark.blender\n")))
    assert r.returncode == 0 and "2 tests collected" in r.stdout, r.stdout + r.stderr
