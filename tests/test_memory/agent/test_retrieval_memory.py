"""The retrieval agent's hybrid memory retrieval (search_memory) over a real in_memory client
and the real embedding model."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from DeepResearch.src.memory import MemorySystemClient
from DeepResearch.src.memory.agent.retrieval import retrieve_context
from DeepResearch.src.memory.embeddings import Embedder
from tests.test_memory.agent.fake_graph import FakeFactGraph


@pytest.fixture
async def memory_client(embedder: Embedder) -> AsyncIterator[MemorySystemClient]:
    client = MemorySystemClient({"backend": "in_memory"}, namespace="ragent", embedder=embedder)
    await client.open()
    await client.store("Dana fixed the flaky TypeScript build by pinning the compiler version",
                       memory_type="conversation", metadata={"evidence": ["msg_9"]})
    await client.store("Alice HAS_SKILL TypeScript. proficiency=expert", memory_type="fact",
                       metadata={"confidence": 0.9, "evidence": ["msg_1"]})
    await client.store("The cafeteria closes at three on Fridays", memory_type="note")
    yield client
    await client.close()


async def test_without_a_fact_graph_the_memories_answer(memory_client: MemorySystemClient) -> None:
    result = await retrieve_context(None, memory_client, ["Who should I ask about TypeScript?"])
    tools = [e.call.tool for e in result.trace if e.call]
    assert tools == ["search_memory"]
    assert any(f.startswith("Alice has expert-level TypeScript skills (confidence: 0.90, evidence: msg_1)")
               for f in result.facts), result.facts
    assert any("flaky TypeScript build" in f and "evidence: msg_9" in f for f in result.facts)


async def test_memories_follow_when_the_fact_tools_find_nothing(memory_client: MemorySystemClient) -> None:
    graph = FakeFactGraph()
    result = await retrieve_context(graph, memory_client, ["Who should I ask about TypeScript?"])
    tools = [e.call.tool for e in result.trace if e.call]
    assert tools[:3] == ["find_experts", "find_people_by_skill", "find_people_by_topic"]
    assert tools[-1] == "search_memory"
    assert result.metadata.stop_reason == "goal_met"
    assert any("TypeScript" in f for f in result.facts)
