"""Checkpoints: after every phase of the root loop (plan, route, each executed step -- a nested
loop is one step --, synthesis, the report) the run's state, the next node and the phase log
are saved to `<run folder>/checkpoint.json`, atomically (temporary file in the same folder,
fsync, rename). `resume.py` continues a run from it.

pydantic-graph has no persistence of its own: the Checkpointer is a NodeHook (after every
node) and a RunHook (start of the run, outputs written).
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig
from pydantic_graph import End

from DeepResearch.src.utils.atomic import write_atomic
from DeepResearch.src.utils.drafts import DraftManager
from DeepResearch.src.utils.outputs import saved_config
from DeepResearch.src.workflow.checkpoint_memory import export_memory, fix_plan_id, stamp_ids
from DeepResearch.src.workflow.errors import (
    CheckpointWriteError,
    ConfigurationError,
)
from DeepResearch.src.workflow.hooks import NodeHook, RunHook
from DeepResearch.src.workflow.requirements import PhaseRequirements
from DeepResearch.src.workflow.snapshot import state_to_dict

if TYPE_CHECKING:
    from DeepResearch.src.workflow.base import WorkflowNode
    from DeepResearch.src.workflow.hooks import NodeContext
    from DeepResearch.src.workflow.memory.integration import MemoryIntegration
    from DeepResearch.src.workflow.state import ResearchState

CHECKPOINT_NAME = "checkpoint.json"
FORMAT = "deepresearch-checkpoint"
VERSION = 1


class NotAResumableRun(ConfigurationError):
    """`resume=` names something that is not a run folder with a readable checkpoint."""


def load_checkpoint(run_dir: str | Path) -> dict[str, Any]:
    """The checkpoint of a run folder; NotAResumableRun saying why when there is none."""
    folder = Path(run_dir).expanduser()
    path = folder / CHECKPOINT_NAME
    if not folder.is_dir():
        raise NotAResumableRun(f"resume={run_dir}: no such folder; give a run folder (outputs/run_...)")
    if not path.is_file():
        raise NotAResumableRun(
            f"resume={run_dir}: not a run folder ({CHECKPOINT_NAME} is missing); give a folder "
            "a deepresearch run made (outputs/run_<timestamp>_<question>)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotAResumableRun(f"resume={run_dir}: {path} is unreadable: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        got = (data.get("format"), data.get("version")) if isinstance(data, dict) else type(data)
        raise NotAResumableRun(
            f"resume={run_dir}: {path} is not a checkpoint of version {VERSION} "
            f"(format {FORMAT!r}); got {got!r}"
        )
    return data


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Checkpointer(NodeHook, RunHook):
    """Saves the root loop's state after each of its phases; the last hook of a run."""

    def __init__(self, config: DictConfig, memory: MemoryIntegration | None = None) -> None:
        self.config_data = saved_config(config)  # resolved, without its secrets
        self.memory = memory
        self.run_id: str | None = None
        self.phases: list[dict[str, Any]] = []
        self.resumed = False
        self.error: BaseException | None = None
        # (phase, seconds the run waited) of every save, and seconds of each write to disk
        self.costs: list[tuple[str, float]] = []
        self.write_seconds: list[float] = []
        # The disk writes (fsync dominates: milliseconds to tens of them on a busy disk) go to
        # one thread, in order, while the run goes on. A crash before one lands leaves the
        # checkpoint before it, which is just as resumable.
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpoint")
        self._writes: list[Future[None]] = []
        self._last: str | None = None  # the last checkpoint written (its JSON text)
        self.drafts_saved: dict[str, int] = {}  # draft phase -> texts saved as versions

    def continue_from(self, checkpoint: dict[str, Any]) -> None:
        """This run resumes `checkpoint` (its id, phase log and last saved state)."""
        self.run_id, self.resumed = checkpoint["run_id"], True
        self.phases = list(checkpoint["phases"])
        self._last = json.dumps(checkpoint)
        self.drafts_saved = {k: len(v) for k, v in checkpoint["state"]["drafts"].items()}

    async def on_run_start(self, state: ResearchState) -> None:
        if state.run_dir is None:
            return
        self.error = None
        if not self.resumed:  # a new run (the services may have served an earlier one)
            self.run_id, self.phases, self.drafts_saved = Path(state.run_dir).name, [], {}
            self._last = None
        assert self.run_id is not None
        if state.memory_client is not None:
            stamp_ids(state.memory_client, self.run_id)
        if self.resumed:
            self.phases.append({"event": "resumed", "at": _now(), "pid": os.getpid()})
            self.resumed = False
        else:
            self.save(state, phase="start", node=None, next_node="Plan")

    async def after_node(self, node: WorkflowNode, ctx: NodeContext, result: Any) -> None:
        state = ctx.state
        if self.memory is not None and self.run_id is not None and node.phase == "plan":
            fix_plan_id(self.memory, state, self.run_id)
        if state.run_dir is None or state.loop_id != "root":
            return
        step = None
        if node.phase == "execute" and state.execution_results:
            step = state.execution_results[-1].step
        next_node = None if isinstance(result, End) else type(result).__name__
        self.save(state, phase=node.phase, node=type(node).__name__, next_node=next_node, step=step)

    async def on_run_end(self, state: ResearchState, error: BaseException | None) -> None:
        self.error = error

    async def on_outputs_written(self, state: ResearchState, paths: dict[str, Path]) -> None:
        if state.run_dir is None:
            return
        if self.error is None:
            drafts = DraftManager(state.run_dir)
            drafts.save_draft("review", "report", paths["report"].read_text(encoding="utf-8"))
            self.save(state, phase="report", node=None, next_node=None, status="completed")
            self.wait()
            with paths["summary"].open("a", encoding="utf-8") as handle:
                handle.write("\n" + drafts.summary_section())
            return
        # The last completed phase stays the one to resume from: only the status changes.
        message = f"{type(self.error).__name__}: {self.error}"
        if self._last is not None:
            doc = json.loads(self._last)
            doc["status"], doc["error"] = "failed", message
            doc["phases"].append({"event": "failed", "at": _now(), "error": message})
            self.write(Path(state.run_dir) / CHECKPOINT_NAME, json.dumps(doc))
        self.wait()

    def write(self, path: Path, text: str) -> None:
        """Queue an atomic write; a failed earlier write stops the run here, with its cause."""
        self._raise_failed()
        self._writes.append(self._writer.submit(self._timed_write, path, text))

    def _timed_write(self, path: Path, text: str) -> None:
        started = time.perf_counter()
        try:
            write_atomic(path, text)
        except OSError as exc:
            raise CheckpointWriteError(
                f"the checkpoint could not be written to {path}: {exc}; the run can be resumed "
                "from the last checkpoint written there once the cause is fixed"
            ) from exc
        self.write_seconds.append(time.perf_counter() - started)

    def _raise_failed(self) -> None:
        done = [w for w in self._writes if w.done()]
        self._writes = [w for w in self._writes if not w.done()]
        for write in done:
            write.result()  # re-raises the OSError (disk full, ...) of that write

    def wait(self) -> None:
        """Every queued write on disk (the end of a run)."""
        for write in self._writes:
            write.result()
        self._writes = []

    def save(
        self,
        state: ResearchState,
        *,
        phase: str,
        node: str | None,
        next_node: str | None,
        step: str | None = None,
        status: str = "running",
    ) -> None:
        started = time.perf_counter()
        self._raise_failed()
        try:
            self.save_drafts(state)
        except OSError as exc:
            raise CheckpointWriteError(
                f"the drafts of phase {phase!r} could not be written to "
                f"{Path(state.run_dir or '') / 'drafts'}: {exc}"
            ) from exc
        entry = {"n": len(self.phases) + 1, "phase": phase, "node": node, "next": next_node,
                 "at": _now()}
        if step is not None:
            entry["step"] = step
        self.phases.append(entry)
        doc = {
            "format": FORMAT,
            "version": VERSION,
            "run_id": self.run_id,
            "status": status,
            "next_node": next_node,
            "phases": self.phases,
            "config": self.config_data,
            "state": state_to_dict(state),
            "memory": export_memory(self.memory) if self.memory is not None else None,
            "error": None,
        }
        assert state.run_dir is not None
        self._last = json.dumps(doc, default=str)
        self.write(Path(state.run_dir) / CHECKPOINT_NAME, self._last)
        self.costs.append((phase, time.perf_counter() - started))


    def save_drafts(self, state: ResearchState) -> None:
        """The drafts written since the last checkpoint, each as a new version."""
        assert state.run_dir is not None
        manager = DraftManager(state.run_dir)
        for phase, texts in state.drafts.items():
            for text in texts[self.drafts_saved.get(phase, 0):]:
                title = text.lstrip("#").split("\n", 1)[0]
                manager.save_draft(phase, title, text)
            self.drafts_saved[phase] = len(texts)


def with_checkpoints(
    cfg: DictConfig, kwargs: dict[str, Any], memory: MemoryIntegration | None
) -> dict[str, Any]:
    """create_services kwargs plus phase validation (first node hook), note-taking when
    flows.<flow>.notes.enabled, and the Checkpointer (last node hook, last run hook: it saves
    what the other hooks did)."""
    from DeepResearch.src.workflow.notes.setup import note_taker

    checkpointer = Checkpointer(cfg, memory)
    taker = note_taker(cfg, lambda: checkpointer.run_id)
    extra = [taker] if taker is not None else []
    return {
        **kwargs,
        "node_hooks": [PhaseRequirements(), *kwargs.get("node_hooks", []), *extra, checkpointer],
        "run_hooks": [*kwargs.get("run_hooks", []), *extra, checkpointer],
    }
