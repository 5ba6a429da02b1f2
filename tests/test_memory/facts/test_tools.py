"""The ten fact tools on the small team, on every backend; and the toolset an agent gets."""

from __future__ import annotations

import pytest

from DeepResearch.src.memory.facts.graph import FactGraph
from DeepResearch.src.memory.facts.tools import TOOLS


def people(answer: object) -> list[str]:
    return [hit.person.name for hit in answer.people]  # type: ignore[attr-defined]


async def test_profile_by_name_alias_real_name_and_id(team: FactGraph) -> None:
    by_name = await TOOLS["get_person_profile"](team, "Alice")
    assert by_name.person.real_name == "Alice Johnson"
    triples = {(f.predicate, f.object) for f in by_name.facts}
    assert ("WORKS_AT", "Google") in triples and ("WORKS_AT", "Microsoft") not in triples
    google = next(f for f in by_name.facts if f.object == "Google")
    assert google.evidence == ["m2"] and google.confidence == 0.9 and google.current
    assert google.valid_at == "2022-01-01T00:00:00+00:00" and google.invalid_at is None
    for ref in ("alice johnson", "AJ", by_name.person.id):
        again = await TOOLS["get_person_profile"](team, ref)
        assert again.person.id == by_name.person.id, ref


async def test_an_unknown_person_is_an_empty_answer_with_a_message(team: FactGraph) -> None:
    for name, args in (("get_person_profile", ("Zed",)), ("get_person_timeline", ("Zed",)),
                       ("get_relationships_between", ("Alice", "Zed"))):
        answer = await TOOLS[name](team, *args)
        assert answer.facts == [] and answer.people == []
        assert "no person named 'Zed'" in answer.message


async def test_people_by_skill_with_min_proficiency(team: FactGraph) -> None:
    assert people(await TOOLS["find_people_by_skill"](team, "python")) == ["Alice", "Charlie", "Bob"]
    assert people(await TOOLS["find_people_by_skill"](team, "Python", "advanced")) == ["Alice", "Charlie"]
    one = await TOOLS["find_people_by_skill"](team, "Python", 0.9)
    assert people(one) == ["Alice"] and one.message == "1 person with skill 'Python'"
    assert people(await TOOLS["find_people_by_skill"](team, "Cobol")) == []


async def test_people_by_organization_ever_unless_current_only(team: FactGraph) -> None:
    ever = await TOOLS["find_people_by_organization"](team, "google")
    assert sorted(people(ever)) == ["Alice", "Bob", "Dana"]  # Dana left: past members by default
    dana = next(h for h in ever.people if h.person.name == "Dana").facts[0]
    assert dana.invalid_at == "2020-01-01T00:00:00+00:00" and not dana.current
    now = await TOOLS["find_people_by_organization"](team, "Google", current_only=True)
    assert sorted(people(now)) == ["Alice", "Bob"]
    assert people(await TOOLS["find_people_by_organization"](team, "Microsoft", current_only=True)) == []
    assert people(await TOOLS["find_people_by_organization"](team, "Microsoft")) == ["Alice"]


async def test_profile_with_history_and_fact_types(team: FactGraph) -> None:
    jobs = await TOOLS["get_person_profile"](team, "Alice", fact_types=["works_at"], include_history=True)
    assert sorted((f.object, f.current) for f in jobs.facts) == [("Google", True), ("Microsoft", False)]
    assert {f.predicate for f in jobs.facts} == {"WORKS_AT"}
    current = await TOOLS["get_person_profile"](team, "Alice", fact_types=["WORKS_AT"])
    assert [f.object for f in current.facts] == ["Google"]


async def test_relationships_direct_and_shared(team: FactGraph) -> None:
    answer = await TOOLS["get_relationships_between"](team, "AJ", "Bob")
    assert [(f.subject, f.predicate, f.object) for f in answer.facts] == [("Alice", "KNOWS", "Bob")]
    assert sorted(s.entity.name for s in answer.shared) == ["Google", "Python", "machine learning"]


async def test_topic_location_participants(team: FactGraph) -> None:
    assert sorted(people(await TOOLS["find_people_by_topic"](team, "Machine Learning"))) == ["Alice", "Bob"]
    assert sorted(people(await TOOLS["find_people_by_location"](team, "san francisco"))) == ["Alice", "Charlie"]
    everyone = await TOOLS["get_conversation_participants"](team, "general")
    assert people(everyone) == ["Dana", "Alice"]  # most recently active first
    assert people(await TOOLS["get_conversation_participants"](team, "general", "2024-03-01")) == ["Dana"]
    missing = await TOOLS["get_conversation_participants"](team, "random")
    assert missing.people == [] and "no channel named 'random'" in missing.message


async def test_timeline_is_ordered_and_windowed(team: FactGraph) -> None:
    answer = await TOOLS["get_person_timeline"](team, "Alice")
    jobs = [f.object for f in answer.facts if f.predicate == "WORKS_AT"]
    assert jobs == ["Microsoft", "Google"]
    early = await TOOLS["get_person_timeline"](team, "Alice", until="2020-01")
    assert [f.object for f in early.facts if f.predicate == "WORKS_AT"] == ["Microsoft"]
    late = await TOOLS["get_person_timeline"](team, "Alice", since="2023-01")
    assert [f.object for f in late.facts if f.predicate == "WORKS_AT"] == ["Google"]


async def test_experts_rank_by_proficiency_years_evidence_confidence(team: FactGraph) -> None:
    answer = await TOOLS["find_experts"](team, "Python", limit=2)
    assert people(answer) == ["Alice", "Charlie"]
    assert answer.people[0].score > answer.people[1].score


async def test_semantic_search_over_fact_sentences(team: FactGraph) -> None:
    answer = await TOOLS["semantic_search_facts"](team, "who lives in New York", limit=3)
    assert answer.facts[0].subject == "Bob" and answer.facts[0].object == "New York"
    # each hit says how close its sentence is to the query (cosine, the same on every backend)
    assert 0.5 < answer.facts[0].similarity <= 1.0
    assert all(f.similarity < answer.facts[0].similarity for f in answer.facts[1:])
    assert (await TOOLS["find_people_by_location"](team, "New York")).people[0].facts[0].similarity is None
    current = await TOOLS["semantic_search_facts"](team, "Alice Microsoft engineer", limit=10)
    assert "Microsoft" not in [f.object for f in current.facts]  # closed: history only
    history = await TOOLS["semantic_search_facts"](team, "Alice Microsoft engineer", limit=10,
                                                   include_history=True)
    assert "Microsoft" in [f.object for f in history.facts]
    assert all(f.confidence >= 0.85 for f in (await TOOLS["semantic_search_facts"](
        team, "works at", limit=10, min_confidence=0.85)).facts)


async def test_semantic_search_finds_confident_facts_beyond_the_first_pool(
    team: FactGraph,
) -> None:
    """min_confidence is a condition of the fact store, not of the search: with a pool of 3
    candidates per list, the confident facts far from the query still fill the answer."""
    team.client.config.retrieval.candidate_pool = 1
    await team.add_facts([
        {"subject": f"Person {i}", "predicate": "LIVES_IN", "object": "Lisbon",
         "confidence": 0.5, "evidence": f"p{i}"} for i in range(8)
    ] + [{"subject": "Zoe", "predicate": "INTERESTED_IN", "object": "Knitting",
          "confidence": 0.99, "evidence": "z1"}])
    answer = await TOOLS["semantic_search_facts"](team, "who lives in Lisbon", limit=1,
                                                  min_confidence=0.98, similarity_threshold=-1.0)
    assert [(f.subject, f.object) for f in answer.facts] == [("Zoe", "Knitting")]


async def test_every_tool_is_bounded_by_its_limit(team: FactGraph) -> None:
    assert len((await TOOLS["get_person_profile"](team, "Alice", limit=2)).facts) == 2
    assert len((await TOOLS["find_people_by_skill"](team, "Python", limit=1)).people) == 1
    assert len((await TOOLS["semantic_search_facts"](team, "who works at Google", limit=1)).facts) == 1


async def test_the_toolset_serves_an_agent(team: FactGraph) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from DeepResearch.src.memory.facts.toolset import fact_toolset

    calls = iter([
        ModelResponse(parts=[ToolCallPart("find_experts", {"query": "Rust", "limit": 3})]),
    ])

    def model(messages: list, info: object) -> ModelResponse:
        from pydantic_ai.messages import TextPart

        try:
            return next(calls)
        except StopIteration:
            return ModelResponse(parts=[TextPart(str(messages[-1].parts[0].content))])

    agent = Agent(FunctionModel(model), toolsets=[fact_toolset(team)])
    result = await agent.run("who knows Rust?")
    assert "Charlie" in result.output and "confidence" in result.output
    assert set(fact_toolset(team).tools) == set(TOOLS)


async def test_an_unknown_fact_type_is_refused_naming_it(team: FactGraph) -> None:
    from DeepResearch.src.memory.errors import MemoryInputError

    with pytest.raises(MemoryInputError, match="LOVES"):
        await TOOLS["get_person_profile"](team, "Alice", fact_types=["LOVES"])


@pytest.mark.parametrize("bad", [{"min_proficiency": "guru"}, {"limit": 0}])
async def test_bad_tool_arguments_name_the_value(team: FactGraph, bad: dict) -> None:
    from DeepResearch.src.memory.errors import MemoryInputError

    with pytest.raises(MemoryInputError, match=repr(next(iter(bad.values())))):
        await TOOLS["find_people_by_skill"](team, "Python", **bad)
