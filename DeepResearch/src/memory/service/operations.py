"""What the endpoints and the MCP tools do, written once: each calls the namespace's client
within the time limit, records its latency, and keeps the write state health reports."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from DeepResearch.src.memory.errors import MemoryBackendError
from DeepResearch.src.memory.health import detail as store_detail
from DeepResearch.src.memory.models import MemoryDocument, RetrievedMemory
from DeepResearch.src.memory.service.schemas import HealthResponse, MemoryOut, SearchHit
from DeepResearch.src.memory.service.state import ServiceState, ServiceTimeout
from DeepResearch.src.memory.writes import failure_cause

HEALTH_PROBE_SECONDS = 2.0  # health retries failed writes at most this often
HEALTH_PROBE_TIMEOUT = 1.0  # and gives that retry this long
HEALTH_BACKEND_TIMEOUT = 2.0  # seconds the backend's own health check may take


def memory_out(doc: MemoryDocument) -> dict[str, Any]:
    return MemoryOut(
        id=doc.id, content=doc.content, metadata=doc.metadata, memory_type=doc.memory_type,
        agent_type=doc.agent_type, session_id=doc.session_id, importance=doc.importance,
        created_at=doc.created_at, expires_at=doc.expires_at,
        relations=[{"type": r.type.value, "target_id": r.target_id} for r in doc.relations],
    ).model_dump(mode="json")


def hit_out(m: RetrievedMemory) -> dict[str, Any]:
    return SearchHit(**memory_out(m.document), score=m.score, similarity=m.similarity,
                     rank=m.rank).model_dump(mode="json")


async def store(state: ServiceState, namespace: str, items: list[dict[str, Any]]) -> list[str]:
    started = time.perf_counter()
    try:
        ids = await state.bounded(state.namespaces.coalescer(namespace).store(items),
                                  f"storing {len(items)} memories")
    except MemoryBackendError as exc:
        state.namespaces.writes.failed(failure_cause(exc))
        raise
    state.metrics.store_seconds.observe(time.perf_counter() - started)
    state.metrics.stored.inc(len(ids))
    state.namespaces.writes.ok()
    return ids


async def search(
    state: ServiceState, namespace: str, query: str, *, top_k: int | None = None,
    filters: dict[str, Any] | None = None, session_id: str | None = None,
    profile: str | None = None,
) -> list[dict[str, Any]]:
    client = state.namespaces.client(namespace)
    started = time.perf_counter()
    hits = await state.bounded(
        client.retrieve(query, top_k=top_k, filters=filters, session_id=session_id,
                        profile=profile, all_sessions=session_id is None),
        "searching memories",
    )
    state.metrics.retrieve_seconds.observe(time.perf_counter() - started)
    return [hit_out(m) for m in hits]


async def get(state: ServiceState, namespace: str, memory_id: str) -> dict[str, Any] | None:
    client = state.namespaces.client(namespace)
    found = await state.bounded(client.get(memory_id), f"reading memory {memory_id!r}")
    return None if found is None else memory_out(found.document)


async def forget(state: ServiceState, namespace: str, memory_id: str,
                 confirm: bool = False) -> int:
    """Delete one memory of this namespace: 0 when there is none (another namespace's id
    included: it is never touched)."""
    client = state.namespaces.client(namespace)
    return await state.bounded(client.forget([memory_id], confirm=confirm),
                               f"deleting memory {memory_id!r}")


async def forget_session(state: ServiceState, namespace: str, session_id: str,
                         confirm: bool = False) -> int:
    client = state.namespaces.client(namespace)
    return await state.bounded(client.forget(session_id=session_id, everything=True,
                                             confirm=confirm),
                               f"deleting session {session_id!r}")


async def health(state: ServiceState, *, detail: bool = False) -> HealthResponse:
    """The service's health; with `detail`, the store's checks too (health.py): over the whole
    store, the hot tiers and write queues of every namespace served."""
    detail_asked, detail = detail, ""
    ns = state.namespaces
    if not ns.backend.is_open:
        try:
            await state.bounded(ns.backend.open(), "opening the backend")
        except (MemoryBackendError, Exception) as exc:
            detail = f"backend unavailable: {failure_cause(exc)}"
    connected = ns.backend.is_open
    if connected:
        try:  # a backend that cannot answer a health check in seconds is not healthy
            backend = await asyncio.wait_for(ns.run(ns.backend.health()),
                                             HEALTH_BACKEND_TIMEOUT)
            connected, detail = backend.ok, backend.detail
        except TimeoutError:
            connected = False
            detail = (f"the backend did not answer a health check within "
                      f"{HEALTH_BACKEND_TIMEOUT:g} s"
                      + (f" (writes fail: {ns.writes.cause})" if ns.writes.failing else ""))
        except Exception as exc:
            connected, detail = False, f"backend unavailable: {failure_cause(exc)}"
    if connected and ns.writes.failing:
        if time.time() - ns.writes.probed >= HEALTH_PROBE_SECONDS:
            try:  # a short try: health answers now, it does not wait for a lock
                await asyncio.wait_for(ns.flush(), HEALTH_PROBE_TIMEOUT)
            except Exception:  # the outbox keeps them (a write cut short is retried by id)
                pass
            ns.writes.probed = time.time()
            if not ns.outbox():
                ns.writes.ok()
        if ns.writes.failing:
            connected = False
            detail = (f"writes fail since {datetime.fromtimestamp(ns.writes.since, UTC):%H:%M:%S} "
                      f"UTC: {ns.writes.cause}")
    checks = None
    if detail_asked:
        clients = ns.clients()
        served = tuple(sorted(c.namespace for c in clients)) or (state.config.namespace,)
        try:
            checks = await state.bounded(
                store_detail(ns.backend, state.config, served, [c.hot.counters() for c in clients],
                             [c.writes for c in clients], time.time(), whole_store=True),
                "checking the store")
        except ServiceTimeout as exc:
            checks = {"problems": [str(exc)]}
    return HealthResponse(
        status="healthy" if connected else "unhealthy", backend_connected=connected,
        neo4j_connected=connected if state.config.backend == "neo4j" else None,
        model_loaded=ns.model_loaded, version=state.version, backend=state.config.backend,
        detail=detail, checks=checks,
    )


# -- the knowledge graph and the retrieval agent ------------------------------------------
def _when(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else value


async def add_facts(state: ServiceState, namespace: str, items: list[dict[str, Any]],
                    default_evidence: str) -> list[dict[str, Any]]:
    graph = state.namespaces.graph(namespace)
    specs = []
    for item in items:
        item = {k: _when(v) for k, v in item.items() if v is not None}
        item.setdefault("evidence", default_evidence)
        specs.append(item)
    try:
        facts = await state.bounded(graph.add_facts(specs), f"adding {len(specs)} facts")
    except MemoryBackendError as exc:
        state.namespaces.writes.failed(failure_cause(exc))
        raise
    state.namespaces.writes.ok()
    return [f.model_dump(mode="json") for f in facts]


async def ingest(state: ServiceState, namespace: str, messages: list[dict[str, Any]],
                 channel_id: str) -> Any:
    graph = state.namespaces.graph(namespace)
    try:
        report = await state.bounded(graph.ingest(messages, channel_id),
                                     f"ingesting {len(messages)} messages")
    except MemoryBackendError as exc:
        state.namespaces.writes.failed(failure_cause(exc))
        raise
    state.namespaces.writes.ok()
    return report


async def retrieve(state: ServiceState, namespace: str, messages: list[dict[str, Any]],
                   channel_id: str, max_facts: int, max_iterations: int, request_id: str) -> Any:
    from DeepResearch.src.memory.agent.retrieval import retrieve_context

    graph = state.namespaces.graph(namespace)
    started = time.perf_counter()
    result = await state.bounded(
        retrieve_context(graph, graph.client, messages, channel_id=channel_id,
                         max_facts=max_facts, max_iterations=max_iterations,
                         tool_timeout=state.config.service.tool_timeout_seconds,
                         request_id=request_id),
        "retrieving context")
    m = state.metrics
    m.retrieve_seconds.observe(time.perf_counter() - started)
    m.agent_iterations.observe(result.metadata.iterations_used)
    m.facts_returned.inc(len(result.facts))
    for event in result.trace:
        if event.kind == "tool" and event.call is not None:
            m.tool_calls.labels(event.call.tool, "ok" if event.call.success else "error").inc()
            m.tool_seconds.labels(event.call.tool).observe(event.call.duration_ms / 1000)
    return result


async def fact_tool(state: ServiceState, namespace: str, name: str,
                    arguments: dict[str, Any]) -> dict[str, Any]:
    from DeepResearch.src.memory.facts.tools import TOOLS

    graph = state.namespaces.graph(namespace)
    answer = await state.bounded(TOOLS[name](graph, **arguments), name)
    return answer.model_dump(mode="json")
