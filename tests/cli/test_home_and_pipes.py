"""Issue 28, faults 7 and 8: no command writes under HOME or leaves anything of ours in TMPDIR, render prints no
EGL noise, and a reader that closes stdout early ends `info` and `check` quietly with status 141."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from conftest import ROOT, TESTDATA


def _env(home: pathlib.Path, tmp: pathlib.Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BLENDER_USER_", "SKINBRIDGE_USER", "XDG_"))}
    env.update(HOME=str(home), TMPDIR=str(tmp))
    return env


def _cli(env: dict[str, str], cwd: pathlib.Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


@pytest.mark.blender
def test_no_command_writes_under_home_or_leaves_temporary_files(tmp_path):
    home, tmp, work = tmp_path / "home", tmp_path / "tmp", tmp_path / "work"
    for d in (home, tmp, work):
        d.mkdir()
    env = _env(home, tmp)
    fox, box = TESTDATA / "gltf" / "Fox.glb", TESTDATA / "urho3d" / "Box.mdl"
    runs = {
        "convert -j 2": (["convert", fox, box, "--to", "urhox", "-o", "out", "-j", "2"], (0,)),
        "render": (["render", fox, "-o", "sheet.png"], (0,)),
        "compare": (["compare", fox, box], (1,)),
        "check": (["check", box], (0,)),
        "info": (["info", box], (0,)),
        "demo": (["demo"], (0,)),
    }
    for name, (args, codes) in runs.items():
        r = _cli(env, work, *args)
        assert r.returncode in codes, f"{name}: {r.stderr}"
        assert "Traceback" not in r.stderr, name
        assert list(home.rglob("*")) == [], f"{name} wrote under HOME"
        assert list(tmp.iterdir()) == [], f"{name} left files in TMPDIR"
        if name == "demo":  # its own humanoid converts without a warning, and warnings would go to stderr
            assert "warning" not in r.stdout and "warning:" not in r.stderr, r.stderr
        if name == "render":
            assert "EGL Error" not in r.stderr and "EGL Error" not in r.stdout
            assert (work / "sheet.png").stat().st_size > 1000


@pytest.mark.parametrize("command", ["info", "check"])
def test_closed_stdout_ends_quietly(tmp_path, command):
    sample = TESTDATA / "smd" / "bst_Cube_Armature_ref.smd"
    files = [sample] * 400  # more output than a pipe holds: the command is still writing when the reader leaves
    proc = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), command, *map(str, files)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    first = proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert first.strip()
    assert proc.returncode == 141, err
    assert err == ""
