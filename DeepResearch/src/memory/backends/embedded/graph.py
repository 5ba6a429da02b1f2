"""Relation walks over the SQLite relations table (the embedded backend's graph queries)."""

from __future__ import annotations

from collections.abc import Sequence

from DeepResearch.src.memory.backends.base import MemoryFilter, RelatedRecord, walk_namespace
from DeepResearch.src.memory.backends.embedded.records import Records

CHUNK = 500  # nodes per edges query (SQLite bounds the number of parameters)
Adjacency = dict[str, list[tuple[str, str]]]  # node -> (relation type, neighbour), sorted


def walk(
    db: Records,
    record_ids: Sequence[str],
    relation_types: Sequence[str] | None,
    depth: int,
    flt: MemoryFilter | None = None,
) -> dict[str, list[RelatedRecord]]:
    """Breadth-first from every start at once over the relation types (None: all), both
    directions, up to `depth` hops: for each start the records found, nearest first, the
    start excluded; starts with nothing found are left out.

    Within one hop the edges are taken outgoing ones first, then by node id, relation type
    and neighbour id; a record's relation is the type of the first edge that reached it.
    One edges query per hop for all starts together, then one read of the records found,
    filtered in SQL by `flt`: the walk passes through records the filter refuses, and those
    are never decoded."""
    starts = list(dict.fromkeys(record_ids))
    namespace = walk_namespace(flt)
    outgoing, incoming = _adjacency(db, namespace, starts, relation_types, depth)
    walks: dict[str, list[tuple[str, str, int]]] = {}
    for start in starts:
        seen, frontier, found = {start}, [start], []
        for level in range(1, depth + 1):
            reached = []
            for adjacent in (outgoing, incoming):
                for node in frontier:
                    for rel_type, other in adjacent.get(node, ()):
                        if other not in seen:
                            seen.add(other)
                            reached.append(other)
                            found.append((other, rel_type, level))
            frontier = sorted(reached)
        if found:
            walks[start] = found
    records = {
        r.id: r for r in db.get(
            sorted({o for found in walks.values() for o, _, _ in found}), namespace, flt)
    }
    out: dict[str, list[RelatedRecord]] = {}
    for start, found in walks.items():
        kept = [RelatedRecord(records[o], rel, level) for o, rel, level in found if o in records]
        if kept:
            out[start] = kept
    return out


def _adjacency(
    db: Records, namespace: str, starts: list[str], relation_types: Sequence[str] | None,
    depth: int,
) -> tuple[Adjacency, Adjacency]:
    """The outgoing and the incoming edges of every node of `namespace` within depth - 1
    hops of a start: one query per hop for all nodes."""
    types = None if relation_types is None else list(relation_types)
    outgoing: Adjacency = {}
    incoming: Adjacency = {}
    known: set[str] = set()
    frontier = set(starts)
    for _ in range(depth):
        todo = sorted(frontier - known)
        if not todo:
            break
        known.update(todo)
        frontier = set()
        for start in range(0, len(todo), CHUNK):
            for adjacent, rows in zip(
                (outgoing, incoming), db.edges(namespace, todo[start : start + CHUNK], types), strict=True
            ):
                for node, rel_type, other in rows:
                    adjacent.setdefault(node, []).append((rel_type, other))
                    frontier.add(other)
    for edges in (*outgoing.values(), *incoming.values()):
        edges.sort()
    return outgoing, incoming
