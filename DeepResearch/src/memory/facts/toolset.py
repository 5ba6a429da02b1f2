"""The ten fact tools as a pydantic-ai toolset bound to one FactGraph (so to one namespace):

    agent = Agent(model, toolsets=[fact_toolset(FactGraph(client))])

The graph is fixed by the program; no tool argument can reach another namespace. A bad
argument goes back to the model as a retry naming it (ModelRetry); an unknown person is an
empty answer with a message; a backend failure is an answer saying memory is unavailable.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

from pydantic_ai import ModelRetry
from pydantic_ai.toolsets import FunctionToolset

from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.facts.graph import FactGraph
from DeepResearch.src.memory.facts.tools import TOOLS

log = logging.getLogger("DeepResearch.memory")
TOOLSET_ID = "deepresearch-facts"
INSTRUCTIONS = (
    "You can look up what is known about people: profiles, skills, employers (with history), "
    "places, topics, conversations and relationships, each fact with its confidence, evidence "
    "(message ids) and validity. Prefer these tools over guessing; give people by name, alias "
    "or id; semantic_search_facts searches every fact by meaning."
)


def _bound(graph: FactGraph, tool: Callable[..., Any]) -> Callable[..., Any]:
    """`tool` without its graph argument, with the same name, docs and schema."""
    signature = inspect.signature(tool)
    params = list(signature.parameters.values())[1:]

    @functools.wraps(tool)
    async def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            answer = await tool(graph, *args, **kwargs)
        except MemoryInputError as exc:
            raise ModelRetry(str(exc)) from exc
        except MemoryBackendError as exc:
            log.warning("memory: fact tool %s failed: %s", tool.__name__, exc)
            return {"tool": tool.__name__, "message": f"memory unavailable: {exc}"}
        return answer.model_dump(mode="json", exclude_defaults=True)

    call.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    call.__annotations__ = {k: v for k, v in tool.__annotations__.items() if k != "graph"}
    return call


def fact_toolset(graph: FactGraph, *, toolset_id: str = TOOLSET_ID) -> FunctionToolset[Any]:
    toolset = FunctionToolset[Any](id=toolset_id, instructions=INSTRUCTIONS,
                                   docstring_format="google")
    for name, tool in TOOLS.items():
        toolset.add_function(_bound(graph, tool), takes_ctx=False, name=name)
    return toolset
