"""The graph path: memories the knowledge graph links to the entities the query names join
the candidates (retrieval.graph).

**The walk** (`evidence_paths`). An entity is named when a run of one to three of the query's
words (a possessive "'s" dropped) is one of its name keys (its name, real name or an alias,
as `name_key` compares them). Up to `max_entities` are kept: people first, then longer names, then in query order.
Their facts -- current and past, with the entity as subject or as object -- are read (up to
`max_facts`, newest first), and each fact's evidence ids are the memories it was learnt from.
A fact learnt from more than `max_fact_evidence` memories is skipped: it says that the entity
is around (PARTICIPATED_IN a channel, a name MENTIONED in many messages), not what about it.
`evidence_paths` returns them, in that order, each with the path that reached it
("Alice -WORKS_AT-> Google").

**The step** (`GraphPath`). Each evidence memory of those entities' facts gains `weight` x the
best fused score; one the candidate stage missed joins with its cosine on the stage's scale
(`ctx.score_unseen`), if the retrieve's filter and the similarity floor allow it. Its `paths`
name the fact that brought it ("graph: Alice -WORKS_AT-> Google"). Runs before neighbour
smoothing, so a graph candidate's session neighbours can follow it in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from DeepResearch.src.memory.facts.model import Entity, Fact, FactQuery
from DeepResearch.src.memory.facts.store import FactStore, entity_name_keys, name_key
from DeepResearch.src.memory.ranking.thresholds import MinSimilarity
from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory

MAX_WORDS = 3  # the longest name looked up, in words
_WORD = re.compile(r"[\w][\w.&-]*", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)


def mention_keys(query: str) -> list[str]:
    """The name keys of every run of 1..MAX_WORDS words of `query`, longest first, each once."""
    words = [_POSSESSIVE.sub("", w).strip(".-") for w in _WORD.findall(query.replace("’", "'"))]
    words = [w for w in words if w]
    keys: dict[str, None] = {}
    for n in range(min(MAX_WORDS, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            key = name_key(" ".join(words[i : i + n]))
            if key:
                keys.setdefault(key, None)
    return list(keys)


def pick_entities(found: Sequence[Entity], keys: Sequence[str], limit: int) -> list[Entity]:
    """At most `limit` of `found`: people first, then those named by the longer run (then the
    earlier one) of the query, then by id."""
    order = {k: i for i, k in enumerate(keys)}

    def rank(entity: Entity) -> tuple[bool, int, str]:
        named = min((order[k] for k in entity_name_keys(entity) if k in order), default=len(order))
        return (entity.type != "Person", named, entity.id)

    unique = {e.id: e for e in found}
    return sorted(unique.values(), key=rank)[:limit]


def _path(fact: Fact, names: dict[str, str]) -> str:
    obj = names.get(fact.object_id, fact.object_id) if fact.object_id else fact.object_value
    return f"{names.get(fact.subject_id, fact.subject_id)} -{fact.predicate}-> {obj}"


async def evidence_paths(
    store: FactStore, namespace: str, query: str, *, max_entities: int, max_facts: int,
    max_evidence: int, max_fact_evidence: int,
) -> dict[str, str]:
    """Memory id -> the first graph path that reached it, for the entities `query` names;
    at most `max_evidence` ids, in the order of their facts (newest first)."""
    keys = mention_keys(query)
    if not keys:
        return {}
    entities = pick_entities(await store.entities_by_key(namespace, keys), keys, max_entities)
    if not entities:
        return {}
    ids = tuple(e.id for e in entities)
    facts: dict[str, Fact] = {}
    for side in ("subject_ids", "object_ids"):
        for fact in await store.find_facts(FactQuery(
            namespace, include_history=True, limit=max_facts, **{side: ids}
        )):
            if len(fact.evidence) <= max_fact_evidence:
                facts.setdefault(fact.id, fact)
    ordered = sorted(facts.values(), key=lambda f: -(f.valid_at or f.created_at))[:max_facts]
    names = {e.id: e.name for e in entities}
    others = {i for f in ordered for i in (f.subject_id, f.object_id) if i and i not in names}
    names.update({e.id: e.name for e in await store.get_entities(namespace, sorted(others))})
    paths: dict[str, str] = {}
    for fact in ordered:
        for memory_id in fact.evidence:
            if memory_id not in paths:
                paths[memory_id] = _path(fact, names)
                if len(paths) >= max_evidence:
                    return paths
    return paths


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
