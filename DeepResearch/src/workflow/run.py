"""The life of one run: services and root state are created, the graph runs, the state is
closed (outputs written). `run_graph(question, cfg) -> str` is the synchronous entry point."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.toolsets import AbstractToolset

from DeepResearch.agents import build_agents
from DeepResearch.src.agents.agent_orchestrator import AgentOrchestrator
from DeepResearch.src.datatypes.agents import AgentDependencies
from DeepResearch.src.rag.library import DocumentLibrary
from DeepResearch.src.rag.loader import resolve_documents_dir
from DeepResearch.src.tools.document_tools import default_registry
from DeepResearch.src.tools.registry import ToolContext, ToolRegistry
from DeepResearch.src.tools.runner import ToolRunListener
from DeepResearch.src.utils.execution_history import ExecutionHistory
from DeepResearch.src.utils.outputs import make_run_dir, write_run_outputs
from DeepResearch.src.workflow.checkpoint import with_checkpoints
from DeepResearch.src.workflow.errors import ConfigurationError
from DeepResearch.src.workflow.flows import (
    document_extensions,
    documents_dir_setting,
    flow_settings,
    max_iterations,
    resolve_flow,
)
from DeepResearch.src.workflow.graph import run_workflow
from DeepResearch.src.workflow.hooks import LoopHook, NodeHook, RunHook
from DeepResearch.src.workflow.memory.integration import memory_plugins
from DeepResearch.src.workflow.review import review_team
from DeepResearch.src.workflow.services import WorkflowServices
from DeepResearch.src.workflow.state import ResearchState

logger = logging.getLogger(__name__)


@dataclass
class RunOutcome:
    answer: str
    run_dir: Path
    state: ResearchState

    @property
    def unsaved_memories(self) -> int:
        """Memories of this run neither written to the backend nor saved to a spill file
        (the `deepresearch` command then exits with status 1)."""
        client = self.state.memory_client
        return 0 if client is None else client.writes.unsaved


def create_services(
    cfg: DictConfig,
    *,
    registry: ToolRegistry | None = None,
    toolsets: Sequence[AbstractToolset[AgentDependencies]] = (),
    capabilities: Sequence[AbstractCapability[AgentDependencies]] = (),
    node_hooks: Sequence[NodeHook] = (),
    loop_hooks: Sequence[LoopHook] = (),
    run_hooks: Sequence[RunHook] = (),
    tool_listeners: Sequence[ToolRunListener] = (),
) -> WorkflowServices:
    """Everything the loops of one run share. Checks the flow and the documents folder first,
    so that a bad value stops the run before any model is built."""
    flow = resolve_flow(cfg)
    flow_settings(cfg, flow)
    folder = resolve_documents_dir(documents_dir_setting(cfg, flow))
    extensions = document_extensions(cfg, flow)
    registry = registry or default_registry()
    library = DocumentLibrary.from_folder(folder, extensions)
    agents = build_agents(cfg, registry, toolsets=toolsets, capabilities=capabilities)
    review = review_team(cfg, flow, library)
    orchestrator = AgentOrchestrator(cfg, run_workflow, loop_hooks=list(loop_hooks))
    return WorkflowServices(
        config=cfg,
        agents=agents,
        registry=registry,
        tool_context=ToolContext(config=cfg, library=library),
        orchestrator=orchestrator,
        node_hooks=list(node_hooks),
        run_hooks=list(run_hooks),
        tool_listeners=list(tool_listeners),
        review=review if review.settings.max_rounds > 0 else None,
    )


def create_run_services(cfg: DictConfig) -> WorkflowServices:
    """Services for one run of `cfg`, with the memory plug-ins when memory is on for it
    (memory.enabled and flows.<flow>.memory.enabled); without them otherwise. The run is
    checkpointed after every phase (checkpoint.py)."""
    plugins = memory_plugins(cfg)
    kwargs = plugins.services_kwargs() if plugins else {}
    integration = plugins.integration if plugins else None
    return create_services(cfg, **with_checkpoints(cfg, kwargs, integration))


async def create_research_state(
    question: str, cfg: DictConfig, services: WorkflowServices, *, write_outputs: bool = True
) -> ResearchState:
    """The root loop's state (and its run folder). Memory seam: RunHook.on_run_start."""
    if not question.strip():
        raise ConfigurationError("question is empty; give one: deepresearch \"question='...'\"")
    flow = resolve_flow(cfg)
    history = ExecutionHistory()
    try:
        run_dir = make_run_dir(cfg.outputs_dir, question) if write_outputs else None
    except OSError as exc:
        raise ConfigurationError(
            f"outputs_dir={cfg.outputs_dir} cannot be used: {exc.strerror or exc}; give a folder "
            "this process can create files in") from None
    state = ResearchState(
        question=question.strip(),
        config=cfg,
        execution_history=history,
        tool_runner=services.make_tool_runner(history, "root"),
        flow=flow,
        documents_dir=services.tool_context.library.folder,
        max_iterations=max_iterations(cfg, flow),
        run_dir=run_dir,
    )
    for hook in services.run_hooks:
        await hook.on_run_start(state)
    return state


async def close_research_state(
    state: ResearchState, services: WorkflowServices, error: BaseException | None = None
) -> None:
    """End of the run: RunHook.on_run_end (memory: ingest history, flush, close), then the
    outputs are written — also when the run failed, so the summary shows why."""
    for hook in services.run_hooks:
        await hook.on_run_end(state, error)
    if state.tool_runner is not None:
        state.errors += state.tool_runner.listener_errors
    if state.run_dir is not None:
        status = "completed" if error is None else f"failed: {type(error).__name__}: {error}"
        paths = write_run_outputs(state, status)
        for hook in services.run_hooks:
            await hook.on_outputs_written(state, paths)


async def run_research(
    question: str, cfg: DictConfig, services: WorkflowServices | None = None
) -> RunOutcome:
    services = services or create_run_services(cfg)
    state = await create_research_state(question, cfg, services)
    try:
        answer = await run_workflow(state, services)
    except BaseException as exc:
        await close_research_state(state, services, exc)
        raise
    await close_research_state(state, services)
    assert state.run_dir is not None
    return RunOutcome(answer=answer, run_dir=state.run_dir, state=state)


async def arun_graph(question: str, cfg: DictConfig) -> str:
    return (await run_research(question, cfg)).answer


def run_sync(question: str, cfg: DictConfig) -> RunOutcome:
    """run_research from synchronous code (never inside a running event loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop: the usual case. The run starts outside this handler, or
        pass  # every error of the run would carry "no running event loop" as its context
    else:
        raise RuntimeError(
            "run_graph()/run_sync() are synchronous and an event loop is already running here; "
            "use `await run_research(question, cfg)` (or `await arun_graph(...)`) instead"
        )
    return asyncio.run(run_research(question, cfg))


def run_graph(question: str, cfg: DictConfig) -> str:
    """Run the research workflow on `question` and return the answer."""
    return run_sync(question, cfg).answer
