"""Namespaces on a real Neo4j: a hard boundary for every read, count, delete and relation
walk, and an id of one namespace is never overwritten from another."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from neo4j import GraphDatabase

from DeepResearch.src.memory.backends.base import MemoryFilter
from DeepResearch.src.memory.backends.neo4j_store import Neo4jBackend
from test_memory.neo4j_helpers import LABEL, backend, record, unit

pytestmark = [pytest.mark.neo4j, pytest.mark.integration]
ALICE = MemoryFilter(namespaces=("alice",))
BOB = MemoryFilter(namespaces=("bob",))


@pytest.fixture
async def store(neo4j_clean_uri: str) -> AsyncIterator[Neo4jBackend]:
    b = backend(neo4j_clean_uri)
    await b.open()
    yield b
    await b.close()


async def twins(store: Neo4jBackend) -> None:
    """The same three memories (content, vectors, session, relations) in both namespaces."""
    for ns in ("alice", "bob"):
        await store.upsert([
            record(f"{ns}-1", namespace=ns, content="STAR aligns RNA-seq reads", seed=1,
                   created_at=1.0),
            record(f"{ns}-2", namespace=ns, content="BWA maps DNA reads", seed=2, created_at=2.0,
                   relations=[("follows", f"{ns}-1")]),
            record(f"{ns}-3", namespace=ns, content="Salmon counts reads", seed=3, created_at=3.0,
                   relations=[("follows", f"{ns}-2")]),
        ])


async def test_reads_counts_and_searches_stay_inside_the_namespace(store: Neo4jBackend) -> None:
    await twins(store)
    assert [r.id for r in await store.scan(ALICE)] == ["alice-1", "alice-2", "alice-3"]
    assert [r.namespace for r in await store.scan(BOB)] == ["bob"] * 3
    assert await store.count(ALICE) == 3 and await store.count(MemoryFilter()) == 6
    assert await store.count(MemoryFilter(namespaces=("carol",))) == 0

    dense = await store.vector_search(unit(1), 6, ALICE)
    assert {c.record.id for c in dense} == {"alice-1", "alice-2", "alice-3"}
    assert dense[0].record.id == "alice-1" and dense[0].score == pytest.approx(1.0, abs=1e-5)
    lexical = await store.text_search("reads", 6, BOB)
    assert {c.record.id for c in lexical} == {"bob-1", "bob-2", "bob-3"}
    session = MemoryFilter(namespaces=("bob",), session_ids=("s1",))  # the exact-scan path
    assert {c.record.id for c in await store.vector_search(unit(1), 6, session)} == {
        "bob-1", "bob-2", "bob-3"
    }
    both = MemoryFilter(namespaces=("alice", "bob"))
    assert len(await store.vector_search(unit(1), 6, both)) == 6


async def test_a_small_namespace_among_many_still_finds_k(store: Neo4jBackend) -> None:
    # 400 memories of one namespace right around the query, 5 of another far from it: the
    # index's nearest hits are all of the big one, so the search must fetch further.
    query = unit(7)
    await store.upsert(
        [record(f"big{i}", namespace="big", vector=unit(list(query + 0.01 * unit(i))))
         for i in range(400)]
    )
    await store.upsert([record(f"small{i}", namespace="small", vector=-unit(500 + i))
                        for i in range(5)])
    found = await store.vector_search(query, 3, MemoryFilter(namespaces=("small",)))
    assert len(found) == 3 and all(c.record.namespace == "small" for c in found)


async def test_delete_removes_only_its_namespace(store: Neo4jBackend) -> None:
    await twins(store)
    assert await store.delete(MemoryFilter(namespaces=("alice",), session_ids=("s1",))) == 3
    assert await store.count(ALICE) == 0
    assert [r.id for r in await store.scan(BOB)] == ["bob-1", "bob-2", "bob-3"]
    walk = await store.related_many(["bob-1"], None, 2, BOB)
    assert [r.record.id for r in walk["bob-1"]] == ["bob-2", "bob-3"]


async def test_relation_walks_never_reach_or_cross_another_namespace(
    store: Neo4jBackend,
) -> None:
    await twins(store)
    # alice-3 -> "bob-1": an id of alice's namespace (a placeholder), never bob's memory
    await store.upsert([record("alice-3", namespace="alice", content="Salmon counts reads",
                               seed=3, created_at=3.0,
                               relations=[("follows", "alice-2"), ("references", "bob-1")])])
    walk = await store.related_many(["alice-3"], None, 3, ALICE)
    assert [(r.record.id, r.depth) for r in walk["alice-3"]] == [("alice-2", 1), ("alice-1", 2)]
    assert await store.related_many(["alice-3"], None, 2, None) == {}  # not in "default"
    # from bob's side the walk may not step onto alice-3 and beyond
    assert {r.record.id for r in (await store.related_many(["bob-1"], None, 3, BOB))["bob-1"]} \
        == {"bob-2", "bob-3"}
    # a start of another namespace walks nowhere
    assert await store.related_many(["bob-1"], None, 3, ALICE) == {}
    assert await store.session_neighbours(["alice-2"], 2, BOB) == {}
    near = await store.session_neighbours(["alice-2"], 2, ALICE)
    assert {r.record.id for r in near["alice-2"]} == {"alice-1", "alice-3"}


async def test_the_same_id_in_two_namespaces_is_two_nodes(
    store: Neo4jBackend, neo4j_clean_uri: str
) -> None:
    await store.upsert([record("shared-id", namespace="alice", content="alice's own")])
    await store.upsert([record("shared-id", namespace="bob", content="bob's own",
                               relations=[("follows", "prev")]),
                        record("twice", namespace="alice"), record("twice", namespace="bob")])
    [a] = await store.get(["shared-id"], "alice")
    [b] = await store.get(["shared-id"], "bob")
    assert (a.content, a.relations, b.content) == ("alice's own", [], "bob's own")
    await store.upsert([record("shared-id", namespace="alice", content="alice updates it")])
    assert (await store.get(["shared-id"], "alice"))[0].content == "alice updates it"
    assert (await store.get(["shared-id"], "bob"))[0].content == "bob's own"
    assert await store.count(MemoryFilter(ids=("twice",))) == 2
    assert await store.delete(MemoryFilter(namespaces=("bob",), ids=("shared-id",))) == 1
    assert (await store.get(["shared-id"], "alice"))[0].content == "alice updates it"
    with GraphDatabase.driver(neo4j_clean_uri, auth=None) as driver:
        constraints = driver.execute_query(
            "SHOW CONSTRAINTS YIELD labelsOrTypes, properties, type "
            "WHERE type = 'UNIQUENESS' RETURN labelsOrTypes[0] AS label, properties").records
    scoped = {(c["label"], tuple(c["properties"])) for c in constraints}
    assert (store.q.label, ("namespace", "id")) in scoped
    assert (store.q.label, ("id",)) not in scoped


async def test_memories_written_before_namespaces_join_the_default_one(
    neo4j_clean_uri: str,
) -> None:
    store = backend(neo4j_clean_uri)
    await store.open()
    await store.upsert([record("old", content="written by an older version")])
    await store.close()
    with GraphDatabase.driver(neo4j_clean_uri, auth=None) as driver:  # as an older version left it
        driver.execute_query(f"MATCH (m:{LABEL}) REMOVE m.namespace")
        driver.execute_query(f"DROP INDEX {LABEL}_namespace")
    await store.open()
    try:
        assert [r.id for r in await store.scan(MemoryFilter(namespaces=("default",)))] == ["old"]
    finally:
        await store.close()


async def test_similar_to_links_stay_inside_the_namespace(neo4j_clean_uri: str) -> None:
    store = backend(neo4j_clean_uri, similarity_to_threshold=0.9)
    await store.open()
    try:
        await store.upsert([record("a1", namespace="alice", seed=5)])
        await store.upsert([record("b1", namespace="bob", seed=5)])
        await store.upsert([record("a2", namespace="alice", seed=5)])
    finally:
        await store.close()
    with GraphDatabase.driver(neo4j_clean_uri, auth=None) as driver:
        edges = driver.execute_query(
            f"MATCH (x:{LABEL})-[:SIMILAR_TO]->(y:{LABEL}) RETURN x.id AS x, y.id AS y"
        ).records
    assert [(e["x"], e["y"]) for e in edges] == [("a2", "a1")]


async def test_a_database_with_id_only_constraints_is_converted(neo4j_clean_uri: str) -> None:
    """A database set up when ids were unique across namespaces: its id-only constraints go,
    a placeholder takes the namespace of the memory pointing at it, and another namespace
    can then write the same ids."""
    with GraphDatabase.driver(neo4j_clean_uri, auth=None) as driver:
        for label in (LABEL, f"{LABEL}Pending"):
            driver.execute_query(f"CREATE CONSTRAINT `{label}_id_unique` IF NOT EXISTS "
                                 f"FOR (m:`{label}`) REQUIRE m.id IS UNIQUE")
    first = backend(neo4j_clean_uri)
    await first.open()
    await first.upsert([record("m1", namespace="alice", relations=[("follows", "m0")])])
    await first.close()
    with GraphDatabase.driver(neo4j_clean_uri, auth=None) as driver:
        driver.execute_query(f"MATCH (p:`{LABEL}Pending`) REMOVE p.namespace")
        for label in (LABEL, f"{LABEL}Pending"):
            driver.execute_query(f"DROP CONSTRAINT `{label}_namespace_id_unique` IF EXISTS")
            driver.execute_query(f"CREATE CONSTRAINT `{label}_id_unique` IF NOT EXISTS "
                                 f"FOR (m:`{label}`) REQUIRE m.id IS UNIQUE")
    b = backend(neo4j_clean_uri)
    await b.open()
    try:
        await b.upsert([record("m1", namespace="bob"), record("m0", namespace="bob")])
        await b.upsert([record("m0", namespace="alice", content="alice's first")])
        walk = await b.related_many(["m1"], None, 1, ALICE)
        assert [(r.record.namespace, r.record.content) for r in walk["m1"]] == [
            ("alice", "alice's first")]
        assert await b.count(MemoryFilter(ids=("m0", "m1"))) == 4
    finally:
        await b.close()
