"""The graph path of retrieve (retrieval.graph): a person the query names brings the memories
their facts were learnt from, with the path in the result's `paths`; off, nothing changes.
Every backend, the real embedder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.errors import MemoryConfigError
from DeepResearch.src.memory.facts.graph import FactGraph
from DeepResearch.src.memory.ranking.graph import mention_keys

MakeClient = Callable[..., MemorySystemClient]
QUERY = "Where is Dana employed?"
# The memory the fact was learnt from: it shares no word with the query and is about a job only
# in other words; the distractors talk about employment, some even about Dana.
EVIDENCE = "Monday was my first shift welding hulls down at the Northgate shipyard."
DISTRACTORS = [
    "Ravi is employed at the bakery on Elm Street.",
    "Where is the employment office? Next to the station.",
    "Lee has been employed by the harbour authority for years.",
    "Dana asked where the nearest post office is.",
    "Employed people get a discount at the gym.",
    "Priya is employed as a nurse at the city hospital.",
    "Dana likes long walks by the river.",
    "Tom wonders where he will be employed after graduation.",
    "The survey asks where residents are employed.",
    "Maria is employed at a law firm downtown.",
]


async def _store(client: MemorySystemClient, with_fact: bool) -> str:
    ids = await client.store_many(
        [{"content": text} for text in [*DISTRACTORS, EVIDENCE]], session_id="chat"
    )
    if with_fact:
        await FactGraph(client).add_fact(
            "Dana", "WORKS_AT", "Northgate Shipyard", object_type="Organization",
            evidence=ids[-1], confidence=0.9,
        )
    await client.flush()
    return ids[-1]


async def test_a_named_person_brings_the_evidence_of_their_facts(
    make_client: MakeClient, tmp_path: Path
) -> None:
    # two stores (one Neo4j database: two namespaces)
    off = make_client(retrieval={"graph": {"enabled": False}}, faiss={"path": str(tmp_path / "off")},
                      namespace="off")
    evidence = await _store(off, with_fact=True)
    hits = await off.retrieve(QUERY, top_k=3, session_id="chat")
    assert evidence not in [h.id for h in hits]  # dense and lexical alone miss it
    assert all(not h.paths for h in hits)

    # weight 1: in a set of eleven memories, session neighbours lend the others as much
    on = make_client(retrieval={"graph": {"enabled": True, "weight": 1.0}},
                     faiss={"path": str(tmp_path / "on")}, namespace="on")
    evidence = await _store(on, with_fact=True)
    hits = await on.retrieve(QUERY, top_k=3, session_id="chat")
    found = {h.id: h for h in hits}
    assert evidence in found
    assert found[evidence].paths == ["graph: Dana -WORKS_AT-> Northgate Shipyard"]
    assert found[evidence].signals["graph"] > 0
    # the fact's sentence itself lives in the "facts" session: the scope still holds
    assert all(h.metadata.get("predicate") is None for h in hits)


async def test_the_graph_joins_a_search_by_default(make_client: MakeClient, tmp_path: Path) -> None:
    client = make_client(faiss={"path": str(tmp_path / "default")}, namespace="default")
    evidence = await _store(client, with_fact=True)
    hits = {h.id: h for h in await client.retrieve(QUERY, top_k=20, session_id="chat")}
    assert hits[evidence].paths == ["graph: Dana -WORKS_AT-> Northgate Shipyard"]
    assert hits[evidence].signals["graph"] > 0


async def test_a_fact_learnt_from_many_memories_brings_none(make_client: MakeClient) -> None:
    client = make_client(retrieval={"graph": {"enabled": True, "weight": 1.0,
                                              "max_fact_evidence": 1}})
    ids = await client.store_many(
        [{"content": text} for text in [*DISTRACTORS, EVIDENCE]], session_id="chat"
    )
    await FactGraph(client).add_fact("Dana", "WORKS_AT", "Northgate Shipyard",
                                     object_type="Organization", evidence=[ids[3], ids[-1]],
                                     confidence=0.9)
    hits = await client.retrieve(QUERY, top_k=3, session_id="chat")
    assert ids[-1] not in [h.id for h in hits]
    assert all("graph" not in h.signals for h in hits)


async def test_the_graph_path_respects_the_retrieve_scope(make_client: MakeClient) -> None:
    client = make_client(retrieval={"graph": {"enabled": True}})
    (elsewhere,) = await client.store_many([{"content": EVIDENCE}], session_id="other")
    await FactGraph(client).add_fact("Dana", "WORKS_AT", "Northgate Shipyard",
                                      object_type="Organization", evidence=elsewhere,
                                      confidence=0.9)
    await client.store_many([{"content": text} for text in DISTRACTORS], session_id="chat")
    hits = await client.retrieve(QUERY, top_k=20, session_id="chat")
    assert elsewhere not in [h.id for h in hits]


async def test_off_the_graph_changes_nothing(make_client: MakeClient, tmp_path: Path) -> None:
    off = {"graph": {"enabled": False}}
    plain = make_client(retrieval=off, faiss={"path": str(tmp_path / "plain")})
    with_facts = make_client(retrieval=off, faiss={"path": str(tmp_path / "facts")})
    await _store(plain, with_fact=False)
    await _store(with_facts, with_fact=True)
    a = await plain.retrieve(QUERY, top_k=5, session_id="chat")
    b = await with_facts.retrieve(QUERY, top_k=5, session_id="chat")
    # (the raw lexical scores differ: the fact's sentence is one more indexed memory)
    assert [(h.content, round(h.score, 4)) for h in a] == [(h.content, round(h.score, 4)) for h in b]
    assert all(not h.paths and "graph" not in h.signals for h in b)


def test_mentions_are_runs_of_words_without_possessives() -> None:
    keys = mention_keys("What does Mary Ann's brother like?")
    assert "mary ann" in keys and "mary" in keys and "ann" in keys
    assert keys.index("mary ann") < keys.index("mary")  # longer runs first


def test_bad_graph_settings_name_the_key() -> None:
    with pytest.raises(MemoryConfigError, match="max_entities"):
        MemoryConfig(retrieval={"graph": {"max_entities": 0}})
