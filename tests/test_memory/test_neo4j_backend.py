"""The neo4j backend against a real Neo4j: graph relations and traversal, filters, scores,
schema checks, Cypher injection. (The shared behaviour is in test_contract.py.)"""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import pytest
import zstandard
from neo4j import GraphDatabase

from DeepResearch.src.memory import MemoryConfig
from DeepResearch.src.memory.backends.base import MemoryFilter
from DeepResearch.src.memory.backends.neo4j_store import Neo4jBackend
from DeepResearch.src.memory.errors import (
    IndexMismatchError,
    MemoryConfigError,
    MemoryInputError,
)
from test_memory.neo4j_helpers import DIM, LABEL, backend, record, settings, unit

pytestmark = [pytest.mark.neo4j, pytest.mark.integration]


@pytest.fixture
async def store(neo4j_clean_uri: str) -> AsyncIterator[Neo4jBackend]:
    b = backend(neo4j_clean_uri)
    await b.open()
    yield b
    await b.close()


def cypher(uri: str, query: str, **params: object) -> list[dict[str, object]]:
    with GraphDatabase.driver(uri, auth=None) as driver:
        return [r.data() for r in driver.execute_query(query, params).records]


# --- relations ----------------------------------------------------------------------------
async def test_relations_become_edges_and_traversal_walks_them(
    store: Neo4jBackend, neo4j_clean_uri: str
) -> None:
    # a <-FOLLOWS- b -REFERENCES-> c -PART_OF-> d ; e -CAUSED_BY-> a
    await store.upsert(
        [
            record("a", created_at=1.0),
            record("b", created_at=2.0, relations=[("follows", "a"), ("references", "c")]),
            record("c", created_at=3.0, relations=[("part_of", "d")]),
            record("d", created_at=4.0),
            record("e", created_at=5.0, relations=[("caused_by", "a")]),
        ]
    )
    edges = cypher(
        neo4j_clean_uri,
        f"MATCH (x:{LABEL})-[r]->(y:{LABEL}) RETURN x.id AS x, type(r) AS t, y.id AS y "
        "ORDER BY x, t",
    )
    assert edges == [
        {"x": "b", "t": "FOLLOWS", "y": "a"},
        {"x": "b", "t": "REFERENCES", "y": "c"},
        {"x": "c", "t": "PART_OF", "y": "d"},
        {"x": "e", "t": "CAUSED_BY", "y": "a"},
    ]

    one = await store.related("a", None, 1)
    assert {(r.record.id, r.relation, r.depth) for r in one} == {
        ("b", "follows", 1),
        ("e", "caused_by", 1),
    }
    three = await store.related("a", None, 3)
    assert [(r.record.id, r.depth) for r in three] == [("b", 1), ("e", 1), ("c", 2), ("d", 3)]
    assert three[2].relation == "references" and three[3].relation == "part_of"
    assert three[0].record.content == "memory b" and three[0].record.vector is not None

    only_follows = await store.related("a", ["follows", "references"], 3)
    assert [r.record.id for r in only_follows] == ["b", "c"]
    assert await store.related("a", [], 2) == []
    assert await store.related("a", None, 0) == []
    assert await store.related("missing", None, 2) == []


async def test_relation_to_a_later_memory_and_rewrites(
    store: Neo4jBackend, neo4j_clean_uri: str
) -> None:
    await store.upsert([record("child", relations=[("part_of", "parent")])])
    assert await store.related("child", None, 1) == []  # target not written yet
    assert await store.count(MemoryFilter()) == 1  # the placeholder is no memory

    await store.upsert([record("parent")])
    (hit,) = await store.related("child", None, 1)
    assert (hit.record.id, hit.relation) == ("parent", "part_of")

    # deleting the parent and writing it again restores the child's edge
    assert await store.delete(MemoryFilter(ids=("parent",))) == 1
    assert await store.related("child", None, 1) == []
    await store.upsert([record("parent", content="parent again")])
    (hit,) = await store.related("child", None, 1)
    assert hit.record.content == "parent again"

    # re-writing the child with other relations replaces its outgoing edges
    await store.upsert([record("child", relations=[("references", "parent")])])
    (hit,) = await store.related("child", None, 1)
    assert hit.relation == "references"
    (got,) = await store.get(["child"])
    assert got.relations == [("references", "parent")]

    # deleting everything leaves no placeholders behind
    await store.delete(MemoryFilter())
    assert cypher(neo4j_clean_uri, "MATCH (n) RETURN count(n) AS n") == [{"n": 0}]


async def test_relation_types_are_validated(store: Neo4jBackend) -> None:
    with pytest.raises(MemoryInputError, match="DETACH"):
        await store.related("a", ["follows]->() MATCH (n) DETACH DELETE n //"], 1)
    with pytest.raises(MemoryInputError, match="not one of"):
        await store.upsert([record("x", relations=[("LIKES", "y")])])
    with pytest.raises(MemoryInputError, match="depth"):
        await store.related("a", None, 11)


async def test_similar_to_links_close_memories_at_write_time(neo4j_clean_uri: str) -> None:
    b = backend(neo4j_clean_uri, similarity_to_threshold=0.9)
    await b.open()
    try:
        base = unit([1, 0, 0, 0, 0, 0, 0, 0])
        near = unit([1, 0.1, 0, 0, 0, 0, 0, 0])
        far = unit([0, 0, 1, 0, 0, 0, 0, 0])
        await b.upsert([record("base", vector=base), record("far", vector=far)])
        await b.upsert([record("near", vector=near)])
        rows = cypher(
            neo4j_clean_uri,
            f"MATCH (x:{LABEL})-[r:SIMILAR_TO]->(y) RETURN x.id AS x, y.id AS y, r.score AS s",
        )
        assert [(r["x"], r["y"]) for r in rows] == [("near", "base")]
        (hit,) = await b.related("base", ["similar_to"], 1)
        assert (hit.record.id, hit.relation) == ("near", "similar_to")
    finally:
        await b.close()


# --- search, filters, scores --------------------------------------------------------------
async def test_vector_scores_are_cosine_and_filters_apply(store: Neo4jBackend) -> None:
    q = unit([1, 0, 0, 0, 0, 0, 0, 0])
    await store.upsert(
        [
            record("same", vector=q, metadata={"tool": "bwa", "n": 1}),
            record("opposite", vector=-q, metadata={"tool": None, "tags": ["a"]}),
            record("other", session="s2", vector=unit(3), metadata={"tool": "star"}),
            record("gone", vector=unit(4), expires_at=10.0),
        ]
    )
    hits = await store.vector_search(q, 10, MemoryFilter())
    scores = {c.record.id: c.score for c in hits}
    assert scores["same"] == pytest.approx(1.0, abs=1e-5)
    assert scores["opposite"] == pytest.approx(-1.0, abs=1e-5)
    assert hits[0].record.id == "same" and len(hits) == 4

    async def ids(flt: MemoryFilter) -> set[str]:
        return {c.record.id for c in await store.vector_search(q, 10, flt)}

    assert await ids(MemoryFilter(session_ids=("s2",))) == {"other"}
    assert await ids(MemoryFilter(metadata={"tool": ("bwa", "star")})) == {"same", "other"}
    assert await ids(MemoryFilter(metadata={"n": (1.0,)})) == {"same"}
    # None matches a missing key or a null, never a list/dict value
    assert await ids(MemoryFilter(metadata={"tool": (None,)})) == {"opposite", "gone"}
    assert await ids(MemoryFilter(metadata={"tags": (None,)})) == {"same", "other", "gone"}
    assert await ids(MemoryFilter(live_at=11.0)) == {"same", "opposite", "other"}
    assert await ids(MemoryFilter(live_at=9.0, ids=("gone",))) == {"gone"}
    assert await store.count(MemoryFilter(metadata={"tool": ("star",)})) == 1


async def test_filtered_search_still_finds_k_when_the_index_top_is_filtered_out(
    store: Neo4jBackend,
) -> None:
    q = unit(7)
    crowd = [record(f"c{i}", session="crowd", vector=unit(1000 + i)) for i in range(120)]
    wanted = [record(f"w{i}", session="crowd", vector=-unit(2000 + i), metadata={"keep": True})
              for i in range(3)]  # fmt: skip
    await store.upsert(crowd + wanted)
    flt = MemoryFilter(metadata={"keep": (True,)})  # not selective: goes through the ANN index
    hits = await store.vector_search(q, 3, flt)
    assert {c.record.id for c in hits} == {"w0", "w1", "w2"}


async def test_text_search_scan_count_delete(store: Neo4jBackend) -> None:
    await store.upsert(
        [
            record("r1", content="STAR aligns spliced RNA-seq reads", created_at=3.0),
            record("r2", content="BWA aligns DNA reads", created_at=1.0, session="s2"),
            record("r3", content="sourdough bread", created_at=2.0),
        ]
    )
    hits = await store.text_search("aligns RNA-seq", 5, MemoryFilter())
    assert hits[0].record.id == "r1" and {c.record.id for c in hits} == {"r1", "r2"}
    assert [c.record.id for c in await store.text_search("reads", 5, MemoryFilter(session_ids=("s2",)))] == ["r2"]  # fmt: skip
    assert await store.text_search('"(*?~^ AND OR NOT', 5, MemoryFilter()) == []
    assert [r.id for r in await store.scan(MemoryFilter())] == ["r2", "r3", "r1"]
    assert [r.id for r in await store.scan(MemoryFilter(), limit=1, offset=1)] == ["r3"]
    assert await store.count(MemoryFilter(created_after=2.0)) == 2
    assert await store.delete(MemoryFilter(session_ids=("s1",))) == 2
    assert [r.id for r in await store.get(["r1", "r2", "r3"])] == ["r2"]


async def test_batched_writes_round_trip_every_field(store: Neo4jBackend) -> None:
    records = [
        record(
            f"m{i:03d}",
            seed=i,
            created_at=1000.0 + i,
            agent_type="executor",
            importance=0.25,
            temporal_weight=2.0,
            expires_at=1e10,
            content_codec="zstd",
            content_blob=zstandard.compress(f"the full content {i}".encode()),  # reads check it
            metadata={"i": i, "nested": {"x": [1, None, "y"]}},
        )
        for i in range(130)  # batch_size=50: three transactions
    ]
    await store.upsert(records)
    back = await store.get([r.id for r in reversed(records)])
    assert [r.id for r in back] == [r.id for r in reversed(records)]
    for want, got in zip(reversed(records), back, strict=True):
        assert got.vector is not None and got.vector.dtype == np.float32
        assert np.array_equal(got.vector, want.vector)
        got.vector = want.vector = None
        assert got == want


async def test_bad_vectors_are_refused(store: Neo4jBackend) -> None:
    with pytest.raises(MemoryInputError, match=rf"expected \({DIM},\)"):
        await store.upsert([record("x", vector=np.ones(DIM + 1, dtype=np.float32))])
    with pytest.raises(MemoryInputError, match="finite"):
        await store.vector_search(np.full(DIM, np.nan, dtype=np.float32), 3, MemoryFilter())


# --- schema and configuration -------------------------------------------------------------
async def test_an_index_of_another_dimension_is_reported(
    store: Neo4jBackend, neo4j_clean_uri: str
) -> None:
    wider = Neo4jBackend(store.settings, dimension=DIM * 2, metric="cosine")
    with pytest.raises(IndexMismatchError, match=rf"dimensions={DIM}.*dimensions={DIM * 2}"):
        await wider.open()
    assert wider.conn.driver is None  # closed on the failure path
    # dot_product uses the cosine index (unit vectors): same index, no mismatch
    dot = Neo4jBackend(store.settings, dimension=DIM, metric="dot_product")
    await dot.open()
    await dot.close()


async def test_a_fulltext_index_on_raw_content_is_reported(
    store: Neo4jBackend, neo4j_clean_uri: str
) -> None:
    """An index of an earlier layout (raw content, standard analyzer) would match stop words
    the other backends drop: refuse it with a message saying what to do."""
    name = store.settings.fulltext_index_name
    await store.close()
    cypher(neo4j_clean_uri, f"DROP INDEX `{name}`")
    cypher(neo4j_clean_uri, f"CREATE FULLTEXT INDEX `{name}` FOR (m:`{LABEL}`) ON EACH [m.content]")
    try:
        with pytest.raises(IndexMismatchError, match=rf"{name}.*search_text.*re-import"):
            await backend(neo4j_clean_uri).open()
    finally:
        cypher(neo4j_clean_uri, f"DROP INDEX `{name}`")
    await store.open()  # recreated in the current layout
    await store.upsert([record("a", content="the boat")])
    assert [c.record.id for c in await store.text_search("boats", 5, MemoryFilter())] == ["a"]
    assert await store.text_search("the", 5, MemoryFilter()) == []  # a stop word matches nothing


def test_names_formatted_into_cypher_are_validated() -> None:
    for key, bad in [
        ("node_label", "Memory`) DETACH DELETE n //"),
        ("index_name", "x'; DROP"),
        ("fulltext_index_name", "a b"),
    ]:
        # MemoryConfig refuses them first; the backend checks again for any settings object
        with pytest.raises(MemoryConfigError, match=key):
            MemoryConfig(backend="neo4j", neo4j={key: bad})
        unchecked = settings("bolt://127.0.0.1:1").model_copy(update={key: bad})
        with pytest.raises(MemoryConfigError, match=key):
            Neo4jBackend(unchecked, dimension=DIM)
    with pytest.raises(MemoryConfigError, match="index_type"):
        Neo4jBackend(backend("bolt://127.0.0.1:1").settings, dimension=DIM, metric="manhattan")
