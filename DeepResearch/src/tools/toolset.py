"""The registry's tools as one pydantic-ai toolset; every call goes through ctx.deps.tool_runner."""

from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.tools import Tool as PydanticTool
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset

from DeepResearch.src.datatypes.agents import AgentDependencies
from DeepResearch.src.tools.registry import ToolRegistry
from DeepResearch.src.tools.spec import ToolSpec


def _bridge(spec: ToolSpec) -> PydanticTool[AgentDependencies]:
    async def call(ctx: RunContext[AgentDependencies], **params: Any) -> Any:
        runner = ctx.deps.tool_runner
        if runner is None:
            raise RuntimeError(
                f"Tool {spec.name!r} was called but AgentDependencies.tool_runner is None; "
                "give the agent run a ToolRunner"
            )
        result = await runner.run(spec.name, params, step_name=ctx.deps.step_name)
        if result.success:
            return result.data
        # The model sees the failure and can adapt; the runner has recorded it.
        return {"error": result.error, "error_category": str(result.error_category)}

    return PydanticTool.from_schema(
        call,
        name=spec.name,
        description=spec.description,
        json_schema=spec.json_schema(),
        takes_ctx=True,
    )


def registry_toolset(registry: ToolRegistry) -> AbstractToolset[AgentDependencies]:
    """All registry tools; a run only sees those named in its `deps.tools`."""
    toolset = FunctionToolset[AgentDependencies](
        tools=[_bridge(spec) for spec in registry.list()], id="deepresearch-tools"
    )

    def allowed(ctx: RunContext[AgentDependencies], tool_def: ToolDefinition) -> bool:
        return tool_def.name in ctx.deps.tools

    return toolset.filtered(allowed)
