"""Long operations show progress: a line on stderr when headless (after a second, at most every half second),
and model import and export report every step through `Progress`."""
from __future__ import annotations

import io

import pytest

bpy = pytest.importorskip("bpy")

from skinbridge.blender import progress as bprogress  # noqa: E402
from skinbridge.blender import scene as bscene  # noqa: E402

pytestmark = pytest.mark.blender


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_progress_line_after_a_second_throttled_and_closed():
    p = bprogress.Progress("reading Big", 10)
    clock, err = Clock(), io.StringIO()
    p._time, p._err, p._start, p._shown = clock, err, clock.now, clock.now
    p.update(1)
    clock.now += 0.9
    p.update(2)
    assert err.getvalue() == ""  # nothing during the first second
    clock.now += 0.2
    p.update(3)
    clock.now += 0.1
    p.update(4)  # within half a second of the last line: not shown
    clock.now += 0.5
    p.update(10)
    p.end()
    assert err.getvalue() == "\rreading Big:  30 %\rreading Big: 100 %\rreading Big: done\n"


def test_short_operation_prints_nothing():
    p = bprogress.Progress("quick", 3)
    err = io.StringIO()
    p._err = err
    for k in range(4):
        p.update(k)
    p.end()
    assert err.getvalue() == ""


class Recorder:
    made: list = []

    def __init__(self, label, total):
        self.label, self.total, self.done, self.ended = label, total, [], False
        Recorder.made.append(self)

    def update(self, done):
        self.done.append(done)

    def end(self):
        self.ended = True


def test_model_import_and_export_report_every_step(clean_scene, fox_mdl, tmp_path, monkeypatch):
    Recorder.made = []
    monkeypatch.setattr(bscene, "Progress", Recorder)
    assert bpy.ops.import_scene.skinbridge_urhox(filepath=str(fox_mdl)) == {"FINISHED"}
    assert bpy.ops.export_scene.skinbridge_urhox(filepath=str(tmp_path / "again.mdl")) == {"FINISHED"}
    building, reading = Recorder.made
    assert building.label.startswith("building") and building.done == [1, 2] and building.total == 2
    assert reading.label.startswith("reading") and reading.done == [0] and reading.total == 1
    assert building.ended and reading.ended
