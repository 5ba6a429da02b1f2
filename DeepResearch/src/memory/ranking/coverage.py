"""Session coverage: the final list balances relevance with coverage of distinct episodes.

Neighbour smoothing lifts the turns around a strong match, so without this step the top of
the list is often one stretch of one conversation, while a question about several events
("what did I buy on both trips?") needs memories from several. An *episode* is the memories
of one session on one day of their event time (`event_at`, else the time they were stored):
a conversation's sessions when it spans days, an agent run's memories otherwise.

The list is picked greedily, best first: each memory's value is its score minus
`penalty` x the best score x the number of memories already picked from its episode beyond
the first `quota` (a question and its answer are often adjacent turns of one episode). A single
strong episode still fills the list when nothing else is close (one-session questions keep
their answers); a relevant memory of another episode overtakes the third or fourth turn of
the first. Greedy picks do not depend on how many are asked for, so `top_k=10` is the first
10 of `top_k=50`. Scores are rewritten to the picked values (descending), the rest follow.
"""

from __future__ import annotations

import heapq

from DeepResearch.src.memory.backends.base import MemoryRecord
from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory, by_score

DAY = 86_400.0


def episode(record: MemoryRecord) -> tuple[str, int]:
    """(session, UTC day of the event time) of a memory."""
    when = record.event_at if record.event_at is not None else record.created_at
    return record.session_id, int(when // DAY)


def coverage_penalty(ctx: RankingContext) -> float:
    """The penalty in force: the profile's override, else memory.retrieval's."""
    if ctx.profile is not None and ctx.profile.session_coverage_penalty is not None:
        return ctx.profile.session_coverage_penalty
    return ctx.retrieval.session_coverage.penalty


def _order(value: float, m: ScoredMemory) -> tuple[float, float, float, str]:
    return (-value, -m.similarity, -m.record.created_at, m.record.id)


class SessionCoverage(BaseStep):
    name = "session_coverage"

    def enabled(self, ctx: RankingContext) -> bool:
        return ctx.retrieval.session_coverage.enabled and coverage_penalty(ctx) > 0

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        pool = by_score(items)
        if len(pool) <= 1:
            return pool
        step = coverage_penalty(ctx) * max(abs(pool[0].score), 1e-9)
        quota = ctx.retrieval.session_coverage.quota
        seen: dict[tuple[str, int], int] = {}  # per episode: memories picked

        def cost(key: tuple[str, int]) -> float:
            """What the next pick of the episode pays: the quota's first ones are free."""
            return step * max(0, seen.get(key, 0) + 1 - quota)

        keys = [episode(m.record) for m in pool]
        # A lazy heap: a memory's value only falls (when its episode gets a pick), so the top
        # entry is the next pick once its value is re-checked.
        heap = [(_order(m.score - cost(keys[i]), m), i) for i, m in enumerate(pool)]
        heapq.heapify(heap)
        chosen: list[ScoredMemory] = []
        taken: set[int] = set()
        while heap and len(chosen) < ctx.limit:
            order, i = heapq.heappop(heap)
            m = pool[i]
            now = _order(m.score - cost(keys[i]), m)
            if now != order:
                heapq.heappush(heap, (now, i))
                continue
            cut = cost(keys[i])
            seen[keys[i]] = seen.get(keys[i], 0) + 1
            m.score -= cut
            m.signals[self.name] = -cut
            chosen.append(m)
            taken.add(i)
        rest = [m for i, m in enumerate(pool) if i not in taken]
        for i, m in enumerate(pool):
            if i in taken:
                continue
            cut = cost(keys[i])
            m.score -= cut
            if cut:
                m.signals[self.name] = -cut
        return chosen + by_score(rest)
