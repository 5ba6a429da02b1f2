"""ResearchState, the node base class, graph assembly and flow resolution."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig
from pydantic_graph import End, GraphRunContext

from DeepResearch.app import ResearchState, run_graph
from DeepResearch.src.agents.prompts import PlanStep
from DeepResearch.src.workflow import nodes
from DeepResearch.src.workflow.base import WorkflowNode
from DeepResearch.src.workflow.errors import ConfigurationError, WorkflowError
from DeepResearch.src.workflow.flows import resolve_flow
from DeepResearch.src.workflow.graph import build_graph, discover_nodes, research_graph
from DeepResearch.src.workflow.hooks import NodeHook
from DeepResearch.src.workflow.run import create_services, run_research

pytestmark = pytest.mark.unit
MakeConfig = Callable[..., DictConfig]


def test_state_defaults_and_helpers(make_config: MakeConfig) -> None:
    state = ResearchState(question="q", config=make_config())
    assert (state.loop_id, state.depth, state.iteration, state.flow) == ("root", 0, 0, "default")
    assert state.memory_client is None and state.memory_session_id is None
    assert state.memory_config is None
    state.plan = [
        PlanStep(1, "tool", "x", tool="search_documents"),
        PlanStep(2, "subquestion", "y"),
    ]
    state.plan[0].status = "done"
    assert [step.index for step in state.pending_steps] == [2]
    state.add_sources(["a.md", "b.md", "a.md"])
    assert state.sources == ["a.md", "b.md"]
    state.draft("planning", "text")
    with pytest.raises(KeyError, match="unknown draft phase 'final'"):
        state.draft("final", "text")


def test_nodes_are_derived_from_return_hints() -> None:
    found = discover_nodes(nodes.Plan)
    assert found == [
        nodes.Plan,
        nodes.Route,
        nodes.ExecuteDefault,
        nodes.ExecuteRag,
        nodes.Synthesize,
        nodes.Review,
    ]
    defined = {c for c in WorkflowNode.subclasses if c.__module__ == nodes.__name__}
    assert defined == set(found)
    assert research_graph() is research_graph()


def test_every_node_shares_the_one_base_and_is_wrapped_once() -> None:
    for node_class in discover_nodes(nodes.Plan):
        assert issubclass(node_class, WorkflowNode)
        assert node_class.run.__workflow_wrapped__
        assert node_class.phase != "workflow"


class Second(WorkflowNode):
    phase = "second"

    async def run(self, ctx: GraphRunContext[Any, Any]) -> End[str]:
        ctx.state.notes.append("second ran")
        return End("done")


class First(WorkflowNode):
    phase = "first"

    async def run(self, ctx: GraphRunContext[Any, Any]) -> Second:
        return Second()


class Recording(NodeHook):
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def before_node(self, node: WorkflowNode, ctx: Any) -> None:
        self.calls.append(f"before {node.phase}")

    async def after_node(self, node: WorkflowNode, ctx: Any, result: Any) -> None:
        self.calls.append(f"after {node.phase}")


async def test_a_node_only_named_in_a_return_hint_is_still_registered(
    make_config: MakeConfig,
) -> None:
    # Only First is given; Second is found through First.run's return hint.
    graph = build_graph(First)
    services = create_services(make_config())
    hook = Recording()
    services.node_hooks.append(hook)
    state = ResearchState(question="q", config=make_config())
    assert await graph.run(state=state, deps=services, inputs=First()) == "done"
    assert state.notes == ["second ran"]
    assert hook.calls == ["before first", "after first", "before second", "after second"]
    assert set(state.timings) == {"first", "second"}
    assert [(r.node, r.ok) for r in state.phase_log] == [("First", True), ("Second", True)]


def test_resolve_flow(make_config: MakeConfig) -> None:
    assert resolve_flow(make_config()) == "default"
    assert resolve_flow(make_config("flows.rag.enabled=true")) == "rag"
    assert resolve_flow(make_config("flow=rag")) == "rag"
    with pytest.raises(ConfigurationError, match="flow='magic' is unknown"):
        resolve_flow(make_config("flow=magic"))
    with pytest.raises(ConfigurationError, match=r"unknown flow\(s\) \['magic'\]"):
        resolve_flow(make_config("+flows.magic.enabled=true"))


async def test_run_graph_refuses_a_running_event_loop(make_config: MakeConfig) -> None:
    assert asyncio.get_running_loop()
    with pytest.raises(RuntimeError, match="await run_research"):
        run_graph("Which aligner suits RNA-seq reads?", make_config())


async def test_failed_planner_is_an_error_and_outputs_are_still_written(
    make_config: MakeConfig,
) -> None:
    from pydantic_ai.models.function import FunctionModel

    def broken(messages: Any, info: Any) -> Any:
        raise ConnectionError("model server down")

    cfg = make_config()
    services = create_services(cfg)
    with (
        services.agents.planner.agent.override(model=FunctionModel(broken)),
        pytest.raises(WorkflowError, match=r"planning failed.*model server down"),
    ):
        await run_research("Which aligner suits RNA-seq reads?", cfg, services)
    [run_dir] = list(Path(cfg.outputs_dir).iterdir())
    summary = (run_dir / "WORKFLOW_SUMMARY.md").read_text()
    assert "failed: WorkflowError" in summary and "model server down" in summary
