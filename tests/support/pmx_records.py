"""PMX records built in tests: the morph offset table of one kind from plain rows (one tuple a row, the fields in
the order io_pmx/model/pmx.py's `MORPH_OFFSETS` lists them)."""
from __future__ import annotations

import numpy as np

from skinbridge.io_pmx.model import pmx


def offsets(kind: int, rows: list[tuple]) -> np.ndarray:
    spec = pmx.MORPH_OFFSETS[kind]
    out = pmx.empty_records(spec, len(rows))
    for k, row in enumerate(rows):
        for (name, _, _), value in zip(spec, row):
            out[name][k] = value
    return out
