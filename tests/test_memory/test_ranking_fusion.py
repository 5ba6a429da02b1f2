"""The candidate stage's fusion (retrieval.fusion: minmax | rrf) and query rewriting."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from DeepResearch.src.memory.backends.base import Candidate, MemoryFilter, MemoryRecord
from DeepResearch.src.memory.config import RetrievalConfig
from DeepResearch.src.memory.ranking.candidates import gather_candidates, rewrite_query


def _record(rid: str, vector: list[float]) -> MemoryRecord:
    v = np.asarray(vector, dtype=np.float32)
    return MemoryRecord(rid, "s", "note", rid, 0.0, vector=v / np.linalg.norm(v))


class FakeBackend:
    """Fixed dense and lexical lists; remembers the lexical query it was asked."""

    lexical_in_process = True

    def __init__(self, dense: list[Candidate], lexical: list[Candidate]) -> None:
        self.dense, self.lexical, self.lexical_query = dense, lexical, None

    async def vector_search(self, vector: np.ndarray, k: int, flt: MemoryFilter) -> list[Candidate]:
        return self.dense[:k]

    async def text_search(self, query: str, k: int, flt: MemoryFilter) -> list[Candidate]:
        self.lexical_query = query
        return self.lexical[:k]


QUERY = np.array([1.0, 0.0], dtype=np.float32)
A, B, C = _record("a", [1, 0]), _record("b", [0.8, 0.6]), _record("c", [0, 1])


def _backend() -> FakeBackend:
    # dense: a (1.0) > b (0.8) ; lexical: c is a strong match, b a weak one
    return FakeBackend(
        [Candidate(A, 1.0), Candidate(B, 0.8)], [Candidate(C, 9.0), Candidate(B, 1.0)]
    )


async def _scores(fusion: str, **kw: object) -> dict[str, float]:
    pool = await gather_candidates(
        _backend(), "q", QUERY, MemoryFilter(), 10, RetrievalConfig(fusion=fusion, **kw)
    )
    return {m.record.id: m.score for m in pool.items}


async def test_minmax_sums_normalised_dense_and_lexical_scores() -> None:
    scores = await _scores("minmax")
    # dense cosines a=1, b=0.8, c=0 -> 1, 0.8, 0; lexical / best: c=1, b=1/9
    assert scores == pytest.approx({"a": 1.0, "b": 0.8 + 1 / 9, "c": 1.0})


async def test_minmax_lexical_weight_scales_the_lexical_part() -> None:
    scores = await _scores("minmax", lexical_weight=2.0)
    assert scores["c"] == pytest.approx(2.0) and scores["a"] == pytest.approx(1.0)


async def test_rrf_uses_ranks_only() -> None:
    scores = await _scores("rrf", rrf_k=60)
    scale = 61 / 2
    assert scores["a"] == pytest.approx(scale / 61)
    assert scores["b"] == pytest.approx(scale / 62 + scale / 62)
    assert scores["c"] == pytest.approx(scale / 61)
    assert max(scores, key=scores.get) == "b"  # rank fusion rewards being in both lists


async def test_score_unseen_is_on_the_candidates_scale() -> None:
    pool = await gather_candidates(
        _backend(), "q", QUERY, MemoryFilter(), 10, RetrievalConfig(fusion="minmax")
    )
    assert pool.score_unseen(0.5) == pytest.approx(0.5)  # cosines spanned 0..1
    assert pool.score_unseen(2.0) == 1.0 and pool.score_unseen(-1.0) == 0.0
    rrf = await gather_candidates(
        _backend(), "q", QUERY, MemoryFilter(), 10, RetrievalConfig(fusion="rrf")
    )
    assert rrf.score_unseen(0.9) == 0.0


async def test_dense_only_scores_are_cosines() -> None:
    backend = _backend()
    pool = await gather_candidates(
        backend, "q", QUERY, MemoryFilter(), 10, RetrievalConfig(hybrid=False)
    )
    assert {m.record.id: m.score for m in pool.items} == {"a": 1.0, "b": 0.8}
    assert backend.lexical_query is None and pool.score_unseen(0.3) == 0.3


async def test_an_awaitable_query_vector_is_awaited() -> None:
    async def later() -> np.ndarray:
        return QUERY

    pool = await gather_candidates(_backend(), "q", later(), MemoryFilter(), 10, RetrievalConfig())
    assert {m.record.id for m in pool.items} == {"a", "b", "c"}


@pytest.mark.parametrize("rewrite, sent", [(False, "What did Ann say?"), (True, "Ann say")])
async def test_query_rewrite_changes_only_the_lexical_query(rewrite: bool, sent: str) -> None:
    backend = _backend()
    await gather_candidates(
        backend, "What did Ann say?", QUERY, MemoryFilter(), 10,
        RetrievalConfig(query_rewrite=rewrite),
    )
    assert backend.lexical_query == sent


def test_rewrite_query_drops_question_words_keeps_content_words() -> None:
    assert rewrite_query("When did Maria go to the beach last year?") == "Maria go beach last year"
    assert rewrite_query("What kind of pottery does she make?") == "pottery she make"
    assert rewrite_query("what is it") == "it"
    assert rewrite_query("Who?") == "Who?"  # nothing would be left: unchanged


@pytest.mark.parametrize("in_process", [True, False])
async def test_only_a_server_side_lexical_search_overlaps_the_embedding(in_process: bool) -> None:
    backend = _backend()
    backend.lexical_in_process = in_process
    seen: dict[str, bool] = {}

    async def embedding() -> np.ndarray:
        await asyncio.sleep(0.01)  # the model at work
        seen["lexical_started"] = backend.lexical_query is not None
        return QUERY

    pool = await gather_candidates(backend, "c words", embedding(), MemoryFilter(), 2, RetrievalConfig())
    assert seen["lexical_started"] is (not in_process)
    assert {m.record.id for m in pool.items} == {"a", "b", "c"}
