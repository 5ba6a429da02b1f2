"""The graph, assembled from the nodes' own return type hints (no hand-kept node list)."""

from __future__ import annotations

import inspect
from functools import cache
from typing import get_args, get_origin, get_type_hints

from pydantic_graph import End, Graph, GraphBuilder

from DeepResearch.src.workflow import nodes as nodes_module
from DeepResearch.src.workflow.base import WorkflowNode
from DeepResearch.src.workflow.errors import WorkflowError
from DeepResearch.src.workflow.services import WorkflowServices
from DeepResearch.src.workflow.state import ResearchState

START = nodes_module.Plan


def successors(node_class: type[WorkflowNode]) -> list[type[WorkflowNode]]:
    """The node classes `node_class.run` may return, read from its return type hint."""
    hint = get_type_hints(node_class.run)["return"]
    options = get_args(hint) if get_origin(hint) not in (None, End) else (hint,)
    found: list[type[WorkflowNode]] = []
    for option in options:
        if get_origin(option) is End or option is End:
            continue
        if not (inspect.isclass(option) and issubclass(option, WorkflowNode)):
            raise WorkflowError(
                f"{node_class.__name__}.run may return {option!r}, which is not a WorkflowNode"
            )
        found.append(option)
    return found


def discover_nodes(start: type[WorkflowNode] = START) -> list[type[WorkflowNode]]:
    """Every node reachable from `start`, breadth first."""
    order = [start]
    for node_class in order:
        for successor in successors(node_class):
            if successor not in order:
                order.append(successor)
    return order


def build_graph(
    start: type[WorkflowNode] = START,
) -> Graph[ResearchState, WorkflowServices, WorkflowNode, str]:
    node_list = discover_nodes(start)
    builder = GraphBuilder(
        name="deepresearch",
        state_type=ResearchState,
        deps_type=WorkflowServices,
        input_type=start,
        output_type=str,
    )
    builder.add(builder.edge_from(builder.start_node).to(start))
    builder.add(*(builder.node(node_class) for node_class in node_list))
    return builder.build()


@cache
def research_graph() -> Graph[ResearchState, WorkflowServices, WorkflowNode, str]:
    """The research graph (built once per process). Fails if a node of nodes.py is unreachable."""
    reachable = set(discover_nodes(START))
    defined = {cls for cls in WorkflowNode.subclasses if cls.__module__ == nodes_module.__name__}
    unreachable = sorted(cls.__name__ for cls in defined - reachable)
    if unreachable:
        raise WorkflowError(f"nodes defined but unreachable from {START.__name__}: {unreachable}")
    return build_graph(START)


async def run_workflow(state: ResearchState, services: WorkflowServices) -> str:
    """Run one loop (root or nested) to its answer."""
    return await research_graph().run(state=state, deps=services, inputs=START())
