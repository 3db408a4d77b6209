"""A digest of core records (no bpy): what decides that what an export would write is what an import made.

`digest(*values)` walks dataclasses (their fields in order), lists, tuples, dicts (sorted keys), numpy arrays
(dtype, shape and bytes) and plain values, so two walks of equal records give equal digests. A format keeps the
digest of what Blender gives for a file right after importing it, with the file's bytes; an export whose records
give the same digest writes those bytes again (docs/architecture.md §7.6)."""
from __future__ import annotations

import dataclasses
import hashlib

import numpy as np


def _feed(h, value) -> None:
    if isinstance(value, np.ndarray):
        a = np.ascontiguousarray(value)
        h.update(f"A{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes() if a.dtype != object else repr(a.tolist()).encode())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        h.update(f"D{type(value).__name__}".encode())
        for f in dataclasses.fields(value):
            h.update(f.name.encode())
            _feed(h, getattr(value, f.name))
    elif isinstance(value, dict):
        h.update(f"M{len(value)}".encode())
        for k in sorted(value, key=repr):
            h.update(repr(k).encode())
            _feed(h, value[k])
    elif isinstance(value, (list, tuple)):
        h.update(f"L{len(value)}".encode())
        for v in value:
            _feed(h, v)
    elif isinstance(value, (bytes, bytearray)):
        h.update(b"B" + hashlib.sha1(value).digest())
    else:
        h.update(f"V{type(value).__name__}:{value!r}".encode())


def digest(*values) -> str:
    h = hashlib.sha1()
    for v in values:
        _feed(h, v)
    return h.hexdigest()
