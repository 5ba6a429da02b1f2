"""Pseudo-relevance feedback: the words the best candidates share are one more lexical search,
and a memory only that search finds joins the results (every backend); with the step off it
does not."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from DeepResearch.src.memory import MemorySystemClient
from DeepResearch.src.memory.backends.base import MemoryRecord
from DeepResearch.src.memory.ranking.feedback import feedback_terms, feedback_vector
from DeepResearch.src.memory.ranking.types import ScoredMemory

MakeClient = Callable[..., MemorySystemClient]


def _item(content: str, vector: list[float] | None = None) -> ScoredMemory:
    v = None if vector is None else np.asarray(vector, dtype=np.float32)
    return ScoredMemory(MemoryRecord(content, "s", "note", content, 0.0, vector=v), 0.5, 1.0)


def test_terms_are_the_top_memories_shared_words_minus_the_query() -> None:
    top = [_item("Biscuit the puppy chewed a shoe"), _item("Alice walked Biscuit in the park")]
    terms = feedback_terms("Which puppy did Alice adopt?", top, 3)
    assert terms[0] == "Biscuit"  # in both memories
    assert "puppy" not in terms and "Alice" not in terms  # the query's own words
    assert len(terms) == 3


def test_feedback_vector_moves_the_query_towards_the_top() -> None:
    moved = feedback_vector(np.array([1.0, 0.0], dtype=np.float32),
                            [_item("a", [0.0, 1.0])], beta=1.0)
    assert moved is not None and np.allclose(moved, np.array([1.0, 1.0]) / np.sqrt(2))
    assert feedback_vector(np.array([1.0, 0.0], dtype=np.float32), [_item("a")], 1.0) is None


def _unit(dim: int, parts: dict[int, float]) -> list[float]:
    v = np.zeros(dim, dtype=np.float32)
    for i, x in parts.items():
        v[i] = x
    return (v / np.linalg.norm(v)).tolist()


async def test_a_memory_only_the_feedback_finds_joins_the_results(make_client: MakeClient) -> None:
    """Two candidates per list: the answer and a near filler. The target shares no word with
    the query and is far from it, so only the feedback search (the best memory's "Biscuit")
    finds it; it then outranks the filler, the weakest candidate."""
    results = {}
    for enabled in (False, True):
        client = make_client(retrieval={
            "candidate_pool": 2, "neighbour_smoothing": {"enabled": False},
            "feedback": {"enabled": enabled, "top": 1, "terms": 10},
        })
        dim = client.embedder.dimension
        session = f"feedback-{enabled}"
        await client.store_many([
            {"content": "Alice adopted a puppy called Biscuit", "vector": _unit(dim, {0: 1.0})},
            {"content": "The quarterly budget review is on Monday",
             "vector": _unit(dim, {0: 0.5, 1: 0.87})},
            {"content": "Biscuit chewed the sofa cushions", "vector": _unit(dim, {0: 0.1, 2: 1.0})},
            {"content": "Rain is forecast for the harbour", "vector": _unit(dim, {0: 0.05, 3: 1.0})},
        ], session_id=session)
        hits = await client.retrieve("Which puppy did Alice adopt?", top_k=2, session_id=session,
                                     query_vector=_unit(dim, {0: 1.0}))
        results[enabled] = [h.content for h in hits]
        await client.close()
    assert results[False][0] == results[True][0] == "Alice adopted a puppy called Biscuit"
    assert "Biscuit chewed the sofa cushions" not in results[False]
    assert results[True][1] == "Biscuit chewed the sofa cushions"
