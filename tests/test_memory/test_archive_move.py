"""The backend contract's `move` (the archive tier: namespace N's archive is `N~archive`), on
every backend: moved records leave every read of their namespace and come back whole."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from DeepResearch.src.memory import MemorySystemClient
from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord
from DeepResearch.src.memory.backends.record import archive_namespace, is_archive_namespace
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError

MakeClient = Callable[..., MemorySystemClient]
NS = "alice"
ARCHIVE = archive_namespace(NS)


async def _three(client: MemorySystemClient) -> None:
    await client.store("the pottery class meets on tuesday evenings", id="a", session_id="s1")
    await client.store("camping trip to the lake planned for june", id="b", session_id="s1",
                       relations=[("references", "a")])
    await client.store("the sourdough starter needs feeding daily", id="c", session_id="s1")
    await client.flush()  # the backend-level reads below expect the vectors filled


def test_the_archive_namespace_is_no_user_namespace() -> None:
    assert ARCHIVE == "alice~archive" and is_archive_namespace(ARCHIVE)
    assert not is_archive_namespace(NS)
    with pytest.raises(MemoryInputError, match="alice~archive"):
        MemorySystemClient({"backend": "in_memory"}, namespace=ARCHIVE)
    with pytest.raises(MemoryBackendError, match="already an archive"):
        archive_namespace(ARCHIVE)


async def test_moved_records_leave_every_read_and_come_back_whole(make_client: MakeClient) -> None:
    client = make_client(namespace=NS)
    await _three(client)
    backend = client.backend
    before = {r.id: r for r in await backend.get(["a", "b", "c"], NS)}
    live = MemoryFilter(namespaces=(NS,))

    assert await backend.move(["a", "b", "missing"], NS, ARCHIVE) == 2
    assert await backend.get(["a", "b"], NS) == []
    assert await backend.count(live) == 1
    assert [r.id for r in await backend.scan(live)] == ["c"]
    query = before["a"].vector
    assert [c.record.id for c in await backend.vector_search(query, 10, live)] == ["c"]
    assert await backend.text_search("pottery camping", 10, live) == []
    assert await backend.related_many(["c"], None, 3, live) == {}
    assert {r.id for r in await client.retrieve("pottery class", top_k=10)} <= {"c"}

    archived = {r.id: r for r in await backend.get(["a", "b"], ARCHIVE)}
    for rid, record in archived.items():
        old = before[rid]
        assert record.namespace == ARCHIVE
        assert np.array_equal(record.vector, old.vector)
        assert (record.content, record.created_at, record.metadata, record.relations) == (
            old.content, old.created_at, old.metadata, old.relations)
    in_archive = MemoryFilter(namespaces=(ARCHIVE,))
    assert [c.record.id for c in await backend.vector_search(query, 1, in_archive)] == ["a"]
    assert [c.record.id for c in await backend.text_search("pottery", 5, in_archive)] == ["a"]
    walk = await backend.related_many(["b"], ["references"], 1, in_archive)
    assert [r.record.id for r in walk["b"]] == ["a"]  # the edge between moved records stays

    assert await backend.move(["a", "b"], ARCHIVE, NS) == 2
    assert await backend.count(in_archive) == 0
    back = {r.id: r for r in await backend.get(["a", "b", "c"], NS)}
    assert {rid: (r.vector.tobytes(), r.relations) for rid, r in back.items()} == {
        rid: (r.vector.tobytes(), r.relations) for rid, r in before.items()}
    assert [c.record.id for c in await backend.vector_search(query, 1, live)] == ["a"]
    assert [c.record.id for c in await backend.text_search("pottery", 5, live)] == ["a"]
    walk = await backend.related_many(["b"], ["references"], 1, live)
    assert [r.record.id for r in walk["b"]] == ["a"]
    assert await backend.verify() == []


async def test_a_move_replaces_the_record_with_its_id_at_the_destination(
    make_client: MakeClient,
) -> None:
    client = make_client(namespace=NS)
    await _three(client)
    backend = client.backend
    assert await backend.move(["a"], NS, ARCHIVE) == 1
    await client.store("a newer memory under the same id", id="a", session_id="s2")
    assert await backend.move(["a"], NS, ARCHIVE) == 1
    in_archive = MemoryFilter(namespaces=(ARCHIVE,))
    assert [r.content for r in await backend.scan(in_archive)] == [
        "a newer memory under the same id"]
    assert await backend.count(MemoryFilter(namespaces=(NS,))) == 2
    found = await backend.text_search("newer memory", 5, in_archive)
    assert [c.record.id for c in found] == ["a"]
    assert await backend.text_search("pottery", 5, in_archive) == []  # the replaced one's row
    assert await backend.verify() == []


async def test_moved_records_stay_moved_after_reopening(make_client: MakeClient) -> None:
    client = make_client(namespace=NS)
    if client.config.backend == "in_memory":
        pytest.skip("nothing outlives an in_memory client")
    await _three(client)
    vector = (await client.backend.get(["a"], NS))[0].vector
    assert await client.backend.move(["a", "b"], NS, ARCHIVE) == 2
    await client.close()
    again = make_client(namespace=NS)
    live, in_archive = MemoryFilter(namespaces=(NS,)), MemoryFilter(namespaces=(ARCHIVE,))
    await again.open()
    assert await again.backend.verify() == []
    assert [c.record.id for c in await again.backend.vector_search(vector, 5, live)] == ["c"]
    assert [c.record.id for c in await again.backend.vector_search(vector, 1, in_archive)] == ["a"]
    assert (await again.stats()).archived == 2


async def test_a_relation_written_to_an_archived_id_reaches_it_once_restored(
    make_client: MakeClient,
) -> None:
    """While "a" is archived a new memory names it (on neo4j: an edge to a placeholder of
    the namespace); restoring "a" makes the walk from the new memory reach it."""
    client = make_client(namespace=NS)
    await _three(client)
    backend = client.backend
    assert await backend.move(["a"], NS, ARCHIVE) == 1
    await client.store("a note about the pottery class", id="d", session_id="s2",
                       relations=[("references", "a")])
    live = MemoryFilter(namespaces=(NS,))
    assert await backend.related_many(["d"], ["references"], 1, live) == {}
    assert await backend.move(["a"], ARCHIVE, NS) == 1
    walk = await backend.related_many(["d"], ["references"], 1, live)
    assert [r.record.id for r in walk["d"]] == ["a"]
    walk = await backend.related_many(["a"], ["references"], 1, live)
    assert sorted(r.record.id for r in walk["a"]) == ["b", "d"]
    assert await backend.verify() == []


async def test_a_move_patches_the_metadata_of_the_moved_records_only(
    make_client: MakeClient,
) -> None:
    """The patch is applied by the move itself: set keys, removed keys (None), a nested
    value; the records not moved keep theirs; filters, vectors and lexical search see the
    moved records under their new namespace at once (the same vector: no re-embedding)."""
    client = make_client(namespace=NS)
    await client.store("the pottery class meets on tuesday evenings", id="a", session_id="s1",
                       metadata={"topic": "pottery", "stale": 1})
    await client.store("camping trip to the lake planned for june", id="b", session_id="s1",
                       metadata={"topic": "camping"})
    await client.store("the sourdough starter needs feeding daily", id="c", session_id="s1",
                       metadata={"topic": "bread", "stale": 1})
    await client.flush()
    backend = client.backend
    before = {r.id: r for r in await backend.get(["a", "b", "c"], NS)}
    patch = {"archived_at": 12.5, "archive_reason": "old", "stale": None, "tags": ["x", "y"]}

    assert await backend.move(["a", "b", "missing"], NS, ARCHIVE, patch) == 2
    moved = {r.id: r for r in await backend.get(["a", "b"], ARCHIVE)}
    mark = {"archived_at": 12.5, "archive_reason": "old", "tags": ["x", "y"]}
    assert moved["a"].metadata == {"topic": "pottery", **mark}
    assert moved["b"].metadata == {"topic": "camping", **mark}
    (c,) = await backend.get(["c"], NS)
    assert c.metadata == {"topic": "bread", "stale": 1}
    for rid, record in moved.items():
        assert record.vector.tobytes() == before[rid].vector.tobytes()
        assert record.relations == before[rid].relations
    in_archive = MemoryFilter(namespaces=(ARCHIVE,))
    old = MemoryFilter(namespaces=(ARCHIVE,), metadata={"archive_reason": ("old",)})
    assert await backend.count(old) == 2
    assert await backend.count(MemoryFilter(namespaces=(ARCHIVE,), metadata={"stale": (1,)})) == 0
    assert await backend.count(MemoryFilter(namespaces=(NS,), metadata={"stale": (1,)})) == 1
    query = before["a"].vector
    assert [x.record.id for x in await backend.vector_search(query, 1, old)] == ["a"]
    assert [x.record.id for x in await backend.text_search("pottery", 5, in_archive)] == ["a"]

    back = {"archived_at": None, "archive_reason": None, "tags": None}
    assert await backend.move(["a"], ARCHIVE, NS, back) == 1
    (a,) = await backend.get(["a"], NS)
    assert a.metadata == {"topic": "pottery"}
    assert (await backend.get(["b"], ARCHIVE))[0].metadata == {"topic": "camping", **mark}
    live = MemoryFilter(namespaces=(NS,))
    assert [x.record.id for x in await backend.vector_search(query, 1, live)] == ["a"]
    assert await backend.count(MemoryFilter(namespaces=(NS,), metadata={"topic": ("pottery",)})) == 1
    assert await backend.verify() == []


async def test_a_bad_metadata_patch_is_refused_before_anything_moves(
    make_client: MakeClient,
) -> None:
    client = make_client(namespace=NS)
    await _three(client)
    backend = client.backend
    (before,) = await backend.get(["a"], NS)
    with pytest.raises(MemoryInputError, match="'when'"):
        await backend.move(["a"], NS, ARCHIVE, {"archived_at": 1.0, "when": float("nan")})
    with pytest.raises(MemoryInputError, match="key 1"):
        await backend.move(["a"], NS, ARCHIVE, {1: "x"})
    with pytest.raises(MemoryInputError, match="mapping"):
        await backend.move(["a"], NS, ARCHIVE, ["archived_at"])
    (a,) = await backend.get(["a"], NS)
    assert a.metadata == before.metadata
    assert await backend.count(MemoryFilter(namespaces=(ARCHIVE,))) == 0


@pytest.mark.parametrize("backend_name", ["faiss", pytest.param("neo4j", marks=pytest.mark.neo4j)])
async def test_a_row_waiting_for_its_vector_moves_with_its_seq_and_is_filled_there(
    make_client: MakeClient,
) -> None:
    """A row whose vector is still to be filled (vector_fill.py) keeps its key (the
    embedded store's seq, Neo4j's token) and its missing vector through the move: the
    filler finds it in the new namespace, and once filled vector search finds it there,
    without a rebuild."""
    client = make_client(namespace=NS)
    await _three(client)
    backend = client.backend
    await backend.upsert([MemoryRecord(
        id="p", session_id="s1", memory_type="episodic", content="a kiln firing schedule",
        created_at=1.0, namespace=NS, vector=None)])
    waiting = await backend.pending_vectors(10, among=(NS, ["p"]))
    assert list(waiting.values()) == ["a kiln firing schedule"]

    assert await backend.move(["p"], NS, ARCHIVE, {"archived_at": 5.0}) == 1
    assert await backend.pending_vectors(10, among=(NS, ["p"])) == {}
    assert await backend.pending_vectors(10, among=(ARCHIVE, ["p"])) == waiting  # same key
    (p,) = await backend.get(["p"], ARCHIVE)
    assert p.vector is None and p.metadata == {"archived_at": 5.0}
    vector = client.embedder.embed(["a kiln firing schedule"])[0]
    assert await backend.fill_vectors([(seq, vector) for seq in waiting]) == ["p"]
    in_archive = MemoryFilter(namespaces=(ARCHIVE,))
    assert [x.record.id for x in await backend.vector_search(vector, 1, in_archive)] == ["p"]
    assert await backend.verify() == []
