"""The retrieval run's state and dependencies (pydantic-graph's state and deps)."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from DeepResearch.src.memory.agent.retrieval.synthesis import MIN_SIMILARITY
from DeepResearch.src.memory.agent.retrieval.tools import ToolRunner
from DeepResearch.src.memory.agent.retrieval.types import (
    ConversationAnalysis,
    FoundFact,
    PlannedCall,
    ProgressEvaluation,
    RetrievalResult,
    ToolCallTrace,
    TraceEvent,
)


@dataclass
class RetrievalState:
    messages: list[Any]
    channel_id: str | None
    request_id: str
    started: float = field(default_factory=time.perf_counter)
    analysis: ConversationAnalysis = field(default_factory=ConversationAnalysis)
    facts: dict[tuple[str, ...], FoundFact] = field(default_factory=dict)  # de-duplicated
    calls: list[ToolCallTrace] = field(default_factory=list)
    call_counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    need_hits: Counter[int] = field(default_factory=Counter)  # facts found per need
    next_call: PlannedCall | None = None
    iterations: int = 0
    no_progress: int = 0  # consecutive calls that found no new fact
    stop_reason: str = ""
    trace: list[TraceEvent] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. "the model failed; the rules planned"
    result: RetrievalResult | None = None

    def elapsed_ms(self) -> float:
        return round((time.perf_counter() - self.started) * 1000, 3)

    def add_facts(self, found: list[FoundFact]) -> int:
        """Merge found facts (de-duplicated as they arrive); returns how many were new."""
        new = 0
        for fact in found:
            key = fact.key()
            other = self.facts.get(key)
            if other is None:
                self.facts[key] = fact
                new += 1
                continue
            other.evidence = tuple(dict.fromkeys(other.evidence + fact.evidence))
            if fact.confidence > other.confidence:
                fact.evidence = other.evidence
                self.facts[key] = fact
        return new


class Planner(Protocol):
    """Who decides the next call and whether the goal is met (planner.py: rules or a model)."""

    kind: str

    async def analyze(self, state: RetrievalState, deps: RetrievalDeps) -> ConversationAnalysis: ...

    async def plan(self, state: RetrievalState, deps: RetrievalDeps) -> PlannedCall | None: ...

    async def evaluate(self, state: RetrievalState, deps: RetrievalDeps) -> ProgressEvaluation: ...


@dataclass
class RetrievalDeps:
    runner: ToolRunner
    planner: Planner
    max_facts: int
    max_iterations: int
    min_similarity: float = MIN_SIMILARITY
