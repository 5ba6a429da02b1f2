"""What the endpoints and the MCP tools do, written once: each calls the namespace's client
within the time limit, records its latency, and keeps the write state health reports."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from DeepResearch.src.memory.errors import MemoryBackendError
from DeepResearch.src.memory.models import MemoryDocument, RetrievedMemory
from DeepResearch.src.memory.service.schemas import HealthResponse, MemoryOut, SearchHit
from DeepResearch.src.memory.service.state import ServiceState
from DeepResearch.src.memory.writes import failure_cause

HEALTH_PROBE_SECONDS = 2.0  # health retries failed writes at most this often


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
    client = state.namespaces.client(namespace)
    started = time.perf_counter()
    try:
        ids = await state.bounded(client.store_many(items), f"storing {len(items)} memories")
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


async def forget(state: ServiceState, namespace: str, memory_id: str) -> int:
    """Delete one memory of this namespace: 0 when there is none (another namespace's id
    included: it is never touched)."""
    client = state.namespaces.client(namespace)
    return await state.bounded(client.forget([memory_id]), f"deleting memory {memory_id!r}")


async def forget_session(state: ServiceState, namespace: str, session_id: str) -> int:
    client = state.namespaces.client(namespace)
    return await state.bounded(client.forget(session_id=session_id, everything=True),
                               f"deleting session {session_id!r}")


async def health(state: ServiceState) -> HealthResponse:
    ns = state.namespaces
    detail = ""
    if not ns.backend.is_open:
        try:
            await state.bounded(ns.backend.open(), "opening the backend")
        except (MemoryBackendError, Exception) as exc:
            detail = f"backend unavailable: {failure_cause(exc)}"
    connected = ns.backend.is_open
    if connected:
        try:
            backend = await state.bounded(ns.backend.health(), "checking the backend")
            connected, detail = backend.ok, backend.detail
        except Exception as exc:
            connected, detail = False, f"backend unavailable: {failure_cause(exc)}"
    if connected and ns.writes.failing:
        if time.time() - ns.writes.probed >= HEALTH_PROBE_SECONDS:
            try:
                await state.bounded(ns.flush(), "retrying failed writes")
            except Exception:
                pass
            ns.writes.probed = time.time()
            if not ns.outbox():
                ns.writes.ok()
        if ns.writes.failing:
            connected = False
            detail = (f"writes fail since {datetime.fromtimestamp(ns.writes.since, UTC):%H:%M:%S} "
                      f"UTC: {ns.writes.cause}")
    return HealthResponse(
        status="ok" if connected else "unavailable", backend_connected=connected,
        model_loaded=ns.model_loaded, version=state.version, backend=state.config.backend,
        detail=detail,
    )
