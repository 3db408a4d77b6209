"""The hostile SMD / VTA cases (tests/hostile/hostile_smd.py) through the suite's contract: the read raises
FormatError or returns records, the mapping raises FormatError or warns, within the time and memory limits."""
from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "hostile"))

import hostile_smd  # noqa: E402
from hostile_cases import Codec, measured, problems  # noqa: E402

from skinbridge.io_smd import convert, smd  # noqa: E402

CODEC = Codec("smd", smd.read, None, convert.semantic, hostile_smd.seeds, hostile_smd.cases, binary=False)
CASES = hostile_smd.cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_case(case):
    out = measured(CODEC, case.data)
    assert problems(case, out) == [], case.why


@pytest.mark.parametrize("name,data", hostile_smd.seeds())
def test_seeds_read_and_map_cleanly(name, data):
    f = smd.read(data)
    assert f.warnings == [] and convert.semantic(f) == []
    assert smd.read(smd.write(f)) is not None
