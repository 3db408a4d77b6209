"""What the benchmark scripts share: the best-of-N timer, the fastest of N fresh worker processes, the Blender
session such a worker measures in, and the rows and text table of a script's figures."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable


def best_of(repeat: int, fn: Callable[[], object], setup: Callable[[], object] | None = None
            ) -> tuple[float, object]:
    """The fewest seconds `fn` took over `repeat` runs (`setup` runs before each, untimed), and its last
    result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        if setup is not None:
            setup()
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def fastest_worker(script: pathlib.Path, spec: dict, repeat: int, timeout: float) -> dict:
    """The result with the fewest "seconds" of `repeat` fresh processes of `script --worker SPEC` (each prints
    one line `RESULT {json}`); {"error": the failing process's last lines} as soon as one fails."""
    best = None
    for _ in range(max(repeat, 1)):
        cmd = [sys.executable, str(script), "--worker", json.dumps(spec)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
        if p.returncode or not lines:
            tail = (p.stderr or p.stdout).strip().splitlines()[-8:]
            return {"error": " | ".join(tail) or f"exit {p.returncode}"}
        got = json.loads(lines[-1][7:])
        if best is None or got["seconds"] < best["seconds"]:
            best = got
    return best


def fresh_blender():
    """bpy in a worker process: a private Blender user folder (set before bpy is first imported, so the user's
    own add-ons and preferences stay out of the figures), factory settings with an empty scene, and the add-on
    registered. Returns the bpy module."""
    os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="skinbridge-bench-user-"))
    import bpy  # bpy: only in a worker, after its private user folder is set

    from skinbridge import register  # registers bpy classes: see above

    bpy.ops.wm.read_factory_settings(use_empty=True)
    try:
        register()
    except ValueError:  # already registered in this process
        pass
    return bpy


def measured_row(got: dict, **fields) -> dict:
    """A row in bench/run's shape: `fields` (size, vertices, format, stage), then status "ok" and the worker's
    figures, or status "error" and its message."""
    row = dict(fields)
    row.update({"status": "error", "error": got["error"]} if "error" in got else {"status": "ok", **got})
    return row


def text_table(header: str, rows: list[dict], lead: Callable[[dict], str], figures: Callable[[dict], str]) -> str:
    """The rows as text under `header`: each row's `lead` columns, then its `figures` when it was measured, else
    ERROR and the start of its message."""
    return "\n".join([header] + [f"{lead(r)} " + (figures(r) if r["status"] == "ok" else
                                                   f"ERROR {r.get('error', '')[:200]}") for r in rows])
