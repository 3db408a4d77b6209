"""Hostile Wallpaper Engine models and textures (tests/support/hostile/hostile_wepuppet.py) run through the shared
contract of tests/support/hostile/hostile_cases.py: refused with FormatError, or read, written back byte-identical and
mapped (FormatError or warnings), each within the suite's time and memory limits."""
from __future__ import annotations

import pathlib

import pytest

from support.hostile import hostile_wepuppet
from support.hostile.hostile_cases import Codec, generic_cases, measured, problems

from skinbridge.io_wepuppet.puppet import convert, mdl
from skinbridge.io_wepuppet.texture import check, tex

TESTDATA = pathlib.Path(__file__).resolve().parents[3] / "shared" / "testdata" / "wepuppet"


def _model_seeds():
    real = [(p.name, p.read_bytes()) for p in sorted(TESTDATA.glob("*.mdl")) if p.stat().st_size <= 1 << 20]
    return hostile_wepuppet.seeds() + [(n, d[:len(d) - len(mdl.read(d).tail)]) for n, d in real]


MODEL = Codec("wepuppet", mdl.read, mdl.write, convert.semantic, _model_seeds, hostile_wepuppet.model_cases)
TEXTURE = Codec("wetex", tex.read, tex.write, check.semantic,
                lambda: hostile_wepuppet.texture_seeds() + [(p.name, p.read_bytes()) for p in TESTDATA.glob("*.tex")],
                hostile_wepuppet.texture_cases)


def _run(codec, case, trace=True):
    try:
        out = measured(codec, case.data, trace=trace)
    except Exception as e:  # anything but FormatError escaping the contract
        return [f"{case.name}: CRASH {type(e).__name__}: {e}"]
    return [f"{case.name}: {p}" for p in problems(case, out)]


@pytest.mark.parametrize("case", hostile_wepuppet.model_cases(), ids=lambda c: c.name)
def test_hostile_model(case):
    assert not _run(MODEL, case)


@pytest.mark.parametrize("case", hostile_wepuppet.texture_cases(), ids=lambda c: c.name)
def test_hostile_texture(case):
    assert not _run(TEXTURE, case)


@pytest.mark.parametrize("codec", [MODEL, TEXTURE], ids=lambda c: c.name)
def test_generic_cuts_and_smashed_words(codec):
    cases = generic_cases(codec)
    assert len(cases) > 50
    bad = [p for case in cases for p in _run(codec, case, trace=False)]
    assert not bad, "\n".join(bad[:20])
