"""What `check` reports, for every format: one finding per fault, with the element, field and file offset."""
from __future__ import annotations

from dataclasses import dataclass


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
