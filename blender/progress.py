"""Progress of long operations: `window_manager.progress_*` in the UI and, headless (the command line,
`blender -b -P`), a progress line on stderr."""
from __future__ import annotations

import sys
import time

import bpy


class Progress:
    """`window_manager.progress_*` in the UI (harmless headless) and, in background mode, a progress line on
    stderr once the operation has run for more than a second (at most one update every half second)."""

    def __init__(self, label: str, total: int):
        self.label, self.total, self._time, self._err = label, max(int(total), 1), time.perf_counter, sys.stderr
        self._start = self._shown = self._time()
        self._wm = getattr(bpy.context, "window_manager", None)
        self._line = False
        if self._wm is not None:
            self._wm.progress_begin(0, self.total)

    def update(self, done: int) -> None:
        if self._wm is not None:
            self._wm.progress_update(min(int(done), self.total))
        now = self._time()
        if bpy.app.background and now - self._start > 1.0 and now - self._shown > 0.5:
            self._shown = now
            self._line = True
            self._err.write(f"\r{self.label}: {100 * done // self.total:3d} %")
            self._err.flush()

    def end(self) -> None:
        if self._wm is not None:
            self._wm.progress_end()
            self._wm = None
        if self._line:
            self._err.write(f"\r{self.label}: done\n")
            self._err.flush()
