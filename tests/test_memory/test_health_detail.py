"""The health report's detail (health.py) on the real in_memory and embedded backends: every
tier reachable, growth by created_at, the outbox, consolidation lag, and an embedded vector
index that disagrees with its records."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import numpy as np
import pytest

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.backends.embedded import DB_FILE
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.health import last_consolidation, record_consolidation


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("backend", ["in_memory", "faiss"])
async def test_tiers_growth_outbox_and_consolidation_lag(
    tmp_path: Path, embedder: Embedder, backend: str
) -> None:
    clock = Clock()
    config = MemoryConfig(backend=backend, faiss={"path": str(tmp_path / "store")})
    async with MemorySystemClient(config, embedder=embedder, clock=clock) as client:
        now = clock()
        await client.store_many([
            {"content": "stored just now"},
            {"content": "stored two hours ago", "created_at": now - 7200},
            {"content": "stored two days ago", "created_at": now - 2 * 86400},
        ])
        await client.get((await client.retrieve("stored", top_k=1))[0].id)
        report = await client.health_detail()
        tiers = report["tiers"]
        assert tiers["hot"]["reachable"] and tiers["hot"]["enabled"] and tiers["hot"]["items"] > 0
        assert tiers["hot"]["hits"] == 1
        assert tiers["warm"] == {"reachable": True, "backend": backend,
                                 "detail": tiers["warm"]["detail"]}
        assert tiers["graph"]["reachable"]
        assert report["index"]["agree"] and report["problems"] == []
        if backend == "faiss":
            assert (report["index"]["records"], report["index"]["vectors"]) == (3, 3)
        assert {k: report["growth"][k] for k in ("total", "last_hour", "last_day")} == {
            "total": 3, "last_hour": 1, "last_day": 2}
        assert report["outbox"] == {"pending": 0, "outbox": 0, "spill_files": 0}
        assert report["consolidation"] == {"last_run": None, "lag_seconds": None, "state": "never"}

        await record_consolidation(client.backend, client.namespace, now - 600)
        assert await last_consolidation(client.backend, config, client.namespace) == now - 600
        assert await last_consolidation(client.backend, config, "another") is None
        lag = (await client.health_detail())["consolidation"]
        assert lag["state"] == "ran" and lag["lag_seconds"] == 600.0


async def test_an_index_that_disagrees_with_the_records_is_a_problem(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Vectors changed in the database behind the open index: the sample says so."""
    config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path / "store")})
    async with MemorySystemClient(config, embedder=embedder) as client:
        ids = await client.store_many([{"content": f"memory number {i}"} for i in range(40)])
        await client.flush()  # every vector filled and indexed
        assert (await client.health_detail())["index"]["agree"]
        rng = np.random.default_rng(3)
        other = rng.normal(size=(5, embedder.dimension)).astype(np.float32)
        other /= np.linalg.norm(other, axis=1, keepdims=True)
        with sqlite3.connect(tmp_path / "store" / DB_FILE) as conn:
            conn.executemany("UPDATE records SET vector = ? WHERE id = ?",
                             [(v.tobytes(), i) for v, i in zip(other, ids[::8], strict=True)])
        report = await client.health_detail()
        assert not report["index"]["agree"] and report["index"]["sampled_differ"] == 5
        assert any("sampled vectors of the index differ" in p for p in report["problems"])


async def test_a_consolidate_run_records_its_end_and_a_dry_run_does_not(
    tmp_path: Path, embedder: Embedder
) -> None:
    from DeepResearch.src.memory.consolidation import consolidate

    config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path / "store")})
    async with MemorySystemClient(config, embedder=embedder) as client:
        await client.store_many([{"content": "The STAR index needs 32 GB.", "created_at": 1.0e9}])
        await consolidate(client, dry_run=True)
        assert (await client.health_detail())["consolidation"]["state"] == "never"
        before = time.time()
        await consolidate(client)
        ran = await last_consolidation(client.backend, config, client.namespace)
        assert ran is not None and ran >= before
        assert (await client.health_detail())["consolidation"]["state"] == "ran"


async def test_a_consolidation_whose_marker_cannot_be_written_is_still_done(
    tmp_path: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    """The marker is written in the store after the consolidation is applied; one that cannot
    be written (another process holds the database's write lock from then on: the marker's
    transaction gives up after busy_timeout) costs one warning, never the consolidation that
    is already applied."""
    import logging

    from DeepResearch.src.memory.consolidation import consolidate

    config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path / "store"),
                                                  "busy_timeout": 0.2})
    async with MemorySystemClient(config, embedder=embedder) as client:
        old = 1.0e9
        await client.store_many([{"content": "The STAR index needs 32 GB.", "created_at": old},
                                 {"content": "The STAR index needs 32 GB.", "created_at": old + 1}])
        other = sqlite3.connect(tmp_path / "store" / DB_FILE, isolation_level=None)

        def lock_when_written(stage: str, done: int, total: int) -> None:
            if stage == "writing" and done == total:  # the consolidated memories are written
                other.execute("BEGIN IMMEDIATE")

        try:
            with caplog.at_level(logging.WARNING):
                report = await consolidate(client, progress=lock_when_written)
            assert other.in_transaction
        finally:
            other.close()  # the lock released
        assert report.consolidated == 2 and (await client.stats()).total == 1
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert [w for w in warnings if "not recorded for health" in w] == warnings
        assert len(warnings) == 1 and "database is locked" in warnings[0]
        assert (await client.health_detail())["consolidation"]["state"] == "never"


async def test_a_marker_file_of_the_folder_is_read_until_the_store_has_one(
    tmp_path: Path, embedder: Embedder
) -> None:
    """consolidation.json in the store's folder (where runs were once recorded) answers for
    a namespace whose store holds no marker; a run records in the store, never in the file."""
    import json

    from DeepResearch.src.memory.consolidation import consolidate
    from DeepResearch.src.memory.health import CONSOLIDATION_FILE

    clock = Clock()
    folder = tmp_path / "store"
    folder.mkdir()
    old_file = json.dumps({"default": {"finished_at": clock.now - 600}})
    (folder / CONSOLIDATION_FILE).write_text(old_file, encoding="utf-8")
    config = MemoryConfig(backend="faiss", faiss={"path": str(folder)})
    async with MemorySystemClient(config, embedder=embedder, clock=clock) as client:
        lag = (await client.health_detail())["consolidation"]
        assert lag["state"] == "ran" and lag["lag_seconds"] == 600.0
        await client.store_many([{"content": "The STAR index needs 32 GB.", "created_at": 1.0e9}])
        before = time.time()
        await consolidate(client)
        clock.now = time.time()
        lag = (await client.health_detail())["consolidation"]
        assert lag["state"] == "ran" and lag["lag_seconds"] <= clock.now - before + 0.1
    assert (folder / CONSOLIDATION_FILE).read_text(encoding="utf-8") == old_file


async def test_consolidation_lag_is_unknown_while_the_store_is_unreachable(
    tmp_path: Path, embedder: Embedder
) -> None:
    config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path / "store")})
    async with MemorySystemClient(config, embedder=embedder) as client:
        await client.store("the assembly finished overnight")
        await client.backend.close()  # the store gone from under the client
        report = await client.health_detail()
        assert report["tiers"]["warm"]["reachable"] is False
        assert report["consolidation"]["state"] == "unknown"
        assert any("warm tier unreachable" in p for p in report["problems"])
        await client.backend.open()


async def test_a_marker_that_cannot_be_read_is_a_problem_not_never(
    tmp_path: Path, embedder: Embedder
) -> None:
    """The store's metadata table damaged behind the open store: the lag is not "never"."""
    config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path / "store")})
    async with MemorySystemClient(config, embedder=embedder) as client:
        await client.store("the assembly finished overnight")
        with sqlite3.connect(tmp_path / "store" / DB_FILE) as conn:
            conn.execute("ALTER TABLE meta RENAME TO meta_elsewhere")
        try:
            report = await client.health_detail()
            assert report["consolidation"]["state"] != "never"
            assert any("reading the consolidation marker failed" in p
                       for p in report["problems"])
        finally:
            with sqlite3.connect(tmp_path / "store" / DB_FILE) as conn:
                conn.execute("ALTER TABLE meta_elsewhere RENAME TO meta")
