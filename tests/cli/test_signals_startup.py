"""A signal in the first seconds of a command (issue 45, fault 6): while Python imports our modules and while
Blender loads, SIGTERM and SIGINT end `convert` with one line, no traceback, nothing written, no temporary folder
left, and the exit code of the signal (143 / 130).

A signal can only be ours to handle once cli.py's first statement has run (it holds the signals pending); before
that, in the interpreter's own start-up (about 0.1 s here), Python's defaults apply. So each moment counts from
the start, but no signal is sent before the process shows the signals held (SigBlk in /proc/PID/status).

The run converts the bench L model (200,000 vertices, 100 bones, 250 frames; bench/models.py, written by our
UMD2 writer), which takes over 4 s; the signals land at 10 moments of its first 3 s. Default leg only."""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from support.limited import default_signals

from conftest import ROOT

pytestmark = pytest.mark.slow

MOMENTS = (0.05, 0.2, 0.4, 0.6, 0.8, 1.0, 1.3, 1.7, 2.2, 3.0)


@pytest.fixture(scope="module")
def big_model(tmp_path_factory) -> tuple[pathlib.Path, pathlib.Path]:
    from skinbridge.bench import models
    from skinbridge.io_urhox import scene_files

    folder = tmp_path_factory.mktemp("bench_L")
    model, motion = scene_files.write_scene(models.build("L"), str(folder), "model")
    return pathlib.Path(model), pathlib.Path(motion)


def _holds_signals(pid: int) -> bool:
    """The process blocks SIGINT and SIGTERM (cli.py's first statement has run)."""
    try:
        status = pathlib.Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("SigBlk:")), 16)
    return all(mask >> (s - 1) & 1 for s in (signal.SIGINT, signal.SIGTERM))


def _run(big_model, tmp_path: pathlib.Path, sig: int | None, at: float) -> tuple[subprocess.Popen, str, float]:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BLENDER_USER_", "SKINBRIDGE_USER"))}
    env["TMPDIR"] = str(tmp)
    model, motion = big_model
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), "convert", str(model), "--motion", str(motion),
                             "--to", "smd", "-o", str(tmp_path / "out")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
                            preexec_fn=default_signals)
    if sig is not None:
        while not _holds_signals(proc.pid) and proc.poll() is None:
            time.sleep(0.002)
        time.sleep(max(at - (time.monotonic() - start), 0))
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=300)
    return proc, err, time.monotonic() - start


def test_the_run_outlasts_the_last_signal(big_model, tmp_path):
    proc, err, seconds = _run(big_model, tmp_path, None, 0)
    assert proc.returncode == 0, err
    # the last signal lands at 3 s: the run must outlast it by a margin (5.7 s on an idle 2-core machine)
    assert seconds > MOMENTS[-1] + 1, f"the unsignalled run took {seconds:.1f} s: the signals would not land in it"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["Wave.smd", "model.qc", "model.smd"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("at", MOMENTS)
def test_a_signal_at_start_up_ends_the_run_cleanly(big_model, tmp_path, sig, at):
    proc, err, _ = _run(big_model, tmp_path, sig, at)
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert [ln for ln in err.splitlines() if ln.startswith("error:")] == ["error: interrupted"], err
    out = tmp_path / "out"
    assert not out.exists() or not any(out.rglob("*")), sorted(map(str, out.rglob("*")))
    assert not list((tmp_path / "tmp").iterdir()), "temporary folder left"


def test_a_signal_inside_a_blender_handler_is_left_for_the_next_check():
    """A signal arriving while Blender runs one of our app handlers (the sidebar's depsgraph update, the MMD
    morphs') must not come out as a traceback Blender prints (CI saw one at 3.0 s): the handler returns, and the
    run stops at its next check."""
    from skinbridge.core import workers  # bpy-free: the handlers' wrapper, not the handlers

    @workers.quiet_stop
    def handler():
        workers._stop(signal.SIGINT, sys._getframe())  # what the signal handler does when the signal lands here
        return "reached: the signal does not raise inside the handler"

    try:
        assert handler().startswith("reached")
        with pytest.raises(workers.Terminated):
            workers.check_stop()
        workers._signalled = None
        with pytest.raises(workers.Terminated):  # outside a handler the signal raises where it lands
            workers._stop(signal.SIGINT, sys._getframe())
    finally:
        workers._signalled = None
