"""Time match: when the query names a time ("last month", "in May", "on 8 May 2023"),
memories whose event time falls in it gain `weight` x the best score of the list.

The event time is `event_at` when the caller gave one (e.g. the date of a conversation's
session), else the time the memory was stored. The ranges come from `time_query.py`, resolved
against the retrieve's `as_of` (`ctx.now`). Nothing is dropped: a query whose time words were
misread loses nothing but the bonus.
"""

from __future__ import annotations

from DeepResearch.src.memory.ranking.time_query import names_time, time_ranges
from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory


class TimeMatch(BaseStep):
    name = "time_match"

    def enabled(self, ctx: RankingContext) -> bool:
        cfg = ctx.retrieval.time_query
        return cfg.enabled and cfg.weight > 0

    def reads_clock(self, ctx: RankingContext) -> bool:
        return names_time(ctx.query)  # its time words are resolved against ctx.now

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        if not items:
            return items
        ranges = time_ranges(ctx.query, ctx.now)
        if not ranges:
            return items
        bonus = ctx.retrieval.time_query.weight * max(max(m.score for m in items), 1e-9)
        for m in items:
            r = m.record
            when = r.event_at if r.event_at is not None else r.created_at
            if any(span.contains(when) for span in ranges):
                m.score += bonus
                m.signals[self.name] = bonus
        return items
