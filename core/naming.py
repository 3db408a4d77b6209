"""The one way a name taken from file content becomes a file name (docs/architecture.md §7.2)."""
from __future__ import annotations

import re

_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
_BAD = re.compile(r'[\x00-\x1f\x7f:*?"<>|]')
MAX_BYTES = 100


def safe_file_name(name: str) -> str:
    """Text after the last / or \\; control characters, NUL and : * ? " < > | become _; leading and
    trailing dots and spaces stripped (empty → unnamed); reserved device stems get a trailing _;
    cut to 100 UTF-8 bytes."""
    name = re.split(r"[/\\]", name)[-1]
    name = _BAD.sub("_", name)
    name = name.strip(" .")
    if not name:
        name = "unnamed"
    stem, dot, ext = name.partition(".")
    if stem.upper() in _RESERVED:
        name = stem + "_" + dot + ext
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) > MAX_BYTES:
        name = raw[:MAX_BYTES].decode("utf-8", "ignore").rstrip(" .") or "unnamed"
    return name


class NameAllocator:
    """De-duplicates names within one run: the second `a` becomes `a-2`, then `a-3`, in input order."""

    def __init__(self):
        self.used: set[str] = set()

    def take(self, name: str, suffix: str = "") -> str:
        base = safe_file_name(name)
        candidate, n = base, 1
        while (candidate + suffix).lower() in self.used:
            n += 1
            candidate = f"{base}-{n}"
        self.used.add((candidate + suffix).lower())
        return candidate
