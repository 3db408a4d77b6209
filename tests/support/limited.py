"""Run a command in a child process under an address-space limit and a time limit, and measure the child's own
peak resident memory (os.wait4 gives the rusage of that one child, unlike RUSAGE_CHILDREN which keeps the
maximum of every child the test process ever waited for; where that figure may be the forked test process's own,
the child's VmHWM read while it runs, see `_HighWater`).

Issue 45's bombs are refused within 10 s under RLIMIT_AS 1 GB (codec level) or 3 GB (commands that start
Blender: `import bpy` alone reaches about 1.46 GB of address space)."""
from __future__ import annotations

import os
import pathlib
import resource
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[2]
CODEC_LIMIT = 1 << 30
BLENDER_LIMIT = 3 << 30


def default_signals() -> None:
    """`preexec_fn` of a child a test signals: SIGINT, SIGTERM and SIGHUP back to their defaults (a shell starting
    the suite as a background job hands its children SIGINT ignored, and Python then installs no handler)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


@dataclass
class Outcome:
    returncode: int  # negative: killed by that signal (the time limit kills with SIGKILL)
    stdout: str
    stderr: str
    seconds: float
    peak_rss: int  # bytes
    timed_out: bool


def run_limited(args: list[str], address_space: int = CODEC_LIMIT, timeout: float = 10.0,
                env: dict | None = None, cwd: str | None = None) -> Outcome:
    """`args` (argv[0] included) under RLIMIT_AS `address_space`, killed after `timeout` seconds."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    inherited = _own_rss()
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=out_w, stderr=err_w, preexec_fn=limit, env=env, cwd=cwd,
                            start_new_session=True)
    os.close(out_w)
    os.close(err_w)
    chunks = {out_r: [], err_r: []}
    timed_out = False
    sel = selectors.DefaultSelector()
    for fd in chunks:
        sel.register(fd, selectors.EVENT_READ)
    hwm = _HighWater(proc.pid, args)
    while sel.get_map():
        left = timeout - (time.perf_counter() - start)
        if left <= 0:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            break
        hwm.poll()
        for key, _ in sel.select(min(left, 0.01)):
            data = os.read(key.fd, 65536)
            if data:
                chunks[key.fd].append(data)
            else:
                sel.unregister(key.fd)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    for fd in chunks:
        os.close(fd)
    peak = usage.ru_maxrss * 1024
    if peak <= inherited + (16 << 20) and hwm.peak:  # ru_maxrss is (or may be) the fork's: take what was seen
        peak = hwm.peak
    return Outcome(proc.returncode, b"".join(chunks[out_r]).decode("utf-8", "replace"),
                   b"".join(chunks[err_r]).decode("utf-8", "replace"), seconds, peak, timed_out)


def _own_rss() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class _HighWater:
    """The child's own peak resident memory, read from /proc/PID/status (VmHWM) while it runs, once it has
    exec'd `args`. `ru_maxrss` alone is not the child's: Linux carries the high-water mark of the memory the child
    had before exec (a fork of this test process, a Blender-sized pytest worker by then) into it."""

    def __init__(self, pid: int, args: list[str]):
        self.pid = pid
        self.cmdline = "\0".join(map(str, args)).encode()
        self.peak = 0
        self.execd = False

    def poll(self) -> None:
        try:
            if not self.execd:
                with open(f"/proc/{self.pid}/cmdline", "rb") as fh:
                    self.execd = fh.read().rstrip(b"\0") == self.cmdline
                if not self.execd:
                    return
            with open(f"/proc/{self.pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        self.peak = max(self.peak, int(line.split()[1]) * 1024)
                        return
        except (OSError, ValueError):
            return


def cli(*args, address_space: int = CODEC_LIMIT, timeout: float = 10.0, env: dict | None = None) -> Outcome:
    """`skinbridge ARGS` (this checkout's cli.py) under the limits."""
    return run_limited([sys.executable, str(ROOT / "cli.py"), *map(str, args)], address_space, timeout, env)


def python(code: str, address_space: int = CODEC_LIMIT, timeout: float = 10.0) -> Outcome:
    """Python `code` with this checkout importable as `skinbridge` (the way bench scripts do it), under the
    limits: for codec-level cases, e.g. `from skinbridge.io_mdb.gr2 import gr2; gr2.read(...)`."""
    prelude = f"import runpy; runpy.run_path({str(ROOT / 'bench' / '_checkout.py')!r})\n"
    return run_limited([sys.executable, "-c", prelude + code], address_space, timeout)


def one_line_refusal(outcome: Outcome) -> bool:
    """The way a refused file ends: exit code 1 or 2, not killed, stderr's last line starts with "error:" and
    no traceback anywhere."""
    lines = [ln for ln in outcome.stderr.splitlines() if ln.startswith("error:")]
    return (not outcome.timed_out and outcome.returncode in (1, 2) and len(lines) == 1
            and "Traceback" not in outcome.stderr and "internal error" not in outcome.stderr)
