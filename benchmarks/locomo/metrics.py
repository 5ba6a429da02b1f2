"""Recall@k over ranked dia_ids, averaged overall and per category, and latency percentiles."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

KS = (1, 5, 10, 20)
SPREAD_K = 10


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
    # per question: (category, number of distinct conversation sessions in the top 10)
    spread: list[tuple[int, int]] = field(default_factory=list)

    def add(
        self, category: int, ranked: Sequence[str], evidence: Sequence[str],
        sessions: Sequence[object] | None = None,
    ) -> None:
        """One question: the ranked ids, its evidence, and (optional) the session of each
        ranked item, for the mean number of distinct sessions in the top 10."""
        self.rows.append((category, tuple(recall_at_k(ranked, evidence, k) for k in self.ks)))
        if sessions is not None:
            self.spread.append((category, len(set(list(sessions)[:SPREAD_K]))))

    def mean_sessions(self, category: int | None = None) -> float:
        """Mean number of distinct sessions in the top 10 (NaN when not recorded)."""
        values = [n for c, n in self.spread if category is None or c == category]
        return float(np.mean(values)) if values else float("nan")

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
