"""Store markers (MemoryBackend.get_marker / set_marker) on every backend: kept in the store
per namespace, and what health's consolidation lag reads, so that every client of one store
(another process, another machine with its own local folder) reports the same lag."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.backends import create_backend
from DeepResearch.src.memory.backends.shared import SharedBackend
from DeepResearch.src.memory.consolidation import consolidate
from DeepResearch.src.memory.embeddings import Embedder


async def test_a_marker_round_trips_per_namespace(
    make_client: Callable[..., MemorySystemClient],
) -> None:
    client = make_client()
    await client.open()
    store = client.backend
    assert await store.get_marker("alice", "run") is None
    await store.set_marker("alice", "run", 1.5)
    await store.set_marker("bob", "run", 2.5)
    await store.set_marker("alice", "other", 3.0)
    # names and namespaces holding the separator of neither leak into each other
    await store.set_marker("a:b", "c", 4.0)
    await store.set_marker("a", "b:c", 5.0)
    await store.set_marker("alice", "run", 6.25)  # replaced
    assert [await store.get_marker(ns, name) for ns, name in (
        ("alice", "run"), ("bob", "run"), ("alice", "other"), ("bob", "other"),
        ("a:b", "c"), ("a", "b:c"), ("carol", "run"))] == [6.25, 2.5, 3.0, None, 4.0, 5.0, None]


async def test_two_clients_of_one_store_report_the_same_consolidation(
    backend_name: str, memory_config_factory: Callable[..., MemoryConfig], embedder: Embedder,
    tmp_path: Path,
) -> None:
    """A consolidation run by one client is the lag every client of the store reports: a
    second process on the same folder (faiss), a second machine with its own local folder on
    the same database (neo4j), a second client of one shared backend (in_memory, as the
    service shares it); a client of another namespace still reports "never"."""
    first = memory_config_factory()
    second = first
    if backend_name == "neo4j":
        second = memory_config_factory(faiss={"path": str(tmp_path / "another machine")})
    shared = (SharedBackend(create_backend(first, embedder.dimension))
              if backend_name == "in_memory" else None)
    later = time.time() + 3600
    clients = [MemorySystemClient(config, namespace=ns, embedder=embedder, backend=shared,
                                  clock=lambda: later)
               for config, ns in ((first, "team"), (second, "team"), (second, "elsewhere"))]
    try:
        await clients[0].store_many([
            {"content": "The STAR index needs 32 GB.", "created_at": 1.0e9},
            {"content": "The STAR index needs 32 GB.", "created_at": 1.0e9 + 1}])
        before = [(await c.health_detail())["consolidation"]["state"] for c in clients]
        assert before == ["never", "never", "never"]
        started = time.time()
        assert (await consolidate(clients[0])).consolidated == 2
        reports = [(await c.health_detail())["consolidation"] for c in clients]
        assert reports[0]["state"] == "ran" and reports[1] == reports[0]
        ran = datetime.fromisoformat(reports[0]["last_run"]).timestamp()
        assert started <= ran <= time.time()
        assert reports[2]["state"] == "never"
    finally:
        for c in clients:
            await c.close()
        if shared is not None:
            await shared.close_shared()
