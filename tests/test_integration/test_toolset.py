"""The memory toolset on pydantic-ai agents with their own deps types, driven by FunctionModel:
every tool works, and no tool argument widens what the program bound the tools to."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from DeepResearch.src.memory import MemoryBinding, MemoryConfig, MemorySystemClient, memory_toolset

pytestmark = pytest.mark.integration
FACT = "The lab standardised on STAR 2.7 for RNA-seq alignment in March."


@dataclass
class ChatDeps:
    """A user's own deps type: nothing of the framework's."""

    user: str


def results(messages: list[ModelMessage]) -> list[Any]:
    """What the tools answered so far: returns, and retry prompts (bad arguments)."""
    return [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart | RetryPromptPart)
    ]


def scripted(*calls: tuple[str, dict[str, Any]]) -> FunctionModel:
    """A model that makes `calls` one per turn, then answers with every result as JSON."""

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = results(messages)
        if len(done) < len(calls):
            name, args = calls[len(done)]
            return ModelResponse(parts=[ToolCallPart(name, args)])
        # a retry (bad arguments) comes back as a prompt, or as a tool return with its text
        out = [p.content if isinstance(p.content, dict) else {"retry": str(p.content)} for p in done]
        return ModelResponse(parts=[TextPart(json.dumps(out))])

    return FunctionModel(fn)


async def run(memory: Any, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    agent = Agent(scripted(*calls), deps_type=ChatDeps, toolsets=[memory_toolset(memory)],
                  name="assistant", retries=5)
    return json.loads((await agent.run("go", deps=ChatDeps(user="alice"))).output)


async def test_every_tool_in_an_agent_with_its_own_deps_type(tmp_path: Path) -> None:
    config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path / "mem")})
    async with MemorySystemClient(config, namespace="alice", session_id="chat1") as memory:
        first = await memory.store("Alice prefers BWA for DNA reads.")
        stored, found, related = await run(
            memory,
            ("store_memory", {"content": FACT, "metadata": {"topic": "aligners"}, "importance": 0.6}),
            ("retrieve_memory", {"query": "Which RNA-seq aligner does the lab use?", "top_k": 3,
                                 "filters": {"topic": "aligners"}}),
            ("get_related_memories", {"memory_id": first}),
        )
        assert stored["session_id"] == "chat1"
        [memory_hit] = found["memories"]
        assert memory_hit["id"] == stored["id"] and memory_hit["content"] == FACT
        assert memory_hit["metadata"] == {"topic": "aligners", "origin": "agent", "agent": "assistant"}
        # the agent's note FOLLOWS the first memory of the session
        assert [r["id"] for r in related["related"]] == [stored["id"]]
        doc = (await memory.get(stored["id"])).document
        assert (doc.agent_type, doc.importance, doc.memory_type) == ("assistant", 0.6, "note")


async def test_tools_cannot_reach_past_their_namespace_or_session(tmp_path: Path) -> None:
    config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path / "mem")})
    async with (
        MemorySystemClient(config, namespace="alice", session_id="alice") as alice,
        MemorySystemClient(config, namespace="team", session_id="bob") as bob,
    ):
        secret = await alice.store("alice secret: the vault code is 1234")
        same_ns = await bob.store("carol's note: the vault code is 5555", session_id="carol")
        mine = await bob.store("bob's note: the vault code changes monthly")
        session_only = MemoryBinding(client=bob, scopes=("session",))
        widen_filter, widen_scope, own, walk_other, walk_carol = await run(
            session_only,
            ("retrieve_memory", {"query": "vault code", "filters": {"session_id": "alice"}}),
            ("retrieve_memory", {"query": "vault code", "scope": "all"}),
            ("retrieve_memory", {"query": "vault code", "top_k": 10}),
            ("get_related_memories", {"memory_id": secret}),
            ("get_related_memories", {"memory_id": same_ns}),
        )
        assert "may not name ['session_id']" in widen_filter["retry"]
        assert "scope 'all' is not allowed" in widen_scope["retry"]
        assert [m["id"] for m in own["memories"]] == [mine]
        assert walk_other["related"] == [] and walk_carol["related"] == []
        # With scope "all" the agent sees every session of its namespace, never another namespace.
        [everything] = await run(bob, ("retrieve_memory", {"query": "vault code", "top_k": 10, "scope": "all"}))
        assert {m["id"] for m in everything["memories"]} == {mine, same_ns}


async def test_agent_memories_cannot_claim_framework_trust() -> None:
    async with MemorySystemClient(MemoryConfig(backend="in_memory"), session_id="s") as memory:
        binding = MemoryBinding(client=memory, provenance={"loop_id": "root", "step": "plan"})
        as_answer, with_success, with_loop, loud = await run(
            binding,
            ("store_memory", {"content": "X is the answer", "memory_type": "answer"}),
            ("store_memory", {"content": "X worked", "metadata": {"success": True}}),
            ("store_memory", {"content": "X", "metadata": {"loop_id": "other"}}),
            ("store_memory", {"content": "remember X above all", "importance": 1.0}),
        )
        assert "retry" in as_answer and "answer" in as_answer["retry"]
        assert "set by the program" in with_success["retry"]
        assert "set by the program" in with_loop["retry"]
        doc = (await memory.get(loud["id"])).document
        assert doc.importance == binding.max_importance < 1.0
        assert doc.metadata == {"loop_id": "root", "step": "plan", "origin": "agent", "agent": "assistant"}
        assert await memory.stats() is not None and (await memory.stats()).total == 1


async def test_what_the_tools_store_is_tallied_for_the_program() -> None:
    """A binding's `stored` tally (the workflow's "memory: stored ..." line) counts each memory
    the agent stored, by type, and nothing the store refused."""
    async with MemorySystemClient(MemoryConfig(backend="in_memory"), session_id="s") as memory:
        tally: dict[str, int] = {"plan": 1}
        await run(
            MemoryBinding(client=memory, stored=tally),
            ("store_memory", {"content": "STAR needs 32 GB"}),
            ("store_memory", {"content": "use HISAT2 on laptops", "memory_type": "decision"}),
            ("store_memory", {"content": "   "}),  # refused: a retry, not stored
        )
        assert tally == {"plan": 1, "note": 1, "decision": 1}


async def test_bad_arguments_go_back_to_the_model_as_a_retry() -> None:
    async with MemorySystemClient(MemoryConfig(backend="in_memory"), session_id="s") as memory:
        [blank] = await run(memory, ("store_memory", {"content": "   "}))
        assert "content is empty" in json.dumps(blank)
        assert await memory.retrieve("anything") == []


async def test_a_binder_returning_none_means_memory_is_off() -> None:
    [answer] = await run(lambda ctx: None, ("retrieve_memory", {"query": "anything"}))
    assert answer["memory"] == "disabled" and answer["memories"] == []


def test_instructions_only_when_memory_is_on() -> None:
    def echo(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(f"<{info.instructions or ''}>")])

    client = MemorySystemClient(MemoryConfig(backend="in_memory"))
    on = Agent(FunctionModel(echo), deps_type=ChatDeps, toolsets=[memory_toolset(client)])
    off = Agent(FunctionModel(echo), deps_type=ChatDeps, toolsets=[memory_toolset(lambda ctx: None)])
    assert off.run_sync("x", deps=ChatDeps("a")).output == "<>"
    assert "retrieve_memory" in on.run_sync("x", deps=ChatDeps("a")).output
