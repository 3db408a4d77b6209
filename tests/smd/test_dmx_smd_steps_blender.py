"""Issue 52: a step (two keys at one time: the engine's jump) through `convert`. Ninja_HighJump (15 tracks step at
0.3333 s) to DMX keeps each step as two keys one tick apart, the first where the engine is one tick before the step,
the second the step's own; to SMD, whose frames are whole at one rate, `convert` warns with the largest jump lost,
its bone and its time. Expected values are worked out here from the `.ani` records by the engine's rule."""
from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import run_cli

from skinbridge.io_smd.dmx import dmx
from skinbridge.io_urhox.motion import uani

pytestmark = pytest.mark.blender

TICKS = 10000  # DMX time values: 1/10000 s


def _ani(testdata) -> uani.Animation:
    return uani.read((testdata / "urho3d" / "Ninja_HighJump.ani").read_bytes())


def _jumps(anim: uani.Animation) -> list[tuple[float, str, float, np.ndarray, np.ndarray]]:
    """Per track with a step in its positions: (the jump's length, bone, step time, the engine's position one tick
    before the step, the step's second key)."""
    out = []
    for t in anim.tracks:
        times = np.asarray(t.times, np.float64)
        for k in np.flatnonzero(np.diff(times) <= 0):
            p = np.asarray(t.positions, np.float64)
            at = round(times[k] * TICKS) / TICKS - 1 / TICKS
            f = (at - times[k - 1]) / (times[k] - times[k - 1])
            before = p[k - 1] + (p[k] - p[k - 1]) * f
            out.append((float(np.linalg.norm(p[k + 1] - p[k])), t.name, float(times[k]), before, p[k + 1]))
    return out


def _position_log(d: dmx.DmxFile, channel: str) -> tuple[np.ndarray, np.ndarray]:
    el = next(e for e in d.elements if e.type == "DmeChannel" and e.name == channel)
    log = el.get("log").value
    log = d.elements[log] if isinstance(log, int) else log
    layer = log.get("layers").value[0]
    layer = d.elements[layer] if isinstance(layer, int) else layer
    times = np.asarray(layer.get("times").value, np.float64)
    if np.abs(times - np.round(times)).max() > 0 or times.max() < 100:  # `time` values are seconds
        times = np.round(times * TICKS)
    return times.astype(np.int64), np.asarray(layer.get("values").value, np.float64)


@pytest.mark.default_leg
def test_convert_to_dmx_keeps_each_step(testdata, tmp_path):
    folder = testdata / "urho3d"
    out = tmp_path / "dmx"
    r = run_cli("convert", folder / "Ninja.mdl", "--motion", folder / "Ninja_HighJump.ani", "--to", "dmx", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "step" not in r.stderr  # a DMX loses none
    d = dmx.read((out / "Ninja_HighJump.dmx").read_bytes())
    jumps = _jumps(_ani(testdata))
    assert len(jumps) == 15
    size, bone, time, before, second = max(jumps)
    assert bone == "Joint1" and size == pytest.approx(0.0197, abs=1e-4)
    ticks, values = _position_log(d, f"{bone}_p")
    step = round(time * TICKS)
    k = int(np.searchsorted(ticks, step))
    assert ticks[k - 1] == step - 1 and ticks[k] == step  # both sides of the step, one tick apart
    # the file's axes differ from Urho3D's by a turn: distances and the jump's length are kept
    assert np.linalg.norm(values[k] - values[k - 1]) == pytest.approx(np.linalg.norm(second - before), abs=1e-5)
    frame = round(ticks[k - 2] * 24 / TICKS)  # the frame before the step, sampled at its own time
    assert np.linalg.norm(values[k - 1] - values[k - 2]) == pytest.approx(
        np.linalg.norm(before - _engine_at(_ani(testdata), bone, frame / 24)), abs=1e-5)
    # away from the step the samples are the frames of the clip's rate (24 fps, 1/24 s apart)
    assert len(ticks) == 27 + 1 and np.round(np.delete(ticks, k - 1) * 24 / TICKS).tolist() == list(range(27))


def _engine_at(anim: uani.Animation, bone: str, t: float) -> np.ndarray:
    track = next(tr for tr in anim.tracks if tr.name == bone)
    times = np.asarray(track.times, np.float64)
    i = int(np.searchsorted(times, t, side="right")) - 1
    p = np.asarray(track.positions, np.float64)
    f = (t - times[i]) / (times[i + 1] - times[i])
    return p[i] + (p[i + 1] - p[i]) * f


@pytest.mark.default_leg
def test_convert_to_smd_names_the_error_at_the_step(testdata, tmp_path):
    folder = testdata / "urho3d"
    r = run_cli("convert", folder / "Ninja.mdl", "--motion", folder / "Ninja_HighJump.ani", "--to", "smd", "-o",
                tmp_path / "smd")
    assert r.returncode == 0, r.stderr
    found = [line for line in r.stderr.splitlines() if "two keys at one time" in line]
    assert len(found) == 1, r.stderr
    size, bone, time, _, _ = max(_jumps(_ani(testdata)))
    m = re.search(r"position ([0-9.e+-]+) units \('([^']+)' at ([0-9.]+) s", found[0])
    assert m, found[0]
    assert float(m.group(1)) == pytest.approx(size, rel=5e-3) and m.group(2) == bone  # 3 significant digits
    assert float(m.group(3)) == pytest.approx(time, abs=1e-4)
