"""AgentOrchestrator: nested loops.

A nested loop is the whole workflow (Plan -> Route -> Execute -> Synthesize) run on a
sub-question with its own ResearchState, iteration limit and loop id ("root.1",
"root.1.2", ...). Its answer returns to the parent; its execution items land in the
parent's history (each tagged with the child's loop id); its drafts in the parent's drafts.
Loops inside loops are allowed up to `flows.<flow>.nested_loops.max_depth`.

Seams for memory: `enter_loop` / `exit_loop` (and the LoopHooks they call) are where a child
memory context is created and merged back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from omegaconf import DictConfig

from DeepResearch.src.datatypes.execution import ErrorCategory, ExecutionStatus
from DeepResearch.src.utils.execution_history import ExecutionHistory, ExecutionItem
from DeepResearch.src.workflow.flows import NestedLoopSettings, nested_loop_settings
from DeepResearch.src.workflow.hooks import LoopHook
from DeepResearch.src.workflow.state import ResearchState, SubLoopResult

if TYPE_CHECKING:
    from DeepResearch.src.workflow.services import WorkflowServices

logger = logging.getLogger(__name__)

LoopRunner = Callable[[ResearchState, "WorkflowServices"], Awaitable[str]]


class AgentOrchestrator:
    def __init__(
        self,
        config: DictConfig,
        run_loop: LoopRunner,
        *,
        loop_hooks: list[LoopHook] | None = None,
    ) -> None:
        self.config = config
        self.run_loop = run_loop
        self.loop_hooks: list[LoopHook] = loop_hooks if loop_hooks is not None else []

    def settings(self, state: ResearchState) -> NestedLoopSettings:
        return nested_loop_settings(self.config, state.flow)

    def can_nest(self, state: ResearchState) -> bool:
        settings = self.settings(state)
        return settings.enabled and state.depth < settings.max_depth

    def sub_question_allowance(self, state: ResearchState) -> int:
        """How many sub-questions the planner of `state`'s loop may spawn (0 = none)."""
        return self.settings(state).max_sub_questions if self.can_nest(state) else 0

    def create_child_state(
        self, parent: ResearchState, question: str, services: WorkflowServices
    ) -> ResearchState:
        loop_id = f"{parent.loop_id}.{len(parent.sub_loops) + 1}"
        history = ExecutionHistory()
        return ResearchState(
            question=question,
            config=parent.config,
            execution_history=history,
            tool_runner=services.make_tool_runner(history, loop_id),
            flow=parent.flow,
            documents_dir=parent.documents_dir,
            loop_id=loop_id,
            parent_loop_id=parent.loop_id,
            depth=parent.depth + 1,
            max_iterations=self.settings(parent).max_iterations,
            # The memory subsystem gives the child its own session in enter_loop.
            memory_client=parent.memory_client,
            memory_session_id=parent.memory_session_id,
            memory_config=parent.memory_config,
            memory_profiles=dict(parent.memory_profiles),
            memory_stored=parent.memory_stored,
        )

    async def run_nested_loop(
        self, parent: ResearchState, question: str, services: WorkflowServices
    ) -> SubLoopResult:
        if not self.can_nest(parent):
            raise RuntimeError(
                f"loop {parent.loop_id} (depth {parent.depth}) may not nest: "
                f"nested_loops {self.settings(parent)}"
            )
        child = self.create_child_state(parent, question, services)
        await self.enter_loop(parent, child)
        started = time.perf_counter()
        error: str | None = None
        try:
            answer = await self.run_loop(child, services)
        except Exception as exc:
            # The parent goes on with its other steps; the failure is recorded, not hidden.
            error = f"nested loop {child.loop_id} failed: {type(exc).__name__}: {exc}"
            logger.warning(error)
            child.errors.append(error)
            answer = ""
        result = SubLoopResult(
            loop_id=child.loop_id,
            question=question,
            answer=answer,
            success=error is None,
            depth=child.depth,
            iterations=child.iteration,
            sources=list(child.sources),
            errors=list(child.errors),
            duration=time.perf_counter() - started,
            findings=[finding.line() for finding in child.findings],
        )
        await self.exit_loop(parent, child, result)
        return result

    async def enter_loop(self, parent: ResearchState, child: ResearchState) -> None:
        """A nested loop starts. Memory seam: create the child's memory context here."""
        logger.info("nested loop %s starts: %s", child.loop_id, child.question)
        for hook in self.loop_hooks:
            await hook.on_loop_start(parent, child)

    async def exit_loop(
        self, parent: ResearchState, child: ResearchState, result: SubLoopResult
    ) -> None:
        """A nested loop ended: its result, history and drafts go to the parent.
        Memory seam: merge the child's memory context into the parent's here."""
        parent.sub_loops.append(result)
        parent.add_sources(result.sources)
        parent.errors += result.errors
        for phase, texts in child.drafts.items():
            parent.drafts[phase] += texts
        for phase, seconds in child.timings.items():
            key = f"nested.{phase}"
            parent.timings[key] = parent.timings.get(key, 0.0) + seconds
        parent.phase_log += child.phase_log
        parent.execution_history.extend(child.execution_history.items)
        parent.execution_history.add(
            ExecutionItem(
                step_name=f"loop {child.loop_id}",
                tool="sub_loop",
                status=ExecutionStatus.SUCCESS if result.success else ExecutionStatus.FAILED,
                result={"answer": result.answer, "sources": result.sources},
                error=("; ".join(result.errors) or None) if not result.success else None,
                parameters={"question": result.question, "depth": result.depth},
                duration=result.duration,
                error_category=None if result.success else ErrorCategory.RUNTIME,
                loop_id=parent.loop_id,
            )
        )
        for hook in self.loop_hooks:
            await hook.on_loop_end(parent, child, result)
