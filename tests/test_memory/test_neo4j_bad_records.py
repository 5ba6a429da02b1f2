"""A record Neo4j cannot store never poisons a batch: it is refused before the write with an
error naming it (or, if the server refuses it, with the server's reason), nothing of its batch
is written, and the next batch lands. A stored node whose properties cannot be decoded is
skipped by reads, counted by verify() and deletable. Real server throughout."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from neo4j import GraphDatabase

from DeepResearch.src.memory.backends import neo4j_store
from DeepResearch.src.memory.backends.base import MemoryFilter
from DeepResearch.src.memory.backends.neo4j_connection import DataRefused
from DeepResearch.src.memory.backends.neo4j_store import Neo4jBackend
from DeepResearch.src.memory.backends.neo4j_writes import memory_rows
from DeepResearch.src.memory.errors import MemoryInputError
from test_memory.neo4j_helpers import LABEL, backend, record

pytestmark = [pytest.mark.neo4j, pytest.mark.integration]


@pytest.fixture
async def store(neo4j_clean_uri: str) -> AsyncIterator[Neo4jBackend]:
    b = backend(neo4j_clean_uri, batch_size=8)
    await b.open()
    yield b
    await b.close()


def batch(prefix: str, n: int = 20) -> list:
    return [record(f"{prefix}{i}", seed=i, metadata={"i": i}) for i in range(n)]


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        (record("bad", metadata={"tool\x00name": "bwa"}), r"metadata key 'tool\\x00name' contains NUL"),
        (record("bad", content="lone \ud800 surrogate"), "content is not valid UTF-8"),
        (record("bad", metadata={"k\udcff": 1}), "metadata key .* is not valid UTF-8"),
        (record("bad", metadata={"deep": {"x": ["\ud800"]}}), r"metadata \(a nested"),
        (record("bad", relations=[("follows", "t\ud800")]), "relation target"),
        (record("bad", importance=float("nan")), "importance=nan must be a finite number"),
        (record("bad", metadata={"x": {1, 2}}), "not JSON-serialisable"),
    ],
)
async def test_one_bad_record_is_named_and_the_next_batch_lands(
    store: Neo4jBackend, bad: object, named: str
) -> None:
    first = batch("a")
    first.insert(13, bad)  # in the second write transaction of 8
    with pytest.raises(MemoryInputError, match=rf"record 'bad'.*{named}"):
        await store.upsert(first)
    assert await store.count(MemoryFilter()) == 0  # checked before any transaction
    await store.upsert(batch("b"))
    assert await store.count(MemoryFilter()) == 20


async def test_data_the_server_refuses_is_named_with_its_reason_and_not_retried(
    store: Neo4jBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server itself refuses a property name with NUL; the rows' builder refuses it first,
    # so one row gets it after the builder's checks.
    def rows_with_a_bad_key(records: list, dimension: int) -> list[dict]:
        rows = memory_rows(records, dimension)
        rows[5]["props"]["md.bad\x00key"] = 1
        return rows

    monkeypatch.setattr(neo4j_store, "memory_rows", rows_with_a_bad_key)
    with pytest.raises(MemoryInputError, match=r"record 'a5' cannot be stored: .*"
                       r"TokenNameError.*null-bytes.*nothing of its batch of 8 was written"):
        await store.upsert(batch("a", 8))
    # an input error (a refusal is raised on its first attempt), the server not deemed down
    assert store.conn.down_since is None
    assert await store.count(MemoryFilter()) == 0
    monkeypatch.undo()
    await store.upsert(batch("b", 8))
    assert await store.count(MemoryFilter()) == 8

    with pytest.raises(DataRefused, match="TokenNameError") as info:
        await store.conn.write("writing one", [("CREATE (m:Scratch) SET m = $p", {"p": {"": 1}})])
    assert isinstance(info.value, MemoryInputError)


async def test_a_read_with_text_neo4j_cannot_take_is_an_input_error(store: Neo4jBackend) -> None:
    await store.upsert(batch("a", 3))
    with pytest.raises(MemoryInputError, match="cannot be sent to Neo4j"):
        await store.scan(MemoryFilter(session_ids=("s\ud800",)))
    assert len(await store.scan(MemoryFilter())) == 3  # the connection is still fine


def cypher(uri: str, query: str, **params: object) -> None:
    with GraphDatabase.driver(uri, auth=None) as driver:
        driver.execute_query(query, params)


DAMAGE = {
    "metadata": ("SET m.metadata_json = '{\"i\": 2'", "metadata is not valid JSON"),
    "relations": ("SET m.relations_json = 'not json'", "relations is not valid JSON"),
    "blob": ("SET m.content_codec = 'zstd', m.content_blob = $garbage", "cannot decompress"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
async def test_a_node_with_damaged_properties_is_skipped_named_counted_and_forgettable(
    store: Neo4jBackend, neo4j_clean_uri: str, damage: str, caplog
) -> None:
    """Properties set with a raw Cypher query (no write of the backend would store them)."""
    prefix = f"dmg-{damage}-"
    records = batch(prefix, 6)
    records[3].relations = [("references", f"{prefix}2"), ("references", f"{prefix}4")]
    await store.upsert(records)
    rid = f"{prefix}2"
    query, why = DAMAGE[damage]
    cypher(neo4j_clean_uri, f"MATCH (m:{LABEL} {{id: $id}}) {query}", id=rid,
           garbage=b"\x28\xb5\x2f\xfd" + bytes(40))
    with caplog.at_level("WARNING"):
        hits = await store.vector_search(records[2].vector, 6, MemoryFilter())
        assert rid not in [c.record.id for c in hits] and len(hits) == 5
        assert [r.id for r in await store.scan(MemoryFilter())].count(rid) == 0
        assert [r.id for r in await store.get([rid, f"{prefix}3"])] == [f"{prefix}3"]
        related = await store.related_many([f"{prefix}3"], None, 2)
        assert [r.record.id for r in related[f"{prefix}3"]] == [f"{prefix}4"]
    warnings = [r.getMessage() for r in caplog.records if rid in r.getMessage()]
    assert len(warnings) == 1 and why in warnings[0], warnings
    problems = await store.verify()
    assert len(problems) == 1 and "1 damaged records" in problems[0] and rid in problems[0]
    assert await store.delete(MemoryFilter(ids=(rid,))) == 1
    assert await store.verify() == []
