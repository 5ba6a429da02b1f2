"""What each phase needs from the state before it runs. A missing or malformed field stops the
run with one error naming the phase and the field; the last checkpoint is left as it was, so
the run can be resumed once the cause is fixed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from DeepResearch.src.agents.prompts import PlanStep
from DeepResearch.src.workflow.errors import WorkflowError
from DeepResearch.src.workflow.hooks import NodeHook
from DeepResearch.src.workflow.state import StepResult

if TYPE_CHECKING:
    from DeepResearch.src.workflow.base import WorkflowNode
    from DeepResearch.src.workflow.hooks import NodeContext
    from DeepResearch.src.workflow.state import ResearchState

STEP_STATUSES = ("pending", "done", "failed", "skipped")


class StateValidationError(WorkflowError):
    """A phase found the state without something it needs."""


@dataclass(frozen=True)
class Need:
    field: str
    what: str  # what a right value is, for the message
    ok: Callable[[Any], bool]


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _plan(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(s, PlanStep) and s.status in STEP_STATUSES for s in value)
    )


def _results(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(r, StepResult) for r in value)


QUESTION = Need("question", "a non-empty question", _text)
PLAN = Need("plan", f"a non-empty list of plan steps with a status in {STEP_STATUSES}", _plan)
RESULTS = Need("execution_results", "the results of at least one executed step", _results)
ANSWER = Need("final_answer", "the drafted answer (non-empty text)", _text)

# phase -> what it needs: research needs a plan, writing needs research results.
REQUIREMENTS: Mapping[str, tuple[Need, ...]] = {
    "plan": (QUESTION,),
    "route": (QUESTION, PLAN),
    "execute": (QUESTION, PLAN),
    "synthesize": (QUESTION, PLAN, RESULTS),
    "review": (QUESTION, ANSWER),
}


def check_phase(phase: str, state: ResearchState, node: str = "") -> None:
    for need in REQUIREMENTS.get(phase, ()):
        value = getattr(state, need.field, None)
        if not need.ok(value):
            raise StateValidationError(
                f"phase {phase!r}{f' ({node})' if node else ''} of loop {state.loop_id} needs "
                f"state.{need.field} to be {need.what}; got {value!r:.120}"
            )


class PhaseRequirements(NodeHook):
    """Checks every node's needs before it runs (first of the node hooks)."""

    async def before_node(self, node: WorkflowNode, ctx: NodeContext) -> None:
        check_phase(node.phase, ctx.state, type(node).__name__)
