"""Retrieval through observations (retrieval.observations, off by default).

An observation memory (summaries.py) gathers one entity's memories on one subject; a question
about that subject in other words ("what activities does she do") can match the observation
better than any one of its memories. The `top` best-ranked observations among the candidates
bring their evidence (metadata "evidence") in: each evidence memory gains `weight` x the
observation's score (the best observation's, when several name it); one that was not a
candidate joins with its cosine on the candidate stage's scale (`ctx.score_unseen`), if the
retrieve's filter and the similarity floor allow it. Its `paths` name the observation
("observation: Dana (obs-...)"). With `keep` false the observations then leave the list.
Runs after the graph path and before neighbour smoothing.
"""

from __future__ import annotations

from DeepResearch.src.memory.config_consolidation import OBSERVATION
from DeepResearch.src.memory.ranking.thresholds import MinSimilarity
from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory, by_score


def _evidence(item: ScoredMemory) -> list[str]:
    ids = item.record.metadata.get("evidence")
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []


class ObservationPath(BaseStep):
    name = "observations"

    def enabled(self, ctx: RankingContext) -> bool:
        return ctx.retrieval.observations.enabled and ctx.fetch_records is not None

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        assert ctx.fetch_records is not None
        cfg = ctx.retrieval.observations
        observations = [m for m in by_score(items) if m.record.memory_type == OBSERVATION]
        if not observations:
            return items
        pool = {m.record.id: m for m in items}
        bonus: dict[str, tuple[float, str]] = {}
        for obs in observations[: cfg.top]:
            gain = cfg.weight * max(obs.score, 0.0)
            who = obs.record.metadata.get("observation_of", "")
            for memory_id in _evidence(obs):
                if memory_id not in bonus or gain > bonus[memory_id][0]:
                    bonus[memory_id] = (gain, f"observation: {who} ({obs.record.id})")
        missing = [i for i in bonus if i not in pool]
        floor = MinSimilarity.threshold(ctx)
        for record in await ctx.fetch_records(missing) if missing else []:
            if record.id in pool or not ctx.accept(record):
                continue
            similarity = float(record.vector @ ctx.query_vector) if record.vector is not None else 0.0
            if similarity < floor:
                continue
            pool[record.id] = ScoredMemory(record, similarity, ctx.score_unseen(similarity),
                                           {"dense": similarity})
        for memory_id, (gain, path) in bonus.items():
            item = pool.get(memory_id)
            if item is None:
                continue
            item.score += gain
            item.signals[self.name] = gain
            item.paths.append(path)
        out = list(pool.values())
        if not cfg.keep:
            out = [m for m in out if m.record.memory_type != OBSERVATION]
        return out
