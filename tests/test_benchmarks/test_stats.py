"""benchmarks/stats.py: the bootstrap interval of a median."""

from __future__ import annotations

import random
import statistics

import pytest

from benchmarks.stats import median_interval


def test_interval_holds_the_median_and_narrows_with_more_runs() -> None:
    rng = random.Random(1)
    few = [1.10 + rng.gauss(0, 0.05) for _ in range(9)]
    many = [1.10 + rng.gauss(0, 0.05) for _ in range(81)]
    for values in (few, many):
        low, high = median_interval(values)
        assert low <= statistics.median(values) <= high
    assert (median_interval(many)[1] - median_interval(many)[0]) < (
        median_interval(few)[1] - median_interval(few)[0]
    )


def test_interval_of_equal_values_is_that_value_and_is_reproducible() -> None:
    assert median_interval([1.2] * 5) == (1.2, 1.2)
    values = [1.0, 1.3, 1.1, 1.25, 1.05, 1.4]
    assert median_interval(values) == median_interval(values)
    low, high = median_interval(values)
    assert min(values) <= low < high <= max(values)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        median_interval([])
    with pytest.raises(ValueError, match="confidence"):
        median_interval([1.0], confidence=1.5)
