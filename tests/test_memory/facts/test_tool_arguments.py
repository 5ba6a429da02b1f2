"""The ten tools' arguments and answer fields as seed 002 gives them, on every backend:
min_confidence, fact_types, relationship_types, similarity_threshold, current_only,
participants from the messages themselves, location names with their other names."""

from __future__ import annotations

import time

import pytest

from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.facts.graph import FactGraph
from DeepResearch.src.memory.facts.tools import TOOLS
from DeepResearch.src.memory.facts.views import PersonHit, ToolAnswer

PLACES = [
    dict(subject="Erin", predicate="LIVES_IN", object="SF", confidence=0.95, evidence="p1"),
    dict(subject="Finn", predicate="LIVES_IN", object="Oakland", confidence=0.8, evidence="p2"),
    dict(subject="Hal", predicate="LIVES_IN", object="Cambridge", confidence=0.6, evidence="p3"),
    dict(subject="Ivy", predicate="LIVES_IN", object="Cambridge MA", confidence=0.95, evidence="p4"),
    dict(subject="Jo", predicate="WORKS_AT", object="Acme", confidence=0.9, evidence="p5",
         attributes={"location": "NYC"}),
]


def people(answer: ToolAnswer) -> list[str]:
    return [hit.person.name for hit in answer.people]


def hit(answer: ToolAnswer, name: str) -> PersonHit:
    return next(h for h in answer.people if h.person.name == name)


async def test_min_confidence_filters_the_people_tools(team: FactGraph) -> None:
    assert people(await TOOLS["find_people_by_skill"](team, "Kubernetes")) == ["Alice"]  # 0.7
    assert people(await TOOLS["find_people_by_skill"](team, "Kubernetes", min_confidence=0.75)) == []
    ever = await TOOLS["find_people_by_organization"](team, "Google", min_confidence=0.7)
    assert sorted(people(ever)) == ["Alice", "Bob"]  # Dana's ended job: confidence 0.6
    topic = await TOOLS["find_people_by_topic"](team, "machine learning", min_confidence=0.7)
    assert people(topic) == ["Alice"]
    assert people(await TOOLS["find_people_by_location"](team, "New York", min_confidence=0.85)) == []
    with pytest.raises(MemoryInputError, match="min_confidence=2"):
        await TOOLS["find_people_by_skill"](team, "Python", min_confidence=2)


async def test_hits_carry_the_seed_s_fields(team: FactGraph) -> None:
    skill = await TOOLS["find_people_by_skill"](team, "Python")
    alice = hit(skill, "Alice")
    assert (alice.proficiency, alice.years_experience, alice.confidence, alice.evidence) == (
        "expert", 8, 0.9, ["m3"])
    org = await TOOLS["find_people_by_organization"](team, "Google")
    dana, alice = hit(org, "Dana"), hit(org, "Alice")
    assert (dana.start_date, dana.end_date) == ("2018-01-01T00:00:00+00:00", "2020-01-01T00:00:00+00:00")
    assert (alice.role, alice.location, alice.end_date) == ("Software Engineer", "San Francisco", None)
    topic = await TOOLS["find_people_by_topic"](team, "machine learning")
    assert {h.relationship_type for h in topic.people} == {"INTERESTED_IN"}
    skilled = await TOOLS["find_people_by_topic"](team, "Python", relationship_types=["has_skill"])
    assert sorted(people(skilled)) == ["Alice", "Bob", "Charlie"]
    assert people(await TOOLS["find_people_by_topic"](team, "Python", relationship_types=["INTERESTED_IN"])) == []
    with pytest.raises(MemoryInputError, match="LIKES"):
        await TOOLS["find_people_by_topic"](team, "Python", relationship_types=["LIKES"])


async def test_timeline_and_profile_take_fact_types(team: FactGraph) -> None:
    timeline = await TOOLS["get_person_timeline"](team, "Alice", fact_types=["WORKS_AT"])
    assert [f.object for f in timeline.facts] == ["Microsoft", "Google"]
    profile = await TOOLS["get_person_profile"](team, "Alice", fact_types=["HAS_SKILL"])
    assert sorted(f.object for f in profile.facts) == ["Kubernetes", "Python"]


async def test_location_knows_other_names_and_ranks_exact_first(team: FactGraph) -> None:
    await team.add_facts(PLACES)
    full = await TOOLS["find_people_by_location"](team, "San Francisco")
    # Alice and Charlie live in "San Francisco"; Erin in "SF", more confidently, after them
    assert people(full) == ["Alice", "Charlie", "Erin"]
    assert [h.match for h in full.people] == ["exact", "exact", "alias"]
    short = await TOOLS["find_people_by_location"](team, "SF")
    assert people(short) == ["Erin", "Alice", "Charlie"]
    assert [h.match for h in short.people] == ["exact", "alias", "alias"]
    assert sorted(people(await TOOLS["find_people_by_location"](team, "the Bay Area"))) == [
        "Alice", "Charlie", "Erin", "Finn"]
    # "NYC": Bob lives in New York; Jo works at Acme in NYC
    nyc = await TOOLS["find_people_by_location"](team, "NYC")
    assert people(nyc) == ["Jo", "Bob"]
    assert (hit(nyc, "Jo").relationship, hit(nyc, "Jo").match) == ("works_in", "exact")
    assert (hit(nyc, "Bob").relationship, hit(nyc, "Bob").match) == ("lives_in", "alias")
    assert hit(await TOOLS["find_people_by_location"](team, "New York"), "Jo").details == {"place": "NYC"}
    # close in spelling: after the exact name, however confident
    cambridge = await TOOLS["find_people_by_location"](team, "Cambridge")
    assert people(cambridge) == ["Hal", "Ivy"]
    assert [h.match for h in cambridge.people] == ["exact", "fuzzy"]


async def test_participants_from_the_messages_themselves(team: FactGraph) -> None:
    await team.add_facts([dict(subject="Alice", predicate="CLOSE_TO", object="Kim", confidence=0.8,
                               evidence="k1", attributes={"relation": "brother"})])
    charlie = (await TOOLS["get_person_profile"](team, "Charlie")).person
    seed = [{"author_name": "user1", "content": "I'm thinking about applying to Google"},
            {"author_name": "user2", "content": "Didn't Charlie work there?"},
            {"author_name": "user1", "content": "Yeah, I should ask him about it"}]
    answer = await TOOLS["get_conversation_participants"](team, messages=seed)
    assert [(m.name, m.person_id, m.mentioned_in_message) for m in answer.explicit_mentions] == [
        ("Charlie", charlie.id, 1)]
    him = answer.implicit_references
    assert [(r.reference, r.mentioned_in_message) for r in him] == [("him", 2)]
    assert [m.name for m in him[0].possible_matches] == ["Charlie"]
    assert "last named" in him[0].possible_matches[0].reason
    mine = await TOOLS["get_conversation_participants"](team, messages=[
        {"author_name": "Alice", "content": "My brother wants to learn Rust, and @zed too"},
        {"author_name": "Alice", "content": "my colleague broke the build"}])
    assert [(m.name, m.person_id) for m in mine.explicit_mentions] == [("zed", None)]
    brother, colleague = mine.implicit_references
    assert brother.reference == "My brother" and brother.possible_matches[0].name == "Kim"
    assert brother.possible_matches[0].confidence == 0.8
    assert colleague.possible_matches[0].name == "Bob"  # Alice KNOWS Bob, and both work at Google
    # with a channel too: its people, as before
    both = await TOOLS["get_conversation_participants"](team, "general", messages=seed)
    assert people(both) == ["Dana", "Alice"] and both.explicit_mentions
    with pytest.raises(MemoryInputError, match="messages or a channel_id"):
        await TOOLS["get_conversation_participants"](team)


async def test_semantic_search_fact_types_and_similarity_threshold(team: FactGraph) -> None:
    places = await TOOLS["semantic_search_facts"](team, "where does Bob live", fact_types=["LIVES_IN"])
    assert places.facts and {f.predicate for f in places.facts} == {"LIVES_IN"}
    assert places.facts[0].subject == "Bob"
    # nothing near the words: the default threshold (0.3) returns nothing, -1 everything
    far = "quantum chromodynamics on a lattice"
    assert (await TOOLS["semantic_search_facts"](team, far)).facts == []
    assert (await TOOLS["semantic_search_facts"](team, far, similarity_threshold=-1.0, limit=3)).facts
    close = await TOOLS["semantic_search_facts"](team, "who lives in New York", similarity_threshold=0.5)
    assert close.facts and all(f.similarity >= 0.5 for f in close.facts)
    with pytest.raises(MemoryInputError, match="similarity_threshold=2"):
        await TOOLS["semantic_search_facts"](team, "x", similarity_threshold=2)


async def test_one_envelope_and_the_toolset_shows_the_arguments(team: FactGraph) -> None:
    from DeepResearch.src.memory.facts.toolset import fact_toolset

    answers = [await TOOLS["find_people_by_location"](team, "SF"),
               await TOOLS["get_conversation_participants"](team, messages=["hi Bob"]),
               await TOOLS["semantic_search_facts"](team, "Python", fact_types=["HAS_SKILL"])]
    assert all(isinstance(a, ToolAnswer) and a.message for a in answers)
    tools = fact_toolset(team).tools
    schema = {name: set(t.function_schema.json_schema["properties"]) for name, t in tools.items()}
    assert {"min_confidence", "current_only"} <= schema["find_people_by_organization"]
    assert {"fact_types", "similarity_threshold"} <= schema["semantic_search_facts"]
    assert {"messages", "channel_id"} <= schema["get_conversation_participants"]
    assert {"relationship_types", "min_confidence"} <= schema["find_people_by_topic"]
    assert {"fact_types", "include_history"} <= schema["get_person_profile"]


async def test_timeline_start_date_end_date_keep_the_facts_overlapping_the_window(team: FactGraph) -> None:
    # Alice: Microsoft from 2019-03 until Google, from 2022-01
    def jobs(answer: ToolAnswer) -> list[str]:
        return [f.object for f in answer.facts if f.predicate == "WORKS_AT"]

    assert jobs(await TOOLS["get_person_timeline"](team, "Alice", start_date="2019-06-01",
                                                   end_date="2020-12-31")) == ["Microsoft"]
    assert jobs(await TOOLS["get_person_timeline"](team, "Alice", start_date="2023-01-01")) == ["Google"]
    both = await TOOLS["get_person_timeline"](team, "Alice", start_date="2021-06-01", end_date="2022-06-01")
    assert jobs(both) == ["Microsoft", "Google"]  # each overlaps the window
    assert jobs(await TOOLS["get_person_timeline"](team, "Alice", since="2023-01-01",
                                                   start_date="2023-01-01")) == ["Google"]
    with pytest.raises(MemoryInputError, match="start_date='last tuesdayish'"):
        await TOOLS["get_person_timeline"](team, "Alice", start_date="last tuesdayish")
    with pytest.raises(MemoryInputError, match="start_date='2022-01-01' is after end_date='2021-01-01'"):
        await TOOLS["get_person_timeline"](team, "Alice", start_date="2022-01-01", end_date="2021-01-01")
    with pytest.raises(MemoryInputError, match="start_date='2022' and since='2020'"):
        await TOOLS["get_person_timeline"](team, "Alice", start_date="2022", since="2020")


async def test_relationships_answer_with_the_seed_s_fields(team: FactGraph) -> None:
    answer = await TOOLS["get_relationships_between"](team, "Bob", "Alice")
    alice, bob = answer.other_person, answer.person
    [knows] = answer.relationships
    assert (knows.type, knows.confidence, knows.evidence, knows.from_person) == ("KNOWS", 0.9, ["m6"], alice.id)
    assert knows.fact_id == answer.facts[0].id  # the same fact as in `facts`
    contexts = {c.context: c for c in answer.shared_contexts}
    assert sorted(contexts) == ["Google", "Python", "machine learning"]
    google = contexts["Google"]
    assert google.type == "same_organization"
    assert google.details == {"entity_id": next(s.entity.id for s in answer.shared if s.entity.name == "Google"),
                              "person_a": ["WORKS_AT"], "person_b": ["WORKS_AT"]}
    assert (contexts["Python"].type, contexts["machine learning"].type) == ("same_skill", "same_topic")
    assert bob.name == "Bob" and len(answer.shared) == 3  # the fields it had stay
    dumped = answer.model_dump(mode="json")
    assert {"relationships", "shared_contexts", "facts", "shared"} <= set(dumped)


async def test_find_experts_takes_a_free_text_query(team: FactGraph) -> None:
    # a skill's name: its people ranked by expertise, as before
    named = await TOOLS["find_experts"](team, query="Python", limit=2)
    assert people(named) == ["Alice", "Charlie"]
    alice = named.people[0]
    assert alice.relevance_score == alice.score and alice.relevance_score > named.people[1].relevance_score
    assert [(f.type, f.confidence) for f in alice.relevant_facts] == [("HAS_SKILL", 0.9)]
    assert alice.relevant_facts[0].description == "Alice HAS_SKILL Python. proficiency=expert, years=8"
    # free text naming no skill: the facts whose sentence matches it
    free = await TOOLS["find_experts"](team, "someone who knows the Rust programming language")
    assert people(free)[0] == "Charlie"
    assert any(f.type == "HAS_SKILL" and "Rust" in f.description for f in free.people[0].relevant_facts)
    assert 0 < free.people[0].relevance_score < 1  # expertise x similarity
    assert people(await TOOLS["find_experts"](team, "quantum chromodynamics on a lattice")) == []
    with pytest.raises(MemoryInputError, match="query"):
        await TOOLS["find_experts"](team, "  ")
    from DeepResearch.src.memory.facts.toolset import fact_toolset

    schema = fact_toolset(team).tools["find_experts"].function_schema.json_schema
    assert schema["required"] == ["query"] and set(schema["properties"]) == {"query", "limit"}


async def test_timeline_answers_the_seeds_entries_of_life_spans_by_default(team: FactGraph) -> None:
    answer = await TOOLS["get_person_timeline"](team, "Alice")
    entries = [(e.type, e.object, e.start, e.end) for e in answer.timeline]
    assert [e[2] for e in entries] == sorted(e[2] for e in entries)  # oldest first
    assert sorted(entries, key=str) == [
        ("LIVES_IN", "San Francisco", "2022-01-01T00:00:00+00:00", None),
        ("WORKS_AT", "Google", "2022-01-01T00:00:00+00:00", None),
        ("WORKS_AT", "Microsoft", "2019-03-01T00:00:00+00:00", "2022-01-01T00:00:00+00:00"),
    ]  # skills, topics and acquaintances are not spans of a life: asked for by name
    assert [e.fact_id for e in answer.timeline] == [f.id for f in answer.facts]
    assert answer.timeline[0].evidence == ["m1"] and answer.timeline[0].attributes == {"role": "Engineer"}
    skills = await TOOLS["get_person_timeline"](team, "Alice", fact_types=["HAS_SKILL"])
    assert sorted(e.object for e in skills.timeline) == ["Kubernetes", "Python"]


async def test_find_experts_weighs_recent_expertise_above_old(graph: FactGraph) -> None:
    same = dict(predicate="HAS_SKILL", object="Go", confidence=0.9,
                attributes={"proficiency": "expert", "years": 6})
    now = time.time()
    await graph.add_facts([
        dict(subject="Olga", evidence="o1", valid_at=now - 8 * 365 * 86400, **same),
        dict(subject="Nina", evidence="n1", valid_at=now - 30 * 86400, **same),
    ])
    answer = await TOOLS["find_experts"](graph, "Go")
    assert [h.person.name for h in answer.experts] == ["Nina", "Olga"]
    assert answer.experts == answer.people  # the seed's name for the same hits
    old, new = answer.experts[1].relevance_score, answer.experts[0].relevance_score
    assert 0.7 * new <= old < new  # older expertise counts less, never less than the floor
