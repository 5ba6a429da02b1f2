"""Writes acknowledged once committed, their vectors filled behind (vector_fill.py), on the real
embedded store, the real Neo4j (the tests taking `store`) and the real embedding model.

The embedding is held back by a gate (the real model, called once the gate opens) so a test
can look at the store between the acknowledgement and the fill."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.backends import MemoryFilter, create_backend
from DeepResearch.src.memory.backends.embedded import DB_FILE
from DeepResearch.src.memory.embeddings import Embedder
from test_memory.fault_support import env_without_keys

CAT = "The cat slept all afternoon on the warm windowsill"
FELINE_QUERY = "a feline napping in the sun"  # no word in common with CAT


class GatedEmbedder(Embedder):
    """The real model; document embeddings wait until `gate` is set."""

    def __init__(self, real: Embedder) -> None:
        super().__init__(real.model_name, loaded=real.model)
        self.gate = threading.Event()
        self.entered = threading.Event()  # a fill has read its texts and waits at the gate

    def embed(self, texts: Any) -> np.ndarray:
        self.entered.set()
        self.gate.wait(timeout=60)
        return super().embed(texts)


def config(path: Path, **storage: Any) -> MemoryConfig:
    return MemoryConfig(backend="faiss", faiss={"path": str(path)}, storage=storage)


def pending_rows(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path / DB_FILE)) as conn:
        return conn.execute("SELECT count(*) FROM records WHERE length(vector) = 0").fetchone()[0]


class Store:
    """One store of a backend that fills vectors behind: its configuration (what a client,
    or another process, opens it with)."""

    def __init__(self, backend: str, settings: dict[str, Any]) -> None:
        self.backend = backend
        self.settings = settings

    def data(self, **storage: Any) -> dict[str, Any]:
        storage = {"vectors": "behind", **storage}  # Neo4j's default (auto) embeds inline
        return {"backend": self.backend, self.backend: self.settings, "storage": storage}

    def config(self, **storage: Any) -> MemoryConfig:
        return MemoryConfig(**self.data(**storage))

    async def waiting(self, dimension: int) -> int:
        """Memories awaiting their vectors, seen by a backend of its own (no client: no fill)."""
        backend = create_backend(self.config(), dimension)
        await backend.open()
        try:
            return (await backend.pending_figures())[0]
        finally:
            await backend.close()


@pytest.fixture(params=[pytest.param("faiss", id="faiss"),
                        pytest.param("neo4j", id="neo4j", marks=pytest.mark.neo4j)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "neo4j":
        return Store("neo4j", {"uri": request.getfixturevalue("neo4j_clean_uri")})
    return Store("faiss", {"path": str(tmp_path)})


async def waiting(client: MemorySystemClient) -> int:
    return (await client.backend.pending_figures())[0]


async def test_a_store_is_acknowledged_committed_and_found_by_its_words_before_its_vector(
    store: Store, embedder: Embedder
) -> None:
    gated = GatedEmbedder(embedder)
    async with MemorySystemClient(store.config(), embedder=gated) as client:
        memory_id = await client.store(CAT)
        assert await waiting(client) == 1  # committed, no vector yet
        found = await client.backend.text_search("windowsill afternoon", 5, MemoryFilter())
        assert [c.record.id for c in found] == [memory_id]
        assert found[0].record.vector is None
        query = embedder.embed_query(FELINE_QUERY)
        assert await client.backend.vector_search(query, 5, MemoryFilter()) == []
        assert (await client.stats()).awaiting_vectors == 1
        gated.gate.set()
        await client.flush()
        assert await waiting(client) == 0
        hits = await client.backend.vector_search(embedder.embed_query(FELINE_QUERY), 5,
                                                  MemoryFilter())
        assert [c.record.id for c in hits] == [memory_id]
        assert (await client.stats()).vectors_filled == 1


async def test_a_retrieve_waits_for_the_vectors_of_what_its_client_stored(
    store: Store, embedder: Embedder
) -> None:
    gated = GatedEmbedder(embedder)
    async with MemorySystemClient(store.config(), embedder=gated) as client:
        memory_id = await client.store(CAT)
        await client.store("Quarterly revenue grew by four percent")
        threading.Timer(0.3, gated.gate.set).start()
        results = await client.retrieve(FELINE_QUERY)  # found by meaning alone
        assert results and results[0].id == memory_id
        assert await waiting(client) == 0


async def test_another_process_index_catches_up_with_a_fill(
    tmp_path: Path, embedder: Embedder
) -> None:
    gated = GatedEmbedder(embedder)
    writer = MemorySystemClient(config(tmp_path), embedder=gated)
    # its open sweeps waiting rows too: behind the same gate, so the writer's filler fills it
    reader = MemorySystemClient(config(tmp_path, vectors="inline"), embedder=gated)
    async with writer, reader:
        memory_id = await writer.store(CAT)
        query = embedder.embed_query(FELINE_QUERY)
        # the reader's index caught up with the row before it had a vector: not in it
        assert await reader.backend.vector_search(query, 5, MemoryFilter()) == []
        gated.gate.set()
        await writer.flush()
        hits = await reader.backend.vector_search(query, 5, MemoryFilter())
        assert [c.record.id for c in hits] == [memory_id]
        agreement = await reader.backend.index_agreement()
        assert agreement["agree"], agreement["problems"]


BREAD = "Bread rises faster in a warm kitchen"


@pytest.mark.parametrize("replaced_with", ["vector", "deferred"])
async def test_a_row_replaced_before_its_fill_keeps_the_new_content(
    store: Store, embedder: Embedder, replaced_with: str
) -> None:
    """A fill computed for a memory's old content is refused, whether the replacement came
    with its vector or awaits one itself."""
    gated = GatedEmbedder(embedder)
    async with MemorySystemClient(store.config(), embedder=gated) as client:
        await client.store(CAT, id="m1")
        stale = await client.backend.pending_vectors(10)
        assert list(stale.values()) == [CAT]
        vector = embedder.embed([BREAD])[0] if replaced_with == "vector" else None
        await client.store(BREAD, id="m1", vector=vector)
        # the old row is gone: a fill computed for it changes nothing
        assert await client.backend.fill_vectors(
            [(key, embedder.embed([CAT])[0]) for key in stale]) == []
        assert await waiting(client) == (replaced_with == "deferred")
        gated.gate.set()
        await client.flush()
        records = await client.backend.get(["m1"], client.namespace)
        assert records[0].content.startswith("Bread")
        np.testing.assert_allclose(records[0].vector, embedder.embed([records[0].content])[0],
                                   atol=1e-5)


async def test_a_memory_replaced_while_its_old_content_is_embedded_is_filled_after(
    store: Store, embedder: Embedder
) -> None:
    """The filler read the old content, the memory was replaced (its new content awaiting
    a vector too), the old fill is refused: the new content stays owed and is filled."""
    gated = GatedEmbedder(embedder)
    async with MemorySystemClient(store.config(), embedder=gated) as client:
        gated.gate.set()  # a first memory filled, and the open's sweep of the store over
        await client.store("Quarterly revenue grew by four percent")
        await client.flush()
        await asyncio.sleep(0.2)  # (the sweep's last, empty pass; not a timing assertion)
        gated.gate.clear()
        gated.entered.clear()
        await client.store(CAT, id="m1")
        assert await asyncio.to_thread(gated.entered.wait, 30)  # the filler holds CAT's text
        await client.store(BREAD, id="m1")
        gated.gate.set()
        await client.flush()
        assert await waiting(client) == 0
        (record,) = await client.backend.get(["m1"], client.namespace)
        np.testing.assert_allclose(record.vector, embedder.embed([BREAD])[0], atol=1e-5)


@pytest.mark.parametrize("storage", [{"vectors": "inline"}, {"max_pending_vectors": 0}],
                         ids=["inline", "no-backlog-allowed"])
async def test_inline_vectors_are_committed_with_their_row(
    store: Store, embedder: Embedder, storage: dict[str, Any]
) -> None:
    async with MemorySystemClient(store.config(**storage), embedder=embedder) as client:
        await client.store_many([{"content": f"note {i} about sailing"} for i in range(3)])
        assert await waiting(client) == 0


async def test_auto_fills_behind_on_faiss_and_embeds_inline_on_neo4j(
    store: Store, embedder: Embedder
) -> None:
    gated = GatedEmbedder(embedder)
    if store.backend == "neo4j":  # inline there: the store's own embedding is not held
        gated.gate.set()
    async with MemorySystemClient(store.config(vectors="auto"), embedder=gated) as client:
        await client.store(CAT)
        assert await waiting(client) == (1 if store.backend == "faiss" else 0)
        gated.gate.set()


async def test_health_reports_the_memories_awaiting_vectors(
    store: Store, embedder: Embedder
) -> None:
    gated = GatedEmbedder(embedder)
    async with MemorySystemClient(store.config(), embedder=gated) as client:
        await client.store_many([{"content": f"note {i} about sailing"} for i in range(3)])
        report = await client.health_detail()
        assert report["vectors"]["awaiting"] == 3
        # the index agrees: the three are records, awaiting their vectors, not missing
        assert report["index"]["agree"] and report["problems"] == []
        if store.backend == "faiss":  # a separate index (Neo4j keeps vectors on the nodes)
            assert (report["index"]["records"], report["index"]["vectors"],
                    report["index"]["awaiting_vectors"]) == (3, 0, 3)
        assert report["vectors"]["lag_seconds"] >= 0
        gated.gate.set()
        await client.flush()
        assert (await client.health_detail())["vectors"] == {"awaiting": 0, "lag_seconds": 0.0}


STORE_THEN_WAIT = """
import asyncio, json, sys, threading
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.embeddings import Embedder, get_embedder

class Stuck(Embedder):  # documents never embedded: the process dies first
    def embed(self, texts):
        threading.Event().wait()

async def main(config):
    real = get_embedder()
    client = MemorySystemClient(MemoryConfig(**json.loads(config)),
                                embedder=Stuck(real.model_name, loaded=real.model))
    await client.store_many([{"id": f"m{i}", "content": f"the ferry to island {i} leaves at dawn"}
                             for i in range(20)])
    print("acknowledged", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main(sys.argv[1]))
"""


@pytest.mark.integration
async def test_rows_a_killed_process_left_without_vectors_are_filled_by_the_next_open(
    store: Store, embedder: Embedder
) -> None:
    child = subprocess.Popen([sys.executable, "-c", STORE_THEN_WAIT, json.dumps(store.data())],
                             stdout=subprocess.PIPE, text=True, env=env_without_keys())
    try:
        assert child.stdout is not None
        assert await asyncio.to_thread(child.stdout.readline) == "acknowledged\n"
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate()
    # acknowledged, durable, no vectors
    assert await store.waiting(embedder.dimension) == 20
    # filled by the next client whatever its own setting (one that embeds inline too)
    async with MemorySystemClient(store.config(vectors="inline"), embedder=embedder) as client:
        for _ in range(200):  # the open's filler runs in the background
            if await waiting(client) == 0:
                break
            await asyncio.sleep(0.05)
        assert await waiting(client) == 0
        hits = await client.backend.vector_search(
            embedder.embed_query("boat to an island early in the morning"), 20, MemoryFilter())
        assert len(hits) == 20


async def test_the_next_client_to_open_fills_what_another_machine_left_waiting(
    store: Store, embedder: Embedder
) -> None:
    """Two machines on one store: the first's embedding is stuck; the second's open fills
    what the first left waiting, and the first's own fill, late, changes nothing."""
    stuck = GatedEmbedder(embedder)
    first = MemorySystemClient(store.config(), embedder=stuck)
    try:
        memory_id = await first.store(CAT)
        async with MemorySystemClient(store.config(), embedder=embedder) as second:
            query = embedder.embed_query(FELINE_QUERY)
            for _ in range(200):  # the open's sweep runs in the background
                if await waiting(second) == 0:
                    break
                await asyncio.sleep(0.05)
            assert await waiting(second) == 0
            hits = await second.backend.vector_search(query, 5, MemoryFilter())
            assert [c.record.id for c in hits] == [memory_id]
            stuck.gate.set()
            await first.flush()
            assert (await first.stats()).awaiting_vectors == 0
            hits = await second.backend.vector_search(query, 5, MemoryFilter())
            assert [c.record.id for c in hits] == [memory_id]
    finally:
        stuck.gate.set()
        await first.close()


async def test_clients_sharing_one_backend_fill_vectors_behind_too(
    store: Store, embedder: Embedder
) -> None:
    """The service's clients (one per namespace over one SharedBackend) defer as well."""
    from DeepResearch.src.memory.backends.shared import SharedBackend

    gated = GatedEmbedder(embedder)
    shared = SharedBackend(create_backend(store.config(), embedder.dimension))
    clients = [MemorySystemClient(store.config(), namespace=ns, embedder=gated, backend=shared)
               for ns in ("alice", "bob")]
    try:
        stored = [await client.store(CAT) for client in clients]
        assert await waiting(clients[0]) == 2
        gated.gate.set()
        for client, memory_id in zip(clients, stored, strict=True):
            assert [r.id for r in await client.retrieve(FELINE_QUERY)] == [memory_id]
        assert await waiting(clients[0]) == 0
    finally:
        for client in clients:
            await client.close()
        await shared.close_shared()


async def test_a_fill_the_store_refuses_leaves_the_memory_found_by_words_and_is_retried(
    tmp_path: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    """Another process holds the write lock when the vectors are to be stored: the read goes
    on (by words), the memory stays waiting, and a later flush fills it."""
    from test_memory.fault_support import write_lock_held

    gated = GatedEmbedder(embedder)
    cfg = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path), "busy_timeout": 0.2})
    async with MemorySystemClient(cfg, embedder=gated) as client:
        memory_id = await client.store(CAT)
        with write_lock_held(tmp_path / DB_FILE):
            gated.gate.set()
            results = await client.retrieve("windowsill")  # lexical: found, no hang
            assert [r.id for r in results] == [memory_id]
            assert pending_rows(tmp_path) == 1
            assert (await client.stats()).vector_fill_failures >= 1
        assert "database is locked" in caplog.text
        await client.flush()
        assert pending_rows(tmp_path) == 0
        assert [r.id for r in await client.retrieve(FELINE_QUERY)] == [memory_id]


async def test_write_behind_batches_are_filled_too(tmp_path: Path, embedder: Embedder) -> None:
    """enable_async_writes: the records wait in the queue without vectors, are written by
    the background flush, and a retrieve finds them by meaning (drain, then settle)."""
    cfg = config(tmp_path, enable_async_writes=True, flush_interval=60)
    async with MemorySystemClient(cfg, embedder=embedder) as client:
        memory_id = await client.store(CAT)
        assert not (tmp_path / DB_FILE).exists() or pending_rows(tmp_path) == 0  # still queued
        assert [r.id for r in await client.retrieve(FELINE_QUERY)] == [memory_id]
        assert pending_rows(tmp_path) == 0
