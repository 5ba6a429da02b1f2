"""Deduplicate: near-identical memories of one type (cosine >= dedup_threshold, or the same
text) keep only their best; without MMR or session coverage it stops once `limit` are kept."""

from __future__ import annotations

import numpy as np

from DeepResearch.src.memory.backends.base import MemoryRecord
from DeepResearch.src.memory.config import RetrievalConfig
from DeepResearch.src.memory.ranking.diversity import Deduplicate, MaximalMarginalRelevance
from DeepResearch.src.memory.ranking.types import RankingContext, ScoredMemory


def _item(
    rid: str, score: float, vector: list[float] | None, text: str | None = None, kind: str = "note"
) -> ScoredMemory:
    v = None if vector is None else np.asarray(vector, dtype=np.float32) / np.linalg.norm(vector)
    return ScoredMemory(MemoryRecord(rid, "s", kind, text or rid, 0.0, vector=v), 0.0, score)


def _ctx(limit: int, **retrieval: object) -> RankingContext:
    return RankingContext(
        query="q", query_vector=np.zeros(2, dtype=np.float32), query_tokens=frozenset(),
        now=0.0, limit=limit, retrieval=RetrievalConfig(**retrieval), profile=None,
        accept=lambda r: True,
    )


async def test_near_duplicates_keep_the_best_and_same_text_counts_without_vectors() -> None:
    items = [
        _item("a", 1.0, [1, 0]),
        _item("a2", 0.9, [1, 0.01]),  # cosine ~1 with a
        _item("b", 0.8, [0, 1]),
        _item("t1", 0.7, None, text="same words"),
        _item("t2", 0.6, None, text="same words"),
    ]
    out = await Deduplicate()(items, _ctx(10))
    assert [m.record.id for m in out] == ["a", "b", "t1"]


async def test_threshold_is_inclusive_and_configurable() -> None:
    items = [_item("a", 1.0, [1, 0]), _item("c", 0.5, [0.8, 0.6])]  # cosine 0.8
    assert len(await Deduplicate()(items, _ctx(10, dedup_threshold=0.8))) == 1
    assert len(await Deduplicate()(items, _ctx(10, dedup_threshold=0.81))) == 2


async def test_stops_at_limit_unless_a_reordering_step_needs_the_pool() -> None:
    items = [_item(str(i), 1.0 - i / 10, [np.cos(i), np.sin(i)]) for i in range(3)]
    assert [m.record.id for m in await Deduplicate()(items, _ctx(2))] == ["0", "1"]
    assert len(await Deduplicate()(items, _ctx(2, mmr_enabled=True))) == 3
    covering = {"session_coverage": {"enabled": True}}
    assert len(await Deduplicate()(items, _ctx(2, **covering))) == 3  # coverage picks from all


async def test_memories_of_different_types_are_never_duplicates() -> None:
    """A plan, an answer and a trace with one vector (or one text) are each kept."""
    items = [
        _item("answer", 1.0, [1, 0], kind="answer"),
        _item("plan", 0.9, [1, 0], kind="plan"),
        _item("plan-again", 0.8, [1, 0.01], kind="plan"),  # a duplicate of "plan"
        _item("trace", 0.7, [1, 0], text="answer", kind="execution_trace"),  # same text too
    ]
    out = await Deduplicate()(items, _ctx(10))
    assert [m.record.id for m in out] == ["answer", "plan", "trace"]


async def test_mmr_counts_near_identical_vectors_redundant() -> None:
    items = [
        _item("search", 1.0, [1, 0]),
        _item("search-again", 0.99, [1, 0.01]),
        _item("read", 0.9, [0.6, 0.8]),
    ]
    out = await MaximalMarginalRelevance()(items, _ctx(2, mmr_enabled=True, mmr_lambda=0.5))
    assert [m.record.id for m in out] == ["search", "read"]
