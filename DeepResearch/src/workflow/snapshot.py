"""ResearchState <-> JSON, for checkpoints. Only what a loop knows is saved: the config, the
tool runner and the memory client are rebuilt by the process that resumes."""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from DeepResearch.src.agents.prompts import Finding, PlanStep
from DeepResearch.src.utils.execution_history import ExecutionHistory, ExecutionItem
from DeepResearch.src.workflow.errors import WorkflowError
from DeepResearch.src.workflow.review import ReviewRound
from DeepResearch.src.workflow.state import PhaseRecord, ResearchState, StepResult, SubLoopResult

# Fields kept as they are (JSON values already).
PLAIN_FIELDS = (
    "question", "full_plan", "notes", "answers", "errors", "timings", "flow", "sources",
    "drafts", "final_answer", "loop_id", "parent_loop_id", "depth", "iteration",
    "max_iterations", "memory_session_id", "memory_profiles", "briefings",
)
RECORD_FIELDS: dict[str, type] = {
    "plan": PlanStep,
    "findings": Finding,
    "execution_results": StepResult,
    "phase_log": PhaseRecord,
    "sub_loops": SubLoopResult,
    "review_rounds": ReviewRound,
}
PATH_FIELDS = ("run_dir", "documents_dir")


class SnapshotError(WorkflowError):
    """A saved state cannot be read back; the message names the field and the value."""


def state_to_dict(state: ResearchState) -> dict[str, Any]:
    data: dict[str, Any] = {name: getattr(state, name) for name in PLAIN_FIELDS}
    for name in RECORD_FIELDS:
        data[name] = [asdict(record) for record in getattr(state, name)]
    for name in PATH_FIELDS:
        value = getattr(state, name)
        data[name] = None if value is None else str(value)
    data["execution_history"] = state.execution_history.to_dict()
    return data


def _records(name: str, cls: type, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise SnapshotError(f"state.{name} must be a list, got {type(value).__name__}: {value!r:.80}")
    known = {f.name for f in fields(cls)}
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or not set(item) <= known:
            raise SnapshotError(
                f"state.{name}[{i}] is not a {cls.__name__} (fields {sorted(known)}): {item!r:.120}"
            )
        try:
            out.append(cls(**item))
        except TypeError as exc:
            raise SnapshotError(f"state.{name}[{i}] is not a {cls.__name__}: {exc}") from exc
    return out


def state_from_dict(data: dict[str, Any], config: DictConfig) -> ResearchState:
    """The state `state_to_dict` saved; `config` is the run's. Raises SnapshotError naming the
    first missing or malformed field."""
    data = {"review_rounds": [], **data}  # a checkpoint written before the review phase existed
    missing = [n for n in (*PLAIN_FIELDS, *RECORD_FIELDS, *PATH_FIELDS, "execution_history")
               if n not in data]
    if missing:
        raise SnapshotError(f"the saved state has no field(s) {missing}")
    values: dict[str, Any] = {name: data[name] for name in PLAIN_FIELDS}
    if isinstance(values["drafts"], dict):
        values["drafts"] = {"review": [], **values["drafts"]}
    for name, cls in RECORD_FIELDS.items():
        values[name] = _records(name, cls, data[name])
    for name in PATH_FIELDS:
        values[name] = None if data[name] is None else Path(data[name])
    history = data["execution_history"]
    try:
        items = [ExecutionItem.from_dict(item) for item in history["items"]]
        values["execution_history"] = ExecutionHistory(items=items, started_at=history["started_at"])
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotError(f"state.execution_history is malformed: {exc!r}") from exc
    return ResearchState(config=config, **values)
