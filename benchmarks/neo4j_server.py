"""The Neo4j a benchmark runs against: NEO4J_URI (with NEO4J_USERNAME / NEO4J_PASSWORD) when
set, else the test suite's embedded Neo4j 5.26 (tests/neo4j_support.py), started here and
stopped and deleted afterwards."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def neo4j_auth() -> tuple[str, str] | None:
    password = os.environ.get("NEO4J_PASSWORD")
    return (os.environ.get("NEO4J_USERNAME", "neo4j"), password) if password else None


@contextmanager
def neo4j_server() -> Iterator[str]:
    """The Bolt URI of a running Neo4j."""
    if os.environ.get("NEO4J_URI"):
        yield os.environ["NEO4J_URI"]
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from neo4j_support import Neo4jTestServer

    with Neo4jTestServer() as server:
        print(f"  Neo4j test server at {server.uri}", flush=True)
        yield server.uri
