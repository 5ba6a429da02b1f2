"""Small statistics for the benchmarks: how far a median of noisy runs can be trusted."""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence


def median_interval(
    values: Sequence[float], confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """A bootstrap interval for the median of `values`: the central `confidence` share of the
    medians of `resamples` resamples (with replacement, same size). Seeded, so a report is
    reproducible from its runs."""
    if not values:
        raise ValueError("median_interval needs at least one value")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    rng = random.Random(seed)
    n = len(values)
    medians = sorted(statistics.median(rng.choices(values, k=n)) for _ in range(resamples))
    tail = (1 - confidence) / 2
    low = medians[int(tail * resamples)]
    high = medians[min(resamples - 1, int((1 - tail) * resamples))]
    return low, high
