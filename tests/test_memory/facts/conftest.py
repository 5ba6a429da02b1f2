"""Fixtures of the fact-store contract suite.

`backend_name` is parametrised over every backend with a FactStore (neo4j: the real test
server, reached through `memory_config_factory`; `-m "not neo4j"` needs no Java). Every test taking `fact_store`, `fact_client` or `graph`
runs once per backend.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.embeddings import Embedder
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


@pytest.fixture
async def fact_client(
    memory_config_factory: Callable[..., MemoryConfig], embedder: Embedder
) -> AsyncIterator[MemorySystemClient]:
    client = MemorySystemClient(memory_config_factory(), namespace="facts-test",
                                session_id="facts-test", embedder=embedder)
    await client.open()
    yield client
    await client.close()


@pytest.fixture
def fact_store(fact_client: MemorySystemClient) -> FactStore:
    return fact_client.backend.fact_store()


def vector_of(embedder: Embedder, text: str) -> Any:
    return embedder.embed([text])[0]
