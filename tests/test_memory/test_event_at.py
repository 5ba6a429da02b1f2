"""A memory's event time (`event_at`) beside its storage time: stored and read back by every
backend (the contract parametrisation: in_memory, faiss, neo4j), exported and imported, and an
embedded store of the previous schema (user_version 1) opening and gaining the column."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.backends.embedded.database import DB_FILE, SCHEMA_VERSION
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.records_io import record_from_json, record_to_json

MakeClient = Callable[..., MemorySystemClient]
WHEN = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


async def test_event_at_round_trips(make_client: MakeClient) -> None:
    client = make_client()
    cest = timezone(timedelta(hours=2))
    ids = await client.store_many([
        {"content": "the session of 8 May", "event_at": WHEN},
        {"content": "given as epoch seconds", "event_at": WHEN.timestamp() + 60},
        {"content": "an aware datetime elsewhere", "event_at": WHEN.astimezone(cest)},
        {"content": "a naive datetime is UTC", "event_at": WHEN.replace(tzinfo=None)},
        {"content": "no event time"},
    ])
    got = [await client.get(i) for i in ids]
    assert [g.document.event_at for g in got if g is not None] == [
        WHEN, WHEN + timedelta(seconds=60), WHEN, WHEN, None
    ]
    records = await client.backend.get(ids)
    assert [r.event_at for r in records][:2] == [WHEN.timestamp(), WHEN.timestamp() + 60]
    hits = await client.retrieve("the session of 8 May", top_k=1)
    assert hits[0].document.event_at == WHEN


async def test_event_at_survives_export_and_import(make_client: MakeClient) -> None:
    client = make_client()
    rid = await client.store("exported with its event time", event_at=WHEN)
    [record] = await client.backend.get([rid])
    line = record_to_json(record)
    assert line["event_at"] == WHEN.timestamp()
    back = record_from_json(line, "line 1", client.config, client.embedder.dimension)
    assert back.event_at == WHEN.timestamp()


def _make_version_1(folder: Path) -> None:
    """Turn a current store into one of schema version 1: no event_at column."""
    conn = sqlite3.connect(folder / DB_FILE)
    conn.execute("ALTER TABLE records DROP COLUMN event_at")
    conn.execute("PRAGMA user_version=1")
    conn.commit()
    conn.close()


async def test_a_version_1_store_opens_and_gains_event_times(
    tmp_path: Path, embedder: Embedder
) -> None:
    folder = tmp_path / "store"
    config = MemoryConfig(backend="faiss", faiss={"path": str(folder)})
    old = MemorySystemClient(config, session_id="s", embedder=embedder)
    first = await old.store("written before event times existed")
    await old.close()
    _make_version_1(folder)
    conn = sqlite3.connect(folder / DB_FILE)
    assert "event_at" not in {row[1] for row in conn.execute("PRAGMA table_info(records)")}
    conn.close()

    client = MemorySystemClient(config, session_id="s", embedder=embedder)
    try:
        old_hit = await client.get(first)
        assert old_hit is not None and old_hit.document.event_at is None
        second = await client.store("written after the migration", event_at=WHEN)
        got = await client.get(second)
        assert got is not None and got.document.event_at == WHEN
        hits = await client.retrieve("written before event times", top_k=2)
        assert hits[0].id == first
    finally:
        await client.close()
    conn = sqlite3.connect(folder / DB_FILE)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 4
    conn.close()
