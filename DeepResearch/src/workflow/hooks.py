"""The extension points of a run. Each hook has no-op defaults: override what you need.

- NodeHook: around every workflow node (attached once, in WorkflowNode, for all nodes);
- LoopHook: when a nested loop starts and ends (AgentOrchestrator.enter_loop/exit_loop);
- RunHook: when a run's root state is created and when it is closed (run.py);
- tool runs: ToolRunListener in DeepResearch.src.tools.runner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from pydantic_graph import GraphRunContext

    from DeepResearch.src.workflow.base import WorkflowNode
    from DeepResearch.src.workflow.services import WorkflowServices
    from DeepResearch.src.workflow.state import ResearchState, SubLoopResult

    NodeContext = GraphRunContext[ResearchState, WorkflowServices]


class NodeHook:
    async def before_node(self, node: WorkflowNode, ctx: NodeContext) -> None:
        """Called before `node.run`; `node.phase` says which phase (plan, route, ...)."""

    async def after_node(self, node: WorkflowNode, ctx: NodeContext, result: Any) -> None:
        """Called after `node.run` returned `result` (the next node or End)."""

    async def on_node_error(
        self, node: WorkflowNode, ctx: NodeContext, error: BaseException
    ) -> None:
        """Called when `node.run` raised; the error is re-raised afterwards."""


class LoopHook:
    async def on_loop_start(self, parent: ResearchState, child: ResearchState) -> None:
        """A nested loop is about to run `child` (its own state) for `parent`."""

    async def on_loop_end(
        self, parent: ResearchState, child: ResearchState, result: SubLoopResult
    ) -> None:
        """The nested loop finished; its history has been merged into the parent's."""


class RunHook:
    async def on_run_start(self, state: ResearchState) -> None:
        """The root state exists (run folder made, nothing run yet)."""

    async def on_run_end(self, state: ResearchState, error: BaseException | None) -> None:
        """The run finished (error is None) or failed; outputs are written after this."""

    async def on_outputs_written(self, state: ResearchState, paths: dict[str, Path]) -> None:
        """The run folder's files exist (`paths`: report, summary, history, ...); a hook
        may append its own section to them."""
