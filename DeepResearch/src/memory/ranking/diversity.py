"""Steps that shape the final list: de-duplication, MMR, the cut to the limit."""

from __future__ import annotations

import numpy as np

from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory, by_score


def _sim(a: ScoredMemory, b: ScoredMemory) -> float:
    if a.record.vector is None or b.record.vector is None:
        return 1.0 if a.record.content == b.record.content else 0.0
    return float(np.dot(a.record.vector, b.record.vector))


class Deduplicate(BaseStep):
    """Keep the best of near-identical memories (cosine >= dedup_threshold or same text)."""

    name = "deduplicate"

    def enabled(self, ctx: RankingContext) -> bool:
        return ctx.profile.deduplication if ctx.profile is not None else True

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        kept: list[ScoredMemory] = []
        threshold = ctx.retrieval.dedup_threshold
        for m in by_score(items):
            if any(
                (m.record.content == k.record.content
                and m.record.content_blob == k.record.content_blob)
                or _sim(m, k) >= threshold
                for k in kept
            ):
                continue
            kept.append(m)
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
