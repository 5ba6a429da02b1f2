"""faiss (embedded) backend specifics: restarts, SIGKILL after store, mismatched settings,
rebuild, exact results for selective filters, an unusable folder."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from DeepResearch.src.memory import IndexMismatchError, MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord, create_backend
from DeepResearch.src.memory.backends.embedded import EmbeddedBackend, store

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


async def _backend(path: Path, dimension: int = 8, **faiss: object) -> EmbeddedBackend:
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


async def test_reembedding_embeds_each_record_by_its_content(tmp_path: Path, embedder) -> None:
    """`rebuild --reembed` (a new model, say) recomputes each vector from its record's full
    content."""
    content = "Tool read_document succeeded with rna_seq_aligners.md: STAR and HISAT2 ..."
    plain = "HISAT2 aligns spliced RNA-seq reads against a reference genome"
    rng = np.random.default_rng(3)
    old = rng.normal(size=(2, 384)).astype(np.float32)  # vectors of a model gone
    old /= np.linalg.norm(old, axis=1, keepdims=True)
    backend = await _backend(tmp_path, dimension=384)
    await backend.upsert([
        MemoryRecord(id="keyed", session_id="s", memory_type="tool_execution", content=content,
                     created_at=1.0, vector=old[0]),
        MemoryRecord(id="plain", session_id="s", memory_type="note", content=plain,
                     created_at=2.0, vector=old[1]),
    ])
    await backend.close()
    rebuilt = EmbeddedBackend(MemoryConfig(faiss={"path": str(tmp_path)}).faiss, dimension=384,
                           metric="cosine", model="all-MiniLM-L6-v2")
    assert rebuilt.rebuild(reembed=embedder.embed) == 2
    backend = await _backend(tmp_path, dimension=384)
    stored = {r.id: r.vector for r in await backend.scan(MemoryFilter())}
    await backend.close()
    expected = embedder.embed([content, plain])
    np.testing.assert_allclose(stored["keyed"], expected[0], atol=1e-5)
    np.testing.assert_allclose(stored["plain"], expected[1], atol=1e-5)


async def test_reembedding_for_a_model_of_another_dimension_reads_every_record(
    tmp_path: Path, embedder
) -> None:
    """The stored vectors have the old model's length, which reads take for damage: the
    re-embedding reads the contents, not the records."""
    backend = await _backend(tmp_path)  # 8 values a vector
    await backend.upsert(_records(5))
    await backend.close()
    rebuilt = EmbeddedBackend(MemoryConfig(faiss={"path": str(tmp_path)}).faiss, dimension=384,
                              metric="cosine", model="all-MiniLM-L6-v2")
    assert rebuilt.rebuild(reembed=embedder.embed) == 5
    backend = await _backend(tmp_path, dimension=384)
    stored = {r.id: r.vector for r in await backend.scan(MemoryFilter())}
    assert await backend.verify() == []
    await backend.close()
    np.testing.assert_allclose(stored["r3"], embedder.embed(["record 3"])[0], atol=1e-5)


async def test_other_model_dimension_or_metric_is_refused(tmp_path: Path) -> None:
    backend = await _backend(tmp_path)
    await backend.upsert(_records(5))
    await backend.close()
    for kwargs in ({"dimension": 16}, {"metric": "euclidean"}, {"model": "another-model"}):
        args = {"dimension": 8, "metric": "cosine", "model": "all-MiniLM-L6-v2", **kwargs}
        other = EmbeddedBackend(MemoryConfig(faiss={"path": str(tmp_path)}).faiss, **args)
        with pytest.raises(IndexMismatchError, match=next(iter(kwargs))):
            await other.open()
    switched = await _backend(tmp_path, index_kind="hnsw")  # the index is a cache: rebuilt
    assert [c.record.id for c in await switched.vector_search(_records(5)[3].vector, 1,
                                                              MemoryFilter())] == ["r3"]
    await switched.close()


async def test_auto_index_kind_turns_hnsw_when_the_store_opens_past_hnsw_above(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    records = _records(12)
    small = await _backend(tmp_path, hnsw_above=10)
    await small.upsert(records[:6])
    assert "(flat FAISS index" in (await small.health()).detail
    await small.upsert(records[6:])  # past the size: the kind holds until the next open
    assert "(flat FAISS index" in (await small.health()).detail
    await small.close()
    with caplog.at_level(logging.INFO):
        large = await _backend(tmp_path, hnsw_above=10)
    assert "(hnsw FAISS index" in (await large.health()).detail
    switched = [r for r in caplog.records if "index.faiss" in r.getMessage()]
    assert [r.levelno for r in switched] == [logging.INFO], switched  # planned: no warning
    assert "a flat index, the store now uses hnsw" in switched[0].getMessage()
    found = await large.vector_search(records[9].vector, 3, MemoryFilter())
    assert found[0].record.id == "r9" and len(found) == 3  # the index rebuilt with every record
    await large.close()
    again = await _backend(tmp_path, hnsw_above=10)  # the saved HNSW file is used as it is
    assert (await again.vector_search(records[2].vector, 1, MemoryFilter()))[0].record.id == "r2"
    await again.close()


@pytest.fixture(params=["exact over the matching rows", "over-fetched"])
def broad_filters(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Small stores search the rows of any filter matching up to SELECTIVE_ROWS exactly;
    large ones over-fetch for a broad filter. Both paths, on the small stores of these tests."""
    if request.param == "over-fetched":
        monkeypatch.setattr(store, "SELECTIVE_ROWS", 0)  # 5% of 3000: a session is selective
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
    # the retry backoff's ceiling (storage.max_retry_backoff) a microsecond: the next flush is due
    config = MemoryConfig(backend="in_memory", storage={"max_retry_backoff": 1e-6})
    client = MemorySystemClient(config, backend=backend, embedder=embedder)
    with pytest.raises(MemoryBackendError, match=r"server went away.*kept in the outbox"):
        await client.store(content="written once the server is back", id="m1")
    mid = "m1"
    assert (await client.stats()).outbox == 1
    backend.down = False
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


TORCH_FIRST = textwrap.dedent(
    """
    import asyncio, sys, tempfile
    import torch  # imported before FAISS, so the two share one OpenMP runtime
    import numpy as np
    from DeepResearch.src.memory import MemoryConfig
    from DeepResearch.src.memory.backends import MemoryFilter, create_backend

    async def main():
        with tempfile.TemporaryDirectory() as folder:
            config = MemoryConfig(backend="faiss", faiss={"path": folder})
            backend = create_backend(config, 8)
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


LEFT_OPEN = textwrap.dedent(
    """
    import sys
    from DeepResearch.src.memory import SyncMemorySystemClient
    client = SyncMemorySystemClient({"backend": "faiss", "faiss": {"path": sys.argv[1]},
                                     "storage": {"enable_async_writes": True,
                                                 "flush_interval": 3600}})
    client.open()
    for i in range(5):
        client.store(f"written at exit {i}")
    """
)


def test_a_client_left_open_writes_its_pending_memories_at_exit(tmp_path: Path) -> None:
    """Interpreter exit closes a sync client that was never closed: its pending writes reach
    the store (they were spilled instead when concurrent.futures' exit hook ran first)."""
    done = subprocess.run([sys.executable, "-c", LEFT_OPEN, str(tmp_path)], capture_output=True,
                          text=True, cwd=REPO, timeout=300, check=False)
    assert done.returncode == 0 and "could not be written" not in done.stderr, done.stderr
    assert not list(tmp_path.glob("unwritten-*.jsonl"))

    async def count() -> int:
        client = MemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": str(tmp_path)}))
        async with client:
            return (await client.stats()).total or 0

    assert asyncio.run(count()) == 5


async def test_an_index_rebuild_uses_every_core_and_leaves_searches_on_one(tmp_path: Path) -> None:
    import faiss

    from DeepResearch.src.memory.faiss_pool import all_openmp_threads, run_faiss

    def during_and_after() -> tuple[int, int]:
        with all_openmp_threads():
            during = faiss.omp_get_max_threads()
        return during, faiss.omp_get_max_threads()

    assert await run_faiss(during_and_after) == (os.cpu_count() or 1, 1)
    backend = await _backend(tmp_path)
    await backend.upsert(_records(50))
    await backend.close()
    (tmp_path / "index.faiss").write_bytes(b"damaged")  # the next open rebuilds it
    again = await _backend(tmp_path)
    assert (await again.vector_search(_records(50)[7].vector, 1, MemoryFilter()))[0].record.id == "r7"
    assert await run_faiss(faiss.omp_get_max_threads) == 1  # searches: one thread each
    await again.close()
