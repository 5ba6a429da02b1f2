"""What a memory is, as the rest of the framework sees it.

Backends never see these classes: they persist `MemoryRecord`s (backends/base.py); the client
converts between the two, so compression and validation are written once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any
from uuid import uuid4

from pydantic import BaseModel, Field


class MemoryType(StrEnum):
    NOTE = "note"
    PLAN = "plan"
    DECISION = "decision"
    ANSWER = "answer"
    TOOL_EXECUTION = "tool_execution"
    EXECUTION_TRACE = "execution_trace"
    FAILURE_ANALYSIS = "failure_analysis"
    CONVERSATION = "conversation"


class RelationType(StrEnum):
    FOLLOWS = "follows"  # the previous memory of the same session
    CAUSED_BY = "caused_by"
    REFERENCES = "references"
    PART_OF = "part_of"  # a nested context's memory -> its parent session
    SIMILAR_TO = "similar_to"


class Relation(BaseModel):
    type: RelationType
    target_id: str


class MemoryDocument(BaseModel):
    """A stored memory: its text and metadata, who wrote it, when, how important, how it
    relates to other memories."""

    id: str = Field(default_factory=lambda: uuid4().hex)
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    memory_type: str = MemoryType.NOTE.value
    agent_type: str | None = None
    session_id: str
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    temporal_weight: float = Field(default=1.0, ge=0.0)
    expires_at: datetime | None = None
    event_at: datetime | None = None  # when what it tells of happened, if known
    relations: list[Relation] = Field(default_factory=list)


class _MemoryView(BaseModel):
    """A result that wraps a memory: `.id`, `.content`, `.metadata` read through to it."""

    document: MemoryDocument

    @property
    def id(self) -> str:
        return self.document.id

    @property
    def content(self) -> str:
        return self.document.content

    @property
    def metadata(self) -> dict[str, Any]:
        return self.document.metadata


class RetrievedMemory(_MemoryView):
    """One ranked result: the memory, its raw similarity and the final score after ranking."""

    similarity: float
    score: float
    rank: int
    # What each ranking step contributed (e.g. {"dense": 0.71, "importance": 0.05}); shown to users.
    signals: dict[str, float] = Field(default_factory=dict)
    # How a path other than the searches reached it, e.g. "graph: Alice -WORKS_AT-> Google".
    paths: list[str] = Field(default_factory=list)


class RelatedMemory(_MemoryView):
    """A memory reached from another over relations (get_related_memories)."""

    relation: RelationType  # the type of the edge that reached it
    depth: int  # 1 = directly related


# -- what stats() and health() report ------------------------------------------------------
@dataclass(frozen=True, slots=True)
class MemoryStats:
    backend: str
    available: bool
    session_id: str
    total: int | None  # None while the backend is unavailable
    in_session: int | None
    pending: int  # write-behind records not yet written
    outbox: int  # failed writes waiting for a retry
    written: int  # records this client has written
    failed_attempts: int  # batch writes that failed (and went to the outbox)
    spilled_file: str | None  # JSONL file unwritten records were saved to, if any
    archived: int | None = None  # memories in the namespace's archive (not in `total`)
    # the hot tier (hot_tier.py): lookups it answered / could not, its live entries
    hot_enabled: bool = True
    hot_hits: int = 0
    hot_misses: int = 0
    hot_hit_ratio: float | None = None  # None before any lookup
    hot_items: int = 0
    hot_bytes: int = 0
    # vectors filled behind the writes (vector_fill.py): this client's memories still
    # awaiting theirs, those filled, the fills that failed (retried)
    awaiting_vectors: int = 0
    vectors_filled: int = 0
    vector_fill_failures: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class MemoryHealth:
    ok: bool  # backend healthy and nothing waiting in the outbox
    available: bool
    backend: str
    detail: str
    pending: int
    outbox: int
    written: int
    failed_attempts: int
    spilled_file: str | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
