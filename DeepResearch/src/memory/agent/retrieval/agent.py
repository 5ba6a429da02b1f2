"""`retrieve_context`: the retrieval agent's one entry point, and the store of recent results
it keeps for the service (TraceStore, get_trace).

The store is small and in-process: recent retrieval results (with their traces) by request id,
bounded (the oldest entry goes when a new one would exceed `max_entries`), not persisted (a
restart forgets it); the service reads it to answer "what did request X do"."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable
from typing import Any
from uuid import uuid4

from cachetools import LRUCache

from DeepResearch.src.memory.agent.retrieval.graph import AnalyzeConversation, retrieval_graph
from DeepResearch.src.memory.agent.retrieval.planner import ModelPlanner, RulesPlanner
from DeepResearch.src.memory.agent.retrieval.state import Planner, RetrievalDeps, RetrievalState
from DeepResearch.src.memory.agent.retrieval.synthesis import MIN_SIMILARITY
from DeepResearch.src.memory.agent.retrieval.tools import ToolRunner
from DeepResearch.src.memory.agent.retrieval.types import RetrievalResult


async def retrieve_context(
    graph: Any,
    client: Any,
    messages: Iterable[Any] | str,
    *,
    channel_id: str | None = None,
    max_facts: int = 30,
    max_iterations: int = 10,
    model: Any = None,
    tool_timeout: float = 5.0,
    request_id: str | None = None,
    trace_store: TraceStore | None = None,
    planner: Planner | None = None,
    min_similarity: float = MIN_SIMILARITY,
) -> RetrievalResult:
    """The facts worth knowing for a conversation, found by a planned series of tool calls.

    `graph`: the FactGraph (its ten fact tools; None: memory retrieval only); `client`: the
    MemorySystemClient for hybrid memory retrieval (None: the graph's own client); `messages`: strings,
    {"content", "author_name"} mappings or objects with `.content`, oldest first; `model`: a
    pydantic-ai model (name or instance) for planning and evaluation, None for the rules;
    `tool_timeout`: seconds per tool call; `min_similarity`: the similarity to its query from
    which a hit that names nothing asked about is returned as context (synthesis.py). The
    result is also kept in `trace_store` (default the process-wide one) under
    `metadata.request_id` (`request_id`, or a new one).
    """
    if not isinstance(max_facts, int) or max_facts < 1:
        raise ValueError(f"max_facts must be an integer >= 1, got {max_facts!r}")
    if not isinstance(max_iterations, int) or max_iterations < 1:
        raise ValueError(f"max_iterations must be an integer >= 1, got {max_iterations!r}")
    if not isinstance(tool_timeout, (int, float)) or not math.isfinite(tool_timeout) or tool_timeout <= 0:
        raise ValueError(f"tool_timeout must be a number of seconds > 0, got {tool_timeout!r}")
    if not isinstance(min_similarity, int | float) or not -1.0 <= min_similarity <= 1.0:
        raise ValueError(f"min_similarity must be a number in [-1, 1], got {min_similarity!r}")
    if graph is None and client is None:
        raise ValueError("retrieve_context needs a fact graph, a memory client, or both; got neither")
    if client is None:
        client = getattr(graph, "client", None)  # a FactGraph's own client: its memories
    if planner is None:
        planner = ModelPlanner(model) if model is not None else RulesPlanner()
    messages = [messages] if isinstance(messages, str) else list(messages)
    state = RetrievalState(messages=messages, channel_id=channel_id, request_id=request_id or uuid4().hex)
    deps = RetrievalDeps(
        runner=ToolRunner(graph, client, float(tool_timeout)),
        planner=planner,
        max_facts=max_facts,
        max_iterations=max_iterations,
        min_similarity=float(min_similarity),
    )
    result: RetrievalResult = await retrieval_graph().run(state=state, deps=deps, inputs=AnalyzeConversation())
    result.trace = list(state.trace)
    result.metadata.processing_time_ms = state.elapsed_ms()
    (trace_store if trace_store is not None else TRACES).put(result)
    return result


class TraceStore:
    def __init__(self, max_entries: int = 256) -> None:
        if max_entries < 1:
            raise ValueError(f"TraceStore max_entries must be >= 1, got {max_entries}")
        self.max_entries = max_entries
        self._entries: LRUCache[str, RetrievalResult] = LRUCache(max_entries)
        self._lock = threading.Lock()

    def put(self, result: RetrievalResult) -> None:
        with self._lock:
            self._entries[result.metadata.request_id] = result

    def get(self, request_id: str) -> RetrievalResult | None:
        with self._lock:
            return self._entries.get(request_id)

    def request_ids(self) -> list[str]:
        """The stored request ids, newest last."""
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


TRACES = TraceStore()


def get_trace(request_id: str, store: TraceStore | None = None) -> RetrievalResult | None:
    """The result (facts, metadata, trace) of a recent request, or None once evicted."""
    return (store if store is not None else TRACES).get(request_id)
