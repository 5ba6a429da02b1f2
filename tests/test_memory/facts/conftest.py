"""Fixtures of the fact-store contract suite.

`backend_name` is parametrised over every backend with a FactStore (neo4j: the real test
server, reached through `memory_config_factory`; `-m "not neo4j"` needs no Java). Every
test taking `fact_store`, `fact_client` or `graph` runs once per backend.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import numpy as np
import pytest

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.facts.graph import FactGraph
from DeepResearch.src.memory.facts.store import FactStore

FACT_BACKENDS = [
    pytest.param("in_memory", id="in_memory"),
    pytest.param("faiss", id="faiss"),
    pytest.param("neo4j", id="neo4j", marks=pytest.mark.neo4j),
]


@pytest.fixture(params=FACT_BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    """Overrides the memory suite's parametrisation: only backends with a fact store."""
    return request.param


class MemoEmbedder(Embedder):
    """The suite's model, remembering each text's vector: the same sentences recur in every
    test, and two cores shared by several runs embed ~15 texts/s at worst."""

    def __init__(self, real: Embedder) -> None:
        super().__init__(real.model_name, runtime=real.runtime, loaded=real.model)
        self._memo: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if todo:
            self._memo.update(zip(todo, super().embed(todo), strict=True))
        if not texts:
            return super().embed(texts)
        return np.stack([self._memo[t] for t in texts])


@pytest.fixture(scope="session")
def fact_embedder(embedder: Embedder) -> Embedder:
    return MemoEmbedder(embedder)


@pytest.fixture
async def fact_client(
    memory_config_factory: Callable[..., MemoryConfig], fact_embedder: Embedder
) -> AsyncIterator[MemorySystemClient]:
    client = MemorySystemClient(memory_config_factory(), namespace="facts-test",
                                session_id="facts-test", embedder=fact_embedder)
    await client.open()
    yield client
    await client.close()


@pytest.fixture
def fact_store(fact_client: MemorySystemClient) -> FactStore:
    return fact_client.backend.fact_store()


def vector_of(embedder: Embedder, text: str) -> Any:
    return embedder.embed([text])[0]


@pytest.fixture
def graph(fact_client: MemorySystemClient) -> FactGraph:
    return FactGraph(fact_client)


# A small team: employment history with a job change (Alice: Microsoft -> Google), skills with
# proficiency, locations, topics, channels. Evidence ids are message ids.
TEAM_FACTS: list[dict[str, Any]] = [
    dict(subject="Alice", predicate="WORKS_AT", object="Microsoft", confidence=0.8,
         evidence="m1", valid_at="2019-03", attributes={"role": "Engineer"}),
    dict(subject="Alice", predicate="WORKS_AT", object="Google", confidence=0.9,
         evidence="m2", valid_at="2022-01",
         attributes={"role": "Software Engineer", "location": "San Francisco"}),
    dict(subject="Alice", predicate="HAS_SKILL", object="Python", confidence=0.9,
         evidence="m3", attributes={"proficiency": "expert", "years": 8}),
    dict(subject="Alice", predicate="HAS_SKILL", object="Kubernetes", confidence=0.7,
         evidence="m3", attributes={"proficiency": "intermediate", "years": 2}),
    dict(subject="Alice", predicate="LIVES_IN", object="San Francisco", confidence=0.9,
         evidence="m4", valid_at="2022-01"),
    dict(subject="Alice", predicate="INTERESTED_IN", object="machine learning",
         confidence=0.8, evidence="m5"),
    dict(subject="Alice", predicate="KNOWS", object="Bob", confidence=0.9, evidence="m6"),
    dict(subject="Bob", predicate="WORKS_AT", object="Google", confidence=0.9, evidence="m7",
         valid_at="2020-06", attributes={"role": "Product Manager"}),
    dict(subject="Bob", predicate="HAS_SKILL", object="Python", confidence=0.8, evidence="m7",
         attributes={"proficiency": "beginner", "years": 1}),
    dict(subject="Bob", predicate="LIVES_IN", object="New York", confidence=0.8, evidence="m8"),
    dict(subject="Bob", predicate="INTERESTED_IN", object="machine learning", confidence=0.6,
         evidence="m8"),
    dict(subject="Charlie", predicate="WORKS_AT", object="Stripe", confidence=0.9,
         evidence="m9", valid_at="2021-02"),
    dict(subject="Charlie", predicate="HAS_SKILL", object="Python", confidence=0.9,
         evidence="m9", attributes={"proficiency": "advanced", "years": 5}),
    dict(subject="Charlie", predicate="HAS_SKILL", object="Rust", confidence=0.9,
         evidence="m10", attributes={"proficiency": "expert", "years": 4}),
    dict(subject="Charlie", predicate="LIVES_IN", object="San Francisco", confidence=0.7,
         evidence="m10"),
    dict(subject="Dana", predicate="WORKS_AT", object="Google", confidence=0.6,
         evidence="m11", valid_at="2018-01", invalid_at="2020-01"),
    dict(subject="Dana", predicate="STUDIED_AT", object="MIT", confidence=0.9, evidence="m11"),
    dict(subject="Dana", predicate="INTERESTED_IN", object="databases", confidence=0.9,
         evidence="m12"),
    dict(subject="Dana", predicate="PARTICIPATED_IN", object="general", confidence=1.0,
         evidence="m12", valid_at="2024-05-01", attributes={"last_seen": "2024-05-01"}),
    dict(subject="Alice", predicate="PARTICIPATED_IN", object="general", confidence=1.0,
         evidence="m13", valid_at="2024-01-01", attributes={"last_seen": "2024-01-01"}),
]


@pytest.fixture
async def team(graph: FactGraph) -> FactGraph:
    await graph.add_facts(TEAM_FACTS)
    await graph.add_entity("Alice", real_name="Alice Johnson", aliases=["AJ"])
    return graph
