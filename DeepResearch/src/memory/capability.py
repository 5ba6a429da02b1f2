"""The memory toolset packaged as a pydantic-ai capability: the tools plus the instructions that
tell a model when to use them. `Agent(..., capabilities=[memory_capability()])` is all an
agent needs; the workflow gives it to the Planner, Executor and Synthesizer."""

from __future__ import annotations

from pydantic_ai import RunContext
from pydantic_ai.capabilities import Capability

from DeepResearch.src.datatypes.agents import AgentDependencies
from DeepResearch.src.memory.toolset import memory_toolset

CAPABILITY_ID = "memory"
INSTRUCTIONS = (
    "You have a long-term memory shared with the other agents and with earlier runs. "
    "Before deciding, call retrieve_memory with the question (scope='all' to include earlier "
    "runs) when earlier plans, answers or tool failures could help; store_memory what a later "
    "step or run should know; get_related_memories to follow a memory's links. A MEMORY section "
    "in the prompt lists what the workflow already recalled for you, with scores."
)


def _instructions(ctx: RunContext[AgentDependencies]) -> str:
    # Only when this run has memory: a model is never told about tools that cannot work.
    return INSTRUCTIONS if ctx.deps.memory_client is not None else ""


def memory_capability() -> Capability[AgentDependencies]:
    """A new memory capability (toolset + instructions)."""
    return Capability[AgentDependencies](
        toolsets=[memory_toolset()], instructions=_instructions, id=CAPABILITY_ID
    )
