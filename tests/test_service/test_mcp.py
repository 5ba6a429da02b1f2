"""The MCP server, for real: over stdio (`deepresearch-memory mcp`, a subprocess) and over
streamable HTTP (/mcp of a uvicorn server), with the official `mcp` client and with a
pydantic-ai agent (FunctionModel) using it through `MCPToolset`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import httpx
import pytest
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.test_service.conftest import ALICE, BOB, data, http_client

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"store_memory", "search_memory", "get_memory", "forget_memory"}
FACT_TOOLS = {"add_fact", "ingest_messages", "retrieve_context", "get_person_profile",
              "find_people_by_skill", "find_people_by_organization", "get_relationships_between",
              "find_people_by_topic", "get_person_timeline", "find_people_by_location",
              "get_conversation_participants", "find_experts", "semantic_search_facts"}


def stdio_args(store: Path) -> tuple[str, list[str], dict[str, str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return sys.executable, ["-m", "DeepResearch.src.memory.cli", "mcp",
                            f"memory.faiss.path={store}"], env


async def exercise(client: Client) -> str:
    tools = {t.name for t in (await client.list_tools()).tools}
    assert tools >= TOOLS | FACT_TOOLS
    stored = data(await client.call_tool("store_memory", {
        "content": "The lab's cluster uses SLURM with 64 GB nodes", "metadata": {"src": "mcp"}}))
    mid = stored["id"]
    found = data(await client.call_tool("search_memory", {"query": "which scheduler", "top_k": 3}))
    assert found["results"][0]["id"] == mid
    got = data(await client.call_tool("get_memory", {"memory_id": mid}))
    assert got["metadata"] == {"src": "mcp"}
    bad = await client.call_tool("get_memory", {"memory_id": "no-such-id"})
    assert bad.is_error and "no memory" in bad.content[0].text
    return mid


async def test_mcp_client_over_stdio(tmp_path: Path) -> None:
    command, args, env = stdio_args(tmp_path / "stdio-store")
    async with Client(StdioServerParameters(command=command, args=args, env=env)) as client:
        mid = await exercise(client)
        assert data(await client.call_tool("forget_memory", {"memory_id": mid}))["deleted"] == 1


async def test_mcp_client_over_http_is_scoped_by_key(http_service: str) -> None:
    async with http_client(http_service, ALICE) as alice:
        mid = await exercise(alice)
    async with http_client(http_service, BOB) as bob:
        other = await bob.call_tool("get_memory", {"memory_id": mid})
        assert other.is_error  # another namespace's id: not found
        hits = data(await bob.call_tool("search_memory", {"query": "which scheduler"}))
        assert hits["results"] == []
    # the HTTP API sees what MCP stored, in alice's namespace only
    async with httpx.AsyncClient(base_url=http_service) as c:
        r = await c.get(f"/api/memory/memories/{mid}", headers={"X-API-Key": ALICE})
        assert r.status_code == 200
        r = await c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 401 and r.json()["error"] == "unauthorized"
        metrics = (await c.get("/metrics")).text
        assert 'memory_tool_calls_total{outcome="ok",tool="store_memory"} 1.0' in metrics


async def test_fact_tools_over_http(http_service: str) -> None:
    async with http_client(http_service, ALICE) as alice:
        fact = data(await alice.call_tool("add_fact", {
            "subject": "Ann Lee", "predicate": "WORKS_AT", "object": "Acme",
            "confidence": 0.9, "evidence": ["m1"], "valid_at": "2025-01-01"}))
        assert fact["predicate"] == "WORKS_AT" and fact["current"]
        report = data(await alice.call_tool("ingest_messages", {"channel_id": "general",
            "messages": [{"message_id": "m2", "author_id": "u2", "author_name": "Bo Chen",
                          "content": "I know Python really well.",
                          "timestamp": "2026-11-01T10:00:00Z"}]}))
        assert report["episodes"] == ["m2"]
        profile = data(await alice.call_tool("get_person_profile", {"person": "Ann Lee"}))
        assert any(f["object"] == "Acme" for f in profile["facts"])
        experts = data(await alice.call_tool("find_people_by_skill", {"skill": "Python"}))
        assert experts["people"]
        out = data(await alice.call_tool("retrieve_context", {"messages": [
            {"author_name": "Cy", "content": "Where does Ann Lee work?"}], "max_facts": 3}))
        assert any("Acme" in f for f in out["facts"]) and len(out["facts"]) <= 3
        acme = next(d for d in out["details"] if d["object"] == "Acme")  # with its validity
        assert acme["valid_at"].startswith("2025-01-01") and acme["current"] is True
        mentions = data(await alice.call_tool("get_conversation_participants", {"messages": [
            {"author_name": "Cy", "content": "Did Ann Lee ever reply?"}]}))
        assert [m["name"] for m in mentions["explicit_mentions"]] == ["Ann Lee"]
        bad = await alice.call_tool("retrieve_context", {"messages": [], "max_facts": 500})
        assert bad.is_error
    async with http_client(http_service, BOB) as bob:
        profile = data(await bob.call_tool("get_person_profile", {"person": "Ann Lee"}))
        assert profile["facts"] == []  # another namespace


def agent_model():
    """A scripted model: store a memory, search it, answer with what the search returned."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [p for m in messages for p in getattr(m, "parts", [])
                   if isinstance(p, ToolReturnPart)]
        assert {t.name for t in info.function_tools} >= TOOLS
        if not returns:
            return ModelResponse(parts=[ToolCallPart("store_memory", {
                "content": "Ann's favourite aligner is HISAT2"})])
        if len(returns) == 1:
            return ModelResponse(parts=[ToolCallPart("search_memory", {
                "query": "Ann's aligner", "top_k": 1})])
        content = returns[-1].content
        content = json.loads(content) if isinstance(content, str) else content
        return ModelResponse(parts=[TextPart(content["results"][0]["content"])])

    return model


async def run_agent(toolset: MCPToolset) -> None:
    agent = Agent(FunctionModel(agent_model()), toolsets=[toolset])
    async with agent:
        result = await agent.run("What is Ann's favourite aligner? Remember it first.")
    # the answer is the content search_memory returned over MCP: the store went through
    assert result.output == "Ann's favourite aligner is HISAT2"


async def test_pydantic_ai_agent_over_stdio(tmp_path: Path) -> None:
    command, args, env = stdio_args(tmp_path / "agent-stdio")
    await run_agent(MCPToolset(StdioTransport(command, args, env=env, cwd=str(ROOT)),
                               init_timeout=120))


async def test_pydantic_ai_agent_over_http(http_service: str) -> None:
    await run_agent(MCPToolset(StreamableHttpTransport(f"{http_service}/mcp",
                                                       headers={"X-API-Key": ALICE})))
    async with httpx.AsyncClient(base_url=http_service) as c:
        r = await c.post("/api/memory/search", json={"query": "Ann aligner"},
                         headers={"X-API-Key": BOB})
        assert r.json()["results"] == []  # stored in alice's namespace


