"""The candidate stage: dense candidates, optionally fused with lexical ones by RRF."""

from __future__ import annotations

import numpy as np

from DeepResearch.src.memory.backends.base import MemoryBackend, MemoryFilter
from DeepResearch.src.memory.ranking.types import ScoredMemory


async def gather_candidates(
    backend: MemoryBackend,
    query: str,
    query_vector: np.ndarray,
    flt: MemoryFilter,
    n: int,
    *,
    hybrid: bool,
    rrf_k: int,
) -> list[ScoredMemory]:
    """Up to 2n candidates. Dense only: score = cosine similarity. Hybrid: reciprocal rank
    fusion of the dense and the lexical lists, scaled so rank 1 in both lists scores 1.0."""
    dense = await backend.vector_search(query_vector, n, flt)
    if not hybrid:
        return [ScoredMemory(c.record, c.score, c.score, {"dense": c.score}) for c in dense]
    lexical = await backend.text_search(query, n, flt)
    scale = (rrf_k + 1) / 2.0
    fused: dict[str, ScoredMemory] = {}
    for rank, cand in enumerate(dense, start=1):
        fused[cand.record.id] = ScoredMemory(
            cand.record, cand.score, scale / (rrf_k + rank), {"dense": cand.score, "dense_rank": rank}
        )
    for rank, cand in enumerate(lexical, start=1):
        item = fused.get(cand.record.id)
        if item is None:
            vector = cand.record.vector
            similarity = float(vector @ query_vector) if vector is not None else 0.0
            item = ScoredMemory(cand.record, similarity, 0.0, {"dense": similarity})
            fused[cand.record.id] = item
        item.score += scale / (rrf_k + rank)
        item.signals["lexical_rank"] = rank
    for item in fused.values():
        item.signals["rrf"] = item.score
    return list(fused.values())
