"""What the memory wiring of one run shares: the client, the settings of the run's flow, the
session of every loop, and the log of what was recalled (shown on the console and in the
run's report).

Settings come from two places, merged once per run:
- the `memory` group (validated into `MemoryConfig` by the memory core);
- `flows.<flow>.memory`: workflow keys (`enabled`, `top_k`, `scope`, `agent_profiles`) plus
  any `memory` key to override for this flow only, e.g.
  `+flows.rag.memory.retrieval.min_similarity=0.3`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from omegaconf import DictConfig, OmegaConf

from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.errors import MemoryConfigError, MemorySubsystemError
from DeepResearch.src.memory.models import RetrievedMemory

if TYPE_CHECKING:
    from DeepResearch.src.memory.client import MemorySystemClient
    from DeepResearch.src.workflow.state import ResearchState

log = logging.getLogger("DeepResearch.memory")

Scope = Literal["all", "session"]
WORKFLOW_KEYS = ("enabled", "top_k", "scope", "agent_profiles", "document_facts")
DEFAULT_AGENT_PROFILES = {"planner": "planner", "executor": "executor", "synthesizer": "deepsearch"}


@dataclass(frozen=True)
class WorkflowMemorySettings:
    """How the workflow uses memory in one flow (`flows.<flow>.memory`)."""

    top_k: int | None = None  # memories recalled per node hook; None = memory.retrieval.top_k
    scope: Scope = "all"  # all: earlier runs' sessions too; session: this run's session only
    agent_profiles: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_AGENT_PROFILES))
    document_facts: bool = True  # facts of the documents read go into the knowledge graph


def _flow_section(cfg: DictConfig, flow: str) -> dict[str, Any]:
    node = cfg.get("flows", {}).get(flow, {}).get("memory")
    if node is None:
        return {}
    data = OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node
    if not isinstance(data, dict):
        raise MemoryConfigError(f"flows.{flow}.memory must be a mapping, got {data!r}")
    return {str(k): v for k, v in data.items()}


def resolve_memory(
    cfg: DictConfig, flow: str
) -> tuple[MemoryConfig, WorkflowMemorySettings] | None:
    """The run's memory config and workflow settings; None when memory is off for this run
    (`memory.enabled=false` or `flows.<flow>.memory.enabled=false`)."""
    if cfg.get("memory") is None:
        return None
    section = _flow_section(cfg, flow)
    overrides = {k: v for k, v in section.items() if k not in WORKFLOW_KEYS}
    merged = OmegaConf.merge(cfg.memory, overrides) if overrides else cfg.memory
    # Validated even when memory is off: a bad value stops start-up, not a later run.
    config = MemoryConfig.from_omegaconf(merged)
    if not config.enabled or not bool(section.get("enabled", True)):
        return None
    top_k = section.get("top_k")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise MemoryConfigError(f"flows.{flow}.memory.top_k={top_k!r}: give an int >= 1 or null")
    scope = section.get("scope", "all")
    if scope not in ("all", "session"):
        raise MemoryConfigError(f"flows.{flow}.memory.scope={scope!r}: choices ['all', 'session']")
    document_facts = section.get("document_facts", True)
    if not isinstance(document_facts, bool):
        raise MemoryConfigError(
            f"flows.{flow}.memory.document_facts={document_facts!r}: give true or false")
    profiles = {**DEFAULT_AGENT_PROFILES, **(section.get("agent_profiles") or {})}
    for agent, name in profiles.items():
        if name is not None and str(name) not in config.profiles:  # stops the run here
            raise MemoryConfigError(
                f"flows.{flow}.memory.agent_profiles.{agent}={name!r}: no such profile; "
                f"choices: {sorted(config.profiles)} (a new one: +memory.profiles.<name>.*)")
    settings = WorkflowMemorySettings(
        top_k=top_k,
        scope=scope,
        agent_profiles={a: str(p) for a, p in profiles.items() if p is not None},
        document_facts=document_facts,
    )
    return config, settings


@dataclass
class Recall:
    """One retrieval made by the workflow (a node hook), as the console and report show it."""

    loop_id: str
    phase: str
    purpose: str
    query: str
    memories: list[RetrievedMemory]


@dataclass
class MemoryRun:
    """The memory side of one run (root loop and every nested loop)."""

    client: MemorySystemClient
    config: MemoryConfig
    settings: WorkflowMemorySettings
    root_session: str
    sessions: dict[str, str] = field(default_factory=dict)  # loop id -> session id
    questions: dict[str, str] = field(default_factory=dict)  # loop id -> the loop's question
    recalls: list[Recall] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    stored: dict[str, int] = field(default_factory=dict)  # memory type -> count
    merges: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Written together at the next write point (a nested loop's end, the run's end): one
    # embedding batch instead of one per step.
    pending: list[dict[str, Any]] = field(default_factory=list)
    _warned: set[str] = field(default_factory=set)

    def session_of(self, loop_id: str) -> str:
        return self.sessions.get(loop_id, self.root_session)

    def profile_for(self, agent_type: str) -> str | None:
        return self.settings.agent_profiles.get(agent_type)

    async def write_pending(self, state: ResearchState | None = None) -> int:
        """Store everything pending (tool runs, plans, answers) in one batch."""
        batch, self.pending = self.pending, []
        return len(await self.store(batch, "storing the run's memories", state))

    async def store(
        self, items: Sequence[dict[str, Any]], what: str, state: ResearchState | None = None
    ) -> list[str]:
        """Store workflow memories in one batch (one embedding pass: each is embedded by its
        own content, which names the question it served)."""
        if not items:
            return []
        try:
            ids = await self.client.store_many(items)
        except MemorySubsystemError as exc:
            self.degrade(what, exc, state)
            return []
        for item in items:
            kind = str(item.get("memory_type", "note"))
            self.stored[kind] = self.stored.get(kind, 0) + 1
        return ids

    def degrade(self, what: str, exc: Exception, state: ResearchState | None = None) -> None:
        """A memory operation failed: one warning per kind of operation, the run goes on."""
        message = f"memory: {what} failed, continuing without it: {type(exc).__name__}: {exc}"
        self.problems.append(message)
        if state is not None:
            state.errors.append(message)
        if what not in self._warned:
            self._warned.add(what)
            log.warning(message)

    async def recall(
        self,
        state: ResearchState,
        *,
        phase: str,
        purpose: str,
        query: str,
        filters: Mapping[str, Any],
        agent_type: str,
        quiet: bool = False,
        select: Callable[[list[RetrievedMemory]], Awaitable[list[RetrievedMemory]]] | None = None,
    ) -> list[RetrievedMemory]:
        """Retrieve for a node hook (in the configured scope), keep what `select` keeps, log it
        (unless `quiet`: the caller does) and keep it for the report."""
        try:
            found = await self.client.retrieve(
                query,
                top_k=self.settings.top_k,
                filters=dict(filters),
                session_id=self.session_of(state.loop_id),
                profile=self.profile_for(agent_type),
                all_sessions=self.settings.scope == "all",
            )
        except MemorySubsystemError as exc:
            self.degrade(f"recall for {phase}", exc, state)
            return []
        if select is not None and found:
            found = await select(found)
        self.recalls.append(Recall(state.loop_id, phase, purpose, query, found))
        if found and not quiet:
            log.info(
                "memory: loop %s %s recalled %d (%s):", state.loop_id, phase, len(found), purpose
            )
            for memory in found:
                log.info("  %s", describe(memory))
        return found


def excerpt(text: str, limit: int = 110) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def describe(memory: RetrievedMemory, limit: int = 110) -> str:
    """One line: score, similarity, type, run (session) and an excerpt of the content."""
    doc = memory.document
    return (
        f"[score {memory.score:.3f}, similarity {memory.similarity:.3f}] {doc.memory_type} "
        f"(session {doc.session_id[:8]}): {excerpt(doc.content, limit)}"
    )
