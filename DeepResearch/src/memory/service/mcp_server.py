"""The MCP server (official `mcp` SDK 2.x, `MCPServer`): the same operations as the HTTP API,
as tools. Over HTTP (mounted at /mcp, streamable HTTP) a call reaches the namespace of the
request's API key; over stdio (`deepresearch-memory mcp`, a local process) it reaches
`memory.namespace`. The fact tools and retrieve_context join once the knowledge graph and the
retrieval agent are in this build."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from DeepResearch.src.memory.errors import MemoryBackendError, MemorySubsystemError
from DeepResearch.src.memory.service import operations as ops
from DeepResearch.src.memory.service.namespaces import AuthError
from DeepResearch.src.memory.service.state import ServiceState, ServiceTimeout
from DeepResearch.src.memory.writes import failure_cause

T = TypeVar("T")
INSTRUCTIONS = (
    "Long-term memory. search_memory before answering questions about earlier work or the "
    "user; store_memory for facts, decisions and results worth keeping (one idea per memory); "
    "get_memory / forget_memory by id."
)


def build_mcp_server(state: ServiceState) -> MCPServer:
    server: MCPServer = MCPServer(name="deepresearch-memory", instructions=INSTRUCTIONS,
                                  version=state.version, log_level="WARNING")

    def namespace(ctx: Context) -> str:
        headers = ctx.headers
        if headers is None:  # stdio: the local user
            return state.config.namespace
        lower = {k.lower(): v for k, v in headers.items()}
        key = lower.get("x-api-key")
        auth = lower.get("authorization", "")
        if not key and auth.lower().startswith("bearer "):
            key = auth[7:].strip()
        try:
            return state.namespaces.namespace_for(key)
        except AuthError as exc:
            raise ToolError(str(exc)) from None

    async def run(tool: str, work: Callable[[], Awaitable[T]]) -> T:
        started = time.perf_counter()
        outcome = "ok"
        try:
            return await work()
        except ServiceTimeout as exc:
            outcome = "timeout"
            raise ToolError(str(exc)) from None
        except MemoryBackendError as exc:
            outcome = "backend_unavailable"
            raise ToolError(f"memory backend unavailable: {failure_cause(exc)}") from None
        except MemorySubsystemError as exc:
            outcome = "bad_input"
            raise ToolError(str(exc)) from None
        finally:
            state.metrics.tool_calls.labels(tool, outcome).inc()
            state.metrics.tool_seconds.labels(tool).observe(time.perf_counter() - started)

    @server.tool()
    async def store_memory(
        content: str, ctx: Context, metadata: dict[str, Any] | None = None,
        memory_type: str | None = None, importance: float | None = None,
        session_id: str | None = None, memory_id: str | None = None,
    ) -> dict[str, Any]:
        """Store one memory (a fact, decision or result worth keeping). Returns its id.
        Give memory_id to retry safely: storing an id again replaces that memory."""
        item: dict[str, Any] = {"content": content, "metadata": metadata,
                                "memory_type": memory_type, "importance": importance,
                                "session_id": session_id, "id": memory_id}
        item = {k: v for k, v in item.items() if v is not None}
        ns = namespace(ctx)
        ids = await run("store_memory", lambda: ops.store(state, ns, [item]))
        return {"id": ids[0]}

    @server.tool()
    async def search_memory(
        query: str, ctx: Context, top_k: int = 5, session_id: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Ranked memories for a query (best first): id, content, score, metadata."""
        ns = namespace(ctx)
        hits = await run("search_memory", lambda: ops.search(
            state, ns, query, top_k=top_k, filters=filters, session_id=session_id))
        return {"results": [
            {k: h[k] for k in ("id", "content", "score", "memory_type", "session_id", "metadata",
                               "created_at")}
            for h in hits
        ]}

    @server.tool()
    async def get_memory(memory_id: str, ctx: Context) -> dict[str, Any]:
        """One memory by id."""
        ns = namespace(ctx)
        found = await run("get_memory", lambda: ops.get(state, ns, memory_id))
        if found is None:
            raise ToolError(f"no memory with id {memory_id!r}")
        return found

    @server.tool()
    async def forget_memory(memory_id: str, ctx: Context) -> dict[str, Any]:
        """Delete one memory by id."""
        ns = namespace(ctx)
        deleted = await run("forget_memory", lambda: ops.forget(state, ns, memory_id))
        if not deleted:
            raise ToolError(f"no memory with id {memory_id!r}")
        return {"deleted": deleted}

    return server
