"""The FactStore contract: what every backend's store of entities and facts must do."""

from __future__ import annotations

import time

import pytest

from DeepResearch.src.memory import MemorySystemClient
from DeepResearch.src.memory.backends.base import MemoryFilter, MemoryRecord
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.errors import MemoryBackendError, MemorySubsystemError
from DeepResearch.src.memory.facts.model import Entity, Fact, FactQuery
from DeepResearch.src.memory.facts.store import FactStore, name_key

NS = "facts-test"


def person(eid: str, name: str, real_name: str | None = None, *aliases: str) -> Entity:
    return Entity(id=eid, namespace=NS, type="Person", name=name, created_at=1.0,
                  real_name=real_name, aliases=aliases)


def fact(fid: str, subject: str, predicate: str, obj: str, **kw: object) -> Fact:
    base: dict[str, object] = dict(
        id=fid, namespace=NS, subject_id=subject, predicate=predicate, object_id=obj,
        object_value=None, confidence=0.8, evidence=("m1",), created_at=2.0,
    )
    base.update(kw)
    return Fact(**base)  # type: ignore[arg-type]


def memory(fid: str, text: str, embedder: Embedder, vector: object = None) -> MemoryRecord:
    return MemoryRecord(id=fid, session_id="facts", memory_type="fact", content=text,
                        created_at=2.0, namespace=NS,
                        vector=embedder.embed([text])[0] if vector is None else vector)


async def test_put_then_read_entities_by_every_name(fact_store: FactStore) -> None:
    await fact_store.put(entities=[person("p1", "Alice", "Alice Johnson", "AJ")])
    for key in ("alice", "alice johnson", "aj"):
        found = await fact_store.entities_by_key(NS, [key])
        assert [e.id for e in found] == ["p1"], key
    assert await fact_store.entities_by_key(NS, ["alice"], types=["Organization"]) == []
    assert await fact_store.entities_by_key("other-namespace", ["alice"]) == []
    (got,) = await fact_store.get_entities(NS, ["p1"])
    assert got.aliases == ("AJ",) and got.real_name == "Alice Johnson"
    assert sorted(k for _, k in await fact_store.entity_keys(NS, ["Person"])) == [
        "aj", "alice", "alice johnson"]


async def test_replacing_an_entity_replaces_its_keys(fact_store: FactStore) -> None:
    await fact_store.put(entities=[person("p1", "Alice", None, "Al")])
    await fact_store.put(entities=[person("p1", "Alice", "Alice Johnson")])
    assert await fact_store.entities_by_key(NS, ["al"]) == []
    await fact_store.put(delete_entity_ids=["p1"])
    assert await fact_store.get_entities(NS, ["p1"]) == []
    assert await fact_store.entity_keys(NS) == []


async def test_facts_current_by_default_history_on_request(fact_store: FactStore) -> None:
    now = time.time()
    await fact_store.put(
        entities=[person("p1", "Alice")],
        facts=[fact("f-old", "p1", "WORKS_AT", "o1", valid_at=now - 1000, invalid_at=now - 100),
               fact("f-new", "p1", "WORKS_AT", "o2", valid_at=now - 100),
               fact("f-lit", "p1", "HAS_SKILL", None, object_value="Python  ", valid_at=None)],
    )
    current = await fact_store.find_facts(FactQuery(NS, subject_ids=("p1",)))
    assert [f.id for f in current] == ["f-new", "f-lit"]  # newest valid_at first, unknown last
    history = await fact_store.find_facts(FactQuery(NS, subject_ids=("p1",), include_history=True))
    assert [f.id for f in history] == ["f-new", "f-old", "f-lit"]
    back_then = await fact_store.find_facts(FactQuery(NS, predicates=("WORKS_AT",), as_of=now - 500))
    assert [f.id for f in back_then] == ["f-old"]
    by_value = await fact_store.find_facts(FactQuery(NS, object_values=("PYTHON",)))
    assert [f.id for f in by_value] == ["f-lit"]
    assert (await fact_store.find_facts(FactQuery(NS, ids=("f-lit",))))[0].object_value == "Python  "
    assert await fact_store.find_facts(FactQuery(NS, min_confidence=0.9)) == []
    assert len(await fact_store.find_facts(FactQuery(NS, include_history=True, limit=2))) == 2


async def test_put_writes_the_sentence_memories_searchable(
    fact_store: FactStore, fact_client: MemorySystemClient, embedder: Embedder
) -> None:
    text = "Alice WORKS_AT Google. role=Software Engineer"
    await fact_store.put(entities=[person("p1", "Alice")],
                         facts=[fact("f1", "p1", "WORKS_AT", "o1")],
                         memories=[memory("f1", text, embedder)])
    backend = fact_client.backend
    assert [r.content for r in await backend.get(["f1"], NS)] == [text]
    flt = MemoryFilter(memory_types=("fact",))
    dense = await backend.vector_search(embedder.embed_query("where does alice work"), 3, flt)
    assert [c.record.id for c in dense] == ["f1"]
    assert [c.record.id for c in await backend.text_search("google engineer", 3, flt)] == ["f1"]


async def test_a_refused_batch_writes_nothing(
    fact_store: FactStore, fact_client: MemorySystemClient, embedder: Embedder
) -> None:
    import numpy as np

    bad = memory("f2", "broken", embedder, vector=np.zeros(3, dtype=np.float32))
    # MemoryBackendError (in_memory, faiss) or MemoryInputError (neo4j: a bad record)
    with pytest.raises(MemorySubsystemError, match="f2"):
        await fact_store.put(entities=[person("p1", "Alice")],
                             facts=[fact("f1", "p1", "WORKS_AT", "o1")],
                             memories=[memory("f1", "Alice WORKS_AT Google", embedder), bad])
    assert await fact_store.get_entities(NS, ["p1"]) == []
    assert await fact_store.find_facts(FactQuery(NS, include_history=True)) == []
    assert await fact_client.backend.get(["f1"], NS) == []


def test_name_key_normalises_case_and_spaces() -> None:
    assert name_key("  Alice   JOHNSON ") == "alice johnson"


def test_a_backend_without_a_fact_store_says_so() -> None:
    from DeepResearch.src.memory.backends.base import MemoryBackend

    class Bare(MemoryBackend):
        name = "bare"
        open = close = upsert = get = delete = vector_search = text_search = None  # type: ignore[assignment]
        scan = count = health = related_many = None  # type: ignore[assignment]

    Bare.__abstractmethods__ = frozenset()
    with pytest.raises(MemoryBackendError, match="backend 'bare' has no fact store"):
        Bare().fact_store()


@pytest.mark.parametrize(("facts", "fragment"), [
    ({"single_valued": ["NOPE"]}, "single_valued names unknown predicates ['NOPE']"),
    ({"exact_types": ["Ticket"]}, "exact_types names unknown entity types ['Ticket']"),
    ({"object_types": {"WORKS_AT": "Planet"}}, "object_types.WORKS_AT='Planet'"),
    ({"predicates": ["works_at", "PARTICIPATED_IN"]}, "'works_at' must be UPPER_SNAKE_CASE"),
    ({"entity_types": ["Person"]}, "entity_types must keep 'Channel'"),
    ({"fuzzy_threshold": 20}, "memory.facts.fuzzy_threshold=20"),
    ({"colour": 1}, "memory.facts.colour=1: unknown key"),
])
def test_the_facts_config_names_key_value_and_choices(facts: dict, fragment: str) -> None:
    from DeepResearch.src.memory.config import MemoryConfig
    from DeepResearch.src.memory.errors import MemoryConfigError

    with pytest.raises(MemoryConfigError) as caught:
        MemoryConfig(facts=facts)
    assert fragment in str(caught.value)
