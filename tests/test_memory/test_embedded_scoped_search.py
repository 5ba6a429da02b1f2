"""Searches scoped to a few rows (a session) on the embedded backend: the dense search reads
those rows' vectors from the FAISS index's memory, not from SQLite, and still sees rows
another connection committed since; the lexical search gives exactly the whole store's BM25
ranking restricted to the scope."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from DeepResearch.src.memory import MemoryConfig
from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord, create_backend
from DeepResearch.src.memory.backends.embedded import EmbeddedBackend
from DeepResearch.src.memory.backends.embedded.database import DB_FILE, Database
from DeepResearch.src.memory.backends.embedded.index_cache import IndexCache, vectors_of_rows
from DeepResearch.src.memory.backends.embedded.records import Records
from DeepResearch.src.memory.backends.embedded.vectors import INDEX_FILE, IndexSettings

pytestmark = pytest.mark.integration
WORDS = [f"w{i}" for i in range(40)]


async def _backend(path: Path, kind: str = "flat") -> EmbeddedBackend:
    backend = create_backend(
        MemoryConfig(backend="faiss", faiss={"path": str(path), "index_kind": kind}), 8)
    await backend.open()
    return backend  # type: ignore[return-value]


def _records(n: int, sessions: int, seed: int = 0) -> list[MemoryRecord]:
    """Sessions of unequal sizes (session i holds about twice as many rows as session i-1
    for the first few), random words so that BM25 scores spread (and some tie)."""
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    weights = np.minimum(2.0 ** np.arange(sessions), 2.0 ** 5)
    owner = rng.choice(sessions, size=n, p=weights / weights.sum())
    return [
        MemoryRecord(
            id=f"r{i}", session_id=f"s{owner[i]}", memory_type=("note", "fact")[i % 2],
            content=" ".join(rng.choice(WORDS, size=int(rng.integers(3, 15)))),
            created_at=1000.0 + i, vector=vecs[i],
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
async def test_a_scoped_vector_search_reads_no_vector_from_the_database(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = await _backend(tmp_path, kind)
    records = _records(2000, sessions=12)
    await backend.upsert(records)

    def refused(*_: object) -> None:
        raise AssertionError("a scoped search read vectors from SQLite")

    monkeypatch.setattr(Records, "vectors_of", refused)
    query = records[11].vector
    for session in ("s0", "s5", "s11"):
        pool = [r for r in records if r.session_id == session]
        got = await backend.vector_search(query, 10, MemoryFilter(session_ids=(session,)))
        truth = sorted(pool, key=lambda r: -float(r.vector @ query))[:10]
        assert [c.record.id for c in got] == [r.id for r in truth]
        assert [c.score for c in got] == pytest.approx([float(r.vector @ query) for r in truth])
    await backend.close()


async def test_rows_committed_after_the_index_caught_up_are_read_from_the_database(
    tmp_path: Path,
) -> None:
    """Another process commits between this one's catch-up and its read of the scope's rows:
    the new row is not in the index yet, and its vector is read from SQLite all the same."""
    backend = await _backend(tmp_path)
    records = _records(300, sessions=4)
    await backend.upsert(records)
    await backend.close()  # the index file now reflects the 300 rows
    db = Database(tmp_path / DB_FILE, synchronous="full", busy_timeout=5.0)
    rows = Records(db, 8)
    cache = IndexCache(IndexSettings("flat", 8), tmp_path / INDEX_FILE, db.store_id())
    cache.load(rows)  # this process's index, caught up
    query = np.ones(8, np.float32) / np.sqrt(8)
    other = await _backend(tmp_path)  # another writer commits after that catch-up
    await other.upsert([MemoryRecord(id="late", session_id="s3", memory_type="note",
                                     content="late row", created_at=5000.0, vector=query)])
    await other.close()
    scope = rows.matching_seqs(MemoryFilter(session_ids=("s3",)), 10_000)
    seqs, vectors = vectors_of_rows(cache.index, rows, scope)
    assert len(seqs) == len(scope) == sum(r.session_id == "s3" for r in records) + 1
    late = int(seqs[np.argmax(vectors @ query)])
    assert late > cache.index.seq  # not in the index: read from the database
    assert rows.by_seqs([late], MemoryFilter())[late].id == "late"
    by_id = {r.id: r.vector for r in records}
    found = rows.by_seqs(seqs.tolist(), MemoryFilter())
    for seq, vector in zip(seqs.tolist(), vectors, strict=True):  # the others from the index
        if seq != late:
            np.testing.assert_allclose(vector, by_id[found[seq].id], atol=1e-6)
    db.close()


@pytest.mark.parametrize("query", ["w1", "w2 w3", "w4 w5 w6 w7", "w8 w1 w30 w39 w0"])
async def test_a_scoped_text_search_is_the_stores_ranking_restricted_to_the_scope(
    tmp_path: Path, query: str
) -> None:
    backend = await _backend(tmp_path)
    records = _records(1500, sessions=10, seed=3)
    await backend.upsert(records)
    everything = await backend.text_search(query, 10_000, MemoryFilter())
    for flt in (MemoryFilter(session_ids=("s0",)), MemoryFilter(session_ids=("s6",)),
                MemoryFilter(session_ids=("s2", "s9"), memory_types=("fact",)),
                MemoryFilter(session_ids=("s9",), created_after=1700.0)):
        want = {c.record.id: c.score for c in everything if _passes(c.record, flt)}
        found = await backend.text_search(query, 10_000, flt)
        got = {c.record.id: c.score for c in found}
        assert len(want) > 1 and got == pytest.approx(want)  # the same rows, the same scores
        assert [c.score for c in found] == sorted(got.values(), reverse=True)
        top = await backend.text_search(query, 5, flt)
        assert [c.score for c in top] == pytest.approx(sorted(want.values(), reverse=True)[:5])
    await backend.close()


def _passes(record: MemoryRecord, flt: MemoryFilter) -> bool:
    return (record.session_id in (flt.session_ids or (record.session_id,))
            and record.memory_type in (flt.memory_types or (record.memory_type,))
            and (flt.created_after is None or record.created_at >= flt.created_after))


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
async def test_a_broad_filter_is_probed_once_and_again_once_it_narrowed(
    tmp_path: Path, kind: str
) -> None:
    """The selectivity probe reads up to 5% of the store's index entries: a filter found
    broad (here 2,900 of 3,000 rows, over the 2,048 probed) is not probed by the next
    searches, whatever its live_at; once most of its rows are gone a search finds too few
    hits passing it, still answers exactly, and the filter is probed again."""
    backend = await _backend(tmp_path, kind)
    records = _records(3000, sessions=2, seed=4)
    records = [replace(r, session_id="big" if i >= 100 else "small") for i, r in enumerate(records)]
    await backend.upsert(records)
    statements: list[str] = []
    backend.require().db.conn.set_trace_callback(statements.append)

    def probes() -> int:
        found = sum("group_concat(seq) FROM (SELECT seq FROM records" in s for s in statements)
        statements.clear()
        return found

    query = records[7].vector
    for live_at in (1.0, 2.0, 3.0):
        broad = MemoryFilter(namespaces=("default",), session_ids=("big",), live_at=live_at)
        await backend.vector_search(query, 10, broad)
        await backend.text_search("w1 w2", 10, broad)
        assert probes() == (1 if live_at == 1.0 else 0)
    small = MemoryFilter(session_ids=("small",))
    await backend.vector_search(query, 10, small)
    await backend.vector_search(query, 10, small)
    assert probes() == 2  # selective filters are probed each time (their rows are used)

    await backend.delete(MemoryFilter(ids=tuple(r.id for r in records[100:2990])))
    broad = MemoryFilter(namespaces=("default",), session_ids=("big",), live_at=4.0)
    left = records[2990:]
    truth = sorted(left, key=lambda r: -float(r.vector @ query))[:5]
    got = await backend.vector_search(query, 5, broad)
    assert probes() == 0
    assert [c.record.id for c in got] == [r.id for r in truth]  # 10 rows: exact all the same
    await backend.vector_search(query, 5, broad)
    assert probes() == 1  # probed again: now selective
    await backend.close()
