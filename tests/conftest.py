"""Suite-wide fixtures. The embedding model is always the offline one shipped in a wheel."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hydra_config import compose_config
from omegaconf import DictConfig

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture
def make_config(tmp_path: Path) -> Callable[..., DictConfig]:
    """The composed config with outputs in tmp_path and memory OFF (the Foundation);
    tests/test_integration overrides it with memory on."""

    def make(*overrides: str) -> DictConfig:
        return compose_config(
            f"outputs_dir={tmp_path / 'outputs'}", "memory.enabled=false", *overrides
        )

    return make


# --- Neo4j: one real server per test session (tests/neo4j_support.py), or NEO4J_URI --------
@pytest.fixture(scope="session")
def neo4j_uri() -> Iterator[str]:
    """Bolt URI of a real Neo4j: NEO4J_URI if set (credentials from NEO4J_USERNAME /
    NEO4J_PASSWORD), else an embedded Neo4j 5.26 this fixture builds, starts and stops."""
    external = os.environ.get("NEO4J_URI")
    if external:
        yield external
        return
    from neo4j_support import Neo4jTestServer

    server = Neo4jTestServer()
    try:
        server.start()
        yield server.uri
    finally:
        server.cleanup()


@pytest.fixture
def neo4j_clean_uri(neo4j_uri: str) -> str:
    """`neo4j_uri` with an empty database (every node and relationship deleted first)."""
    from neo4j_support import clear_database

    clear_database(neo4j_uri)
    return neo4j_uri
