"""Fact writes of one namespace from several processes on a real Neo4j: each batch's
resolution, rules and put see every batch committed before it (the namespace's write lock,
neo4j_fact_lock.py), so two service workers never make two entities of one person, two
copies of one fact, or two current jobs of one person."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from neo4j import GraphDatabase

from DeepResearch.src.memory import MemorySystemClient
from DeepResearch.src.memory.backends.neo4j_facts import Neo4jFactStore
from DeepResearch.src.memory.backends.neo4j_store import Neo4jBackend
from DeepResearch.src.memory.errors import MemoryBackendError
from DeepResearch.src.memory.facts.graph import FactGraph
from DeepResearch.src.memory.facts.model import Fact, FactQuery
from DeepResearch.src.memory.facts.store import name_key
from test_memory import fact_lock_worker
from test_memory.neo4j_helpers import backend

pytestmark = [pytest.mark.neo4j, pytest.mark.integration]
NS = "shared-team"
ROUNDS = 20  # without the lock most rounds broke rules (70 of 80 entities were doubled)
WORKERS = 2


@pytest.fixture
async def store(neo4j_clean_uri: str) -> Any:
    b: Neo4jBackend = backend(neo4j_clean_uri)
    await b.open()
    yield b.fact_store()
    await b.close()


def run_workers(uri: str, tmp_path: Path, rounds: int) -> list[dict[str, Any]]:
    """WORKERS spawned processes writing the same rounds at once; their JSON reports."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    outs = [tmp_path / f"worker-{w}.json" for w in range(WORKERS)]
    procs = [
        ctx.Process(target=fact_lock_worker.run, args=(uri, NS, w, rounds, barrier, str(out)))
        for w, out in enumerate(outs)
    ]
    for p in procs:
        p.start()
    deadline = time.monotonic() + 240
    for p in procs:
        p.join(max(1.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    assert [p.exitcode for p in procs] == [0] * WORKERS, "a writer process failed or hung"
    return [json.loads(out.read_text()) for out in outs]


async def test_two_processes_writing_at_once_keep_the_rules(
    neo4j_clean_uri: str, store: Neo4jFactStore, tmp_path: Path
) -> None:
    reports = run_workers(neo4j_clean_uri, tmp_path, ROUNDS)
    problems: list[str] = [e for r in reports for e in r["errors"]]

    async def entity_ids(name: str, type_: str) -> tuple[str, ...]:
        found = await store.entities_by_key(NS, [name_key(name)], [type_])
        if len(found) != 1:
            problems.append(f"entities: {type_} {name!r} is {len(found)} entities")
        return tuple(e.id for e in found)

    for org in fact_lock_worker.ORGS:
        await entity_ids(org, "Organization")
    for r in range(ROUNDS):
        await entity_ids(f"L{r}", "Skill")
        await entity_ids(f"c{r}", "Channel")
        person, author = f"P{r}", f"A{r}"
        ids = {person: await entity_ids(person, "Person"),
               author: await entity_ids(author, "Person")}
        named = {i: name for name, found in ids.items() for i in found}
        of: dict[tuple[str, str], list[Fact]] = {}  # (name, predicate) -> facts, all entities
        for f in await store.find_facts(FactQuery(
                NS, subject_ids=tuple(named), include_history=True, limit=1000)):
            of.setdefault((named[f.subject_id], f.predicate), []).append(f)

        for name, predicate, evidence in (
            (person, "HAS_SKILL", "skill"), (author, "PARTICIPATED_IN", "msg"),
        ):
            found = of.get((name, predicate), [])
            wanted = {f"w{w}-r{r}-{evidence}" for w in range(WORKERS)}
            if len(found) != 1 or set(found[0].evidence) != wanted:
                problems.append(f"repeats: {name} {predicate} is {[f.evidence for f in found]}"
                                f", not one fact with evidence {sorted(wanted)}")
        for name, predicate in ((person, "WORKS_AT"), (person, "LIVES_IN"), (author, "WORKS_AT")):
            found = of.get((name, predicate), [])
            current = [f for f in found if f.invalid_at is None and f.expired_at is None]
            if len(found) != WORKERS or len(current) != 1:
                problems.append(f"single-valued: {name} {predicate}: {len(found)} facts, "
                                f"{len(current)} current ({WORKERS} and 1 expected)")
    # every acknowledged fact is stored, with at least the evidence it was acknowledged with
    acked = [a for r in reports for a in r["acked"]]
    if len(acked) != WORKERS * ROUNDS * 5:
        problems.append(f"{len(acked)} facts acknowledged, {WORKERS * ROUNDS * 5} expected")
    stored = {f.id: f for f in await store.find_facts(FactQuery(
        NS, ids=tuple({a["id"] for a in acked}), include_history=True, limit=100_000))}
    for a in acked:
        if a["id"] not in stored:
            problems.append(f"acknowledged fact {a['id']} ({a['predicate']}) is not stored")
        elif not set(a["evidence"]) <= set(stored[a["id"]].evidence):
            problems.append(f"fact {a['id']} lost acknowledged evidence: {a['evidence']} vs "
                            f"{stored[a['id']].evidence}")
    kinds = Counter(p.split(":")[0] for p in problems)
    assert not problems, f"{len(problems)} broken rule(s) {dict(kinds)}:\n" + "\n".join(
        problems[:40])


# --- the lock itself: bounded wait, released on every path, nothing written without it ----
class GatedEmbedder(fact_lock_worker.HashEmbedder):
    """Embeds as HashEmbedder; `gate` set: waits for it (inside the graph's write lock, where
    the facts' sentences are embedded); `fail` set: raises."""

    def __init__(self) -> None:
        super().__init__()
        self.gate: threading.Event | None = None
        self.entered = threading.Event()
        self.fail = False

    def embed(self, texts: Any) -> Any:
        self.entered.set()
        if self.fail:
            raise RuntimeError("embedding failed on purpose")
        if self.gate is not None:
            self.gate.wait(30)
        return super().embed(texts)


@pytest.fixture
async def make_graph(neo4j_clean_uri: str) -> Any:
    """FactGraph of a namespace on its own client (own connections, like another worker),
    its store waiting at most 1 s for the lock; every client closed at teardown."""
    clients: list[MemorySystemClient] = []

    async def make(namespace: str = NS, *, embedder: Any = None,
                   hold_timeout: float = 3600.0) -> FactGraph:
        client = MemorySystemClient(fact_lock_worker.config(neo4j_clean_uri, namespace),
                                    session_id="s", embedder=embedder or GatedEmbedder())
        clients.append(client)
        await client.open()
        facts = client.backend.fact_store()  # the store FactGraph(client) writes through
        facts.lock_timeout, facts.hold_timeout = 1.0, hold_timeout
        return FactGraph(client)

    yield make
    for client in clients:
        await client.close()


def job(name: str, org: str = "Acme") -> dict[str, Any]:
    return {"subject": name, "predicate": "WORKS_AT", "object": org, "confidence": 0.9,
            "evidence": f"m-{name}"}


async def transactions(uri: str, expected: list[str], within: float = 5.0) -> list[str]:
    """The queries of the server's open transactions but this one's, once they are
    `expected` or `within` seconds have passed (the event loop closes a killed connection's
    socket on its next turns, and the server notices a moment later)."""
    deadline = time.monotonic() + within
    while True:
        rows = await asyncio.to_thread(
            cypher, uri, "SHOW TRANSACTIONS YIELD currentQuery RETURN currentQuery AS q")
        found = [r["q"] for r in rows if "SHOW TRANSACTIONS" not in r["q"]]
        if found == expected or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.1)


def cypher(uri: str, query: str, **params: Any) -> list[Any]:
    with GraphDatabase.driver(uri, auth=None) as driver:
        return driver.execute_query(query, params).records


async def people(graph: FactGraph) -> list[str]:
    store = await graph.store()
    return sorted(name for _, name in await store.entity_keys(graph.namespace, ["Person"]))


async def test_a_lock_held_elsewhere_fails_clearly_after_the_timeout_and_writes_nothing(
    make_graph: Any, neo4j_clean_uri: str
) -> None:
    graph = await make_graph()
    await graph.add_facts([job("ann")])
    store = await graph.store()
    other = await make_graph("another-team")
    with GraphDatabase.driver(neo4j_clean_uri, auth=None) as driver, driver.session() as s:
        holder = s.begin_transaction()  # another process's batch, taking long
        holder.run(store.fq.write_lock, namespace=NS).consume()
        started = time.monotonic()
        with pytest.raises(MemoryBackendError, match=(
                r"the fact write lock of namespace 'shared-team' could not be taken within "
                r"1 s: another writer .* holds it\. Nothing was written")):
            await graph.add_facts([job("bob"), job("cid", "Initech")])
        assert time.monotonic() - started < 5
        # the holder's (idle) transaction only: the waiter's was dropped
        assert await transactions(neo4j_clean_uri, [""]) == [""]
        # the lock is per namespace: another one's writes go on meanwhile
        await other.add_facts([job("dan")])
        holder.rollback()
    assert await people(graph) == ["ann"]
    assert [f.subject for f in await graph.facts(include_history=True)] == ["ann"]
    assert await people(other) == ["dan"]
    await graph.add_facts([job("bob")])  # free again
    assert await people(graph) == ["ann", "bob"]


async def test_the_lock_is_released_on_errors_and_cancellation(
    make_graph: Any, neo4j_clean_uri: str
) -> None:
    embedder = GatedEmbedder()
    graph = await make_graph(embedder=embedder)
    other = await make_graph()  # another worker of the same namespace
    # an error inside the block (the sentences cannot be embedded): nothing written, released
    embedder.fail = True
    with pytest.raises(RuntimeError, match="on purpose"):
        await graph.add_facts([job("ann")])
    embedder.fail = False
    await other.add_facts([job("bob")])
    # cancelled while holding the lock (the put not yet made): released, nothing written
    embedder.gate, embedder.entered = threading.Event(), threading.Event()
    task = asyncio.create_task(graph.add_facts([job("cid")]))
    await asyncio.to_thread(embedder.entered.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    embedder.gate.set()
    embedder.gate = None
    await other.add_facts([job("dan")])
    # cancelled while waiting for the lock: the waiting transaction goes too
    with GraphDatabase.driver(neo4j_clean_uri, auth=None) as driver, driver.session() as s:
        holder = s.begin_transaction()
        holder.run((await graph.store()).fq.write_lock, namespace=NS).consume()
        task = asyncio.create_task(graph.add_facts([job("eve")]))
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await transactions(neo4j_clean_uri, [""]) == [""]
        holder.rollback()
    await graph.add_facts([job("fay")])  # this process's own lock and connection work on
    assert await people(graph) == ["bob", "dan", "fay"]


async def test_a_lock_lost_before_the_put_writes_nothing(make_graph: Any) -> None:
    """The server ends a block that holds the lock past hold_timeout; its put, which runs in
    the lock's transaction, then fails: no batch is ever written without the lock."""
    embedder = GatedEmbedder()
    graph = await make_graph(embedder=embedder, hold_timeout=1.0)
    embedder.gate = threading.Event()
    # the batch takes 5 s: past the 1 s limit and the server's next check of it (every 2 s)
    threading.Timer(5.0, embedder.gate.set).start()
    with pytest.raises(MemoryBackendError,
                       match=r"holding the fact write lock of 'shared-team'.*TransactionTimedOut"):
        await graph.add_facts([job("ann")])
    embedder.gate = None
    assert await people(graph) == []
    assert await graph.facts(include_history=True) == []
    other = await make_graph()  # the lock is free (the server ended its transaction)
    await other.add_facts([job("bob")])
    assert await people(graph) == ["bob"]
