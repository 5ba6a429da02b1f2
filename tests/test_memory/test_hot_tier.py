"""The hot tier (hot_tier.py) on the real in_memory and embedded (faiss) backends: it answers
repeated gets and retrieves, equal to what the stores answer, and never serves a forgotten,
expired or changed memory; its entries live memory.hot.ttl_seconds, within its bounds.

Time is a clock the client reads (`clock=`): advancing it ages entries and memories alike."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import pytest

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.config import HotConfig
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.hot_tier import HotTier
from DeepResearch.src.memory.models import MemoryDocument, RetrievedMemory

TEXTS = [
    "STAR aligns RNA-seq reads to the genome quickly",
    "HISAT2 is a memory-efficient aligner for RNA-seq reads",
    "Salmon quantifies transcripts without a full alignment",
    "BWA-MEM aligns DNA reads for variant calling",
    "FastQC reports the quality of sequencing reads",
    "MultiQC gathers quality reports of many samples",
]
QUERY = "which aligner suits RNA-seq reads?"


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(params=["in_memory", "faiss"])
def backend_name(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def hot_client(
    memory_config_factory: Callable[..., MemoryConfig], embedder: Embedder, clock: Clock
) -> AsyncIterator[Callable[..., MemorySystemClient]]:
    made: list[MemorySystemClient] = []

    def make(**hot: Any) -> MemorySystemClient:
        client = MemorySystemClient(memory_config_factory(hot=hot), embedder=embedder,
                                    session_id=f"hot-{uuid4().hex[:8]}", clock=clock)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.close()


def answer(results: list[RetrievedMemory]) -> list[tuple[Any, ...]]:
    """Everything a caller reads of a retrieve's answer."""
    return [(m.id, m.rank, m.score, m.similarity, m.signals, m.paths, m.document.model_dump())
            for m in results]


async def from_stores(client: MemorySystemClient, query: str = QUERY, **kw: Any) -> list[RetrievedMemory]:
    """The stores' answer now: the tier told that anything may have changed, then asked."""
    client.hot.changed()
    return await client.retrieve(query, **kw)


async def hits(client: MemorySystemClient) -> tuple[int, int]:
    stats = await client.stats()
    return stats.hot_hits, stats.hot_misses


async def test_a_repeated_retrieve_and_a_get_are_answered_equal_to_the_stores(hot_client) -> None:
    client = hot_client()
    ids = await client.store_many([{"content": t, "metadata": {"n": i, "tags": ["a", "b"]}}
                                   for i, t in enumerate(TEXTS)])
    first = await client.retrieve(QUERY, top_k=4)
    assert await hits(client) == (0, 1)
    again = await client.retrieve(QUERY, top_k=4)
    assert await hits(client) == (1, 1)
    assert answer(again) == answer(first) == answer(await from_stores(client, top_k=4))
    # another top_k, filter or scope is another question
    await client.retrieve(QUERY, top_k=3)
    await client.retrieve(QUERY, top_k=4, filters={"n": 1})
    assert (await hits(client))[0] == 1

    stored = await client.get(ids[2])  # stored by this session: in the tier
    assert (await hits(client))[0] == 2
    client.hot.changed([ids[2]])
    assert stored is not None and stored.document == (await client.get(ids[2])).document
    assert (await hits(client))[0] == 2


async def test_a_forgotten_memory_is_never_served(hot_client) -> None:
    client = hot_client()
    ids = await client.store_many([{"content": t} for t in TEXTS])
    before = await client.retrieve(QUERY, top_k=4)
    assert ids[0] in [m.id for m in before]
    await client.retrieve(QUERY, top_k=4)
    assert await client.get(ids[0]) is not None
    assert (await hits(client))[0] == 2  # both answered by the tier

    assert await client.forget([ids[0]]) == 1
    assert await client.get(ids[0]) is None
    after = await client.retrieve(QUERY, top_k=4)
    assert ids[0] not in [m.id for m in after]
    assert answer(after) == answer(await from_stores(client, top_k=4))

    # a forget by filter (its ids unknown beforehand) and by session too
    await client.retrieve(QUERY, top_k=4)
    await client.get(ids[1])
    await client.forget(filters={"memory_type": "note"}, session_id=client.session_id, confirm=True)
    assert await client.get(ids[1]) is None
    assert await client.retrieve(QUERY, top_k=4) == []


async def test_an_archived_or_repinned_memory_is_never_served_stale(hot_client) -> None:
    client = hot_client()
    ids = await client.store_many([{"content": t} for t in TEXTS])
    assert ids[0] in [m.id for m in await client.retrieve(QUERY, top_k=4)]
    await client.get(ids[0])
    assert await client.archive([ids[0]], reason="test") == 1
    assert await client.get(ids[0]) is None
    assert ids[0] not in [m.id for m in await client.retrieve(QUERY, top_k=4)]
    assert await client.restore([ids[0]]) == 1
    assert ids[0] in [m.id for m in await client.retrieve(QUERY, top_k=4)]
    await client.pin([ids[0]])
    assert (await client.get(ids[0])).metadata.get("pinned") is True


async def test_an_expired_memory_is_never_served(hot_client, clock: Clock) -> None:
    client = hot_client()
    ids = await client.store_many([{"content": TEXTS[0], "ttl": 60}]
                                  + [{"content": t} for t in TEXTS[1:]])
    await client.retrieve(QUERY, top_k=4)
    served = await client.retrieve(QUERY, top_k=4)
    assert ids[0] in [m.id for m in served] and (await hits(client))[0] == 1
    assert await client.get(ids[0]) is not None and (await hits(client))[0] == 2

    clock.advance(61)  # the memory expired; the tier's entries have not (ttl 3600 s)
    after = await client.retrieve(QUERY, top_k=4)
    assert ids[0] not in [m.id for m in after]
    assert answer(after) == answer(await from_stores(client, top_k=4))
    hits_before = (await hits(client))[0]
    await client.get(ids[0])  # what the store says of it is the store's business: not the tier's
    assert (await hits(client))[0] == hits_before


async def test_entries_live_ttl_seconds(hot_client, clock: Clock) -> None:
    client = hot_client(ttl_seconds=100)
    ids = await client.store_many([{"content": t} for t in TEXTS])
    await client.retrieve(QUERY, top_k=4)
    clock.advance(99)
    await client.retrieve(QUERY, top_k=4)
    await client.get(ids[0])
    assert await hits(client) == (2, 1)
    clock.advance(2)  # past the ttl of both entries
    await client.get(ids[0])
    await client.retrieve(QUERY, top_k=4)
    assert await hits(client) == (2, 3)
    assert (await client.stats()).hot_items > 0  # what the stores answered is kept again


async def test_a_write_in_the_scope_sends_the_next_retrieve_to_the_stores(hot_client) -> None:
    client = hot_client()
    await client.store_many([{"content": t} for t in TEXTS[2:]])
    await client.retrieve(QUERY, top_k=4)
    new = await client.store("STAR and HISAT2 are the usual RNA-seq aligners")
    after = await client.retrieve(QUERY, top_k=4)
    assert await hits(client) == (0, 2)
    assert new in [m.id for m in after]
    assert answer(after) == answer(await from_stores(client, top_k=4))


async def test_the_tier_holds_its_bounds(hot_client) -> None:
    client = hot_client(max_items=5)
    ids = await client.store_many([{"content": f"{t} (variant {i})"} for i in range(3) for t in TEXTS])
    for memory_id in ids:
        await client.get(memory_id)
    stats = await client.stats()
    assert stats.hot_items == 5
    assert all([await client.get(i) is not None for i in ids[-5:]])  # the most recent stay
    assert (await client.stats()).hot_hits >= 5

    small = hot_client(max_bytes=4096)
    big = [{"content": f"{t} " + "padding " * 120} for t in TEXTS]  # ~1.2 kB each
    for memory_id in await small.store_many(big):
        await small.get(memory_id)
    stats = await small.stats()
    assert 0 < stats.hot_bytes <= 4096 and stats.hot_items < len(big)


async def test_a_retrieve_whose_ranking_reads_the_clock_is_not_kept(hot_client) -> None:
    """Recency weighting (the profiles') scores by age: asked later, it answers otherwise.
    Named as_of, the same question has one answer."""
    client = hot_client()
    await client.store_many([{"content": t} for t in TEXTS])
    for _ in range(2):
        recalled = await client.retrieve(QUERY, top_k=4, profile="planner")
        await client.retrieve("what did we run last week?", top_k=4)
    assert (await hits(client))[0] == 0
    await client.get(recalled[0].id)  # the memories it recalled are kept, not the answer
    assert (await hits(client))[0] == 1
    as_of = datetime.now(UTC)
    await client.retrieve(QUERY, top_k=4, profile="planner", as_of=as_of)
    again = await client.retrieve(QUERY, top_k=4, profile="planner", as_of=as_of)
    assert (await hits(client))[0] == 2
    assert answer(again) == answer(await from_stores(client, top_k=4, profile="planner", as_of=as_of))


async def test_a_disabled_tier_answers_nothing(hot_client) -> None:
    client = hot_client(enabled=False)
    ids = await client.store_many([{"content": t} for t in TEXTS])
    await client.retrieve(QUERY)
    await client.retrieve(QUERY)
    await client.get(ids[0])
    stats = await client.stats()
    assert (stats.hot_enabled, stats.hot_hits, stats.hot_misses, stats.hot_items) == (False, 0, 0, 0)


def test_a_value_read_while_the_namespace_changed_is_not_kept() -> None:
    tier = HotTier(HotConfig())
    doc = MemoryDocument(id="m1", content="x", session_id="s")
    generation = tier.generation
    tier.changed(["other"])  # a write committed while m1 was being read
    tier.put_memory(doc, generation)
    assert tier.get_memory("m1", time.time()) is None
    tier.put_memory(doc, tier.generation)
    assert tier.get_memory("m1", time.time()) == doc
