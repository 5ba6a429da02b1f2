"""Forgetting memories keeps the graph consistent (facts/forgetting.py), on every backend:
a fact goes with its sentence memory, and a deleted memory leaves the evidence of the facts
built on it (a fact with no evidence left goes too), in the memory delete's transaction."""

from __future__ import annotations

from typing import Any

import pytest

from DeepResearch.src.memory import MemorySystemClient
from DeepResearch.src.memory.facts.forgetting import Cascade, Forgotten
from DeepResearch.src.memory.facts.graph import FactGraph
from DeepResearch.src.memory.facts.model import Fact, FactQuery
from DeepResearch.src.memory.facts.tools import TOOLS


def say(message_id: str, author: str, name: str, content: str, day: int) -> dict[str, Any]:
    return {"message_id": message_id, "author_id": author, "author_name": name,
            "content": content, "timestamp": f"2024-02-{day:02d}T09:00:00Z"}


GENERAL = [say("g1", "u1", "Ann", "I work at Acme as a data engineer.", 1),
           say("g2", "u2", "Bo", "I know Python and Rust really well.", 2)]
DEV = [say("d1", "u2", "Bo", "I know Python.", 3)]


async def all_facts(graph: FactGraph) -> list[Fact]:
    store = await graph.store()
    return await store.find_facts(FactQuery(graph.namespace, include_history=True))


def triples(facts: list[Any]) -> dict[tuple[str, str, str], list[str]]:
    """(subject, predicate, object) -> evidence, of FactOut views."""
    return {(f.subject, f.predicate, f.object): sorted(f.evidence) for f in facts}


async def test_forgetting_a_facts_sentence_forgets_the_fact(graph: FactGraph) -> None:
    kept = await graph.add_fact("Ann", "HAS_SKILL", "Python", confidence=0.9, evidence="m1")
    gone = await graph.add_fact("Ann", "WORKS_AT", "Acme", confidence=0.9, evidence="m1",
                                valid_at="2020-01")
    assert await graph.client.forget(gone.id) == 1
    assert [f.id for f in await all_facts(graph)] == [kept.id]
    profile = await TOOLS["get_person_profile"](graph, "Ann")
    assert [f.predicate for f in profile.facts] == ["HAS_SKILL"]
    assert (await TOOLS["find_people_by_organization"](graph, "Acme")).people == []
    timeline = await TOOLS["get_person_timeline"](graph, "Ann", fact_types=["HAS_SKILL", "WORKS_AT"])
    assert [f.id for f in timeline.facts] == [kept.id]  # history too
    found = await TOOLS["semantic_search_facts"](graph, "where does Ann work", limit=5)
    assert [f.id for f in found.facts] == [kept.id]
    # the entity stays: a name with no facts
    assert (await graph.entity("Acme")) is not None


async def test_deleting_a_session_forgets_what_only_it_said(graph: FactGraph) -> None:
    await graph.ingest(GENERAL, channel_id="general")
    await graph.ingest(DEV, channel_id="dev")
    before = await all_facts(graph)
    seen = triples(await graph.views(before))
    assert seen[("Bo", "HAS_SKILL", "Python")] == ["d1", "g2"]
    assert seen[("Ann", "WORKS_AT", "Acme")] == ["g1"]
    confidence = {f.id: f.confidence for f in before}

    removed = await graph.client.forget(session_id="channel:general", everything=True)

    after = await all_facts(graph)
    assert triples(await graph.views(after)) == {
        ("Bo", "HAS_SKILL", "Python"): ["d1"],  # other evidence: kept, with what remains
        ("Bo", "PARTICIPATED_IN", "dev"): ["d1"]}
    assert all(f.confidence == pytest.approx(confidence[f.id]) for f in after)
    # the forgotten facts' sentence memories went with them, and count in the delete
    backend = graph.client.backend
    sentences = {r.id for r in await backend.get([f.id for f in before], graph.namespace)}
    assert sentences == {f.id for f in after}
    assert removed == len(GENERAL) + len(before) - len(after)
    assert [r.id for r in await backend.get(["g1", "g2", "d1"], graph.namespace)] == ["d1"]
    # what the tools say
    assert (await TOOLS["get_person_profile"](graph, "Ann")).facts == []
    assert (await TOOLS["find_people_by_organization"](graph, "Acme")).people == []
    assert (await TOOLS["find_people_by_skill"](graph, "Rust")).people == []
    python_people = (await TOOLS["find_people_by_skill"](graph, "Python")).people
    assert [(p.person.name, p.facts[0].evidence) for p in python_people] == [("Bo", ["d1"])]
    assert (await TOOLS["get_conversation_participants"](graph, "general")).people == []
    found = await TOOLS["semantic_search_facts"](graph, "Ann works at Acme", limit=10,
                                                 similarity_threshold=-1.0)  # every fact left
    assert [f.subject for f in found.facts] == ["Bo", "Bo"]


async def test_forgetting_an_unrelated_memory_changes_no_fact(
    graph: FactGraph, fact_client: MemorySystemClient
) -> None:
    await graph.ingest(GENERAL, channel_id="general")
    note = await fact_client.store("Ann likes green tea", session_id="notes")
    # a note naming a message in its metadata is not that message (only an episode is)
    await fact_client.store("about g2", metadata={"message_id": "g2"}, id="note-2",
                            session_id="notes")
    before = await all_facts(graph)
    assert await fact_client.forget([note, "note-2", "no-such-memory"]) == 2
    assert await all_facts(graph) == before
    # ... while forgetting the episode g2 does change them (the same call, another id)
    assert await fact_client.forget("g2") > 1
    assert all("g2" not in f.evidence for f in await all_facts(graph))


async def test_an_episode_takes_its_message_id_along(
    graph: FactGraph, fact_client: MemorySystemClient
) -> None:
    """Evidence names a message id; an episode stored under another id that carries it in
    its metadata is that message."""
    fact = await graph.add_fact("Ann", "LIVES_IN", "Berlin", confidence=0.8,
                                evidence=["msg-7", "msg-8"])
    await fact_client.store("Ann: I live in Berlin", metadata={"message_id": "msg-7"},
                            memory_type="episode", id="ep-7", session_id="chat")
    assert await fact_client.forget("ep-7") == 1
    (left,) = await all_facts(graph)
    assert left.id == fact.id and left.evidence == ("msg-8",)
    assert left.confidence == pytest.approx(0.8)


async def test_a_failed_cascade_deletes_nothing(
    graph: FactGraph, fact_client: MemorySystemClient, backend_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """All or nothing: a failure inside the cascade, after its own writes, rolls the whole
    delete back (the memories too)."""
    if backend_name == "in_memory":
        pytest.skip("in_memory applies a plan computed in full first: nothing can fail midway")
    await graph.ingest(GENERAL, channel_id="general")
    before = await all_facts(graph)
    store = fact_client.backend.fact_store()
    real = store.forget

    def broken(*args: Any) -> Any:
        if backend_name == "neo4j":
            async def fail() -> Any:
                await real(*args)
                raise RuntimeError("power cut")
            return fail()
        real(*args)
        raise RuntimeError("power cut")

    monkeypatch.setattr(store, "forget", broken)
    with pytest.raises(Exception, match="power cut"):
        await fact_client.forget(session_id="channel:general", everything=True)
    monkeypatch.undo()
    assert await all_facts(graph) == before
    ids = ["g1", "g2", *(f.id for f in before)]
    assert [r.id for r in await fact_client.backend.get(ids, fact_client.namespace)] == ids


def test_the_cascade_runs_until_nothing_changes() -> None:
    """A fact citing another fact's sentence memory loses it when that fact goes."""
    def fact(fid: str, *evidence: str, namespace: str = "n") -> Fact:
        return Fact(id=fid, namespace=namespace, subject_id="s", predicate="KNOWS",
                    object_id="o", object_value=None, confidence=0.5, evidence=evidence,
                    created_at=1.0)

    stored = [fact("f1", "m1"), fact("f2", "f1"), fact("f3", "f2", "m2"),
              fact("f4", "m1", namespace="other")]
    cascade = Cascade([Forgotten.of("m1", "n", "episode", None)])
    reads = 0
    while lookups := cascade.lookups():
        for lookup in lookups:
            reads += 1
            cascade.found([f for f in stored if f.namespace == lookup.namespace and (
                f.id in lookup.ids or set(f.evidence) & set(lookup.evidence))])
    plan = cascade.plan()
    assert plan.delete_facts == [("n", "f1"), ("n", "f2")]
    assert [(f.id, f.evidence) for f in plan.update_facts] == [("f3", ("m2",))]
    assert plan.delete_memories == [("n", "f1"), ("n", "f2")]
    assert reads == 3
    assert stored[2].evidence == ("f2", "m2")  # the cascade changed its own copy


async def test_a_forget_during_an_ingest_is_not_undone_by_it(
    graph: FactGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ingest reads Bo's Python fact (evidence g2), the forget of g2 lands while the
    ingest is still embedding and writing: the fact must not come back citing g2."""
    import asyncio

    await graph.ingest(GENERAL, channel_id="general")
    store = await graph.store()
    real_put = store.put
    reached_put = asyncio.Event()

    async def slow_put(*args: Any, **kwargs: Any) -> None:
        reached_put.set()
        await asyncio.sleep(0.3)  # the window in which a forget would land
        await real_put(*args, **kwargs)

    monkeypatch.setattr(store, "put", slow_put)

    async def forget_when_the_ingest_writes() -> int:
        await reached_put.wait()
        return await graph.client.forget("g2")

    _, removed = await asyncio.gather(graph.ingest(DEV, channel_id="dev"),
                                      forget_when_the_ingest_writes())
    assert removed >= 1
    for fact in await all_facts(graph):
        assert "g2" not in fact.evidence, fact
    seen = triples(await graph.views(await all_facts(graph)))
    assert seen[("Bo", "HAS_SKILL", "Python")] == ["d1"]
