"""WorkflowServices: what every loop of one run shares (the graph's deps)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from omegaconf import DictConfig

from DeepResearch.src.datatypes.agents import AgentDependencies, AgentType
from DeepResearch.src.tools.registry import ToolContext, ToolRegistry
from DeepResearch.src.tools.runner import ToolRunListener, ToolRunner
from DeepResearch.src.utils.execution_history import ExecutionHistory
from DeepResearch.src.workflow.errors import ConfigurationError
from DeepResearch.src.workflow.hooks import NodeHook, RunHook

if TYPE_CHECKING:
    from DeepResearch.agents import WorkflowAgents
    from DeepResearch.src.agents.agent_orchestrator import AgentOrchestrator
    from DeepResearch.src.workflow.review import ReviewTeam
    from DeepResearch.src.workflow.state import ResearchState


@dataclass
class WorkflowServices:
    config: DictConfig
    agents: WorkflowAgents
    registry: ToolRegistry
    tool_context: ToolContext
    orchestrator: AgentOrchestrator
    node_hooks: list[NodeHook] = field(default_factory=list)
    run_hooks: list[RunHook] = field(default_factory=list)
    # Shared by the ToolRunner of every loop, so a listener sees each tool run once.
    tool_listeners: list[ToolRunListener] = field(default_factory=list)
    # Who reviews and revises the root loop's answer (review.py); None: no review.
    review: ReviewTeam | None = None

    def make_tool_runner(self, history: ExecutionHistory, loop_id: str) -> ToolRunner:
        value = self.config.tools.max_retries
        retries = value if isinstance(value, int) and not isinstance(value, bool) else -1
        if retries < 0:
            raise ConfigurationError(f"tools.max_retries={value!r}: give a whole number >= 0 "
                                     "(extra attempts when a tool raises)")
        return ToolRunner(
            self.registry,
            self.tool_context,
            history,
            listeners=self.tool_listeners,
            max_retries=retries,
            loop_id=loop_id,
        )

    def agent_deps(
        self, state: ResearchState, agent_type: AgentType, step_name: str = "agent"
    ) -> AgentDependencies:
        """AgentDependencies of one agent run within `state`'s loop."""
        uses_tools = agent_type is AgentType.EXECUTOR
        return AgentDependencies(
            config=self.config,
            tools=self.registry.names() if uses_tools else [],
            other_agents={
                name: agent for name, agent in vars(self.agents).items() if name != agent_type.value
            },
            data_sources=[str(state.documents_dir)] if state.documents_dir else [],
            tool_runner=state.tool_runner,
            step_name=step_name,
            loop_id=state.loop_id,
            memory_client=state.memory_client,
            memory_config=state.memory_config,
            session_id=state.memory_session_id,
            agent_profile=state.memory_profiles.get(agent_type.value)
            if state.memory_client is not None
            else None,
        )
