"""Shortest-arc slerp of two quaternions, written for the tests' independent evaluators (component order does
not matter: the formula treats the four numbers alike)."""
from __future__ import annotations

import numpy as np


def slerp(a: np.ndarray, b: np.ndarray, f: float) -> np.ndarray:
    a = a / np.linalg.norm(a)
    b = b / np.linalg.norm(b)
    d = float(np.dot(a, b))
    if d < 0:
        b, d = -b, -d
    if d > 1 - 1e-12:
        q = a + (b - a) * f
    else:
        theta = np.arccos(d)
        q = (np.sin((1 - f) * theta) * a + np.sin(f * theta) * b) / np.sin(theta)
    return q / np.linalg.norm(q)
