"""Bounds-checked little-endian reader and writer used by every binary codec.

Every read names its field, so a fault is reported as "offset N, field F: ...". Counts are checked
against the bytes left before anything is allocated, so no input can cause a huge allocation.
"""
from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from .errors import FormatError

_U8 = struct.Struct("<B")
_I8 = struct.Struct("<b")
_U16 = struct.Struct("<H")
_I16 = struct.Struct("<h")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")


class Reader:
    """Sequential reader over an immutable buffer."""

    def __init__(self, data: bytes | bytearray | memoryview, offset: int = 0):
        self.data = bytes(data)
        self.pos = offset
        self.size = len(self.data)

    # -- position ---------------------------------------------------------------------------
    def remaining(self) -> int:
        return self.size - self.pos

    def at_end(self) -> bool:
        return self.pos >= self.size

    def need(self, n: int, field: str) -> None:
        if n < 0 or self.pos + n > self.size:
            raise FormatError(f"needs {n} bytes, {self.remaining()} left", self.pos, field)

    # -- scalars ----------------------------------------------------------------------------
    def _scalar(self, s: struct.Struct, field: str):
        self.need(s.size, field)
        value = s.unpack_from(self.data, self.pos)[0]
        self.pos += s.size
        return value

    def u8(self, field: str) -> int:
        return self._scalar(_U8, field)

    def i8(self, field: str) -> int:
        return self._scalar(_I8, field)

    def u16(self, field: str) -> int:
        return self._scalar(_U16, field)

    def i16(self, field: str) -> int:
        return self._scalar(_I16, field)

    def u32(self, field: str) -> int:
        return self._scalar(_U32, field)

    def i32(self, field: str) -> int:
        return self._scalar(_I32, field)

    def f32(self, field: str) -> np.float32:
        """A float32 kept as numpy's float32, so NaN payloads (signalling NaNs too) write back unchanged."""
        self.need(4, field)
        value = np.frombuffer(self.data, "<f4", 1, self.pos)[0]
        self.pos += 4
        return value

    # -- blocks -----------------------------------------------------------------------------
    def bytes(self, n: int, field: str) -> bytes:
        self.need(n, field)
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def array(self, dtype, count: int, field: str) -> np.ndarray:
        """`count` items of `dtype` (a numpy dtype, structured ones included), copied and writable."""
        dt = np.dtype(dtype)
        if count < 0:
            raise FormatError(f"negative count {count}", self.pos, field)
        self.need(count * dt.itemsize, field)
        out = np.frombuffer(self.data, dt, count, self.pos).copy()
        self.pos += count * dt.itemsize
        return out

    def f32s(self, count: int, field: str) -> np.ndarray:
        return self.array("<f4", count, field)

    def count(self, field: str, item_size: int, signed: bool = False) -> int:
        """A u32 (or i32) item count, refused if `count * item_size` exceeds the bytes left."""
        at = self.pos
        n = self.i32(field) if signed else self.u32(field)
        if n < 0:
            raise FormatError(f"negative count {n}", at, field)
        if n * max(item_size, 0) > self.remaining():
            raise FormatError(f"count {n} needs at least {n * item_size} bytes, {self.remaining()} left", at, field)
        return n

    def cstring(self, field: str, encoding: str = "utf-8") -> str:
        """Bytes up to a NUL; decoded with surrogateescape so that any bytes write back unchanged."""
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise FormatError("string has no terminating NUL before the end of the file", self.pos, field)
        raw = self.data[self.pos:end]
        self.pos = end + 1
        return raw.decode(encoding, "surrogateescape")

    def lstring(self, field: str, encoding: str = "utf-8", length_size: int = 4) -> str:
        """A string preceded by its byte length (u32 by default)."""
        at = self.pos
        n = self.u32(field) if length_size == 4 else self.u16(field) if length_size == 2 else self.u8(field)
        if n > self.remaining():
            raise FormatError(f"string length {n} exceeds the {self.remaining()} bytes left", at, field)
        errors = "surrogateescape" if encoding.replace("-", "").lower() in ("utf8", "ascii") else "surrogatepass"
        try:
            return self.bytes(n, field).decode(encoding, errors)
        except UnicodeDecodeError as e:
            raise FormatError(f"string is not valid {encoding}: {e.reason}", at + 4, field) from None

    def magic(self, options: tuple[bytes, ...], field: str = "magic") -> bytes:
        at = self.pos
        n = len(options[0])
        if self.remaining() < n:
            raise FormatError(f"file too short for magic {options}", at, field)
        got = self.bytes(n, field)
        if got not in options:
            raise FormatError(f"expected one of {[o.decode('latin-1') for o in options]}, found {got!r}", at, field)
        return got


class Read(NamedTuple):
    """One read seen by `trace_reads`: `size` bytes at `offset` for `field`."""
    offset: int
    size: int
    field: str
    dtype: np.dtype | None  # the item layout of an `array` read (records, floats); None for any other read


@contextlib.contextmanager
def trace_reads() -> Iterator[list[Read]]:
    """Record every read (and every `need` check) of every Reader inside the block, in order, so that a test
    can name the field a byte offset belongs to. Reader's methods are swapped for the block only: outside it
    reading costs nothing extra. Not for threads (the swap is process-wide)."""
    reads: list[Read] = []
    need, array, cstring = Reader.need, Reader.array, Reader.cstring

    def traced_need(self: Reader, n: int, field: str) -> None:
        need(self, n, field)
        reads.append(Read(self.pos, n, field, None))

    def traced_array(self: Reader, dtype, count: int, field: str) -> np.ndarray:
        at, mark = self.pos, len(reads)
        out = array(self, dtype, count, field)
        del reads[mark:]  # its own need() check: the array's record says more
        reads.append(Read(at, self.pos - at, field, np.dtype(dtype)))
        return out

    def traced_cstring(self: Reader, field: str, encoding: str = "utf-8") -> str:
        at = self.pos
        out = cstring(self, field, encoding)
        reads.append(Read(at, self.pos - at, field, None))
        return out

    Reader.need, Reader.array, Reader.cstring = traced_need, traced_array, traced_cstring
    try:
        yield reads
    finally:
        Reader.need, Reader.array, Reader.cstring = need, array, cstring


class Writer:
    """Little-endian writer into a growing bytearray."""

    def __init__(self):
        self.buf = bytearray()

    def tell(self) -> int:
        return len(self.buf)

    def getvalue(self) -> bytes:
        return bytes(self.buf)

    def u8(self, v: int) -> None:
        self.buf += _U8.pack(v)

    def i8(self, v: int) -> None:
        self.buf += _I8.pack(v)

    def u16(self, v: int) -> None:
        self.buf += _U16.pack(v)

    def i16(self, v: int) -> None:
        self.buf += _I16.pack(v)

    def u32(self, v: int) -> None:
        self.buf += _U32.pack(v)

    def i32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def f32(self, v) -> None:
        self.buf += np.asarray(v, dtype="<f4").tobytes()

    def bytes(self, b: bytes) -> None:
        self.buf += b

    def array(self, a: np.ndarray, dtype=None) -> None:
        a = np.asarray(a)
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("<"))
        self.buf += np.ascontiguousarray(a).tobytes()

    def f32s(self, values) -> None:
        self.array(np.asarray(values, dtype="<f4"))

    def cstring(self, s: str, encoding: str = "utf-8") -> None:
        raw = s.encode(encoding, "surrogateescape")
        if b"\0" in raw:
            raise ValueError(f"name {s!r} contains a NUL byte")
        self.buf += raw + b"\0"

    def lstring(self, s: str, encoding: str = "utf-8", length_size: int = 4) -> None:
        errors = "surrogateescape" if encoding.replace("-", "").lower() in ("utf8", "ascii") else "surrogatepass"
        raw = s.encode(encoding, errors)
        {4: self.u32, 2: self.u16, 1: self.u8}[length_size](len(raw))
        self.buf += raw
