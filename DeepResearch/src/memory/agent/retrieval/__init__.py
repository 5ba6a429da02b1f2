"""The memory retrieval agent: from a conversation to the facts worth knowing about it.

`retrieve_context(graph, client, messages, ...)` runs a pydantic-graph graph (analyze the
conversation -> plan a query -> run a fact tool or the hybrid memory retrieval -> evaluate
progress, looping -> synthesize) and returns ranked, de-duplicated fact sentences with an
overall confidence, metadata and a trace (see docs/retrieval_agent.md). It does not import
the workflow package.
"""

from DeepResearch.src.memory.agent.retrieval.agent import (
    TRACES,
    TraceStore,
    get_trace,
    retrieve_context,
)
from DeepResearch.src.memory.agent.retrieval.types import (
    FACT_TOOLS,
    MEMORY_TOOL,
    TOOL_NAMES,
    PlanDecision,
    ProgressEvaluation,
    RetrievalMetadata,
    RetrievalResult,
    ToolCallTrace,
    TraceEvent,
)

__all__ = [
    "FACT_TOOLS",
    "MEMORY_TOOL",
    "TOOL_NAMES",
    "TRACES",
    "PlanDecision",
    "ProgressEvaluation",
    "RetrievalMetadata",
    "RetrievalResult",
    "ToolCallTrace",
    "TraceEvent",
    "TraceStore",
    "get_trace",
    "retrieve_context",
]
