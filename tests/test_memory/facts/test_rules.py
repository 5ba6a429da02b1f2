"""Time, contradiction and evidence rules, through the graph on every backend."""

from __future__ import annotations

from datetime import UTC, datetime

from DeepResearch.src.memory.facts.graph import FactGraph


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


async def test_a_job_change_closes_the_old_job_and_keeps_it(team: FactGraph) -> None:
    current = await team.facts(subject="Alice", predicate="WORKS_AT")
    assert [(f.object, f.current) for f in current] == [("Google", True)]
    history = await team.facts(subject="alice", predicate="WORKS_AT", include_history=True)
    assert [f.object for f in history] == ["Google", "Microsoft"]
    old = history[1]
    assert old.invalid_at == history[0].valid_at == "2022-01-01T00:00:00+00:00"
    assert old.evidence == ["m1"] and not old.current
    back_then = await team.facts(subject="Alice", predicate="WORKS_AT", as_of="2020-05-01")
    assert [f.object for f in back_then] == ["Microsoft"]


async def test_a_repeated_fact_adds_evidence_and_confidence(team: FactGraph) -> None:
    again = await team.add_fact("alice", "WORKS_AT", "google", confidence=0.5, evidence="m99",
                                attributes={"team": "Search"})
    history = await team.facts(subject="Alice", predicate="WORKS_AT", include_history=True)
    assert len(history) == 2  # not duplicated
    assert again.id == history[0].id
    assert again.evidence == ["m2", "m99"]
    assert abs(again.confidence - (1 - 0.1 * 0.5)) < 1e-9
    assert again.attributes["team"] == "Search" and again.attributes["role"] == "Software Engineer"


async def test_a_late_older_fact_does_not_override_a_newer_one(team: FactGraph) -> None:
    late = await team.add_fact("Bob", "LIVES_IN", "Boston", confidence=0.9, evidence="m50",
                               valid_at="2015-01", invalid_at=None)
    assert not late.current  # stored closed: Bob's New York is newer (known since it was learned)
    now = await team.facts(subject="Bob", predicate="LIVES_IN")
    assert [f.object for f in now] == ["New York"]
    late_job = await team.add_fact("Alice", "WORKS_AT", "IBM", confidence=0.9, evidence="m51",
                                   valid_at="2020-01")
    assert late_job.invalid_at == "2022-01-01T00:00:00+00:00"
    history = await team.facts(subject="Alice", predicate="WORKS_AT", include_history=True)
    by_object = {f.object: f for f in history}
    assert by_object["Microsoft"].invalid_at == "2020-01-01T00:00:00+00:00"  # IBM started then
    assert by_object["Google"].current and by_object["Google"].invalid_at is None


async def test_multi_valued_predicates_accumulate(team: FactGraph) -> None:
    skills = await team.facts(subject="Alice", predicate="HAS_SKILL")
    assert sorted(f.object for f in skills) == ["Kubernetes", "Python"]


async def test_the_fact_sentence_is_a_searchable_memory(team: FactGraph) -> None:
    (fact,) = await team.facts(subject="Alice", predicate="WORKS_AT")
    memory = await team.client.get(fact.id)
    assert memory is not None and memory.document.memory_type == "fact"
    assert memory.content == ("Alice WORKS_AT Google. role=Software Engineer, "
                              "location=San Francisco, since=2022-01")
    hits = await team.client.retrieve("who works at Google as a software engineer",
                                      filters={"memory_type": "fact"}, top_k=3)
    assert fact.id in [h.id for h in hits]
