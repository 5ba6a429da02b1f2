"""The neo4j FactStore on a real Neo4j: put / find / history, the graph it writes, namespace
isolation, all-or-nothing puts and the per-call timeout (tests/neo4j_support.py)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from neo4j import GraphDatabase

from DeepResearch.src.memory.backends.base import MemoryFilter
from DeepResearch.src.memory.backends.neo4j_facts import Neo4jFactStore
from DeepResearch.src.memory.backends.neo4j_store import Neo4jBackend
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.facts.model import FACT_MEMORY_TYPE, Entity, Fact, FactQuery
from test_memory.neo4j_helpers import LABEL, backend, record, unit

pytestmark = [pytest.mark.neo4j, pytest.mark.integration]
NS = "team"
E, F = f"{LABEL}Entity", f"{LABEL}Fact"  # the labels derived from the test memory label


@pytest.fixture
async def pair(neo4j_clean_uri: str) -> AsyncIterator[tuple[Neo4jBackend, Neo4jFactStore]]:
    b = backend(neo4j_clean_uri)
    await b.open()
    yield b, b.fact_store()
    await b.close()


def person(eid: str, name: str, ns: str = NS, **kw: Any) -> Entity:
    return Entity(id=eid, namespace=ns, type=kw.pop("type", "Person"), name=name,
                  created_at=1.0, **kw)


def fact(fid: str, subject: str, predicate: str, obj: str | None = None, ns: str = NS,
         **kw: Any) -> Fact:
    return Fact(id=fid, namespace=ns, subject_id=subject, predicate=predicate, object_id=obj,
                object_value=kw.pop("value", None), confidence=kw.pop("confidence", 0.9),
                evidence=kw.pop("evidence", ("m1",)), created_at=kw.pop("created_at", 10.0), **kw)


def sentence(fid: str, text: str, ns: str = NS, seed: int = 0) -> Any:
    return record(fid, namespace=ns, content=text, seed=seed, memory_type=FACT_MEMORY_TYPE)


def cypher(uri: str, query: str, **params: Any) -> list[Any]:
    with GraphDatabase.driver(uri, auth=None) as driver:
        return driver.execute_query(query, params).records


async def seed_team(store: Neo4jFactStore) -> None:
    await store.put(
        entities=[
            person("alice", "Alice", real_name="Alice Johnson", aliases=("Ali",),
                   attributes={"role": "lead"}),
            person("bob", "Bob"),
            person("google", "Google", type="Organization"),
            person("acme", "ACME  Corp", type="Organization"),
        ],
        facts=[
            fact("f1", "alice", "WORKS_AT", "acme", valid_at=100.0, invalid_at=200.0),
            fact("f2", "alice", "WORKS_AT", "google", valid_at=200.0),
            fact("f3", "alice", "HAS_SKILL", value="Rust", confidence=0.5,
                 attributes={"years": 3}),
            fact("f4", "bob", "WORKS_AT", "google", valid_at=150.0, evidence=("m2", "m3")),
            fact("f5", "bob", "LIVES_IN", value="Paris", valid_at=50.0, expired_at=300.0),
        ],
        memories=[
            sentence("f1", "Alice worked at ACME", seed=1),
            sentence("f2", "Alice works at Google", seed=2),
            sentence("f4", "Bob works at Google", seed=4),
        ],
    )


async def test_entities_by_name_key_id_and_type(pair: tuple[Neo4jBackend, Neo4jFactStore]) -> None:
    _, store = pair
    await seed_team(store)
    found = await store.entities_by_key(NS, ["alice johnson", "ali", "acme corp"])
    assert sorted(e.id for e in found) == ["acme", "alice"]  # each entity once
    alice = next(e for e in found if e.id == "alice")
    assert alice == person("alice", "Alice", real_name="Alice Johnson", aliases=("Ali",),
                           attributes={"role": "lead"})
    assert [e.id for e in await store.entities_by_key(NS, ["acme corp"], ["Person"])] == []
    assert [e.id for e in await store.entities_by_key(NS, ["google"], ["Organization"])] == [
        "google"
    ]
    assert await store.entities_by_key(NS, []) == []
    got = await store.get_entities(NS, ["bob", "nobody", "alice", "bob"])
    assert [e.id for e in got] == ["bob", "alice"]  # order asked, missing left out
    keys = await store.entity_keys(NS)
    assert ("alice", "alice") in keys and ("alice", "alice johnson") in keys
    assert ("alice", "ali") in keys and ("acme", "acme corp") in keys
    assert sorted(await store.entity_keys(NS, ["Organization"])) == [
        ("acme", "acme corp"), ("google", "google")
    ]


async def test_find_facts_current_order_filters_and_limit(
    pair: tuple[Neo4jBackend, Neo4jFactStore],
) -> None:
    _, store = pair
    await seed_team(store)
    now = FactQuery(namespace=NS, as_of=250.0)
    # current at 250: f1 closed at 200, f5 retired at 300 (still current); newest valid_at
    # first, unknown valid_at last
    assert [f.id for f in await store.find_facts(now)] == ["f2", "f4", "f5", "f3"]
    q = FactQuery(namespace=NS, subject_ids=("alice",), predicates=("WORKS_AT",), as_of=250.0)
    [f2] = await store.find_facts(q)
    assert f2 == fact("f2", "alice", "WORKS_AT", "google", valid_at=200.0)
    q = FactQuery(namespace=NS, object_ids=("google",), as_of=250.0)
    assert [f.id for f in await store.find_facts(q)] == ["f2", "f4"]
    q = FactQuery(namespace=NS, object_values=("rUST", "paris"), as_of=250.0)
    assert [f.id for f in await store.find_facts(q)] == ["f5", "f3"]
    [f3] = await store.find_facts(FactQuery(namespace=NS, ids=("f3",), as_of=250.0))
    assert f3.attributes == {"years": 3} and f3.object_value == "Rust" and f3.object_id is None
    assert [f.evidence for f in await store.find_facts(
        FactQuery(namespace=NS, ids=("f4",), as_of=250.0))] == [("m2", "m3")]
    q = FactQuery(namespace=NS, min_confidence=0.6, as_of=250.0)
    assert [f.id for f in await store.find_facts(q)] == ["f2", "f4", "f5"]
    assert [f.id for f in await store.find_facts(FactQuery(namespace=NS, limit=2, as_of=250.0))
            ] == ["f2", "f4"]
    assert await store.find_facts(FactQuery(namespace=NS, subject_ids=())) == []
    assert await store.find_facts(FactQuery(namespace=NS, limit=0)) == []


async def test_history_and_as_of(pair: tuple[Neo4jBackend, Neo4jFactStore]) -> None:
    _, store = pair
    await seed_team(store)
    works = FactQuery(namespace=NS, subject_ids=("alice",), predicates=("WORKS_AT",))
    assert [f.id for f in await store.find_facts(works)] == ["f2"]  # as_of = now
    past = FactQuery(namespace=NS, subject_ids=("alice",), predicates=("WORKS_AT",), as_of=150.0)
    assert [f.id for f in await store.find_facts(past)] == ["f1"]
    before = FactQuery(namespace=NS, subject_ids=("alice",), predicates=("WORKS_AT",), as_of=50.0)
    assert await store.find_facts(before) == []
    history = FactQuery(namespace=NS, subject_ids=("alice",), predicates=("WORKS_AT",),
                        include_history=True, as_of=50.0)
    assert [f.id for f in await store.find_facts(history)] == ["f2", "f1"]
    # f5 was retired at 300: gone from "now", kept in history
    bob = FactQuery(namespace=NS, subject_ids=("bob",), predicates=("LIVES_IN",))
    assert await store.find_facts(bob) == []
    bob_history = FactQuery(namespace=NS, subject_ids=("bob",), predicates=("LIVES_IN",),
                            include_history=True)
    [f5] = await store.find_facts(bob_history)
    assert f5.expired_at == 300.0 and f5.valid_at == 50.0


async def test_the_graph_written_and_memories_searchable(
    pair: tuple[Neo4jBackend, Neo4jFactStore], neo4j_clean_uri: str
) -> None:
    b, store = pair
    await seed_team(store)
    rows = cypher(
        neo4j_clean_uri,
        f"MATCH (s:{E})-[:SUBJECT_OF]->(f:{F})-[:OBJECT]->(o:{E}) "
        "RETURN f.id AS f, s.id AS s, o.id AS o ORDER BY f",
    )
    assert [(r["f"], r["s"], r["o"]) for r in rows] == [
        ("f1", "alice", "acme"), ("f2", "alice", "google"), ("f4", "bob", "google")
    ]
    rows = cypher(neo4j_clean_uri, f"MATCH (m:{LABEL})-[:STATES]->(f:{F}) RETURN f.id AS f "
                  "ORDER BY f")
    assert [r["f"] for r in rows] == ["f1", "f2", "f4"]
    # the sentences are ordinary memories: read, vector and full-text searchable
    [m] = await b.get(["f2"], NS)
    assert m.content == "Alice works at Google" and m.memory_type == FACT_MEMORY_TYPE
    hits = await b.vector_search(unit(2), 1, MemoryFilter(namespaces=(NS,)))
    assert hits[0].record.id == "f2"
    hits = await b.text_search("ACME", 3, MemoryFilter(namespaces=(NS,)))
    assert [h.record.id for h in hits] == ["f1"]
    # a memory re-written by the memory backend leaves its fact and STATES edge alone
    await b.upsert([sentence("f2", "Alice works at Google (edited)", seed=2)])
    assert [f.id for f in await store.find_facts(FactQuery(namespace=NS, ids=("f2",)))] == ["f2"]
    assert cypher(neo4j_clean_uri, f"MATCH (:{LABEL} {{id: 'f2'}})-[:STATES]->(f:{F}) "
                  "RETURN count(f) AS n")[0]["n"] == 1


async def test_replace_link_late_and_delete(
    pair: tuple[Neo4jBackend, Neo4jFactStore], neo4j_clean_uri: str
) -> None:
    _, store = pair
    # a fact whose entities arrive later is linked when they do
    await store.put(facts=[fact("f1", "carol", "WORKS_AT", "initech")])
    await store.put(entities=[person("carol", "Carol"), person("initech", "Initech", type="Organization")])
    edges = f"MATCH (s:{E})-[:SUBJECT_OF]->(f:{F})-[:OBJECT]->(o:{E}) RETURN s.id AS s, o.id AS o"
    assert [(r["s"], r["o"]) for r in cypher(neo4j_clean_uri, edges)] == [("carol", "initech")]
    # replacing an entity replaces its names; replacing a fact moves its edges
    await store.put(entities=[person("carol", "Carol", aliases=("CJ",))])
    assert [e.id for e in await store.entities_by_key(NS, ["cj"])] == ["carol"]
    await store.put(entities=[person("carol", "Caroline")])
    assert await store.entities_by_key(NS, ["cj"]) == []
    assert await store.entities_by_key(NS, ["carol"]) == []
    assert await store.entity_keys(NS, ["Person"]) == [("carol", "caroline")]
    await store.put(entities=[person("hooli", "Hooli", type="Organization")],
                    facts=[fact("f1", "carol", "WORKS_AT", "hooli")])
    assert [(r["s"], r["o"]) for r in cypher(neo4j_clean_uri, edges)] == [("carol", "hooli")]
    # merging: the survivor takes the facts, the merged-away entity and its names go
    await store.put(
        entities=[person("initech", "Initech", aliases=("Hooli",), type="Organization")],
        facts=[fact("f1", "carol", "WORKS_AT", "initech")],
        delete_entity_ids=["hooli"],
    )
    assert await store.get_entities(NS, ["hooli"]) == []
    assert [e.id for e in await store.entities_by_key(NS, ["hooli"])] == ["initech"]
    assert [(r["s"], r["o"]) for r in cypher(neo4j_clean_uri, edges)] == [("carol", "initech")]
    orphans = cypher(neo4j_clean_uri, f"MATCH (k:{LABEL}EntityKey) WHERE NOT (k)--() "
                     "RETURN count(k) AS n")
    assert orphans[0]["n"] == 0
    await store.put(delete_entity_ids=["carol"])  # alone: the id's own entity
    assert await store.get_entities(NS, ["carol"]) == []
    assert cypher(neo4j_clean_uri, f"MATCH (k:{LABEL}EntityKey) RETURN count(k) AS n")[0]["n"] == 2


async def test_namespaces_never_cross(
    pair: tuple[Neo4jBackend, Neo4jFactStore], neo4j_clean_uri: str
) -> None:
    _, store = pair
    await store.put(entities=[person("alice", "Alice", ns="a"), person("acme", "ACME", ns="a")],
                    facts=[fact("fa", "alice", "WORKS_AT", "acme", ns="a")])
    # the same names in namespace b, and a fact naming entity ids that exist only in a
    await store.put(entities=[person("alice-b", "Alice", ns="b")],
                    facts=[fact("fb", "alice", "WORKS_AT", "acme", ns="b")])
    assert [e.id for e in await store.entities_by_key("a", ["alice"])] == ["alice"]
    assert [e.id for e in await store.entities_by_key("b", ["alice"])] == ["alice-b"]
    assert await store.get_entities("b", ["alice", "acme"]) == []
    assert await store.entity_keys("b") == [("alice-b", "alice")]
    assert [f.id for f in await store.find_facts(FactQuery(namespace="a"))] == ["fa"]
    assert [f.id for f in await store.find_facts(
        FactQuery(namespace="b", object_ids=("acme",)))] == ["fb"]
    assert await store.find_facts(FactQuery(namespace="b", ids=("fa",))) == []
    assert await store.find_facts(FactQuery(namespace="c")) == []
    crossing = cypher(neo4j_clean_uri, "MATCH (x)-[r]-(y) WHERE x.namespace <> y.namespace "
                      "RETURN count(r) AS n")
    assert crossing[0]["n"] == 0
    # an id belongs to one namespace: b cannot overwrite a's entity or fact
    for bad in ({"entities": [person("alice", "Mallory", ns="b")]},
                {"facts": [fact("fa", "alice-b", "KNOWS", ns="b")]}):
        with pytest.raises(MemoryBackendError, match="already belongs to namespace 'a'"):
            await store.put(**bad)
    assert [e.name for e in await store.get_entities("a", ["alice"])] == ["Alice"]
    [fa] = await store.find_facts(FactQuery(namespace="a", ids=("fa",)))
    assert fa.predicate == "WORKS_AT"
    # a put for b deletes only b's entities, even when it names a's
    await store.put(entities=[person("bob", "Bob", ns="b")],
                    delete_entity_ids=["alice", "alice-b"])
    assert await store.get_entities("b", ["alice-b"]) == []
    assert [e.name for e in await store.get_entities("a", ["alice"])] == ["Alice"]


async def test_a_put_is_all_or_nothing(
    pair: tuple[Neo4jBackend, Neo4jFactStore], neo4j_clean_uri: str
) -> None:
    b, store = pair
    good = {"entities": [person("dan", "Dan")], "facts": [fact("fd", "dan", "HAS_SKILL",
            value="Go")], "memories": [sentence("fd", "Dan knows Go")]}
    bad_items: list[tuple[str, dict[str, Any]]] = [
        ("confidence", {"facts": [*good["facts"], fact("fx", "dan", "KNOWS", confidence=1.5)]}),
        ("evidence", {"facts": [*good["facts"], fact("fx", "dan", "KNOWS", evidence=())]}),
        ("valid_at", {"facts": [fact("fx", "dan", "KNOWS", valid_at=float("nan"))]}),
        ("attributes", {"entities": [*good["entities"],
                                     person("x", "X", attributes={"f": object()})]}),
        ("vector", {"memories": [record("fd", vector=unit(1)[:3], namespace=NS)]}),
        ("entity id", {"entities": [person("", "Nobody")]}),
    ]
    for what, change in bad_items:
        with pytest.raises(MemoryInputError, match=what):
            await store.put(**{**good, **change})
    nodes = cypher(neo4j_clean_uri, "MATCH (n) RETURN count(n) AS n")
    assert nodes[0]["n"] == 0
    # refused inside the transaction, after the entities were written in it: the fact id
    # belongs to another namespace (entity and fact ids are unique across namespaces)
    await store.put(entities=[person("other-p", "Olga", ns="other")],
                    facts=[fact("taken", "other-p", "HAS_SKILL", value="Go", ns="other")])
    with pytest.raises(MemoryBackendError, match="taken"):
        await store.put(**{**good, "facts": [*good["facts"],
                                             fact("taken", "dan", "HAS_SKILL", value="C")]})
    assert await store.get_entities(NS, ["dan"]) == []
    assert await store.find_facts(FactQuery(namespace=NS, include_history=True)) == []
    assert await b.get(["fd"], NS) == []
    await store.put(**good)  # the same batch without the bad item goes through whole
    assert [f.id for f in await store.find_facts(FactQuery(namespace=NS))] == ["fd"]
    assert [m.id for m in await b.get(["fd"], NS)] == ["fd"]


async def test_values_are_parameters_and_calls_time_out(
    pair: tuple[Neo4jBackend, Neo4jFactStore],
) -> None:
    b, store = pair
    nasty = "x'}) MATCH (n) DETACH DELETE n //"
    await store.put(entities=[person(nasty, nasty, aliases=("`a` OR 1=1",))],
                    facts=[fact(nasty, nasty, "KNOWS", value=nasty)])
    [e] = await store.entities_by_key(NS, [nasty.casefold()])
    assert e.id == nasty and e.aliases == ("`a` OR 1=1",)
    [f] = await store.find_facts(FactQuery(namespace=NS, object_values=(nasty.upper(),)))
    assert f.id == nasty
    started = time.monotonic()
    with pytest.raises(MemoryBackendError, match="TimedOut"):
        await b.conn.read("a runaway query",
                          "UNWIND range(1, 1000000000) AS x WITH x WHERE x % 7 = 0 "
                          "RETURN count(x)", {}, timeout=0.5)
    assert time.monotonic() - started < 10  # stopped by the server, not retried


async def test_every_statement_seeks_an_index(
    pair: tuple[Neo4jBackend, Neo4jFactStore], neo4j_clean_uri: str
) -> None:
    """The plans, checked by EXPLAIN: no label or full scans, and the namespace-only index
    only where the query has nothing else (a link statement once compared two nodes'
    namespaces and the planner scanned every fact of the namespace per row)."""
    _, store = pair
    await store.ensure_schema()
    fq = store.fq
    statements = {
        "claim entities": fq.claim_entities, "claim facts": fq.claim_facts,
        "write entities": fq.write_entities[0], "write facts": fq.write_facts[0],
        "link statements": fq.link_statements, "delete entities": fq.delete_entities,
        "entities by key": fq.entities_by_key, "get entities": fq.get_entities,
        "entity keys": fq.entity_keys[0], "entity keys by type": fq.entity_keys[1],
        "write lock": fq.write_lock, "existing lock": fq.existing_lock,
    }
    for name, query in {
        "ids": FactQuery(NS, ids=("a",), predicates=("P",)),
        "subjects": FactQuery(NS, subject_ids=("a",), predicates=("P",)),
        "objects": FactQuery(NS, object_ids=("a",), predicates=("P", "Q")),
        "values": FactQuery(NS, object_values=("a",), subject_ids=("b",)),
        "predicates": FactQuery(NS, predicates=("P",), min_confidence=0.5),
    }.items():
        statements[f"find by {name}"] = fq.find_facts(query)[0]  # type: ignore[index]

    def operators(plan: dict[str, Any]) -> list[str]:
        found = [f"{plan['operatorType']} {plan.get('args', {}).get('Details', '')}"]
        for child in plan.get("children", []):
            found += operators(child)
        return found

    for name, text in statements.items():
        plan = cypher_plan(neo4j_clean_uri, text)
        seeks = [op for op in operators(plan) if "Scan" in op or "Seek" in op]
        assert seeks, name
        for op in seeks:
            assert "Scan" not in op.split()[0], (name, op)
            assert f"{F}(namespace) " not in op, (name, op)


def cypher_plan(uri: str, query: str) -> dict[str, Any]:
    with GraphDatabase.driver(uri, auth=None) as driver:
        return driver.execute_query("EXPLAIN " + query).summary.plan
