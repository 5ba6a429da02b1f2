"""The graph path: memories the knowledge graph links to the entities the query names join
the candidates (retrieval.graph; the walk itself is facts/recall.py).

Each evidence memory of those entities' facts gains `weight` x the best fused score; one the
candidate stage missed joins with its cosine on the stage's scale (`ctx.score_unseen`), if
the retrieve's filter and the similarity floor allow it. Its `paths` name the fact that
brought it ("graph: Alice -WORKS_AT-> Google"). Runs before neighbour smoothing, so a graph
candidate's session neighbours can follow it in.
"""

from __future__ import annotations

from DeepResearch.src.memory.ranking.thresholds import MinSimilarity
from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory


class GraphPath(BaseStep):
    name = "graph"

    def enabled(self, ctx: RankingContext) -> bool:
        cfg = ctx.retrieval.graph
        return cfg.enabled and ctx.graph_evidence is not None and ctx.fetch_records is not None

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        assert ctx.graph_evidence is not None and ctx.fetch_records is not None
        paths = await ctx.graph_evidence(ctx.query)
        if not paths:
            return items
        pool = {m.record.id: m for m in items}
        best = max((m.score for m in items), default=0.0)
        bonus = ctx.retrieval.graph.weight * max(best, 0.0)
        missing = [i for i in paths if i not in pool]
        floor = MinSimilarity.threshold(ctx)
        for record in await ctx.fetch_records(missing) if missing else []:
            if record.id in pool or not ctx.accept(record):
                continue
            similarity = (
                float(record.vector @ ctx.query_vector) if record.vector is not None else 0.0
            )
            if similarity < floor:
                continue
            pool[record.id] = ScoredMemory(
                record, similarity, ctx.score_unseen(similarity), {"dense": similarity}
            )
        for memory_id, path in paths.items():
            item = pool.get(memory_id)
            if item is None:
                continue
            item.score += bonus
            item.signals[self.name] = bonus
            item.paths.append(f"graph: {path}")
        return list(pool.values())
