"""`assert_same_bytes`: a written file against the bytes it must equal, a difference named by the codec's own
field names. The expected bytes are read again by the codec under `core.binary.trace_reads()`, which records
(offset, size, field) of every read, so the first differing offset maps to the field the codec read there; for a
record or array read, also to the item and the record field (`bone 3` item 0 `.position[1]`)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from skinbridge.core.binary import Read, trace_reads
from skinbridge.core.errors import FormatError

_SHOWN = 16  # bytes of each side shown when a field is wider than this


def assert_same_bytes(got: bytes, want: bytes, layout: Callable[[bytes], object], what: str = "") -> None:
    """`got == want`, or an AssertionError naming the first differing offset and the field of `want` it lies in,
    as `layout` (the codec's read function, e.g. `pmx.read`) reads `want`; `what` leads the message."""
    got, want = bytes(got), bytes(want)
    if got != want:
        raise AssertionError(f"{what}: " * bool(what) + describe_difference(got, want, layout))


def round_trip(data: bytes, read: Callable[[bytes], object], write: Callable[[object], bytes]):
    """The record `read` makes of `data`, with no warnings, which `write` turns back into the same bytes."""
    record = read(data)
    assert_same_bytes(write(record), data, read)
    assert record.warnings == []
    return record


def first_difference(got: bytes, want: bytes) -> int:
    n = min(len(got), len(want))
    differs = np.flatnonzero(np.frombuffer(got, np.uint8, n) != np.frombuffer(want, np.uint8, n))
    return int(differs[0]) if differs.size else n


def traced_reads(data: bytes, layout: Callable[[bytes], object]) -> list[Read]:
    """The reads `layout` makes of `data`, up to a structural fault if it has one."""
    with trace_reads() as reads:
        try:
            layout(data)
        except FormatError:
            pass
    return reads


def field_at(reads: list[Read], offset: int) -> Read | None:
    """The narrowest read that covers `offset` (the later of two as narrow: a record's read after its check)."""
    best = None
    for r in reads:
        if r.offset <= offset < r.offset + r.size and (best is None or r.size <= best.size):
            best = r
    return best


def _record_field(dtype: np.dtype, byte: int) -> tuple[str, int, int]:
    """The named (and indexed) part of a record that holds `byte`: its name, first byte and size."""
    for name, (sub, start, *_) in (dtype.fields or {}).items():
        if start <= byte < start + sub.itemsize:
            base, shape = sub.subdtype if sub.subdtype else (sub, ())
            index = (byte - start) // base.itemsize
            label = f".{name}" + (f"[{', '.join(map(str, np.unravel_index(index, shape)))}]" if shape else "")
            first = start + index * base.itemsize
            if base.fields:
                inner, inner_start, size = _record_field(base, byte - first)
                return label + inner, first + inner_start, size
            return label, first, base.itemsize
    return f" byte {byte}", byte, 1


def _locate(read: Read, offset: int) -> tuple[str, int, int]:
    """Where `offset` is inside `read`, in words, and the byte span of the smallest named part holding it."""
    if read.dtype is None or not read.dtype.itemsize:
        return f"byte {offset - read.offset} of it", read.offset, read.size
    item, byte = divmod(offset - read.offset, read.dtype.itemsize)
    first = read.offset + item * read.dtype.itemsize
    where = f"item {item}" if read.size > read.dtype.itemsize else ""
    if read.dtype.fields:
        label, start, size = _record_field(read.dtype, byte)
        return f"{where} {label}".strip(), first + start, size
    return where or f"byte {byte} of it", first, read.dtype.itemsize


def _hex(data: bytes, start: int, size: int) -> str:
    part = data[start:start + min(size, _SHOWN)]
    return (part.hex(" ") or "(nothing)") + (" …" if size > _SHOWN and start + _SHOWN < len(data) else "")


def describe_difference(got: bytes, want: bytes, layout: Callable[[bytes], object]) -> str:
    at = first_difference(got, want)
    head = f"bytes differ first at offset {at} (0x{at:x}); got {len(got)} bytes, want {len(want)}"
    if at >= len(want):
        return f"{head}: got has {len(got) - len(want)} bytes more, after the end of want"
    reads = traced_reads(want, layout)
    read = field_at(reads, at)
    if read is None:
        before = [r for r in reads if r.offset + r.size <= at]
        near = f"after field {before[-1].field!r} (ends at {before[-1].offset + before[-1].size})" if before \
            else "before any field"
        name = f"{getattr(layout, '__module__', '')}.{getattr(layout, '__qualname__', layout)}"
        return f"{head}: in no field {name} reads, {near}; " \
               f"want {_hex(want, at, 8)}, got {_hex(got, at, 8)}"
    where, start, size = _locate(read, at)
    span = f"bytes {start}..{start + size - 1}"
    return f"{head}: field {read.field!r} {where} ({span}); want {_hex(want, start, size)}, " \
           f"got {_hex(got, start, size)}"
