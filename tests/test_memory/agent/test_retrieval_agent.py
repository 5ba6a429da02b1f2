"""The retrieval agent's control flow and synthesis, over a stand-in graph with the ten tool
signatures (the real FactGraph: test_retrieval_real.py)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from DeepResearch.src.memory.agent.retrieval import (
    TraceStore,
    get_trace,
    retrieve_context,
)
from DeepResearch.src.memory.agent.retrieval.analysis import analyze
from DeepResearch.src.memory.agent.retrieval.synthesis import format_fact, grade
from DeepResearch.src.memory.agent.retrieval.types import FoundFact
from tests.test_memory.agent.fake_graph import (
    ALICE,
    BOB,
    CHARLIE,
    GOOGLE,
    TYPESCRIPT,
    FakeFactGraph,
    fact,
    skill_result,
)

ALICE_TS = fact("f1", ALICE, "HAS_SKILL", TYPESCRIPT, 0.92, ("msg_1",), proficiency="expert")
BOB_TS = fact("f2", BOB, "HAS_SKILL", TYPESCRIPT, 0.6, ("msg_2",))


@pytest.mark.parametrize(
    ("question", "tool", "arguments"),
    [
        ("Who should I ask about TypeScript?", "find_experts", {"query": "TypeScript"}),
        ("Where does Alice work?", "get_person_profile", {"person": "Alice"}),
        ("Who works at Google?", "find_people_by_organization", {"organization": "Google", "current_only": True}),
        ("Who used to work at Google?", "find_people_by_organization", {"organization": "Google", "current_only": False}),
        ("Who lives in Berlin?", "find_people_by_location", {"location": "Berlin"}),
        ("Who is interested in machine learning?", "find_people_by_topic", {"topic": "machine learning"}),
        ("Who has experience with Kubernetes?", "find_people_by_skill", {"skill": "Kubernetes"}),
        ("How do Alice and Bob know each other?", "get_relationships_between", {"person_a": "Alice", "person_b": "Bob"}),
        ("Tell me about Dana Smith.", "get_person_profile", {"person": "Dana Smith"}),
        ("I am refactoring the billing service", "semantic_search_facts", {"query": "I am refactoring the billing service", "similarity_threshold": 0.0}),
        ("Pairing with Charlie today", "semantic_search_facts", {"query": "Pairing with Charlie today", "similarity_threshold": 0.0}),
    ],
)
def test_the_rules_map_questions_to_tools(question: str, tool: str, arguments: dict[str, Any]) -> None:
    first = analyze([question]).needs[0].calls[0]
    assert (first.tool, first.arguments) == (tool, arguments)


def test_who_knows_a_person_asks_for_relationships_with_the_asker() -> None:
    messages = [{"author_name": "Bob", "content": "hi all"}, {"author_name": "Eve", "content": "who knows Bob?"}]
    needs = analyze(messages).needs
    assert (needs[0].calls[0].tool, needs[0].calls[0].arguments) == ("get_person_profile", {"person": "Bob"})
    assert [(c.tool, c.arguments) for c in needs[1].calls] == [
        ("get_relationships_between", {"person_a": "Eve", "person_b": "Bob"})]


def test_who_knows_a_skill_falls_through_to_the_skill_tools() -> None:
    calls = analyze(["who knows Rust?"]).needs[0].calls
    assert [c.tool for c in calls[:3]] == ["get_person_profile", "find_people_by_skill", "find_experts"]


def test_a_channel_asks_for_its_participants() -> None:
    needs = analyze(["Who is in this channel?"], channel_id="C42").needs
    assert needs[0].calls[0].tool == "get_conversation_participants"
    assert needs[0].calls[0].arguments == {"channel_id": "C42"}


def test_where_did_between_years_is_a_timeline_with_a_window() -> None:
    call = analyze(["Where did Charlie work between 2019 and 2022?"]).needs[0].calls[0]
    assert call.tool == "get_person_timeline"
    assert call.arguments["person"] == "Charlie"
    assert call.arguments["start_date"] < call.arguments["end_date"]


async def test_the_seed_scenario_finds_a_typescript_fact_and_stops() -> None:
    graph = FakeFactGraph(answers={"find_experts": skill_result(ALICE_TS)})
    result = await retrieve_context(graph, None, ["Who should I ask about TypeScript?"])
    assert result.facts == ["Alice has expert-level TypeScript skills (confidence: 0.92, evidence: msg_1)"]
    assert graph.calls == [("find_experts", {"query": "TypeScript", "limit": 5})]
    assert result.metadata.stop_reason == "goal_met"
    assert result.metadata.queries_executed == result.metadata.iterations_used == 1
    assert result.confidence == "high"


async def test_an_empty_primary_tool_falls_through_to_the_next() -> None:
    graph = FakeFactGraph(answers={"find_people_by_skill": skill_result(BOB_TS)})
    result = await retrieve_context(graph, None, ["Who should I ask about TypeScript?"])
    assert [c[0] for c in graph.calls] == ["find_experts", "find_people_by_skill"]
    assert "Bob has TypeScript skills" in result.facts[0]


async def test_a_failing_and_a_slow_tool_are_recorded_and_the_run_goes_on() -> None:
    graph = FakeFactGraph(
        answers={"find_people_by_topic": skill_result(ALICE_TS)},
        fail={"find_experts"},
        slow={"find_people_by_skill": 5.0},
    )
    result = await retrieve_context(graph, None, ["Who should I ask about TypeScript?"], tool_timeout=0.05)
    tools = [e.call for e in result.trace if e.kind == "tool"]
    assert [(c.tool, c.success) for c in tools] == [
        ("find_experts", False), ("find_people_by_skill", False), ("find_people_by_topic", True)]
    assert "RuntimeError: find_experts is broken" in (tools[0].error or "")
    assert "timed out after 0.05s" in (tools[1].error or "")
    assert result.facts and "TypeScript" in result.facts[0]
    assert result.metadata.tool_success_rate == pytest.approx(1 / 3, abs=1e-3)
    assert result.confidence == "low"  # one success in three calls


async def test_duplicates_across_tools_become_one_fact_with_all_evidence() -> None:
    copy = fact("f9", ALICE, "HAS_SKILL", TYPESCRIPT, 0.7, ("msg_7",))
    graph = FakeFactGraph(answers={"find_experts": skill_result(ALICE_TS, copy),
                                   "get_conversation_participants": skill_result(copy)})
    result = await retrieve_context(graph, None, ["Who should I ask about TypeScript?"], channel_id="C1")
    typescript = [f for f in result.facts if "TypeScript" in f]
    assert typescript == ["Alice has expert-level TypeScript skills (confidence: 0.92, evidence: msg_1, msg_7)"]


async def test_max_facts_stops_the_run_and_caps_the_answer() -> None:
    many = [fact(f"f{i}", person(f"P{i}"), "HAS_SKILL", TYPESCRIPT, 0.9, (f"m{i}",)) for i in range(8)]
    graph = FakeFactGraph(answers={"find_experts": {"facts": many, "entities": [TYPESCRIPT]}})
    result = await retrieve_context(graph, None, ["Who should I ask about TypeScript?"], max_facts=3)
    assert len(result.facts) == 3
    assert result.metadata.stop_reason == "max_facts"


def person(name: str) -> Any:
    from tests.test_memory.agent.fake_graph import person as make

    return make(name)


def _call(tool: str, arguments: dict[str, Any]) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("final_result", {"action": "call", "tool": tool, "arguments": arguments})])


def scripted_model(plans: list[dict[str, Any]], goal_met: bool = False) -> FunctionModel:
    """Plans in order (the last repeats); the evaluator answers goal_met."""
    plan_index = 0

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal plan_index
        schema = info.output_tools[0].parameters_json_schema
        if "goal_met" in schema.get("properties", {}):
            return ModelResponse(parts=[ToolCallPart("final_result", {"goal_met": goal_met, "stuck": False})])
        plan = plans[min(plan_index, len(plans) - 1)]
        plan_index += 1
        return ModelResponse(parts=[ToolCallPart("final_result", plan)])

    return FunctionModel(respond)


async def test_the_model_plans_with_a_typed_output() -> None:
    graph = FakeFactGraph(answers={"find_people_by_skill": skill_result(ALICE_TS)})
    model = scripted_model(
        [{"action": "call", "tool": "find_people_by_skill", "arguments": {"skill": "TypeScript", "min_proficiency": "expert"}},
         {"action": "finish", "reason": "answered"}],
    )
    result = await retrieve_context(graph, None, ["Who should I ask about TypeScript?"], model=model)
    assert graph.calls == [("find_people_by_skill", {"skill": "TypeScript", "min_proficiency": "expert"})]
    assert result.metadata.planner == "model"
    assert result.metadata.stop_reason == "planner_finished"
    assert "TypeScript" in result.facts[0]


async def test_the_model_s_goal_met_stops_the_run() -> None:
    graph = FakeFactGraph(answers={"find_experts": skill_result(ALICE_TS)})
    model = scripted_model([{"action": "call", "tool": "find_experts", "arguments": {"query": "TypeScript"}}], goal_met=True)
    result = await retrieve_context(graph, None, ["Who should I ask about TypeScript?"], model=model)
    assert result.metadata.stop_reason == "goal_met"
    assert result.metadata.queries_executed == 1


async def test_the_loop_guard_refuses_a_third_identical_call() -> None:
    graph = FakeFactGraph(answers={"find_experts": skill_result(ALICE_TS)})
    model = scripted_model([{"action": "call", "tool": "find_experts", "arguments": {"query": "TypeScript"}}])
    result = await retrieve_context(graph, None, ["Who should I ask about TypeScript?"], model=model)
    assert len(graph.calls) == 2
    assert result.metadata.stop_reason == "loop_guard"
    assert any("loop guard" in e.detail for e in result.trace if e.name == "plan_queries")
    assert result.facts  # what was found is still returned


async def test_the_iteration_limit_stops_the_run() -> None:
    graph = FakeFactGraph()
    model = scripted_model([{"action": "call", "tool": "find_experts", "arguments": {"query": f"t{i}"}} for i in range(20)])
    result = await retrieve_context(graph, None, ["Who should I ask about TypeScript?"], model=model, max_iterations=2)
    assert len(graph.calls) == 2
    assert result.metadata.iterations_used == 2
    assert result.metadata.stop_reason == "max_iterations"


async def test_the_iteration_limit_stops_the_rules_too() -> None:
    graph = FakeFactGraph()
    result = await retrieve_context(graph, None, ["Who should I ask about TypeScript?"], max_iterations=2)
    assert result.metadata.iterations_used == 2
    assert result.metadata.stop_reason == "max_iterations"
    assert result.facts == [] and result.confidence == "low"


async def test_a_failing_model_falls_back_to_the_rules() -> None:
    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("model down")

    graph = FakeFactGraph(answers={"find_experts": skill_result(ALICE_TS)})
    result = await retrieve_context(graph, None, ["Who should I ask about TypeScript?"], model=FunctionModel(broken))
    assert graph.calls[0][0] == "find_experts"
    assert result.facts
    assert any("planning model failed" in e.detail for e in result.trace)


async def test_bad_arguments_from_a_model_are_a_failed_call() -> None:
    graph = FakeFactGraph()
    model = scripted_model([{"action": "call", "tool": "find_experts", "arguments": {"subject": "x"}},
                            {"action": "finish"}])
    result = await retrieve_context(graph, None, ["Who should I ask about TypeScript?"], model=model)
    call = next(e.call for e in result.trace if e.kind == "tool")
    assert call is not None and not call.success and "bad arguments" in (call.error or "")


async def test_the_trace_is_kept_by_request_id_and_bounded() -> None:
    store = TraceStore(max_entries=2)
    graph = FakeFactGraph(answers={"find_experts": skill_result(ALICE_TS)})
    ids = []
    for i in range(3):
        result = await retrieve_context(graph, None, ["Who should I ask about TypeScript?"],
                                        trace_store=store, request_id=f"r{i}")
        ids.append(result.metadata.request_id)
    assert store.get("r0") is None and store.request_ids() == ["r1", "r2"]
    kept = store.get("r2")
    assert kept is not None
    names = [e.name for e in kept.trace if e.kind == "node"]
    assert names == ["analyze_conversation", "plan_queries", "execute_tool", "evaluate_progress", "synthesize"]
    tool = next(e.call for e in kept.trace if e.kind == "tool")
    assert tool is not None and tool.input == {"query": "TypeScript"} and tool.output_size == 1 and tool.success
    default = await retrieve_context(graph, None, ["Who should I ask about TypeScript?"])
    assert get_trace(default.metadata.request_id) is default


async def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="max_facts"):
        await retrieve_context(FakeFactGraph(), None, ["x"], max_facts=0)
    with pytest.raises(ValueError, match="tool_timeout"):
        await retrieve_context(FakeFactGraph(), None, ["x"], tool_timeout=0)
    with pytest.raises(ValueError, match=r"min_similarity must be a number in \[-1, 1\], got 2"):
        await retrieve_context(FakeFactGraph(), None, ["x"], min_similarity=2)
    with pytest.raises(ValueError, match="min_similarity"):
        await retrieve_context(FakeFactGraph(), None, ["x"], min_similarity="high")
    with pytest.raises(ValueError, match="neither"):
        await retrieve_context(None, None, ["x"])


def _found(confidence: float, relevance: float = 1.0) -> FoundFact:
    return FoundFact(subject="A", predicate="KNOWS", object=f"B{confidence}", confidence=confidence,
                     evidence=("m",), relevance=relevance)


def test_confidence_levels() -> None:
    assert grade([], 1, 1) == "low"
    assert grade([_found(0.9), _found(0.85)], 2, 2) == "high"
    assert grade([_found(0.95)], 1, 1) == "high"
    assert grade([_found(0.9), _found(0.4)], 2, 2) == "medium"  # one high fact, mean 0.65
    assert grade([_found(0.9), _found(0.85)], 4, 2) == "medium"  # half the tools failed
    assert grade([_found(0.3), _found(0.4)], 2, 2) == "low"
    assert grade([_found(0.9)], 3, 1) == "low"  # most tools failed
    assert grade([_found(0.95, relevance=0.15), _found(0.9, relevance=0.15)], 1, 1) == "low"  # off topic


def test_sentences_carry_time_role_confidence_and_evidence() -> None:
    worked = FoundFact(subject="Charlie", predicate="WORKED_AT", object="Google", confidence=0.92,
                       evidence=("msg_456",), valid_at=1546300800.0, invalid_at=1656633600.0,
                       attributes={"role": "Software Engineer"})
    assert format_fact(worked) == (
        "Charlie previously worked at Google from 2019 to 2022 as a Software Engineer "
        "(confidence: 0.92, evidence: msg_456)")


async def test_profile_entities_resolve_ids_to_names() -> None:
    worked = fact("f3", CHARLIE, "WORKED_AT", GOOGLE, 0.92, ("msg_456",), role="Software Engineer")
    graph = FakeFactGraph(answers={"get_person_profile": {"person": CHARLIE, "facts": [worked], "organizations": [GOOGLE]}})
    result = await retrieve_context(graph, None, ["Where does Charlie work?"])
    assert result.facts[0].startswith("Charlie previously worked at Google as a Software Engineer")


async def test_the_rules_give_up_after_six_empty_calls() -> None:
    graph = FakeFactGraph()
    result = await retrieve_context(
        graph, None, ["Who should I ask about TypeScript? Who lives in Berlin? Who works at Google?"])
    assert result.metadata.stop_reason == "stuck"
    assert result.metadata.queries_executed == 6
    assert result.confidence == "low"


async def test_what_the_question_asks_about_ranks_first() -> None:
    from tests.test_memory.agent.fake_graph import thing

    berlin = thing("Berlin", "Location")
    lives = fact("f5", ALICE, "LIVES_IN", berlin, 0.95, ("m5",))
    works = fact("f6", ALICE, "WORKS_AT", GOOGLE, 0.85, ("m6",))
    graph = FakeFactGraph(answers={"get_person_profile": {"person": ALICE, "facts": [lives, works],
                                                          "others": [GOOGLE, berlin]}})
    result = await retrieve_context(graph, None, ["Where does Alice work?"])
    assert result.facts[0].startswith("Alice works at Google")
    result = await retrieve_context(graph, None, ["Where does Alice live?"])
    assert result.facts[0].startswith("Alice lives in Berlin")


def test_messages_may_be_message_objects() -> None:
    from DeepResearch.src.memory.facts.model import Message

    messages = [Message("m1", "u1", "Bob", "hello", 1.0, "C1"),
                Message("m2", "u2", "Eve", "who knows Bob?", 2.0, "C1")]
    needs = analyze(messages, channel_id="C1").needs
    assert [n.kind for n in needs] == ["who_knows", "relationship", "channel"]
    assert needs[1].calls[0].arguments == {"person_a": "Eve", "person_b": "Bob"}
