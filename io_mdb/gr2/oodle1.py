"""The Oodle1 section decompressor of Granny 2 files (docs/nwn2.md §5.2): an adaptive arithmetic coder over an
LZ77 stream, written from the public description of nwn2mdk's `gr2_decompress.cpp` (after xoreos' Granny
decoder).

```
stream:      3 × parameter block (12 bytes), then the arithmetic-coded symbols
parameters:  u32 bits 0–8 literal symbols, bits 9–31 longest back-reference distance;
             u32 bits 0–8 literal window capacity, bits 19–31 high-bits window capacity;
             u8 × 4 capacities of the length windows
```

The output is decoded in three runs (one parameter block each) ending at the section header's two stops and
its decompressed size. Every symbol is chosen by a small adaptive frequency table ("window") that learns the
values seen; a length symbol of 0 means one literal byte, else a copy from earlier output.

The coder is sequential (every symbol updates the tables the next one reads), so this is plain Python; only
the copies are slice operations. Every step writes at least one byte and the output never grows past the
declared size, so bad input ends in a `FormatError`, never a hang or a large allocation.

`compress` is the same model run the other way (an exact range encoder and a greedy LZ77 parse): the game's
files are never written compressed (the GR2 writer writes stored sections), but tests and the fuzzer's seeds
make compressed sections with it (hostile sizes on real streams, mutants that still decompress).
"""
from __future__ import annotations

import struct
from bisect import bisect_right

from ...core.errors import FormatError

PARAMETERS_SIZE = 12
RANGE = 0x4000  # every window's cumulative frequencies span 0..RANGE
LONG_COPIES = (128, 192, 256, 512)  # copy lengths of the length symbols 61..64
LENGTH_SYMBOLS = 65
SLACK = 16  # bytes the coder may read past the stream's end (as zeros) before it is cut short


class _Coder:
    """The arithmetic decoder: a numerator over a denominator renormalised a byte at a time, reading 7-bit
    steps across byte boundaries."""

    __slots__ = ("data", "pos", "numer", "denom", "step", "end")

    def __init__(self, data: bytes, start: int):
        self.data = data + bytes(SLACK + 2)
        self.end = len(data) + SLACK
        self.pos = start
        self.numer = self.data[start] >> 1
        self.denom = 0x80
        self.step = 1

    def peek(self, limit: int) -> int:
        """A value below `limit` from the current interval (not yet consumed: `take` does that)."""
        while self.denom <= 0x800000:
            data, pos = self.data, self.pos
            self.numer = ((self.numer << 8) | ((data[pos] << 7) & 0x80) | (data[pos + 1] >> 1)) & 0xFFFFFFFF
            self.pos = pos + 1
            self.denom <<= 8
            if self.pos > self.end:
                raise FormatError("the compressed stream ends before the section is complete", self.pos,
                                  "section data")
        if limit <= 0:
            raise FormatError(f"a symbol drawn from {limit} values (the parameters allow none)", self.pos,
                              "section data")
        self.step = self.denom // limit
        return min(self.numer // self.step, limit - 1)

    def take(self, limit: int, low: int, width: int) -> None:
        """Consume the sub-interval [low, low + width) of the `limit` parts."""
        self.numer = (self.numer - self.step * low) & 0xFFFFFFFF
        if low + width < limit:
            self.denom = self.step * width
        else:
            self.denom -= self.step * low
        if self.denom <= 0:
            raise FormatError("the arithmetic coder's interval became empty", self.pos, "section data")

    def uniform(self, limit: int) -> int:
        """A value below `limit`, all equally likely."""
        value = self.peek(limit)
        self.take(limit, value, 1)
        return value


def _uniform(coder: _Coder, limit: int) -> int:
    """`coder.uniform(limit)` written out (a window's escapes draw one or two per new value: a quarter of the
    symbols of a skeleton file), the same arithmetic as `peek` then `take`."""
    numer, denom = coder.numer, coder.denom
    if denom <= 0x800000:
        data, pos, end = coder.data, coder.pos, coder.end
        while denom <= 0x800000:
            numer = ((numer << 8) | ((data[pos] << 7) & 0x80) | (data[pos + 1] >> 1)) & 0xFFFFFFFF
            pos += 1
            denom <<= 8
            if pos > end:
                raise FormatError("the compressed stream ends before the section is complete", pos,
                                  "section data")
        coder.pos = pos
    if limit <= 0:
        raise FormatError(f"a symbol drawn from {limit} values (the parameters allow none)", coder.pos,
                          "section data")
    step = denom // limit
    value = min(numer // step, limit - 1)
    coder.numer = (numer - step * value) & 0xFFFFFFFF
    denom = step if value + 1 < limit else denom - step * value
    if denom <= 0:
        raise FormatError("the arithmetic coder's interval became empty", coder.pos, "section data")
    coder.denom, coder.step = denom, step
    return value


class _Window:
    """An adaptive table of the values a symbol took: slot 0 is the escape (a value not seen yet), the other
    slots are values with weights; cumulative ranges are rebuilt as the weights grow and the weights halved
    when they grow too large."""

    __slots__ = ("capacity", "ranges", "values", "weights", "total", "increase", "increase_cap", "rebuild_at",
                 "halve_at")

    def __init__(self, max_value: int, capacity: int):
        self.capacity = capacity + 1
        self.ranges = [0, RANGE]
        self.values = [0]
        self.weights = [4]
        self.total = 4
        self.increase = 4
        self.rebuild_at = 8
        self.halve_at = max(256, min(32 * max_value, 15160))
        self.increase_cap = min(2 * max_value, self.halve_at // 2 - 32) if max_value > 64 else 128

    def _halve(self) -> None:
        weights, values = self.weights, self.values
        for i in range(len(weights)):
            weights[i] //= 2
        self.total = sum(weights)
        i = 1
        while i < len(weights):  # drop the values whose weight fell to 0 (the last one takes the place)
            while i < len(weights) and weights[i] == 0:
                weights[i], values[i] = weights[-1], values[-1]
                weights.pop()
                values.pop()
            i += 1
        if len(weights) > 1:
            top = max(range(1, len(weights)), key=weights.__getitem__)  # the first of the heaviest
            weights[top], weights[-1] = weights[-1], weights[top]
            values[top], values[-1] = values[-1], values[top]
        if len(weights) < self.capacity and weights[0] == 0:
            weights[0] = 1
            self.total += 1

    def _rebuild(self) -> None:
        if self.total <= 0:
            raise FormatError("an adaptive window lost every weight", None, "section data")
        scale = 8 * RANGE // self.total
        ranges, start = [], 0
        for w in self.weights:
            ranges.append(start)
            start += w * scale // 8
        ranges.append(RANGE)
        self.ranges = ranges
        if self.increase > self.increase_cap // 2:
            self.rebuild_at = self.total + self.increase_cap
        else:
            self.increase *= 2
            self.rebuild_at = self.total + self.increase

    def decode(self, coder: _Coder, new_limit: int) -> int:
        """The next value: a known one by its weight, or (escape) a new one read uniformly below `new_limit`."""
        if self.total >= self.rebuild_at:
            if self.rebuild_at >= self.halve_at:
                self._halve()
            self._rebuild()
        # coder.peek(RANGE) and coder.take(...) written out: this is the decoder's one hot path (a call per
        # symbol costs as much as the arithmetic); RANGE is 2**14, so the step is a shift
        numer, denom = coder.numer, coder.denom
        if denom <= 0x800000:
            data, pos, end = coder.data, coder.pos, coder.end
            while denom <= 0x800000:
                numer = ((numer << 8) | ((data[pos] << 7) & 0x80) | (data[pos + 1] >> 1)) & 0xFFFFFFFF
                pos += 1
                denom <<= 8
                if pos > end:
                    raise FormatError("the compressed stream ends before the section is complete", pos,
                                      "section data")
            coder.pos = pos
        step = denom >> 14
        value = numer // step
        ranges = self.ranges
        slot = bisect_right(ranges, value if value < RANGE else RANGE - 1) - 1
        low, high = ranges[slot], ranges[slot + 1]
        coder.numer = (numer - step * low) & 0xFFFFFFFF
        denom = step * (high - low) if high < RANGE else denom - step * low
        if denom <= 0:
            raise FormatError("the arithmetic coder's interval became empty", coder.pos, "section data")
        coder.denom, coder.step = denom, step
        self.weights[slot] += 1
        self.total += 1
        if slot > 0:
            return self.values[slot]
        known = len(ranges)  # values added since the last rebuild have no range yet
        if len(self.weights) >= known and _uniform(coder, 2) == 1:
            slot = known - 1 + _uniform(coder, len(self.weights) - known + 1)
            self.weights[slot] += 2
            self.total += 2
            return self.values[slot]
        value = _uniform(coder, new_limit)
        self.values.append(value)
        self.weights.append(2)
        self.total += 2
        if len(self.weights) == self.capacity:
            self.total -= self.weights[0]
            self.weights[0] = 0
        return value

    def encode(self, coder: _Encoder, value: int, new_limit: int) -> None:
        """Code `value` so that `decode` reads it back, changing the window exactly as `decode` does."""
        if self.total >= self.rebuild_at:
            if self.rebuild_at >= self.halve_at:
                self._halve()
            self._rebuild()
        ranges, values, weights = self.ranges, self.values, self.weights
        known = len(ranges)
        slot = _ranged_slot(values, ranges, value)
        if slot == 0 and ranges[1] == ranges[0]:
            raise ValueError(f"value {value} is not in a full window")
        coder.encode(RANGE, ranges[slot], ranges[slot + 1] - ranges[slot])
        weights[slot] += 1
        self.total += 1
        if slot > 0:
            return
        if len(weights) >= known:
            later = values.index(value, known - 1) if value in values[known - 1:] else None
            coder.encode(2, int(later is not None), 1)
            if later is not None:
                coder.encode(len(weights) - known + 1, later - (known - 1), 1)
                weights[later] += 2
                self.total += 2
                return
        if not 0 <= value < new_limit:
            raise ValueError(f"value {value} is outside the window's 0..{new_limit - 1}")
        coder.encode(new_limit, value, 1)
        values.append(value)
        weights.append(2)
        self.total += 2
        if len(weights) == self.capacity:
            self.total -= weights[0]
            weights[0] = 0


def _ranged_slot(values: list[int], ranges: list[int], value: int) -> int:
    """The first slot holding `value` whose range is not empty (0, the escape, when none)."""
    at = 1
    while True:
        try:
            at = values.index(value, at, len(ranges) - 1)
        except ValueError:
            return 0
        if ranges[at + 1] > ranges[at]:
            return at
        at += 1


class _Run:
    """The tables of one of the three runs, from its parameter block."""

    def __init__(self, block: bytes):
        word0, word1 = struct.unpack_from("<II", block)
        self.literal_max = word0 & 0x1FF
        self.distance_max = word0 >> 9
        literal_capacity = word1 & 0x1FF
        high_capacity = word1 >> 19
        lengths = block[8:12]
        self.low_max = min(self.distance_max + 1, 4)
        self.mid_max = min(self.distance_max // 4 + 1, 256)
        self.high_max = self.distance_max // 1024 + 1
        self.low = _Window(self.low_max - 1, self.low_max)
        self.high = _Window(self.high_max - 1, high_capacity + 1)
        self.mid: dict[int, _Window] = {}  # made on first use: up to 8,193 of them, most never used
        self.literals = [_Window(self.literal_max - 1, literal_capacity) for _ in range(4)]
        # windows 0–15 use the 4th capacity, 16–31 the 3rd, 32–47 the 2nd, 48–64 the 1st
        self.lengths = [_Window(64, lengths[3 - i // 16] if i < 64 else lengths[0]) for i in range(LENGTH_SYMBOLS)]
        self.last_length = 0
        self.decoded = 0


def _copy(out: bytearray, pos: int, distance: int, length: int) -> None:
    """LZ copy of `length` bytes from `distance` back (overlapping copies repeat the pattern)."""
    source = out[pos - distance:pos - distance + length] if length <= distance else \
        (out[pos - distance:pos] * (length // distance + 1))[:length]
    out[pos:pos + length] = source


def _decode_run(coder: _Coder, run: _Run, out: bytearray, pos: int, stop: int, section_start: int) -> int:
    size = len(out)
    lengths, literals, literal_max = run.lengths, run.literals, run.literal_max  # the loop's lookups, once
    while pos < stop:
        symbol = lengths[run.last_length].decode(coder, LENGTH_SYMBOLS)
        run.last_length = symbol
        if symbol == 0:
            out[pos] = literals[(pos - section_start) & 3].decode(coder, literal_max) & 0xFF
            run.decoded += 1
            pos += 1
            continue
        length = symbol + 1 if symbol < 61 else LONG_COPIES[symbol - 61]
        reach = min(run.distance_max, run.decoded)
        low = run.low.decode(coder, run.low_max)
        high = run.high.decode(coder, reach // 1024 + 1)
        mid_window = run.mid.get(high)
        if mid_window is None:
            if high >= run.high_max:
                raise FormatError(f"copy distance block {high} beyond the {run.high_max} the parameters allow",
                                  coder.pos, "section data")
            mid_window = run.mid[high] = _Window(run.mid_max - 1, run.mid_max)
        mid = mid_window.decode(coder, min(reach // 4 + 1, 256))
        distance = (high << 10) + (mid << 2) + low + 1
        if distance > pos - section_start:
            raise FormatError(f"a copy reaches {distance} bytes back from output byte {pos - section_start}",
                              coder.pos, "section data")
        if pos + length > size:
            raise FormatError(f"the decompressed data exceed the declared {size - section_start} bytes",
                              coder.pos, "section data")
        _copy(out, pos, distance, length)
        run.decoded += length
        pos += length
    return pos


def decompress(data: bytes, stops: tuple[int, int], size: int) -> bytes:
    """The `size` bytes a section's Oodle1 `data` hold; `stops` are the section header's first16bit and
    first8bit, where the second and the third run begin."""
    if size == 0:
        return b""
    if len(data) < 3 * PARAMETERS_SIZE + 1:
        raise FormatError(f"{len(data)} bytes cannot hold the 36 bytes of parameters and a stream", 0,
                          "section data")
    first, second = stops
    if not 0 <= first <= second <= size:
        raise FormatError(f"stops {first}, {second} are not in order within the {size} bytes", None,
                          "first16bit/first8bit")
    out = bytearray(size)
    coder = _Coder(bytes(data), 3 * PARAMETERS_SIZE)
    pos = 0
    for i, stop in enumerate((first, second, size)):
        pos = _decode_run(coder, _Run(data[i * PARAMETERS_SIZE:(i + 1) * PARAMETERS_SIZE]), out, pos, stop, 0)
    return bytes(out)


# -- the encoder (tests and fuzzing seeds; see the module's docstring) -----------------------------------------

_LOW_BITS = 40  # the encoder keeps this many low bits of its interval's start as an int, the rest as bytes
_LOW_MASK = (1 << _LOW_BITS) - 1
_VALID_LENGTHS = tuple(range(61, 1, -1))  # copy lengths of the length symbols 1..60


class _Encoder:
    """The range encoder `_Coder` reads: the same interval arithmetic with the interval's start kept exactly
    (a carry runs into the bytes already settled), so any sequence of `encode` calls decodes back."""

    __slots__ = ("low", "range", "bits", "settled")

    def __init__(self):
        self.low = 0
        self.range = 0x80
        self.bits = 7
        self.settled = bytearray()

    def encode(self, limit: int, low: int, width: int) -> None:
        """The sub-interval [low, low + width) of `limit` parts, as `_Coder.peek` and `take` consume it."""
        while self.range <= 0x800000:
            self.settled.append(self.low >> (_LOW_BITS - 8))
            self.low = (self.low << 8) & _LOW_MASK
            self.range <<= 8
            self.bits += 8
        step = self.range // limit
        self.low += step * low
        if low + width < limit:
            self.range = step * width
        else:
            self.range -= step * low
        if self.low >> _LOW_BITS:
            self.low &= _LOW_MASK
            i = len(self.settled) - 1
            while self.settled[i] == 0xFF:
                self.settled[i] = 0
                i -= 1
            self.settled[i] += 1

    def finish(self) -> bytes:
        """The stream: the interval's start in the bits read so far, zeros after."""
        value = (int.from_bytes(self.settled, "big") << _LOW_BITS) | self.low
        pad = -self.bits % 8
        return (value << pad).to_bytes((self.bits + pad) // 8, "big")


def _parameters(span: int) -> bytes:
    """A parameter block whose windows never fill: every byte a literal, copies up to `span` bytes back."""
    distance_max = min(max(span, 1), 1 << 22)  # high windows up to 4,097 values: within the 13 bits
    return struct.pack("<II4B", 256 | distance_max << 9, 256 | (distance_max // 1024 + 1) << 19,
                       *(LENGTH_SYMBOLS,) * 4)


def _match(data: bytes, source: int, pos: int, most: int) -> int:
    """The longest copy length the length symbols allow (0: none) of `data[pos:]` from `source`."""
    for n in reversed(LONG_COPIES):
        if n <= most and data[source:source + n] == data[pos:pos + n]:
            return n
    lo, hi = 0, min(_VALID_LENGTHS[0], most)  # the longest common prefix, by halves
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if data[source:source + mid] == data[pos:pos + mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo if lo >= 2 else 0


def _encode_run(coder: _Encoder, run: _Run, data: bytes, pos: int, stop: int) -> int:
    start, heads = pos, {}
    while pos < stop:
        length = distance = 0
        key = data[pos:pos + 3]
        for source in reversed(heads.get(key, ())):
            if pos - source <= min(run.distance_max, run.decoded):
                n = _match(data, source, pos, stop - pos)
                if n > length:
                    length, distance = n, pos - source
        symbol = 0 if not length else length - 1 if length <= 61 else 61 + LONG_COPIES.index(length)
        run.lengths[run.last_length].encode(coder, symbol, LENGTH_SYMBOLS)
        run.last_length = symbol
        if not symbol:
            run.literals[pos % 4].encode(coder, data[pos], run.literal_max)
            length = 1
        else:
            reach = min(run.distance_max, run.decoded)
            high, rest = divmod(distance - 1, 1024)
            mid, low = divmod(rest, 4)
            run.low.encode(coder, low, run.low_max)
            run.high.encode(coder, high, reach // 1024 + 1)
            if high not in run.mid:
                run.mid[high] = _Window(run.mid_max - 1, run.mid_max)
            run.mid[high].encode(coder, mid, min(reach // 4 + 1, 256))
        for at in range(pos, pos + length) if length < 64 else (pos, pos + length - 1):
            if at >= start:
                heads.setdefault(data[at:at + 3], []).append(at)
                if len(heads[data[at:at + 3]]) > 8:
                    del heads[data[at:at + 3]][0]
        run.decoded += length
        pos += length
    return pos


def compress(data: bytes, stops: tuple[int, int] | None = None) -> bytes:
    """Oodle1 data that `decompress(result, stops, len(data))` turns back into `data` (stops: where the second
    and third runs begin; default: one run)."""
    size = len(data)
    first, second = stops if stops is not None else (size, size)
    if not 0 <= first <= second <= size:
        raise ValueError(f"stops {first}, {second} are not in order within the {size} bytes")
    coder, blocks, pos = _Encoder(), [], 0
    for stop in (first, second, size):
        block = _parameters(stop - pos)
        blocks.append(block)
        pos = _encode_run(coder, _Run(block), data, pos, stop)
    return b"".join(blocks) + coder.finish()
