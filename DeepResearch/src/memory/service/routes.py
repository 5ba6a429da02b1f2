"""The HTTP endpoints. Each one resolves the request's namespace (from its API key, never
from its body), then calls operations.py; errors become `{error, message, request_id}` in
app.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.inputs import clean_profile
from DeepResearch.src.memory.service import operations as ops
from DeepResearch.src.memory.service.metrics import CONTENT_TYPE_LATEST, Trace
from DeepResearch.src.memory.service.schemas import (
    AddFactsRequest,
    AddFactsResponse,
    DebugInfo,
    DeleteResponse,
    ErrorBody,
    HealthResponse,
    IngestRequest,
    IngestResponse,
    MemoryOut,
    RetrieveDebugResponse,
    RetrieveMetadata,
    RetrieveRequest,
    RetrieveResponse,
    SearchRequest,
    SearchResponse,
    StoreRequest,
    StoreResponse,
)
from DeepResearch.src.memory.service.state import ServiceState

ERRORS = {code: {"model": ErrorBody} for code in (400, 401, 403, 404, 409, 413, 422, 429, 503)}
router = APIRouter()


class NotFound(Exception):
    """404 with a message."""


@dataclass
class Call:
    """One request as an endpoint sees it: the state, its namespace, its id and trace."""

    state: ServiceState
    namespace: str
    request_id: str
    trace: Trace

    def scoped(self, asked: str | None) -> str:
        return self.state.namespace_of(self.namespace, asked)


def call(request: Request) -> Call:
    st = request.scope["state"]
    return Call(request.app.state.service, st["namespace"], st["request_id"], st["trace"])


CallDep = Annotated[Call, Depends(call)]


@router.post("/api/memory/memories", response_model=StoreResponse, responses=ERRORS,
             tags=["memories"], summary="Store one memory or several (all or none)")
async def store_memories(body: StoreRequest, c: CallDep) -> StoreResponse:
    ns = c.scoped(body.namespace)
    ids = await ops.store(c.state, ns, body.items())
    c.trace.step("stored", count=len(ids))
    return StoreResponse(ids=ids, stored=len(ids), request_id=c.request_id)


@router.post("/api/memory/search", response_model=SearchResponse, responses=ERRORS,
             tags=["memories"], summary="Ranked memories for a query")
async def search_memories(body: SearchRequest, c: CallDep) -> SearchResponse:
    ns = c.scoped(body.namespace)
    _check_field(lambda: clean_profile(c.state.config, body.profile), "profile", body.profile)
    hits = await ops.search(c.state, ns, body.query, top_k=body.top_k, filters=body.filters,
                            session_id=body.session_id, profile=body.profile)
    c.trace.step("searched", results=len(hits))
    return SearchResponse(results=hits, request_id=c.request_id)  # type: ignore[arg-type]


@router.get("/api/memory/memories/{memory_id}", response_model=MemoryOut, responses=ERRORS,
            tags=["memories"], summary="One memory by id")
async def get_memory(memory_id: str, c: CallDep) -> MemoryOut:
    _check_id(memory_id, "memory id")
    found = await ops.get(c.state, c.namespace, memory_id)
    if found is None:
        raise NotFound(f"no memory with id {memory_id!r} in this namespace")
    return MemoryOut(**found)


@router.delete("/api/memory/memories/{memory_id}", response_model=DeleteResponse,
               responses=ERRORS, tags=["memories"], summary="Delete one memory")
async def delete_memory(memory_id: str, c: CallDep, confirm: bool = False) -> DeleteResponse:
    _check_id(memory_id, "memory id")
    deleted = await ops.forget(c.state, c.namespace, memory_id, confirm)
    if not deleted:
        raise NotFound(f"no memory with id {memory_id!r} in this namespace")
    return DeleteResponse(deleted=deleted, request_id=c.request_id)


@router.delete("/api/memory/sessions/{session_id}", response_model=DeleteResponse,
               responses=ERRORS, tags=["memories"], summary="Delete every memory of a session")
async def delete_session(session_id: str, c: CallDep, confirm: bool = False) -> DeleteResponse:
    """More than memory.forget.confirm_above memories need `?confirm=true` (409 otherwise,
    naming the count)."""
    _check_id(session_id, "session id")
    deleted = await ops.forget_session(c.state, c.namespace, session_id, confirm)
    if not deleted:
        raise NotFound(f"no memory in session {session_id!r} of this namespace")
    return DeleteResponse(deleted=deleted, request_id=c.request_id)


# -- facts and the retrieval agent ----------------------------------------------------------
@router.post("/api/memory/retrieve", response_model=RetrieveResponse, responses=ERRORS,
             tags=["facts"], summary="Facts relevant to a conversation (the retrieval agent)")
async def retrieve(body: RetrieveRequest, c: CallDep) -> RetrieveResponse:
    return RetrieveResponse(**_answer(await _run_agent(body, c), c))


@router.post("/api/memory/retrieve/debug", response_model=RetrieveDebugResponse, responses=ERRORS,
             tags=["facts"], summary="The same, with the agent's full iteration trace")
async def retrieve_debug(body: RetrieveRequest, c: CallDep) -> RetrieveDebugResponse:
    result = await _run_agent(body, c)
    nodes = [e for e in result.trace if e.kind == "node"]
    calls = [e for e in result.trace if e.kind == "tool" and e.call is not None]
    ordered = sorted(result.trace, key=lambda e: e.started_ms)
    return RetrieveDebugResponse(**_answer(result, c), debug_info=DebugInfo(
        state_history=[{"node": e.name, "started_ms": e.started_ms, "duration_ms": e.duration_ms,
                        "success": e.success, "detail": e.detail} for e in nodes],
        tool_calls=[{**e.call.model_dump(mode="json"), "started_ms": e.started_ms}
                    for e in calls if e.call is not None],
        reasoning_trace=[f"{e.started_ms:.1f} ms {e.kind} {e.name}: {e.detail}" for e in ordered]))


async def _run_agent(body: RetrieveRequest, c: Call) -> Any:
    ns = c.scoped(body.namespace)
    messages = [m.as_dict(body.channel_id) for m in body.messages]
    result = await ops.retrieve(c.state, ns, messages, body.channel_id, body.max_facts,
                                body.max_iterations, c.request_id)
    md = result.metadata
    c.trace.step("retrieval agent", iterations=md.iterations_used, facts=len(result.facts),
                 stop_reason=md.stop_reason,
                 tools=[{"tool": e.call.tool, "ms": round(e.call.duration_ms, 1),
                         "success": e.call.success, "found": e.call.output_size}
                        for e in result.trace if e.kind == "tool" and e.call is not None])
    return result


def _answer(result: Any, c: Call) -> dict[str, Any]:
    md = result.metadata
    return {"facts": result.facts, "confidence": result.confidence,
            "details": [d.model_dump(mode="json") for d in result.details],
            "metadata": RetrieveMetadata(
                queries_executed=md.queries_executed, facts_retrieved=md.facts_retrieved,
                processing_time_ms=md.processing_time_ms, iterations_used=md.iterations_used,
                request_id=c.request_id, stop_reason=md.stop_reason,
                confidence_score=md.confidence_score)}


@router.post("/api/memory/ingest", response_model=IngestResponse, responses=ERRORS,
             tags=["facts"], summary="Messages -> episodes, entities and facts (offline extractor)")
async def ingest(body: IngestRequest, c: CallDep) -> IngestResponse:
    ns = c.scoped(body.namespace)
    messages = [m.as_dict(body.channel_id) for m in body.messages]
    report = await ops.ingest(c.state, ns, messages, body.channel_id)
    c.trace.step("ingested", messages=report.messages, facts=len(report.facts))
    return IngestResponse(messages=report.messages, episodes=report.episodes,
                          facts_added=len(report.facts),
                          facts=[f.model_dump(mode="json") for f in report.facts],
                          problems=report.problems, request_id=c.request_id)


@router.post("/api/memory/facts", response_model=AddFactsResponse, responses=ERRORS,
             tags=["facts"], summary="Add facts directly (all or none)")
async def add_facts(body: AddFactsRequest, c: CallDep) -> AddFactsResponse:
    ns = c.scoped(body.namespace)
    facts = await ops.add_facts(c.state, ns, [f.model_dump() for f in body.facts],
                                f"api:{c.request_id}")
    c.trace.step("facts added", count=len(facts))
    return AddFactsResponse(ids=[f["id"] for f in facts], added=len(facts), facts=facts,
                            request_id=c.request_id)


# -- operations -----------------------------------------------------------------------------
@router.get("/health", response_model=HealthResponse, tags=["service"],
            responses={503: {"model": HealthResponse}})
async def health(request: Request, detail: bool = False) -> JSONResponse:
    report = await ops.health(request.app.state.service, detail=detail)
    return JSONResponse(report.model_dump(), status_code=200 if report.backend_connected else 503)


@router.get("/metrics", tags=["service"], response_class=Response)
async def metrics(request: Request) -> Response:
    return Response(request.app.state.service.metrics.render(), media_type=CONTENT_TYPE_LATEST)


@router.get("/debug/requests/{request_id}", tags=["service"], responses=ERRORS)
async def debug_request(request_id: str, c: CallDep) -> dict[str, object]:
    trace = c.state.traces.get(request_id)
    if trace is None or (not c.state.namespaces.local and trace.namespace != c.namespace):
        raise NotFound(f"no trace of request {request_id!r} (the last "
                       f"{c.state.traces.size} requests are kept)")
    return trace.as_dict()


def _check_field(check: Callable[[], object], field: str, value: object) -> None:
    """A body field the schema cannot check alone (it depends on the configuration): its
    MemoryInputError is a 422 naming the field, as the schema's own refusals are."""
    try:
        check()
    except MemoryInputError as exc:
        raise RequestValidationError([{"loc": ("body", field), "msg": str(exc),
                                       "type": "value_error", "input": value}]) from None


def _check_id(value: str, what: str) -> None:
    from DeepResearch.src.memory.config_base import ID_RULE, is_valid_id

    if not is_valid_id(value):
        raise MemoryInputError(f"{what} {value[:80]!r} is not valid: use {ID_RULE}")
