"""`deepresearch resume=outputs/run_<...>`: continue a run from its last checkpoint.

Completed phases are not redone (their results, tool results included, come from the
checkpoint); the memory session continues (the run's session id, its pending writes, the plans
waiting for their outcome); memory writes carry deterministic ids, so a step redone after the
crash stores nothing twice. A run that finished says so; a folder that is no run is an error.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from DeepResearch.src.agents.models import ModelConfigError
from DeepResearch.src.memory.errors import MemoryConfigError
from DeepResearch.src.rag.loader import DocumentsFolderError
from DeepResearch.src.workflow import nodes as nodes_module
from DeepResearch.src.workflow.base import WorkflowNode
from DeepResearch.src.workflow.checkpoint import Checkpointer, load_checkpoint
from DeepResearch.src.workflow.checkpoint_memory import find_integration, import_memory
from DeepResearch.src.workflow.errors import ConfigurationError, WorkflowError
from DeepResearch.src.workflow.graph import build_graph
from DeepResearch.src.workflow.run import RunOutcome, close_research_state, create_run_services
from DeepResearch.src.workflow.snapshot import SnapshotError, state_from_dict

USER_ERRORS = (ConfigurationError, DocumentsFolderError, ModelConfigError, MemoryConfigError)


@dataclass
class ResumeOutcome:
    run_dir: Path
    already_complete: bool
    outcome: RunOutcome | None = None


def node_class(name: str) -> type[WorkflowNode]:
    for cls in WorkflowNode.subclasses:
        if cls.__name__ == name and cls.__module__ == nodes_module.__name__:
            return cls
    raise SnapshotError(f"the checkpoint's next_node {name!r} is no node of the workflow")


def run_config(checkpoint: dict) -> DictConfig:
    """The run's own config, with the memory session it had (so that it continues)."""
    cfg = OmegaConf.create(checkpoint["config"])
    memory = checkpoint.get("memory")
    if memory is not None and cfg.get("memory") is not None:
        cfg.memory.session_id = memory["root_session"]
    return cfg


async def resume_research(run_dir: str | Path) -> ResumeOutcome:
    checkpoint = load_checkpoint(run_dir)
    folder = Path(run_dir).expanduser()
    if checkpoint["status"] == "completed":
        return ResumeOutcome(folder, already_complete=True)
    cfg = run_config(checkpoint)
    next_name = checkpoint["next_node"]
    start = node_class(next_name) if next_name is not None else None
    state = state_from_dict(checkpoint["state"], cfg)
    state.run_dir = folder  # the folder may have moved since
    services = create_run_services(cfg)
    [checkpointer] = [h for h in services.run_hooks if isinstance(h, Checkpointer)]
    checkpointer.continue_from(checkpoint)
    state.tool_runner = services.make_tool_runner(state.execution_history, state.loop_id)
    notes = len(state.notes)
    for hook in services.run_hooks:
        await hook.on_run_start(state)
    del state.notes[notes:]  # the memory hook's "session ..." note is there already
    integration = find_integration(services)
    if integration is not None and checkpoint.get("memory") is not None:
        import_memory(integration, checkpoint["memory"])
    try:
        if start is not None:
            answer = await build_graph(start).run(state=state, deps=services, inputs=start())
        else:  # killed while the outputs were written
            answer = state.final_answer or ""
    except BaseException as exc:
        await close_research_state(state, services, exc)
        raise
    await close_research_state(state, services)
    return ResumeOutcome(folder, False, RunOutcome(answer=answer, run_dir=folder, state=state))


def resume_command(run_dir: str) -> int:
    """The CLI's resume: prints the answer (or why not) and returns the exit code."""
    try:
        result = asyncio.run(resume_research(run_dir))
    except USER_ERRORS as exc:  # not a run folder, or the run's config no longer holds
        print(f"deepresearch: error: {exc}", file=sys.stderr)
        return 2
    except WorkflowError as exc:  # e.g. a phase's state is missing a field: still resumable
        print(f"deepresearch: error: {exc}", file=sys.stderr)
        return 1
    if result.already_complete:
        print(f"Run {result.run_dir.resolve()} is already complete; nothing to resume.")
        print(f"  report:  {(result.run_dir / 'report.md').resolve()}")
        return 0
    assert result.outcome is not None
    print(result.outcome.answer)
    print()
    print(f"Resumed: {result.run_dir.resolve()}")
    print(f"  report:  {(result.run_dir / 'report.md').resolve()}")
    return 0
