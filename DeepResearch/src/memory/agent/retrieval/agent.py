"""`retrieve_context`: the retrieval agent's one entry point."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any
from uuid import uuid4

from DeepResearch.src.memory.agent.retrieval.graph import AnalyzeConversation, retrieval_graph
from DeepResearch.src.memory.agent.retrieval.planner import ModelPlanner, RulesPlanner
from DeepResearch.src.memory.agent.retrieval.state import Planner, RetrievalDeps, RetrievalState
from DeepResearch.src.memory.agent.retrieval.synthesis import MIN_SIMILARITY
from DeepResearch.src.memory.agent.retrieval.tools import ToolRunner
from DeepResearch.src.memory.agent.retrieval.trace import TRACES, TraceStore
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
