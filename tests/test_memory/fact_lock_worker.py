"""One writer process of the cross-process fact-write tests (test_neo4j_fact_lock.py).

`run(uri, namespace, worker, rounds, barrier, out)` opens its own MemorySystemClient on the
test Neo4j (the 8-d test label, a hash embedder: no model to load), then per round waits at
`barrier` (so the processes write at the same moment) and writes the round's overlapping
batches: `add_facts` about person P<round> (skill L<round>) and `ingest` of one message by
author A<round> in channel c<round>. Each round's entities are new (and their names too short
to match others fuzzily), so each round is a trial of its own. What each call acknowledged
(fact ids and their evidence) and every error are written as JSON to `out`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import traceback
from collections.abc import Sequence
from typing import Any

import numpy as np

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.facts.graph import FactGraph
from test_memory.neo4j_helpers import DIM, LABEL

BARRIER_TIMEOUT = 60.0
# Each worker's object of the single-valued predicates: the two contradict each other.
ORGS = ("Acme", "Initech")
PLACES = ("Paris", "Berlin")


class HashEmbedder(Embedder):
    """A deterministic 8-d embedding of the text's hash: no model, same vector per text."""

    @property
    def dimension(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            vec = np.random.default_rng(seed).normal(size=DIM)
            rows.append(vec / np.linalg.norm(vec))
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), DIM)


def config(uri: str, namespace: str) -> MemoryConfig:
    return MemoryConfig(
        backend="neo4j", namespace=namespace,
        neo4j={"uri": uri, "password": None, "node_label": LABEL,
               "index_name": "backend_test_vectors", "fulltext_index_name": "backend_test_text"},
    )


def batch(worker: int, r: int) -> list[dict[str, Any]]:
    person = f"P{r}"
    return [
        # the same fact from both writers: one fact, both evidence ids
        {"subject": person, "predicate": "HAS_SKILL", "object": f"L{r}", "confidence": 0.5,
         "evidence": f"w{worker}-r{r}-skill"},
        # contradicting single-valued facts: the later one closes the earlier
        {"subject": person, "predicate": "WORKS_AT", "object": ORGS[worker], "confidence": 0.9,
         "evidence": f"w{worker}-r{r}-job", "valid_at": 1_600_000_000 + 1000 * r + worker},
        {"subject": person, "predicate": "LIVES_IN", "object": PLACES[worker],
         "confidence": 0.9, "evidence": f"w{worker}-r{r}-home",
         "valid_at": 1_600_000_000 + 1000 * r + 1 - worker},
    ]


def message(worker: int, r: int) -> dict[str, Any]:
    return {"author_id": f"user-{r}", "author_name": f"A{r}", "channel_id": f"c{r}",
            "content": f"I work at {ORGS[worker]}.", "timestamp": 1_600_000_000 + r + worker,
            "message_id": f"w{worker}-r{r}-msg"}


async def _main(uri: str, namespace: str, worker: int, rounds: int, barrier: Any) -> dict:
    client = MemorySystemClient(config(uri, namespace), session_id=f"writer-{worker}",
                                embedder=HashEmbedder())
    graph = FactGraph(client)
    acked: list[dict[str, Any]] = []
    errors: list[str] = []
    try:
        await client.open()
        for r in range(rounds):
            await asyncio.to_thread(barrier.wait, BARRIER_TIMEOUT)
            try:
                facts = await graph.add_facts(batch(worker, r))
                report = await graph.ingest([message(worker, r)])
                facts += report.facts
            except Exception as exc:  # reported, and the test fails on it
                errors.append(f"round {r}: {type(exc).__name__}: {exc}")
                continue
            acked += [{"id": f.id, "evidence": f.evidence, "predicate": f.predicate}
                      for f in facts]
    except Exception:
        errors.append(traceback.format_exc())
        barrier.abort()
    finally:
        await client.close()
    return {"worker": worker, "acked": acked, "errors": errors}


def run(uri: str, namespace: str, worker: int, rounds: int, barrier: Any, out: str) -> None:
    result = asyncio.run(_main(uri, namespace, worker, rounds, barrier))
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
