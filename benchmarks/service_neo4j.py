"""`bench_service --backend neo4j`: the serve arguments for a Neo4j (benchmarks/neo4j_server.py)
and the count of acknowledged memories missing from the database after the run."""

from __future__ import annotations

from pathlib import Path

from benchmarks.neo4j_server import neo4j_auth


def serve_args(uri: str, workers: int, spill: Path) -> list[str]:
    return ["memory=neo4j", f"memory.neo4j.uri={uri}", f"memory.service.workers={workers}",
            f"memory.storage.spill_dir={spill}"]


def missing_in_neo4j(uri: str, ids: list[str]) -> int:
    from neo4j import GraphDatabase

    wanted = sorted(set(ids))
    with GraphDatabase.driver(uri, auth=neo4j_auth()) as driver:
        records, _, _ = driver.execute_query(
            "UNWIND $ids AS id MATCH (m:Memory {id: id}) RETURN count(m) AS n", ids=wanted)
    return len(wanted) - records[0]["n"]
