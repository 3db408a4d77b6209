"""`skinbridge diff A B`: per record, what differs between two files of one format.

Both files are read with their format's codec (the registry's `read` capability: the records that mirror the
file, the ones `check` validates and writes back), and the two record trees are walked side by side, the same
way for every format: dataclass fields, lists, dicts and numpy arrays (compared a whole column at a time, so the
walk is linear in the files). Each leaf that differs is a `Difference`: the record holding it (the path down to
its last list or array index, with the item's name when it has one), the field inside it, where it sits in each
file and both values. A list or array of different lengths also counts the records added or removed.

Offsets come from the bytes: the runs where the two files differ, in file order, are matched to the differences
in walk order (a binary field's bytes are looked for at the run, so its offset is where the field starts; a text
field gets the run's first byte). Nothing here imports bpy or names a format.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .budget import load_json
from .errors import FormatError

# Fields that say where the reader found things or what it noticed, not what the file holds
BOOKKEEPING = frozenset(("warnings", "at", "offsets", "bone_offsets", "vertex_offsets", "budget"))
VALUE_CHARS = 48
SHOWN_ITEMS = 4  # a row's value of more items than this is shown from its first differing item
BLOB_SIZE = 64  # bytes longer than this are shown from their first differing byte
NAMED_ROWS = 3  # records added or removed named on their count's line


@dataclass(frozen=True)
class _Rows:
    """Walked after a list's common items: how many items each file has, and the names of the first items only
    one of them has."""
    n_a: int
    n_b: int
    names: list[str]


@dataclass(frozen=True)
class Difference:
    record: str                 # "bones[3] (Hips)", "vertex_buffers[0].vertices[12]", "file" (outside any list)
    field: str                  # "name", "position", "bones.count" (records added or removed); "" for a plain value
    offset_a: int | None        # byte offset in file A (None when the bytes cannot say)
    offset_b: int | None
    value_a: Any                # the value in A (None: the record is not in A)
    value_b: Any
    member: str = ""            # the file of a folder-wide format (a project) it is in, relative to the folder

    def __str__(self) -> str:
        where = f" @ {_at(self.offset_a)} / {_at(self.offset_b)}"
        name = f"{self.record}: {self.field}" if self.field else self.record
        inside = f"{self.member} » " if self.member else ""
        return f"{inside}{name}{where}: {show(self.value_a)} → {show(self.value_b)}"


@dataclass
class DiffResult:
    identical: bool             # the bytes are equal
    differences: list[Difference] = field(default_factory=list)  # the first `limit`, in walk order
    total: int = 0              # differing fields and added/removed runs, all of them
    added: int = 0              # records in B and not in A
    removed: int = 0            # records in A and not in B

    def lines(self) -> list[str]:
        if self.identical:
            return ["identical"]
        out = [str(d) for d in self.differences]
        if self.total > len(self.differences):
            out.append(f"and {self.total - len(self.differences)} more")
        records = len({d.record for d in self.differences})
        out.append(f"{self.total} difference(s) in {records}{'+' if self.total > len(self.differences) else ''} "
                   f"record(s); {self.added} record(s) added, {self.removed} removed")
        return out

    def as_dict(self) -> dict:
        return {"identical": self.identical, "total": self.total, "added": self.added, "removed": self.removed,
                "differences": [{**dataclasses.asdict(d), "value_a": _plain(d.value_a), "value_b": _plain(d.value_b)}
                                for d in self.differences]}


def _at(offset: int | None) -> str:
    return "?" if offset is None else str(offset)


def _plain(value: Any) -> Any:
    """A value as JSON can hold it."""
    if isinstance(value, (np.ndarray, np.generic)):
        value = value.tolist()
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return show(value)


def show(value: Any) -> str:
    """A value in a few words: numbers as numbers, text quoted, long values cut."""
    if isinstance(value, (np.ndarray, np.generic)):
        value = value.tolist()
    if isinstance(value, float):
        text = f"{value:.9g}"
    elif isinstance(value, (list, tuple)) and all(isinstance(v, float) for v in value):
        text = "[" + ", ".join(f"{v:.9g}" for v in value) + "]"
    elif value is None:
        text = "(none)"
    else:
        text = repr(value) if isinstance(value, (str, bytes, bytearray)) else str(value)
    return text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS - 1] + "…"


class _Walk:
    """The side-by-side walk of two record trees; collects the first `limit` differences and counts all."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.found: list[tuple[list[str], str, Any, Any, bytes | None, bytes | None]] = []
        self.total = 0
        self.added = 0
        self.removed = 0
        self.seen: set[tuple[int, int]] = set()

    def note(self, path: list[str], fieldname: str, a: Any, b: Any, raw_a: bytes | None = None,
             raw_b: bytes | None = None) -> None:
        self.total += 1
        if self.limit is None or len(self.found) < self.limit:
            self.found.append((path, fieldname, a, b, raw_a, raw_b))

    def run(self, a: Any, b: Any) -> None:
        stack: list[tuple[list[str], Any, Any]] = [([], a, b)]
        while stack:  # no recursion: a deep tree is walked with a list, in file order (pushed reversed)
            path, x, y = stack.pop()
            stack.extend(reversed(self.step(path, x, y)))

    def step(self, path: list[str], a: Any, b: Any) -> list[tuple[list[str], Any, Any]]:
        """Compare one pair; the pairs below it to walk next."""
        if isinstance(a, _Rows):  # after a list's common items: the records one of the files has more of
            self.count_rows(path, a.n_a, a.n_b, a.names)
            return []
        if isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
            self.arrays(path, a, b)
            return []
        if type(a) is not type(b):
            self.note(path, "", a, b)
            return []
        if isinstance(a, (list, tuple, dict)) or dataclasses.is_dataclass(a):
            if (id(a), id(b)) in self.seen:  # a shared or referenced object, walked once
                return []
            self.seen.add((id(a), id(b)))
        if dataclasses.is_dataclass(a):
            return [(path + [f.name], getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
                    if f.name not in BOOKKEEPING and not f.name.startswith("_")]
        if hasattr(a, "__dict__") and type(a).__eq__ is object.__eq__:  # a plain object: its attributes
            if (id(a), id(b)) in self.seen:
                return []
            self.seen.add((id(a), id(b)))
            return [(path + [k], v, getattr(b, k, None)) for k, v in vars(a).items()
                    if k not in BOOKKEEPING and not k.startswith("_")]
        if isinstance(a, dict):
            keys = list(a) + [k for k in b if k not in a]
            below = []
            for k in keys:
                if k in BOOKKEEPING:
                    continue
                if k not in a or k not in b:
                    self.note(path + [f".{k}"], "", a.get(k), b.get(k))
                else:
                    below.append((path + [str(k)], a[k], b[k]))
            return below
        if isinstance(a, (list, tuple)):
            by_name = _by_name(a, b) if len(a) != len(b) else None
            if by_name is not None:  # named records inserted or removed: the others compared with their own
                common, extra, n_a, n_b = by_name
                return ([(path + [f"[{i}]{_named(a[i])}"], a[i], b[j]) for i, j in common]
                        + [(path, _Rows(n_a, n_b, extra), None)])
            n = min(len(a), len(b))
            below = [(path + [f"[{i}]{_named(a[i])}"], a[i], b[i]) for i in range(n)]
            more = a if len(a) > len(b) else b
            names = [_named(more[i])[2:-1] for i in range(n, min(len(more), n + NAMED_ROWS + 1))]
            return below + ([(path, _Rows(len(a), len(b), names), None)] if len(a) != len(b) else [])
        same = a == b or (a != a and b != b)  # NaN is NaN
        if not same:
            if isinstance(a, (bytes, bytearray)) and len(a) == len(b) > BLOB_SIZE and path:  # where in a blob
                i = int(np.flatnonzero(np.frombuffer(a, np.uint8) != np.frombuffer(b, np.uint8))[0])
                self.note(path[:-1] + [f"{path[-1]}[{i}]"], "", a[i:i + 16], b[i:i + 16], bytes(a[i:i + 16]),
                          bytes(b[i:i + 16]))
            elif isinstance(a, (bytes, bytearray)) and len(a) == len(b):
                self.note(path, "", a, b, bytes(a), bytes(b))
            else:
                self.note(path, "", a, b, *_raw(a, b))
        return []

    def count_rows(self, path: list[str], n_a: int, n_b: int, names: list[str]) -> None:
        """A list or array whose files hold different numbers of records: one difference, its `count`; the
        record says the names of the records added or removed, when they have names (`keys (added: Hips)`)."""
        if n_b > n_a:
            self.added += n_b - n_a
        else:
            self.removed += n_a - n_b
        shown = [n for n in names[:NAMED_ROWS] if n]
        if shown and path:
            more = ", …" if len(names) > NAMED_ROWS else ""
            what = "added" if n_b > n_a else "removed"
            path = path[:-1] + [f"{path[-1]} ({what}: {', '.join(shown)}{more})"]
        self.note(path, "count", n_a, n_b)

    def arrays(self, path: list[str], a: Any, b: Any) -> None:
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype != b.dtype or a.shape[1:] != b.shape[1:] or a.dtype.hasobject or 0 in (a.ndim, b.ndim):
            if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
                self.note(path, "", a, b, *_raw(a, b))
            return
        n = min(len(a), len(b))
        self.rows(path, a, b, n)
        if len(a) != len(b):  # after the common rows, as a list's
            more = a if len(a) > len(b) else b
            self.count_rows(path, len(a), len(b),
                            [_row_name(more, r)[2:-1] for r in range(n, min(len(more), n + NAMED_ROWS + 1))])

    def rows(self, path: list[str], a: np.ndarray, b: np.ndarray, n: int) -> None:
        """The differing items of the first `n` rows of two arrays of one dtype, a column at a time."""
        columns = a.dtype.names or (None,)
        bad = []
        for name in columns:
            x = np.ascontiguousarray(a[:n] if name is None else a[name][:n])
            y = np.ascontiguousarray(b[:n] if name is None else b[name][:n])
            bad.append((x.view(np.uint8).reshape(n, -1) != y.view(np.uint8).reshape(n, -1)).any(axis=1)
                       if x.nbytes else np.zeros(n, bool))
        rows = np.flatnonzero(np.any(bad, axis=0)) if bad else np.zeros(0, np.int64)
        pairs = int(sum(int(m.sum()) for m in bad))
        noted = 0
        for r in rows:
            r = int(r)
            label = _row_name(a, r)
            for name, mask in zip(columns, bad):
                if not mask[r]:
                    continue
                if self.limit is not None and len(self.found) >= self.limit:  # the rest counted, not noted
                    self.total += pairs - noted
                    return
                va = a[r] if name is None else a[name][r]
                vb = b[r] if name is None else b[name][r]
                column = name or ""
                if np.ndim(va) and np.size(va) > SHOWN_ITEMS:  # a long value: its first differing item
                    x, y = np.asarray(va), np.asarray(vb)
                    j = int(np.flatnonzero((x.reshape(-1, 1).view(np.uint8) != y.reshape(-1, 1).view(np.uint8))
                                           .any(axis=1))[0]) if x.dtype.itemsize else 0
                    column += "".join(f"[{int(i)}]" for i in np.unravel_index(j, x.shape))
                    va, vb = x.reshape(-1)[j], y.reshape(-1)[j]
                # a row of columns is a record (a vertex, a key); a number of a plain array is a field's item
                at = path + [f"[{r}]{label}"] if name is not None or not path else path[:-1] + [f"{path[-1]}[{r}]"]
                self.note(at, column, va, vb, np.asarray(va).tobytes(), np.asarray(vb).tobytes())
                noted += 1


def _by_name(a: list | tuple, b: list | tuple):
    """Two lists of named records (every name distinct in each, the names of the shorter all in the longer) whose
    lengths differ: (the (index in a, index in b) pairs of one name, in a's order; the names only the longer
    has, in its order; len(a); len(b)), so that a record inserted in the middle is one record added, not every
    later one changed. None when the records are not so named."""
    names_a, names_b = [_key(x) for x in a], [_key(x) for x in b]
    if "" in names_a or "" in names_b or len(set(names_a)) < len(a) or len(set(names_b)) < len(b):
        return None
    short, long_ = (names_a, names_b) if len(a) < len(b) else (names_b, names_a)
    if not set(short) <= set(long_):
        return None
    where_b = {name: j for j, name in enumerate(names_b)}
    common = [(i, where_b[name]) for i, name in enumerate(names_a) if name in where_b]
    shared = set(short)
    extra = [name for name in long_ if name not in shared]
    return common, extra, len(a), len(b)


def _key(item: Any) -> str:
    """What matches a record across two lists: its name (text or bytes), else its kind (a record of a kind that
    has one record in the list, such as a file's collision packet), else ""."""
    name = item.get("name", item.get("Name")) if isinstance(item, dict) else getattr(item, "name", None)
    if isinstance(name, (bytes, bytearray)):
        name = bytes(name).split(b"\0", 1)[0].decode("utf-8", "replace")
    if isinstance(name, str) and name:
        return name
    if isinstance(item, (dict, list, tuple, str, bytes, int, float)) or item is None:
        return ""
    return f"<{type(item).__name__}>"


def _named(item: Any) -> str:
    """" (NAME)" after an item's index when it has a name (an attribute, or a key of a decoded object)."""
    name = item.get("name", item.get("Name")) if isinstance(item, dict) else getattr(item, "name", None)
    return f" ({name})" if isinstance(name, str) and name else ""


def _row_name(array: np.ndarray, r: int) -> str:
    if array.dtype.names and "name" in array.dtype.names and array.dtype["name"].kind == "S":
        raw = bytes(array["name"][r]).split(b"\0", 1)[0]
        try:  # byte names of the files we read: UTF-8, else Shift-JIS (MMD)
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("cp932", "replace")
        return f" ({text})" if text else ""
    return ""


def _raw(a: Any, b: Any) -> tuple[bytes | None, bytes | None]:
    """The bytes a fixed-size value has in a binary file (numpy values), else None."""
    if isinstance(a, (np.ndarray, np.generic)) and isinstance(b, (np.ndarray, np.generic)):
        return np.asarray(a).tobytes(), np.asarray(b).tobytes()
    return None, None


def _record_and_field(path: list[str], fieldname: str) -> tuple[str, str]:
    """The record: the path down to its last index; the field: the rest (with `fieldname`, a column)."""
    last = max((i for i, p in enumerate(path) if p.startswith("[")), default=-1)
    if last < 0:  # outside any list: the top-level field is the record (or the file, for a field of its own)
        parts = path + ([fieldname] if fieldname else [])
        return ("file", ".".join(parts)) if len(parts) < 2 else (parts[0], ".".join(parts[1:]))
    record = ""
    for p in path[:last + 1]:
        record += p if p.startswith("[") else ("." if record else "") + p
    return record, ".".join(path[last + 1:] + ([fieldname] if fieldname else []))


def _runs(a: bytes, b: bytes) -> np.ndarray:
    """The offset where each run of differing bytes starts (the same in both files): all of them when the files
    have one length, else the first (where their common beginning ends)."""
    n = min(len(a), len(b))
    x, y = np.frombuffer(a, np.uint8, n), np.frombuffer(b, np.uint8, n)
    differ = x != y
    starts = np.flatnonzero(differ[1:] & ~differ[:-1]) + 1 if n > 1 else np.zeros(0, np.int64)
    if n and differ[0]:
        starts = np.concatenate(([0], starts))
    if len(a) == len(b):
        return starts
    return np.array([starts[0] if len(starts) else n], np.int64)


def _place(found: list, a: bytes, b: bytes) -> list[Difference]:
    """Each found difference with its offsets: the next run of differing bytes that holds the field's bytes in
    both files (a binary field: its start), else that run's first byte; runs a placed field covers are used."""
    runs = _runs(a, b)
    k = 0
    out = []
    for path, fieldname, va, vb, raw_a, raw_b in found:
        record, name = _record_and_field(path, fieldname)
        offset = None
        if k < len(runs):
            start = offset = int(runs[k])
            size = 1
            if raw_a and raw_b and len(raw_a) == len(raw_b):
                for q in range(max(0, start - len(raw_a) + 1), start + 1):
                    if a[q:q + len(raw_a)] == raw_a and b[q:q + len(raw_b)] == raw_b:
                        offset, size = q, len(raw_a)
                        break
            k = int(np.searchsorted(runs, offset + size, side="left"))  # runs inside the placed field are its own
            k = max(k, int(np.searchsorted(runs, start, side="right")))
        out.append(Difference(record, name, offset, offset, va, vb))
    return out


def diff_records(records_a: Any, records_b: Any, a: bytes, b: bytes, limit: int | None = 50) -> DiffResult:
    """What differs between two files of one format: `records_a` and `records_b` are what the format's codec
    read from the bytes `a` and `b`. `limit` differences are kept (None: all); `total`, `added` and `removed`
    count all of them."""
    if a == b:
        return DiffResult(identical=True)
    walk = _Walk(limit)
    walk.run(records_a, records_b)
    result = DiffResult(False, _place(walk.found, a, b), walk.total, walk.added, walk.removed)
    if not result.total:  # the same records in other bytes (spacing of a text file, a layout the codec ignores)
        at = int(_runs(a, b)[0])
        result.differences = [Difference("file", "bytes", at, at, f"{len(a)} bytes", f"{len(b)} bytes")]
        result.total = 1
    return result


def records_of(spec: Any, data: bytes) -> Any:
    """What diff walks of a file of the format `spec` (core/formatspec.py): its codec's records, or their
    `diff_view` when the format declares one. The codec's FormatError passes on."""
    records = spec.get("read")(data)
    return spec.get("diff_view")(records) if spec.has("diff_view") else records


def diff_files(spec: Any, a: bytes, b: bytes, limit: int | None = 50) -> DiffResult:
    """`diff_records` of two files of the format `spec` (what a tool such as an edit campaign calls)."""
    if a == b:
        return DiffResult(identical=True)
    return diff_records(records_of(spec, a), records_of(spec, b), a, b, limit)


def diff_members(members_a: dict[str, str], members_b: dict[str, str], records: Callable[[str, bytes], Any],
                 limit: int | None = 50) -> DiffResult:
    """What differs between two folders a format's file stands for (a project: its `members` capability gives
    {relative path: file}): each file of one path in both compared with `records(path, data)` (its format's
    records, None for bytes only: one difference `file: bytes`); a file in one folder only is one record added
    or removed (`record` its path, `field` "file"). Each difference names its `member`, paths sorted."""
    out = DiffResult(identical=True)
    for rel in sorted(set(members_a) | set(members_b)):
        a = _read_member(members_a.get(rel))
        b = _read_member(members_b.get(rel))
        if a == b:
            continue
        out.identical = False
        if a is None or b is None:
            one = DiffResult(False, [Difference(rel, "file", None, None, a and f"{len(a)} bytes",
                                                b and f"{len(b)} bytes")], 1, int(a is None), int(b is None))
        else:
            ra, rb = records(rel, a), records(rel, b)
            one = (diff_records(ra, rb, a, b, None if limit is None else max(limit - len(out.differences), 1))
                   if ra is not None and rb is not None else
                   DiffResult(False, [Difference("file", "bytes", *[int(_runs(a, b)[0])] * 2, f"{len(a)} bytes",
                                                 f"{len(b)} bytes")], 1))
        room = len(one.differences) if limit is None else max(limit - len(out.differences), 0)
        out.differences += [dataclasses.replace(d, member=rel) for d in one.differences[:room]]
        out.total += one.total
        out.added += one.added
        out.removed += one.removed
    return out


def _read_member(path: str | None) -> bytes | None:
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


def member_records(identify: Callable[[bytes, str], Any]) -> Callable[[str, bytes], Any]:
    """`records` for `diff_members`: a file is walked as its format's records (`identify(data, path)` gives the
    spec, core/formatspec.py), a `.json` no format reads as its JSON, anything else (or a file its codec refuses)
    as bytes (None)."""
    def records(rel: str, data: bytes) -> Any:
        try:
            spec = identify(data, rel)
        except FormatError:
            spec = None
        try:
            if spec is not None and spec.has("read"):
                return records_of(spec, data)
            if rel.lower().endswith(".json"):
                return load_json(data, rel)
        except (FormatError, ValueError):  # not what its name says: its bytes are compared
            return None
        return None
    return records
