"""client.archive / restore / archived, forget(archived=True) and the archive's retention, on
every backend: an archived memory is out of every read of its namespace, comes back whole
(its own vector, no re-embedding), and the facts citing it keep their evidence."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from DeepResearch.src.memory import MemoryConfig, MemoryConfigError, MemorySystemClient
from DeepResearch.src.memory.backends.embedded.database import DB_FILE
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.facts.graph import FactGraph
from DeepResearch.src.memory.facts.model import FactQuery

MakeClient = Callable[..., MemorySystemClient]


def _unit(seed: int, dimension: int) -> np.ndarray:
    """A vector no model gives for the texts below: re-embedding would change it."""
    v = np.random.default_rng(seed).standard_normal(dimension).astype(np.float32)
    return v / np.linalg.norm(v)


async def _evidence(graph: FactGraph) -> dict[str, list[str]]:
    store = await graph.store()
    facts = await store.find_facts(FactQuery(graph.namespace, include_history=True))
    return {f.id: sorted(f.evidence) for f in facts}


async def _ids(client: MemorySystemClient, query: str, **kwargs) -> set[str]:
    return {m.id for m in await client.retrieve(query, top_k=50, all_sessions=True, **kwargs)}


async def test_an_archived_memory_leaves_every_read_and_comes_back_whole(
    make_client: MakeClient,
) -> None:
    client = make_client(namespace="alice")
    own = _unit(7, client.embedder.dimension)
    await client.store("Ann teaches the pottery class on tuesdays", id="a", vector=own,
                       session_id="s1", metadata={"topic": "pottery"})
    await client.store("Ann plans a camping trip after the pottery class", id="b",
                       session_id="s1", relations=[("references", "a")])
    await client.store("the sourdough starter needs feeding", id="c", session_id="s1")
    graph = FactGraph(client)
    fact = await graph.add_fact("Ann", "HAS_SKILL", "pottery", confidence=0.9, evidence="a")
    total = (await client.stats()).total
    (stored,) = await client.backend.get(["a"], "alice")
    assert "a" in await _ids(client, "pottery class") and "a" in await _ids(
        client, "anything", query_vector=own)

    assert await client.archive(["a", "missing"], reason="superseded") == 1
    assert "a" not in await _ids(client, "pottery class tuesdays")
    assert "a" not in await _ids(client, "anything", query_vector=own)
    assert "a" not in await _ids(client, "pottery", filters={"topic": "pottery"})
    assert await client.get("a") is None
    assert [m.id for m in await client.get_related_memories("b", ["references"])] == []
    stats = await client.stats()
    assert (stats.total, stats.archived) == (total - 1, 1)
    (doc,) = await client.archived()
    assert doc.id == "a" and doc.content.startswith("Ann teaches")
    assert doc.metadata["archive_reason"] == "superseded"
    assert abs(doc.metadata["archived_at"] - time.time()) < 60
    assert doc.metadata["topic"] == "pottery"
    assert (await _evidence(graph))[fact.id] == ["a"]  # facts keep their evidence

    assert await client.restore(["a"]) == 1
    back = await client.get("a")
    assert back is not None and back.metadata == {"topic": "pottery"}
    (record,) = await client.backend.get(["a"], "alice")
    assert np.array_equal(record.vector, stored.vector)  # its own vector, not re-embedded
    assert np.allclose(record.vector, own, atol=1e-6)
    assert "a" in await _ids(client, "anything", query_vector=own)
    assert "a" in await _ids(client, "pottery class tuesdays")
    assert [m.id for m in await client.get_related_memories("b", ["references"])] == ["a"]
    assert (await client.stats()).archived == 0 and await client.archived() == []
    assert (await _evidence(graph))[fact.id] == ["a"]


async def test_forget_archived_deletes_from_the_archive_only(make_client: MakeClient) -> None:
    client = make_client(namespace="alice")
    await client.store("Bo keeps bees on the roof", id="a", session_id="s1")
    await client.store("Bo sells honey at the market", id="b", session_id="s1")
    graph = FactGraph(client)
    fact = await graph.add_fact("Bo", "HAS_SKILL", "beekeeping", confidence=0.9, evidence="a")
    await client.archive(["a"], reason="old")
    assert await client.forget(["a"]) == 0  # a live forget does not reach the archive
    assert (await client.stats()).archived == 1
    # "a", and the sentence memory of the fact it was the only evidence of
    assert await client.forget(["a", "b"], archived=True) == 2
    assert (await client.stats()).archived == 0 and await client.get("b") is not None
    assert fact.id not in await _evidence(graph)  # its only evidence is gone: the fact too
    assert await client.restore(["a"]) == 0


async def test_expire_purges_archived_memories_past_the_retention(
    make_client: MakeClient,
) -> None:
    client = make_client(namespace="alice", archive={"retention_days": 1})
    for i in range(3):
        await client.store(f"note number {i} about the garden", id=f"n{i}", session_id="s1")
    await client.archive(["n0", "n1"], reason="stale")
    assert await client.expire() == 0
    assert await client.expire(now=time.time() + 2 * 86400) == 2
    assert await client.archived() == [] and await client.get("n2") is not None
    keep = make_client(namespace="bob")  # retention null: kept forever
    await keep.store("kept", id="k", session_id="s1")
    await keep.archive(["k"], reason="stale")
    assert await keep.expire(now=time.time() + 1e6 * 86400) == 0
    assert [d.id for d in await keep.archived()] == ["k"]


def test_the_retention_setting_is_checked() -> None:
    for bad in (-1, 0, "soon"):
        with pytest.raises(MemoryConfigError, match=r"memory\.archive\.retention_days="):
            MemoryConfig(archive={"retention_days": bad})
    with pytest.raises(MemoryConfigError, match=r"memory\.archive\.keep=3: unknown key"):
        MemoryConfig(archive={"keep": 3})
    assert MemoryConfig(archive={"retention_days": 30}).archive.retention_days == 30


async def test_archive_arguments_are_checked(make_client: MakeClient) -> None:
    client = make_client(namespace="alice")
    with pytest.raises(MemoryInputError, match="list of memory ids"):
        await client.archive("a", reason="x")
    with pytest.raises(MemoryInputError, match="reason"):
        await client.archive(["a"], reason="")
    with pytest.raises(MemoryInputError, match="not a valid id"):
        await client.restore(["a b"])
    with pytest.raises(MemoryInputError, match="limit"):
        await client.archived(limit=-1)


async def test_pin_and_unpin_set_and_clear_the_pinned_flag(make_client: MakeClient) -> None:
    client = make_client(namespace="alice")
    await client.store("the lab's door code is 4711", id="a", session_id="s1",
                       metadata={"source": "wiki"})
    await client.store("lunch is at noon", id="b", session_id="s1")
    await client.flush()  # the vectors filled: `before` holds a's
    (before,) = await client.backend.get(["a"], "alice")
    assert await client.pin(["a", "missing"]) == 1
    pinned = await client.get("a")
    assert pinned is not None and pinned.metadata == {"source": "wiki", "pinned": True}
    (after,) = await client.backend.get(["a"], "alice")
    assert np.array_equal(after.vector, before.vector) and after.relations == before.relations
    assert "a" in await _ids(client, "door code")
    assert [m.id for m in await client.get_related_memories("b")] == ["a"]  # FOLLOWS kept
    assert await client.unpin(["a"]) == 1
    assert (await client.get("a")).metadata == {"source": "wiki"}
    await client.archive(["b"], reason="old")
    assert await client.pin(["b"]) == 0  # an archived memory is restored first
    with pytest.raises(MemoryInputError, match="list of memory ids"):
        await client.pin("a")


def _db_path(client: MemorySystemClient) -> Path:
    return Path(client.config.faiss.path) / DB_FILE


async def _live(client: MemorySystemClient) -> dict[str, dict]:
    """{id: metadata} of the live memories "a" and "b"."""
    return {i: m.metadata for i in ("a", "b") if (m := await client.get(i)) is not None}


async def _archivable(client: MemorySystemClient) -> dict[str, dict]:
    await client.store("Cy repairs bicycles in the garage", id="a", session_id="s1",
                       metadata={"topic": "bikes"})
    await client.store("Cy grows tomatoes on the balcony", id="b", session_id="s1")
    await client.flush()
    return await _live(client)


async def _unchanged(client: MemorySystemClient, before: dict[str, dict]) -> None:
    """Nothing moved, nothing patched: both live, as before, found by their own vector."""
    assert await _live(client) == before and len(before) == 2
    assert await client.archived() == [] and (await client.stats()).archived == 0
    (record,) = await client.backend.get(["a"], "alice")
    assert "a" in await _ids(client, "anything", query_vector=record.vector)


@pytest.mark.parametrize("backend_name", ["faiss"])
async def test_archive_fails_whole_while_another_process_holds_the_write_lock(
    make_client: MakeClient,
) -> None:
    """Another process holds SQLite's write lock (BEGIN IMMEDIATE): the archive's one
    transaction cannot start, so nothing is moved and nothing patched; once the lock is
    released the same archive moves and marks both."""
    client = make_client(namespace="alice", faiss={"busy_timeout": 0.2})
    before = await _archivable(client)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys\n"
         "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); sys.stdin.read()",
         str(_db_path(client))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(MemoryBackendError, match="locked"):
            await client.archive(["a", "b"], reason="old")
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    await _unchanged(client, before)
    assert await client.archive(["a", "b"], reason="old") == 2
    docs = {d.id: d.metadata for d in await client.archived()}
    assert {i: (m["archive_reason"], "archived_at" in m) for i, m in docs.items()} == {
        "a": ("old", True), "b": ("old", True)}


# Real SQLite triggers, installed by another connection, that refuse a write of the records
# table: an archived row without "archived_at", or a live row still carrying it.
REFUSE = """
CREATE TRIGGER refuse_{event} BEFORE {event} ON records WHEN {when}
BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;
"""
HALF = {
    "archive": "NEW.namespace = 'alice~archive' AND json_extract(NEW.metadata, '$.archived_at') "
               "IS NOT NULL",
    "restore": "NEW.namespace = 'alice' AND json_extract(NEW.metadata, '$.archived_at') IS NULL",
}


@pytest.mark.parametrize("backend_name", ["faiss"])
@pytest.mark.parametrize("step", ["archive", "restore"])
async def test_a_write_refused_mid_archive_leaves_the_old_state_whole(
    make_client: MakeClient, step: str
) -> None:
    """The database refuses to write the end state of the step (an archived memory with
    "archived_at"; a restored one without it): the move and the metadata are one
    transaction, so the memories stay where and as they were, never moved but unmarked."""
    client = make_client(namespace="alice")
    before = await _archivable(client)
    if step == "restore":
        assert await client.archive(["a", "b"], reason="old") == 2
        before = {d.id: d.metadata for d in await client.archived()}
    with closing(sqlite3.connect(_db_path(client), isolation_level=None)) as db:
        db.executescript("".join(REFUSE.format(event=e, when=HALF[step])
                                 for e in ("INSERT", "UPDATE")))
        with pytest.raises(MemoryBackendError, match="refused by the test"):
            if step == "archive":
                await client.archive(["a", "b"], reason="old")
            else:
                await client.restore(["a", "b"])
        db.executescript("DROP TRIGGER refuse_INSERT; DROP TRIGGER refuse_UPDATE;")
    if step == "archive":
        await _unchanged(client, before)
    else:
        assert {d.id: d.metadata for d in await client.archived()} == before
        assert await _live(client) == {}
    assert await (client.archive(["a", "b"], reason="old") if step == "archive"
                  else client.restore(["a", "b"])) == 2


@pytest.mark.parametrize("backend_name", [pytest.param("neo4j", marks=pytest.mark.neo4j)])
async def test_a_constraint_refusing_the_mark_leaves_the_neo4j_archive_untouched(
    make_client: MakeClient,
) -> None:
    """A uniqueness constraint (created by another driver) on the filter property of
    "archive_reason" refuses two memories archived with one reason: the move and the
    metadata are one transaction, so both stay live and unmarked."""
    from neo4j import GraphDatabase

    client = make_client(namespace="alice")
    before = await _archivable(client)
    label = client.config.neo4j.node_label
    with GraphDatabase.driver(client.config.neo4j.uri, auth=None) as driver:
        driver.execute_query(f"CREATE CONSTRAINT refuse_one_reason FOR (m:{label}) "
                             "REQUIRE m.`md.archive_reason` IS UNIQUE")
        try:
            with pytest.raises(MemoryInputError, match="ConstraintValidationFailed"):
                await client.archive(["a", "b"], reason="old")  # the server refuses the data
        finally:
            driver.execute_query("DROP CONSTRAINT refuse_one_reason")
    await _unchanged(client, before)
    assert await client.archive(["a", "b"], reason="old") == 2
