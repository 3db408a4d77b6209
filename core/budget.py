"""The reading budget every reader keeps (docs/architecture.md §7.1 "Budgets").

A file of a few KB must never cost gigabytes or minutes. What a file may make a reader do is bounded by the
bytes it holds:

- `Budget`: the bytes a file may unpack to (every compressed section, gzip stream or LZ4 block of one file,
  counted together): at most `EXPANSION_RATIO` times the file's size (at least `EXPANSION_FLOOR`, so a small
  file may unpack to a few MB) and never above `EXPANSION_CAP`. The same object counts the objects a reader
  builds (`objects`): at most `OBJECTS_PER_BYTE` per byte of what it read (`OBJECTS_FLOOR` at least), so an
  array of 16 million empty structs in a 1 MB file is refused before the first one is built, and a loop over
  a count that consumes no bytes is bounded by the same count.
- `fits(count, item_size, left, ...)`: a count checked against the bytes that could hold it, before allocating.
- `nesting(depth, ...)`: the cap on any nesting a file controls (JSON, includes, chains walked by recursion).
- `load_json(text, field)`: `json.loads` behind a linear depth check, so deep nesting is a FormatError, not a
  RecursionError.

Every refusal is a `FormatError` naming the field and the limit, so the user reads one line.
"""
from __future__ import annotations

import json
import re

from .errors import FormatError

EXPANSION_RATIO = 64  # real files: GR2 Oodle1 sections 2-5x, gzip DMX 3-15x, LZ4 textures up to ~10x
EXPANSION_FLOOR = 64 << 20
EXPANSION_CAP = 1 << 30
OBJECTS_PER_BYTE = 1  # every object a reader builds stands for at least one byte of what it read
OBJECTS_FLOOR = 1 << 16
MAX_NESTING = 256  # MMD, Source and WE files nest a few levels; 256 leaves room and stays far from recursion limits


class Budget:
    """What one file of `size` bytes may unpack to and build; shared by every part of one read."""

    def __init__(self, size: int, what: str = "file", ratio: int = EXPANSION_RATIO):
        self.size = max(int(size), 0)
        self.what = what
        self.bytes_limit = min(max(ratio * self.size, EXPANSION_FLOOR), EXPANSION_CAP)
        self.objects_limit = max(OBJECTS_PER_BYTE * self.size, OBJECTS_FLOOR)
        self.bytes_used = 0
        self.objects_used = 0

    def unpack(self, n: int, offset: int | None, field: str) -> None:
        """Account for `n` more unpacked bytes before allocating them; FormatError when over the budget."""
        if n < 0:
            raise FormatError(f"negative unpacked size {n}", offset, field)
        if self.bytes_used + n > self.bytes_limit:
            raise FormatError(
                f"unpacks to {self.bytes_used + n} bytes, above the {self.bytes_limit}-byte budget of a "
                f"{self.size}-byte {self.what} (a compression bomb?)", offset, field)
        self.bytes_used += n

    def objects(self, n: int, offset: int | None, field: str) -> None:
        """Account for `n` more objects (records, array items, loop turns) before building them."""
        if n < 0:
            raise FormatError(f"negative count {n}", offset, field)
        if self.objects_used + n > self.objects_limit:
            raise FormatError(
                f"declares {self.objects_used + n} items, above the {self.objects_limit} a {self.size}-byte "
                f"{self.what} can hold", offset, field)
        self.objects_used += n


def fits(count: int, item_size: int, left: int, offset: int | None, field: str) -> int:
    """`count` items of at least `item_size` bytes (at least 1 counted, so empty items cannot loop without end)
    in `left` bytes; returns `count`, or raises FormatError naming the field."""
    if count < 0:
        raise FormatError(f"negative count {count}", offset, field)
    need = count * max(item_size, 1)
    if need > left:
        raise FormatError(f"count {count} needs at least {need} bytes, {max(left, 0)} left", offset, field)
    return count


def nesting(depth: int, offset: int | None, field: str, limit: int = MAX_NESTING) -> None:
    """Refuse nesting deeper than `limit` (JSON, QC includes, bone chains walked recursively)."""
    if depth > limit:
        raise FormatError(f"nested more than {limit} levels deep", offset, field)


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')


def json_depth(text: str | bytes, limit: int = MAX_NESTING) -> tuple[int, int]:
    """(deepest nesting of [ and {, the offset where it is reached), strings skipped; linear in the text; (0, 0)
    when the text has too few brackets to nest deeper than `limit`."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    if text.count("[") + text.count("{") <= limit:  # the common case, without a scan
        return 0, 0
    depth = deepest = at = 0
    for m in _JSON_TOKENS.finditer(text):
        ch = m.group()
        if ch in "[{":
            depth += 1
            if depth > deepest:
                deepest, at = depth, m.start()
        elif ch in "]}":
            depth -= 1
    return deepest, at


def load_json(text: str | bytes, field: str = "json", limit: int = MAX_NESTING):
    """`json.loads(text)` for text from a file: nesting above `limit` is a FormatError naming where, never a
    RecursionError. Other JSON faults stay json.JSONDecodeError (a ValueError) for the caller to word."""
    deepest, at = json_depth(text, limit)
    if deepest > limit:
        raise FormatError(f"JSON nested {deepest} levels deep (at most {limit})", at, field)
    return json.loads(text)
