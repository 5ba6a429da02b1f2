"""The FOLLOWS chain across runs: a session the client made up needs no lookup of its last
memory (nor do the nested contexts named after it); a continued session still links its
first new memory to the last one an earlier client stored; after a delete the lookup is back.
Runs on every backend (the real stores)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.models import RelationType


def _count_lookups(client: MemorySystemClient) -> list[Any]:
    """Record every count() the client asks of its (real) backend."""
    calls: list[Any] = []
    backend = client.backend
    count = backend.count

    async def counted(flt):  # type: ignore[no-untyped-def]
        calls.append(flt)
        return await count(flt)

    backend.count = counted  # type: ignore[method-assign]
    return calls


async def _follows(client: MemorySystemClient, memory_id: str) -> list[str]:
    """The memory `memory_id` FOLLOWS, as stored."""
    (record,) = await client.backend.get([memory_id])
    return [dst for kind, dst in record.relations if kind == RelationType.FOLLOWS.value]


async def test_made_up_session_chains_without_lookups_continued_one_links_back(
    memory_config_factory: Callable[..., MemoryConfig], embedder: Embedder
) -> None:
    first = MemorySystemClient(memory_config_factory(), embedder=embedder)  # session made up
    lookups = _count_lookups(first)
    a = await first.store(content="run one: STAR aligned the reads")
    b = await first.store(content="run one: featureCounts counted them")
    child = first.create_nested_context(first.session_id, "root.1")
    c = await first.store(content="run one, nested: HISAT2 was tried too", session_id=child)
    assert lookups == []  # nothing of these sessions can exist before this client
    assert await _follows(first, b) == [a]
    assert await _follows(first, c) == []  # the nested session's first memory
    session = first.session_id
    await first.close()
    if first.config.backend == "in_memory":
        return  # keeps nothing across clients

    again = MemorySystemClient(memory_config_factory(), session_id=session, embedder=embedder)
    lookups = _count_lookups(again)
    d = await again.store(content="run two continues: DESeq2 tested the counts")
    assert len(lookups) == 1  # the continued session's tail was looked up once
    assert await _follows(again, d) == [b]
    e = await again.store(content="run two, nested, continues", session_id=child)
    assert await _follows(again, e) == [c]
    await again.close()


async def test_after_a_delete_the_tail_of_a_made_up_session_is_looked_up(
    memory_config_factory: Callable[..., MemoryConfig], embedder: Embedder
) -> None:
    client = MemorySystemClient(memory_config_factory(), embedder=embedder)
    a = await client.store(content="kept: the reference is GRCh38")
    b = await client.store(content="forgotten: a wrong read length")
    assert await client.forget(b) == 1
    lookups = _count_lookups(client)
    c = await client.store(content="after the forget: reads are 150 bp")
    assert len(lookups) == 1
    assert await _follows(client, c) == [a]
    await client.close()
