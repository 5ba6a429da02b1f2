"""Memory in the workflow: one call builds every piece and says where it plugs in.

    plugins = memory_plugins(cfg)            # None when memory is off for this run
    services = create_services(cfg, **plugins.services_kwargs())

- state: `MemoryIntegration` (a RunHook) builds the client once per run from the `memory`
  group (`memory.session_id` continues a session, default a new one), puts it in the root
  `ResearchState` (client, session id, config, agent profiles), and at the end writes the
  pending tool runs, bridges the ExecutionHistory, and closes (flushes) the client;
- agents: the memory toolset (tools + instructions) for Planner, Executor, Synthesizer;
- nodes: `MemoryNodeHook`; nested loops: `NestedMemoryContexts`; tool runs:
  `ToolExecutionTracker`; documents read: `DocumentFactCollector` (their facts go into the
  knowledge graph at the run's end); after the outputs are written, a "Memory" section is
  appended to report.md and WORKFLOW_SUMMARY.md.

With memory off nothing here is created, and the workflow runs exactly as without memory.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig

from DeepResearch.src.memory.backends import IMPORT_SECONDS
from DeepResearch.src.memory.client import MemorySystemClient
from DeepResearch.src.memory.config import MemoryConfig, check_store_folder
from DeepResearch.src.memory.toolset import MemoryBinding, memory_toolset
from DeepResearch.src.memory.writes import UnwrittenMemoriesError
from DeepResearch.src.workflow.flows import resolve_flow
from DeepResearch.src.workflow.hooks import RunHook
from DeepResearch.src.workflow.memory.bridge import history_memories
from DeepResearch.src.workflow.memory.documents import DocumentFactCollector
from DeepResearch.src.workflow.memory.hooks import MemoryNodeHook
from DeepResearch.src.workflow.memory.nested import NestedMemoryContexts
from DeepResearch.src.workflow.memory.run_context import (
    MemoryRun,
    WorkflowMemorySettings,
    describe,
    resolve_memory,
)
from DeepResearch.src.workflow.memory.tracking import ToolExecutionTracker

if TYPE_CHECKING:
    from pydantic_ai import RunContext

    from DeepResearch.src.datatypes.agents import AgentDependencies
    from DeepResearch.src.workflow.state import ResearchState

log = logging.getLogger("DeepResearch.memory")


class MemoryIntegration(RunHook):
    """The run's memory lifecycle; the other pieces are started and stopped from here."""

    def __init__(self, config: MemoryConfig, settings: WorkflowMemorySettings) -> None:
        self.config = config
        self.settings = settings
        self.tracker = ToolExecutionTracker()
        self.documents = DocumentFactCollector()
        self.node_hook = MemoryNodeHook()
        self.loop_hook = NestedMemoryContexts()
        self.run: MemoryRun | None = None
        self._finished: MemoryRun | None = None  # until its outputs are written

    def bind(self, ctx: RunContext[AgentDependencies]) -> MemoryBinding | None:
        """An agent run's memory tools: its loop's session, the scopes the flow allows, and
        the loop and step stamped on what the agent stores."""
        deps = ctx.deps
        if deps.memory_client is None:
            return None
        return MemoryBinding(
            client=deps.memory_client,
            session_id=deps.session_id,
            scopes=("session", "all") if self.settings.scope == "all" else ("session",),
            profile=deps.agent_profile,
            provenance={"loop_id": deps.loop_id, "step": deps.step_name},
            stored=None if self.run is None else self.run.stored,  # the run's "stored" line
        )

    async def on_run_start(self, state: ResearchState) -> None:
        if self.run is not None:
            raise RuntimeError(
                "a memory-enabled WorkflowServices runs one research run at a time; "
                "create new services (create_services) for a concurrent run"
            )
        backend = self.config.backend
        imported_before = backend in IMPORT_SECONDS
        started = time.perf_counter()
        client = MemorySystemClient(self.config)
        await client.open()
        opened = time.perf_counter() - started
        # A process's first store of a kind imports the backend's modules and libraries.
        imported = None if imported_before else IMPORT_SECONDS.get(backend)
        run = MemoryRun(client, self.config, self.settings, root_session=client.session_id)
        run.sessions[state.loop_id] = client.session_id
        run.questions[state.loop_id] = state.question
        self.run = run
        self.tracker.start(run)
        self.documents.start(run)
        self.node_hook.start(run)
        self.loop_hook.run = run
        state.memory_client = client
        state.memory_session_id = client.session_id
        state.memory_config = self.config
        state.memory_profiles = dict(self.settings.agent_profiles)
        state.memory_stored = run.stored
        state.notes.append(
            f"memory: backend {self.config.backend}, session {client.session_id}"
            + ("" if client.available else " (backend unavailable: running without memory)")
        )
        log.info(
            "memory: %s backend%s, session %s, recall scope %s; opened in %.3f s%s",
            backend,
            "" if client.available else " UNAVAILABLE (nothing recalled; writes kept for later)",
            client.session_id,
            self.settings.scope,
            opened,
            "" if imported is None else f" (of which importing its libraries {imported:.3f} s)",
        )

    async def on_run_end(self, state: ResearchState, error: BaseException | None) -> None:
        run = self.run
        if run is None:
            return
        try:
            self.tracker.stop()
            run.pending += history_memories(
                state.execution_history, state.question, run.root_session, run.questions
            )
            await run.write_pending(state)  # the last batch: root loop + history bridge
            await self.documents.flush(state)  # facts of the documents read, into the graph
        finally:
            self.run, self._finished = None, run
            self.loop_hook.run = None
            self.node_hook.run = None
            self.documents.stop()
            try:
                await run.client.close()
            except UnwrittenMemoriesError as exc:  # lost: the run's exit status says so
                message = f"memory: {exc}"
                run.problems.append(message)
                state.errors.append(message)
                log.error(message)
            except Exception as exc:  # e.g. a cache file the full disk cannot take
                run.degrade("closing the memory client", exc, state)
        writes = run.client.writes
        if writes.unsaved:
            log.info("memory: %d memories of session %s are lost (see the error above)",
                     writes.unsaved, run.root_session)
        elif writes.spilled:
            log.info("memory: %d memories of session %s are not in the store but in %s",
                     writes.spilled, run.root_session, writes.spilled_file)
        else:
            log.info("memory: stored %s", stored_text(run))

    async def on_outputs_written(self, state: ResearchState, paths: dict[str, Path]) -> None:
        run, self._finished = self._finished, None
        if run is None:
            return
        section = render_memory_section(run)
        for key in ("report", "summary"):
            path = paths.get(key)
            if path is not None:
                with path.open("a", encoding="utf-8") as handle:
                    handle.write("\n" + section)


def stored_text(run: MemoryRun) -> str:
    """What the run stored: its memories by type, in its session (nested loops' sessions are
    its children), and the facts, which live in the namespace's graph, not in a session."""
    facts = run.stored.get("fact", 0)
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(run.stored.items()) if kind != "fact")
    text = f"{kinds or 'nothing'} in session {run.root_session}"
    return text + (f"; {facts} facts in the knowledge graph" if facts else "")


def render_memory_section(run: MemoryRun) -> str:
    """The Memory section of report.md / WORKFLOW_SUMMARY.md."""
    lines = [
        "## Memory",
        "",
        f"Backend `{run.config.backend}`, session `{run.root_session}`, recall scope "
        f"`{run.settings.scope}`.",
        "",
        "### Recalled from memory",
        "",
    ]
    recalled = [r for r in run.recalls if r.memories]
    if not recalled:
        lines.append("- (nothing recalled)")
    for recall in recalled:
        lines.append(f"- loop `{recall.loop_id}` {recall.phase} ({recall.purpose}):")
        lines += [f"  {m.rank}. {describe(m, 160)}" for m in recall.memories]
    if run.flags:
        lines += ["", "### Flagged to the executor before the call", ""]
        lines += [f"- {flag}" for flag in run.flags]
    lines += ["", "### Stored", "", f"- {stored_text(run)}"]
    lines += [f"- {merge}" for merge in run.merges]
    if run.problems:
        lines += ["", "### Memory problems", "", *(f"- {p}" for p in run.problems)]
    return "\n".join(lines) + "\n"


@dataclass
class MemoryPlugins:
    """The memory pieces of one run, in the shape `create_services` takes them."""

    integration: MemoryIntegration

    def services_kwargs(self) -> dict[str, Any]:
        integration = self.integration
        return {
            "toolsets": [memory_toolset(integration.bind)],
            "node_hooks": [integration.node_hook],
            "loop_hooks": [integration.loop_hook],
            "run_hooks": [integration],
            "tool_listeners": [integration.tracker, integration.documents],
        }


def memory_plugins(cfg: DictConfig) -> MemoryPlugins | None:
    """The memory plug-ins for a run of `cfg`, or None when memory is off for it."""
    resolved = resolve_memory(cfg, resolve_flow(cfg))
    if resolved is None:
        return None
    check_store_folder(resolved[0])  # an unusable folder stops the run here (exit 2)
    return MemoryPlugins(MemoryIntegration(*resolved))
