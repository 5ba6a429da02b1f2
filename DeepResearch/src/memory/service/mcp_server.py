"""The MCP server (official `mcp` SDK 2.x, `MCPServer`): the same operations as the HTTP API,
as tools. Over HTTP (mounted at /mcp, streamable HTTP) a call reaches the namespace of the
request's API key; over stdio (`deepresearch-memory mcp`, a local process) it reaches
`memory.namespace`. Tools: the four memory tools, add_fact, ingest_messages, the ten fact
tools (facts/tools.py) and retrieve_context (the retrieval agent)."""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from DeepResearch.src.memory.errors import MemoryBackendError, MemorySubsystemError
from DeepResearch.src.memory.facts.tools import TOOLS
from DeepResearch.src.memory.service import operations as ops
from DeepResearch.src.memory.service.namespaces import AuthError
from DeepResearch.src.memory.service.state import ServiceState, ServiceTimeout
from DeepResearch.src.memory.writes import failure_cause

T = TypeVar("T")
INSTRUCTIONS = (
    "Long-term memory. search_memory before answering questions about earlier work or the "
    "user; store_memory for facts, decisions and results worth keeping (one idea per memory); "
    "get_memory / forget_memory by id. People and what is known about them: the fact tools "
    "(get_person_profile, find_people_by_skill, ..., semantic_search_facts), or "
    "retrieve_context for a whole conversation; add_fact / ingest_messages to teach it."
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
        filters: dict[str, Any] | None = None, profile: str | None = None,
    ) -> dict[str, Any]:
        """Ranked memories for a query (best first): id, content, score, metadata. `profile`:
        one of the configured retrieval profiles (e.g. planner, executor)."""
        ns = namespace(ctx)
        hits = await run("search_memory", lambda: ops.search(
            state, ns, query, top_k=top_k, filters=filters, session_id=session_id,
            profile=profile))
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
    async def forget_memory(memory_id: str, ctx: Context, confirm: bool = False) -> dict[str, Any]:
        """Delete one memory by id (and the facts built on it). A delete of more memories
        than the service's memory.forget.confirm_above needs confirm=true."""
        ns = namespace(ctx)
        deleted = await run("forget_memory", lambda: ops.forget(state, ns, memory_id, confirm))
        if not deleted:
            raise ToolError(f"no memory with id {memory_id!r}")
        return {"deleted": deleted}

    @server.tool()
    async def add_fact(
        subject: str, predicate: str, object: str, ctx: Context, subject_type: str = "Person",
        object_type: str | None = None, confidence: float = 1.0,
        evidence: list[str] | None = None, valid_at: str | None = None,
        invalid_at: str | None = None,
    ) -> dict[str, Any]:
        """Add one fact (subject -- PREDICATE --> object, e.g. Ann WORKS_AT Acme) with its
        confidence, evidence (message ids) and validity (ISO dates). A newer contradicting
        fact closes the older one instead of deleting it."""
        ns = namespace(ctx)
        item = {"subject": subject, "predicate": predicate, "object": object,
                "subject_type": subject_type, "object_type": object_type,
                "confidence": confidence, "evidence": evidence or ["mcp"],
                "valid_at": valid_at, "invalid_at": invalid_at}
        facts = await run("add_fact", lambda: ops.add_facts(state, ns, [item], "mcp"))
        return facts[0]

    @server.tool()
    async def ingest_messages(
        messages: list[dict[str, Any]], ctx: Context, channel_id: str | None = None,
    ) -> dict[str, Any]:
        """Store conversation messages ({message_id, author_id, author_name, content,
        timestamp}) and the entities and facts found in them."""
        ns = namespace(ctx)
        report = await run("ingest_messages", lambda: ops.ingest(state, ns, messages, channel_id))
        return {"messages": report.messages, "episodes": report.episodes,
                "facts": [f.model_dump(mode="json") for f in report.facts],
                "problems": report.problems}

    @server.tool()
    async def retrieve_context(
        messages: list[dict[str, Any]], ctx: Context, channel_id: str | None = None,
        max_facts: int = 30, max_iterations: int = 10,
    ) -> dict[str, Any]:
        """The facts worth knowing for a conversation (messages: {author_name, content,
        timestamp?}, oldest first), found by the retrieval agent's planned tool calls."""
        ns = namespace(ctx)
        if not 1 <= max_facts <= 100 or not 1 <= max_iterations <= 20:
            raise ToolError(f"max_facts must be 1-100 and max_iterations 1-20, got {max_facts} "
                            f"and {max_iterations}")
        result = await run("retrieve_context", lambda: ops.retrieve(
            state, ns, messages, channel_id or "mcp", max_facts, max_iterations,
            ctx.request_id or "mcp"))
        return {"facts": result.facts, "confidence": result.confidence,
                "details": [d.model_dump(mode="json") for d in result.details],
                "metadata": result.metadata.model_dump(mode="json")}

    for name, tool in TOOLS.items():
        server.add_tool(_fact_tool(state, name, tool, namespace, run), name=name,
                        description=inspect.getdoc(tool))
    return server


def _fact_tool(state: ServiceState, name: str, tool: Callable[..., Any],
               namespace: Callable[[Context], str],
               run: Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[Any]]) -> Callable[..., Any]:
    """One of the ten fact tools as an MCP tool: its own arguments (without the graph) and
    the request's context, bound to the namespace of the request's key."""
    signature = inspect.signature(tool)
    params = list(signature.parameters.values())[1:]
    ctx_param = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)

    @functools.wraps(tool)
    async def call(*args: Any, ctx: Context, **kwargs: Any) -> dict[str, Any]:
        bound = inspect.Signature(params).bind(*args, **kwargs)
        ns = namespace(ctx)
        return await run(name, lambda: ops.fact_tool(state, ns, name, dict(bound.arguments)))

    call.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*params, ctx_param], return_annotation=dict[str, Any])
    call.__annotations__ = {**{k: v for k, v in tool.__annotations__.items() if k != "graph"},
                            "ctx": Context, "return": dict[str, Any]}
    return call
