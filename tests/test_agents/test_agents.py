"""Agents with pydantic-ai TestModel / FunctionModel, the offline model, and model building."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf
from pydantic_ai import RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from DeepResearch.agents import ExecutorAgent, PlannerAgent, SynthesizerAgent, build_agents
from DeepResearch.src.agents.models import ModelConfigError, build_model
from DeepResearch.src.agents.offline_model import OfflineModel
from DeepResearch.src.agents.prompts import (
    PlanStep,
    cited_sources,
    executor_prompt,
    parse_findings,
    parse_plan,
    planner_prompt,
    split_question,
)
from DeepResearch.src.datatypes.agents import AgentDependencies, AgentType
from DeepResearch.src.datatypes.execution import ExecutionStatus
from DeepResearch.src.rag.library import DocumentLibrary
from DeepResearch.src.rag.loader import sample_documents_dir
from DeepResearch.src.tools.document_tools import default_registry
from DeepResearch.src.tools.registry import ToolContext
from DeepResearch.src.tools.runner import ToolRunner
from DeepResearch.src.tools.toolset import registry_toolset
from DeepResearch.src.utils.execution_history import ExecutionHistory

pytestmark = pytest.mark.unit
MakeConfig = Callable[..., DictConfig]


@pytest.fixture
def deps(make_config: MakeConfig) -> AgentDependencies:
    registry = default_registry()
    library = DocumentLibrary.from_folder(sample_documents_dir())
    runner = ToolRunner(registry, ToolContext(library=library), ExecutionHistory())
    return AgentDependencies(
        config=make_config(), tools=registry.names(), tool_runner=runner, step_name="step_1"
    )


async def test_executor_tool_calls_go_through_the_runner(deps: AgentDependencies) -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [
            p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
        ]
        if not returns:
            return ModelResponse(
                parts=[ToolCallPart("search_documents", {"query": "splice-aware STAR"})]
            )
        top = returns[0].content[0]["source"]
        return ModelResponse(parts=[TextPart(f"- [{top}] found it")])

    agent = ExecutorAgent(FunctionModel(model), toolsets=[registry_toolset(default_registry())])
    result = await agent.execute("find", deps)
    assert result.success, result.error
    assert result.data == "- [rna_seq_aligners.md] found it"
    assert result.metadata["tool_calls"] == ["search_documents"]
    assert result.agent_type is AgentType.EXECUTOR and result.execution_time > 0
    [item] = deps.tool_runner.history.items
    assert (item.tool, item.step_name, item.status) == (
        "search_documents",
        "step_1",
        ExecutionStatus.SUCCESS,
    )
    assert item.parameters == {"query": "splice-aware STAR"}


async def test_tool_failure_reaches_the_model_and_the_history(deps: AgentDependencies) -> None:
    seen: list[Any] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [
            p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
        ]
        if not returns:
            return ModelResponse(parts=[ToolCallPart("read_document", {"source": "nope.md"})])
        seen.append(returns[0].content)
        return ModelResponse(parts=[TextPart("! could not read")])

    agent = ExecutorAgent(FunctionModel(model), toolsets=[registry_toolset(default_registry())])
    result = await agent.execute("read", deps)
    assert result.success
    assert "no document 'nope.md'" in seen[0]["error"]
    assert deps.tool_runner.history.failed_steps()[0].error_category.value == "not_found"


async def test_tools_outside_deps_tools_are_hidden(deps: AgentDependencies) -> None:
    deps.tools = ["list_documents"]
    names: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        names.extend(t.name for t in info.function_tools)
        return ModelResponse(parts=[TextPart("ok")])

    await ExecutorAgent(
        FunctionModel(model), toolsets=[registry_toolset(default_registry())]
    ).execute("x", deps)
    assert names == ["list_documents"]


async def test_extra_toolsets_reach_every_agent(deps: AgentDependencies) -> None:
    extra = FunctionToolset[AgentDependencies](id="extra")
    stored: list[str] = []

    @extra.tool
    async def remember(ctx: RunContext[AgentDependencies], content: str) -> str:
        """Store a note."""
        stored.append(f"{ctx.deps.step_name}:{content}")
        return "stored"

    for agent_class in (PlannerAgent, SynthesizerAgent):
        agent = agent_class(TestModel(call_tools=["remember"]), toolsets=[extra])
        result = await agent.execute("go", deps)
        assert result.success, result.error
        assert result.metadata["tool_calls"] == ["remember"]
    assert len(stored) == 2 and stored[0].startswith("step_1:")


async def test_model_failure_becomes_an_agent_result_with_the_error(
    deps: AgentDependencies,
) -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise TimeoutError("server took too long")

    result = await PlannerAgent(FunctionModel(model)).execute("plan", deps)
    assert not result.success
    assert result.error == "planner agent failed: TimeoutError: server took too long"


async def test_offline_planner_splits_compound_questions(
    deps: AgentDependencies, make_config: MakeConfig
) -> None:
    agents = build_agents(make_config(), default_registry())
    tools = default_registry().names()
    question = "Which aligner suits RNA-seq reads and how are variants called?"
    nested = await agents.planner.execute(planner_prompt(question, tools, 4), deps)
    steps = parse_plan(nested.data, tools)
    assert [(s.kind, s.text) for s in steps] == [
        ("subquestion", "Which aligner suits RNA-seq reads"),
        ("subquestion", "how are variants called?"),
    ]
    flat = await agents.planner.execute(planner_prompt(question, tools, 0), deps)
    assert [s.tool for s in parse_plan(flat.data, tools)] == [
        "search_documents",
        "search_documents",
        "read_document",
    ]


def agent_info(*tools: str) -> AgentInfo:
    """What a FunctionModel is told about its agent: here only the names of its tools."""
    return AgentInfo(
        function_tools=[ToolDefinition(name=name) for name in tools], allow_text_output=True,
        output_tools=[], model_settings=None, model_request_parameters=ModelRequestParameters(),
        instructions=None,
    )


def test_offline_planner_uses_its_memory_section_before_searching_memory_itself() -> None:
    question = "Which aligner suits RNA-seq reads?"
    tools = default_registry().names()
    briefing = (
        "- [plan, succeeded, score 2.100] Plan for 'Which aligner?' succeeded: 3 of 3 steps done\n"
        "- [answer, score 1.900] Question: Which aligner? Answer: STAR. [rna_seq_aligners.md] "
        "(cited: rna_seq_aligners.md)"
    )
    model = OfflineModel()
    briefed = model.plan(
        [ModelRequest(parts=[UserPromptPart(planner_prompt(question, tools, 0, briefing))])],
        agent_info("retrieve_memory"),
    )
    assert not [p for p in briefed.parts if isinstance(p, ToolCallPart)]  # no extra turn
    text = "".join(p.content for p in briefed.parts if isinstance(p, TextPart))
    assert "read_document: rna_seq_aligners.md" in text
    assert "# memory: the earlier answer to 'Which aligner?' (recalled, score 1.900) cited it" in text
    # A MEMORY section that names no cited documents: the planner asks memory itself.
    unbriefed = model.plan(
        [ModelRequest(parts=[UserPromptPart(planner_prompt(question, tools, 0, briefing[:70]))])],
        agent_info("retrieve_memory"),
    )
    (call,) = unbriefed.parts
    assert isinstance(call, ToolCallPart) and call.tool_name == "retrieve_memory"


def test_offline_planner_that_splits_the_question_searches_memory_too() -> None:
    """A compound question becomes sub-questions; unbriefed, the planner still asks memory
    first, as a planner would, and notes in its plan what earlier answers cited."""
    question = "Which aligner suits RNA-seq reads and how are variants called?"
    tools = default_registry().names()
    prompt = planner_prompt(question, tools, 3, "- [plan, succeeded, score 2.100] Plan for 'x'")
    (call,) = OfflineModel().plan([ModelRequest(parts=[UserPromptPart(prompt)])],
                                  agent_info("retrieve_memory")).parts
    assert isinstance(call, ToolCallPart) and call.tool_name == "retrieve_memory"
    recalled = {"memories": [
        {"score": 2.0, "metadata": {"question": "earlier one", "sources": ["variant_calling.md"]}}]}
    response = OfflineModel().plan([
        ModelRequest(parts=[UserPromptPart(prompt)]), ModelResponse(parts=[call]),
        ModelRequest(parts=[ToolReturnPart("retrieve_memory", recalled)]),
    ], agent_info("retrieve_memory"))
    text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
    assert [s.line() for s in parse_plan(text, tools)] == [
        "1. subquestion: Which aligner suits RNA-seq reads",
        "2. subquestion: how are variants called?",
    ]
    assert "# memory: the earlier answer to 'earlier one' (recalled, score 2.000) cited it: " \
        "variant_calling.md" in text


def test_offline_planner_reads_the_sources_recalled_answers_cited_with_the_top_results() -> None:
    question = "Which aligner suits RNA-seq reads, as compared in lab_aligner_notes.md?"
    tools = default_registry().names()
    recalled = {"memories": [
        {"score": 2.0, "metadata": {"question": "earlier one", "sources": ["rna_seq_aligners.md"]}},
        {"score": 1.5, "metadata": {"question": "earlier two", "sources": [
            "variant_calling.md", "rna_seq_aligners.md", "lab_aligner_notes.md"]}},
    ]}
    messages: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart(planner_prompt(question, tools, 0))]),
        ModelResponse(parts=[ToolCallPart("retrieve_memory", {"query": question})]),
        ModelRequest(parts=[ToolReturnPart("retrieve_memory", recalled)]),
    ]
    response = OfflineModel().plan(messages, agent_info())
    text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
    assert [s.line() for s in parse_plan(text, tools)] == [
        f"1. search_documents: {question}",
        "2. read_document: lab_aligner_notes.md",  # named by the question: not read twice
        "3. read_document: rna_seq_aligners.md, variant_calling.md, the top results of step 1",
    ]
    assert "# memory: the earlier answer to 'earlier one' (recalled, score 2.000) cited it: " \
        "reading rna_seq_aligners.md" in text


async def test_offline_executor_makes_real_tool_calls(
    deps: AgentDependencies, make_config: MakeConfig
) -> None:
    agents = build_agents(make_config(), default_registry())
    question = "Which aligner suits RNA-seq reads?"
    step = PlanStep(2, "tool", "the top results of step 1", tool="read_document")
    prompt = executor_prompt(question, step, 2, ["rna_seq_aligners.md", "dna_aligners.md"], [])
    result = await agents.executor.execute(prompt, deps)
    assert result.metadata["tool_calls"] == ["read_document", "read_document"]
    findings = parse_findings(result.data)
    assert {f.source for f in findings} == {"rna_seq_aligners.md", "dna_aligners.md"}
    assert any("STAR" in f.text for f in findings)


async def test_offline_executor_reads_named_documents_and_the_top_results_once(
    deps: AgentDependencies, make_config: MakeConfig
) -> None:
    agents = build_agents(make_config(), default_registry())
    step = PlanStep(2, "tool", "rna_seq_aligners.md, the top results of step 1",
                    tool="read_document")
    found = ["rna_seq_aligners.md", "dna_aligners.md", "file_formats.md"]
    prompt = executor_prompt("Which aligner suits RNA-seq reads?", step, 2, found, [])
    result = await agents.executor.execute(prompt, deps)
    # The named document, then the best found not read yet: two calls, none twice.
    assert result.metadata["tool_calls"] == ["read_document", "read_document"]
    assert {f.source for f in parse_findings(result.data)} == {"rna_seq_aligners.md", "dna_aligners.md"}


async def test_offline_synthesizer_cites_and_says_it_is_offline(
    deps: AgentDependencies, make_config: MakeConfig
) -> None:
    agents = build_agents(make_config(), default_registry())
    prompt = (
        "QUESTION: Which aligner suits RNA-seq reads?\nFINDINGS:\n"
        "- [rna_seq_aligners.md] STAR is a splice-aware aligner built for RNA-seq reads.\n"
        "- [file_formats.md] BED files list genomic intervals.\n"
    )
    result = await agents.synthesizer.execute(prompt, deps)
    assert "offline model" in result.data
    assert cited_sources(result.data) == ["rna_seq_aligners.md"]


def test_split_question() -> None:
    assert split_question("What is STAR?") == ["What is STAR?"]
    assert split_question("a; b") == ["a", "b"]
    assert split_question("What is STAR? What is BWA?") == ["What is STAR?", "What is BWA?"]
    assert split_question("reads and quality") == ["reads and quality"]


def llm(**values: Any) -> DictConfig:
    return OmegaConf.create(values)


def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    openai = llm(provider="openai", model="gpt-4o-mini", api_key_env="OPENAI_API_KEY")
    with pytest.raises(ModelConfigError, match="set the environment variable OPENAI_API_KEY"):
        build_model(openai, AgentType.PLANNER)
    anthropic = llm(provider="anthropic", model="claude-x", api_key_env="ANTHROPIC_API_KEY")
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY"):
        build_model(anthropic, AgentType.PLANNER)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert build_model(openai, AgentType.PLANNER).model_name == "gpt-4o-mini"


def test_openai_compatible_needs_no_key_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    cfg = llm(
        provider="openai_compatible",
        model="llama3.1",
        base_url="http://localhost:8000/v1",
        api_key_env="OPENAI_COMPATIBLE_API_KEY",
        api_key_required=False,
    )
    model = build_model(cfg, AgentType.EXECUTOR)
    assert isinstance(model, OpenAIChatModel) and model.model_name == "llama3.1"
    assert "localhost:8000" in str(model.client.base_url)


def test_unknown_provider_lists_the_choices() -> None:
    with pytest.raises(ModelConfigError, match=r"'magic' is unknown; choose one of \('offline'"):
        build_model(llm(provider="magic"), AgentType.PLANNER)


def test_build_agents_does_not_swallow_model_errors(
    make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY"):
        build_agents(make_config("llm=anthropic"), default_registry())
