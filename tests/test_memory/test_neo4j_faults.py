"""Losing the Neo4j server: down at start, and killed mid-run then restarted on the same
port and data folder. These tests run their own server (tests/neo4j_support.py), never the
shared one, and kill it with SIGKILL like a crash."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator

import pytest
from neo4j_support import Neo4jTestServer, clear_database, free_port

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.backends.base import MemoryFilter
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.errors import MemoryBackendError
from test_memory.neo4j_helpers import backend, record

pytestmark = [pytest.mark.neo4j, pytest.mark.integration, pytest.mark.slow]
FAST_FAIL = {
    "connection_timeout": 1.0,
    "retry_attempts": 2,
    "retry_backoff": 0.1,
}


@pytest.fixture(scope="module")
def module_server() -> Iterator[Neo4jTestServer]:
    srv = Neo4jTestServer()
    try:
        srv.start()
        yield srv
    finally:
        srv.cleanup()


@pytest.fixture
def server(module_server: Neo4jTestServer) -> Neo4jTestServer:
    """The module's server, running and empty: each test starts from a clean database."""
    if not module_server.running:
        module_server.start()
    clear_database(module_server.uri)
    return module_server


def client_config(uri: str, **overrides: object) -> MemoryConfig:
    return MemoryConfig(
        backend="neo4j",
        neo4j={"uri": uri, "password": None, **FAST_FAIL},
        retrieval={"min_similarity": -1.0},
        **overrides,
    )


async def test_backend_down_at_open_fails_fast_with_a_clear_error() -> None:
    uri = f"bolt://127.0.0.1:{free_port()}"
    store = backend(uri, **FAST_FAIL)
    started = time.monotonic()
    with pytest.raises(MemoryBackendError, match=r"cannot use Neo4j at bolt://127\.0\.0\.1:\d+"):
        await store.open()
    assert time.monotonic() - started < 15
    assert store.conn.driver is None  # closed


async def test_client_down_at_start_warns_once_or_fails(
    embedder: Embedder, caplog: pytest.LogCaptureFixture, tmp_path: object
) -> None:
    uri = f"bolt://127.0.0.1:{free_port()}"
    failing = MemorySystemClient(
        client_config(uri, on_unavailable="fail"), session_id="s", embedder=embedder
    )
    with pytest.raises(MemoryBackendError, match=r"Neo4j at bolt://127\.0\.0\.1"):
        await failing.open()
    await failing.close()

    caplog.set_level(logging.WARNING)
    config = client_config(uri, faiss={"path": str(tmp_path)})
    client = MemorySystemClient(config, session_id="s", embedder=embedder)
    await client.store(content="kept while the server is down")
    assert await client.retrieve(query="anything") == []
    await client.retrieve(query="anything else")
    # one warning that memory is off (naming the server), one that the write was kept
    down = [r.getMessage() for r in caplog.records if "is unavailable" in r.getMessage()]
    assert len(down) == 1 and "Neo4j at bolt://127.0.0.1" in down[0]
    assert any("kept in the outbox" in r.getMessage() for r in caplog.records)
    health = await client.health()
    assert (health.ok, health.available, health.outbox) == (False, False, 1)
    await client.close()  # nothing silently dropped: the unwritten memory is spilled to a file
    assert client.writes.spilled_file is not None


async def test_backend_lost_mid_run_retries_then_raises_and_recovers(
    server: Neo4jTestServer,
) -> None:
    store = backend(server.uri, node_label="FaultMemory", **FAST_FAIL)
    await store.open()
    try:
        await store.upsert([record("before")])
        server.stop(kill=True)
        started = time.monotonic()
        with pytest.raises(MemoryBackendError, match=r"unavailable: writing 1 memories failed after 3"):
            await store.upsert([record("during")])
        assert time.monotonic() - started < 30  # bounded: retries, not forever
        assert not (await store.health()).ok

        server.start()
        await store.upsert([record("during")])  # the same backend object recovers
        assert [r.id for r in await store.scan(MemoryFilter())] == ["before", "during"]
        assert (await store.health()).ok
    finally:
        await store.close()
        if not server.running:
            server.start()


async def test_client_keeps_failed_writes_and_writes_them_after_restart(
    server: Neo4jTestServer, embedder: Embedder, tmp_path: object
) -> None:
    config = client_config(server.uri, faiss={"path": str(tmp_path)})
    client = MemorySystemClient(config, session_id="fault-session", embedder=embedder)
    try:
        first = await client.store(content="STAR aligns RNA-seq reads")
        server.stop(kill=True)

        with pytest.raises(MemoryBackendError, match="kept in the outbox"):
            await client.store(content="BWA maps DNA reads", id="lost")
        lost = "lost"
        health = await client.health()  # reported, not dropped
        assert (health.ok, health.outbox, health.failed_attempts) == (False, 1, 1)
        assert "unavailable" in health.detail or "Neo4j" in health.detail
        started = time.monotonic()
        with pytest.raises(MemoryBackendError, match="kept in the outbox"):
            await client.store(content="Salmon quantifies transcripts", id="also-lost")
        also_lost = "also-lost"
        assert time.monotonic() - started < 5  # known down: fails fast, no second backoff
        assert (await client.health()).outbox == 2

        server.start()
        assert await client.flush() == 2
        assert (await client.stats()).outbox == 0
        found = {r.id for r in await client.retrieve(query="reads", top_k=5)}
        assert found == {first, lost, also_lost}
        assert (await client.health()).ok
    finally:
        await client.close()
        if not server.running:
            server.start()


async def test_client_reads_degrade_when_the_server_is_lost_mid_run(
    server: Neo4jTestServer, embedder: Embedder, tmp_path: object,
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = client_config(
        server.uri, faiss={"path": str(tmp_path)}, storage={"max_retry_backoff": 0.5}
    )
    client = MemorySystemClient(config, session_id="read-fault", embedder=embedder)
    try:
        kept = await client.store(content="STAR aligns RNA-seq reads")
        server.stop(kill=True)
        with caplog.at_level(logging.WARNING, logger="DeepResearch.src.memory"):
            assert await client.retrieve(query="reads") == []
            assert await client.get_related_memories(kept) == []
            assert (await client.stats()).available is False  # answers, does not raise
            assert await client.retrieve(query="aligner") == []
        lost = [r for r in caplog.records if "was lost" in r.getMessage()]
        assert len(lost) == 1  # one warning per outage, not one per call

        server.start()
        deadline = time.monotonic() + 20  # reconnects once per backoff; a loaded machine is slow
        while True:
            await asyncio.sleep(0.6)  # past the reconnect backoff
            found = [m.id for m in await client.retrieve(query="reads")]
            if found == [kept] or time.monotonic() > deadline:
                break
        assert found == [kept]
        assert client.available
    finally:
        await client.close()
        if not server.running:
            server.start()


async def test_client_reads_raise_mid_run_with_on_unavailable_fail(
    server: Neo4jTestServer, embedder: Embedder, tmp_path: object
) -> None:
    config = client_config(server.uri, faiss={"path": str(tmp_path)}, on_unavailable="fail")
    client = MemorySystemClient(config, session_id="read-fault-strict", embedder=embedder)
    try:
        await client.store(content="STAR aligns RNA-seq reads")
        server.stop(kill=True)
        with pytest.raises(MemoryBackendError, match="Neo4j"):
            await client.retrieve(query="reads")
    finally:
        await client.close()
        if not server.running:
            server.start()


async def test_a_server_killed_mid_run_costs_seconds_and_one_warning(
    embedder: Embedder, tmp_path: object, caplog: pytest.LogCaptureFixture
) -> None:
    """The default retry settings: SIGKILL the server, then keep working. Each call after the
    first failure fails fast; writes wait in the outbox; one warning says memory is off."""
    with Neo4jTestServer() as private:
        config = MemoryConfig(
            backend="neo4j", neo4j={"uri": private.uri, "password": None},
            faiss={"path": str(tmp_path)}, retrieval={"min_similarity": -1.0},
        )
        client = MemorySystemClient(config, session_id="killed", embedder=embedder)
        kept = await client.store(content="STAR aligns RNA-seq reads")
        assert [m.id for m in await client.retrieve(query="reads")] == [kept]
        await client.flush()  # the retrieve's access statistics too: nothing in flight at the kill
        private.stop(kill=True)
        # the death seen by the event loop (the driver closes its dropped connections then),
        # as when it happens between two calls and not in the tick of the next write
        await asyncio.sleep(0.1)
        caplog.clear()
        caplog.set_level(logging.INFO)
        started = time.monotonic()
        raised = []
        for i in range(4):
            try:  # the write that meets the lost server says so; later ones queue quietly
                await client.store(content=f"finding {i} made while the server is gone")
            except MemoryBackendError as exc:
                raised.append(exc)
            assert await client.retrieve(query=f"finding {i}") == []
        assert len(raised) <= 1 and all("kept in the outbox" in str(e) for e in raised)
        assert await client.get_related_memories(kept) == []
        elapsed = time.monotonic() - started
        assert elapsed < 10, f"8 calls took {elapsed:.1f}s with the server gone"
        stats = await client.stats()
        assert (stats.available, stats.outbox) == (False, 4)

        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert [r for r in caplog.records if r.name.startswith("neo4j")] == []  # driver quiet
        lost = [r for r in warnings if "was lost" in r.getMessage()]
        assert len(lost) == 1 and f"Neo4j at {private.uri}" in lost[0].getMessage()
        assert len(warnings) <= 2  # that one, and the outbox's note that writes are kept
        await client.close()
        spilled = client.writes.spilled_file
        assert spilled is not None
        with open(spilled, encoding="utf-8") as fh:
            assert len(fh.readlines()) == 4
