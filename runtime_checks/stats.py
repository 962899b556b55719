"""Medians and spreads: every timing is reported as median and IQR, never a mean alone."""

from __future__ import annotations

import statistics
from typing import Dict, Sequence

NOISY_IQR_RATIO = 0.10


def quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(values: Sequence[float]) -> Dict[str, float]:
    """median, IQR, n and a noisy flag (IQR above 10 % of the median)."""
    median = statistics.median(values)
    iqr = quantile(values, 0.75) - quantile(values, 0.25)
    return {
        "median": median,
        "iqr": iqr,
        "n": len(values),
        "noisy": bool(median > 0 and iqr / median > NOISY_IQR_RATIO),
    }


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("inf")
