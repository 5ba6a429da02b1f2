"""Fixtures of the memory service tests: the app over the real embedded store (SQLite +
FAISS) and the real embedding model, loaded once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.embeddings import Embedder, get_embedder
from DeepResearch.src.memory.service import create_app

ALICE = "alice-key-0123456789abcdef"
BOB = "bob-key-0123456789abcdef00"
KEYS = {ALICE: "alice", BOB: "bob"}


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    model = get_embedder()
    model.embed(["warm up"])
    return model


@pytest.fixture
def make_service(tmp_path: Path, embedder: Embedder) -> Iterator[Callable[..., TestClient]]:
    """make_service(keys=KEYS, **service_settings) -> a started TestClient."""
    started: list[TestClient] = []

    def make(keys: dict[str, str] | None = None, path: Path | None = None,
             **service: Any) -> TestClient:
        config = MemoryConfig(backend="faiss", faiss={"path": str(path or tmp_path / "store")},
                              service={"log_requests": False, **service})
        client = TestClient(create_app(config, keys=KEYS if keys is None else keys,
                                       embedder=embedder))
        client.__enter__()
        started.append(client)
        return client

    yield make
    for client in started:
        client.__exit__(None, None, None)


@pytest.fixture
def service(make_service: Callable[..., TestClient]) -> TestClient:
    return make_service()


def h(key: str) -> dict[str, str]:
    return {"X-API-Key": key}
