"""What flows through the ranking pipeline: scored memories, the context, the step protocol."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from DeepResearch.src.memory.backends.base import (
    Candidate,
    MemoryFilter,
    MemoryRecord,
    RelatedRecord,
)
from DeepResearch.src.memory.config import ProfileConfig, RetrievalConfig


@dataclass(slots=True)
class ScoredMemory:
    """A candidate on its way to the result list.

    `similarity` is the cosine similarity to the query (fixed); `score` is what steps adjust
    and what the final order uses; `signals` records each step's contribution for users.
    """

    record: MemoryRecord
    similarity: float
    score: float
    signals: dict[str, float] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)  # how a path reached it ("graph: ...")


# Both return, per start id, the related records that pass the retrieve's (narrowed) filter,
# which the client binds: backend.related_many(ids, relation_types, depth, flt) and
# backend.session_neighbours(ids, radius, flt).
Related = dict[str, list[RelatedRecord]]  # start id -> what was found from it
FetchRelated = Callable[[list[str], list[str] | None, int], Awaitable[Related]]
FetchNeighbours = Callable[[list[str], int], Awaitable[Related]]
SearchVector = Callable[[np.ndarray, int], Awaitable[list[Candidate]]]
SearchText = Callable[[str, int], Awaitable[list[Candidate]]]
# facts/recall.evidence_paths bound to the store, namespace and limits: memory id -> path
GraphEvidence = Callable[[str], Awaitable[dict[str, str]]]
FetchRecords = Callable[[list[str]], Awaitable[list[MemoryRecord]]]  # by id, this namespace


def _unseen_zero(similarity: float) -> float:
    return 0.0


@dataclass(slots=True)
class RankingContext:
    query: str
    query_vector: np.ndarray
    query_tokens: frozenset[str]
    now: float  # the retrieve's as_of (epoch seconds): every time-aware step reads it
    limit: int
    retrieval: RetrievalConfig
    profile: ProfileConfig | None
    accept: Callable[[MemoryRecord], bool]  # the retrieve's filter, for records steps add
    fetch_related: FetchRelated | None = None  # backend.related_many, filter bound
    fetch_neighbours: FetchNeighbours | None = None  # backend.session_neighbours, filter bound
    search_vector: SearchVector | None = None  # backend.vector_search(vector, k), filter bound
    search_text: SearchText | None = None  # backend.text_search(query, k), filter bound
    graph_evidence: GraphEvidence | None = None  # the graph path's walk (retrieval.graph)
    fetch_records: FetchRecords | None = None  # backend.get in the client's namespace
    # the candidate stage's fused score for a memory it did not return, from its cosine
    score_unseen: Callable[[float], float] = _unseen_zero


class RankingStep(Protocol):
    """One named step. `enabled` reads config/profile; `narrow` may tighten the backend
    filter before candidates are fetched (e.g. max_age); `__call__` transforms the list."""

    name: str

    def enabled(self, ctx: RankingContext) -> bool: ...

    def narrow(self, flt: MemoryFilter, ctx: RankingContext) -> MemoryFilter: ...

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]: ...


class BaseStep:
    """Defaults for the optional parts of RankingStep."""

    name = "step"

    def enabled(self, ctx: RankingContext) -> bool:
        return True

    def narrow(self, flt: MemoryFilter, ctx: RankingContext) -> MemoryFilter:
        return flt

    def reads_clock(self, ctx: RankingContext) -> bool:
        """True when, enabled, the step's outcome depends on `ctx.now` (the hot tier then
        keeps no answer of a retrieve that did not name its as_of). A custom step without
        this method is taken to read it."""
        return False

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        raise NotImplementedError(f"ranking step {self.name!r} does not implement __call__")


def by_score(items: list[ScoredMemory]) -> list[ScoredMemory]:
    """Best first; ties broken by similarity, then newest, then id (deterministic)."""
    return sorted(
        items, key=lambda m: (-m.score, -m.similarity, -m.record.created_at, m.record.id)
    )
