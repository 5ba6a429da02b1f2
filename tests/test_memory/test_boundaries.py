"""Namespaces, ids and limits, on every backend: nothing crosses a namespace, nothing
unreasonable gets in, and a bad record already in the store is skipped, not served."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from uuid import uuid4

import numpy as np
import pytest

from DeepResearch.src.memory import MemoryInputError, MemorySubsystemError, MemorySystemClient
from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord
from DeepResearch.src.memory.inputs import MAX_METADATA_DEPTH

MakeClient = Callable[..., MemorySystemClient]


async def test_a_namespace_is_a_hard_boundary(make_client: MakeClient) -> None:
    alice, bob = make_client(namespace="alice"), make_client(namespace="bob")
    secret = await alice.store("alice secret: the vault code is 1234", session_id="shared")
    linked = await alice.store("alice follow-up on the vault", session_id="shared")
    mine = await bob.store("bob note: the vault code changes monthly", session_id="shared")
    for scope in ({}, {"session_id": "shared"}, {"all_sessions": True}):
        found = await bob.retrieve("vault code", top_k=10, **scope)
        assert [r.id for r in found] == [mine], scope
    assert await bob.retrieve("vault", filters={"session_id": "shared"}) != []
    assert all(r.id == mine for r in await bob.retrieve("vault", filters={"id": [secret, mine]}))
    assert await bob.get(secret) is None
    assert await bob.get_related_memories(linked) == []
    assert (await bob.stats()).total == 1
    assert await bob.forget([secret, linked]) == 0
    assert await bob.forget(filters={"session_id": "shared"}) == 1  # bob's own only
    assert await bob.forget(everything=True) == 0
    assert {r.id for r in await alice.retrieve("vault", top_k=10)} == {secret, linked}
    # A program that stores, restarts and retrieves finds what it stored (default scope).
    if alice.config.backend == "in_memory":
        return  # nothing outlives its client there
    again = make_client(namespace="alice")
    assert {r.id for r in await again.retrieve("vault code", top_k=10)} == {secret, linked}


async def test_ids_and_namespaces_use_a_safe_alphabet(make_client: MakeClient) -> None:
    client = make_client()
    for bad in ("team/alice", "..", "a..b", "x\x00y", "quote'd", "new\nline", "a" * 201, ""):
        with pytest.raises(MemoryInputError, match="not a valid id"):
            await client.store("some text", session_id=bad)
        with pytest.raises(MemorySubsystemError):
            make_client(namespace=bad)
    ok = await client.store("some text", session_id="user@example.com:run-1.2_x")
    assert (await client.get(ok)).document.session_id == "user@example.com:run-1.2_x"


async def test_metadata_limits_and_keys(make_client: MakeClient) -> None:
    client = make_client()
    deep: dict = {}
    node = deep
    for _ in range(5000):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(MemoryInputError, match=f"deeper than {MAX_METADATA_DEPTH}"):
        await client.store("deep", metadata=deep)
    with pytest.raises(MemoryInputError, match="bytes as JSON"):
        await client.store("big", metadata={"blob": "x" * (50 * 1024 * 1024)})
    with pytest.raises(MemoryInputError, match="disagrees"):
        await client.store("shadow", agent_type="executor", metadata={"agent_type": "planner"})
    with pytest.raises(MemoryInputError, match="control characters"):
        await client.store("nul", metadata={"bad\x00key": 1})
    assert (await client.stats()).total == 0  # nothing half-written


async def test_metadata_keys_named_like_record_fields_are_those_fields(
    client: MemorySystemClient,
) -> None:
    """Seed 000's code passes agent_type, session_id, memory_type, importance in metadata. A
    key the call leaves unset sets the field; an equal one is accepted; the record's field
    wins and a different value is refused naming both; the key leaves the metadata."""
    planner = await client.store(
        "Planner created execution plan",
        metadata={"agent_type": "planner", "session_id": client.session_id, "node": "PlanNode"},
    )
    await client.store("Executor ran BWA tool", metadata={"agent_type": "executor"})
    trace = await client.store(
        "BWA trace", agent_type="executor",
        metadata={"agent_type": "executor", "memory_type": "execution_trace", "importance": 0.8},
    )
    found = await client.retrieve("execution", filters={"agent_type": "planner"}, top_k=5)
    assert [m.id for m in found] == [planner]
    assert found[0].metadata == {"node": "PlanNode"}
    [record] = await client.backend.get([trace])
    assert (record.agent_type, record.memory_type, record.importance, record.metadata) == (
        "executor", "execution_trace", 0.8, {})
    with pytest.raises(MemoryInputError, match=(
            r"metadata agent_type='executor' disagrees with the record's agent_type='planner'")):
        await client.store("x", agent_type="planner", metadata={"agent_type": "executor"})
    with pytest.raises(MemoryInputError, match=(
            rf"metadata session_id='elsewhere' disagrees with the record's session_id="
            rf"'{client.session_id}'")):
        await client.store("x", metadata={"session_id": "elsewhere"})
    with pytest.raises(MemoryInputError, match="give ttl"):
        await client.store("x", metadata={"expires_at": 5.0})
    assert (await client.stats()).total == 3


async def test_top_k_is_bounded(client: MemorySystemClient) -> None:
    await client.store("a note about STAR")
    for bad in (10**9, 0, -1, True, 2.5):
        with pytest.raises(MemoryInputError, match="top_k"):
            await client.retrieve("STAR", top_k=bad)
    assert len(await client.retrieve("STAR", top_k=1000)) == 1


async def test_a_bad_stored_record_is_skipped_not_served(
    client: MemorySystemClient, caplog: pytest.LogCaptureFixture
) -> None:
    good = await client.store("kallisto quantifies transcripts quickly")
    await client.flush()  # its vector filled: the template below needs it
    # Written around the client's checks (by hand, or by an older version): importance 5.0
    # and a vector of norm 1e6 that would otherwise rank for anything.
    template = (await client.backend.get([good]))[0]
    bad_id = f"bad-{uuid4().hex}"  # warnings are once per record id and process
    bad = dataclasses.replace(
        template, id=bad_id, importance=5.0, created_at=time.time(),
        content="kallisto, salmon and anything else", relations=[],
        vector=np.full(template.vector.shape, 1e6 / np.sqrt(template.vector.shape[0]), dtype=np.float32),
    )
    await client.backend.upsert([bad])
    for _ in range(2):
        found = await client.retrieve("kallisto", top_k=10)
        assert [r.id for r in found] == [good]
    assert await client.get(bad_id) is None
    warnings = [r for r in caplog.records if bad_id in r.getMessage()]
    assert len(warnings) == 1 and "importance=5.0" in warnings[0].getMessage()


async def test_import_stays_inside_the_client_namespace(make_client: MakeClient) -> None:
    client = make_client(namespace="alice")
    await client.open()
    foreign = MemoryRecord(id="x1", session_id="s", memory_type="note", content="c",
                           created_at=time.time(), namespace="bob",
                           vector=np.eye(client.embedder.dimension, dtype=np.float32)[0])
    with pytest.raises(MemoryInputError, match="namespace"):
        await client.import_records([foreign])
    assert await client.backend.count(MemoryFilter()) == 0


async def test_the_same_id_in_two_namespaces_is_two_memories(make_client: MakeClient) -> None:
    alice, bob = make_client(namespace="alice"), make_client(namespace="bob")
    if alice.config.backend == "in_memory":
        pytest.skip("each in_memory client has a store of its own")
    await alice.store("alice's original note", id="note-1")
    await bob.store("bob's own note", id="note-1")
    assert (await alice.get("note-1")).document.content == "alice's original note"
    assert (await bob.get("note-1")).document.content == "bob's own note"
    assert await bob.forget(["note-1"]) == 1
    assert (await alice.get("note-1")).document.content == "alice's original note"
