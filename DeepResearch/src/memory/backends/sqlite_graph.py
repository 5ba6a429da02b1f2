"""Relation walks over the SQLite relations table (the faiss backend's graph queries)."""

from __future__ import annotations

from collections.abc import Sequence

from DeepResearch.src.memory.backends.base import FOLLOWS, RelatedRecord
from DeepResearch.src.memory.backends.sqlite_records import SQLiteRecords


def walk_related(
    db: SQLiteRecords, record_id: str, relation_types: Sequence[str] | None, depth: int
) -> list[RelatedRecord]:
    """Breadth-first over the relation types (both directions), nearest first."""
    seen = {record_id}
    frontier = [record_id]
    found: list[tuple[str, str, int]] = []
    for level in range(1, depth + 1):
        if not frontier:
            break
        next_frontier = []
        for _, rel_type, other in db.edges(frontier, relation_types):
            if other not in seen:
                seen.add(other)
                next_frontier.append(other)
                found.append((other, rel_type, level))
        frontier = next_frontier
    records = {r.id: r for r in db.get([other for other, _, _ in found])}
    return [
        RelatedRecord(records[other], rel_type, level)
        for other, rel_type, level in found
        if other in records
    ]


def walk_session_neighbours(
    db: SQLiteRecords, record_ids: list[str], radius: int
) -> dict[str, list[RelatedRecord]]:
    """One edges query per step for all starts together, one get for every record."""
    adjacent: dict[str, set[str]] = {}
    known: set[str] = set()
    frontier = set(record_ids)
    for _ in range(radius):
        todo = sorted(frontier - known)
        if not todo:
            break
        known.update(todo)
        frontier = set()
        for start in range(0, len(todo), 500):
            for node, _, other in db.edges(todo[start : start + 500], [FOLLOWS]):
                adjacent.setdefault(node, set()).add(other)
                frontier.add(other)
    walks: dict[str, list[tuple[str, int]]] = {}
    for start in dict.fromkeys(record_ids):
        seen, level_nodes, found = {start}, [start], []
        for level in range(1, radius + 1):
            level_nodes = sorted(
                {o for node in level_nodes for o in adjacent.get(node, ()) if o not in seen}
            )
            seen.update(level_nodes)
            found += [(o, level) for o in level_nodes]
        if found:
            walks[start] = found
    records = {r.id: r for r in db.get(sorted({o for f in walks.values() for o, _ in f}))}
    return {
        start: [RelatedRecord(records[o], FOLLOWS, level) for o, level in found if o in records]
        for start, found in walks.items()
    }
