"""The statements that write a batch of memories, shared by the memory backend's `upsert`
(neo4j_store.py) and the fact store's `put` (neo4j_facts.py), which runs them in the same
transaction as its entities and facts.

A batch is: promote placeholders of these (namespace, id)s, drop their old relation edges,
write the nodes, then the relation edges (to ids of the record's own namespace). SIMILAR_TO edges are linked after
the commit (`similar_to_statement`): the vector index does not see writes of its own
transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from DeepResearch.src.memory.backends.base import MemoryRecord
from DeepResearch.src.memory.backends.neo4j_cypher import ALL_REL_TYPES, Queries, rel_type
from DeepResearch.src.memory.backends.neo4j_records import record_row

Statement = tuple[str, dict[str, Any]]
SIMILAR_TO_NEIGHBOURS = 5


def memory_rows(records: Sequence[MemoryRecord], dimension: int) -> list[dict[str, Any]]:
    """The rows of `records`, every one checked before any write (MemoryInputError naming
    the record)."""
    return [record_row(r, dimension) for r in records]


def memory_statements(
    q: Queries, records: Sequence[MemoryRecord], rows: list[dict[str, Any]]
) -> list[Statement]:
    """The statements writing one batch (rows from `memory_rows`), in transaction order."""
    keys = [{"namespace": row["namespace"], "id": row["id"]} for row in rows]
    statements: list[Statement] = [
        (q.promote_pending, {"keys": keys}),
        (q.clear_outgoing, {"keys": keys, "types": ALL_REL_TYPES}),
        (q.write_nodes, {"rows": rows}),
    ]
    pairs: dict[str, list[dict[str, str]]] = {}
    for record in records:
        for relation, target in record.relations:
            pairs.setdefault(rel_type(relation), []).append(
                {"namespace": record.namespace, "src": record.id, "dst": target})
    if pairs:
        targets = sorted({(p["namespace"], p["dst"]) for group in pairs.values() for p in group})
        statements.append((q.ensure_targets, {"keys": [
            {"namespace": ns, "id": i} for ns, i in targets]}))
        for rel, group in pairs.items():
            statements.append((q.write_edges(rel), {"pairs": group}))
    return statements


def index_score(similarity: str, cosine: float) -> float:
    """The vector index's score for a cosine similarity between unit vectors."""
    if similarity == "cosine":
        return (1.0 + cosine) / 2.0
    return 1.0 / (1.0 + (2.0 - 2.0 * cosine))  # euclidean: 1 / (1 + d^2)


def similar_to_statement(
    q: Queries, rows: list[dict[str, Any]], threshold: float | None, similarity: str
) -> Statement | None:
    """The post-commit statement linking SIMILAR_TO edges (None: not configured / nothing)."""
    with_vector = [{"namespace": r["namespace"], "id": r["id"], "vector": r["vector"]}
                   for r in rows if r["vector"]]
    if threshold is None or not with_vector:
        return None
    params = {
        "rows": with_vector,
        "index": q.vector_index,
        "k": SIMILAR_TO_NEIGHBOURS + 1,
        "min_score": index_score(similarity, threshold),
    }
    return (q.similar_to, params)
