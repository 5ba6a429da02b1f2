"""The agents: BaseAgent over pydantic-ai `Agent[AgentDependencies, str]`, and the Planner,
Executor and Synthesizer of the workflow.

Every agent takes extra pydantic-ai toolsets (`toolsets=`, e.g. the memory toolset) and
capabilities (`capabilities=`); the Executor also gets the registry toolset, whose calls all go through `deps.tool_runner`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from omegaconf import DictConfig
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelAPIError
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings
from pydantic_ai.toolsets import AbstractToolset

from DeepResearch.src.agents.models import build_model, model_settings
from DeepResearch.src.datatypes.agents import AgentDependencies, AgentResult, AgentType
from DeepResearch.src.tools.registry import ToolRegistry
from DeepResearch.src.tools.toolset import registry_toolset

logger = logging.getLogger(__name__)

Toolsets = Sequence[AbstractToolset[AgentDependencies]]
Capabilities = Sequence[AbstractCapability[AgentDependencies]]


class BaseAgent:
    agent_type: ClassVar[AgentType]
    instructions: ClassVar[str]

    def __init__(
        self,
        model: Model,
        *,
        toolsets: Toolsets = (),
        capabilities: Capabilities = (),
        settings: ModelSettings | None = None,
        retries: int = 1,
    ) -> None:
        self.model = model
        self.toolsets = list(toolsets)
        self.capabilities = list(capabilities)
        self.agent: Agent[AgentDependencies, str] = Agent(
            model,
            deps_type=AgentDependencies,
            output_type=str,
            instructions=self.instructions,
            toolsets=self.toolsets,
            capabilities=self.capabilities,
            model_settings=settings,
            retries=retries,
            name=self.agent_type.value,
        )

    async def execute(self, prompt: str, deps: AgentDependencies) -> AgentResult:
        """Run the agent; failures come back as AgentResult(success=False, error=...)."""
        started = time.perf_counter()
        try:
            result = await self.agent.run(prompt, deps=deps)
        except Exception as exc:
            error = f"{self.agent_type.value} agent failed: {type(exc).__name__}: {exc}"
            if isinstance(exc, ModelAPIError):  # which server answered (or did not): llm.base_url
                where = getattr(self.model, "base_url", None)
                error += f" (model {getattr(self.model, 'model_name', '?')!r}" + (
                    f" at {where})" if where else ")")
            logger.warning(error)
            return AgentResult(
                success=False,
                error=error,
                execution_time=time.perf_counter() - started,
                agent_type=self.agent_type,
            )
        tool_calls = [
            part.tool_name
            for message in result.all_messages()
            if isinstance(message, ModelResponse)
            for part in message.parts
            if isinstance(part, ToolCallPart)
        ]
        usage = result.usage
        metadata: dict[str, Any] = {
            "model": getattr(self.model, "model_name", str(self.model)),
            "tool_calls": tool_calls,
            "requests": usage.requests,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
        }
        return AgentResult(
            success=True,
            data=result.output,
            metadata=metadata,
            execution_time=time.perf_counter() - started,
            agent_type=self.agent_type,
        )


class PlannerAgent(BaseAgent):
    agent_type = AgentType.PLANNER
    instructions = (
        "You plan research. Answer ONLY with numbered lines, one step each, in the form "
        "`N. <tool>: <input>` using a tool listed under TOOLS, or `N. subquestion: <question>` "
        "to research a part of a compound question separately (only when SUBQUESTIONS says "
        "allowed). Typical plan: search the documents, then read the most relevant ones."
    )


class ExecutorAgent(BaseAgent):
    agent_type = AgentType.EXECUTOR
    instructions = (
        "You carry out ONE research step. Call the tool the STEP names (read_document takes "
        "a source from SOURCES FOUND). Then report what you found as lines "
        "`- [source] finding`, quoting the documents faithfully; report tool errors as `! error`."
    )


class SynthesizerAgent(BaseAgent):
    agent_type = AgentType.SYNTHESIZER
    instructions = (
        "You write the final answer to QUESTION from FINDINGS (and SUB-QUESTION ANSWERS), "
        "using only what they say. Cite every claim with its source in square brackets, "
        "e.g. [rna_seq_aligners.md]. Say plainly when the findings do not answer the question."
    )


@dataclass
class WorkflowAgents:
    planner: PlannerAgent
    executor: ExecutorAgent
    synthesizer: SynthesizerAgent


def build_agents(
    cfg: DictConfig,
    registry: ToolRegistry,
    *,
    toolsets: Toolsets = (),
    capabilities: Capabilities = (),
) -> WorkflowAgents:
    """The three agents on the models of `cfg.llm`; `toolsets` (e.g. the memory toolset) and
    `capabilities` go to every agent.

    Model errors (unknown provider, missing API key) propagate: an agent is never silently
    left out.
    """
    settings = model_settings(cfg.llm)
    return WorkflowAgents(
        planner=PlannerAgent(
            build_model(cfg.llm, AgentType.PLANNER),
            toolsets=toolsets,
            capabilities=capabilities,
            settings=settings,
        ),
        executor=ExecutorAgent(
            build_model(cfg.llm, AgentType.EXECUTOR),
            toolsets=[registry_toolset(registry), *toolsets],
            capabilities=capabilities,
            settings=settings,
        ),
        synthesizer=SynthesizerAgent(
            build_model(cfg.llm, AgentType.SYNTHESIZER),
            toolsets=toolsets,
            capabilities=capabilities,
            settings=settings,
        ),
    )
