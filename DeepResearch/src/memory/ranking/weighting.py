"""Steps that adjust scores: recency, importance, profile priorities, outcomes, failures."""

from __future__ import annotations

from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory
from DeepResearch.src.memory.text import tokenize

TEMPORAL_SHARE = 0.2  # at most this fraction of a score depends on recency
SUCCESS_FACTOR = 1.2
FAILURE_FACTOR = 0.8
FAILURE_MATCH_FACTOR = 1.5
FAILURE_TYPES = frozenset({"failure_analysis"})


class TemporalDecay(BaseStep):
    """score *= 1 - s + s * 2^(-age / half_life), s = TEMPORAL_SHARE * temporal_weight (<= 1)."""

    name = "temporal_decay"

    def enabled(self, ctx: RankingContext) -> bool:
        return ctx.profile is not None and ctx.profile.temporal_weighting

    def reads_clock(self, ctx: RankingContext) -> bool:
        return True

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        half_life = ctx.retrieval.temporal_half_life_seconds
        for m in items:
            age = max(0.0, ctx.now - m.record.created_at)
            share = TEMPORAL_SHARE * min(1.0, max(0.0, m.record.temporal_weight))
            factor = 1.0 - share + share * 0.5 ** (age / half_life)
            m.score *= factor
            m.signals[self.name] = factor
        return items


class Importance(BaseStep):
    """score += importance_weight * (importance - 0.5): important memories rise."""

    name = "importance"

    def enabled(self, ctx: RankingContext) -> bool:
        return ctx.retrieval.importance_weight > 0

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        for m in items:
            bonus = ctx.retrieval.importance_weight * (m.record.importance - 0.5)
            m.score += bonus
            m.signals[self.name] = bonus
        return items


class ProfilePriorities(BaseStep):
    """score *= profile.priorities[memory_type] (1.0 for types not listed)."""

    name = "priorities"

    def enabled(self, ctx: RankingContext) -> bool:
        return ctx.profile is not None and bool(ctx.profile.priorities)

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        assert ctx.profile is not None
        for m in items:
            weight = ctx.profile.priorities.get(m.record.memory_type, 1.0)
            m.score *= weight
            m.signals[self.name] = weight
        return items


def outcome(metadata: dict) -> bool | None:
    """metadata['success'] when it is a bool, else None (unknown)."""
    value = metadata.get("success")
    return value if isinstance(value, bool) else None


class SuccessWeighting(BaseStep):
    """Memories of things that worked (metadata success=true) rise, failures sink."""

    name = "success_weighting"

    def enabled(self, ctx: RankingContext) -> bool:
        return ctx.profile is not None and ctx.profile.success_weighting

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        for m in items:
            ok = outcome(m.record.metadata)
            if ok is None:
                continue
            factor = SUCCESS_FACTOR if ok else FAILURE_FACTOR
            m.score *= factor
            m.signals[self.name] = factor
        return items


class FailurePatterns(BaseStep):
    """Failures of a tool the query names (metadata tool) are pushed up, so an agent about to
    use that tool sees how it failed before. Runs after success weighting and undoes its
    penalty for these memories."""

    name = "failure_patterns"

    def enabled(self, ctx: RankingContext) -> bool:
        return ctx.profile is not None and ctx.profile.failure_pattern_matching

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        for m in items:
            meta = m.record.metadata
            failed = outcome(meta) is False or m.record.memory_type in FAILURE_TYPES
            tool = meta.get("tool")
            if not failed or not isinstance(tool, str):
                continue
            tool_tokens = set(tokenize(tool))
            if tool_tokens and tool_tokens <= ctx.query_tokens:
                factor = FAILURE_MATCH_FACTOR / m.signals.get("success_weighting", 1.0)
                m.score *= factor
                m.signals[self.name] = factor
        return items
