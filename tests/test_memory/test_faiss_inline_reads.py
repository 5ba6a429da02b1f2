"""Reads of a small faiss store run in the caller's thread (no FAISS pool hand-off), limited to
one OpenMP thread there; a large store, or a read that meets a write, goes to the pool."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pytest

from DeepResearch.src.memory import MemoryConfig
from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord, create_backend, faiss_store
from DeepResearch.src.memory.backends.faiss_store import FaissBackend

pytestmark = pytest.mark.integration


def _records(n: int) -> list[MemoryRecord]:
    rng = np.random.default_rng(4)
    vecs = rng.normal(size=(n, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return [
        MemoryRecord(id=f"r{i}", session_id=f"s{i % 3}", memory_type="note",
                     content=f"record {i} about {'aligners' if i % 2 else 'variant callers'}",
                     created_at=1000.0 + i, vector=vecs[i],
                     relations=[("follows", f"r{i - 3}")] if i >= 3 else [])
        for i in range(n)
    ]


async def _open(path: Path) -> FaissBackend:
    backend = create_backend(MemoryConfig(backend="faiss", faiss={"path": str(path)}), 8)
    await backend.open()
    return backend  # type: ignore[return-value]


async def _every_read(backend: FaissBackend, records: list[MemoryRecord]) -> list[Any]:
    """The answer of each read the ranking pipeline makes, as comparable ids."""
    flt = MemoryFilter(session_ids=("s1",))
    dense, lexical = await backend.dense_and_lexical(records[4].vector, "aligners", 5, flt)
    return [
        [c.record.id for c in await backend.vector_search(records[4].vector, 5, MemoryFilter())],
        [c.record.id for c in await backend.distinct_vector_search(records[4].vector, 5, flt)],
        [c.record.id for c in dense], [c.record.id for c in lexical],
        [c.record.id for c in await backend.text_search("variant callers", 5, MemoryFilter())],
        [r.id for r in await backend.get(["r3", "r7"])],
        await backend.count(flt),
        {k: [r.record.id for r in v] for k, v in (await backend.session_neighbours(["r4"], 2)).items()},
    ]


def _in_new_thread(fn: Any) -> Any:
    """Run the coroutine function `fn` on an event loop of its own thread (its OpenMP setting
    stays there) and return its result."""
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(asyncio.run(fn())))
    thread.start()
    thread.join()
    return out[0]


def test_small_store_reads_stay_in_the_callers_thread_on_one_openmp_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hand_offs: list[str] = []
    run_faiss = faiss_store.run_faiss

    async def counting(fn: Any, *args: Any) -> Any:
        hand_offs.append(getattr(fn, "__name__", repr(fn)))
        return await run_faiss(fn, *args)

    monkeypatch.setattr(faiss_store, "run_faiss", counting)
    records = _records(60)

    async def main() -> tuple[list[Any], list[str], int, list[Any], list[str]]:
        backend = await _open(tmp_path)
        await backend.upsert(records)
        hand_offs.clear()
        search, threads = FaissBackend._vector_search_sync, []

        def watched(*args: Any) -> Any:  # the OpenMP threads FAISS may use during a read
            threads.append(faiss.omp_get_max_threads())
            return search(*args)

        monkeypatch.setattr(FaissBackend, "_vector_search_sync", watched)
        inline = await _every_read(backend, records)
        inline_hand_offs = list(hand_offs)
        inline_threads = [*threads, faiss.omp_get_max_threads()]  # after: the setting given back
        # The same reads of a store "over the limit": on the pool, same answers.
        monkeypatch.setattr(faiss_store, "INLINE_READS_UP_TO", 10)
        hand_offs.clear()
        pooled = await _every_read(backend, records)
        await backend.close()
        return inline, inline_hand_offs, inline_threads, pooled, list(hand_offs)

    inline, inline_hand_offs, threads, pooled, pooled_hand_offs = _in_new_thread(main)
    assert inline_hand_offs == []
    # An OpenMP team left spinning beside the query embedding cost +30 ms a run; torch, which
    # may share the runtime, gets this thread's setting back.
    assert threads == [1, 1, 1, faiss.omp_get_max_threads()] and threads[-1] > 1
    assert len(pooled_hand_offs) == 8
    assert pooled == inline
    assert inline[0] and inline[2] and inline[3] and inline[5] == ["r3", "r7"] and inline[7]


async def test_a_read_during_a_scan_waits_on_the_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scan (every row, maybe) holds the caches as a write does, so a small read started
    meanwhile is handed to the pool instead of waiting for the scan in the event loop."""
    backend = await _open(tmp_path)
    records = _records(30)
    await backend.upsert(records)
    scanning, release = threading.Event(), threading.Event()
    scan = backend._require().scan

    def slow_scan(*args: Any) -> list[MemoryRecord]:
        scanning.set()
        release.wait(10)
        return scan(*args)

    monkeypatch.setattr(backend._require(), "scan", slow_scan)
    scanned = asyncio.ensure_future(backend.scan(MemoryFilter()))
    while not scanning.is_set():
        await asyncio.sleep(0.005)
    search = asyncio.ensure_future(backend.vector_search(records[0].vector, 3, MemoryFilter()))
    await asyncio.sleep(0.05)  # the event loop runs: the read did not block it
    assert not search.done()
    release.set()
    assert len(await scanned) == 30
    assert (await search)[0].record.id == "r0"
    await backend.close()


async def test_a_read_that_meets_a_write_waits_on_the_pool_not_in_the_event_loop(
    tmp_path: Path,
) -> None:
    """While a write holds the caches, a small-store read is handed to the pool (where it
    waits for the write) instead of blocking the event loop; the loop stays free meanwhile."""
    backend = await _open(tmp_path)
    records = _records(30)
    await backend.upsert(records[:20])
    held, release = threading.Event(), threading.Event()

    def writer() -> None:  # holds the caches as a write on the pool does
        with backend._caches_lock:
            held.set()
            release.wait(10)

    thread = threading.Thread(target=writer)
    thread.start()
    held.wait(10)
    try:
        search = asyncio.ensure_future(backend.vector_search(records[0].vector, 3, MemoryFilter()))
        ticks = 0
        for _ in range(5):  # the event loop keeps running while the read waits
            await asyncio.sleep(0.01)
            ticks += 1
        assert not search.done() and ticks == 5
    finally:
        release.set()
        thread.join()
    hits = await search
    assert hits[0].record.id == "r0"
    await backend.close()
