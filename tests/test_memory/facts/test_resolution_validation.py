"""Entity resolution and input validation, through the graph on every backend."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.facts.graph import FactGraph
from DeepResearch.src.memory.facts.model import FactQuery

GOOD: dict[str, Any] = dict(subject="Alice", predicate="WORKS_AT", object="Google",
                            confidence=0.9, evidence="m1")


async def test_names_case_full_name_and_alias_are_one_person(graph: FactGraph) -> None:
    await graph.add_fact("Alice", "WORKS_AT", "Google", confidence=0.9, evidence="m1")
    await graph.add_fact("alice", "HAS_SKILL", "Python", confidence=0.9, evidence="m2")
    await graph.add_fact("Alice Johnson", "LIVES_IN", "Paris", confidence=0.9, evidence="m3")
    await graph.add_entity("Alice", aliases=["AJ"])
    await graph.add_fact("AJ", "INTERESTED_IN", "chess", confidence=0.9, evidence="m4")
    alice = await graph.entity("ALICE")
    assert alice is not None and alice.real_name == "Alice Johnson" and alice.aliases == ["AJ"]
    facts = await graph.facts(subject="aj")
    assert {f.subject_id for f in facts} == {alice.id} and len(facts) == 4


async def test_a_full_name_first_then_the_first_name(graph: FactGraph) -> None:
    await graph.add_fact("Charlie Brown", "WORKS_AT", "Stripe", confidence=0.9, evidence="m1")
    await graph.add_fact("Charlie", "HAS_SKILL", "Rust", confidence=0.9, evidence="m2")
    assert len(await graph.facts(subject="Charlie Brown")) == 2


async def test_fuzzy_matches_typos_but_not_short_names(graph: FactGraph) -> None:
    await graph.add_fact("Alexandra Smith", "WORKS_AT", "Google", confidence=0.9, evidence="m1")
    await graph.add_fact("Alexandra Smyth", "HAS_SKILL", "Go", confidence=0.9, evidence="m2")
    assert len(await graph.facts(subject="Alexandra Smith")) == 2
    await graph.add_fact("Bo", "WORKS_AT", "Google", confidence=0.9, evidence="m3")
    await graph.add_fact("Bob", "WORKS_AT", "Google", confidence=0.9, evidence="m4")
    bo, bob = await graph.entity("Bo"), await graph.entity("Bob")
    assert bo is not None and bob is not None and bo.id != bob.id


async def test_names_that_differ_by_a_number_or_name_a_channel_never_match_fuzzily(
    graph: FactGraph,
) -> None:
    await graph.add_fact("Chris Evans", "HAS_SKILL", "Python 2", confidence=0.9, evidence="m1")
    await graph.add_fact("Chris Evans", "HAS_SKILL", "Python 3", confidence=0.9, evidence="m2")
    skills = {f.object for f in await graph.facts(subject="Chris Evans")}
    assert skills == {"Python 2", "Python 3"}
    # channel ids are ids: one letter off is another channel, not a typo
    for i, channel in enumerate(["channel-80", "channel-89", "general-chat", "general-chats"]):
        await graph.add_fact("Chris Evans", "PARTICIPATED_IN", channel, confidence=1.0,
                             evidence=f"c{i}")
    channels = {f.object for f in await graph.facts(subject="Chris Evans",
                                                   predicate="PARTICIPATED_IN")}
    assert channels == {"channel-80", "channel-89", "general-chat", "general-chats"}
    # a typo with the same numbers still meets its entity
    await graph.add_fact("Chris Evans", "WORKS_AT", "Area 51 Labs", confidence=0.9, evidence="m3")
    await graph.add_fact("Dana", "WORKS_AT", "Area 51 Lab", confidence=0.9, evidence="m4")
    labs = {f.object_id for f in await graph.facts(predicate="WORKS_AT")}
    assert len(labs) == 1


async def test_ingest_reports_an_ambiguous_name_and_keeps_the_rest(graph: FactGraph) -> None:
    await graph.add_fact("Alice Johnson", "WORKS_AT", "Google", confidence=0.9, evidence="m1")
    await graph.add_fact("Alice Smith", "WORKS_AT", "Microsoft", confidence=0.9, evidence="m2")
    report = await graph.ingest([
        {"message_id": "chat-1", "author_id": "u-bob", "author_name": "Bob", "timestamp": 1.7e9,
         "content": "I live in Paris."},
        {"message_id": "chat-2", "author_id": "u-eve", "author_name": "Eve", "timestamp": 1.7e9,
         "content": "Alice lives in Berlin."},
    ], channel_id="team")
    assert report.episodes == ["chat-1", "chat-2"]
    assert any("'Alice' is ambiguous" in p and "left out" in p for p in report.problems)
    assert {(f.subject, f.object) for f in report.facts if f.predicate == "LIVES_IN"} == {
        ("Bob", "Paris")}
    assert await graph.client.get("chat-2") is not None  # the message itself is kept


async def test_same_first_name_people_stay_apart_when_their_facts_disagree(
    graph: FactGraph,
) -> None:
    await graph.add_fact("Alice Johnson", "WORKS_AT", "Google", confidence=0.9, evidence="m1")
    await graph.add_fact("Alice Smith", "WORKS_AT", "Microsoft", confidence=0.9, evidence="m2")
    johnson, smith = await graph.entity("Alice Johnson"), await graph.entity("Alice Smith")
    assert johnson is not None and smith is not None and johnson.id != smith.id
    # "Alice" alone is ambiguous now: the tools say so, writes ask for more
    with pytest.raises(MemoryInputError, match=r"ambiguous: it may be Alice Johnson .*, Alice Smith"):
        await graph.add_fact("Alice", "HAS_SKILL", "Python", confidence=0.9, evidence="m3")
    # a first name whose other facts disagree is not joined to the one Alice
    await graph.add_fact("Dana", "WORKS_AT", "Stripe", confidence=0.9, evidence="m4")
    await graph.add_fact("Dana Scully", "WORKS_AT", "FBI", confidence=0.9, evidence="m5")
    assert (await graph.entity("Dana")).id != (await graph.entity("Dana Scully")).id  # type: ignore[union-attr]


async def test_a_merge_keeps_every_fact_and_its_evidence(graph: FactGraph) -> None:
    await graph.add_fact("Robert", "WORKS_AT", "Google", confidence=0.9, evidence="m1",
                         valid_at="2020-01")
    await graph.add_fact("Bobby", "HAS_SKILL", "Go", confidence=0.8, evidence=["m2", "m3"])
    await graph.add_fact("Alice", "KNOWS", "Bobby", confidence=0.8, evidence="m4")
    merged = await graph.merge_entities("Robert", "Bobby")
    assert "Bobby" in merged.aliases
    facts = await graph.facts(subject="Bobby", include_history=True)
    assert sorted((f.predicate, f.object, tuple(f.evidence)) for f in facts) == [
        ("HAS_SKILL", "Go", ("m2", "m3")), ("WORKS_AT", "Google", ("m1",))]
    (knows,) = await graph.facts(subject="Alice", predicate="KNOWS")
    assert knows.object == "Robert" and knows.object_id == merged.id
    store = await graph.store()
    assert await store.get_entities(graph.namespace, [facts[0].subject_id]) != []


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize("value", [
    datetime(2022, 1, 1, tzinfo=UTC), datetime(2022, 1, 1), _epoch("2022-01-01"),
    "2022-01-01", "2022-01-01T00:00:00Z", "2022-01", "1 January 2022",
])
async def test_dates_in_every_accepted_form(graph: FactGraph, value: Any) -> None:
    fact = await graph.add_fact("Alice", "LIVES_IN", "Oslo", confidence=0.5, evidence="m1",
                                valid_at=value)
    assert fact.valid_at == "2022-01-01T00:00:00+00:00"


@pytest.mark.parametrize(("change", "named"), [
    ({"predicate": "LOVES"}, "predicate='LOVES'"),
    ({"subject_type": "Robot"}, "subject_type='Robot'"),
    ({"object_type": "Planet"}, "object_type='Planet'"),
    ({"confidence": 1.5}, "confidence=1.5"),
    ({"confidence": -0.1}, "confidence=-0.1"),
    ({"evidence": None}, "evidence"),
    ({"evidence": []}, "evidence"),
    ({"valid_at": "not a date at all"}, "valid_at='not a date at all'"),
    ({"valid_at": "2024-02", "invalid_at": "2023-01"}, "invalid_at='2023-01'"),
    ({"subject": "  "}, "subject='  '"),
    ({"colour": "red"}, "colour"),
])
async def test_bad_facts_name_the_value_and_write_nothing(
    graph: FactGraph, change: dict[str, Any], named: str
) -> None:
    batch = [dict(GOOD, evidence="ok-1"), {**GOOD, **change}]
    with pytest.raises(MemoryInputError) as caught:
        await graph.add_facts(batch)
    assert named in str(caught.value) and "fact 1" in str(caught.value)
    store = await graph.store()
    assert await store.find_facts(FactQuery(graph.namespace, include_history=True)) == []
    assert await store.entity_keys(graph.namespace) == []


async def test_a_batch_refused_by_the_backend_writes_nothing(graph: FactGraph) -> None:
    """A failure inside the put (after resolution) leaves no entity, fact or memory behind."""
    graph.client.config.storage.vectors = "inline"  # embedded in the put, which then fails
    await graph.add_fact("Zoe", "WORKS_AT", "Acme", confidence=0.9, evidence="m0")
    store = await graph.store()
    before_facts = await store.find_facts(FactQuery(graph.namespace, include_history=True))
    real_embed = graph.client.embedder.embed

    def broken(texts: Any) -> Any:
        vectors = real_embed(texts)
        return vectors[:, :10]  # wrong dimension: the backend refuses the batch

    graph.client.embedder.embed = broken  # type: ignore[method-assign]
    try:
        with pytest.raises(Exception, match=r"vector (of )?shape"):  # faiss, neo4j wording
            await graph.add_facts([dict(GOOD, subject="Yan", evidence="m1"),
                                   dict(GOOD, subject="Zoe", object="Initech", evidence="m2")])
    finally:
        del graph.client.embedder.embed
    after = await store.find_facts(FactQuery(graph.namespace, include_history=True))
    assert [(f.id, f.invalid_at) for f in after] == [(f.id, f.invalid_at) for f in before_facts]
    assert await graph.entity("Yan") is None and await graph.entity("Initech") is None


async def test_one_batch_resolves_its_own_new_names_and_applies_the_rules_in_order(
    graph: FactGraph,
) -> None:
    out = await graph.add_facts([
        dict(subject="Eve", predicate="WORKS_AT", object="Acme", confidence=0.8, evidence="b1",
             valid_at="2020-01"),
        dict(subject="eve", predicate="HAS_SKILL", object="Go", confidence=0.5, evidence="b2"),
        dict(subject="Eve Adams", predicate="WORKS_AT", object="Initech", confidence=0.9,
             evidence="b3", valid_at="2022-06"),
        dict(subject="EVE", predicate="HAS_SKILL", object="go", confidence=0.5, evidence="b4"),
    ])
    assert len({f.subject_id for f in out}) == 1
    assert out[1].id == out[3].id and out[3].evidence == ["b2", "b4"]
    assert abs(out[3].confidence - 0.75) < 1e-9
    jobs = await graph.facts(subject="Eve Adams", predicate="WORKS_AT", include_history=True)
    assert [(f.object, f.invalid_at) for f in jobs] == [
        ("Initech", None), ("Acme", "2022-06-01T00:00:00+00:00")]
