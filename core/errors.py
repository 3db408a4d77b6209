"""Errors and warnings shared by every codec and mapping."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field


class FormatError(ValueError):
    """A structural fault in a file: names the byte offset, the field and what was expected."""

    def __init__(self, message: str, offset: int | None = None, field: str | None = None):
        self.offset = offset
        self.field = field
        where = []
        if offset is not None:
            where.append(f"offset {offset} (0x{offset:x})")
        if field:
            where.append(f"field {field}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class ExportError(ValueError):
    """The data in the scene cannot be written: names the bone, vertex or object at fault."""


@dataclass
class Warnings:
    """Collected, never printed: importers return them, operators report them, the CLI prints them."""

    items: list[str] = field(default_factory=list)

    def add(self, message: str) -> None:
        if message not in self.items:
            self.items.append(message)

    def extend(self, messages) -> None:
        for m in messages:
            self.add(m)

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


def quiet_float_errors(func):
    """Run `func` with numpy's floating-point error messages off: NaN/Inf in a file are semantic faults that
    the codecs keep and the checks report as warnings, not messages printed by numpy."""
    import numpy as np  # 60-90 ms import: errors loads with the CLI, which needs no numpy for --help

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with np.errstate(all="ignore"):
            return func(*args, **kwargs)

    return wrapper
