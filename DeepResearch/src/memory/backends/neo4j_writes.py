"""The statements that write a batch of memories, shared by the memory backend's `upsert`
(neo4j_store.py) and the fact store's `put` (neo4j_facts.py), which runs them in the same
transaction as its entities and facts.

A batch is: promote placeholders of these ids, claim the ids (statement CLAIM_STATEMENT: a
row back means an id exists in another namespace, see `namespace_conflict`), drop their old
relation edges, write the nodes, then the relation edges. SIMILAR_TO edges are linked after
the commit (`similar_to_statement`): the vector index does not see writes of its own
transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from DeepResearch.src.memory.backends.base import MemoryRecord
from DeepResearch.src.memory.backends.neo4j_cypher import ALL_REL_TYPES, Queries, rel_type
from DeepResearch.src.memory.backends.neo4j_records import record_row
from DeepResearch.src.memory.errors import MemoryBackendError

Statement = tuple[str, dict[str, Any]]
CLAIM_STATEMENT = 1  # index of the id claim among `memory_statements`
SIMILAR_TO_NEIGHBOURS = 5


def memory_rows(records: Sequence[MemoryRecord], dimension: int) -> list[dict[str, Any]]:
    """The rows of `records`, every one checked before any write (MemoryInputError naming
    the record); MemoryBackendError when one id is given in two namespaces."""
    rows = [record_row(r, dimension) for r in records]
    owner: dict[str, str] = {}
    for row in rows:
        if owner.setdefault(row["id"], row["namespace"]) != row["namespace"]:
            raise MemoryBackendError(
                f"record id {row['id']!r} is given in namespaces {owner[row['id']]!r} and "
                f"{row['namespace']!r} in one upsert; an id belongs to one namespace"
            )
    return rows


def memory_statements(
    q: Queries, records: Sequence[MemoryRecord], rows: list[dict[str, Any]]
) -> list[Statement]:
    """The statements writing one batch (rows from `memory_rows`), in transaction order."""
    ids = [row["id"] for row in rows]
    claims = [{"id": row["id"], "namespace": row["namespace"]} for row in rows]
    statements: list[Statement] = [
        (q.promote_pending, {"ids": ids}),
        (q.claim_ids, {"rows": claims}),  # CLAIM_STATEMENT: see namespace_conflict
        (q.clear_outgoing, {"ids": ids, "types": ALL_REL_TYPES}),
        (q.write_nodes, {"rows": rows}),
    ]
    pairs: dict[str, list[dict[str, str]]] = {}
    for record in records:
        for relation, target in record.relations:
            pairs.setdefault(rel_type(relation), []).append({"src": record.id, "dst": target})
    if pairs:
        targets = sorted({p["dst"] for group in pairs.values() for p in group})
        statements.append((q.ensure_targets, {"ids": targets}))
        for rel, group in pairs.items():
            statements.append((q.write_edges(rel), {"pairs": group}))
    return statements


def namespace_conflict(found: list[Any]) -> MemoryBackendError | None:
    """The error for the records the claim statement returned (None: no conflict)."""
    if not found:
        return None
    row = found[0]
    return MemoryBackendError(
        f"record id {row['id']!r} already exists in namespace {row['namespace']!r}; it "
        f"cannot be written to namespace {row['wanted']!r} (a namespace never replaces "
        "another's memories): nothing of this batch was written. Use another id"
    )


def index_score(similarity: str, cosine: float) -> float:
    """The vector index's score for a cosine similarity between unit vectors."""
    if similarity == "cosine":
        return (1.0 + cosine) / 2.0
    return 1.0 / (1.0 + (2.0 - 2.0 * cosine))  # euclidean: 1 / (1 + d^2)


def similar_to_statement(
    q: Queries, rows: list[dict[str, Any]], threshold: float | None, similarity: str
) -> Statement | None:
    """The post-commit statement linking SIMILAR_TO edges (None: not configured / nothing)."""
    with_vector = [{"id": r["id"], "vector": r["vector"]} for r in rows if r["vector"]]
    if threshold is None or not with_vector:
        return None
    params = {
        "rows": with_vector,
        "index": q.vector_index,
        "k": SIMILAR_TO_NEIGHBOURS + 1,
        "min_score": index_score(similarity, threshold),
    }
    return (q.similar_to, params)
