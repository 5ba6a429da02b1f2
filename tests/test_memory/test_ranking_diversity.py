"""Deduplicate: near-identical memories of one type (cosine >= dedup_threshold, or the same
text) keep only their best; without MMR it stops once `limit` are kept."""

from __future__ import annotations

import numpy as np

from DeepResearch.src.memory.backends.base import EMBEDDING_KEY, MemoryRecord
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


async def test_stops_at_limit_unless_mmr_needs_the_pool() -> None:
    items = [_item(str(i), 1.0 - i / 10, [np.cos(i), np.sin(i)]) for i in range(3)]
    assert [m.record.id for m in await Deduplicate()(items, _ctx(2))] == ["0", "1"]
    assert len(await Deduplicate()(items, _ctx(2, mmr_enabled=True))) == 3


async def test_memories_of_different_types_are_never_duplicates() -> None:
    """A loop's plan, answer and trace share its question's vector; each is kept once."""
    items = [
        _item("answer", 1.0, [1, 0], kind="answer"),
        _item("plan", 0.9, [1, 0], kind="plan"),
        _item("plan-again", 0.8, [1, 0.01], kind="plan"),  # a duplicate of "plan"
        _item("trace", 0.7, [1, 0], text="answer", kind="execution_trace"),  # same text too
    ]
    out = await Deduplicate()(items, _ctx(10))
    assert [m.record.id for m in out] == ["answer", "plan", "trace"]


def _keyed(rid: str, score: float, text: str, key: str = "the loop's question") -> ScoredMemory:
    item = _item(rid, score, [1, 0], text=text, kind="tool_execution")
    item.record.metadata[EMBEDDING_KEY] = key
    return item


async def test_memories_embedded_from_a_key_are_compared_by_text_only() -> None:
    """A loop's tool runs all carry its question's vector: each says something else, so
    only the same text makes a duplicate. A memory whose vector stands for its content
    is still a duplicate of one with a near-identical vector."""
    items = [
        _keyed("search", 1.0, "Tool search_documents succeeded with {...}"),
        _keyed("read-a", 0.9, "Tool read_document succeeded with a.md"),
        _keyed("read-a-again", 0.8, "Tool read_document succeeded with a.md"),  # same text
        _keyed("read-b", 0.7, "Tool read_document succeeded with b.md"),
        _item("by-content", 0.6, [1, 0.01], kind="tool_execution"),  # cosine ~1 with all
    ]
    out = await Deduplicate()(items, _ctx(10))
    assert [m.record.id for m in out] == ["search", "read-a", "read-b", "by-content"]
    assert [m.record.id for m in await Deduplicate()(items[::-1], _ctx(10))] == [
        "search", "read-a", "read-b", "by-content"
    ]


async def test_mmr_counts_keyed_memories_redundant_only_when_their_text_is_the_same() -> None:
    items = [
        _keyed("search", 1.0, "Tool search_documents succeeded"),
        _keyed("search-again", 0.99, "Tool search_documents succeeded"),
        _keyed("read", 0.98, "Tool read_document succeeded"),
    ]
    out = await MaximalMarginalRelevance()(items, _ctx(2, mmr_enabled=True, mmr_lambda=0.5))
    assert [m.record.id for m in out] == ["search", "read"]


async def test_plans_that_differ_only_in_their_question_are_duplicates() -> None:
    """A question asked again in other words ("Case 7: ..." / "Case 3: ...") leaves a plan
    and an answer that quote it: with each memory's key (its question) masked, the rest is
    the same, so the briefing keeps the best of them and has room for other memories. Tool
    runs that differ in what is not their key stay apart."""

    aligners, variants = [1.0, 0.0], [0.0, 1.0]  # the keys' vectors: two questions

    def plan(rid: str, score: float, question: str, vector: list[float],
             outcome: str = "succeeded") -> ScoredMemory:
        item = _item(rid, score, vector, kind="plan",
                     text=f"Plan for {question!r} {outcome}: 2 of 2 steps done.\n1. search {question}")
        item.record.metadata[EMBEDDING_KEY] = question
        return item

    items = [
        plan("case-7", 1.0, "Case 7: Which aligner suits RNA-seq reads?", aligners),
        plan("case-3", 0.9, "Case 3: Which aligner suits RNA-seq reads?", [1.0, 0.05]),  # ~ case 7
        plan("case-3-failed", 0.85, "Case 3: Which aligner suits RNA-seq reads?", [1.0, 0.05], "failed"),
        plan("variants", 0.8, "How are variants called?", variants),  # same template, other question
        _keyed("read-a", 0.7, "Tool read_document failed with a.md", key="Case 7: ..."),
        _keyed("read-b", 0.6, "Tool read_document failed with b.md", key="Case 3: ..."),
    ]
    out = await Deduplicate()(items, _ctx(10))
    assert [m.record.id for m in out] == ["case-7", "case-3-failed", "variants", "read-a", "read-b"]
    # Keys less alike than dedup_threshold: not duplicates.
    assert len(await Deduplicate()(items[:2], _ctx(10, dedup_threshold=0.9999))) == 2
    # MMR counts them redundant alike.
    out = await MaximalMarginalRelevance()(items[:2] + items[3:4], _ctx(2, mmr_enabled=True, mmr_lambda=0.5))
    assert [m.record.id for m in out] == ["case-7", "variants"]
