"""Steps that shape the final list: de-duplication, MMR, the cut to the limit."""

from __future__ import annotations

import numpy as np

from DeepResearch.src.memory.backends.base import MemoryRecord
from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory, by_score


def _text(record: MemoryRecord) -> tuple[str, str, bytes | None]:
    return record.memory_type, record.content, record.content_blob


def _sim(a: ScoredMemory, b: ScoredMemory) -> float:
    """How much b repeats a: the cosine of their vectors, 1 for the same text without them."""
    if a.record.vector is not None and b.record.vector is not None:
        return float(np.dot(a.record.vector, b.record.vector))
    return 1.0 if _text(a.record) == _text(b.record) else 0.0


class Deduplicate(BaseStep):
    """Keep the best of near-identical memories of one type: the same text, or cosine >=
    dedup_threshold between their vectors. Memories of different types are never duplicates.
    Greedy over the items best first, comparing each with the kept ones of its type (one
    matrix-vector product). Without MMR or session coverage the list is cut to `limit` next,
    so it stops once `limit` are kept."""

    name = "deduplicate"

    def enabled(self, ctx: RankingContext) -> bool:
        return ctx.profile.deduplication if ctx.profile is not None else True

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        reorders = ctx.retrieval.mmr_enabled or ctx.retrieval.session_coverage.enabled
        enough = len(items) if reorders else ctx.limit
        threshold = ctx.retrieval.dedup_threshold
        kept: list[ScoredMemory] = []
        kept_texts: set[tuple[str, str, bytes | None]] = set()
        matrices: dict[str, np.ndarray] = {}  # memory type -> its kept vectors, one per row
        rows: dict[str, int] = {}
        for m in by_score(items):
            if len(kept) >= enough:
                break
            kind, text = m.record.memory_type, _text(m.record)
            if text in kept_texts:
                continue
            vector, n = m.record.vector, rows.get(kind, 0)
            if vector is not None and n and float(np.max(matrices[kind][:n] @ vector)) >= threshold:
                continue
            kept.append(m)
            kept_texts.add(text)
            if vector is not None:
                if kind not in matrices:
                    matrices[kind] = np.empty((enough, len(vector)), dtype=np.float32)
                matrices[kind][n] = vector
                rows[kind] = n + 1
        return kept


class MaximalMarginalRelevance(BaseStep):
    """Re-order by lambda * relevance - (1 - lambda) * similarity to what is already chosen
    (relevance = score / best score), choosing `limit` items."""

    name = "mmr"

    def enabled(self, ctx: RankingContext) -> bool:
        return ctx.retrieval.mmr_enabled

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        pool = by_score(items)
        if len(pool) <= 1:
            return pool
        best = max(abs(pool[0].score), 1e-9)
        lam = ctx.retrieval.mmr_lambda
        chosen: list[ScoredMemory] = []
        while pool and len(chosen) < ctx.limit:
            def value(m: ScoredMemory) -> float:
                redundancy = max((_sim(m, c) for c in chosen), default=0.0)
                return lam * m.score / best - (1 - lam) * redundancy

            pick = max(pool, key=value)
            pool.remove(pick)
            pick.signals[self.name] = value(pick)
            chosen.append(pick)
        # keep the MMR order: rewrite scores so they stay descending
        for rank, m in enumerate(chosen):
            m.score = min(m.score, chosen[rank - 1].score) if rank else m.score
        return chosen


class Truncate(BaseStep):
    """The best `limit` items (top_k, capped by the profile's max_items)."""

    name = "truncate"

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        if ctx.retrieval.mmr_enabled:
            return items[: ctx.limit]  # MMR order is final
        return by_score(items)[: ctx.limit]
