"""Access statistics on every backend: each retrieve counts the memories it returned (written
in the background, flushed at close), replacing or moving a memory keeps its counts, deleting
it drops them, and an embedded store keeps them across reopening (older stores migrated)."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.backends.embedded import DB_FILE
from DeepResearch.src.memory.backends.in_memory import InMemoryBackend
from DeepResearch.src.memory.backends.record import AccessStats
from DeepResearch.src.memory.errors import MemoryBackendError

MakeClient = Callable[..., MemorySystemClient]
TEXTS = {"a": "the pottery class meets on tuesday evenings",
         "b": "the pottery kiln needs a new thermocouple",
         "c": "sourdough starter feeding schedule"}


async def _store(client: MemorySystemClient) -> None:
    for rid, text in TEXTS.items():
        await client.store(text, id=rid, session_id="s1")


async def _retrieved(client: MemorySystemClient, queries: list[str]) -> Counter[str]:
    seen: Counter[str] = Counter()
    for query in queries:
        seen.update(m.id for m in await client.retrieve(query, top_k=2, all_sessions=True))
    return seen


async def test_retrieves_count_the_memories_they_return(make_client: MakeClient) -> None:
    client = make_client(namespace="alice")
    await _store(client)
    assert await client.access_stats(["a", "b", "c", "nope"]) == {
        i: AccessStats(0, None) for i in "abc"}
    start = time.time()
    seen = await _retrieved(client, ["pottery class", "pottery kiln", "pottery"])
    stats = await client.access_stats(["a", "b", "c"])
    assert {i: s.count for i, s in stats.items()} == {i: seen[i] for i in "abc"}
    assert seen["a"] and seen["b"]
    for rid, s in stats.items():
        if seen[rid]:
            assert s.last_accessed is not None and start <= s.last_accessed <= time.time()
        else:
            assert s.last_accessed is None

    await client.store(TEXTS["a"] + " (moved to room 2)", id="a", session_id="s1")  # replaced
    assert (await client.access_stats(["a"]))["a"].count == seen["a"]
    await client.archive(["a"], reason="test")
    assert await client.access_stats(["a"]) == {}
    await client.restore(["a"])
    assert (await client.access_stats(["a"]))["a"].count == seen["a"]
    await client.forget(["a"])
    await client.store("a new memory under an old id", id="a", session_id="s1")
    assert (await client.access_stats(["a"]))["a"] == AccessStats(0, None)


async def test_counts_are_written_at_close_and_survive_reopening(make_client: MakeClient) -> None:
    client = make_client(namespace="alice")
    if client.config.backend == "in_memory":
        pytest.skip("nothing outlives an in_memory client")
    await _store(client)
    seen = await _retrieved(client, ["pottery class", "pottery kiln"])
    await client.close()  # nothing asked for the statistics: close writes them
    again = make_client(namespace="alice")
    stats = await again.access_stats(list(TEXTS))
    assert {i: s.count for i, s in stats.items()} == {i: seen[i] for i in TEXTS}


async def test_a_store_made_before_the_access_table_is_migrated(
    tmp_path: Path, embedder
) -> None:
    config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path / "memory")})
    client = MemorySystemClient(config, session_id="s1", embedder=embedder)
    await _store(client)
    await client.close()
    with sqlite3.connect(tmp_path / "memory" / DB_FILE) as conn:  # as version 4 left it
        conn.execute("DROP TABLE access")
        conn.execute("PRAGMA user_version=4")
    client = MemorySystemClient(config, session_id="s1", embedder=embedder)
    seen = await _retrieved(client, ["pottery class"])
    assert {i: s.count for i, s in (await client.access_stats(list(TEXTS))).items()} == {
        i: seen[i] for i in TEXTS}
    assert await client.backend.verify() == []
    await client.close()
    with sqlite3.connect(tmp_path / "memory" / DB_FILE) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] >= 5


async def test_a_failing_statistics_write_never_fails_a_retrieve(
    embedder, caplog: pytest.LogCaptureFixture,
) -> None:
    class NoStatistics(InMemoryBackend):
        async def record_access(self, ids, namespace, at) -> None:
            raise MemoryBackendError("statistics table is locked")

    client = MemorySystemClient(MemoryConfig(backend="in_memory"), embedder=embedder,
                                backend=NoStatistics(embedder.dimension))
    await _store(client)
    with caplog.at_level(logging.WARNING):
        assert [m.id for m in await client.retrieve("pottery class", top_k=1)] == ["a"]
        assert [m.id for m in await client.retrieve("pottery class", top_k=1)] == ["a"]
        assert (await client.access_stats(["a"]))["a"].count == 0
    assert sum("statistics table is locked" in r.getMessage() for r in caplog.records) == 1
    await client.close()


async def test_back_to_back_retrieves_share_their_statistics_writes(embedder) -> None:
    """A write holds the embedded store's connection through its commit: retrieves in a
    burst gather their ids for one write instead of each waiting for the last one's. The
    counts are whole all the same."""
    class CountedWrites(InMemoryBackend):
        writes = 0

        async def record_access(self, ids, namespace, at) -> None:
            CountedWrites.writes += 1
            await super().record_access(ids, namespace, at)

    client = MemorySystemClient(MemoryConfig(backend="in_memory"), embedder=embedder,
                                backend=CountedWrites(embedder.dimension))
    await _store(client)
    for i in range(10):  # new queries: each embedded, none answered by the hot tier
        assert [m.id for m in await client.retrieve(f"pottery class {i}", top_k=1)] == ["a"]
    assert CountedWrites.writes <= 3
    assert (await client.access_stats(["a"]))["a"].count == 10  # flushed at once
    await client.close()
