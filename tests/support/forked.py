"""Run a function in a child forked from this process (after its imports) and measure the child's own peak
memory: the process-wide `ru_maxrss` of a test process only ever grows, so a test that reads it in-process
sees nothing below what earlier tests reached."""
from __future__ import annotations

import os
import pickle
import resource
import traceback


def run_forked(fn, *args):
    """(fn's return value, growth of the child's max RSS in bytes during fn). An exception in the child is
    raised here as AssertionError with the child's traceback."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, report, and leave without running the parent's cleanup
        os.close(read_end)
        try:
            start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            value = fn(*args)
            grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start) * 1024
            payload = pickle.dumps(("ok", value, grown))
        except BaseException:
            payload = pickle.dumps(("error", traceback.format_exc(), 0))
        with os.fdopen(write_end, "wb") as f:
            f.write(payload)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    status, value, grown = pickle.loads(data)
    if status != "ok":
        raise AssertionError(f"in the forked child:\n{value}")
    return value, grown
