"""Steps that drop candidates: too dissimilar, too old."""

from __future__ import annotations

from dataclasses import replace

from DeepResearch.src.memory.backends.base import MemoryFilter
from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory


class MinSimilarity(BaseStep):
    """Drop candidates below retrieval.min_similarity (or the profile's relevance_threshold,
    whichever is higher), unless they match the query's words: a lexical match is kept
    whatever its cosine (a rare name or code the embedding model does not know can give a
    negative cosine to the very memory that holds it)."""

    name = "min_similarity"

    @staticmethod
    def threshold(ctx: RankingContext) -> float:
        floor = ctx.retrieval.min_similarity
        if ctx.profile is not None:
            floor = max(floor, ctx.profile.relevance_threshold)
        return floor

    def enabled(self, ctx: RankingContext) -> bool:
        return self.threshold(ctx) > -1.0

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        floor = self.threshold(ctx)
        return [m for m in items if m.similarity >= floor or m.signals.get("lexical", 0.0) > 0]


class MaxAge(BaseStep):
    """Keep memories stored less than retrieval.max_age_seconds before the retrieve's as_of
    (`ctx.now`); pushed down into the backend filter so old memories do not take candidate
    slots."""

    name = "max_age"

    def enabled(self, ctx: RankingContext) -> bool:
        return ctx.retrieval.max_age_seconds is not None

    def reads_clock(self, ctx: RankingContext) -> bool:
        return True

    def narrow(self, flt: MemoryFilter, ctx: RankingContext) -> MemoryFilter:
        assert ctx.retrieval.max_age_seconds is not None
        oldest = ctx.now - ctx.retrieval.max_age_seconds
        if flt.created_after is not None:
            oldest = max(oldest, flt.created_after)
        return replace(flt, created_after=oldest)

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        assert ctx.retrieval.max_age_seconds is not None
        oldest = ctx.now - ctx.retrieval.max_age_seconds
        return [m for m in items if m.record.created_at >= oldest]
