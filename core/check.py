"""The one `skinbridge check` pipeline: read → list findings → write back → compare, for every format.

A format declares only its steps in a `Checker` (its codec's `read` and `write`, its `validate(records)`, and
optionally how a write-back that differs is described); the pipeline does the rest the same way for all:

- a structural fault of the reader (`FormatError`) becomes one error finding at its offset and field, and the
  write-back is not attempted;
- the findings of `validate` follow (each with element, offset and field: `core.findings.Finding`), collected
  with `Findings`, which lists at most `MAX_PER_CHECK` rows of one fault and then one line for the rest;
- the records are written back with the codec and compared with the file: identical, the first differing
  offset (and the field there, when the format can name it), or why the writer refused;
- `core.findings.report` prints the one report format and gives the exit status.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import FormatError
from .findings import Finding, first_difference, report

MAX_PER_CHECK = 10  # rows of one fault listed one by one before a line counting the rest

UNREADABLE = "roundtrip: not attempted (unreadable)"
IDENTICAL = "roundtrip: identical"


class Findings:
    """The findings of one validation, in the order found."""

    def __init__(self) -> None:
        self.items: list[Finding] = []

    def add(self, severity: str, element: str, offset: int | None, field: str, message: str) -> None:
        self.items.append(Finding(severity, element, None if offset is None else int(offset), field, message))

    def rows(self, severity: str, bad, element: Callable[[int], str], offset: Callable[[int], int | None],
             field: str | Callable[[int], str], message: Callable[[int], str]) -> None:
        """One finding per offending row of the mask `bad` (the first MAX_PER_CHECK), then one naming how many
        more there are, at the first of them."""
        where = np.flatnonzero(np.asarray(bad))
        for i in where[:MAX_PER_CHECK]:
            i = int(i)
            self.add(severity, element(i), offset(i), field(i) if callable(field) else field, message(i))
        if len(where) > MAX_PER_CHECK:
            i = int(where[MAX_PER_CHECK])
            self.add(severity, element(i), offset(i), field(i) if callable(field) else field,
                     f"and {len(where) - MAX_PER_CHECK} more with the same fault (first listed here)")

    def warnings(self, messages: Iterable[str], offset: int | None = None) -> None:
        """A reader's warnings, one finding each on the whole file."""
        for w in messages:
            self.add("warning", "file", offset, "file", w)


def read_error(e: FormatError) -> Finding:
    """A reader's structural fault as one error finding on the file; the message without the offset and field
    the reader put before it (the finding shows them in its own place)."""
    message = str(e)
    if ": " in message and (e.offset is not None or e.field):
        message = message.split(": ", 1)[1]
    return Finding("error", "file", e.offset, e.field or "", message)


@dataclass(frozen=True)
class Checker:
    """What one kind of file declares for `skinbridge check`; calling it runs the pipeline (the registry's
    `check` capability: `checker(path, data, out) -> exit status`)."""

    read: Callable[[bytes], Any]
    validate: Callable[[Any], list[Finding]]
    write: Callable[[Any], bytes | Iterable[bytes]]
    # the field at a byte offset of the file the records were read from (names the first difference)
    field_at: Callable[[Any, int], str] | None = None
    # a roundtrip line for a write-back that differs (text formats compare tokens, not bytes)
    differs: Callable[[bytes, bytes, Any], str] | None = None
    # a reader's fault as a finding (a format may name the element its reader put in the field)
    read_error: Callable[[FormatError], Finding] = read_error

    def findings(self, data: bytes) -> tuple[list[Finding], str]:
        """The findings of the file's bytes and the roundtrip line."""
        try:
            records = self.read(data)
        except FormatError as e:
            return [self.read_error(e)], UNREADABLE
        found = self.validate(records)
        try:
            written = self.write(records)
            if not isinstance(written, (bytes, bytearray)):
                written = b"".join(written)
        except (ValueError, OverflowError) as e:  # FormatError and ExportError are ValueErrors
            return found, f"roundtrip: write failed ({e})"
        return found, self.roundtrip(data, bytes(written), records)

    def roundtrip(self, data: bytes, written: bytes, records) -> str:
        if written == data:
            return IDENTICAL
        if self.differs is not None:
            return self.differs(data, written, records)
        at = first_difference(data, written)
        field = f" (field {self.field_at(records, at)})" if self.field_at is not None else ""
        return f"roundtrip: differs at offset {at}{field}"

    def __call__(self, path: str, data: bytes, out: Callable[[str], None] = print) -> int:
        """`skinbridge check FILE`: the findings, a count line and the roundtrip line through `out(line)`; 1 on
        any error finding, else 0."""
        return report(*self.findings(data), out)
