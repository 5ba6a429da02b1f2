"""The memory toolset on a pydantic-ai agent driven by a FunctionModel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from DeepResearch.src.datatypes.agents import AgentDependencies
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.toolset import memory_toolset

pytestmark = pytest.mark.integration
FACT = "The lab standardised on STAR 2.7 for RNA-seq alignment in March."


def returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


def store_then_retrieve(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Turn 1: store a fact; turn 2: retrieve it; turn 3: answer with what came back."""
    done = returns(messages)
    if not done:
        args = {"content": FACT, "metadata": {"topic": "aligners"}, "importance": 0.9}
        return ModelResponse(parts=[ToolCallPart("store_memory", args)])
    if len(done) == 1:
        query = {"query": "Which RNA-seq aligner does the lab use?", "top_k": 3}
        return ModelResponse(
            parts=[ToolCallPart("retrieve_memory", {**query, "filters": {"topic": "aligners"}})]
        )
    return ModelResponse(parts=[TextPart(json.dumps(done[-1].content))])


def deps(client: Any, session: str | None = None) -> AgentDependencies:
    return AgentDependencies(
        config=OmegaConf.create({}),
        memory_client=client,
        session_id=session,
        agent_profile="planner" if client is not None else None,
        loop_id="root",
        step_name="plan",
    )


def make_agent(fn: Any) -> Agent[AgentDependencies, str]:
    return Agent(
        FunctionModel(fn),
        deps_type=AgentDependencies,
        toolsets=[memory_toolset()],
        name="planner",
    )


async def test_agent_stores_then_retrieves_what_it_stored(tmp_path: Path) -> None:
    config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path / "mem")})
    async with MemorySystemClient(config, session_id="s1") as client:
        result = await make_agent(store_then_retrieve).run("go", deps=deps(client, "s1"))
        answer = json.loads(result.output)
        [memory] = answer["memories"]
        assert memory["content"] == FACT
        assert memory["metadata"]["topic"] == "aligners"
        assert memory["metadata"]["loop_id"] == "root" and memory["metadata"]["step"] == "plan"
        assert memory["session_id"] == "s1" and memory["score"] > 0
        # It really is in the store, written by the agent, with its importance.
        [stored] = await client.retrieve("RNA-seq aligner of the lab", session_id="s1")
        assert stored.document.agent_type == "planner" and stored.document.importance == 0.9


async def test_related_memories_tool_follows_links(tmp_path: Path) -> None:
    config = MemoryConfig(backend="in_memory")
    async with MemorySystemClient(config, session_id="s") as client:
        first = await client.store("first note about BWA", session_id="s")
        await client.store("second note about BWA", session_id="s")  # FOLLOWS the first

        def related(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if not returns(messages):
                return ModelResponse(
                    parts=[ToolCallPart("get_related_memories", {"memory_id": first})]
                )
            return ModelResponse(parts=[TextPart(json.dumps(returns(messages)[0].content))])

        result = await make_agent(related).run("go", deps=deps(client, "s"))
        [link] = json.loads(result.output)["related"]
        assert link["content"] == "second note about BWA" and link["relation"] == "follows"


async def test_tools_answer_sensibly_when_memory_is_disabled() -> None:
    result = await make_agent(store_then_retrieve).run("go", deps=deps(None))
    answer = json.loads(result.output)
    assert answer["memory"] == "disabled" and answer["memories"] == []


async def test_bad_arguments_go_back_to_the_model_as_a_retry() -> None:
    def bad_then_report(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = returns(messages)  # in pydantic-ai 2.x the retry comes back as a tool return
        if not done:
            return ModelResponse(parts=[ToolCallPart("store_memory", {"content": "   "})])
        return ModelResponse(parts=[TextPart(str(done[0].content))])

    async with MemorySystemClient(MemoryConfig(backend="in_memory"), session_id="s") as client:
        result = await make_agent(bad_then_report).run("go", deps=deps(client, "s"))
        assert "content is empty" in result.output
        assert await client.retrieve("anything", session_id="s") == []


def test_instructions_only_when_memory_is_on() -> None:
    def echo(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(f"<{info.instructions or ''}>")])

    agent = make_agent(echo)
    assert agent.run_sync("x", deps=deps(None)).output == "<>"
    with_memory = deps(object(), "s")
    assert "retrieve_memory" in agent.run_sync("x", deps=with_memory).output
