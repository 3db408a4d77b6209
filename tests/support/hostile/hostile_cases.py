"""What a hostile case is, how one is built and how it is run and measured.

Shared by the hostile suite (`tests/safety/test_hostile.py`) and the fuzz harness (`bench/fuzz`): both drive
a codec through `exercise`, which is the whole contract of the "Bad input" rule of docs/architecture.md §7.1:

* the reader either returns records or raises `FormatError` (nothing else, ever);
* records it returns write back to the same bytes (the codec keeps semantic faults);
* the semantic step (the mapping a Blender import runs, or the format's `check`) either raises `FormatError`
  or returns its warnings.

No pytest and no bpy here: this module is imported by a fuzzing process too.
"""
from __future__ import annotations

import resource
import struct
import time
import tracemalloc
from dataclasses import dataclass, field
from typing import Callable

from skinbridge.core.errors import FormatError

# What a case must do. REJECT: the read raises FormatError. SEMANTIC: the read succeeds (the layout allows
# the value) and the semantic step raises FormatError or warns. MAP_ERROR: the read succeeds and the semantic
# step raises FormatError (the value would index out of range or loop). WARN: the read succeeds with at
# least one warning somewhere. VALID: the read and the semantic step succeed. ANY: anything but a crash.
REJECT, SEMANTIC, MAP_ERROR, WARN, VALID, ANY = "reject", "semantic", "map-error", "warn", "valid", "any"

TIME_LIMIT_S = 1.0
MEMORY_LIMIT = 256 << 20


class RoundTripMismatch(AssertionError):
    """Records read from a file did not write back to the same bytes."""


@dataclass
class Case:
    name: str
    data: bytes
    expect: str = ANY
    why: str = ""  # what the case attacks, for failure messages
    known: str | None = None  # a known finding (reported, not yet fixed): the test is an xfail naming it


@dataclass
class Outcome:
    rejected: FormatError | None = None  # the read's FormatError
    map_error: FormatError | None = None  # the semantic step's FormatError
    warnings: list[str] = field(default_factory=list)  # the read's and the semantic step's warnings
    seconds: float = 0.0
    peak_bytes: int = 0  # tracemalloc peak above the level before the case
    rss_growth: int = 0  # growth of the process's maximum resident set size during the case

    @property
    def read(self) -> bool:
        return self.rejected is None


@dataclass
class Codec:
    """One entry of the registry: what the suite and the fuzzer need to know about a format."""

    name: str
    read: Callable[[bytes], object]
    write: Callable[[object], bytes] | None  # None: no byte-exact write back (text formats)
    semantic: Callable[[object], list[str]] | None  # the mapping / check run after a successful read
    seeds: Callable[[], list[tuple[str, bytes]]]  # real files (from ../shared/testdata) and code-made samples
    hostile: Callable[[], list[Case]]  # the targeted cases of this format
    binary: bool = True  # generic cuts and count smashing apply
    record_warnings: Callable[[object], list[str]] = lambda rec: list(getattr(rec, "warnings", []) or [])
    max_len: int = 1 << 16  # fuzzer input size cap (keeps executions per second high)
    modules: tuple[str, ...] = ()  # the format's own modules (set by the registry; line coverage is of these)
    # known findings (reported, not fixed yet): "ExceptionType: start of its message" -> description. The suite
    # marks a case or a fuzz run that hits one as an expected failure; remove the entry with the fix.
    known_crashes: dict[str, str] = field(default_factory=dict)

    def known(self, error_text: str) -> str | None:
        return next((why for key, why in self.known_crashes.items() if key in error_text), None)


def exercise(codec: Codec, data: bytes) -> Outcome:
    """Run the contract on one input. Returns what happened; any exception is a finding."""
    out = Outcome()
    try:
        record = codec.read(data)
    except FormatError as e:
        out.rejected = e
        return out
    out.warnings += codec.record_warnings(record)
    if codec.write is not None:
        again = codec.write(record)
        if again != data:
            n = min(len(again), len(data))
            first = next((i for i in range(n) if again[i] != data[i]), n)
            note = ""
            for at in range(max(first - 3, 0), first + 1):
                if data[at:at + 4] == b"\0\0\0\x80" and again[at:at + 4] == b"\0\0\0\0":
                    note = f"; the float32 at {at} is -0.0 in the file and +0.0 written back"
            raise RoundTripMismatch(f"{codec.name}: read -> write differs at byte {first} "
                                    f"({len(data)} bytes in, {len(again)} out){note}")
    if codec.semantic is not None:
        try:
            out.warnings += list(codec.semantic(record))
        except FormatError as e:
            out.map_error = e
    return out


def _reset_peak() -> bool:
    """Set this process's peak resident size (VmHWM) back to its current size, so that the peak read after a
    case is that case's own (the process-wide ru_maxrss never comes down); False where Linux refuses."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _status_bytes(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _max_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def measured(codec: Codec, data: bytes, trace: bool = True) -> Outcome:
    """`exercise` with its wall time and max-RSS growth, then (with `trace`) once more under tracemalloc for
    the peak of Python and numpy allocations (tracemalloc slows Python code down: the time is taken from the
    first, untraced run)."""
    exact = _reset_peak()
    rss0 = (_status_bytes("VmRSS") if exact else None) or _max_rss()
    t0 = time.perf_counter()
    out = exercise(codec, data)
    out.seconds = time.perf_counter() - t0
    if trace:
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            exercise(codec, data)
            out.peak_bytes = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
    peak = _status_bytes("VmHWM") if exact else None
    out.rss_growth = (peak if peak is not None else _max_rss()) - rss0
    return out


def problems(case: Case, out: Outcome, has_semantic: bool = True) -> list[str]:
    """Why an outcome breaks the case's expectation and the limits (empty: it passes). Without a semantic
    step (a format whose mapping does not exist yet), SEMANTIC and MAP_ERROR only require the read."""
    bad = []
    if out.seconds > TIME_LIMIT_S:
        bad.append(f"took {out.seconds:.2f} s (limit {TIME_LIMIT_S} s)")
    if max(out.peak_bytes, out.rss_growth) > MEMORY_LIMIT:
        bad.append(f"used {max(out.peak_bytes, out.rss_growth) >> 20} MiB (limit {MEMORY_LIMIT >> 20} MiB)")
    e = case.expect
    if not has_semantic and e in (SEMANTIC, MAP_ERROR):
        e = VALID
    if e == REJECT and out.read:
        bad.append("was read; expected FormatError")
    elif e in (SEMANTIC, MAP_ERROR, WARN, VALID) and not out.read:
        bad.append(f"was rejected ({out.rejected}); expected it to read")
    elif e == SEMANTIC and out.map_error is None and not out.warnings:
        bad.append("read without a warning or FormatError from the semantic step")
    elif e == MAP_ERROR and out.map_error is None:
        bad.append(f"semantic step raised no FormatError (warnings: {out.warnings[:3]})")
    elif e == WARN and not out.warnings:
        bad.append("read without a warning")
    elif e == VALID and out.map_error is not None:
        bad.append(f"semantic step raised {out.map_error}")
    return bad


# -- building files --------------------------------------------------------------------------------------

class Layout:
    """Little-endian bytes built field by field, each field's offset kept under a label, so that a hostile
    variant is "the base with field X set to V" or "the base cut at field X"."""

    def __init__(self):
        self.buf = bytearray()
        self.at: dict[str, int] = {}
        self.fmt: dict[str, str] = {}

    def put(self, label: str | None, fmt: str, *values) -> "Layout":
        if label is not None:
            self.at[label] = len(self.buf)
            self.fmt[label] = fmt
        self.buf += struct.pack("<" + fmt, *values)
        return self

    def field(self, label: str, fmt: str, *values) -> "Layout":
        """One field of `fields`: a struct format here; a format's builder may give other kinds of field."""
        return self.put(label, fmt, *values)

    def fields(self, prefix: str, *specs: tuple) -> "Layout":
        """A record's fields in file order, each `(name, fmt, *values)` labelled "<prefix> <name>"."""
        for name, fmt, *values in specs:
            self.field(f"{prefix} {name}", fmt, *values)
        return self

    def raw(self, label: str | None, data: bytes) -> "Layout":
        if label is not None:
            self.at[label] = len(self.buf)
        self.buf += data
        return self

    def cstring(self, label: str | None, text: str) -> "Layout":
        return self.raw(label, text.encode("utf-8") + b"\0")

    def bytes(self) -> bytes:
        return bytes(self.buf)

    def set(self, label: str, *values, fmt: str | None = None) -> bytes:
        b = bytearray(self.buf)
        struct.pack_into("<" + (fmt or self.fmt[label]), b, self.at[label], *values)
        return bytes(b)

    def cut(self, label: str, extra: int = 0) -> bytes:
        return bytes(self.buf[:self.at[label] + extra])

    def splice(self, label: str, old_size: int, new: bytes) -> bytes:
        """Replace `old_size` bytes at the field with `new` (lengths may differ)."""
        a = self.at[label]
        return bytes(self.buf[:a]) + new + bytes(self.buf[a + old_size:])


NAN = float("nan")
INF = float("inf")
NAN_BITS = (0x7FC00000, 0x7FA00000, 0xFFFFFFFF)  # quiet NaN, signalling NaN, all-ones NaN: all keep their bits
INF_BITS = (0x7F800000, 0xFF800000)
HUGE_COUNTS = (0xFFFFFFFF, 0x80000000, 0x7FFFFFFF)


def poison(data: bytes | bytearray, at: int, k: int) -> list[tuple[str, bytes]]:
    """The float at byte `at` replaced by one NaN and one infinity (bit patterns rotate with `k`, so that a
    file's cases together use quiet, signalling and all-ones NaNs and both infinities)."""
    out = []
    for bits in (NAN_BITS[k % len(NAN_BITS)], INF_BITS[k % 2]):
        b = bytearray(data)
        b[at:at + 4] = bits.to_bytes(4, "little")
        kind = "NaN" if bits & 0x7FFFFF else ("+Inf" if bits == 0x7F800000 else "-Inf")
        out.append((f"{kind} 0x{bits:08x}", bytes(b)))
    return out


def count_attacks(base: Layout, labels: list[str], prefix: str) -> list[Case]:
    """Every count field set near 2^32, to 2^31 (negative as i32) and just past the bytes left."""
    cases = []
    for label in labels:
        fmt = base.fmt.get(label, "I")
        for v in HUGE_COUNTS + ((0x10000000,) if fmt in ("I", "L") else ()):
            value = v if fmt in ("I", "L") else struct.unpack("<i", struct.pack("<I", v))[0]
            cases.append(Case(f"{prefix}: {label} = 0x{v:08x}", base.set(label, value), REJECT,
                              f"{label} near 2^32 or negative"))
        left = len(base.buf) - base.at[label] - 4
        v = left + 1  # one item of at least a byte more than fits
        cases.append(Case(f"{prefix}: {label} = bytes left + 1", base.set(label, v), REJECT, f"{label} past the end"))
    return cases


def cuts(data: bytes, prefix: str, every: int = 1, head: int = 64) -> list[Case]:
    """The file cut at every byte of its first `head` bytes and at `every`-spaced points after that."""
    points = sorted(set(range(0, min(head, len(data)))) | set(range(head, len(data), max(every, 1))))
    return [Case(f"{prefix}: cut at {n} of {len(data)}", data[:n], ANY, "truncated") for n in points]


def smash_u32(data: bytes, prefix: str, limit: int = 256) -> list[Case]:
    """Every 4-byte-aligned word of the first `limit` bytes set to huge / negative counts."""
    out = []
    for at in range(0, min(limit, len(data) - 3), 4):
        for v in (0xFFFFFFFF, 0x80000000, 0x7FFFFFFF):
            b = bytearray(data)
            struct.pack_into("<I", b, at, v)
            out.append(Case(f"{prefix}: u32 at {at} = 0x{v:08x}", bytes(b), ANY, "smashed word"))
    return out


def generic_cases(codec: Codec) -> list[Case]:
    """Cases every binary format gets from its seeds: empty, 1 byte, cuts and smashed words."""
    cases = [Case("empty file", b"", REJECT, "zero-length"), Case("one byte", b"\0", REJECT, "1-byte file"),
             Case("one 0xFF byte", b"\xff", REJECT, "1-byte file")]
    seeds = sorted(codec.seeds(), key=lambda s: len(s[1]))
    for name, data in seeds[:3]:
        cases.append(Case(f"{name}: magic only", data[:4], REJECT, "magic, nothing else"))
        cases += cuts(data, name, every=max(1, len(data) // 24))
        cases += smash_u32(data, name, limit=160)
    return cases
