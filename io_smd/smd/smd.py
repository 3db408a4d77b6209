"""Valve SMD / VTA codec (Studiomdl Data, text): file bytes ⇄ `SmdFile` records, one field per column.

Grammar (docs/source.md §2, §3): `version 1`, then the blocks `nodes`, `skeleton`
(`time k` lines, each followed by `<bone> px py pz rx ry rz` rows), `triangles` (a material line and three
vertex lines `<parent> px py pz nx ny nz u v [<n> (<bone> <weight>)×n]` per triangle) and, in a VTA,
`vertexanimation` (`time k` lines and `<vertex> px py pz nx ny nz` rows). Each block ends at `end` or at a
blank line; lines whose text starts with `//` are skipped; indentation, CRLF and GoldSrc rows without link
columns are accepted. Nothing is interpreted here: rows are kept as written, numbers as float64.

Speed: the numeric rows are never split by a Python loop per line. The line table (starts, stripped ends,
kinds) is computed with numpy over the whole buffer; every token of every numeric row is then parsed at once
(`_parse_tokens`, exact: integer mantissa over a power of ten), and the writer lays out all digits of a block
in one byte matrix (`_float_cells`), equal to Python's `'{:.6f}'` for every value.

Write-back: records are always formatted (the canonical layout: equal to the original token by token for
Blender Source Tools' files, numbers within 1e-6, the file's own line ends and per-line link columns); text
files are not promised back byte for byte here (through Blender, `kept.py` writes an unchanged file's own bytes).

Structural faults raise `FormatError(message, offset, field)` with the byte offset of the line and "line N" in
the message. Values that the layout allows but the meaning forbids (bone ids out of range, parent cycles,
weights) are kept; `check` lists them, and `write` refuses ids out of range and cycles in anything it formats.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...core.errors import FormatError
from ...core.quoting import quoted

MAX_LINE = 64 << 10  # bytes in one line (a longer line is refused before it is split)
MAX_LINKS = 32  # links on one vertex line
MAX_ITEMS = 1 << 20  # nodes, and frames of one block
MAX_DIGITS = 15  # significant digits parsed by the fast path (exact below 2^53)

_WS = np.zeros(256, bool)
_WS[[9, 10, 11, 12, 13, 32]] = True
_NUMERIC_START = np.zeros(256, bool)
_NUMERIC_START[list(b"0123456789+-.")] = True

VERTEX_FIELDS = ("parent bone", "position x", "position y", "position z", "normal x", "normal y", "normal z",
                 "u", "v", "link count")
BONE_FIELDS = ("bone id", "position x", "position y", "position z", "rotation x", "rotation y", "rotation z")
FLEX_FIELDS = ("vertex id", "position x", "position y", "position z", "normal x", "normal y", "normal z")


# -- records ---------------------------------------------------------------------------------------------

@dataclass
class Node:
    id: int
    name: str
    parent: int
    line: int = 0  # 1-based line in the file it was read from (0: made in code)


@dataclass
class Frame:
    """One `time k` of a skeleton block: the bone rows that follow it, in file order."""
    time: int
    bones: np.ndarray  # (R,) int64 node ids
    positions: np.ndarray  # (R, 3) float64, relative to the parent
    rotations: np.ndarray  # (R, 3) float64 Euler radians, R = Rz·Ry·Rx
    comment: str | None = None  # text after `#` on the time line (a VTA's shape name)
    line: int = 0
    row_lines: np.ndarray | None = None  # (R,) int64


@dataclass
class Triangles:
    materials: list[str]  # (T,) one name per triangle
    parents: np.ndarray  # (3T,) int64 the "parent bone" column
    positions: np.ndarray  # (3T, 3) float64
    normals: np.ndarray  # (3T, 3)
    uvs: np.ndarray  # (3T, 2)
    link_counts: np.ndarray  # (3T,) int64; -1: the line has no link columns (GoldSrc)
    link_bones: np.ndarray  # (3T, K) integer node ids (int32 as read, int64 when one needs it), -1 past the count
    link_weights: np.ndarray  # (3T, K) float64, 0 past the line's count
    lines: np.ndarray | None = None  # (3T,) int64 line of each vertex

    def __len__(self) -> int:
        return len(self.materials)


@dataclass
class FlexFrame:
    """One `time k` of a vertexanimation block: vertex ids are corners of the reference's triangle list."""
    time: int
    vertices: np.ndarray  # (R,) int64
    positions: np.ndarray  # (R, 3) float64
    normals: np.ndarray  # (R, 3)
    comment: str | None = None
    line: int = 0
    row_lines: np.ndarray | None = None


@dataclass
class SmdFile:
    version: int = 1
    nodes: list[Node] = field(default_factory=list)
    skeleton: list[Frame] = field(default_factory=list)
    triangles: Triangles | None = None
    vertex_animation: list[FlexFrame] | None = None
    newline: str = "\n"  # "\r\n" when the file was read with CRLF
    warnings: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        if self.vertex_animation is not None:
            return "flex"
        if self.triangles is not None:
            return "model"
        return "motion"

    @property
    def goldsrc(self) -> bool:
        """Every vertex line without link columns (the GoldSrc flavour)."""
        t = self.triangles
        return t is not None and len(t.link_counts) > 0 and bool(np.all(t.link_counts < 0))


# -- the line table --------------------------------------------------------------------------------------

class _Lines:
    """Every line of the file as byte spans: `start`/`end` (without the newline), `s`/`e` stripped."""

    def __init__(self, data: bytes):
        self.data = data
        buf = self.buf = np.frombuffer(data, np.uint8)
        n = len(buf)
        step = 1 << 22  # a piece at a time: no temporary the size of the file
        nl = np.concatenate([np.flatnonzero(buf[a:a + step] == 10) + a for a in range(0, n, step)] or
                            [np.zeros(0, np.int64)])
        start = np.concatenate((np.zeros(1, np.int64), nl + 1))
        end = np.concatenate((nl, np.full(1, n, np.int64)))
        if len(start) > 1 and start[-1] == n:  # the newline after the last line
            start, end = start[:-1], end[:-1]
        long_ = np.flatnonzero(end - start > MAX_LINE)
        if long_.size:
            i = int(long_[0])
            raise FormatError(f"line {i + 1}: {int(end[i] - start[i])} bytes long, above the {MAX_LINE}-byte "
                              f"limit", int(start[i]), "line length")
        self.start, self.end = start, end
        self.s = self._strip(start, end, forward=True)  # the same array as `start` when no line is indented
        self.e = self._strip(end, self.s, forward=False)
        self.crlf = bool(len(nl) and nl[0] > 0 and buf[nl[0] - 1] == 13)

    def _strip(self, pos: np.ndarray, limit: np.ndarray, forward: bool) -> np.ndarray:
        """`pos` moved past the whitespace at each line's start (end, not `forward`); `pos` itself when no line
        has any, else a copy."""
        buf = self.buf
        active = np.flatnonzero(pos < limit) if forward else np.flatnonzero(pos > limit)
        at = pos[active] if forward else pos[active] - 1
        active = active[_WS[buf[at]]]
        if not active.size:
            return pos
        pos = pos.copy()
        for _ in range(8):
            if not active.size:
                return pos
            at = pos[active] if forward else pos[active] - 1
            active = active[_WS[buf[at]]]
            pos[active] += 1 if forward else -1
            active = active[pos[active] < limit[active]] if forward else active[pos[active] > limit[active]]
        for i in active:  # deeper indentation than 8: rare, done line by line
            raw = self.data[pos[i]:limit[i]] if forward else self.data[limit[i]:pos[i]]
            if forward:
                pos[i] += len(raw) - len(raw.lstrip())
            else:
                pos[i] -= len(raw) - len(raw.rstrip())
        return pos

    def __len__(self) -> int:
        return len(self.start)

    def text(self, i: int) -> str:
        return self.data[self.s[i]:self.e[i]].decode("utf-8", "surrogateescape")

    def prefix(self, word: bytes) -> np.ndarray:
        """Lines whose stripped text starts with `word` followed by whitespace or the line end."""
        buf, s, e = self.buf, self.s, self.e
        k = len(word)
        last = len(buf) - 1
        # lines long enough whose first byte matches; the other bytes are compared on those lines only
        at = np.flatnonzero((e - s >= k) & (buf[np.minimum(s, last)] == word[0]))
        for j, ch in enumerate(word[1:], 1):
            at = at[buf[s[at] + j] == ch]
        length = e[at] - s[at]
        at = at[(length == k) | _WS[buf[np.minimum(s[at] + k, last)]]]
        ok = np.zeros(len(s), bool)
        ok[at] = True
        return ok

    def equals(self, word: bytes) -> np.ndarray:
        return self.prefix(word) & (self.e - self.s == len(word))


def _line_texts(L: _Lines, rows: np.ndarray, distinct: int = 64) -> list[str]:
    """The stripped text of each line of `rows`, comparing bytes with numpy for the first `distinct` distinct
    texts (material lines repeat a few names thousands of times), line by line after that."""
    s, e = L.s[rows], L.e[rows]
    lengths = e - s
    out = np.empty(len(rows), object)
    todo = np.ones(len(rows), bool)
    last = len(L.buf) - 1
    for _ in range(distinct):
        left = np.flatnonzero(todo)
        if not left.size:
            return out.tolist()
        k = int(left[0])
        word = L.buf[s[k]:e[k]]
        same = todo & (lengths == len(word))
        for j, ch in enumerate(word):
            same &= L.buf[np.minimum(s + j, last)] == ch
        out[same] = L.text(int(rows[k]))
        todo &= ~same
    for k in np.flatnonzero(todo):
        out[k] = L.text(int(rows[k]))
    return out.tolist()


def _fail(lines: _Lines, i: int, message: str, field: str) -> FormatError:
    off = int(lines.start[i]) if i < len(lines) else len(lines.data)
    return FormatError(f"line {i + 1}: {message}", off, field)


# -- numbers ---------------------------------------------------------------------------------------------

def _tokens(buf: np.ndarray, lo: int, hi: int, step: int = 1 << 21) -> tuple[np.ndarray, np.ndarray]:
    """Starts and ends of the tokens of buf[lo:hi]: runs of bytes above 32 (space and control bytes separate).

    Taken `step` bytes at a time, each piece ending at a separator, so that the byte-sized temporaries stay
    in cache instead of costing fresh memory the size of the file."""
    if hi - lo <= step:
        return _piece_tokens(buf, lo, hi)
    starts, ends = [], []
    a = lo
    while a < hi:
        b = min(a + step, hi)
        while b < hi and buf[b] > 32:  # inside a token: move on to the separator after it
            sep = np.flatnonzero(buf[b:min(b + 4096, hi)] <= 32)
            b = b + int(sep[0]) if sep.size else min(b + 4096, hi)
        s, e = _piece_tokens(buf, a, b)
        starts.append(s)
        ends.append(e)
        a = b
    return np.concatenate(starts), np.concatenate(ends)


def _piece_tokens(buf: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    part = buf[lo:hi]
    nz = np.empty(len(part) + 2, bool)
    nz[0] = nz[-1] = False
    np.greater(part, 32, out=nz[1:-1])
    edges = np.flatnonzero(nz[1:] != nz[:-1])
    return edges[0::2] + lo, edges[1::2] + lo


_U = np.uint64
_ASCII_ZEROS = _U(0x3030303030303030)


def _eight_digits(words: np.ndarray) -> np.ndarray:
    """Value of eight ASCII digits per little-endian word (the first character in the lowest byte)."""
    v = words - _ASCII_ZEROS
    v = v * _U(10) + (v >> _U(8))
    mask = _U(0x000000FF000000FF)
    return ((v & mask) * _U(100 + (1000000 << 32)) + ((v >> _U(16)) & mask) * _U(1 + (10000 << 32))) >> _U(32)


def _all_digits(words: np.ndarray) -> np.ndarray:
    high = _U(0xF0F0F0F0F0F0F0F0)
    return ((words & high) | (((words + _U(0x0606060606060606)) & high) >> _U(4))) == _U(0x3333333333333333)


def _fixed_tokens(buf: np.ndarray, ts: np.ndarray, te: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values of the tokens written as `[sign]d{1,8}` or `[sign]d{1,8}.dddddd` (what '{:.6f}' writes), eight
    digits at a time from unaligned 64-bit loads; second result: which tokens had that shape.

    The word of the last eight bytes holds an integer's digits, or the six decimals of a number (its two lower
    bytes set to '0'), or, with one integer digit, the whole number once the dot is dropped ('d.dddddd' →
    '0ddddddd'). Only numbers with more integer digits load a second word."""
    words = np.ndarray((len(buf) - 7,), "<u8", buf, 0, (1,))
    first = buf[ts]
    signed = (first == 45) | (first == 43)
    dot = buf[np.maximum(te - 7, 0)] == 46
    k = te - ts - signed - np.where(dot, 7, 0)  # integer digits
    ok = (k >= 1) & (k <= 8) & (ts >= 16)
    last = words[np.maximum(te - 8, 0)]
    one = dot & (k == 1)
    keep = ~_U(0) << (_U(8) * (_U(8) - np.clip(k, 1, 8).astype(np.uint64)))
    low = np.where(dot, (last & _U(0xFFFFFFFFFFFF0000)) | _U(0x3030), (last & keep) | (_ASCII_ZEROS & ~keep))
    digit = last & _U(0xFF)
    low = np.where(one, low | (digit << _U(8)), low)  # '0' 'd' + the decimals
    ok &= _all_digits(low) & (~one | (digit - _U(48) < _U(10)))  # OR-ing could make a digit of '!'..')'
    values = _eight_digits(low).astype(np.float64)
    more = np.flatnonzero(dot & (k > 1))
    if more.size:
        whole = words[np.maximum(te[more] - 15, 0)]
        kk = keep[more]
        whole = (whole & kk) | (_ASCII_ZEROS & ~kk)
        ok[more] &= _all_digits(whole)
        values[more] += _eight_digits(whole).astype(np.float64) * 1e6  # exact: below 2^53
    np.divide(values, 1e6, out=values, where=dot)
    np.negative(values, out=values, where=first == 45)
    return values, ok


def _parse_tokens(buf: np.ndarray, ts: np.ndarray, te: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 values of the tokens buf[ts:te], equal to Python's float() of each; second result: tokens that
    are not numbers (value NaN). Tokens shaped as '{:.6f}' writes them go through `_fixed_tokens`, the rest
    through `_general_tokens`."""
    out, fixed = _fixed_pass(buf, ts, te)
    bad = np.zeros(len(ts), bool)
    rest = np.flatnonzero(~fixed)
    if rest.size:
        out[rest], bad[rest] = _general_tokens(buf, ts[rest], te[rest])
    return out, bad


def _fixed_pass(buf: np.ndarray, ts: np.ndarray, te: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`_fixed_tokens` over all tokens, a cache-sized slice at a time."""
    n = len(ts)
    out = np.empty(n, np.float64)
    fixed = np.zeros(n, bool)
    if len(buf) < 16:
        return out, fixed
    step = 1 << 15  # tokens per pass: the temporaries stay in cache
    for a in range(0, n, step):
        out[a:a + step], fixed[a:a + step] = _fixed_tokens(buf, ts[a:a + step], te[a:a + step])
    return out, fixed


def _general_tokens(buf: np.ndarray, ts: np.ndarray, te: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`[sign] digits [. digits]` with at most 15 digits: the digits right-aligned in a byte window, weighted
    by powers of ten (one matrix product per dot position) and divided by 10^fraction digits; both integers
    are exact, so the quotient is correctly rounded, as float() is. Other tokens (exponents, nan, inf, long
    mantissas) go through float() one by one."""
    n = len(ts)
    out = np.empty(n, np.float64)
    bad = np.zeros(n, bool)
    lengths = te - ts
    w = int(min(max(int(lengths.max()), 1), MAX_DIGITS + 2))
    dots = np.flatnonzero(buf[int(ts.min()):int(te.max())] == 46) + int(ts.min())
    tok_of_dot = np.searchsorted(ts, dots, "right") - 1
    keep = (tok_of_dot >= 0) & (dots < te[np.maximum(tok_of_dot, 0)])
    dots, tok_of_dot = dots[keep], tok_of_dot[keep]
    dot_count = np.bincount(tok_of_dot, minlength=n)
    dot_col = np.full(n, -1, np.int64)  # column of the dot counted from the right
    dot_col[tok_of_dot] = te[tok_of_dot] - dots - 1
    windows = sliding_window_view(buf, w)
    first = buf[ts]
    signed = (first == 45) | (first == 43)
    right = np.arange(w - 1, -1, -1)  # column index counted from the right
    fast = (lengths <= w) & (te >= w) & (dot_count <= 1)
    idx = np.flatnonzero(fast)
    chunk = 1 << 20
    slow = [np.flatnonzero(~fast)]
    ones = np.ones(w, np.uint8)
    for a in range(0, len(idx), chunk):
        sel = idx[a:a + chunk]
        g = windows[te[sel] - w]
        g -= np.uint8(48)
        digit = g < 10
        digit &= right[None, :] < lengths[sel, None]
        ndig = digit.view(np.uint8) @ ones
        ok = (ndig == lengths[sel] - signed[sel] - dot_count[sel]) & (ndig >= 1) & (ndig <= MAX_DIGITS)
        g *= digit.view(np.uint8)
        gf = g.astype(np.float64)
        dc = dot_col[sel]
        columns = np.flatnonzero(np.bincount(dc + 1)) - 1
        if len(columns) == 1:
            groups = [(int(columns[0]), slice(None))]
        else:
            groups = [(int(col), dc == col) for col in columns]
        values = np.empty(len(sel), np.float64)
        for col, rows in groups:
            exponent = right - (right > col) if col >= 0 else right
            values[rows] = gf[rows] @ (10.0 ** exponent)
            if col > 0:
                values[rows] /= 10.0 ** col
        neg = first[sel] == 45
        np.negative(values, out=values, where=neg)
        out[sel] = values
        slow.append(sel[~ok])
    for i in np.concatenate(slow):
        token = bytes(buf[ts[i]:te[i]])
        try:
            if token.strip(b"+-.0123456789eE") and token.lower().lstrip(b"+-") not in (b"nan", b"inf", b"infinity"):
                raise ValueError
            out[i] = float(token)
        except ValueError:
            out[i] = np.nan
            bad[i] = True
    return out, bad


@dataclass
class _Rows:
    """The numbers of a set of lines: flat values, per-line token counts and offsets into `values`."""
    lines: np.ndarray
    values: np.ndarray
    counts: np.ndarray
    offsets: np.ndarray  # index in `values` of each line's first number


def _pieces(lines: _Lines, rows: np.ndarray, fields: tuple[str, ...], what: str, step: int = 1 << 15):
    """The numbers of `rows`, `step` rows at a time, in file order: yields (index of the piece's first row,
    its rows, values of every token of the piece, tokens per row, index in the values of each row's first
    token). The token tables and values of one piece stay small and are reused from piece to piece: the
    whole file's would cost fresh memory several times its size."""
    rows = np.asarray(rows, np.int64)
    for a in range(0, len(rows), step):
        part = rows[a:a + step]
        values, counts, first = _parse_piece(lines, part, fields, what)
        yield a, part, values, counts, first


def _parse_rows(lines: _Lines, rows: np.ndarray, fields: tuple[str, ...], what: str, step: int = 1 << 15
                ) -> _Rows:
    """The numbers of `rows` in one array (parsed by `_pieces`), only as large as the pieces fill it
    (untouched pages of it cost nothing)."""
    rows = np.asarray(rows, np.int64)
    if rows.size == 0:
        z = np.zeros(0, np.int64)
        return _Rows(rows, np.zeros(0), z, z)
    lo, hi = int(lines.s[rows[0]]), int(lines.e[rows[-1]])
    values = np.empty((hi - lo + 2) // 2)  # at most one token per two bytes
    counts = np.empty(len(rows), np.int64)
    first = np.empty(len(rows), np.int64)
    n = 0
    for a, part, v, c, f in _pieces(lines, rows, fields, what, step):
        values[n:n + len(v)] = v
        counts[a:a + len(part)] = c
        first[a:a + len(part)] = f + n
        n += len(v)
    return _Rows(rows, values[:n], counts, first)


def _parse_piece(lines: _Lines, rows: np.ndarray, fields: tuple[str, ...], what: str
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values of every token from the first row's start to the last row's end, tokens per row, index of each
    row's first token)."""
    buf = lines.buf
    lo, hi = int(lines.s[rows[0]]), int(lines.e[rows[-1]])
    ts, te = _tokens(buf, lo, hi)
    first = np.searchsorted(ts, lines.s[rows])
    last = np.searchsorted(ts, lines.e[rows])
    counts = last - first
    # every token of the span is parsed (material names and time lines fail the fixed path and are left out
    # below): cheaper than gathering the row tokens first
    values, fixed = _fixed_pass(buf, ts, te)
    rest = np.flatnonzero(~fixed)
    if rest.size:
        row = np.searchsorted(first, rest, "right") - 1
        rest = rest[(row >= 0) & (rest < last[np.maximum(row, 0)])]
    if rest.size:
        values[rest], bad = _general_tokens(buf, ts[rest], te[rest])
        if bad.any():
            k = int(rest[np.flatnonzero(bad)[0]])
            r = int(np.searchsorted(first, k, "right") - 1)
            col = k - int(first[r])
            name = fields[col] if col < len(fields) else f"field {col + 1}"
            token = bytes(buf[ts[k]:te[k]]).decode("utf-8", "replace")[:40]
            raise _fail(lines, int(rows[r]), f"{what}: {name} is {token!r}, not a number", name)
    return values, counts, first


def _integers(lines: _Lines, r: _Rows, values: np.ndarray, where: np.ndarray | None, field: str,
              what: str) -> np.ndarray:
    bad = ~np.isfinite(values) | (values != np.trunc(values)) | (np.abs(values) > 2 ** 53)
    if where is not None:
        bad &= where
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise _fail(lines, int(r.lines[k]), f"{what}: {field} {values[k]!r} is not an integer", field)
    return np.where(np.isfinite(values), values, 0).astype(np.int64)


def _exact_fields(lines: _Lines, r: _Rows, n: int, fields: tuple[str, ...], what: str) -> np.ndarray:
    """(R, n) values of rows that must have exactly n fields."""
    wrong = np.flatnonzero(r.counts != n)
    if wrong.size:
        k = int(wrong[0])
        c = int(r.counts[k])
        name = fields[c] if c < n else "row"
        raise _fail(lines, int(r.lines[k]), f"{what} has {c} fields, expected {n}", name)
    return r.values[r.offsets[:, None] + np.arange(n)] if len(r.offsets) else np.zeros((0, n))


# -- reading ---------------------------------------------------------------------------------------------

_TIME = re.compile(r"time\s+(\S+)\s*(#.*)?", re.S)


class _Reader:
    def __init__(self, data: bytes):
        self.lines = _Lines(data)
        L = self.lines
        comment = (L.e - L.s >= 2) & (L.buf[np.minimum(L.s, len(L.buf) - 1)] == 47) & \
            (L.buf[np.minimum(L.s + 1, len(L.buf) - 1)] == 47)
        self.sig = np.flatnonzero(~comment)  # lines that count
        blank = L.e <= L.s
        self.is_end = L.equals(b"end")
        self.is_time = L.prefix(b"time")
        term = (blank | self.is_end)[self.sig]
        self.term_at = np.flatnonzero(term)  # positions in `sig` of block terminators
        self.blank = blank
        self.out = SmdFile(newline="\r\n" if L.crlf else "\n")

    def block_end(self, i: int, name: str) -> tuple[int, int]:
        """Position in `sig` of the terminator of the block whose first line is sig[i]; the position to go
        on from. A block cut by the end of the file ends there with a warning."""
        k = np.searchsorted(self.term_at, i)
        if k < len(self.term_at):
            j = int(self.term_at[k])
            return j, j + 1
        self.out.warnings.append(f"the {name} block is not closed by 'end' (the file ends first)")
        return len(self.sig), len(self.sig)

    def read(self) -> SmdFile:
        L, sig, out = self.lines, self.sig, self.out
        i = 0
        version_seen = False
        while i < len(sig):
            ln = int(sig[i])
            if self.blank[ln] or self.is_end[ln]:
                i += 1
                continue
            words = L.text(ln).split() or [L.text(ln)]  # str.split also splits at \x1c-\x1f, which are no blank
            word = words[0].lower()
            if not version_seen:
                if word != "version":
                    raise _fail(L, ln, f"expected 'version 1', found {quoted(L.text(ln))}", "version")
                if len(words) < 2 or words[1] != "1":
                    raise _fail(L, ln, f"version {' '.join(words[1:])[:20]!r}: only version 1 exists",
                                "version")
                version_seen = True
                i += 1
            elif word == "nodes":
                i = self.nodes(i + 1)
            elif word == "skeleton":
                i = self.skeleton(i + 1)
            elif word == "triangles":
                i = self.triangles(i + 1)
            elif word == "vertexanimation":
                i = self.vertex_animation(i + 1)
            elif word == "version":
                raise _fail(L, ln, "a second version line", "version")
            else:
                out.warnings.append(f"line {ln + 1}: unknown line {L.text(ln)[:40]!r} skipped")
                i += 1
        if not version_seen:
            raise FormatError("no 'version 1' line", 0, "version")
        return out

    def nodes(self, i: int) -> int:
        L = self.lines
        j, nxt = self.block_end(i, "nodes")
        if j - i > MAX_ITEMS:
            raise _fail(L, int(self.sig[i + MAX_ITEMS]), f"more than {MAX_ITEMS} nodes", "node count")
        for k in range(i, j):
            ln = int(self.sig[k])
            text = L.text(ln)
            a, b = text.find('"'), text.rfind('"')
            if a >= 0 and a == b:  # studiomdl would read the name up to the line end: refuse what it guesses
                raise _fail(L, ln, f"node name of {text[:40]!r} has no closing quote", "node name")
            if a > 0 and b > a:
                head, name, tail = text[:a].split(), text[a + 1:b], text[b + 1:].split()
            else:
                parts = text.split()
                head, name, tail = parts[:1], (parts[1] if len(parts) > 2 else ""), parts[2:3]
            if len(head) != 1 or len(tail) < 1:
                raise _fail(L, ln, f"node line {text[:40]!r} is not '<id> \"<name>\" <parent>'", "node")
            try:
                nid, parent = int(head[0]), int(tail[0])
            except ValueError:
                raise _fail(L, ln, f"node id or parent of {text[:40]!r} is not an integer", "node id") from None
            if not (-2 ** 63 <= nid < 2 ** 63 and -2 ** 63 <= parent < 2 ** 63):  # ids are kept as int64
                raise _fail(L, ln, f"node id or parent of {text[:40]!r} does not fit 64 bits", "node id")
            self.out.nodes.append(Node(nid, name, parent, ln + 1))
        return nxt

    def _frames(self, i: int, j: int, what: str) -> tuple[list[tuple[int, str | None, int]], np.ndarray, np.ndarray]:
        """Time lines and rows of lines sig[i:j]: (time, comment, line) per frame, row lines, frame of each row."""
        L = self.lines
        block = self.sig[i:j]
        is_time = self.is_time[block]
        times = block[is_time]
        if len(times) > MAX_ITEMS:
            raise _fail(L, int(times[MAX_ITEMS]), f"more than {MAX_ITEMS} frames", "frame count")
        rows = block[~is_time]
        frame_of = np.cumsum(is_time)[~is_time] - 1
        if len(rows) and frame_of[0] < 0:
            raise _fail(L, int(rows[0]), f"a {what} row before the first 'time' line", "time")
        frames = []
        for ln in times:
            m = _TIME.match(L.text(int(ln)))
            try:
                t = int(m.group(1)) if m else None
            except ValueError:
                t = None
            if t is not None and not -2 ** 63 <= t < 2 ** 63:
                raise _fail(L, int(ln), f"time {m.group(1)[:20]}… does not fit 64 bits", "time")
            if t is None:
                raise _fail(L, int(ln), f"'{L.text(int(ln))[:40]}' is not 'time <integer>'", "time")
            frames.append((t, m.group(2)[1:].strip() if m.group(2) is not None else None, int(ln) + 1))
        return frames, rows, frame_of

    def _timed_block(self, i: int, block: str, what: str, fields, record: str, frame_type) -> tuple[list, int]:
        """A `skeleton` or `vertexanimation` block: one `frame_type` per 'time' line, holding the rows
        (an id and two triples) under it; and the line after the block."""
        L = self.lines
        j, nxt = self.block_end(i, block)
        frames, rows, frame_of = self._frames(i, j, what)
        r = _parse_rows(L, rows, fields, record)
        v = _exact_fields(L, r, 7, fields, record)
        ids = _integers(L, r, v[:, 0], None, f"{what} id", record)
        bounds = np.searchsorted(frame_of, np.arange(len(frames) + 1))
        out = []
        for f, (t, comment, line) in enumerate(frames):
            a, b = bounds[f], bounds[f + 1]
            out.append(frame_type(t, ids[a:b], v[a:b, 1:4], v[a:b, 4:7], comment, line, rows[a:b] + 1))
        return out, nxt

    def skeleton(self, i: int) -> int:
        frames, nxt = self._timed_block(i, "skeleton", "bone", BONE_FIELDS, "bone row", Frame)
        self.out.skeleton.extend(frames)
        return nxt

    def vertex_animation(self, i: int) -> int:
        self.out.vertex_animation, nxt = self._timed_block(i, "vertexanimation", "vertex", FLEX_FIELDS,
                                                           "vertex animation row", FlexFrame)
        return nxt

    def triangles(self, i: int) -> int:
        L = self.lines
        j, nxt = self.block_end(i, "triangles")
        block = self.sig[i:j]
        n = len(block)
        # a material line where a vertex line belongs: the triangle before it was short (looked for a piece of
        # the block at a time: no temporaries the size of the block)
        last = len(L.buf) - 1
        for lo in range(0, n, 1 << 16):
            piece = np.arange(lo, min(lo + (1 << 16), n))
            piece = piece[piece % 4 != 0]
            numeric = _NUMERIC_START[L.buf[np.minimum(L.s[block[piece]], last)]]
            if not numeric.all():
                k = int(piece[np.flatnonzero(~numeric)[0]])
                ln = int(block[k])
                raise _fail(L, ln, f"{L.text(ln)[:40]!r} where vertex line {k % 4} of a triangle belongs: the "
                                   f"triangle has fewer than 3 vertex lines", "vertex line")
        if n % 4:
            start = int(block[n - n % 4])
            raise _fail(L, start, f"the triangle of material line {start + 1} has {n % 4 - 1} vertex lines, "
                                  f"fewer than 3", "vertex line")
        mat_lines = block[0::4]
        vert_lines = block.reshape(-1, 4)[:, 1:].reshape(-1)
        V = len(vert_lines)
        parents = np.empty(V, np.int64)
        # positions, normals, uvs: one contiguous row per column
        columns = [np.empty((3, V)), np.empty((3, V)), np.empty((2, V))]
        count = np.full(V, -1, np.int64)  # -1: no link columns
        # links go straight into (V, K) arrays, K the most links of a line so far (widened when a piece has more)
        bones = np.full((V, 0), -1, np.int32)  # int64 once an id needs it
        weights = np.zeros((V, 0), np.float64)
        extra_first, extra_n = None, 0
        for a, part, values, counts, first in _pieces(L, vert_lines, VERTEX_FIELDS, "vertex line"):
            # each piece is checked as it is parsed: the first fault of the file is the one named
            r = _Rows(part, values, counts, first)
            few = np.flatnonzero(counts < 9)
            if few.size:
                k = int(few[0])
                raise _fail(L, int(part[k]), f"vertex line has {int(counts[k])} fields, fewer than 9",
                            VERTEX_FIELDS[int(counts[k])])
            b = a + len(part)
            parents[a:b] = _integers(L, r, values[first], None, "parent bone", "vertex line")
            j = 1
            for rows in columns:
                for row in rows:
                    row[a:b] = values[first + j]
                    j += 1
            has_links = counts >= 10
            raw_count = np.where(has_links, values[np.minimum(first + 9, len(values) - 1)], -1)
            c = _integers(L, r, raw_count, has_links, "link count", "vertex line")
            over = np.flatnonzero(has_links & ((c > MAX_LINKS) | (c < 0)))
            if over.size:
                k = int(over[0])
                raise _fail(L, int(part[k]), f"link count {int(c[k])} outside 0..{MAX_LINKS}", "link count")
            short = np.flatnonzero(has_links & (10 + 2 * c > counts))
            if short.size:
                k = int(short[0])
                raise _fail(L, int(part[k]), f"link count {int(c[k])} needs {10 + 2 * int(c[k])} fields, "
                                             f"the line has {int(counts[k])}", "link count")
            c = np.where(has_links, c, -1)
            count[a:b] = c
            extra = np.flatnonzero(np.where(has_links, 10 + 2 * c, 9) < counts)
            if extra.size:
                extra_first = int(part[extra[0]]) if extra_first is None else extra_first
                extra_n += len(extra)
            K = max(int(c.max()), 0)
            if K > bones.shape[1]:
                wider = np.full((V, K), -1, bones.dtype)
                wider[:, :bones.shape[1]] = bones
                bones = wider
                wider = np.zeros((V, K), np.float64)
                wider[:, :weights.shape[1]] = weights
                weights = wider
            for k in range(K):
                on = np.flatnonzero(c > k)
                at = first[on] + 10 + 2 * k
                sub = _Rows(part[on], values, counts[on], first[on])
                ids = _integers(L, sub, values[at], None, "link bone", "vertex line")
                if bones.dtype != np.int64 and len(ids) and (ids.min() < -2 ** 31 or ids.max() >= 2 ** 31):
                    bones = bones.astype(np.int64)
                bones[a + on, k] = ids
                weights[a + on, k] = values[at + 1]
        if extra_n:
            self.out.warnings.append(f"line {extra_first + 1}: {extra_n} vertex lines have fields after their "
                                     f"links (ignored)")
        materials = _line_texts(L, mat_lines)
        vert_lines += 1  # 1-based line numbers, in the array parsed from (no longer needed as indices)
        self.out.triangles = Triangles(materials, parents, columns[0].T, columns[1].T, columns[2].T, count, bones,
                                       weights, vert_lines)
        return nxt


def read(data: bytes) -> SmdFile:
    """Parse an SMD or VTA file. FormatError (naming the line) on a structural fault."""
    data = bytes(data)
    if not data or data.isspace():  # as `not data.strip()`, without copying the file
        raise FormatError("the file is empty", 0, "version")
    if data.startswith(b"\xef\xbb\xbf"):
        data = b"   " + data[3:]  # a BOM is whitespace to us; offsets stay those of the file
    return _Reader(data).read()


def _has_keyword_line(data: bytes, word: bytes) -> bool:
    """A line whose stripped text is `word` (bytes.find, then a look at the line around each hit)."""
    at = data.find(word)
    while at >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        if data[start:end if end >= 0 else len(data)].strip() == word:
            return True
        at = data.find(word, at + len(word))
    return False


def kind_of(data: bytes) -> str:
    """"model" (a triangles block), "flex" (a vertexanimation block) or "motion" (skeleton frames only)."""
    if _has_keyword_line(data, b"vertexanimation"):
        return "flex"
    if _has_keyword_line(data, b"triangles"):
        return "model"
    return "motion"


def sniff(head: bytes) -> bool:
    """The first line that is not blank or a `//` comment is `version <n>`."""
    for line in head.splitlines():
        text = line.strip()
        if text.startswith(b"\xef\xbb\xbf"):
            text = text[3:].strip()
        if not text or text.startswith(b"//"):
            continue
        return re.match(rb"version\s+\d+$", text) is not None
    return False


# -- writing ---------------------------------------------------------------------------------------------

_POW10 = 10 ** np.arange(19, dtype=np.int64)


def _digits(cells: np.ndarray, values: np.ndarray, right: int) -> np.ndarray:
    """Write the non-negative int64 `values` right-aligned ending before column `right`; returns digit counts."""
    nd = np.ones(len(values), np.int64)
    for k in range(1, 19):
        more = values >= _POW10[k]
        if not more.any():
            break
        nd += more
    width = int(nd.max()) if len(values) else 1
    for k in range(width):
        col = (values // _POW10[k]) % 10 + 48
        cells[:, right - 1 - k] = np.where(k < nd, col, 0)
    return nd


def _int_cells(values: np.ndarray) -> np.ndarray:
    """(N, w) bytes of `str(int)` per value, right-aligned, 0 = nothing."""
    v = np.asarray(values, np.int64)
    mag = np.abs(v)
    width = 1 + (len(str(int(mag.max()))) if len(v) else 1)
    cells = np.zeros((len(v), width), np.uint8)
    nd = _digits(cells, mag, width)
    neg = np.flatnonzero(v < 0)
    cells[neg, width - 1 - nd[neg]] = 45
    return cells


def _float_cells(values: np.ndarray) -> np.ndarray:
    """(N, w) bytes of `'{:.6f}'.format(x)` per value, right-aligned, 0 = nothing. Finite values only."""
    x = np.asarray(values, np.float64).reshape(-1)
    r = np.abs(x) * 1e6
    q = np.rint(r)
    # x·10^6 is rounded once more than the decimal expansion Python rounds: near a half, ask Python
    unsure = np.flatnonzero((np.abs(r - np.floor(r) - 0.5) < 1e-6) | (r >= 2.0 ** 52))
    q = q.astype(np.int64) if not unsure.size else np.where(r >= 2.0 ** 52, 0, q).astype(np.int64)
    for i in unsure:
        text = "{:.6f}".format(abs(float(x[i])))
        value = int(text.replace(".", ""))
        if value >= 2 ** 62:
            raise FormatError(f"number {float(x[i])!r} is too large to write", None, "number")
        q[i] = value
    ip, fp = q // 1_000_000, q % 1_000_000
    int_width = len(str(int(ip.max()))) if len(x) else 1
    width = 1 + int_width + 7
    cells = np.zeros((len(x), width), np.uint8)
    nd = _digits(cells, ip, 1 + int_width)
    cells[:, 1 + int_width] = 46
    for k in range(6):
        cells[:, width - 1 - k] = (fp // _POW10[k]) % 10 + 48
    neg = np.flatnonzero(np.signbit(x))
    cells[neg, int_width - nd[neg]] = 45
    return cells


def _lit(n: int, text: bytes) -> np.ndarray:
    return np.broadcast_to(np.frombuffer(text, np.uint8), (n, len(text)))


def _emit(parts: list[np.ndarray]) -> bytes:
    m = np.hstack(parts)
    return m[m != 0].tobytes()


def _check_finite(arrays: list[np.ndarray], lines: np.ndarray | None, what: str) -> None:
    """FormatError naming the first row (over arrays of the same rows) holding a value that is not finite."""
    first = None
    for a in arrays:
        if not a.size:
            continue
        a = a.reshape(len(a), -1)
        if not np.isfinite(a).all():
            k = int(np.flatnonzero(~np.isfinite(a).all(axis=1))[0])
            first = k if first is None else min(first, k)
    if first is not None:
        where = f" (line {int(lines[first])})" if lines is not None and first < len(lines) else ""
        raise FormatError(f"{what} {first}{where} has a value that is not finite", None, what)


def validate(smd: SmdFile) -> None:
    """What every writer and import refuses: duplicate node ids, parents that are no node or loop, and
    bone ids that name no node. FormatError naming the line."""
    ids = {}
    for n in smd.nodes:
        if n.id in ids:
            raise FormatError(f"line {n.line}: node id {n.id} is given twice", None, "node id")
        ids[n.id] = n
    for n in smd.nodes:
        if n.parent != -1 and n.parent not in ids:
            raise FormatError(f"line {n.line}: node {n.id} ({n.name}) has parent {n.parent}, which is no node",
                              None, "parent")
    cycle = parent_cycle(smd.nodes)
    if cycle is not None:
        raise FormatError(f"line {cycle.line}: node {cycle.id} ({cycle.name}) is in a parent cycle", None, "parent")
    known = np.array(sorted(ids), np.int64)
    for f in smd.skeleton:
        k = _unknown(known, f.bones)
        if k is not None:
            raise FormatError(f"line {_line(f.row_lines, k)}: bone id {int(f.bones[k])} names no node", None, "bone id")
    t = smd.triangles
    if t is not None and len(t.parents):
        k = _unknown(known, t.parents)
        if k is not None:
            raise FormatError(f"line {_line(t.lines, k)}: parent bone {int(t.parents[k])} names no node", None,
                              "parent bone")
        K = t.link_bones.shape[1]
        if K and len(known) and known[-1] - known[0] + 1 == len(known) and (t.link_counts >= K).all() and \
                t.link_bones.min() >= known[0] and t.link_bones.max() <= known[-1]:
            bad = np.zeros((0, K), bool)  # every slot used, every id within the nodes' unbroken range
        else:
            bad = ~_isin(t.link_bones, known) & (np.arange(K) < t.link_counts[:, None])
        if bad.any():
            k = int(np.flatnonzero(bad.any(1))[0])
            b = int(t.link_bones[k][bad[k]][0])
            raise FormatError(f"line {_line(t.lines, k)}: link bone {b} names no node", None, "link bone")


def _line(lines, k) -> str:
    return str(int(lines[k])) if lines is not None and k < len(lines) else f"(row {k})"


def _isin(ids: np.ndarray, known: np.ndarray) -> np.ndarray:
    """np.isin(ids, known) for sorted int64 `known`; a lookup table when they span a small range."""
    if not len(known) or known[-1] - known[0] >= 1 << 16:
        return np.isin(ids, known)
    table = np.zeros(int(known[-1] - known[0]) + 1, bool)
    table[known - known[0]] = True
    at = np.asarray(ids, np.int64) - known[0]
    inside = (at >= 0) & (at < len(table))
    return inside & table[np.where(inside, at, 0)]


def _unknown(known: np.ndarray, ids: np.ndarray) -> int | None:
    bad = ~_isin(ids, known)
    return int(np.flatnonzero(bad)[0]) if bad.any() else None


def parent_cycle(nodes: list[Node]) -> Node | None:
    """A node on a parent cycle, or None."""
    parent = {n.id: n.parent for n in nodes}
    by_id = {n.id: n for n in nodes}
    done: set[int] = set()
    for n in nodes:
        path: list[int] = []
        on_path: set[int] = set()
        i = n.id
        while i in parent and i not in done:
            if i in on_path:
                return by_id[i]
            on_path.add(i)
            path.append(i)
            i = parent[i]
        done.update(path)
    return None


def _time_line(time: int, comment: str | None) -> str:
    return f"time {time}" + (f" # {comment}" if comment is not None else "")


def _frame_cells(ids: np.ndarray, a: np.ndarray, b: np.ndarray, sep: bytes, nl: bytes) -> np.ndarray:
    """(N, w) bytes of N frame rows (`id<sep>a0 a1 a2<sep>b0 b1 b2<nl>`), 0 = nothing."""
    n = len(ids)
    parts = [_int_cells(ids), _lit(n, sep)]
    for j in range(3):
        parts += [_float_cells(a[:, j]), _lit(n, b" ")]
    parts[-1] = _lit(n, sep)
    for j in range(3):
        parts += [_float_cells(b[:, j]), _lit(n, b" ")]
    parts[-1] = _lit(n, nl)
    return np.hstack(parts)


def _frames_rows(rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]], sep: bytes, nl: bytes,
                 budget: int = 1 << 15) -> Iterator[bytes]:
    """The bytes of each frame's rows, frame by frame. Consecutive frames are formatted together, up to `budget`
    rows at a time: the number formatting is vectorised, and a clip of many short frames (a skeleton of 50
    bones at 120 fps) would otherwise pay its per-call cost once per column and frame."""
    i = 0
    while i < len(rows):
        j, total = i + 1, len(rows[i][0])
        while j < len(rows) and total + len(rows[j][0]) <= budget:
            total += len(rows[j][0])
            j += 1
        batch = rows[i:j]
        i = j
        if not total:
            yield from (b"" for _ in batch)
            continue
        m = _frame_cells(*(np.concatenate([r[k] for r in batch]) for k in range(3)), sep, nl)
        keep = m != 0
        flat = m[keep].tobytes()
        offsets = np.concatenate([[0], np.cumsum(keep.sum(1))])
        row_at = np.concatenate([[0], np.cumsum([len(r[0]) for r in batch])])
        for lo, hi in zip(row_at[:-1], row_at[1:]):
            yield flat[int(offsets[lo]):int(offsets[hi])]


def _vertex_block(t: Triangles, lo: int, hi: int, nl: bytes, material_cells: np.ndarray,
                  material_index: np.ndarray) -> bytes:
    """Triangles lo..hi as bytes: material line, then three vertex lines each."""
    v0, v1 = 3 * lo, 3 * hi
    n = v1 - v0
    counts = t.link_counts[v0:v1]
    parts = [_int_cells(t.parents[v0:v1]), _lit(n, b"  ")]
    for block, width in ((t.positions, 3), (t.normals, 3), (t.uvs, 2)):
        for j in range(width):
            parts += [_float_cells(block[v0:v1, j]), _lit(n, b" ")]
        parts[-1] = _lit(n, b"  ")
    parts[-1] = np.zeros((n, 0), np.uint8)
    if (counts >= 0).any():
        c = _int_cells(np.maximum(counts, 0))
        c[counts < 0] = 0
        space = np.full((n, 1), 32, np.uint8)
        space[counts < 0] = 0
        parts += [space, c]
        for k in range(t.link_bones.shape[1]):
            on = (counts > k)[:, None]
            bones = _int_cells(np.where(on[:, 0], t.link_bones[v0:v1, k], 0))
            weights = _float_cells(np.where(on[:, 0], t.link_weights[v0:v1, k], 0.0))
            zero = np.uint8(0)
            parts += [np.where(on, space, zero), np.where(on, bones, zero), np.where(on, space, zero),
                      np.where(on, weights, zero)]
    parts.append(_lit(n, nl))
    vertex = np.hstack(parts).reshape(hi - lo, -1)  # three vertex lines per row
    tri = np.hstack([material_cells[material_index[lo:hi]], _lit(hi - lo, nl), vertex])
    return tri[tri != 0].tobytes()


def write(smd: SmdFile, chunk: int = 1 << 12) -> bytes:
    """The records as SMD/VTA text (`write_pieces` joined)."""
    return b"".join(write_pieces(smd, chunk))


def write_pieces(smd: SmdFile, chunk: int = 1 << 12) -> Iterator[bytes]:
    """The records as SMD/VTA text, in pieces of `chunk` triangles or one frame (for a file written as they
    are made), refused with FormatError naming the line where `validate` finds a fault, else written: numbers
    as '{:.6f}', ids as integers, blocks in the order nodes, skeleton, triangles, vertexanimation, each vertex
    line with its own link columns (none, count 0, or links), and the file's line ends."""
    validate(smd)
    nl = smd.newline.encode()
    out = [b"version 1", nl, b"nodes", nl]
    for n in smd.nodes:
        name = n.name.encode("utf-8", "surrogateescape")
        if b'"' in name or b"\n" in name or b"\r" in name:
            raise FormatError(f"node {n.id}: name {n.name!r} holds a quote or a line break", None, "node name")
        out += [f"{n.id} \"".encode(), name, f"\" {n.parent}".encode(), nl]
    out += [b"end", nl, b"skeleton", nl]
    for f in smd.skeleton:
        _check_finite([f.positions, f.rotations], f.row_lines, "bone row")
    frame_rows = _frames_rows([(f.bones, f.positions, f.rotations) for f in smd.skeleton], b"  ", nl)
    for f, rows in zip(smd.skeleton, frame_rows):
        out += [_time_line(f.time, f.comment).encode("utf-8", "surrogateescape"), nl, rows]
    out += [b"end", nl]
    t = smd.triangles
    if t is not None:
        out += [b"triangles", nl]
        _check_finite([t.positions, t.normals, t.uvs, t.link_weights], t.lines, "vertex")
        names = sorted(set(t.materials))
        index = {m: i for i, m in enumerate(names)}
        encoded = [m.encode("utf-8", "surrogateescape") for m in names]
        for m, e in zip(names, encoded):
            if b"\0" in e or b"\n" in e or b"\r" in e or not e.strip() or e.strip().lower() == b"end":
                raise FormatError(f"material name {m!r} cannot be written as a line", None, "material")
        width = max([len(e) for e in encoded] + [1])
        cells = np.zeros((len(encoded), width), np.uint8)
        for i, e in enumerate(encoded):
            cells[i, :len(e)] = np.frombuffer(e, np.uint8)
        material_index = np.array([index[m] for m in t.materials], np.int64)
        yield b"".join(out)
        out = []
        for lo in range(0, len(t), chunk):
            yield _vertex_block(t, lo, min(lo + chunk, len(t)), nl, cells, material_index)
        out += [b"end", nl]
    if smd.vertex_animation is not None:
        out += [b"vertexanimation", nl]
        for f in smd.vertex_animation:
            _check_finite([f.positions, f.normals], f.row_lines, "vertex animation row")
        frame_rows = _frames_rows([(f.vertices, f.positions, f.normals) for f in smd.vertex_animation], b" ", nl)
        for f, rows in zip(smd.vertex_animation, frame_rows):
            out += [_time_line(f.time, f.comment).encode("utf-8", "surrogateescape"), nl, rows]
            yield b"".join(out)
            out = []
        out += [b"end", nl]
    yield b"".join(out)
