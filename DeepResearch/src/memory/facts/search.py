"""semantic_search_facts' retrieval: the candidate stage of `retrieve` (dense + lexical,
fused: ranking/candidates.py) over the fact memories alone, then the facts' own conditions.

Not `client.retrieve`: its ranking steps are made for conversation memories (session
neighbours, coverage of episodes, recency, de-duplication) and do nothing useful here -- a fact
sentence has no session chain, and two facts with like sentences are two facts -- while they
cost a neighbour read, the records' validation and their documents (~8 ms of ~40 at 100k facts).
What stays of the ranking is the importance bonus (a sentence's importance is its fact's
confidence), so the order is the one retrieve gave.

The query embeds while the lexical search runs (when the backend's lexical search leaves the
GIL, as retrieve does it). Current-only and min_confidence are conditions of the fact store:
when too few of a pool pass them, a pool four times larger is searched (same query vector),
until `limit` pass, the pool holds every fact, or it reaches MAX_POOL.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from DeepResearch.src.memory.backends.base import MemoryFilter
from DeepResearch.src.memory.facts.model import FACT_MEMORY_TYPE, Fact, FactQuery
from DeepResearch.src.memory.ranking.candidates import gather_candidates
from DeepResearch.src.memory.text import tokenize

if TYPE_CHECKING:
    from DeepResearch.src.memory.facts.graph import FactGraph

MAX_POOL = 2048  # candidates per list at most (a pool of up to twice as many facts)
STRUCTURE_WORDS = ("role", "since", "until", "proficiency", "years", "who", "whom", "which")


@functools.lru_cache(maxsize=64)
def _structure_tokens(predicates: tuple[str, ...]) -> frozenset[str]:
    words = [w for p in predicates for w in p.lower().split("_")] + list(STRUCTURE_WORDS)
    return frozenset(tokenize(" ".join(words)))


def lexical_query(query: str, predicates: Sequence[str]) -> str:
    """`query` without the words every fact sentence of a predicate shares (their tokens):
    "works" matches every WORKS_AT sentence, a fifth of a store, with little BM25 weight."""
    structure = _structure_tokens(tuple(predicates))
    return " ".join(w for w in query.split() if not set(tokenize(w)) <= structure)


async def search_facts(
    graph: FactGraph, query: str, limit: int, min_confidence: float, include_history: bool,
    predicates: tuple[str, ...] | None = None, min_similarity: float = -1.0,
) -> list[tuple[Fact, float | None]]:
    """Up to `limit` facts whose sentence matches `query`, best first, each with the cosine
    similarity of its sentence and the query: dense on the whole query, lexical on
    `lexical_query` (the whole query when that leaves nothing). `predicates` and
    `min_similarity` are conditions too (a hit whose similarity is unknown passes)."""
    store = await graph.store()
    client = graph.client
    await client.writes.drain_pending()  # read-your-writes, as retrieve
    await client.filler.settle()
    retrieval = client.config.retrieval
    lexical = lexical_query(query, graph.config.predicates) or query
    flt = MemoryFilter(namespaces=(graph.namespace,), memory_types=(FACT_MEMORY_TYPE,),
                       live_at=time.time())
    cached = client.embedder.cached(query)
    embedding = asyncio.ensure_future(
        asyncio.to_thread(client.embedder.embed_query, query) if cached is None
        else asyncio.sleep(0, cached))
    size = max(retrieval.candidate_pool, 3 * limit)
    try:
        while True:
            pool = await gather_candidates(client.backend, lexical, embedding, flt, size, retrieval)
            scores = {m.record.id: m.score + retrieval.importance_weight * (m.record.importance - 0.5)
                      for m in pool.items}
            # None: a lexical hit whose vector the backend did not return (similarity unknown)
            similarity = {m.record.id: m.similarity if "dense_rank" in m.signals
                          or m.record.vector is not None else None for m in pool.items}
            facts = await store.find_facts(FactQuery(
                graph.namespace, ids=tuple(scores), include_history=include_history,
                predicates=predicates, min_confidence=min_confidence, limit=len(scores) or 1))
            facts = [f for f in facts if similarity[f.id] is None or similarity[f.id] >= min_similarity]
            # a larger pool only adds farther neighbours once one is already below the threshold
            below = any(s is not None and s < min_similarity for s in similarity.values())
            if len(facts) >= limit or len(pool.items) < size or size >= MAX_POOL or below:
                break
            size = min(4 * size, MAX_POOL)
    finally:
        if not embedding.done():
            embedding.cancel()
    facts.sort(key=lambda f: (-scores[f.id], f.id))
    return [(f, similarity[f.id]) for f in facts[:limit]]
