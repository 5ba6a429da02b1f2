"""Memory tools for any pydantic-ai agent: `retrieve_memory`, `store_memory`,
`get_related_memories`, with instructions that tell a model when to use them.

    memory = MemorySystemClient(namespace="alice")
    agent = Agent(model, deps_type=MyDeps, toolsets=[memory_toolset(memory)])

The tools are bound by the program, never by the model: a `MemoryBinding` fixes the client
(and so its namespace), the session the tools store into and read as "session", the scopes
a model may ask for, and the provenance stamped on what the agent stores. No tool argument
widens them: filters cannot name sessions, ids or the namespace, and a memory the agent
stores is marked `origin="agent"` and cannot take a framework type (answer, plan, tool runs,
traces, failure analyses), claim `success`, or carry provenance keys of its own.

A binding may also be computed per agent run from `ctx` (`memory_toolset(lambda ctx: ...)`):
the research workflow binds each run to its loop's session that way. A binder returning None
means memory is off for that run: the tools then say so and the instructions are left out.
Bad arguments go back to the model as a retry with the reason (ModelRetry).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.toolsets import FunctionToolset

from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.models import MemoryType, RelatedMemory, RetrievedMemory

if TYPE_CHECKING:
    from DeepResearch.src.memory.client import MemorySystemClient

log = logging.getLogger("DeepResearch.memory")

TOOLSET_ID = "deepresearch-memory"
Scope = Literal["session", "all"]
INSTRUCTIONS = (
    "You have a long-term memory shared with the other agents and with earlier runs. "
    "Before deciding, call retrieve_memory with the question (scope='all' to include earlier "
    "runs) when earlier plans, answers or tool failures could help; store_memory what a later "
    "step or run should know; get_related_memories to follow a memory's links. A MEMORY section "
    "in the prompt lists what the workflow already recalled for you, with scores."
)
MAX_CONTENT_CHARS = 1500
# What an agent may call its memories; the framework's own types are the framework's.
AGENT_MEMORY_TYPES = (MemoryType.NOTE.value, MemoryType.DECISION.value)
# Metadata keys only the program sets (trust and provenance): an agent may not.
PROVENANCE_KEYS = frozenset(
    {"origin", "agent", "success", "status", "loop_id", "step", "tool", "run_id", "written_by"}
)
# Filter keys that would pick sessions or records outside what the binding allows.
WIDENING_FILTER_KEYS = frozenset({"session_id", "id", "namespace", "metadata.session_id"})
DISABLED = {
    "memory": "disabled",
    "note": "memory is disabled for this run (memory.enabled=false); nothing was searched or stored",
}


@dataclass(frozen=True, slots=True)
class MemoryBinding:
    """What one agent run's memory tools may reach; set by the program, not the model."""

    client: MemorySystemClient
    session_id: str | None = None  # None: the client's own session
    scopes: tuple[Scope, ...] = ("session", "all")  # "all" = every session of the namespace
    profile: str | None = None  # ranking profile (memory.profiles.<name>)
    provenance: Mapping[str, Any] = field(default_factory=dict)  # stamped on stored memories
    max_importance: float = 0.8  # an agent cannot make its notes outrank the framework's
    # memory type -> how many the tools stored: the program's tally (the workflow's
    # "memory: stored ..." line), counted after each store; None: not counted
    stored: MutableMapping[str, int] | None = None

    @property
    def session(self) -> str:
        return self.session_id or self.client.session_id


Binder = Callable[[RunContext[Any]], "MemoryBinding | None"]


def _binder(memory: MemorySystemClient | MemoryBinding | Binder) -> Binder:
    if isinstance(memory, MemoryBinding):
        return lambda ctx: memory
    if hasattr(memory, "retrieve"):  # a client: its namespace and session
        binding = MemoryBinding(client=memory)  # type: ignore[arg-type]
        return lambda ctx: binding
    return memory


def _agent_name(ctx: RunContext[Any]) -> str | None:
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


def _check_filters(filters: dict[str, Any] | None) -> dict[str, Any] | None:
    if filters is None:
        return None
    widening = sorted(k for k in filters if k in WIDENING_FILTER_KEYS)
    if widening:
        raise ModelRetry(
            f"filters may not name {widening}: the sessions you can search are set by the "
            "program; use scope='session' or scope='all'"
        )
    return filters


def _check_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    metadata = dict(metadata or {})
    reserved = sorted(k for k in metadata if k in PROVENANCE_KEYS)
    if reserved:
        raise ModelRetry(
            f"metadata keys {reserved} are set by the program, not by an agent; use other keys "
            "(e.g. 'topic')"
        )
    return metadata


def memory_toolset(
    memory: MemorySystemClient | MemoryBinding | Binder, *, toolset_id: str = TOOLSET_ID
) -> FunctionToolset[Any]:
    """A memory toolset bound to a client, a binding, or a per-run binder (see the module
    docstring); give the same one to any number of agents, whatever their deps type."""
    bind = _binder(memory)

    async def instructions(ctx: RunContext[Any]) -> str:
        # Only when this run has memory: a model is never told about tools that cannot work.
        return INSTRUCTIONS if bind(ctx) is not None else ""

    toolset = FunctionToolset[Any](
        id=toolset_id, instructions=instructions, docstring_format="google"
    )

    @toolset.tool
    async def retrieve_memory(
        ctx: RunContext[Any],
        query: str,
        top_k: int = 5,
        filters: dict[str, Any] | None = None,
        scope: Scope = "session",
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
        binding = bind(ctx)
        if binding is None:
            return {**DISABLED, "memories": []}
        if scope not in binding.scopes:
            raise ModelRetry(f"scope {scope!r} is not allowed here; allowed: {list(binding.scopes)}")
        if not 1 <= top_k <= 50:
            raise ModelRetry(f"top_k must be between 1 and 50, got {top_k}")
        try:
            found = await binding.client.retrieve(
                query,
                top_k=top_k,
                filters=_check_filters(filters),
                session_id=binding.session if scope == "session" else None,
                profile=binding.profile,
            )
        except MemoryInputError as exc:
            raise ModelRetry(str(exc)) from exc
        except MemoryBackendError as exc:
            log.warning("memory: retrieve_memory failed: %s", exc)
            return {"error": f"memory unavailable: {exc}", "memories": []}
        log.info("memory: %s called retrieve_memory(%r, scope=%s) -> %d",
                 _agent_name(ctx) or "agent", query, scope, len(found))
        return {"memories": [retrieved_to_dict(m) for m in found]}

    @toolset.tool
    async def store_memory(
        ctx: RunContext[Any],
        content: str,
        metadata: dict[str, Any] | None = None,
        importance: float = 0.5,
        memory_type: Literal["note", "decision"] = "note",
    ) -> dict[str, Any]:
        """Remember something for later steps and later runs; returns the memory's id.

        Args:
            content: what to remember, as a self-contained sentence or paragraph.
            metadata: JSON facts to filter by later, e.g. {"topic": "aligners"}.
            importance: 0 (trivia) to 1 (must not be forgotten).
            memory_type: "note" (something learned) or "decision" (something decided).
        """
        binding = bind(ctx)
        if binding is None:
            return {**DISABLED, "id": None}
        if memory_type not in AGENT_MEMORY_TYPES:
            raise ModelRetry(f"memory_type must be one of {list(AGENT_MEMORY_TYPES)}, got {memory_type!r}")
        if not 0.0 <= importance <= 1.0:
            raise ModelRetry(f"importance must be between 0 and 1, got {importance}")
        agent = _agent_name(ctx)
        meta = {
            **_check_metadata(metadata),
            **binding.provenance,
            "origin": "agent",
            **({"agent": agent} if agent else {}),
        }
        try:
            memory_id = await binding.client.store(
                content,
                metadata=meta,
                session_id=binding.session,
                importance=min(importance, binding.max_importance),
                memory_type=memory_type,
                agent_type=agent,
            )
        except MemoryInputError as exc:
            raise ModelRetry(str(exc)) from exc
        except MemoryBackendError as exc:
            log.warning("memory: store_memory failed: %s", exc)
            return {"error": f"memory unavailable: {exc}", "id": None}
        if binding.stored is not None:
            binding.stored[memory_type] = binding.stored.get(memory_type, 0) + 1
        return {"id": memory_id, "session_id": binding.session}

    @toolset.tool
    async def get_related_memories(
        ctx: RunContext[Any], memory_id: str, depth: int = 1
    ) -> dict[str, Any]:
        """Memories linked to one memory (what it follows, was caused by, references, is part
        of), nearest first.

        Args:
            memory_id: the id of a memory, as retrieve_memory or store_memory returned it.
            depth: how many links to follow (1-3).
        """
        binding = bind(ctx)
        if binding is None:
            return {**DISABLED, "related": []}
        if not 1 <= depth <= 3:
            raise ModelRetry(f"depth must be between 1 and 3, got {depth}")
        try:
            found = await binding.client.get_related_memories(memory_id, depth=depth)
        except MemoryInputError as exc:
            raise ModelRetry(str(exc)) from exc
        except MemoryBackendError as exc:
            log.warning("memory: get_related_memories failed: %s", exc)
            return {"error": f"memory unavailable: {exc}", "related": []}
        if "session" in binding.scopes and "all" not in binding.scopes:
            allowed = set(await binding.client.visible_sessions(binding.session))
            found = [m for m in found if m.document.session_id in allowed]
        return {"related": [related_to_dict(m) for m in found]}

    return toolset
