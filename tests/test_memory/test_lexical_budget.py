"""The lexical search's cost bound (memory.retrieval.lexical_max_postings, backends/lexical.py)
on both FTS5 backends, real SQLite FTS5 (and, for faiss, a real store on disk): on a store
where a query's terms together are held by more rows than the budget, the rarest terms are
matched and the common ones left out; a query whose every term is beyond the budget gets no
lexical candidates; within the budget nothing changes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.backends import (
    MemoryBackend,
    MemoryFilter,
    MemoryRecord,
    create_backend,
)
from DeepResearch.src.memory.errors import MemoryConfigError

pytestmark = pytest.mark.integration
N = 3000
BUDGET = 1000


def _words(i: int) -> list[str]:
    """zebra in 5 rows, river in 600, stone in 900, cloud in 1,400 (under half: the
    common-term rule keeps it), and one word of the row's own."""
    words = [f"item{i}"]
    if i % 600 == 0:
        words.append("zebra")
    if i % 5 == 1:
        words.append("river")
    if i % 10 in (2, 3, 4):
        words.append("stone")
    if i % 15 < 7:
        words.append("cloud")
    return words


def _records() -> list[MemoryRecord]:
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(N, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return [MemoryRecord(id=f"r{i}", session_id="s", memory_type="note",
                         content=" ".join(_words(i)), created_at=1000.0 + i, vector=vecs[i])
            for i in range(N)]


RECORDS = _records()


def _holding(*terms: str) -> set[str]:
    return {r.id for r in RECORDS if set(terms) & set(r.content.split())}


async def _backend(kind: str, path: Path, budget: int | None) -> MemoryBackend:
    retrieval = {} if budget is None else {"lexical_max_postings": budget}
    backend = create_backend(MemoryConfig(backend=kind, faiss={"path": str(path)},
                                          retrieval=retrieval), 8)
    await backend.open()
    await backend.upsert(RECORDS)
    return backend


@pytest.fixture(params=["faiss", "in_memory"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


async def test_past_the_budget_the_rarest_terms_are_matched(kind: str, tmp_path: Path) -> None:
    bounded = await _backend(kind, tmp_path / "bounded", BUDGET)
    hits = await bounded.text_search("zebra river stone", 5000, MemoryFilter())
    # zebra (5 rows) and river (600) fit in 1,000 postings; stone (900 more) does not
    assert {c.record.id for c in hits} == _holding("zebra", "river")
    assert {c.record.id for c in hits[:5]} == _holding("zebra")  # the rare term still ranks first
    await bounded.close()

    unbounded = await _backend(kind, tmp_path / "unbounded", None)  # the default: 10,000
    hits = await unbounded.text_search("zebra river stone", 5000, MemoryFilter())
    assert {c.record.id for c in hits} == _holding("zebra", "river", "stone")
    assert {c.record.id for c in hits[:5]} == _holding("zebra")
    await unbounded.close()


async def test_a_query_of_only_terms_beyond_the_budget_has_no_lexical_candidates(
    kind: str, tmp_path: Path,
) -> None:
    backend = await _backend(kind, tmp_path, BUDGET)
    assert await backend.text_search("cloud", 10, MemoryFilter()) == []
    assert len(await backend.text_search("river", 10, MemoryFilter())) == 10  # 600: within
    scoped = MemoryFilter(session_ids=("s",))
    assert await backend.text_search("cloud", 10, scoped) == []
    hits = await backend.text_search("cloud stone", 5000, scoped)  # stone (900) fits alone
    assert {c.record.id for c in hits} == _holding("stone")
    await backend.close()


async def test_within_the_budget_the_search_is_unchanged(kind: str, tmp_path: Path) -> None:
    """Same hits and scores, in the same order, as with no practical bound."""
    default = await _backend(kind, tmp_path / "default", None)
    huge = await _backend(kind, tmp_path / "huge", 1_000_000_000)
    for query in ("zebra river stone cloud", "cloud", "item7 stone", "nothing here"):
        got = [(c.record.id, round(c.score, 9)) for c in
               await default.text_search(query, 100, MemoryFilter())]
        want = [(c.record.id, round(c.score, 9)) for c in
                await huge.text_search(query, 100, MemoryFilter())]
        assert got == want, query
    await default.close()
    await huge.close()


async def test_a_retrieve_of_common_words_is_answered_by_the_dense_search(tmp_path: Path) -> None:
    config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path)},
                          retrieval={"lexical_max_postings": 5})
    client = MemorySystemClient(config, session_id="s")
    await client.store_many([{"content": f"the weather note {i}: cloud and rain"} for i in range(8)]
                            + [{"content": "a zebra crossed the river"}])
    found = await client.retrieve("cloud rain", top_k=3)
    assert len(found) == 3 and all("lexical" not in m.signals for m in found)
    (best, *_) = await client.retrieve("zebra", top_k=3)
    assert best.document.content == "a zebra crossed the river" and "lexical" in best.signals
    await client.close()


def test_a_bad_budget_is_refused_with_its_name_and_value() -> None:
    for bad in (0, -5, "many"):
        with pytest.raises(MemoryConfigError, match="lexical_max_postings"):
            MemoryConfig(retrieval={"lexical_max_postings": bad})


async def test_the_row_counts_follow_the_writes(kind: str, tmp_path: Path) -> None:
    """Term counts are remembered between searches, never past writes that could move them
    by more than a hundredth of the budget: 500 more zebra rows make river (600) the term
    that no longer fits."""
    backend = await _backend(kind, tmp_path, BUDGET)
    hits = await backend.text_search("zebra river", 5000, MemoryFilter())
    assert {c.record.id for c in hits} == _holding("zebra", "river")  # 605 rows: within
    more = [MemoryRecord(id=f"z{i}", session_id="s", memory_type="note", content=f"zebra z{i}",
                         created_at=9000.0 + i, vector=RECORDS[i].vector) for i in range(500)]
    await backend.upsert(more)
    hits = await backend.text_search("zebra river", 5000, MemoryFilter())
    assert {c.record.id for c in hits} == _holding("zebra") | {r.id for r in more}
    await backend.close()
