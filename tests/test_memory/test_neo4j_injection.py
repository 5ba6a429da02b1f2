"""Cypher injection: hostile text everywhere a user can put text is stored and returned
verbatim, and never runs. The database still holds every other node afterwards."""

from __future__ import annotations

import pytest
from neo4j import GraphDatabase

from DeepResearch.src.memory.backends.base import MemoryFilter
from test_memory.neo4j_helpers import LABEL, backend, record, unit

pytestmark = [pytest.mark.neo4j, pytest.mark.integration]

ATTACKS = [
    "MATCH (n) DETACH DELETE n",
    "'}) MATCH (n) DETACH DELETE n //",
    '"}) MATCH (n) DETACH DELETE n RETURN 1 //',
    "`) DETACH DELETE m WITH 1 AS x MATCH (n) DETACH DELETE n //",
    "${id}} {{braces}} $param \\' \\\" \\u0027 ;",
    "CALL db.index.vector.queryNodes('x', 1, []) YIELD node DETACH DELETE node",
    "line\nbreak\r\n\t and nul-free unicode: naïve 数据 ✓ 🧬",
]


def count_nodes(uri: str) -> int:
    with GraphDatabase.driver(uri, auth=None) as driver:
        return int(driver.execute_query("MATCH (n) RETURN count(n) AS n").records[0]["n"])


async def test_hostile_text_is_data_not_cypher(neo4j_clean_uri: str) -> None:
    with GraphDatabase.driver(neo4j_clean_uri, auth=None) as driver:
        driver.execute_query("CREATE (:Bystander {name: 'must survive'})")
    store = backend(neo4j_clean_uri)
    await store.open()
    try:
        bystanders = [record(f"plain{i}", seed=i) for i in range(3)]
        hostile = []
        for i, attack in enumerate(ATTACKS):
            metadata = {
                attack: attack,  # hostile key and value
                "`weird` key": {"nested": [attack, {"}": "{"}]},
                "plain": attack,
            }
            hostile.append(
                record(
                    f"evil-{i}-{attack}",  # hostile id
                    session=f"session {attack}",
                    content=attack,
                    seed=100 + i,
                    memory_type=attack,
                    agent_type=attack,
                    metadata=metadata,
                    relations=[("references", attack), ("follows", "plain0")],
                )
            )
        await store.upsert(bystanders + hostile)
        before = count_nodes(neo4j_clean_uri)
        assert before == 1 + len(bystanders) + len(hostile) + len(ATTACKS)  # + placeholders

        # stored and returned verbatim, through every read path
        back = await store.get([r.id for r in hostile])
        for want, got in zip(hostile, back, strict=True):
            assert (got.id, got.content, got.session_id, got.memory_type, got.agent_type) == (
                want.id, want.content, want.session_id, want.memory_type, want.agent_type,
            )  # fmt: skip
            assert got.metadata == want.metadata and got.relations == want.relations
        for want in hostile:
            attack = want.content
            flt = MemoryFilter(
                session_ids=(want.session_id,),
                memory_types=(attack,),
                metadata={attack: (attack,), "plain": (attack, None)},
            )
            assert [r.id for r in await store.scan(flt)] == [want.id]
            assert await store.count(flt) == 1
            (hit,) = await store.vector_search(want.vector, 1, flt)
            assert hit.record.content == attack
            await store.text_search(attack, 5, MemoryFilter())  # must not raise or run anything
            assert await store.related(want.id, ["follows"], 2) != []
        hits = await store.text_search("DETACH DELETE", 20, MemoryFilter())
        assert {h.record.id for h in hits} >= {r.id for r in hostile[:4]}
        assert await store.vector_search(unit(5), 50, MemoryFilter(ids=(ATTACKS[0],))) == []

        # nothing ran: every node is still there, the bystander too
        assert count_nodes(neo4j_clean_uri) == before
        with GraphDatabase.driver(neo4j_clean_uri, auth=None) as driver:
            names = driver.execute_query("MATCH (b:Bystander) RETURN b.name AS n").records
            assert [r["n"] for r in names] == ["must survive"]
            labels = driver.execute_query(f"MATCH (m:{LABEL}) RETURN count(m) AS n").records
            assert labels[0]["n"] == len(bystanders) + len(hostile)

        # deleting by a hostile filter deletes exactly the matching memory
        assert await store.delete(MemoryFilter(metadata={"plain": (ATTACKS[0],)})) == 1
        assert await store.count(MemoryFilter()) == len(bystanders) + len(hostile) - 1
    finally:
        await store.close()
