"""WorkflowNode: the one base class of every workflow node.

Subclassing it is all a node does to get, around its `run`: timing into `state.timings`
and `state.phase_log`, error recording, and every NodeHook of the run (memory's
retrieve-before / store-after arrive this way). The wrapping happens once, in
`__init_subclass__`, so no node repeats it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from pydantic_graph import BaseNode, GraphRunContext

from DeepResearch.src.workflow.services import WorkflowServices
from DeepResearch.src.workflow.state import PhaseRecord, ResearchState

NodeResult = Any  # a WorkflowNode or End[str]
RunMethod = Callable[[Any, GraphRunContext[ResearchState, WorkflowServices]], Awaitable[NodeResult]]


def _with_hooks(run: RunMethod) -> RunMethod:
    @functools.wraps(run)
    async def wrapped(
        self: WorkflowNode, ctx: GraphRunContext[ResearchState, WorkflowServices]
    ) -> NodeResult:
        state, hooks = ctx.state, ctx.deps.node_hooks
        for hook in hooks:
            await hook.before_node(self, ctx)
        started = time.perf_counter()
        try:
            result = await run(self, ctx)
        except BaseException as exc:
            duration = time.perf_counter() - started
            _record(state, self, duration, ok=False)
            state.errors.append(f"{type(self).__name__} failed: {type(exc).__name__}: {exc}")
            for hook in hooks:
                await hook.on_node_error(self, ctx, exc)
            raise
        _record(state, self, time.perf_counter() - started, ok=True)
        for hook in hooks:
            await hook.after_node(self, ctx, result)
        return result

    wrapped.__workflow_wrapped__ = True  # type: ignore[attr-defined]
    return wrapped


def _record(state: ResearchState, node: WorkflowNode, duration: float, ok: bool) -> None:
    state.timings[node.phase] = state.timings.get(node.phase, 0.0) + duration
    state.phase_log.append(
        PhaseRecord(type(node).__name__, node.phase, state.loop_id, duration, ok)
    )


class WorkflowNode(BaseNode[ResearchState, WorkflowServices, str]):
    """Base of all nodes. Set `phase` ("plan", "route", "execute", "synthesize", ...)."""

    phase: ClassVar[str] = "workflow"
    subclasses: ClassVar[list[type[WorkflowNode]]] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        WorkflowNode.subclasses.append(cls)
        run = cls.__dict__.get("run")
        if run is not None and not getattr(run, "__workflow_wrapped__", False):
            cls.run = _with_hooks(run)  # type: ignore[method-assign]

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
