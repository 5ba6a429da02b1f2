"""ResearchState: everything one research loop knows, carried through the graph."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from DeepResearch.src.agents.prompts import Finding, PlanStep
from DeepResearch.src.tools.runner import ToolRunner
from DeepResearch.src.utils.execution_history import ExecutionHistory
from DeepResearch.src.workflow.review import ReviewRound


@dataclass
class StepResult:
    """What executing one plan step gave."""

    step: str
    kind: str
    success: bool
    summary: str
    tool_calls: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    error: str | None = None
    duration: float = 0.0
    # finding lines ("- [source] text") the step produced beside its summary: a sub-question's
    # are its nested loop's, whose summary is a written answer
    findings: list[str] = field(default_factory=list)


@dataclass
class SubLoopResult:
    """A nested loop's outcome, as its parent receives it."""

    loop_id: str
    question: str
    answer: str
    success: bool
    depth: int
    iterations: int
    sources: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    duration: float = 0.0
    findings: list[str] = field(default_factory=list)  # the loop's finding lines


@dataclass
class PhaseRecord:
    node: str
    phase: str
    loop_id: str
    duration: float
    ok: bool


@dataclass
class ResearchState:
    """One loop's state. The root loop is created by `create_research_state` (run.py); nested
    loops by `AgentOrchestrator.create_child_state`."""

    question: str
    config: DictConfig
    plan: list[PlanStep] = field(default_factory=list)
    full_plan: str = ""  # the planner's raw text
    notes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    execution_results: list[StepResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    phase_log: list[PhaseRecord] = field(default_factory=list)
    run_dir: Path | None = None
    execution_history: ExecutionHistory = field(default_factory=ExecutionHistory)
    tool_runner: ToolRunner | None = None
    flow: str = "default"
    documents_dir: Path | None = None
    sources: list[str] = field(default_factory=list)  # documents consulted, in order
    drafts: dict[str, list[str]] = field(
        default_factory=lambda: {"planning": [], "research": [], "writing": [], "review": []}
    )
    final_answer: str | None = None
    # Loop bookkeeping (nested loops).
    loop_id: str = "root"
    parent_loop_id: str | None = None
    depth: int = 0
    iteration: int = 0
    max_iterations: int = 6
    sub_loops: list[SubLoopResult] = field(default_factory=list)
    review_rounds: list[ReviewRound] = field(default_factory=list)  # the root loop's (review.py)
    # Memory (filled by the memory subsystem; the Foundation leaves them None).
    memory_client: Any = None
    memory_session_id: str | None = None
    memory_config: Any = None
    memory_profiles: dict[str, str] = field(default_factory=dict)  # agent type -> profile name
    # memory type -> how many this run stored: the run's tally (its console line and report
    # section), shared by everything that stores for the run (e.g. the notes taker)
    memory_stored: dict[str, int] | None = None
    # What a hook wants the next run of an agent type to know ("planner", "executor", ...):
    # the node puts it in that agent's prompt as a MEMORY section, once.
    briefings: dict[str, str] = field(default_factory=dict)

    @property
    def pending_steps(self) -> list[PlanStep]:
        return [step for step in self.plan if step.status == "pending"]

    def add_sources(self, sources: list[str]) -> None:
        for source in sources:
            if source not in self.sources:
                self.sources.append(source)

    def take_briefing(self, agent_type: str) -> str:
        return self.briefings.pop(agent_type, "")

    def draft(self, phase: str, text: str) -> None:
        if phase not in self.drafts:
            raise KeyError(f"unknown draft phase {phase!r}; phases: {sorted(self.drafts)}")
        self.drafts[phase].append(text.rstrip() + "\n")
