"""Nested contexts are linked, never copied: the client registers child -> parent when it
makes a nested context, a merge lets the parent see the child and writes nothing. Runs on
every backend (the real stores)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from DeepResearch.src.memory import MemoryConfig, MemoryInputError, MemorySystemClient
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


async def _seen(client: MemorySystemClient, session: str) -> set[str]:
    return {m.content for m in await client.retrieve("what was found", top_k=20, session_id=session)}


async def test_a_merge_links_the_child_and_copies_nothing(
    memory_config_factory: Callable[..., MemoryConfig], embedder: Embedder
) -> None:
    client = MemorySystemClient(memory_config_factory(), embedder=embedder)
    await client.open()
    child = client.create_nested_context(client.session_id, "loop1")
    grandchild = client.create_nested_context(child, "inner")
    await client.store(content="parent knows the reference is GRCh38")
    await client.store(content="child found that STAR needs 32 GB", session_id=child)
    await client.store(content="grandchild found the index is stale", session_id=grandchild)
    assert await _seen(client, client.session_id) == {"parent knows the reference is GRCh38"}

    upserts = _spy(client, "upsert")
    client.merge_nested_context(grandchild, child)
    assert await _seen(client, client.session_id) == {"parent knows the reference is GRCh38"}
    client.merge_nested_context(child, client.session_id)
    client.merge_nested_context(child, client.session_id)  # merging twice: the same
    assert await _seen(client, client.session_id) == {
        "parent knows the reference is GRCh38",
        "child found that STAR needs 32 GB",
        "grandchild found the index is stale",
    }
    assert upserts == []
    stored = await client.backend.scan(MemoryFilter())
    assert len(stored) == 3 and not any(t == "part_of" for r in stored for t, _ in r.relations)
    await client.close()


async def test_the_nested_context_calls_take_effect_when_called(
    memory_config_factory: Callable[..., MemoryConfig], embedder: Embedder
) -> None:
    """create and merge are one style (synchronous): a merge written without `await` is done,
    the seed's `await client.merge_nested_context(...)` still works, and `nested_context`
    merges when its block ends."""
    client = MemorySystemClient(memory_config_factory(), embedder=embedder)
    await client.open()
    first = client.create_nested_context(client.session_id, "loop1")
    await client.store(content="child found that STAR needs 32 GB", session_id=first)
    client.merge_nested_context(first, client.session_id)  # no await: merged all the same
    assert await _seen(client, client.session_id) == {"child found that STAR needs 32 GB"}

    second = client.create_nested_context(client.session_id, "loop2")
    await client.store(content="second child found HISAT2 is lighter", session_id=second)
    merged = await client.merge_nested_context(second, client.session_id)  # seed 000's spelling
    assert (merged.child, merged.parent) == (second, client.session_id)
    assert "second child found HISAT2 is lighter" in await _seen(client, client.session_id)

    with pytest.raises(RuntimeError, match="the loop failed"):
        with client.nested_context(client.session_id, "loop3") as third:
            assert third == f"{client.session_id}:loop3"
            await client.store(content="third child found salmon quantifies", session_id=third)
            assert "third child found salmon quantifies" not in await _seen(client, client.session_id)
            raise RuntimeError("the loop failed")
    assert "third child found salmon quantifies" in await _seen(client, client.session_id)
    await client.close()


async def test_a_nested_context_has_one_parent_and_no_cycle(
    memory_config_factory: Callable[..., MemoryConfig], embedder: Embedder
) -> None:
    client = MemorySystemClient(memory_config_factory(), embedder=embedder)
    child = client.create_nested_context("run", "loop1")
    assert child == "run:loop1"
    with pytest.raises(MemoryInputError, match="is nested in 'run', not in 'other'"):
        client.merge_nested_context(child, "other")
    with pytest.raises(MemoryInputError, match="one of its ancestors"):
        client.merge_nested_context("run", child)
    assert client.create_nested_context(child, "x") == "run:loop1:x"
    with pytest.raises(MemoryInputError, match="is nested in 'run:loop1', not in 'run'"):
        client.create_nested_context("run", "loop1:x")  # the same name, another parent
    await client.close()


async def test_a_merge_registers_a_link_the_client_did_not_make(
    memory_config_factory: Callable[..., MemoryConfig], embedder: Embedder
) -> None:
    """A session made by another client (an earlier run) joins its parent when merged."""
    client = MemorySystemClient(memory_config_factory(), session_id="parent", embedder=embedder)
    await client.store(content="earlier run: kallisto is fast", session_id="elsewhere")
    assert await _seen(client, "parent") == set()
    client.merge_nested_context("elsewhere", "parent")
    assert await _seen(client, "parent") == {"earlier run: kallisto is fast"}
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
