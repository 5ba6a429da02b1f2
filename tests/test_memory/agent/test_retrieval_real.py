"""The retrieval agent over the real FactGraph (the facts suite's small team), on in_memory
and the embedded backend."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from DeepResearch.src.memory.agent.retrieval import get_trace, retrieve_context
from DeepResearch.src.memory.facts.graph import FactGraph

TYPESCRIPT_FACTS = [
    dict(subject="Eve", predicate="HAS_SKILL", object="TypeScript", confidence=0.92,
         evidence="msg_456", attributes={"proficiency": "expert", "years": 6}),
    dict(subject="Bob", predicate="HAS_SKILL", object="TypeScript", confidence=0.7,
         evidence="msg_457", attributes={"proficiency": "intermediate"}),
]


@pytest.fixture
async def team_ts(team: FactGraph) -> FactGraph:
    await team.add_facts(TYPESCRIPT_FACTS)
    return team


async def test_who_should_i_ask_about_typescript(team_ts: FactGraph) -> None:
    result = await retrieve_context(team_ts, None, [
        {"author_name": "Frank", "content": "I'm stuck on a generics error in our frontend."},
        {"author_name": "Frank", "content": "Who should I ask about TypeScript?"},
    ])
    assert result.facts[0] == (
        "Eve has expert-level TypeScript skills with 6 years of experience "
        "(confidence: 0.92, evidence: msg_456)")
    assert any(f.startswith("Bob has intermediate-level TypeScript skills") for f in result.facts)
    calls = [e.call for e in result.trace if e.call]
    assert [(c.tool, c.input) for c in calls] == [("find_experts", {"query": "TypeScript"})]
    assert result.metadata.stop_reason == "goal_met"
    assert result.confidence == "medium"  # one fact of >= 0.8 among two, mean 0.81
    assert result.metadata.confidence_score == pytest.approx(0.81)
    assert get_trace(result.metadata.request_id) is result


async def test_where_does_alice_work(team: FactGraph) -> None:
    result = await retrieve_context(team, None, ["Where does Alice work?"])
    assert result.facts[0].startswith(
        "Alice works at Google as a Software Engineer since 2022 (confidence: 0.90, evidence: m2)")
    assert result.confidence == "high"


async def test_where_did_alice_work_before(team: FactGraph) -> None:
    result = await retrieve_context(team, None, ["Where did Alice work before 2022?"])
    tools = [e.call.tool for e in result.trace if e.call]
    assert tools[0] == "get_person_timeline"
    # the Google job from 2022-01 closed Microsoft on 1 January 2022: last true in 2021
    assert any(f.startswith("Alice previously worked at Microsoft from 2019 to 2021 as an Engineer")
               for f in result.facts), result.facts


async def test_who_knows_bob(team: FactGraph) -> None:
    result = await retrieve_context(team, None, [{"author_name": "Charlie", "content": "who knows Bob?"}])
    assert any(f.startswith("Alice knows Bob (confidence: 0.90, evidence: m6)") for f in result.facts), result.facts


async def test_who_knows_an_author_adds_how_the_asker_relates_to_them(team: FactGraph) -> None:
    result = await retrieve_context(team, None, [
        {"author_name": "Bob", "content": "Morning! Anyone up for reviewing my Python script?"},
        {"author_name": "Charlie", "content": "who knows Bob?"},
    ])
    tools = [e.call.tool for e in result.trace if e.call]
    # the latest question's two needs first, then Bob's own earlier question
    assert tools == ["get_person_profile", "get_relationships_between", "semantic_search_facts"]
    assert result.metadata.stop_reason == "goal_met"
    assert any(f.startswith("Alice knows Bob") for f in result.facts)
    assert any(f.startswith("Charlie has advanced-level Python skills") for f in result.facts)  # shared


async def test_experts_come_in_the_tool_s_order_of_expertise(team: FactGraph) -> None:
    result = await retrieve_context(team, None, ["Who should I ask about Python?"])
    people = [f.split(" ")[0] for f in result.facts if " Python " in f]
    assert people[:2] == ["Alice", "Charlie"]  # expert 8 years, advanced 5 years (both 0.9)


async def test_who_works_at_google_now_and_ever(team: FactGraph) -> None:
    now = await retrieve_context(team, None, ["Who works at Google?"])
    assert {f.split(" ")[0] for f in now.facts} >= {"Alice", "Bob"}
    assert not any(f.startswith("Dana") for f in now.facts)
    ever = await retrieve_context(team, None, ["Who used to work at Google?"])
    assert any(f.startswith("Dana previously worked at Google from 2018 to 2019") for f in ever.facts), ever.facts


async def test_the_channel_s_participants(team: FactGraph) -> None:
    result = await retrieve_context(team, None, ["Who is in this channel?"], channel_id="general")
    assert any(f.startswith("Dana took part in general") for f in result.facts)
    assert any(f.startswith("Alice took part in general") for f in result.facts)


async def test_an_unknown_person_falls_back_to_semantic_search(team: FactGraph) -> None:
    result = await retrieve_context(team, None, ["Where does Zed work?"])
    calls = [e.call for e in result.trace if e.call]
    assert calls[0].tool == "get_person_profile" and calls[0].output_size == 0
    assert "no person named 'Zed' is known" in (calls[0].message or "")
    # no timeline for a person the graph does not know; current facts, then ended ones too
    assert [c.tool for c in calls][1:] == ["semantic_search_facts", "semantic_search_facts", "search_memory"]
    assert calls[2].input == {"query": "Zed", "similarity_threshold": 0.0, "include_history": True}
    assert result.metadata.stop_reason == "plan_exhausted"
    assert result.confidence == "low"  # the nearest facts come back, but none names Zed


async def test_a_failing_tool_of_the_real_graph_is_recorded(team: FactGraph) -> None:
    """The model plans a call the real tool refuses (an unknown proficiency word), then a
    good one: the failure is in the trace and the run goes on."""
    plans = [
        {"action": "call", "tool": "find_people_by_skill", "arguments": {"skill": "Python", "min_proficiency": "wizard"}},
        {"action": "call", "tool": "find_people_by_skill", "arguments": {"skill": "Python", "min_proficiency": "advanced"}},
        {"action": "finish", "reason": "found the Python people"},
    ]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if "goal_met" in info.output_tools[0].parameters_json_schema.get("properties", {}):
            return ModelResponse(parts=[ToolCallPart("final_result", {"goal_met": False})])
        return ModelResponse(parts=[ToolCallPart("final_result", plans.pop(0))])

    result = await retrieve_context(team, None, ["Who is good at Python?"], model=FunctionModel(respond))
    calls = [e.call for e in result.trace if e.call]
    assert len(calls) == 2
    assert calls[0].success is False and "wizard" in (calls[0].error or "")
    assert calls[1].success and calls[1].output_size == 2  # Alice (expert), Charlie (advanced)
    assert result.facts[0].startswith("Alice has expert-level Python skills with 8 years of experience")
    assert result.metadata.planner == "model" and result.metadata.stop_reason == "planner_finished"
    assert result.metadata.tool_success_rate == 0.5


async def test_a_fact_found_by_a_tool_and_by_memory_retrieval_is_one_fact(team: FactGraph) -> None:
    plans = [
        {"action": "call", "tool": "get_person_profile", "arguments": {"person": "Alice"}},
        {"action": "call", "tool": "search_memory", "arguments": {"query": "Alice works at Google"}},
        {"action": "finish"},
    ]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if "goal_met" in info.output_tools[0].parameters_json_schema.get("properties", {}):
            return ModelResponse(parts=[ToolCallPart("final_result", {"goal_met": False})])
        return ModelResponse(parts=[ToolCallPart("final_result", plans.pop(0))])

    result = await retrieve_context(team, None, ["Where does Alice work?"], model=FunctionModel(respond))
    memory_call = [e.call for e in result.trace if e.call][1]
    assert memory_call.tool == "search_memory" and memory_call.success and memory_call.output_size > 0
    google = [f for f in result.facts if f.startswith("Alice works at Google")]
    assert google == ["Alice works at Google as a Software Engineer since 2022 (confidence: 0.90, evidence: m2)"]


async def test_fact_memories_read_back_with_their_structure(team: FactGraph) -> None:
    from DeepResearch.src.memory.agent.retrieval.tools import read_memories

    hits = await team.client.retrieve("Alice works at Google", top_k=3, filters={"memory_type": "fact"},
                                      all_sessions=True)
    found = {(f.subject, f.predicate, f.object): f for f in read_memories(hits)}
    fact = found[("Alice", "WORKS_AT", "Google")]
    assert fact.confidence == pytest.approx(0.9)
    assert fact.attributes.get("role") == "Software Engineer" and fact.valid_at is not None
    assert fact.evidence == ()


async def test_concurrent_requests_keep_their_own_state(team_ts: FactGraph) -> None:
    import asyncio

    questions = ["Who should I ask about TypeScript?", "Where does Alice work?", "Who lives in New York?"]
    results = await asyncio.gather(*(retrieve_context(team_ts, None, [q]) for q in questions))
    assert results[0].facts[0].startswith("Eve has expert-level TypeScript skills")
    assert results[1].facts[0].startswith("Alice works at Google")
    assert results[2].facts[0].startswith("Bob lives in New York")
    assert len({r.metadata.request_id for r in results}) == 3


async def test_a_statement_brings_the_people_it_names(team: FactGraph) -> None:
    result = await retrieve_context(team, None, [
        {"author_name": "Frank", "content": "I'm pairing with Charlie on the payments service today"}])
    tools = [e.call.tool for e in result.trace if e.call]
    assert tools[0] == "semantic_search_facts" and "get_person_profile" in tools
    assert any(f.startswith("Charlie works at Stripe") for f in result.facts), result.facts


async def test_the_channel_s_people_come_after_the_answer(team: FactGraph) -> None:
    result = await retrieve_context(team, None, ["Who should I ask about Python?"], channel_id="general")
    tools = [e.call.tool for e in result.trace if e.call]
    assert tools == ["find_experts", "get_conversation_participants"]
    assert result.metadata.stop_reason == "goal_met"
    python = [i for i, f in enumerate(result.facts) if " Python " in f]
    channel = [i for i, f in enumerate(result.facts) if "took part in general" in f]
    assert python and channel and max(python) < min(channel)
    assert result.confidence == "high"


async def test_from_ingested_messages_to_the_answer(graph: FactGraph) -> None:
    """The whole way: messages ingested by the offline extractor, then the agent."""
    from DeepResearch.src.memory.facts.model import Message

    messages = [
        Message("msg_1", "u1", "Eve", "I'm a TypeScript expert, been using it for 6 years.", 1700000000.0, "general"),
        Message("msg_456", "u2", "Charlie", "I worked at Google from 2019 to 2022 as a Software Engineer.",
                1700000100.0, "general"),
        Message("msg_3", "u3", "Frank", "Who should I ask about TypeScript?", 1700000200.0, "general"),
    ]
    await graph.ingest(messages, "general")
    result = await retrieve_context(graph, None, messages, channel_id="general")
    assert result.facts[0].startswith("Eve has advanced-level TypeScript skills with 6 years of experience")
    assert result.facts[0].endswith("evidence: msg_1)")
    timeline = await retrieve_context(graph, None, ["Where did Charlie work?"])
    assert timeline.facts[0].startswith("Charlie previously worked at Google from 2019 to 2022")


async def test_nothing_on_topic_returns_no_noise(team: FactGraph) -> None:
    """No one in the team knows TypeScript: the nearest fact sentences ("Alice works at
    Google", similarity ~0.2) are not returned as if they answered; what does come back is
    close to the words (similarity >= 0.3) and the grade says low."""
    result = await retrieve_context(team, None, ["Who should I ask about TypeScript?"])
    searched = [e.call for e in result.trace if e.call and e.call.tool == "semantic_search_facts"]
    assert searched and searched[0].output_size > 0  # the search did find nearest facts...
    assert result.facts == []  # ...none close enough to be context
    assert result.confidence == "low"


async def test_an_off_topic_hit_close_to_the_words_is_kept_as_context(team: FactGraph) -> None:
    await team.add_facts([dict(subject="Erin", predicate="INTERESTED_IN", object="deep learning",
                               confidence=0.8, evidence="m9")])
    result = await retrieve_context(team, None, ["Anyone here into neural networks?"])
    assert any(f.startswith("Erin is interested in deep learning") for f in result.facts), result.facts
    assert not any(f.startswith("Dana previously worked") for f in result.facts)


async def test_noise_does_not_use_up_max_facts(team: FactGraph) -> None:
    """The latest question is about an unknown Zed: its semantic search brings back nearest
    facts that answer nothing. They must not count towards max_facts and stop the run
    before the Python question is asked of find_experts."""
    result = await retrieve_context(team, None, ["Who should I ask about Python?",
                                                 "Where does Zed work?"], max_facts=5)
    tools = [e.call.tool for e in result.trace if e.call]
    assert "find_experts" in tools, (result.metadata.stop_reason, tools)
    assert any(f.startswith("Alice has expert-level Python skills") for f in result.facts)


CHARLIE_AT_GOOGLE = dict(subject="Charlie", predicate="WORKS_AT", object="Google", confidence=0.92,
                         evidence="msg_456", valid_at="2019-01", invalid_at="2021-02",
                         attributes={"role": "Software Engineer"})


@pytest.fixture
async def team_history(team: FactGraph) -> FactGraph:
    await team.add_facts([CHARLIE_AT_GOOGLE])
    return team


async def test_didn_t_charlie_work_there_finds_his_ended_job(team_history: FactGraph) -> None:
    """Seed 002's third example: "there" is Google, named a message earlier; Charlie's job
    there has ended, so only his history answers, and the answer says when it ended."""
    result = await retrieve_context(team_history, None, [
        {"author_name": "user1", "content": "I'm thinking about applying to Google"},
        {"author_name": "user2", "content": "Didn't Charlie work there?"},
        {"author_name": "user1", "content": "Yeah, I should ask him about it"},
    ])
    charlie = [d for d in result.details if d.subject == "Charlie" and d.object == "Google"]
    assert charlie and charlie[0].text.startswith(
        "Charlie previously worked at Google from 2019 to 2021 as a Software Engineer "
        "(confidence: 0.92, evidence: msg_456)"), result.facts
    assert charlie[0].invalid_at == "2021-02-01T00:00:00+00:00" and not charlie[0].current
    assert charlie[0].valid_at == "2019-01-01T00:00:00+00:00"
    # the other Google people, past ones included
    assert {d.subject for d in result.details if d.object == "Google"} >= {"Alice", "Bob", "Dana"}
    assert [d.text for d in result.details] == result.facts
    current = next(d for d in result.details if d.subject == "Alice" and d.object == "Google")
    assert current.current and current.invalid_at is None


async def test_anyone_work_at_google_includes_past_employees(team: FactGraph) -> None:
    result = await retrieve_context(team, None, ["Anyone work at Google?"])
    assert any(f.startswith("Dana previously worked at Google from 2018 to 2019") for f in result.facts), result.facts
    assert {f.split(" ")[0] for f in result.facts} >= {"Alice", "Bob", "Dana"}
    calls = [e.call for e in result.trace if e.call]
    assert (calls[0].tool, calls[0].input) == (
        "find_people_by_organization", {"organization": "Google", "current_only": False})


async def test_a_question_no_current_fact_answers_searches_history(team: FactGraph) -> None:
    """Dana's current profile has no job: her timeline is asked next and says when the
    ended one ended."""
    result = await retrieve_context(team, None, ["Where does Dana work?"])
    tools = [e.call.tool for e in result.trace if e.call]
    assert tools[:2] == ["get_person_profile", "get_person_timeline"]
    job = [d for d in result.details if d.predicate == "WORKS_AT"]
    assert [d.text.split(" (")[0] for d in job] == ["Dana previously worked at Google from 2018 to 2019"]
    assert job[0].invalid_at == "2020-01-01T00:00:00+00:00" and not job[0].current
    nobody_now = await retrieve_context(team, None, ["Who works at Microsoft?"])
    assert any(f.startswith("Alice previously worked at Microsoft from 2019 to 2021")
               for f in nobody_now.facts), nobody_now.facts


async def test_the_model_asks_for_history_and_the_answer_carries_validity(team_history: FactGraph) -> None:
    prompts: list[str] = []
    plans = [
        {"action": "call", "tool": "get_person_profile",
         "arguments": {"person": "Charlie", "fact_types": ["WORKS_AT"], "include_history": True}},
        {"action": "finish", "reason": "found Charlie's jobs"},
    ]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if "goal_met" in info.output_tools[0].parameters_json_schema.get("properties", {}):
            return ModelResponse(parts=[ToolCallPart("final_result", {"goal_met": False})])
        prompts.append(str(messages[-1].parts[-1].content))
        return ModelResponse(parts=[ToolCallPart("final_result", plans.pop(0))])

    result = await retrieve_context(team_history, None, ["Didn't Charlie work at Google?"],
                                    model=FunctionModel(respond))
    assert "include_history" in prompts[0]  # the model is shown the argument
    jobs = {d.text.split(" (")[0]: d for d in result.details}
    assert set(jobs) == {"Charlie works at Stripe since 2021",
                         "Charlie previously worked at Google from 2019 to 2021 as a Software Engineer"}
    google = jobs["Charlie previously worked at Google from 2019 to 2021 as a Software Engineer"]
    assert google.invalid_at == "2021-02-01T00:00:00+00:00" and not google.current
    assert jobs["Charlie works at Stripe since 2021"].current


async def test_the_channel_s_people_rank_after_weak_answers_and_context(team: FactGraph) -> None:
    """A participation fact is certain (confidence 1.0), an answer may not be: a weak answer
    and an off-topic hit kept as context still come before the channel's people."""
    await team.add_facts([
        dict(subject="Erin", predicate="INTERESTED_IN", object="deep learning", confidence=0.8, evidence="e1"),
        dict(subject="Gus", predicate="INTERESTED_IN", object="chess", confidence=0.3, evidence="g1"),
    ])
    for question, answer in (("Anyone here into neural networks?", "Erin is interested in deep learning"),
                             ("Tell me about Gus", "Gus is interested in chess")):
        result = await retrieve_context(team, None, [question], channel_id="general")
        found = [i for i, f in enumerate(result.facts) if f.startswith(answer)]
        channel = [i for i, f in enumerate(result.facts) if "took part in general" in f]
        assert found and channel and max(found) < min(channel), result.facts
