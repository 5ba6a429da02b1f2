"""What every agent run receives (`ctx.deps` in its tools) and what it returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig

if TYPE_CHECKING:
    from DeepResearch.src.tools.runner import ToolRunner


class AgentType(StrEnum):
    PLANNER = "planner"
    EXECUTOR = "executor"
    SYNTHESIZER = "synthesizer"


@dataclass
class AgentDependencies:
    """Dependencies of one agent run.

    `tools` names the registry tools this run may call; they all go through `tool_runner`
    (the one path: validate -> run -> ExecutionResult -> ExecutionHistory -> listeners).
    The memory fields stay None until the memory subsystem fills them.
    """

    config: DictConfig
    tools: list[str] = field(default_factory=list)
    other_agents: dict[str, Any] = field(default_factory=dict)
    data_sources: list[str] = field(default_factory=list)
    tool_runner: ToolRunner | None = None
    step_name: str = "agent"
    loop_id: str = "root"
    # Filled by the memory subsystem (next issue); unused by the Foundation.
    memory_client: Any = None
    memory_config: Any = None
    session_id: str | None = None
    agent_profile: Any = None


@dataclass
class AgentResult:
    """The outcome of one agent run; `error` says what went wrong when success is False."""

    success: bool
    data: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    execution_time: float = 0.0
    agent_type: AgentType = AgentType.EXECUTOR
