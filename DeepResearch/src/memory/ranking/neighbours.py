"""Neighbour smoothing: a memory is more likely relevant when the memories stored just before
or after it in its session are (a conversation answers across turns: "Did you go?" / "Yes,
last week"). Neighbours are the memories within `radius` steps along the session's FOLLOWS
chain, whatever the content; nothing here depends on a data set.

Each memory's score becomes its own fused score + weight x the best fused score among its
neighbours (scores taken before any smoothing, so the order of items does not matter).
Only the neighbourhoods of the best FOCUS candidates are fetched, whatever top_k (so a
shorter list is the start of a longer one): a memory can only climb into the results next
to a high-scoring one (on LoCoMo fetching every candidate's neighbourhood changed no recall
figure, and cost 2-3x). With
`expand`, neighbours of candidates that the candidate stage missed join the list, scored from
their cosine similarity on the candidate stage's scale (`ctx.score_unseen`), if the
retrieve's filter and the similarity floor allow them.

Cross-reference expansion: memories the top results reference (or were caused by) join the
list at a fraction of the referring memory's score, if the retrieve's filter allows them.
"""

from __future__ import annotations

import numpy as np

from DeepResearch.src.memory.models import RelationType
from DeepResearch.src.memory.ranking.thresholds import MinSimilarity
from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory, by_score

FOCUS = 40


class NeighbourSmoothing(BaseStep):
    name = "neighbour_smoothing"

    def enabled(self, ctx: RankingContext) -> bool:
        cfg = ctx.retrieval.neighbour_smoothing
        return cfg.enabled and cfg.weight > 0 and ctx.fetch_neighbours is not None

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        assert ctx.fetch_neighbours is not None
        cfg = ctx.retrieval.neighbour_smoothing
        if not items:
            return items
        pool = {m.record.id: m for m in items}
        found = await ctx.fetch_neighbours(
            [m.record.id for m in by_score(items)[:FOCUS]], cfg.radius
        )
        floor = MinSimilarity.threshold(ctx)
        links: dict[str, set[str]] = {}
        for start, related in found.items():
            for rel in related:
                other = rel.record.id
                if other not in pool:
                    # The client's fetch returns only records its filter passes; accept()
                    # stays as a cheap guard for contexts whose fetch does not (tests, callers
                    # building their own RankingContext).
                    if not cfg.expand or not ctx.accept(rel.record):
                        continue
                    similarity = (
                        float(rel.record.vector @ ctx.query_vector)
                        if rel.record.vector is not None
                        else 0.0
                    )
                    if similarity < floor:
                        continue
                    score = ctx.score_unseen(similarity)
                    pool[other] = ScoredMemory(
                        rel.record, similarity, score, {"dense": similarity, "neighbour_of": 1.0}
                    )
                links.setdefault(start, set()).add(other)
                links.setdefault(other, set()).add(start)  # within radius both ways
        base = {record_id: m.score for record_id, m in pool.items()}
        for record_id, m in pool.items():
            best = max((base[o] for o in links.get(record_id, ())), default=0.0)
            bonus = cfg.weight * max(0.0, best)
            m.score += bonus
            m.signals[self.name] = bonus
        return list(pool.values())


EXPANSION_SHARE = 0.5
EXPANSION_TYPES = [RelationType.REFERENCES.value, RelationType.CAUSED_BY.value]


class CrossReferenceExpansion(BaseStep):
    name = "cross_reference_expansion"

    def enabled(self, ctx: RankingContext) -> bool:
        return (
            ctx.profile is not None
            and ctx.profile.cross_reference_expansion
            and ctx.fetch_related is not None
        )

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        assert ctx.fetch_related is not None
        present = {m.record.id for m in items}
        added: list[ScoredMemory] = []
        top = by_score(items)[: ctx.limit]
        found = await ctx.fetch_related([m.record.id for m in top], EXPANSION_TYPES, 1)
        for m in top:  # best first: a record referenced by several joins at the best share
            for rel in found.get(m.record.id, ()):
                record = rel.record
                # The client's fetch already applies the filter; accept() is a cheap guard
                # for contexts whose fetch does not.
                if record.id in present or not ctx.accept(record):
                    continue
                present.add(record.id)
                similarity = (
                    float(np.dot(record.vector, ctx.query_vector)) if record.vector is not None else 0.0
                )
                added.append(
                    ScoredMemory(
                        record, similarity, m.score * EXPANSION_SHARE,
                        {self.name: m.score * EXPANSION_SHARE, "dense": similarity},
                    )
                )
        return items + added
