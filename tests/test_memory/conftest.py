"""Fixtures of the memory contract suite.

`backend_name` is parametrised over every backend; tests that take `client`,
`make_client` or `memory_config` run once per backend. The neo4j parameter carries the
`neo4j` marker and asks for the session fixture `neo4j_clean_uri` (tests/conftest.py) only when it
runs, so `-m "not neo4j"` needs no Java. The embedding model loads once per session.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any
from uuid import uuid4

import pytest

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.embeddings import Embedder, get_embedder

BACKENDS = [
    pytest.param("in_memory", id="in_memory"),
    pytest.param("faiss", id="faiss"),
    pytest.param("neo4j", id="neo4j", marks=pytest.mark.neo4j),
]


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    model = get_embedder()
    model.embed(["warm up"])  # load once, here
    return model


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def memory_config_factory(
    backend_name: str, tmp_path: Any, request: pytest.FixtureRequest
) -> Callable[..., MemoryConfig]:
    """Build a MemoryConfig for the current backend; keyword sections override defaults."""
    extra: dict[str, Any] = {}
    if backend_name == "neo4j":
        extra["neo4j"] = {"uri": request.getfixturevalue("neo4j_clean_uri")}

    def make(**overrides: Any) -> MemoryConfig:
        data: dict[str, Any] = {"backend": backend_name, "faiss": {"path": str(tmp_path / "memory")}}
        data.update(extra)
        for key, value in overrides.items():
            if isinstance(value, dict) and isinstance(data.get(key), dict):
                data[key] = {**data[key], **value}
            else:
                data[key] = value
        return MemoryConfig(**data)

    return make


@pytest.fixture
def memory_config(memory_config_factory: Callable[..., MemoryConfig]) -> MemoryConfig:
    return memory_config_factory()


@pytest.fixture
async def make_client(
    memory_config_factory: Callable[..., MemoryConfig], embedder: Embedder
) -> AsyncIterator[Callable[..., MemorySystemClient]]:
    """Factory of opened-on-use clients (fresh session id each), all closed at teardown."""
    made: list[MemorySystemClient] = []

    def make(session_id: str | None = None, **overrides: Any) -> MemorySystemClient:
        client = MemorySystemClient(
            memory_config_factory(**overrides),
            session_id=session_id or f"test-{uuid4().hex[:10]}",
            embedder=embedder,
        )
        made.append(client)
        return client

    yield make
    for client in made:
        await client.close()


@pytest.fixture
async def client(make_client: Callable[..., MemorySystemClient]) -> MemorySystemClient:
    return make_client()
