"""Cross-reference expansion: memories the top results reference (or were caused by) join
the list at a fraction of the referring memory's score, if the retrieve's filter allows them."""

from __future__ import annotations

import numpy as np

from DeepResearch.src.memory.models import RelationType
from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory, by_score

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
