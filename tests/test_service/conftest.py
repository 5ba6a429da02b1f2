"""Fixtures of the memory service tests: the app over the real embedded store (SQLite +
FAISS) and the real embedding model, loaded once; in process (`service`, a TestClient) or
as a real uvicorn server (`http_service`, with `http_client` for its MCP endpoint)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_settings() -> dict[str, Any]:
    """Extra `memory` settings of `http_service` (a test module may override it)."""
    return {}


@pytest.fixture
def http_service(tmp_path: Path, embedder: Embedder, http_settings: dict[str, Any]) -> Iterator[str]:
    """A real uvicorn server on 127.0.0.1 (in a thread); yields its base URL."""
    settings = dict(http_settings)
    config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path / "http-store")},
                          service={"log_requests": False, **settings.pop("service", {})},
                          **settings)
    with serving(create_app(config, keys=KEYS, embedder=embedder)) as url:
        yield url


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """`app` served by a real uvicorn server on 127.0.0.1 (in a thread); yields its URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the service did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


def http_client(base: str, key: str | None) -> Any:
    """An MCP client of the service at `base` (streamable HTTP), with `key` if given."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"X-API-Key": key} if key else {}
    return Client(streamable_http_client(f"{base}/mcp", http_client=httpx2.AsyncClient(
        headers=headers, timeout=60)))


def data(result: Any) -> Any:
    """The structured answer of an MCP tool call that must have succeeded."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)
