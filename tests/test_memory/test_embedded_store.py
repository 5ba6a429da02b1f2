"""The embedded backend (memory.backend=faiss): reads see other processes' commits, lexical
search over the full content with safe FTS5 queries, idempotent and all-or-nothing writes,
old cache files replaced."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord, create_backend
from DeepResearch.src.memory.backends.embedded import INDEX_FILE, EmbeddedBackend, store
from DeepResearch.src.memory.text import fts_query

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]

OTHER_PROCESS = textwrap.dedent(
    """
    import asyncio, sys
    from DeepResearch.src.memory import MemoryConfig, MemorySystemClient

    async def main():
        client = MemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": sys.argv[1]}),
                                    session_id="writer")
        if sys.argv[2] == "store":
            print(await client.store(content=sys.argv[3]))
        else:
            print(await client.forget(filters={"topic": sys.argv[3]}))
        await client.close()

    asyncio.run(main())
    """
)


def _other_process(path: Path, action: str, arg: str) -> str:
    done = subprocess.run([sys.executable, "-c", OTHER_PROCESS, str(path), action, arg],
                          capture_output=True, text=True, cwd=REPO, timeout=300, check=True)
    return done.stdout.strip().splitlines()[-1]


async def _backend(path: Path, dimension: int = 8, **faiss: object) -> EmbeddedBackend:
    backend = create_backend(MemoryConfig(backend="faiss", faiss={"path": str(path), **faiss}),
                             dimension)
    await backend.open()
    return backend  # type: ignore[return-value]


def _records(n: int, seed: int = 0, prefix: str = "r") -> list[MemoryRecord]:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return [MemoryRecord(id=f"{prefix}{i}", session_id="s", memory_type="note",
                         content=f"record {i} about topic{i % 7}", created_at=1000.0 + i,
                         vector=vecs[i]) for i in range(n)]


@pytest.mark.slow
async def test_an_open_client_sees_what_another_process_stores_and_forgets(
    tmp_path: Path, embedder
) -> None:
    path = tmp_path / "memory"
    client = MemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": str(path)},
                                             retrieval={"min_similarity": -1.0}),
                                session_id="reader", embedder=embedder)
    await client.store(content="Bowtie2 aligns short DNA reads", metadata={"topic": "dna"})
    await client.retrieve(query="warm the index up", all_sessions=True)  # index loaded and current
    text = "Kallisto pseudoaligns RNA-seq reads with a de Bruijn graph"
    mid = _other_process(path, "store", text)
    dense = await client.backend.vector_search(embedder.embed([text])[0], 1, MemoryFilter())
    assert [c.record.id for c in dense] == [mid]
    lexical = await client.backend.text_search("pseudoaligns kallisto", 5, MemoryFilter())
    assert [c.record.id for c in lexical] == [mid]
    assert mid in [r.id for r in await client.retrieve(query=text, top_k=3, all_sessions=True)]
    assert _other_process(path, "forget", "dna") == "1"
    hits = await client.backend.vector_search(embedder.embed(["Bowtie2 DNA"])[0], 5, MemoryFilter())
    assert [c.record.content for c in hits] == [text]  # the other process's delete is seen
    await client.close()


async def test_compressed_memories_are_searchable_by_their_whole_text(
    tmp_path: Path, embedder
) -> None:
    client = MemorySystemClient(
        MemoryConfig(backend="faiss", faiss={"path": str(tmp_path)},
                     compression={"min_size_bytes": 100, "searchable_prefix_chars": 50}),
        embedder=embedder)
    content = "Long tool output. " * 400 + "The rare word zanzibarite appears only at the end."
    mid = await client.store(content=content)
    stored = (await client.backend.get([mid]))[0]
    assert stored.content_blob is not None and "zanzibarite" not in stored.content
    hits = await client.backend.text_search("zanzibarite", 3, MemoryFilter())
    assert [c.record.id for c in hits] == [mid]
    await client.close()


@pytest.mark.parametrize("query", [
    '"', 'a AND (b', "NEAR(record topic1)", "*", "content:record", "record -topic1", "^record",
    "topic1 OR", "NOT topic1", "'; DROP TABLE records; --",
])
async def test_user_text_is_never_read_as_fts5_syntax(tmp_path: Path, query: str) -> None:
    backend = await _backend(tmp_path)
    await backend.upsert(_records(20))
    hits = await backend.text_search(query, 5, MemoryFilter())
    words = {w for w in ("record", "topic1") if w in query.lower()}
    assert bool(hits) == bool(words)  # found by its words, whatever the punctuation around them
    assert await backend.count(MemoryFilter()) == 20
    await backend.close()


def test_fts_queries_quote_each_token_and_skip_empty_ones() -> None:
    assert fts_query("The aligners' NEAR(x)") == '"align" OR "near" OR "x"'
    assert fts_query("the of and ...") is None


@pytest.mark.parametrize("path", ["joined", "over-fetched"])
async def test_text_search_ranks_by_bm25_and_honours_filters(
    tmp_path: Path, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if path == "over-fetched":  # every filter counts as broad
        monkeypatch.setattr(store, "SELECTIVE_ROWS", 0)
        monkeypatch.setattr(store, "SELECTIVE_SHARE", 0.0)
    backend = await _backend(tmp_path)
    records = _records(30)
    records[3].content = "salmon salmon salmon quantification"
    records[4].content = "salmon once among many other words in a much longer text here"
    records[4].session_id = "other"
    await backend.upsert(records)
    hits = await backend.text_search("Salmon", 5, MemoryFilter())
    assert [c.record.id for c in hits] == ["r3", "r4"] and hits[0].score > hits[1].score > 0
    only = await backend.text_search("salmon", 5, MemoryFilter(session_ids=("other",)))
    assert [c.record.id for c in only] == ["r4"]
    assert only[0].score == pytest.approx(hits[1].score)  # scored among the whole store
    topics = await backend.text_search("record topic3", 3, MemoryFilter(session_ids=("s",)))
    assert len(topics) == 3 and all(c.record.session_id == "s" for c in topics)
    assert {c.record.id for c in topics} <= {f"r{i}" for i in range(3, 30, 7)}
    await backend.close()


async def test_upsert_is_idempotent_and_a_replaced_vector_is_searched(tmp_path: Path) -> None:
    backend = await _backend(tmp_path)
    first, second = _records(2)
    await backend.upsert([first])
    await backend.upsert([first])
    second.id = first.id
    await backend.upsert([second])
    assert await backend.count(MemoryFilter()) == 1
    hits = await backend.vector_search(second.vector, 2, MemoryFilter())
    assert [(c.record.id, round(c.score, 4)) for c in hits] == [(first.id, 1.0)]
    assert await backend.verify() == []
    await backend.close()
    reopened = await _backend(tmp_path)
    assert len(await reopened.vector_search(second.vector, 5, MemoryFilter())) == 1  # one vector
    await reopened.close()


async def test_a_batch_that_fails_midway_writes_nothing(tmp_path: Path) -> None:
    backend = await _backend(tmp_path)
    await backend.upsert(_records(3))
    batch = _records(10, seed=1, prefix="new")
    batch[7].metadata = {"not json": {1, 2}}  # json.dumps fails on the 8th row of the batch
    with pytest.raises(TypeError, match="set"):
        await backend.upsert(batch)
    assert await backend.count(MemoryFilter()) == 3
    assert await backend.vector_search(batch[0].vector, 1, MemoryFilter(ids=("new0",))) == []
    await backend.upsert(batch[:7])  # the connection is usable after the rollback
    assert await backend.count(MemoryFilter()) == 10
    await backend.close()


async def test_old_cache_files_are_removed_and_the_index_rebuilt(tmp_path: Path, caplog) -> None:
    backend = await _backend(tmp_path)
    records = _records(40)
    await backend.upsert(records)
    await backend.close()
    (tmp_path / "index.flat").write_bytes(b'{"watermark": 40}\nold layout')
    (tmp_path / "lexical.npz").write_bytes(b"old layout")
    (tmp_path / INDEX_FILE).write_bytes(b"an index.faiss of an older layout")
    with caplog.at_level("WARNING"):
        backend = await _backend(tmp_path)
    assert not (tmp_path / "index.flat").exists() and not (tmp_path / "lexical.npz").exists()
    assert len([r for r in caplog.records if INDEX_FILE in r.getMessage()]) == 1
    hits = await backend.vector_search(records[11].vector, 1, MemoryFilter())
    assert [c.record.id for c in hits] == ["r11"]
    await backend.close()


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
async def test_the_index_is_saved_at_close_and_read_back(tmp_path: Path, kind: str, caplog) -> None:
    backend = await _backend(tmp_path, index_kind=kind)
    records = _records(300)
    await backend.upsert(records)
    await backend.delete(MemoryFilter(ids=("r5", "r6")))
    await backend.close()
    assert (tmp_path / INDEX_FILE).stat().st_size > 300 * 8 * 4
    with caplog.at_level("WARNING"):
        backend = await _backend(tmp_path, index_kind=kind)
    assert not caplog.records  # read, not rebuilt
    assert await backend.verify() == []  # the index read back agrees with the 298 records
    for r in records[:20]:
        hits = await backend.vector_search(r.vector, 1, MemoryFilter())
        if r.id in ("r5", "r6"):
            assert hits[0].record.id != r.id
        else:
            assert [c.record.id for c in hits] == [r.id]
    await backend.close()


# The records and relations tables as a store of schema version 3 has them: an id unique
# across namespaces, relations without a namespace.
V3_TABLES = """
CREATE TABLE records_v3 (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
    namespace TEXT NOT NULL DEFAULT 'default', session_id TEXT NOT NULL,
    memory_type TEXT NOT NULL, agent_type TEXT, content TEXT NOT NULL, created_at REAL NOT NULL,
    importance REAL NOT NULL, temporal_weight REAL NOT NULL, expires_at REAL,
    content_codec TEXT, content_blob BLOB, metadata TEXT NOT NULL, vector BLOB NOT NULL,
    event_at REAL);
INSERT INTO records_v3 SELECT * FROM records;
UPDATE sqlite_sequence SET seq = (SELECT seq FROM sqlite_sequence WHERE name = 'records')
    WHERE name = 'records_v3';
CREATE TABLE relations_v3 (src TEXT NOT NULL, type TEXT NOT NULL, dst TEXT NOT NULL,
    pos INTEGER NOT NULL, PRIMARY KEY (src, type, dst)) WITHOUT ROWID;
INSERT INTO relations_v3 SELECT src, type, dst, pos FROM relations;
DROP TABLE records; ALTER TABLE records_v3 RENAME TO records;
DROP TABLE relations; ALTER TABLE relations_v3 RENAME TO relations;
CREATE INDEX relations_dst ON relations (dst, type);
PRAGMA user_version = 3;
"""


async def test_a_store_with_ids_unique_across_namespaces_is_migrated(tmp_path: Path) -> None:
    """A store written when ids were unique across namespaces opens with ids scoped by
    namespace: its rows, seqs (the index's ids), relations and search kept; another
    namespace can then store the same ids."""
    path = tmp_path / "memory"
    backend = await _backend(path)
    alice = _records(3, prefix="m")
    for i, r in enumerate(alice):
        r.namespace = "alice"
        r.relations = [("follows", f"m{i - 1}")] if i else []
    await backend.upsert(alice)
    await backend.delete(MemoryFilter(ids=("m2",)))  # its seq is never given again
    await backend.close()
    with sqlite3.connect(path / "memory.sqlite3") as conn:
        conn.executescript(V3_TABLES)
        assert "UNIQUE" in conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'records'").fetchone()[0]
    backend = await _backend(path)
    bob = _records(3, seed=5, prefix="m")
    for r in bob:
        r.namespace = "bob"
    await backend.upsert(bob)
    assert [r.content for r in await backend.get(["m1"], "alice")] == [alice[1].content]
    assert [r.content for r in await backend.get(["m1"], "bob")] == [bob[1].content]
    (kept,) = await backend.get(["m1"], "alice")
    assert kept.relations == [("follows", "m0")]
    walk = await backend.related_many(["m1"], None, 1, MemoryFilter(namespaces=("alice",)))
    assert [(r.record.namespace, r.record.id) for r in walk["m1"]] == [("alice", "m0")]
    for who in (alice[:2], bob):
        for r in who:
            (hit,) = await backend.vector_search(r.vector, 1, MemoryFilter(namespaces=(r.namespace,)))
            assert (hit.record.namespace, hit.record.id) == (r.namespace, r.id)
    seqs = [row[0] for row in backend.require().db.conn.execute(
        "SELECT seq FROM records WHERE namespace = 'bob'")]
    assert min(seqs) > 3  # after alice's three, the deleted one's included
    assert await backend.verify() == []
    await backend.close()


async def test_terms_in_most_rows_are_left_out_of_a_large_store_query(tmp_path: Path) -> None:
    """Skipping a term found in most rows (BM25 weight ~0) keeps the ranking; a query of only
    such terms still finds its matches."""
    backend = await _backend(tmp_path)
    records = _records(1200)  # "record" in every row, topic3 in 1/7
    await backend.upsert(records)
    hits = await backend.text_search("record topic3", 5, MemoryFilter())
    assert len(hits) == 5 and all(c.record.content.endswith("topic3") for c in hits)
    every = await backend.text_search("record topic3", 2000, MemoryFilter())
    assert len(every) == sum(r.content.endswith("topic3") for r in records)  # "record" left out
    assert len(await backend.text_search("record", 5, MemoryFilter())) == 5
    await backend.close()


async def test_a_memory_type_probe_reads_an_index_only_even_in_an_older_store(
    tmp_path: Path,
) -> None:
    """The selectivity probe of a filtered search (namespace, memory type, live) is answered
    from records_type_scope alone, not a row read per match; a version-2 store gains it."""
    import sqlite3

    from DeepResearch.src.memory.backends.embedded.database import DB_FILE, SCHEMA_VERSION
    from DeepResearch.src.memory.backends.embedded.filters import filter_sql

    backend = await _backend(tmp_path)
    await backend.upsert(_records(3))
    await backend.close()
    conn = sqlite3.connect(tmp_path / DB_FILE)
    conn.execute("DROP INDEX records_type_scope")
    conn.execute("CREATE INDEX records_type_live ON records (memory_type, expires_at)")
    conn.execute("PRAGMA user_version=2")
    conn.commit()
    conn.close()

    backend = await _backend(tmp_path)
    flt = MemoryFilter(namespaces=("default",), memory_types=("note",), live_at=1.0)
    assert len(backend.require().matching_seqs(flt, 10)) == 3
    await backend.close()
    conn = sqlite3.connect(tmp_path / DB_FILE)
    where, params = filter_sql(flt)
    plan = " ".join(row[3] for row in conn.execute(
        f"EXPLAIN QUERY PLAN SELECT seq FROM records WHERE {where} LIMIT 5", params))
    indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()
    assert "COVERING INDEX records_type_scope" in plan
    assert "records_type_live" not in indexes
