"""Recall@k over ranked dia_ids, averaged overall and per category, and latency percentiles."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

KS = (1, 5, 10, 20)


def recall_at_k(ranked: Sequence[str], evidence: Iterable[str], k: int) -> float:
    """|evidence ∩ top-k| / |evidence| (evidence counted as a set)."""
    wanted = set(evidence)
    if not wanted:
        raise ValueError("recall needs a non-empty evidence list")
    return len(wanted & set(ranked[:k])) / len(wanted)


@dataclass
class RecallTable:
    """Per-question recalls of one method, grouped on demand."""

    ks: tuple[int, ...] = KS
    rows: list[tuple[int, tuple[float, ...]]] = field(default_factory=list)

    def add(self, category: int, ranked: Sequence[str], evidence: Sequence[str]) -> None:
        self.rows.append((category, tuple(recall_at_k(ranked, evidence, k) for k in self.ks)))

    def __len__(self) -> int:
        return len(self.rows)

    def mean(self, category: int | None = None) -> dict[int, float]:
        """Mean recall@k over all questions, or over one category's questions."""
        values = [r for c, r in self.rows if category is None or c == category]
        if not values:
            return {k: float("nan") for k in self.ks}
        means = np.mean(np.array(values), axis=0)
        return {k: float(m) for k, m in zip(self.ks, means, strict=True)}

    def categories(self) -> list[int]:
        return sorted({c for c, _ in self.rows})

    def count(self, category: int | None = None) -> int:
        return sum(1 for c, _ in self.rows if category is None or c == category)


def percentile_ms(seconds: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) of durations given in seconds, in milliseconds."""
    if not seconds:
        return float("nan")
    return float(np.percentile(np.asarray(seconds) * 1000.0, q))
