"""faiss backend specifics: restarts, SIGKILL after store, corrupt/mismatched index, rebuild,
and exact results for selective filters."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from DeepResearch.src.memory import IndexMismatchError, MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.backends import (
    MemoryFilter,
    MemoryRecord,
    create_backend,
    faiss_search,
)
from DeepResearch.src.memory.backends.base import EMBEDDING_KEY, MemoryBackend
from DeepResearch.src.memory.backends.faiss_caches import LEXICAL_FILE
from DeepResearch.src.memory.backends.faiss_files import INDEX_TRAILER
from DeepResearch.src.memory.backends.faiss_store import FLAT_FILE, INDEX_FILE, FaissBackend
from DeepResearch.src.memory.backends.sqlite_filters import filter_sql
from DeepResearch.src.memory.backends.sqlite_records import SQLiteRecords

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]

WRITER = textwrap.dedent(
    """
    import asyncio, sys, time
    import numpy as np
    from DeepResearch.src.memory import MemoryConfig, MemorySystemClient

    async def main():
        cfg = MemoryConfig(backend="faiss", faiss={"path": sys.argv[1]})
        client = MemorySystemClient(cfg, session_id="crash")
        vec = np.frombuffer(bytes.fromhex(sys.argv[2]), dtype=np.float32)
        mid = await client.store(content=sys.argv[3], metadata={"n": 1}, vector=vec)
        print(mid, flush=True)
        if sys.argv[4] == "hang":
            time.sleep(600)  # killed here, without close()
        await client.close()

    asyncio.run(main())
    """
)


def _run_writer(path: Path, vec: np.ndarray, content: str, mode: str) -> str:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), vec.astype(np.float32).tobytes().hex(), content, mode],
        stdout=subprocess.PIPE, text=True, cwd=REPO,
    )
    assert proc.stdout is not None
    mid = proc.stdout.readline().strip()
    if mode == "hang":
        os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=120) in (0, -signal.SIGKILL)
    assert mid, "the writer printed no id"
    return mid


@pytest.mark.slow
async def test_acknowledged_store_survives_sigkill_and_restart(tmp_path: Path, embedder) -> None:
    path = tmp_path / "memory"
    text_a = "clean run stored HISAT2 alignment statistics"
    text_b = "crash run stored Salmon quantification results"
    vec_a, vec_b = embedder.embed([text_a, text_b])
    id_a = _run_writer(path, vec_a, text_a, "close")  # normal restart
    id_b = _run_writer(path, vec_b, text_b, "hang")  # SIGKILL right after store returned
    client = MemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": str(path)}),
                                session_id="crash", embedder=embedder)
    try:
        hits = await client.retrieve(query="Salmon quantification", top_k=2)
        assert hits[0].id == id_b
        assert {h.id for h in hits} == {id_a, id_b}
        assert (await client.get(id_b)).metadata == {"n": 1}
    finally:
        await client.close()


async def _backend(path: Path, dimension: int = 8, **faiss: object) -> FaissBackend:
    cfg = MemoryConfig(backend="faiss", faiss={"path": str(path), **faiss})
    backend = create_backend(cfg, dimension)
    await backend.open()
    return backend  # type: ignore[return-value]


def _records(n: int, seed: int = 0, sessions: int = 1) -> list[MemoryRecord]:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return [MemoryRecord(id=f"r{i}", session_id=f"s{i % sessions}", memory_type="note",
                         content=f"record {i}", created_at=1000.0 + i, vector=vecs[i]) for i in range(n)]


def _damaged_flat(saved: bytes, damage: str) -> bytes:
    """index.flat: a header line, then the ids and the vectors."""
    header_end = saved.index(b"\n") + 1
    header, body = saved[:header_end], saved[header_end:]
    assert b'"watermark": 50' in header and len(body) > 50 * 8 * 4  # the vectors are in it
    return {
        "garbage body": header + b"garbage",
        "truncated file": saved[: len(saved) // 2],
        "body cut, header kept": header + body[: len(body) // 2],
        "no header": body,
    }[damage]


def _damaged_hnsw(saved: bytes, damage: str) -> bytes:
    """index.faiss: the index as FAISS writes it, then the header and a footer."""
    assert saved.endswith(INDEX_TRAILER)
    length = int.from_bytes(saved[-16:-8], "little")
    body, header = saved[: -16 - length], saved[-16 - length : -16]
    assert b'"watermark": 50' in header and len(body) > 50 * 8 * 4  # the vectors are in it
    trailer = saved[len(body):]
    return {
        "garbage body": b"garbage" + trailer,
        "truncated file": saved[: len(saved) // 2],
        "body cut, header kept": body[: len(body) // 2] + trailer,
        "no header": body,
    }[damage]


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
@pytest.mark.parametrize(
    "damage", ["garbage body", "truncated file", "body cut, header kept", "no header"]
)
async def test_corrupt_index_is_detected_and_rebuilt(tmp_path: Path, kind: str, damage: str) -> None:
    """Every kind of damage to the vector index file is an error naming the rebuild, never a
    crash; the rebuild restores it from the records."""
    backend = await _backend(tmp_path, index_kind=kind)
    await backend.upsert(_records(50))
    await backend.close()
    path = tmp_path / (FLAT_FILE if kind == "flat" else INDEX_FILE)
    damage_file = _damaged_flat if kind == "flat" else _damaged_hnsw
    path.write_bytes(damage_file(path.read_bytes(), damage))
    with pytest.raises(IndexMismatchError, match="rebuild"):
        await _backend(tmp_path, index_kind=kind)
    config = MemoryConfig(faiss={"path": str(tmp_path), "index_kind": kind}).faiss
    rebuilt = FaissBackend(config, dimension=8, metric="cosine", model="all-MiniLM-L6-v2")
    assert rebuilt.rebuild() == 50
    backend = await _backend(tmp_path, index_kind=kind)
    assert await backend.count(MemoryFilter()) == 50
    hits = await backend.vector_search(_records(50)[17].vector, 1, MemoryFilter())
    assert [c.record.id for c in hits] == ["r17"]
    await backend.close()


async def test_reembedding_embeds_the_key_a_record_was_embedded_from(tmp_path: Path, embedder) -> None:
    """`rebuild --reembed` (a new model, say) recomputes each vector from the text it stood
    for: a record embedded from a key (the workflow's loop question) gets the key's vector,
    not its content's; any other record gets its content's."""
    question = "Which aligner suits RNA-seq reads?"
    content = "Tool read_document succeeded with rna_seq_aligners.md: STAR and HISAT2 ..."
    plain = "HISAT2 aligns spliced RNA-seq reads against a reference genome"
    rng = np.random.default_rng(3)
    old = rng.normal(size=(2, 384)).astype(np.float32)  # vectors of a model gone
    old /= np.linalg.norm(old, axis=1, keepdims=True)
    backend = await _backend(tmp_path, dimension=384)
    await backend.upsert([
        MemoryRecord(id="keyed", session_id="s", memory_type="tool_execution", content=content,
                     created_at=1.0, metadata={EMBEDDING_KEY: question}, vector=old[0]),
        MemoryRecord(id="plain", session_id="s", memory_type="note", content=plain,
                     created_at=2.0, vector=old[1]),
    ])
    await backend.close()
    rebuilt = FaissBackend(MemoryConfig(faiss={"path": str(tmp_path)}).faiss, dimension=384,
                           metric="cosine", model="all-MiniLM-L6-v2")
    assert rebuilt.rebuild(reembed=embedder.embed) == 2
    backend = await _backend(tmp_path, dimension=384)
    stored = {r.id: r.vector for r in await backend.scan(MemoryFilter())}
    await backend.close()
    expected = embedder.embed([question, plain])
    np.testing.assert_allclose(stored["keyed"], expected[0], atol=1e-5)
    np.testing.assert_allclose(stored["plain"], expected[1], atol=1e-5)


async def test_other_model_dimension_or_metric_is_refused(tmp_path: Path) -> None:
    backend = await _backend(tmp_path)
    await backend.upsert(_records(5))
    await backend.close()
    for kwargs in ({"dimension": 16}, {"metric": "euclidean"}, {"model": "another-model"}):
        args = {"dimension": 8, "metric": "cosine", "model": "all-MiniLM-L6-v2", **kwargs}
        other = FaissBackend(MemoryConfig(faiss={"path": str(tmp_path)}).faiss, **args)
        with pytest.raises(IndexMismatchError, match=next(iter(kwargs))):
            await other.open()
    with pytest.raises(IndexMismatchError, match="hnsw"):
        await _backend(tmp_path, index_kind="hnsw")


@pytest.fixture(params=["listed", "over-fetched"])
def broad_filters(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Small stores list the rows of any filter matching up to LIST_ROWS_UP_TO; large ones
    over-fetch for a broad filter. Both paths, on the small stores of these tests."""
    if request.param == "over-fetched":
        monkeypatch.setattr(faiss_search, "LIST_ROWS_UP_TO", 0)
    return request.param


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
@pytest.mark.parametrize("metric", ["cosine", "euclidean", "dot_product"])
async def test_selective_filters_give_the_exact_top_k(
    tmp_path: Path, kind: str, metric: str, broad_filters: str
) -> None:
    cfg = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path), "index_kind": kind},
                       vector_store={"index_type": metric})
    backend = create_backend(cfg, 8)
    await backend.open()
    records = _records(3000, seed=1, sessions=100)  # each session: 30 of 3000 (1%)
    await backend.upsert(records)
    query = records[7].vector
    for flt, pool in [
        (MemoryFilter(session_ids=("s7",)), [r for r in records if r.session_id == "s7"]),
        (MemoryFilter(created_after=1000.0 + 600), [r for r in records if r.created_at >= 1600]),
    ]:
        got = await backend.vector_search(query, 10, flt)
        truth = sorted(pool, key=lambda r: -float(r.vector @ query))[:10]
        assert [c.record.id for c in got][:5] == [r.id for r in truth][:5]
        if kind == "flat" or len(pool) < 100:
            assert [c.record.id for c in got] == [r.id for r in truth]
        assert got[0].score == pytest.approx(float(truth[0].vector @ query), abs=1e-4)
    await backend.delete(MemoryFilter(session_ids=("s7",)))
    assert await backend.vector_search(query, 10, MemoryFilter(session_ids=("s7",))) == []
    await backend.close()
    reopened = create_backend(cfg, 8)
    await reopened.open()
    assert await reopened.count(MemoryFilter()) == 2970
    assert await reopened.vector_search(query, 10, MemoryFilter(session_ids=("s7",))) == []
    await reopened.close()


async def test_unavailable_store_warns_once_keeps_writes_and_spills(tmp_path: Path, caplog, embedder) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the memory folder should be")
    cfg = MemoryConfig(backend="faiss", faiss={"path": str(blocker / "memory")})
    client = MemorySystemClient(cfg, embedder=embedder)
    with caplog.at_level("WARNING"):
        await client.store(content="kept while the backend is down")
        assert await client.retrieve(query="kept") == []
    assert not client.available
    client_warnings = [r for r in caplog.records if r.name == "DeepResearch.src.memory.client"]
    assert len(client_warnings) == 1 and "unavailable" in client_warnings[0].message
    assert (await client.stats()).outbox == 1
    assert not (await client.health()).ok
    # the spill goes next to the configured store; point it somewhere writable
    client.config.faiss.path = str(tmp_path / "spill")
    await client.close()
    spilled = list((tmp_path / "spill").glob("unwritten-*.jsonl"))
    assert len(spilled) == 1 and "kept while the backend is down" in spilled[0].read_text()
    fail_cfg = MemoryConfig(backend="faiss", faiss={"path": str(blocker / "memory")}, on_unavailable="fail")
    fail = MemorySystemClient(fail_cfg, embedder=embedder)
    with pytest.raises(Exception, match="cannot"):
        await fail.open()


async def test_failed_writes_are_retried_from_the_outbox(tmp_path: Path, embedder) -> None:
    from DeepResearch.src.memory.backends.in_memory import InMemoryBackend
    from DeepResearch.src.memory.errors import MemoryBackendError

    class Flaky(InMemoryBackend):
        down = True

        async def upsert(self, records: list[MemoryRecord]) -> None:
            if self.down:
                raise MemoryBackendError("server went away")
            await super().upsert(records)

    backend = Flaky(384)
    client = MemorySystemClient(MemoryConfig(backend="in_memory"), backend=backend, embedder=embedder)
    with pytest.raises(MemoryBackendError, match=r"server went away.*kept in the outbox"):
        await client.store(content="written once the server is back", id="m1")
    mid = "m1"
    assert (await client.stats()).outbox == 1
    backend.down = False
    client.writes._next_retry = 0.0
    assert await client.flush() == 1
    assert (await client.get(mid)) is not None and (await client.stats()).outbox == 0
    await client.close()


def test_sync_face_works_inside_a_running_loop(tmp_path: Path, embedder) -> None:
    from DeepResearch.src.memory import SyncMemorySystemClient

    async def caller() -> list[str]:
        client = SyncMemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": str(tmp_path)}),
                                        embedder=embedder)
        mid = client.store("sync face stored this about DESeq2", {"k": "v"})
        hits = client.retrieve("DESeq2", top_k=1)
        client.close()
        return [mid, hits[0].id]

    mid, hit = asyncio.run(caller())
    assert mid == hit


def _worded(n: int, start: int = 0) -> list[MemoryRecord]:
    records = _records(start + n, seed=5)[start:]
    for r in records:
        r.content = f"run {r.id} used {'Salmon' if int(r.id[1:]) % 2 else 'STAR'} quantification"
    return records


async def test_lexical_index_is_saved_caught_up_after_a_crash_and_rebuilt_when_damaged(
    tmp_path: Path, caplog
) -> None:
    backend = await _backend(tmp_path)
    await backend.upsert(_worded(100))  # enough rows for close to write the caches
    await backend.close()
    assert (tmp_path / LEXICAL_FILE).exists()
    saved = (tmp_path / LEXICAL_FILE).read_bytes()

    backend = await _backend(tmp_path)
    await backend.upsert(_worded(10, start=100))  # r100..r109, after the saved watermark
    await backend.delete(MemoryFilter(ids=("r1", "r3")))  # at or below it
    backend._close_sync = lambda: backend._db.close()  # a crash: no cache is saved
    await backend.close()
    assert (tmp_path / LEXICAL_FILE).read_bytes() == saved

    expected = {f"r{i}" for i in range(1, 110, 2)} - {"r1", "r3"}
    backend = await _backend(tmp_path)
    hits = await backend.text_search("salmon", 200, MemoryFilter())
    assert {c.record.id for c in hits} == expected
    assert len(backend._lexical.index) == 108  # the deleted rows left its statistics too
    await backend.close()

    (tmp_path / LEXICAL_FILE).write_bytes(b'{"watermark": 30}\nnot an npz')
    backend = await _backend(tmp_path)
    assert "rebuilding" in caplog.text
    assert {c.record.id for c in await backend.text_search("salmon", 200, MemoryFilter())} == expected
    session = await backend.text_search("star", 50, MemoryFilter(ids=("r2", "r5", "r6")))
    assert [c.record.id for c in session] in (["r2", "r6"], ["r6", "r2"])
    await backend.close()


async def test_close_rewrites_the_caches_only_once_replaying_would_cost_more(tmp_path: Path) -> None:
    """A few new rows are replayed from SQLite on the next open instead of rewriting both
    cache files at every close; past the threshold the files are rewritten."""
    backend = await _backend(tmp_path)
    await backend.upsert(_worded(200))
    await backend.close()
    files = {name: (tmp_path / name).read_bytes() for name in (FLAT_FILE, LEXICAL_FILE)}

    backend = await _backend(tmp_path)
    await backend.upsert(_worded(5, start=200))
    await backend.delete(MemoryFilter(ids=("r7",)))
    await backend.close()
    assert {name: (tmp_path / name).read_bytes() for name in files} == files  # not rewritten

    backend = await _backend(tmp_path)  # catches up with the 5 new rows and the deleted one
    assert backend._vectors.index.ntotal == 204 and len(backend._lexical.index) == 204
    records = _worded(205)
    hits = await backend.vector_search(records[203].vector, 1, MemoryFilter())
    assert [c.record.id for c in hits] == ["r203"]
    assert "r7" not in {c.record.id for c in await backend.text_search("salmon", 300, MemoryFilter())}
    await backend.upsert(_worded(100, start=205))  # past max(64 + size / 16)
    await backend.close()
    assert all((tmp_path / name).read_bytes() != files[name] for name in files)
    backend = await _backend(tmp_path)
    assert backend._vectors.unsaved == 0 and backend._lexical.unsaved == 0  # nothing to replay
    assert backend._vectors.index.ntotal == 304
    await backend.close()


TORCH_FIRST = textwrap.dedent(
    """
    import asyncio, sys, tempfile
    import torch  # imported before FAISS, so the two share one OpenMP runtime
    import numpy as np
    from DeepResearch.src.memory import MemoryConfig
    from DeepResearch.src.memory.backends import MemoryFilter, create_backend

    async def main():
        with tempfile.TemporaryDirectory() as folder:
            config = MemoryConfig(backend="faiss", faiss={"path": folder, "index_kind": "hnsw"})
            backend = create_backend(config, 8)  # HNSW: a flat store does not load FAISS
            await backend.open()
            await backend.vector_search(np.full(8, 8 ** -0.5, dtype=np.float32), 3, MemoryFilter())
            seen = {await asyncio.to_thread(torch.get_num_threads) for _ in range(30)}
            await backend.close()
            print(sorted(seen), torch.get_num_threads())

    asyncio.run(main())
    """
)


@pytest.mark.slow
def test_faiss_work_leaves_torch_its_threads_on_the_shared_workers() -> None:
    """The backend limits FAISS to one OpenMP thread on its own pool only: limiting a shared
    asyncio worker cut torch to one thread there, and stores ran at half speed."""
    out = subprocess.run([sys.executable, "-c", TORCH_FIRST], capture_output=True, text=True,
                         cwd=REPO, timeout=300, check=True).stdout.split()
    workers, main_thread = out[:-1], out[-1]
    assert workers == [f"[{main_thread}]"]


async def test_rows_another_process_wrote_meanwhile_are_found_after_reopening(
    tmp_path: Path,
) -> None:
    """Two runs on one folder at once: each cache holds only its own writes, and the one saved
    last has a watermark past the other's rows. The next open must still index every row."""
    records = _worded(103)
    first, second = await _backend(tmp_path), await _backend(tmp_path)
    await first.upsert(records[:100])  # enough rows for close to write the cache files
    await second.upsert(records[100:101])  # r100, while `first` is open
    await first.upsert(records[101:103])  # r101, r102: past r100 in `first`'s caches
    await first.close()
    await second.close()

    backend = await _backend(tmp_path)
    hit = await backend.vector_search(records[100].vector, 1, MemoryFilter())
    assert [c.record.id for c in hit] == ["r100"]
    words = await backend.text_search("r100", 5, MemoryFilter())
    assert "r100" in [c.record.id for c in words]
    assert backend._vectors.index.ntotal == 103 and len(backend._lexical.index) == 103
    await backend.close()


def test_filter_counts_read_only_indexes_and_older_stores_are_migrated(tmp_path: Path) -> None:
    """Every read filter carries the TTL condition; a count by memory type or session, or by
    type and metadata, must not read the table's rows (vectors, contents). A store made with
    the older indexes gets the new ones on open."""
    path = tmp_path / "memory.sqlite3"
    SQLiteRecords(path).close()
    old = sqlite3.connect(path)
    old.executescript(
        "DROP INDEX records_type_live; DROP INDEX records_session_live;"
        "DROP INDEX records_type_meta;"
        "CREATE INDEX records_type ON records (memory_type);"
        "CREATE INDEX records_session ON records (session_id, created_at);"
    )
    old.close()
    db = SQLiteRecords(path)
    indexes = {row[0] for row in db._conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"records_type_live", "records_session_live", "records_type_meta"} <= indexes
    assert not {"records_type", "records_session"} & indexes
    failures = MemoryFilter(memory_types=("tool_execution",), live_at=1.0,
                            metadata={"tool": ("read_document",), "success": (False,)})
    for flt in (MemoryFilter(memory_types=("plan", "answer"), live_at=1.0),
                MemoryFilter(session_ids=("s",), live_at=1.0), failures):
        where, params = filter_sql(flt)
        plan = db._conn.execute(f"EXPLAIN QUERY PLAN SELECT count(*) FROM records WHERE {where}",
                                params).fetchall()
        assert "COVERING INDEX" in plan[0][3], plan
    db.close()


async def test_dense_and_lexical_in_one_go_match_the_two_searches(tmp_path: Path) -> None:
    """The faiss backend runs a retrieve's dense and lexical searches in one worker hand-off;
    the answers are those of the two separate calls, and of the generic side-by-side one."""
    backend = await _backend(tmp_path)
    records = _records(300, seed=8, sessions=10)
    for i, record in enumerate(records):
        record.content = f"record {i} about {'aligners' if i % 3 else 'variant callers'}"
    await backend.upsert(records)
    for flt in (MemoryFilter(), MemoryFilter(session_ids=("s4",))):
        together = await backend.dense_and_lexical(records[9].vector, "variant callers", 10, flt)
        apart = (await backend.distinct_vector_search(records[9].vector, 10, flt),
                 await backend.text_search("variant callers", 10, flt))
        generic = await MemoryBackend.dense_and_lexical(
            backend, records[9].vector, "variant callers", 10, flt
        )
        for got in (together, generic):
            assert [[c.record.id for c in part] for part in got] == [
                [c.record.id for c in part] for part in apart
            ]
        assert together[0] and together[1]
    await backend.close()


async def test_a_search_never_runs_while_a_write_changes_the_caches(tmp_path: Path) -> None:
    """The FAISS pool has two workers, so a write-behind flush can run beside a retrieve's
    search; FAISS does not allow an index to be searched while rows are added to it. A
    search started during a write waits for it (and then finds what it wrote)."""
    import asyncio
    import threading
    import time as clock

    backend = await _backend(tmp_path)
    await backend.upsert(_records(20))
    cache = backend._vectors
    writing, seen_during_write = threading.Event(), []
    add = cache.add

    def slow_add(seqs, vectors):  # type: ignore[no-untyped-def]
        writing.set()
        clock.sleep(0.2)  # a long add: a search let in now would see `writing` set
        add(seqs, vectors)
        writing.clear()

    search = cache.index.search

    def watched_search(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen_during_write.append(writing.is_set())
        return search(*args, **kwargs)

    cache.add = slow_add  # type: ignore[method-assign]
    cache.index.search = watched_search  # type: ignore[method-assign]
    new = MemoryRecord(id="new", session_id="s0", memory_type="note", content="the new one",
                       created_at=5000.0, vector=_records(21, seed=3)[20].vector)
    write = asyncio.ensure_future(backend.upsert([new]))
    while not writing.is_set():
        await asyncio.sleep(0.005)
    hits = await backend.vector_search(new.vector, 1, MemoryFilter())
    await write
    assert seen_during_write == [False]
    assert hits[0].record.id == "new"
    await backend.close()
