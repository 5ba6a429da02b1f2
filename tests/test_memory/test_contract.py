"""The behavioural contract every backend passes (parametrised by `backend_name`)."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable

import numpy as np
import pytest

from DeepResearch.src.memory import (
    MemoryInputError,
    MemorySystemClient,
    RelationType,
)
from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord
from DeepResearch.src.memory.backends.base import MemoryBackend
from DeepResearch.src.memory.errors import ConfirmationRequired, MemoryBackendError

pytestmark = pytest.mark.integration

TOPICS = [
    ("STAR aligns RNA-seq reads to a genome with splice awareness", {"tool": "star", "kind": "aligner"}),
    ("BWA-MEM maps short DNA reads against a reference genome", {"tool": "bwa", "kind": "aligner"}),
    ("The Louvre museum in Paris holds the Mona Lisa", {"kind": "art"}),
    ("Sourdough bread needs a starter, flour, water and salt", {"kind": "cooking"}),
    ("Gradient descent minimises a loss by following its negative gradient", {"kind": "ml"}),
]
MakeClient = Callable[..., MemorySystemClient]


async def _seed(client: MemorySystemClient, **kw: object) -> list[str]:
    return await client.store_many([{"content": c, "metadata": m} for c, m in TOPICS], **kw)


async def test_retrieve_ranks_the_relevant_memory_first(client: MemorySystemClient) -> None:
    ids = await _seed(client)
    results = await client.retrieve(query="which tool aligns spliced RNA-seq reads?", top_k=2)
    assert [r.id for r in results] == [ids[0], ids[1]]
    assert all(a.score >= b.score for a, b in itertools.pairwise(results))
    art = await client.retrieve(query="famous painting in a Paris museum", top_k=1)
    assert art[0].id == ids[2]
    assert art[0].content == TOPICS[2][0]


async def test_metadata_and_content_come_back_unchanged(client: MemorySystemClient) -> None:
    meta = {"nested": {"a": [1, 2.5, None, True]}, "unicode": "naïve ✓ 数据", "n": 0, "quote": "'\"{}"}
    content = "Unicode content: naïve café — 数据 ✓ with \"quotes\" and {braces}"
    mid = await client.store(content=content, metadata=meta)
    (hit,) = await client.retrieve(query=content, top_k=1)
    assert (hit.id, hit.content, hit.metadata) == (mid, content, meta)


async def test_filters_equality_lists_and_reserved_keys(make_client: MakeClient) -> None:
    client = make_client(retrieval={"min_similarity": -1.0})
    ids = await _seed(client)
    await client.store(content="Salmon quantifies transcripts", metadata={"tool": "salmon"},
                       memory_type="tool_execution", agent_type="executor")
    only_bwa = await client.retrieve(query="aligner", filters={"tool": "bwa"})
    assert [r.id for r in only_bwa] == [ids[1]]
    either = await client.retrieve(query="aligner", filters={"tool": ["bwa", "star"]}, top_k=5)
    assert {r.id for r in either} == {ids[0], ids[1]}
    typed = await client.retrieve(query="transcripts", filters={"memory_type": "tool_execution"})
    assert [r.content for r in typed] == ["Salmon quantifies transcripts"]
    by_agent = await client.retrieve(query="transcripts", filters={"agent_type": ["executor"]})
    assert len(by_agent) == 1
    prefixed = await client.retrieve(query="aligner", filters={"metadata.kind": "art"})
    assert [r.id for r in prefixed] == [ids[2]]
    missing = await client.retrieve(query="anything", filters={"tool": None}, top_k=10)
    assert {r.id for r in missing} == {ids[2], ids[3], ids[4]}
    assert await client.retrieve(query="aligner", filters={"tool": "nope"}) == []


@pytest.mark.parametrize(
    "filters",
    [{"tool": {"$gt": 1}}, {"importance": 0.5}, {"bad key!": 1}, {"tool": []}, {"tool": [[1]]}, {"memory_type": 3}],
)
async def test_invalid_filters_are_refused_naming_the_key(
    client: MemorySystemClient, filters: dict
) -> None:
    await _seed(client)
    with pytest.raises(MemoryInputError) as err:
        await client.retrieve(query="aligner", filters=filters)
    assert repr(next(iter(filters))) in str(err.value)


async def test_a_filter_value_with_nul_is_refused_the_same_on_every_backend(
    client: MemorySystemClient,
) -> None:
    """SQLite's JSON functions and Neo4j compared NUL differently (no match / a match)."""
    await client.store(content="BWA aligns reads", metadata={"tool": "bw\x00a"})
    for call in (
        client.retrieve(query="aligner", filters={"tool": "bw\x00a"}),
        client.retrieve(query="aligner", filters={"tool": ["bwa", "bw\x00a"]}),
        client.forget(filters={"tool": "bw\x00a"}),
    ):
        with pytest.raises(MemoryInputError, match=r"filter 'tool': value .* contains NUL"):
            await call
    assert (await client.stats()).total == 1


async def test_a_session_never_sees_another_session(client: MemorySystemClient) -> None:
    other = client.session_id + "-other"
    (a_id,) = await client.store_many([{"content": "alpha secret: the vault code is 1234"}])
    (b_id,) = await client.store_many([{"content": "beta secret: the vault code is 9876"}], session_id=other)
    mine = await client.retrieve(query="vault code", top_k=10, session_id=client.session_id)
    assert [r.id for r in mine] == [a_id]
    asked = await client.retrieve(query="vault code", top_k=10, session_id=other)
    assert [r.id for r in asked] == [b_id]
    both = await client.retrieve(query="vault code", filters={"session_id": [client.session_id, other]})
    assert {r.id for r in both} == {a_id, b_id}
    every = await client.retrieve(query="vault code", all_sessions=True, top_k=50)
    assert {a_id, b_id} <= {r.id for r in every}


async def test_ttl_hides_then_expire_deletes(client: MemorySystemClient) -> None:
    now = time.time()
    old = await client.store(content="an expired note about kallisto", created_at=now - 100, ttl=10)
    fresh = await client.store(content="a live note about kallisto", ttl=3600)
    forever = await client.store(content="a permanent note about kallisto")
    hits = await client.retrieve(query="kallisto note", top_k=10)
    assert {r.id for r in hits} == {fresh, forever}
    assert await client.expire() == 1
    assert await client.get(old) is None
    assert await client.expire() == 0
    assert (await client.get(fresh)) is not None


async def test_session_ttl_from_config(make_client: MakeClient) -> None:
    client = make_client(session_ttl=60)
    mid = await client.store(content="remember for a minute")
    doc = (await client.get(mid)).document
    assert doc.expires_at is not None
    assert math.isclose((doc.expires_at - doc.created_at).total_seconds(), 60, abs_tol=0.01)


@pytest.mark.parametrize("algorithm", ["lz4", "gzip", "zstd"])
async def test_compression_round_trip(make_client: MakeClient, algorithm: str) -> None:
    client = make_client(compression={"algorithm": algorithm, "min_size_bytes": 256})
    big = "Trimmomatic removes adapters from reads. " + " ".join(
        f"line {i}: quality {i % 40} ✓" for i in range(800)
    )
    mid = await client.store(content=big, metadata={"size": len(big)})
    stored = (await client.backend.get([mid]))[0]
    assert stored.content_codec == algorithm and len(stored.content_blob) < len(big.encode())
    assert len(stored.content) < len(big)
    (hit,) = await client.retrieve(query="Trimmomatic adapters", top_k=1)
    assert hit.id == mid and hit.content == big


async def test_related_memories_follow_and_explicit_links(client: MemorySystemClient) -> None:
    first = await client.store(content="Plan: align reads with STAR")
    second = await client.store(content="Executed STAR; it failed on low memory",
                                relations=[(RelationType.CAUSED_BY, first)])
    third = await client.store(content="Reran STAR with more memory", relations=[("references", second)])
    related = await client.get_related_memories(second)
    assert {r.id for r in related} == {first, third}
    assert {r.depth for r in related} == {1}
    follows = await client.get_related_memories(third, types=[RelationType.FOLLOWS])
    assert [(r.id, r.relation) for r in follows] == [(second, RelationType.FOLLOWS)]
    caused = await client.get_related_memories(second, types=["caused_by"])
    assert [(r.id, r.relation) for r in caused] == [(first, RelationType.CAUSED_BY)]
    two_hops = await client.get_related_memories(first, types=["references", "caused_by"], depth=2)
    assert [(r.id, r.depth) for r in two_hops] == [(second, 1), (third, 2)]
    with pytest.raises(MemoryInputError):
        await client.get_related_memories(first, types=["likes"])


async def test_forget_by_id_and_filter(make_client: MakeClient) -> None:
    client = make_client(retrieval={"min_similarity": -1.0})
    ids = await _seed(client)
    assert await client.forget(ids[0]) == 1
    assert await client.forget(filters={"kind": "aligner"}, session_id=client.session_id) == 1
    left = await client.retrieve(query="reads genome aligner", top_k=10)
    assert {r.id for r in left} == set(ids[2:])
    with pytest.raises(MemoryInputError):
        await client.forget()


async def test_forget_refuses_unknown_keys_and_asks_before_deleting_many(
    make_client: MakeClient,
) -> None:
    client = make_client(forget={"confirm_above": 2})
    ids = await _seed(client)  # five memories; "tool" on the first two, "kind" on all
    with pytest.raises(MemoryInputError, match=r"'tol'.*'kind', 'tool'"):
        await client.forget(filters={"tol": None}, session_id=client.session_id)
    with pytest.raises(MemoryInputError, match="'tol'"):
        await client.forget(filters={"tol": "bwa"})
    assert await client.backend.count(MemoryFilter()) == 5  # nothing deleted
    with pytest.raises(ConfirmationRequired, match="would delete 3 memories") as asked:
        await client.forget(filters={"tool": None})  # explicitly: those without a tool
    assert asked.value.count == 3 and await client.backend.count(MemoryFilter()) == 5
    assert await client.forget(filters={"tool": None}, confirm=True) == 3
    assert {r.id for r in await client.backend.scan(MemoryFilter())} == set(ids[:2])
    assert await client.forget(everything=True) == 2  # at most confirm_above: no confirmation


@pytest.mark.parametrize(
    ("item", "fragment"),
    [
        ({"content": ""}, "empty"),
        ({"content": "   \n"}, "empty"),
        ({"content": "x" * 2001}, "max_content_bytes"),
        ({"content": b"\xff\xfe not utf-8"}, "UTF-8"),
        ({"content": "lone \ud800 surrogate"}, "Unicode"),
        ({"content": "ok", "vector": [float("nan")] * 384}, "non-finite"),
        ({"content": "ok", "vector": [0.0] * 384}, "zeros"),
        ({"content": "ok", "vector": [1.0] * 3}, "shape"),
        ({"content": "ok", "metadata": {"x": float("nan")}}, "metadata"),
        ({"content": "ok", "metadata": {"x": (1, 2)}}, "unchanged"),
        ({"content": "ok", "importance": 2}, "importance"),
        ({"content": "ok", "colour": "red"}, "colour"),
    ],
)
async def test_bad_input_is_refused_and_nothing_stored(
    make_client: MakeClient, item: dict, fragment: str
) -> None:
    client = make_client(max_content_bytes=2000)
    with pytest.raises(MemoryInputError) as err:
        await client.store_many([{"content": "a valid memory stored alongside"}, item])
    assert fragment in str(err.value)
    assert (await client.stats()).in_session == 0


async def test_store_accepts_utf8_bytes_and_given_vectors(client: MemorySystemClient, embedder) -> None:
    mid = await client.store(content="bytes that are UTF-8: café".encode())
    assert (await client.get(mid)).content == "bytes that are UTF-8: café"
    vec = embedder.embed(["a memory with a precomputed vector about phylogenetics"])[0] * 3.0
    vid = await client.store(content="phylogenetic trees", vector=vec.tolist())
    hits = await client.retrieve(query="a memory with a precomputed vector about phylogenetics", top_k=1)
    assert hits[0].id == vid and hits[0].similarity == pytest.approx(1.0, abs=1e-4)


async def test_a_given_query_vector_drives_the_dense_search(client: MemorySystemClient, embedder) -> None:
    a = await client.store(content="STAR aligned the mouse reads")
    b = await client.store(content="kallisto quantified the zebrafish transcripts")
    vec = embedder.embed(["kallisto quantified the zebrafish transcripts"])[0]
    hits = await client.retrieve(query="laboratory notes", top_k=2, query_vector=vec * 2.0)  # normalised
    assert hits[0].id == b and hits[0].similarity == pytest.approx(1.0, abs=1e-4)
    assert {h.id for h in hits} == {a, b}
    for bad, fragment in (([1.0, 2.0], "shape"), ([float("nan")] * len(vec), "non-finite")):
        with pytest.raises(MemoryInputError, match=fragment):
            await client.retrieve(query="alignment", query_vector=bad)


async def test_write_behind_reads_its_writes_and_flushes_on_close(make_client: MakeClient) -> None:
    client = make_client(storage={"enable_async_writes": True, "flush_interval": 3600, "batch_size": 100})
    mid = await client.store(content="write-behind note about HISAT2")
    assert client.writes.counters()["pending"] == 1
    (hit,) = await client.retrieve(query="HISAT2", top_k=1)
    assert hit.id == mid
    assert client.writes.counters()["pending"] == 0
    other = await client.store(content="second write-behind note")
    session = client.session_id
    await client.close()
    again = make_client(session_id=session)
    assert (await again.get(other)) is not None or again.config.backend == "in_memory"


async def test_nested_contexts_see_ancestors_and_merge_up(make_client: MakeClient) -> None:
    parent = make_client()
    await parent.store(content="parent knows the reference is GRCh38")
    child_session = parent.create_nested_context(parent.session_id, "loop1")
    grandchild_session = parent.create_nested_context(child_session, "inner")
    await parent.store(content="child found that STAR needs 32 GB", session_id=child_session)
    await parent.store(content="grandchild found the index is stale", session_id=grandchild_session)
    seen = {r.content for r in await parent.retrieve(query="what was found", top_k=10, session_id=grandchild_session)}
    assert len(seen) == 3
    own = await parent.retrieve(query="what was found", top_k=10, session_id=parent.session_id)
    assert len(own) == 1  # parent: only its own
    parent.merge_nested_context(grandchild_session, child_session)
    parent.merge_nested_context(child_session, parent.session_id)
    merged = await parent.retrieve(query="STAR needs 32 GB", top_k=10, session_id=parent.session_id)
    assert len(merged) == 3  # linked: each memory once, from the session that wrote it
    assert {m.document.session_id for m in merged} == {
        parent.session_id, child_session, grandchild_session}


async def test_stats_and_health(client: MemorySystemClient) -> None:
    await _seed(client)
    stats = await client.stats()
    assert (stats.available, stats.in_session, stats.outbox, stats.written) == (True, 5, 0, 5)
    health = await client.health()
    assert health.ok and health.backend == client.config.backend


async def test_profile_priorities_and_failure_patterns(client: MemorySystemClient) -> None:
    await client.store(content="Ran samtools sort on the BAM", memory_type="tool_execution",
                       metadata={"tool": "samtools", "success": False, "error": "disk full"})
    await client.store(content="Ran samtools sort on the BAM", memory_type="note",
                       metadata={"tool": "samtools", "success": True})
    ranked = await client.retrieve(query="about to run samtools sort", profile="executor", top_k=5)
    assert ranked[0].metadata["success"] is False
    assert "failure_patterns" in ranked[0].signals
    with pytest.raises(Exception, match="choices"):
        await client.retrieve(query="x", profile="nobody")


def test_vectors_are_unit_norm(embedder) -> None:
    v = embedder.embed(["unit norm check"])
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


# -- namespaces: the hard boundary, at the backend interface every backend implements --------
NS_TEXTS = ["STAR aligns spliced RNA-seq reads", "Salmon quantifies transcripts",
            "DESeq2 tests differential expression"]


async def _two_namespaces(client: MemorySystemClient, embedder) -> list[MemoryRecord]:
    """The same three memories (one session "s", a FOLLOWS chain) in namespaces a and b, and
    a link from b's first memory to a's first."""
    await client.open()
    vectors = embedder.embed(NS_TEXTS)
    records = []
    for ns in ("a", "b"):
        for i, text in enumerate(NS_TEXTS):
            relations = [("follows", f"{ns}{i - 1}")] if i else []
            if ns == "b" and i == 0:
                relations.append(("references", "a0"))
            records.append(MemoryRecord(
                id=f"{ns}{i}", namespace=ns, session_id="s", memory_type="note", content=text,
                created_at=1000.0 + i, relations=relations, vector=vectors[i]))
    await client.backend.upsert(records)
    return records


async def test_a_namespace_sees_nothing_of_another(client: MemorySystemClient, embedder) -> None:
    await _two_namespaces(client, embedder)
    backend, only_a = client.backend, MemoryFilter(namespaces=("a",))
    query = embedder.embed(["which tool aligns RNA-seq reads?"])[0]
    dense = await backend.vector_search(query, 10, only_a)
    assert sorted(c.record.id for c in dense) == ["a0", "a1", "a2"]
    lexical = await backend.text_search("STAR Salmon DESeq2", 10, only_a)
    assert sorted(c.record.id for c in lexical) == ["a0", "a1", "a2"]
    assert [r.id for r in await backend.scan(only_a)] == ["a0", "a1", "a2"]
    assert await backend.count(only_a) == 3
    assert await backend.count(MemoryFilter(namespaces=("a",), session_ids=("s",))) == 3
    related = await backend.related_many(["a0", "a1"], None, 2, only_a)
    assert {r.record.namespace for found in related.values() for r in found} == {"a"}
    assert {r.record.id for r in related["a0"]} == {"a1", "a2"}  # b0's link to a0 is not followed out
    neighbours = await backend.session_neighbours(["a1"], 2, only_a)
    assert sorted(r.record.id for r in neighbours["a1"]) == ["a0", "a2"]
    assert await backend.delete(MemoryFilter(namespaces=("a",), session_ids=("s",))) == 3
    assert await backend.count(MemoryFilter(namespaces=("b",))) == 3
    assert await backend.count(MemoryFilter()) == 3


async def test_session_neighbours_equal_the_generic_walk(client: MemorySystemClient, embedder) -> None:
    """session_neighbours is an optimisation a backend may override: what each backend
    answers equals the contract's generic path (a FOLLOWS walk of related_many)."""
    await _two_namespaces(client, embedder)
    backend, only_a = client.backend, MemoryFilter(namespaces=("a",))

    def ids(found: dict) -> dict[str, set[tuple[str, str, int]]]:
        return {start: {(r.record.id, r.relation, r.depth) for r in walk}
                for start, walk in found.items() if walk}

    for starts, radius in ((["a1"], 2), (["a0", "a2"], 1)):
        found = ids(await backend.session_neighbours(starts, radius, only_a))
        assert found and found == ids(
            await MemoryBackend.session_neighbours(backend, starts, radius, only_a))


async def test_an_id_is_scoped_by_its_namespace(client: MemorySystemClient, embedder) -> None:
    """Namespace c writing ids a's memories have: two records each, neither touching the
    other's content, relations, search or delete."""
    records = await _two_namespaces(client, embedder)
    backend = client.backend
    same = [MemoryRecord(id=f"a{i}", namespace="c", session_id="s", memory_type="note",
                         content=f"c's own memory {i}", created_at=2000.0 + i,
                         relations=[("follows", f"a{i - 1}")] if i else [],
                         vector=records[2 - i].vector) for i in range(3)]
    await backend.upsert(same)
    assert await backend.count(MemoryFilter(namespaces=("c",))) == 3
    assert await backend.count(MemoryFilter(namespaces=("a",))) == 3
    (a1,) = await backend.get(["a1"], "a")
    (c1,) = await backend.get(["a1"], "c")
    assert (a1.namespace, a1.content) == ("a", NS_TEXTS[1])
    assert (c1.namespace, c1.content, c1.relations) == ("c", "c's own memory 1", [("follows", "a0")])
    assert await backend.get(["a1"]) == []  # the default namespace has no a1
    walks = await backend.related_many(["a1"], None, 2, MemoryFilter(namespaces=("c",)))
    assert sorted((r.record.namespace, r.record.content) for r in walks["a1"]) == [
        ("c", "c's own memory 0"), ("c", "c's own memory 2")]
    walks = await backend.related_many(["a1"], None, 2, MemoryFilter(namespaces=("a",)))
    assert sorted(r.record.content for r in walks["a1"]) == sorted([NS_TEXTS[0], NS_TEXTS[2]])
    query = embedder.embed([NS_TEXTS[1]])[0]
    (hit,) = await backend.vector_search(query, 1, MemoryFilter(namespaces=("a",)))
    assert (hit.record.namespace, hit.record.id) == ("a", "a1")
    await backend.upsert([MemoryRecord(id="a1", namespace="c", session_id="s",
                                       memory_type="note", content="c replaced its a1",
                                       created_at=3000.0, vector=records[0].vector)])
    assert (await backend.get(["a1"], "c"))[0].content == "c replaced its a1"
    assert (await backend.get(["a1"], "a"))[0].content == NS_TEXTS[1]
    assert await backend.delete(MemoryFilter(namespaces=("c",), ids=("a1",))) == 1
    assert [r.id for r in await backend.scan(MemoryFilter(namespaces=("a",)))] == ["a0", "a1", "a2"]
    assert await backend.count(MemoryFilter(ids=("a1",))) == 1


async def test_a_batch_is_all_or_nothing(client: MemorySystemClient, embedder) -> None:
    await client.open()
    vectors = embedder.embed(["first memory", "second memory"])
    good = MemoryRecord(id="good", session_id="s", memory_type="note", content="first memory",
                        created_at=1.0, vector=vectors[0])
    bad = MemoryRecord(id="bad", session_id="s", memory_type="note", content="second memory",
                       created_at=2.0, vector=vectors[1][:10])  # wrong dimension
    with pytest.raises((MemoryBackendError, MemoryInputError), match="bad"):
        await client.backend.upsert([good, bad])
    assert await client.backend.count(MemoryFilter()) == 0
    await client.backend.upsert([good])
    await client.backend.upsert([good])  # idempotent by id
    assert await client.backend.count(MemoryFilter()) == 1
