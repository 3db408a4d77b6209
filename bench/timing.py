"""What the benchmark scripts share: the best-of-N timer."""
from __future__ import annotations

import time
from collections.abc import Callable


def best_of(repeat: int, fn: Callable[[], object], setup: Callable[[], object] | None = None
            ) -> tuple[float, object]:
    """The fewest seconds `fn` took over `repeat` runs (`setup` runs before each, untimed), and its last
    result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        if setup is not None:
            setup()
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result
