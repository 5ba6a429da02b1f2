"""Merging nested contexts without reading them: sessions the client made up hold only what
it wrote, so their merge needs no scan, and a loop's memories and their merged copies go to
the backend in one write. Runs on every backend (the real stores)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.backends import MemoryFilter
from DeepResearch.src.memory.embeddings import Embedder


def _spy(client: MemorySystemClient, method: str) -> list[Any]:
    """Record the arguments of every call of one (real) backend method."""
    calls: list[Any] = []
    backend = client.backend
    real = getattr(backend, method)

    async def spied(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return await real(*args, **kwargs)

    setattr(backend, method, spied)
    return calls


async def _nested_run(client: MemorySystemClient) -> tuple[list[int], list[tuple[str, list[str]]]]:
    """Loops inside loops, merged up; what the parent session holds at the end."""
    child = client.create_nested_context(client.session_id, "loop1")
    grandchild = client.create_nested_context(child, "inner")
    await client.store(content="parent knows the reference is GRCh38")
    await client.store(content="child found that STAR needs 32 GB", session_id=child)
    await client.store(content="parent knows the reference is GRCh38", session_id=child)
    await client.store(content="grandchild found the index is stale", session_id=grandchild)
    counts = [
        await client.merge_nested_context(grandchild, child),
        await client.merge_nested_context(child, client.session_id),
        await client.merge_nested_context(child, client.session_id),  # nothing new
    ]
    parent = await client.backend.scan(MemoryFilter(session_ids=(client.session_id,)))
    return counts, [(r.content, sorted(kind for kind, _ in r.relations)) for r in parent]


async def test_merging_made_up_sessions_reads_nothing_and_matches_a_reading_merge(
    memory_config_factory: Callable[..., MemoryConfig], embedder: Embedder
) -> None:
    made_up = MemorySystemClient(memory_config_factory(), embedder=embedder)
    await made_up.open()
    scans = _spy(made_up, "scan")
    got = await _nested_run(made_up)
    assert len(scans) == 1  # the one in _nested_run itself
    continued = MemorySystemClient(memory_config_factory(), session_id="given-by-the-caller",
                                   embedder=embedder)
    want = await _nested_run(continued)  # its sessions may hold more: the merge reads them
    assert got == want
    assert got[0] == [1, 2, 0]
    assert [content for content, _ in got[1]] == [
        "parent knows the reference is GRCh38",
        "child found that STAR needs 32 GB",
        "grandchild found the index is stale",
    ]
    assert got[1][1][1] == ["follows", "part_of"]
    await made_up.close()
    await continued.close()


async def test_after_a_delete_merges_read_their_sessions_again(
    memory_config_factory: Callable[..., MemoryConfig], embedder: Embedder
) -> None:
    client = MemorySystemClient(memory_config_factory(), embedder=embedder)
    child = client.create_nested_context(client.session_id, "loop1")
    kept = await client.store(content="STAR needs 32 GB", session_id=child)
    dropped = await client.store(content="a note deleted before the merge", session_id=child)
    assert await client.forget(ids=[dropped]) == 1
    scans = _spy(client, "scan")
    assert await client.merge_nested_context(child, client.session_id) == 1
    assert scans  # read, not taken from what the client wrote
    (copy,) = await client.backend.scan(MemoryFilter(session_ids=(client.session_id,)))
    assert ("part_of", kept) in copy.relations
    await client.close()


async def test_batched_writes_go_to_the_backend_in_one_write_and_lose_nothing(
    memory_config_factory: Callable[..., MemoryConfig], embedder: Embedder
) -> None:
    client = MemorySystemClient(memory_config_factory(), embedder=embedder)
    await client.open()
    upserts = _spy(client, "upsert")
    async with client.batched_writes():
        await client.store(content="first note")
        await client.store(content="second note")
        assert upserts == []
    assert [len(records) for (records,) in upserts] == [2]

    async with client.batched_writes():  # a read inside sees what was stored before it
        third = await client.store(content="third note, about STAR")
        assert await client.get(third) is not None

    with pytest.raises(RuntimeError):
        async with client.batched_writes():
            fourth = await client.store(content="fourth note")
            raise RuntimeError("the loop failed")
    assert await client.get(fourth) is not None
    await client.close()


async def test_a_nested_loop_end_stores_and_merges_in_one_write(
    memory_config_factory: Callable[..., MemoryConfig], embedder: Embedder
) -> None:
    """The workflow's loop end: the child's pending memories and their copies in the parent,
    one backend write, no reads."""
    client = MemorySystemClient(memory_config_factory(), embedder=embedder)
    await client.open()
    child = client.create_nested_context(client.session_id, "root.1")
    upserts, scans = _spy(client, "upsert"), _spy(client, "scan")
    async with client.batched_writes():
        await client.store_many([{"content": f"tool run {i}"} for i in range(3)], session_id=child)
        assert await client.merge_nested_context(child, client.session_id) == 3
    assert [len(records) for (records,) in upserts] == [6] and scans == []
    await client.close()
