"""`bench_service --backend neo4j`: the server (the test suite's embedded Neo4j 5.26, started
here, unless NEO4J_URI names one), the serve arguments for it, and the count of acknowledged
memories missing from the database after the run."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def neo4j_server() -> Iterator[str]:
    """The Bolt URI of a running Neo4j, stopped and deleted afterwards if started here."""
    if os.environ.get("NEO4J_URI"):
        yield os.environ["NEO4J_URI"]
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from neo4j_support import Neo4jTestServer

    with Neo4jTestServer() as server:
        print(f"  Neo4j test server at {server.uri}", flush=True)
        yield server.uri


def serve_args(uri: str, workers: int, spill: Path) -> list[str]:
    return ["memory=neo4j", f"memory.neo4j.uri={uri}", f"memory.service.workers={workers}",
            f"memory.storage.spill_dir={spill}"]


def missing_in_neo4j(uri: str, ids: list[str]) -> int:
    from neo4j import GraphDatabase

    password = os.environ.get("NEO4J_PASSWORD")
    auth = (os.environ.get("NEO4J_USERNAME", "neo4j"), password) if password else None
    wanted = sorted(set(ids))
    with GraphDatabase.driver(uri, auth=auth) as driver:
        records, _, _ = driver.execute_query(
            "UNWIND $ids AS id MATCH (m:Memory {id: id}) RETURN count(m) AS n", ids=wanted)
    return len(wanted) - records[0]["n"]
