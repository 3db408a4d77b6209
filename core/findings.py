"""What `check` reports, for every format: one finding per fault, with the element, field and file offset."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


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
    return next((i for i, (x, y) in enumerate(zip(original, written)) if x != y), min(len(original), len(written)))


def report(findings: list[Finding], roundtrip: str, out: Callable[[str], None]) -> int:
    """What `skinbridge check FILE` prints for every format: each finding, a count line and the write-back line;
    the exit status (1 on any error finding)."""
    for f in findings:
        out(str(f))
    errors = sum(f.severity == "error" for f in findings)
    out(f"{errors} error(s), {len(findings) - errors} warning(s)")
    out(roundtrip)
    return 1 if errors else 0
