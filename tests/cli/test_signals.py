"""Signals and workers of `convert -j 2` (issue 28, fault 5): SIGTERM at 25/50/75 % of a run leaves no process,
no `.part` and no temporary folder, and exactly the packages reported done (same bytes as a clean run);
`kill -9` of one worker fails only its input."""
from __future__ import annotations

import hashlib
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from support.limited import default_signals

from conftest import ROOT, TESTDATA

pytestmark = pytest.mark.slow

INPUTS = 4
DONE = re.compile(r"^\[\d+/\d+\] (.+): done$", re.M)


def _env(tmp: pathlib.Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BLENDER_USER_", "SKINBRIDGE_USER"))}
    env["TMPDIR"] = str(tmp)
    return env


def _start(inputs: list[pathlib.Path], out: pathlib.Path, tmp: pathlib.Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "cli.py"), "convert", *map(str, inputs), "--to", "smd",
                             "-o", str(out), "-j", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(tmp), start_new_session=True,
                            preexec_fn=default_signals)


def _group(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group `pgid`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = pathlib.Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry))
    return found


def _files(out: pathlib.Path) -> dict[str, str]:
    if not out.exists():
        return {}
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file()}


def _folders(out: pathlib.Path) -> set[str]:
    return {str(p.relative_to(out)) for p in out.rglob("*") if p.is_dir()} if out.exists() else set()


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The inputs, and a clean run's files, folders and duration."""
    root = tmp_path_factory.mktemp("signals")
    inputs = []
    for i in range(INPUTS):
        p = root / f"m{i}.pmx"
        shutil.copyfile(TESTDATA / "pmx" / "mmdtools_megurine_luka.pmx", p)
        inputs.append(p)
    tmp = root / "tmp"
    tmp.mkdir()
    t0 = time.monotonic()
    proc = _start(inputs, root / "clean", tmp)
    _, err = proc.communicate(timeout=300)
    seconds = time.monotonic() - t0
    assert proc.returncode == 0, err
    assert len(DONE.findall(err)) == INPUTS
    assert not list(tmp.iterdir())
    return inputs, _files(root / "clean"), _folders(root / "clean"), seconds


@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.75])
def test_sigterm_leaves_only_finished_packages(clean, tmp_path, fraction):
    inputs, clean_files, clean_folders, seconds = clean
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "out"
    proc = _start(inputs, out, tmp)
    time.sleep(seconds * fraction)
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=5)
    while _group(proc.pid) and time.monotonic() - sent < 5:
        time.sleep(0.05)
    assert not _group(proc.pid), f"processes left {time.monotonic() - sent:.1f} s after SIGTERM"
    assert proc.returncode in (0, 128 + signal.SIGTERM), err
    assert "Traceback" not in err
    done = {os.path.splitext(os.path.basename(src))[0] for src in DONE.findall(err)}
    want = {rel: h for rel, h in clean_files.items() if rel.split(os.sep)[0] in done}
    assert _files(out) == want
    assert _folders(out) <= {f for f in clean_folders if f.split(os.sep)[0] in done}
    assert not [p for p in tmp_path.rglob("*.part")]
    assert not list(tmp.iterdir()), "temporary folders left"
    print(f"SIGTERM at {fraction:.0%} of {seconds:.1f} s: {len(done)} done, ended in "
          f"{time.monotonic() - sent:.2f} s")


def test_killed_worker_fails_only_its_input(clean, tmp_path):
    inputs, clean_files, _, _ = clean
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "out"
    proc = _start(inputs, out, tmp)
    workers: list[int] = []
    deadline = time.monotonic() + 30
    while len(workers) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
        workers = [p for p in _group(proc.pid) if p != proc.pid
                   and b"spawn_main" in pathlib.Path(f"/proc/{p}/cmdline").read_bytes()]
    assert workers, "no worker process started"
    time.sleep(1.0)  # the worker has its first input
    os.kill(workers[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    failed = re.findall(r"^\[\d+/\d+\] (.+): FAILED$", err, re.M)
    assert len(failed) == 1 and "killed by SIGKILL" in err, err
    done = {os.path.splitext(os.path.basename(src))[0] for src in DONE.findall(err)}
    assert len(done) == INPUTS - 1
    assert _files(out) == {rel: h for rel, h in clean_files.items() if rel.split(os.sep)[0] in done}
    assert not [p for p in tmp_path.rglob("*.part")]
    assert not list(tmp.iterdir()), "temporary folders left"


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sigterm_while_a_part_file_is_written(clean, tmp_path, jobs):
    """The signal lands while a `.part` is on disk (one process, and a worker of -j 2): rolled back."""
    inputs = clean[0][:2]
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), "convert", *map(str, inputs), "--to", "smd",
                             "-o", str(out), "-j", jobs], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(tmp), start_new_session=True,
                            preexec_fn=default_signals)
    deadline = time.monotonic() + 120
    while not list(tmp_path.rglob("*.part")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before a .part file was seen"
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=5)
    while _group(proc.pid) and time.monotonic() - sent < 5:
        time.sleep(0.05)
    assert not _group(proc.pid)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert not list(tmp_path.rglob("*.part"))
    assert not DONE.findall(err) and _files(out) == {}
    assert not list(tmp.iterdir()), "temporary folders left"


def test_killed_worker_leaves_no_part_file(clean, tmp_path):
    """kill -9 of a `-j 2` worker while its staged `.part` is on disk (issue 45, fault 15): the worker cannot
    clean up, the parent removes that worker's staged files and the folder it made; the other inputs convert."""
    inputs, clean_files, clean_folders, _ = clean
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "out"
    proc = _start(inputs, out, tmp)
    staged = re.compile(r"\.skinbridge-(\d+)-.*\.part$")
    victim = None
    deadline = time.monotonic() + 120
    while victim is None and proc.poll() is None and time.monotonic() < deadline:
        for part in out.rglob("*.part") if out.exists() else ():
            m = staged.search(part.name)
            if m and int(m.group(1)) != proc.pid:
                victim = int(m.group(1))
                os.kill(victim, signal.SIGKILL)
                break
        time.sleep(0.005)
    assert victim is not None, "no worker's .part file was seen"
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert len(re.findall(r"^\[\d+/\d+\] (.+): FAILED$", err, re.M)) == 1, err
    done = {os.path.splitext(os.path.basename(src))[0] for src in DONE.findall(err)}
    assert len(done) == INPUTS - 1
    assert not list(out.rglob("*.part")) and not list(out.rglob("*.old")), sorted(map(str, out.rglob("*")))
    assert _files(out) == {rel: h for rel, h in clean_files.items() if rel.split(os.sep)[0] in done}
    assert _folders(out) == {f for f in clean_folders if f.split(os.sep)[0] in done}
    assert not list(tmp.iterdir()), "temporary folders left"
