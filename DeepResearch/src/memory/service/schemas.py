"""Request and response bodies of the memory service (validated by FastAPI, shown at /docs).

Limits are here, once: a request that breaks one gets 422 naming the field. The namespace is
never a field a request can set: it comes from the API key (namespaces.py); a `namespace`
given in a body must equal the key's (403 otherwise)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator

from DeepResearch.src.memory.config_base import MAX_TOP_K, Id
from DeepResearch.src.memory.facts.validation import parse_timestamp

MAX_BATCH = 1000
MAX_MESSAGES = 500


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Scoped(_Body):
    namespace: str | None = Field(
        default=None, description="optional; must be the API key's namespace (403 otherwise)"
    )


class ErrorBody(BaseModel):
    error: str = Field(description="a short kind: bad_request, unauthorized, forbidden, ...")
    message: str
    request_id: str


# -- plain memories -------------------------------------------------------------------------
class MemoryIn(_Body):
    content: str = Field(min_length=1)
    metadata: dict[str, Any] | None = None
    memory_type: str | None = Field(default=None, max_length=100)
    agent_type: str | None = Field(default=None, max_length=100)
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    session_id: Id | None = None
    id: Id | None = Field(default=None,
                           description="give one to retry safely: storing an id again replaces it")
    ttl: float | None = Field(default=None, gt=0, description="seconds the memory lives")

    def item(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class StoreRequest(_Scoped):
    """One memory (its fields at the top level) or several (`memories`), never both."""

    content: str | None = Field(default=None, min_length=1)
    metadata: dict[str, Any] | None = None
    memory_type: str | None = Field(default=None, max_length=100)
    agent_type: str | None = Field(default=None, max_length=100)
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    session_id: Id | None = None
    id: Id | None = None
    ttl: float | None = Field(default=None, gt=0)
    memories: list[MemoryIn] | None = Field(default=None, min_length=1, max_length=MAX_BATCH)

    @model_validator(mode="after")
    def _one_or_many(self) -> StoreRequest:
        single = self.model_dump(exclude_none=True, exclude={"memories", "namespace"})
        if self.memories is None and self.content is None:
            raise ValueError("give 'content' (one memory) or 'memories' (a list of them)")
        if self.memories is not None and single:
            raise ValueError(f"give either one memory or 'memories', not both (also got {sorted(single)})")
        return self

    def items(self) -> list[dict[str, Any]]:
        if self.memories is not None:
            return [m.item() for m in self.memories]
        return [self.model_dump(exclude_none=True, exclude={"memories", "namespace"})]


class StoreResponse(BaseModel):
    ids: list[str]
    stored: int
    request_id: str


class SearchRequest(_Scoped):
    query: str = Field(min_length=1)
    top_k: int | None = Field(default=None, ge=1, le=MAX_TOP_K)
    filters: dict[str, Any] | None = None
    session_id: Id | None = Field(default=None,
                                   description="one session (default: every session)")
    profile: str | None = None


class MemoryOut(BaseModel):
    id: str
    content: str
    metadata: dict[str, Any]
    memory_type: str
    agent_type: str | None
    session_id: str
    importance: float
    created_at: datetime
    expires_at: datetime | None
    relations: list[dict[str, str]]


class SearchHit(MemoryOut):
    score: float
    similarity: float
    rank: int


class SearchResponse(BaseModel):
    results: list[SearchHit]
    request_id: str


class DeleteResponse(BaseModel):
    deleted: int
    request_id: str


class HealthResponse(BaseModel):
    status: Literal["healthy", "unhealthy"] = Field(
        description="healthy: the backend answers and writes go through (HTTP 200); unhealthy: "
        "not (HTTP 503, `detail` says why)")
    neo4j_connected: bool | None = Field(
        description="the Neo4j backend answers; null when the backend is not neo4j")
    backend_connected: bool
    model_loaded: bool
    version: str
    backend: str
    detail: str
    checks: dict[str, Any] | None = Field(
        default=None, description="with ?detail=true: each tier reachable (hot, warm, graph), "
        "the vector index against the records (counts and a sample), growth (memories stored "
        "in the last hour and day), the outbox (pending, failed writes, spill files), "
        "consolidation lag, and the problems seen in them")


# -- facts and the retrieval agent ----------------------------------------------------------
# The same rules as `ingest` in Python, the CLI and MCP (facts/validation.py): an ISO 8601
# string or epoch seconds; epoch milliseconds are refused, not silently divided.
MessageTime = Annotated[
    float,
    BeforeValidator(lambda value: parse_timestamp(value, "message")),
    WithJsonSchema({"anyOf": [{"type": "string", "format": "date-time"}, {"type": "number"}],
                    "description": "ISO 8601 (naive = UTC) or epoch seconds"}),
]


class ChatMessage(_Body):
    author_id: str = Field(min_length=1, max_length=200)
    author_name: str = Field(min_length=1, max_length=200)
    content: str = Field(min_length=1)
    timestamp: MessageTime
    message_id: Id | None = Field(
        default=None,
        description="default: derived from channel, author, time and content (so sending a "
        "message again ingests nothing new)")

    def as_dict(self, channel_id: str) -> dict[str, Any]:
        stamp = datetime.fromtimestamp(self.timestamp, tz=UTC)
        message_id = self.message_id or "msg-" + hashlib.sha1(
            f"{channel_id}\0{self.author_id}\0{stamp.isoformat()}\0{self.content}".encode()
        ).hexdigest()[:20]
        return {"message_id": message_id, "author_id": self.author_id,
                "author_name": self.author_name, "content": self.content,
                "timestamp": self.timestamp, "channel_id": channel_id}


class RetrieveRequest(_Scoped):
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    channel_id: Id
    max_facts: int = Field(default=30, ge=1, le=100)
    max_iterations: int = Field(default=10, ge=1, le=20)


class RetrieveMetadata(BaseModel):
    queries_executed: int
    facts_retrieved: int
    processing_time_ms: float
    iterations_used: int
    request_id: str
    stop_reason: str = ""
    confidence_score: float = Field(default=0.0, description="the confidence as a number in [0, 1]")


class RetrieveResponse(BaseModel):
    facts: list[str]
    confidence: Literal["high", "medium", "low"]
    metadata: RetrieveMetadata
    details: list[dict[str, Any]] = Field(
        default_factory=list, description="the same facts, structured: text, subject, predicate, "
        "object, confidence, evidence, valid_at, invalid_at (when an ended fact ended; ISO 8601 "
        "UTC), current")


class DebugInfo(BaseModel):
    state_history: list[dict[str, Any]] = Field(
        description="every node of the agent's graph in the order it ran: node, started_ms, "
        "duration_ms, success, detail (the analysis, the planned call, the evaluation, the stop)")
    tool_calls: list[dict[str, Any]] = Field(
        description="every tool call: tool, input, output_size, new_facts, started_ms, "
        "duration_ms, success, error, message")
    reasoning_trace: list[str] = Field(description="the same steps as one line each")


class RetrieveDebugResponse(RetrieveResponse):
    debug_info: DebugInfo


class IngestRequest(_Scoped):
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    channel_id: Id


class IngestResponse(BaseModel):
    messages: int
    episodes: list[str] = Field(description="the episode memory ids (= message ids)")
    facts_added: int
    facts: list[dict[str, Any]] = Field(description="the stored facts the messages became")
    problems: list[str] = Field(description="what extraction could not use, by message")
    request_id: str


class FactIn(_Body):
    subject: str = Field(min_length=1, max_length=500)
    predicate: str = Field(min_length=1, max_length=100)
    object: str = Field(min_length=1, max_length=2000)
    subject_type: str = "Person"
    object_type: str | None = None
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    evidence: str | list[str] | None = Field(
        default=None, description="message / memory ids it came from (default: api:<request id>)")
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    attributes: dict[str, Any] | None = None


class AddFactsRequest(_Scoped):
    facts: list[FactIn] = Field(min_length=1, max_length=MAX_BATCH)


class AddFactsResponse(BaseModel):
    ids: list[str]
    added: int
    facts: list[dict[str, Any]] = Field(description="the stored facts (a repeat or a "
                                        "contradiction is resolved by the graph's rules)")
    request_id: str
