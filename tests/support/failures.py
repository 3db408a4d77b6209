"""Operators made to fail, and what a failure must leave: bpy.data as it was after a refused or failed import,
the scene unchanged and no file after a failed export.

A failure is injected through the bridge's `fail_hook` (`blender/scene.py` calls it at every stage) and
comes out of the operator as the RuntimeError Blender raises for an ERROR report, naming the failure.
"""
from __future__ import annotations

import os
import pathlib
from typing import Callable

import pytest

from skinbridge.blender import scene as bscene
from support.fingerprint import data_lengths, diff_fingerprints, scene_fingerprint


def fail_at(monkeypatch: pytest.MonkeyPatch, stage: str, error: type[Exception] = RuntimeError) -> None:
    """The bridge raises `error("injected failure at <stage>")` when it reaches `stage`."""

    def fail(s: str) -> None:
        if s == stage:
            raise error(f"injected failure at {s}")

    monkeypatch.setattr(bscene, "fail_hook", fail)


def import_fails_at(monkeypatch: pytest.MonkeyPatch, stage: str, operator: Callable, **props) -> None:
    """`operator(**props)` (an import) failing at `stage` reports the injected failure and removes everything it
    made: every bpy.data collection is as long as before."""
    before = data_lengths()
    fail_at(monkeypatch, stage)
    with pytest.raises(RuntimeError, match="injected"):
        operator(**props)
    assert data_lengths() == before


def export_fails_at(monkeypatch: pytest.MonkeyPatch, stage: str, operator: Callable, out: pathlib.Path) -> None:
    """`operator(filepath=out)` (an export) failing at `stage` with an OSError reports it, leaves the scene as
    it was and writes nothing into `out`'s folder (expected empty before)."""
    before = scene_fingerprint()
    fail_at(monkeypatch, stage, OSError)
    with pytest.raises(RuntimeError, match="injected"):
        operator(filepath=str(out))
    assert diff_fingerprints(before, scene_fingerprint()) == []
    assert os.listdir(out.parent) == []


def cut_files_refused(operator: Callable, data: bytes, cuts: tuple[int, ...], folder: pathlib.Path,
                      suffix: str = ".mdl", **props) -> None:
    """The file `data` cut at each of `cuts` bytes, imported through `operator(filepath=..., **props)`: refused
    naming the offset where it ends, with every bpy.data collection as long as before."""
    before = data_lengths()
    for cut in cuts:
        path = folder / f"cut{cut}{suffix}"
        path.write_bytes(data[:cut])
        with pytest.raises(RuntimeError, match="offset"):
            operator(filepath=str(path), **props)
        assert data_lengths() == before
