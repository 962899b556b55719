"""Medians and spreads: every timing is reported as median and IQR, never a mean alone."""

from __future__ import annotations

import statistics
from typing import Dict, Sequence

NOISY_IQR_RATIO = 0.10
NO_DIFFERENCE = "no measurable difference"
TOO_FEW = "too few epochs to compare: use --epochs 3 or more"


def quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(values: Sequence[float]) -> Dict[str, float]:
    """median, IQR (with its ends q1, q3), n and a noisy flag (IQR above 10 % of the median)."""
    median = statistics.median(values)
    q1, q3 = quantile(values, 0.25), quantile(values, 0.75)
    return {
        "median": median,
        "iqr": q3 - q1,
        "q1": q1,
        "q3": q3,
        "n": len(values),
        "noisy": bool(median > 0 and (q3 - q1) / median > NOISY_IQR_RATIO),
    }


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("inf")


def measurable(a: Dict[str, float], b: Dict[str, float]) -> bool:
    """Two summaries differ measurably when their IQRs do not overlap (one value each shows no spread)."""
    if a["n"] < 2 or b["n"] < 2:
        return False
    return a["q3"] < b["q1"] or b["q3"] < a["q1"]


def compare(a: Dict[str, float], b: Dict[str, float]) -> str:
    """'12.3x' (a over b) when the IQRs do not overlap, else 'no measurable difference'."""
    if a["n"] < 2 or b["n"] < 2:
        return TOO_FEW
    if not measurable(a, b):
        return NO_DIFFERENCE
    return f"{ratio(a['median'], b['median']):.1f}x"
