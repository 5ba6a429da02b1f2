"""The memory tools any pydantic-ai agent can be given: `retrieve_memory`, `store_memory`,
`get_related_memories`, with the instructions that tell a model when to use them.

    agent = Agent(model, deps_type=AgentDependencies, toolsets=[memory_toolset()])

They read the client, session and profile from `ctx.deps` (AgentDependencies), so one toolset
serves every agent and every loop (a nested loop's deps carry its own session). With memory
off (`deps.memory_client is None`) each tool answers that memory is disabled instead of failing,
and the instructions are left out. Bad arguments come back to the model as a retry with the
reason (ModelRetry).

A plain toolset rather than a pydantic-ai Capability: a capability's per-step bookkeeping
cost ~0.3 ms per agent run here (measured), a toolset's instructions nothing extra.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Literal

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.toolsets import FunctionToolset

from DeepResearch.src.datatypes.agents import AgentDependencies
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.models import RelatedMemory, RetrievedMemory

log = logging.getLogger("DeepResearch.memory")

TOOLSET_ID = "deepresearch-memory"
INSTRUCTIONS = (
    "You have a long-term memory shared with the other agents and with earlier runs. "
    "Before deciding, call retrieve_memory with the question (scope='all' to include earlier "
    "runs) when earlier plans, answers or tool failures could help; store_memory what a later "
    "step or run should know; get_related_memories to follow a memory's links. A MEMORY section "
    "in the prompt lists what the workflow already recalled for you, with scores."
)
MAX_CONTENT_CHARS = 1500
DISABLED = {
    "memory": "disabled",
    "note": "memory is disabled for this run (memory.enabled=false); nothing was searched or stored",
}


def _agent_name(ctx: RunContext[AgentDependencies]) -> str | None:
    agent = ctx.agent
    return getattr(agent, "name", None) if agent is not None else None


def _clip(text: str) -> str:
    return text if len(text) <= MAX_CONTENT_CHARS else text[:MAX_CONTENT_CHARS] + " ..."


def retrieved_to_dict(memory: RetrievedMemory) -> dict[str, Any]:
    doc = memory.document
    return {
        "id": doc.id,
        "content": _clip(doc.content),
        "memory_type": doc.memory_type,
        "score": round(memory.score, 4),
        "similarity": round(memory.similarity, 4),
        "session_id": doc.session_id,
        "metadata": doc.metadata,
    }


def related_to_dict(memory: RelatedMemory) -> dict[str, Any]:
    doc = memory.document
    return {
        "id": doc.id,
        "content": _clip(doc.content),
        "memory_type": doc.memory_type,
        "relation": memory.relation.value,
        "depth": memory.depth,
        "metadata": doc.metadata,
    }


async def _instructions(ctx: RunContext[AgentDependencies]) -> str:
    # Only when this run has memory: a model is never told about tools that cannot work.
    # Async although it never awaits: pydantic-ai runs a sync instruction function in a
    # worker thread, a hand-off that cost ~1 ms per agent run (measured).
    return INSTRUCTIONS if ctx.deps.memory_client is not None else ""


def memory_toolset() -> FunctionToolset[AgentDependencies]:
    """A new memory toolset (give the same one to any number of agents)."""
    # The docstrings below are Google style: saying so spares pydantic-ai detecting it.
    toolset = FunctionToolset[AgentDependencies](
        id=TOOLSET_ID, instructions=_instructions, docstring_format="google"
    )

    @toolset.tool
    async def retrieve_memory(
        ctx: RunContext[AgentDependencies],
        query: str,
        top_k: int = 5,
        filters: dict[str, Any] | None = None,
        scope: Literal["session", "all"] = "session",
    ) -> dict[str, Any]:
        """Search long-term memory for what is relevant to `query`, best first.

        Args:
            query: what to look for, in words.
            top_k: how many memories at most (1-50).
            filters: exact matches, e.g. {"memory_type": "answer"} or {"tool": "read_document",
                "success": false}; a list means any of the values.
            scope: "session" = this run (and, in a sub-question, its parent loops);
                "all" = also earlier runs.
        """
        client = ctx.deps.memory_client
        if client is None:
            return {**DISABLED, "memories": []}
        if not 1 <= top_k <= 50:
            raise ModelRetry(f"top_k must be between 1 and 50, got {top_k}")
        try:
            found = await client.retrieve(
                query,
                top_k=top_k,
                filters=filters,
                session_id=ctx.deps.session_id,
                profile=ctx.deps.agent_profile,
                all_sessions=scope == "all",
            )
        except MemoryInputError as exc:
            raise ModelRetry(str(exc)) from exc
        except MemoryBackendError as exc:
            log.warning("memory: retrieve_memory failed: %s", exc)
            return {"error": f"memory unavailable: {exc}", "memories": []}
        log.info(
            "memory: %s called retrieve_memory(%r, scope=%s) -> %d",
            _agent_name(ctx) or "agent",
            query,
            scope,
            len(found),
        )
        return {"memories": [retrieved_to_dict(m) for m in found]}

    @toolset.tool
    async def store_memory(
        ctx: RunContext[AgentDependencies],
        content: str,
        metadata: dict[str, Any] | None = None,
        importance: float = 0.5,
        memory_type: str = "note",
    ) -> dict[str, Any]:
        """Remember something for later steps and later runs; returns the memory's id.

        Args:
            content: what to remember, as a self-contained sentence or paragraph.
            metadata: JSON facts to filter by later, e.g. {"topic": "aligners"}.
            importance: 0 (trivia) to 1 (must not be forgotten).
            memory_type: note, decision, answer, plan, ...
        """
        client = ctx.deps.memory_client
        if client is None:
            return {**DISABLED, "id": None}
        if not 0.0 <= importance <= 1.0:
            raise ModelRetry(f"importance must be between 0 and 1, got {importance}")
        meta = {"loop_id": ctx.deps.loop_id, "step": ctx.deps.step_name, **(metadata or {})}
        try:
            memory_id = await client.store(
                content,
                metadata=meta,
                session_id=ctx.deps.session_id,
                importance=importance,
                memory_type=memory_type,
                agent_type=_agent_name(ctx),
            )
        except MemoryInputError as exc:
            raise ModelRetry(str(exc)) from exc
        except MemoryBackendError as exc:
            log.warning("memory: store_memory failed: %s", exc)
            return {"error": f"memory unavailable: {exc}", "id": None}
        return {"id": memory_id, "session_id": ctx.deps.session_id}

    @toolset.tool
    async def get_related_memories(
        ctx: RunContext[AgentDependencies], memory_id: str, depth: int = 1
    ) -> dict[str, Any]:
        """Memories linked to one memory (what it follows, was caused by, references, is part
        of), nearest first.

        Args:
            memory_id: the id of a memory, as retrieve_memory or store_memory returned it.
            depth: how many links to follow (1-3).
        """
        client = ctx.deps.memory_client
        if client is None:
            return {**DISABLED, "related": []}
        if not 1 <= depth <= 3:
            raise ModelRetry(f"depth must be between 1 and 3, got {depth}")
        try:
            found = await client.get_related_memories(memory_id, depth=depth)
        except MemoryInputError as exc:
            raise ModelRetry(str(exc)) from exc
        except MemoryBackendError as exc:
            log.warning("memory: get_related_memories failed: %s", exc)
            return {"error": f"memory unavailable: {exc}", "related": []}
        return {"related": [related_to_dict(m) for m in found]}

    return toolset


@functools.cache
def shared_memory_toolset() -> FunctionToolset[AgentDependencies]:
    """The one memory toolset of this process, for the workflow's runs. It holds no run state
    (the tools read client, session and profile from `ctx.deps`), and building one costs
    ~2-3 ms of pydantic schema generation, which a process running many questions would
    otherwise pay per run."""
    return memory_toolset()
