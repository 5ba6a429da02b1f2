"""Per-entity summaries (summaries.py) and retrieval through them (ranking/observations.py):
each author's memories grouped by topic into observation memories that reference their
evidence; a question about the topic in other words reaches the evidence through the
observation, with the path in the result. Every backend, the real embedder."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.summaries import OBSERVATION, summarize, topic_groups

MakeClient = Callable[..., MemorySystemClient]
DANA_HOBBIES = [
    "Dana: I threw my first bowl on the pottery wheel last weekend.",
    "Dana: We went camping by the lake and slept under the stars.",
    "Dana: I finished a watercolour painting of the harbour.",
    "Dana: Swimming laps every morning keeps me sane.",
]
DANA_WORK = [
    "Dana: The shipyard moved my shift to nights this month.",
    "Dana: My manager at the shipyard wants the welding report by Friday.",
    "Dana: Our crew finished the hull inspection ahead of schedule.",
    "Dana: The union meeting about overtime pay is on Tuesday.",
]
OTHERS = [
    "Ravi: What activities are on at the community centre?",
    "Ravi: The activities fair had a long queue.",
    "Ravi: Do you know any good activities for kids?",
    "Ravi: My favourite activities list is on the fridge.",
    "Ravi: Activities like that are not for me.",
]
QUERY = "What activities does Dana do?"


async def _store(client: MemorySystemClient) -> dict[str, str]:
    texts = [*DANA_HOBBIES, *DANA_WORK, *OTHERS]
    ids = await client.store_many(
        [{"content": t, "metadata": {"author_name": t.split(":")[0]}} for t in texts],
        session_id="chat")
    await client.flush()
    return dict(zip(texts, ids, strict=True))


async def _observations(client: MemorySystemClient) -> list:
    return [h for h in await client.retrieve("Dana", top_k=50, session_id="chat",
                                             filters={"memory_type": OBSERVATION})]


async def test_each_author_s_memories_become_observations_that_reference_them(
    make_client: MakeClient,
) -> None:
    client = make_client(summaries={"group_size": 4, "min_memories": 4})
    ids = await _store(client)
    report = await summarize(client)
    assert report.entities == 2 and report.memories == 13
    observations = await _observations(client)
    assert len(observations) == report.observations >= 4
    dana = [o for o in observations if o.metadata["observation_of"] == "Dana"]
    grouped = sorted(i for o in dana for i in o.metadata["evidence"])
    assert grouped == sorted(ids[t] for t in [*DANA_HOBBIES, *DANA_WORK])  # each once
    for o in dana:
        assert o.content.startswith("Dana: ")
        related = await client.get_related_memories(o.id, types=["references"])
        assert {r.id for r in related} == set(o.metadata["evidence"])
    # a second run replaces the first run's observations, and never summarises them
    again = await summarize(client)
    assert again.replaced == report.observations and again.memories == 13
    assert sorted(o.id for o in await _observations(client)) == sorted(o.id for o in observations)


async def test_an_author_with_too_few_memories_gets_none(make_client: MakeClient) -> None:
    client = make_client(summaries={"min_memories": 6})
    await _store(client)
    report = await summarize(client, dry_run=True)
    assert report.entities == 1  # Dana (8 memories); Ravi has 5
    client2 = make_client(namespace="other", summaries={"min_memories": 9})
    await _store(client2)
    assert (await summarize(client2)).observations == 0
    assert await _observations(client2) == []


async def _store_hobbies(client: MemorySystemClient) -> set[str]:
    """Dana's four hobbies (one observation) among Ravi's talk of activities."""
    texts = [*DANA_HOBBIES, *OTHERS]
    ids = await client.store_many(  # the author in metadata only: the texts do not name Dana
        [{"content": t.split(": ", 1)[1], "metadata": {"author_name": t.split(":")[0]}}
         for t in texts], session_id="chat")
    await summarize(client)
    return set(ids[: len(DANA_HOBBIES)])


async def test_a_topic_question_reaches_the_evidence_through_an_observation(
    make_client: MakeClient,
) -> None:
    off = make_client(namespace="off", summaries={"group_size": 4})
    hobby = await _store_hobbies(off)
    plain = await off.retrieve(QUERY, top_k=4, session_id="chat")
    assert len(hobby & {h.id for h in plain}) <= 1  # dense and lexical alone miss them
    assert all(not h.paths for h in plain)

    on = make_client(namespace="on", summaries={"group_size": 4},
                     retrieval={"observations": {"enabled": True, "weight": 1.0, "top": 1}})
    hobby = await _store_hobbies(on)
    hits = await on.retrieve(QUERY, top_k=4, session_id="chat")
    assert all(h.document.memory_type != OBSERVATION for h in hits)  # keep: false
    found = [h for h in hits if h.id in hobby]
    assert len(found) >= 3
    for h in found:
        assert h.paths and h.paths[0].startswith("observation: Dana (obs-")
        assert h.signals["observations"] > 0


def test_topic_groups_split_two_topics_and_are_deterministic() -> None:
    rng = np.random.default_rng(0)
    a, b = np.eye(8, dtype=np.float32)[0], np.eye(8, dtype=np.float32)[1]
    rows = np.stack([a + 0.1 * rng.standard_normal(8) for _ in range(5)]
                    + [b + 0.1 * rng.standard_normal(8) for _ in range(5)]).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    groups = topic_groups(rows, group_size=5)
    assert sorted(sorted(g) for g in groups) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert groups == topic_groups(rows, group_size=5)


@pytest.mark.slow
@pytest.mark.integration
async def test_the_cli_writes_the_observations(tmp_path: Path, embedder: Embedder) -> None:
    store = tmp_path / "memory"
    client = MemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": str(store)}),
                                session_id="s1", embedder=embedder)
    await _store(client)
    await client.close()
    root = Path(__file__).resolve().parents[2]

    def cli(*args: str) -> dict:
        done = subprocess.run(
            [sys.executable, "-m", "DeepResearch.src.memory.cli", "summarize", "--json", *args,
             "memory.backend=faiss", f"memory.faiss.path={store}", "memory.summaries.group_size=4"],
            cwd=root, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    planned = cli("--dry-run")
    assert planned["entities"] == 2 and planned["observations"] >= 4
    written = cli()
    assert written["observations"] == planned["observations"] and written["replaced"] == 0
    assert cli()["replaced"] == written["observations"]
