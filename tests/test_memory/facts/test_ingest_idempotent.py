"""Ingest is idempotent by message id and independent of arrival order, on every backend
with a fact store (in_memory, faiss, neo4j): sending messages again changes nothing, and a
single-valued predicate's timeline follows the messages' times, not their arrival."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from benchmarks.bench_extraction import messages as synthetic_messages
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.facts.graph import FactGraph
from DeepResearch.src.memory.facts.io import export_lines


def message(i: str, text: str, when: str, author: str = "Ann") -> dict[str, Any]:
    return {"message_id": i, "author_id": author.lower(), "author_name": author,
            "content": text, "timestamp": when, "channel_id": "general"}


# Two moves said in one year: both read as "since the start of last year" (same valid_at).
TWO_MOVES = [message("a1", "We moved to Berlin last year.", "2024-03-01T10:00:00Z"),
             message("a2", "We moved to Paris last year.", "2024-05-01T10:00:00Z")]


async def test_the_same_messages_sent_again_change_nothing(graph: FactGraph) -> None:
    await graph.ingest(TWO_MOVES)
    first = await export_lines(graph)
    for _ in range(2):
        report = await graph.ingest(TWO_MOVES)
        assert report.episodes == ["a1", "a2"]
        assert await export_lines(graph) == first  # same rows, same confidences and times
    history = await graph.facts("Ann", "LIVES_IN", include_history=True)
    assert len(history) == 2
    # both read as true since 2023-01-01: the later message's city is the current one
    assert [f.object for f in history if f.current] == ["Paris"]


async def test_a_realistic_chat_sent_again_adds_no_fact(graph: FactGraph) -> None:
    chat = [{"message_id": m.message_id, "author_id": m.author_id, "author_name": m.author_name,
             "content": m.content, "timestamp": m.timestamp, "channel_id": m.channel_id}
            for m in synthetic_messages(600)]
    await graph.ingest(chat)
    first = await export_lines(graph)
    assert sum('"kind": "fact"' in line for line in first) > 100
    await graph.ingest(chat[:300])
    await graph.ingest(chat)
    assert await export_lines(graph) == first
    for person in {m["author_name"] for m in chat}:
        for predicate in ("LIVES_IN", "WORKS_AT"):
            assert len(await graph.facts(person, predicate)) <= 1, (person, predicate)


async def test_a_repeated_add_fact_with_the_same_evidence_keeps_its_confidence(
    graph: FactGraph,
) -> None:
    for _ in range(3):
        fact = await graph.add_fact("Bo", "HAS_SKILL", "Go", confidence=0.5, evidence="m1")
    assert fact.confidence == 0.5 and fact.evidence == ["m1"]
    again = await graph.add_fact("Bo", "HAS_SKILL", "Go", confidence=0.5, evidence="m2")
    assert again.confidence == 0.75 and again.evidence == ["m1", "m2"]


MOVES = [message("l1", "I live in Berlin.", "2024-01-01T00:00:00Z"),
         message("l2", "I live in Paris.", "2024-02-01T00:00:00Z"),
         message("l3", "I live in Berlin.", "2024-03-01T00:00:00Z"),
         message("l4", "I live in Rome.", "2024-04-01T00:00:00Z")]


async def timeline(graph: FactGraph, prefix: str = "") -> list[tuple[Any, ...]]:
    facts = await graph.facts("Ann", "LIVES_IN", include_history=True)
    return sorted((f.object, f.valid_at, f.invalid_at, f.current,
                   tuple(e.removeprefix(prefix) for e in f.evidence), round(f.confidence, 9))
                  for f in facts)


async def timelines(config: MemoryConfig, embedder: Embedder, messages: list[dict[str, Any]],
                    tag: str) -> dict[tuple[str, ...], list[tuple[Any, ...]]]:
    """The timeline each arrival order of `messages` (one ingest each) leaves, in a namespace
    of its own."""
    seen: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
    for n, order in enumerate(itertools.permutations(messages)):
        async with MemorySystemClient(config, namespace=f"{tag}-{n}", session_id="s",
                                      embedder=embedder) as client:
            graph = FactGraph(client)
            prefix = f"{tag}{n}-"  # ids are unique across namespaces: one prefix per order
            for m in order:
                await graph.ingest([{**m, "message_id": prefix + m["message_id"]}])
            seen[tuple(m["message_id"] for m in order)] = await timeline(graph, prefix)
    return seen


async def test_any_arrival_order_gives_the_same_timeline(
    memory_config_factory: Callable[..., MemoryConfig], fact_embedder: Embedder,
) -> None:
    seen = await timelines(memory_config_factory(), fact_embedder, MOVES[:3], "order")
    expected = [("Berlin", "2024-01-01T00:00:00+00:00", "2024-02-01T00:00:00+00:00", False,
                 ("l1",), 0.9),
                ("Berlin", "2024-03-01T00:00:00+00:00", None, True, ("l3",), 0.9),
                ("Paris", "2024-02-01T00:00:00+00:00", "2024-03-01T00:00:00+00:00", False,
                 ("l2",), 0.9)]
    confidence = seen[("l1", "l2", "l3")][0][5]
    expected = [(*row[:5], confidence) for row in expected]
    for order, got in seen.items():
        assert got == expected, order


async def test_moves_read_as_the_same_time_give_one_timeline_in_any_order(
    memory_config_factory: Callable[..., MemoryConfig], fact_embedder: Embedder,
) -> None:
    seen = await timelines(memory_config_factory(), fact_embedder, TWO_MOVES, "year")
    first, second = seen.values()
    assert first == second
    assert [row[0] for row in first if row[3]] == ["Paris"]  # the later message's


async def test_a_late_message_splits_the_fact_it_falls_inside(graph: FactGraph) -> None:
    await graph.ingest([MOVES[0], MOVES[2], MOVES[3]])  # Berlin (Jan, Mar), Rome (Apr)
    [berlin] = [f for f in await graph.facts("Ann", "LIVES_IN", include_history=True)
                if f.object == "Berlin"]
    assert berlin.evidence == ["l1", "l3"]
    await graph.ingest([MOVES[1]])  # Paris (Feb) arrives last
    rows = [(f.object, f.valid_at[:7], f.invalid_at and f.invalid_at[:7], f.evidence)
            for f in await graph.facts("Ann", "LIVES_IN", include_history=True)]
    assert rows == [("Rome", "2024-04", None, ["l4"]), ("Berlin", "2024-03", "2024-04", ["l3"]),
                    ("Paris", "2024-02", "2024-03", ["l2"]),
                    ("Berlin", "2024-01", "2024-02", ["l1"])]
    assert [f.object for f in await graph.facts("Ann", "LIVES_IN")] == ["Rome"]
    await graph.ingest(MOVES)  # all again: nothing changes
    assert len(await graph.facts("Ann", "LIVES_IN", include_history=True)) == 4


async def test_a_forgotten_message_leaves_no_trace_in_the_timeline(graph: FactGraph) -> None:
    await graph.ingest([MOVES[0], MOVES[2]])  # Berlin (Jan, Mar): one fact, evidence l1, l3
    assert await graph.client.forget("l3") == 1
    assert not any('"l3"' in line for line in await export_lines(graph))
    await graph.ingest([MOVES[1]])  # Paris (Feb): the forgotten March statement stays gone
    rows = [(f.object, f.valid_at[:7], f.invalid_at and f.invalid_at[:7], f.evidence)
            for f in await graph.facts("Ann", "LIVES_IN", include_history=True)]
    assert rows == [("Paris", "2024-02", None, ["l2"]), ("Berlin", "2024-01", "2024-02", ["l1"])]
