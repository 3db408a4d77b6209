"""Coverage-guided fuzzing (`bench/fuzz`, atheris) of every registered codec, 20 s each,
and a test of the harness itself: a copy of the UMD2 reader with one bounds check removed is found to crash
within 60 s.

Each run is a subprocess: atheris instruments the interpreter and libFuzzer exits the process when it is
done, neither of which may happen inside pytest. The runs pass `--ignore-known`, so findings already
reported (the registry's `known_crashes`, each also a strict xfail in test_hostile.py) do not stop the
search for new ones.
"""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import time

import pytest

from support.hostile import hostile_registry


@pytest.fixture(autouse=True)
def _atheris():
    from support.tools import atheris

    atheris()

ROOT = pathlib.Path(__file__).resolve().parents[2]
FUZZ = ROOT / "bench" / "fuzz"
SECONDS = 20


def _fuzz(*args, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(FUZZ), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(hostile_registry.CODECS))
def test_fuzzing_finds_nothing_new(name, tmp_path):
    r = _fuzz(name, "--seconds", SECONDS, "--out", tmp_path, "--ignore-known", "--no-line-coverage",
              timeout=SECONDS + 180)
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
    eps = re.search(r"(\d+) executions/second", r.stdout)
    assert eps and int(eps.group(1)) > 0, r.stdout
    assert re.search(r"edge coverage: cov \d+", r.stdout), r.stdout
    assert "findings: none" in r.stdout
    assert not list(tmp_path.glob("crash-*")) and not list(tmp_path.glob("timeout-*"))


def _planted_reader(folder: pathlib.Path) -> pathlib.Path:
    """io_urhox/model/umd2.py with its element-type bound removed: a descriptor whose type byte is above 6 then
    reaches `ELEMENT_TYPES[type]` and raises KeyError instead of FormatError."""
    source = (ROOT / "io_urhox" / "model" / "umd2.py").read_text()
    check = "if t not in ELEMENT_TYPES or d >> 24:"
    assert source.count(check) == 1, "the planted bug no longer matches io_urhox/model/umd2.py: update this test"
    planted = source.replace(check, "if d >> 24:").replace("from ...core.", "from skinbridge.core.")
    path = folder / "planted_umd2.py"
    path.write_text(planted)
    return path


@pytest.mark.slow
def test_harness_finds_a_planted_crash_within_60_seconds(tmp_path):
    reader = _planted_reader(tmp_path)
    out = tmp_path / "out"
    t0 = time.monotonic()
    r = _fuzz("umd2", "--seconds", 60, "--out", out, "--ignore-known", "--reader-module", reader,
              "--no-line-coverage", timeout=240)
    elapsed = time.monotonic() - t0
    assert r.returncode == 1, f"no finding in 60 s:\n{r.stdout}\n{r.stderr}"
    assert "FINDING" in r.stdout and "KeyError" in r.stdout, r.stdout
    crashes = list(out.glob("crash-*"))
    assert len(crashes) == 1
    # the saved input reproduces the crash with the planted reader and is refused by the real one
    sys.path.insert(0, str(tmp_path))
    try:
        import planted_umd2
        from skinbridge.core.errors import FormatError
        from skinbridge.io_urhox.model import umd2

        data = crashes[0].read_bytes()
        with pytest.raises(KeyError):
            planted_umd2.read(data)
        with pytest.raises(FormatError):
            umd2.read(data)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("planted_umd2", None)
    assert elapsed < 60 + 30, f"took {elapsed:.0f} s"
