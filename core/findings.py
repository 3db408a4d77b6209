"""What `check` reports, for every format: one finding per fault, with the element, field and file offset (the
pipeline that makes them is core/check.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class Finding:
    severity: str  # 'error' | 'warning'
    element: str
    offset: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f" @ {self.offset} (0x{self.offset:x})" if self.offset is not None else ""
        return f"{self.severity}: {self.element}: {self.field}{where}: {self.message}"


def first_difference(original: bytes, written: bytes) -> int:
    """Offset of the first byte where a write-back differs from the file (the shorter length when one is a prefix)."""
    a = np.frombuffer(original, np.uint8)
    b = np.frombuffer(written, np.uint8)
    n = min(len(a), len(b))
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if len(diff) else n


def report(findings: list[Finding], roundtrip: str, out: Callable[[str], None]) -> int:
    """What `skinbridge check FILE` prints for every format: each finding, a count line and the write-back line;
    the exit status (1 on any error finding)."""
    for f in findings:
        out(str(f))
    errors = sum(f.severity == "error" for f in findings)
    out(f"{errors} error(s), {len(findings) - errors} warning(s)")
    out(roundtrip)
    return 1 if errors else 0
