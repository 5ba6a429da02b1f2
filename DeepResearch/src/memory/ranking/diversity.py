"""Steps that shape the final list: de-duplication, MMR, the cut to the limit."""

from __future__ import annotations

import numpy as np

from DeepResearch.src.memory.backends.base import EMBEDDING_KEY, same_memory_key
from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory, by_score


def _by_vector(m: ScoredMemory) -> bool:
    """Whether m's vector stands for its content: not when it was embedded from a key (a
    loop's memories share its question's vector, and each says something else)."""
    return m.record.vector is not None and EMBEDDING_KEY not in m.record.metadata


def _masked_text(m: ScoredMemory) -> tuple[str, str] | None:
    """A keyed memory's type and text with its key masked out, or None (not keyed, or its
    text does not quote its key). A loop's plan and answer quote the loop's question."""
    record = m.record
    key = record.metadata.get(EMBEDDING_KEY)
    if not isinstance(key, str) or not key or record.content_blob is not None:
        return None
    if key not in record.content:
        return None
    return record.memory_type, record.content.replace(key, "\x00")


def _sim(a: ScoredMemory, b: ScoredMemory, threshold: float) -> float:
    """How much b repeats a (1.0 = a duplicate at `threshold`). Vectors that stand for their
    contents: their cosine. Otherwise 1 for the same text; for keyed memories with the same
    text once their keys are masked, their keys' cosine (their vectors), 1 from `threshold`
    on -- the plan or answer of a question asked again in other words ("Case 7: ..." /
    "Case 3: ...") repeats the earlier one, that of another question written from the same
    template does not; else 0."""
    if _by_vector(a) and _by_vector(b):
        return float(np.dot(a.record.vector, b.record.vector))
    if (a.record.content, a.record.content_blob) == (b.record.content, b.record.content_blob):
        return 1.0
    masked_a, masked_b = _masked_text(a), _masked_text(b)
    if masked_a is None or masked_b is None or masked_a[1] != masked_b[1]:
        return 0.0
    if a.record.vector is None or b.record.vector is None:
        return 0.0
    cosine = float(np.dot(a.record.vector, b.record.vector))
    return 1.0 if cosine >= threshold else cosine


class Deduplicate(BaseStep):
    """Keep the best of near-identical memories of one type: the same text, cosine >=
    dedup_threshold between vectors that stand for their contents, or (memories embedded
    from a key) the same text with their keys masked, and keys as alike as dedup_threshold.

    Memories of different types are never duplicates, and a vector embedded from a key (a
    loop's plan, answer, trace and tool runs all carry its question's) says nothing about
    the content: those are compared by text (see `_sim`). Greedy over the items best first,
    comparing each with the kept ones of its type (contents' vectors as one matrix-vector
    product). Without MMR the list is cut to `limit` next, so it stops once `limit` are kept."""

    name = "deduplicate"

    def enabled(self, ctx: RankingContext) -> bool:
        return ctx.profile.deduplication if ctx.profile is not None else True

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        enough = len(items) if ctx.retrieval.mmr_enabled else ctx.limit
        threshold = ctx.retrieval.dedup_threshold
        kept: list[ScoredMemory] = []
        kept_texts: set[tuple[str, str, bytes | None]] = set()
        kept_masked: dict[tuple[str, str], list[ScoredMemory]] = {}
        matrices: dict[str, np.ndarray] = {}  # memory type -> its kept vectors, one per row
        rows: dict[str, int] = {}
        for m in by_score(items):
            if len(kept) >= enough:
                break
            kind, text = m.record.memory_type, same_memory_key(m.record)
            if text in kept_texts:
                continue
            masked = _masked_text(m)
            if masked is not None and any(
                _sim(m, other, threshold) >= 1.0 for other in kept_masked.get(masked, ())
            ):
                continue
            vector, n = m.record.vector if _by_vector(m) else None, rows.get(kind, 0)
            if vector is not None and n and float(np.max(matrices[kind][:n] @ vector)) >= threshold:
                continue
            kept.append(m)
            kept_texts.add(text)
            if masked is not None:
                kept_masked.setdefault(masked, []).append(m)
            if vector is not None:
                if kind not in matrices:
                    matrices[kind] = np.empty((enough, len(vector)), dtype=np.float32)
                matrices[kind][n] = vector
                rows[kind] = n + 1
        return kept


class MaximalMarginalRelevance(BaseStep):
    """Re-order by lambda * relevance - (1 - lambda) * similarity to what is already chosen
    (relevance = score / best score), choosing `limit` items."""

    name = "mmr"

    def enabled(self, ctx: RankingContext) -> bool:
        return ctx.retrieval.mmr_enabled

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        pool = by_score(items)
        if len(pool) <= 1:
            return pool
        best = max(abs(pool[0].score), 1e-9)
        lam = ctx.retrieval.mmr_lambda
        threshold = ctx.retrieval.dedup_threshold
        chosen: list[ScoredMemory] = []
        while pool and len(chosen) < ctx.limit:
            def value(m: ScoredMemory) -> float:
                redundancy = max((_sim(m, c, threshold) for c in chosen), default=0.0)
                return lam * m.score / best - (1 - lam) * redundancy

            pick = max(pool, key=value)
            pool.remove(pick)
            pick.signals[self.name] = value(pick)
            chosen.append(pick)
        # keep the MMR order: rewrite scores so they stay descending
        for rank, m in enumerate(chosen):
            m.score = min(m.score, chosen[rank - 1].score) if rank else m.score
        return chosen


class Truncate(BaseStep):
    """The best `limit` items (top_k, capped by the profile's max_items)."""

    name = "truncate"

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        if ctx.retrieval.mmr_enabled:
            return items[: ctx.limit]  # MMR order is final
        return by_score(items)[: ctx.limit]
