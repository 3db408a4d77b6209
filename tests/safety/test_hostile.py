"""Hostile files for every codec of the format registry (`hostile_registry.py`).

Each case is read through `hostile_cases.exercise`: the file is either rejected with `FormatError`, or read
(records write back byte-identical) and the semantic step (the mapping an import runs, or the format's check)
raises `FormatError` or warns, as the case expects; every case takes under 1 s and under 256 MiB of extra
memory (tracemalloc peak, numpy buffers included, and the growth of the process's max RSS).

Targeted cases are one test each; the generic ones made from the seeds (cuts at every byte of the head,
smashed words) run as one test per codec. A case that hits a known finding (reported, not fixed yet: see
`Case.known` and `Codec.known_crashes`) is an expected failure, strict, so the fix shows as XPASS.
"""
from __future__ import annotations

import pytest

from support.hostile import hostile_registry
from support.hostile.hostile_cases import ANY, Case, generic_cases, measured, problems

CODECS = hostile_registry.CODECS


def _targeted():
    params = []
    for name, codec in CODECS.items():
        for case in codec.hostile():
            marks = [pytest.mark.xfail(strict=True, reason=f"known finding: {case.known}")] if case.known else []
            params.append(pytest.param(name, case, id=f"{name}: {case.name}", marks=marks))
    return params


def _run(codec, case: Case, trace: bool) -> list[str]:
    """Problems of one case; a crash is one problem naming the exception."""
    try:
        out = measured(codec, case.data, trace=trace)
    except Exception as e:  # anything but FormatError escaping the contract
        return [f"{case.name}: CRASH {type(e).__name__}: {e}"]
    return [f"{case.name}: {p}" for p in problems(case, out, has_semantic=codec.semantic is not None)]


def _fail_unless_known(codec, failures: list[str], total: int) -> None:
    unknown = [f for f in failures if codec.known(f) is None]
    assert not unknown, f"{len(unknown)} of {total} failed:\n" + "\n".join(unknown[:30])
    if failures:
        pytest.xfail("known finding(s): " + "; ".join(sorted({codec.known(f) for f in failures})))


@pytest.mark.parametrize("name,case", _targeted())
def test_hostile_case(name, case):
    codec = CODECS[name]
    bad = _run(codec, case, trace=True)
    assert not bad, f"{name} ({case.why}, {len(case.data)} bytes): " + "; ".join(bad)


@pytest.mark.parametrize("name", [n for n, c in CODECS.items() if c.binary])
def test_generic_cuts_and_smashed_counts(name):
    """Empty and 1-byte files, the seeds cut at every byte of their head and every 1/24 after, and every
    aligned word of their head set to 2^32-1, 2^31 and 2^31-1 (memory: max-RSS growth only, for speed)."""
    codec = CODECS[name]
    cases = generic_cases(codec)
    assert len(cases) > 50
    failures = [p for case in cases for p in _run(codec, case, trace=False)]
    _fail_unless_known(codec, failures, len(cases))


@pytest.mark.parametrize("name", list(CODECS))
def test_seeds_read_and_write_back(name):
    """The seeds themselves (real files and the code-made ones) read, write back byte-identical and map."""
    codec = CODECS[name]
    seeds = codec.seeds()
    assert seeds
    failures = []
    for seed_name, data in seeds:
        case = Case(seed_name, data, ANY)
        bad = _run(codec, case, trace=False)
        if not bad:
            try:
                out = measured(codec, data, trace=False)
                if not out.read or out.map_error is not None:
                    bad = [f"{seed_name}: {out.rejected or out.map_error}"]
            except Exception as e:
                bad = [f"{seed_name}: CRASH {type(e).__name__}: {e}"]
        failures += bad
    _fail_unless_known(codec, failures, len(seeds))


def test_every_format_with_a_codec_is_attacked():
    from skinbridge import formats

    expected = {s.name for s in formats.with_capability("read")}
    assert {"umd2", "uani", "pmx", "vmd"} <= expected
    assert expected | {"triggers"} == set(CODECS)
