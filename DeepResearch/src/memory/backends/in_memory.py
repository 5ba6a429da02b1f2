"""`in_memory`: records in a dict, vectors in a numpy matrix, text in an in-memory SQLite FTS5
table (the embedded backend's lexical search, on the same tokens). For tests and throw-away
runs; nothing survives the process."""

from __future__ import annotations

import copy
import sqlite3
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from DeepResearch.src.memory.backends.base import (
    DEFAULT_NAMESPACE,
    AccessStats,
    BackendHealth,
    Candidate,
    MemoryBackend,
    MemoryFilter,
    MemoryRecord,
    RelatedRecord,
    indexed_text,
    walk_namespace,
)
from DeepResearch.src.memory.backends.lexical import TermRows, match_expression
from DeepResearch.src.memory.backends.record import metadata_patch, patched, record_matches
from DeepResearch.src.memory.config_base import LEXICAL_MAX_POSTINGS
from DeepResearch.src.memory.errors import MemoryBackendError
from DeepResearch.src.memory.facts.forgetting import Forgotten

if TYPE_CHECKING:
    from DeepResearch.src.memory.backends.in_memory_facts import InMemoryFactStore

Key = tuple[str, str]  # (namespace, id): ids are scoped by namespace

class InMemoryBackend(MemoryBackend):
    name: ClassVar[str] = "in_memory"

    def __init__(self, dimension: int, lexical_max_postings: int = LEXICAL_MAX_POSTINGS) -> None:
        self.dimension = dimension
        self.lexical_max_postings = lexical_max_postings
        self._records: dict[Key, MemoryRecord] = {}  # by (namespace, id)
        self._fts = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._fts.execute("CREATE VIRTUAL TABLE fts USING fts5 (tokens)")
        self._fts.execute("CREATE VIRTUAL TABLE fts_vocab USING fts5vocab (fts, 'row')")
        self._term_rows = TermRows()
        self._removed = 0  # FTS rows deleted: with _next_row, the table's changes
        self._rows: dict[Key, int] = {}  # record key -> its FTS5 rowid
        self._ids: dict[int, Key] = {}
        self._next_row = 1
        self._matrix: np.ndarray | None = None  # rebuilt lazily after writes
        self._matrix_ids: list[Key] = []
        self._open = False
        self._fact_store: InMemoryFactStore | None = None
        self._access: dict[Key, AccessStats] = {}  # kept when a record is replaced
        self._markers: dict[tuple[str, str], float] = {}  # (namespace, name) -> value

    def fact_store(self) -> InMemoryFactStore:
        if self._fact_store is None:
            from DeepResearch.src.memory.backends.in_memory_facts import InMemoryFactStore

            self._fact_store = InMemoryFactStore(self)
        return self._fact_store

    async def open(self) -> None:
        self._open = True

    async def close(self) -> None:
        self._open = False

    def check_open(self) -> None:
        if not self._open:
            raise MemoryBackendError("in_memory backend is not open (call open() first)")

    async def upsert(self, records: Sequence[MemoryRecord]) -> None:
        """All of `records` or none: every one is checked before anything is written."""
        self.check_open()
        for record in records:
            if record.vector is None or record.vector.shape != (self.dimension,):
                shape = None if record.vector is None else record.vector.shape
                raise MemoryBackendError(
                    f"record {record.id!r}: vector shape {shape}, expected ({self.dimension},)"
                )
        for record in records:
            stored = copy.deepcopy(record)
            stored.vector = np.asarray(record.vector, dtype=np.float32).copy()
            key = (record.namespace, record.id)
            self._records[key] = stored
            self._unindex(key)
            self._rows[key], self._ids[self._next_row] = self._next_row, key
            self._fts.execute("INSERT INTO fts (rowid, tokens) VALUES (?, ?)",
                              (self._next_row, indexed_text(record)))
            self._next_row += 1
        self._matrix = None

    async def get(
        self, ids: Sequence[str], namespace: str = DEFAULT_NAMESPACE
    ) -> list[MemoryRecord]:
        self.check_open()
        keys = [(namespace, i) for i in ids]
        return [copy.deepcopy(self._records[k]) for k in keys if k in self._records]

    async def delete(self, flt: MemoryFilter) -> int:
        """The matching records, and what forgetting them does to the facts (the plan of
        facts/forgetting.py applied to the fact store's dicts: nothing in between can fail)."""
        self.check_open()
        doomed = [k for k, r in self._records.items() if record_matches(r, flt)]
        if doomed and self._fact_store is not None:  # the facts built on them (forgetting.py)
            cascaded = self._fact_store.forget([
                Forgotten.of(r.id, r.namespace, r.memory_type, r.metadata.get("message_id"))
                for r in map(self._records.__getitem__, doomed)])
            doomed += [i for i in cascaded if i in self._records]
        for key in doomed:
            del self._records[key]
            self._access.pop(key, None)
            self._unindex(key)
        if doomed:
            self._matrix = None
        return len(doomed)

    async def move(
        self, ids: Sequence[str], from_namespace: str, to_namespace: str,
        metadata: Mapping[str, Any | None] | None = None,
    ) -> int:
        """Re-keys the records (their FTS rows follow the key) and patches their metadata;
        no fact is touched. The patch is checked first: nothing in between can fail."""
        self.check_open()
        patch = metadata_patch(metadata)
        moving = [k for k in dict.fromkeys((from_namespace, i) for i in ids) if k in self._records]
        if patch:
            for key in moving:
                record = self._records[key]
                record.metadata = patched(record.metadata, patch)
        if from_namespace == to_namespace:
            return len(moving)
        for key in moving:
            target = (to_namespace, key[1])
            self._records.pop(target, None)
            self._unindex(target)
            self._access.pop(target, None)
            if key in self._access:
                self._access[target] = self._access.pop(key)
            record = self._records.pop(key)
            record.namespace = to_namespace
            self._records[target] = record
            row = self._rows.pop(key)
            self._rows[target], self._ids[row] = row, target
        if moving:
            self._matrix = None
        return len(moving)

    async def record_access(self, ids: Sequence[str], namespace: str, at: float) -> None:
        self.check_open()
        for record_id in ids:
            key = (namespace, record_id)
            if key in self._records:
                old = self._access.get(key, AccessStats())
                last = at if old.last_accessed is None else max(old.last_accessed, at)
                self._access[key] = AccessStats(old.count + 1, last)

    async def access_stats(self, ids: Sequence[str], namespace: str) -> dict[str, AccessStats]:
        self.check_open()
        return {i: self._access.get((namespace, i), AccessStats()) for i in ids
                if (namespace, i) in self._records}

    def _unindex(self, key: Key) -> None:
        row = self._rows.pop(key, None)
        if row is not None:
            self._fts.execute("DELETE FROM fts WHERE rowid = ?", (row,))
            del self._ids[row]
            self._removed += 1

    def _vectors(self) -> tuple[np.ndarray, list[str]]:
        if self._matrix is None:
            self._matrix_ids = list(self._records)
            if self._matrix_ids:
                self._matrix = np.stack([self._records[i].vector for i in self._matrix_ids])
            else:
                self._matrix = np.zeros((0, self.dimension), dtype=np.float32)
        return self._matrix, self._matrix_ids

    async def vector_search(
        self, vector: np.ndarray, k: int, flt: MemoryFilter
    ) -> list[Candidate]:
        self.check_open()
        matrix, ids = self._vectors()
        if not ids or k <= 0:
            return []
        scores = matrix @ np.asarray(vector, dtype=np.float32)
        order = np.argsort(-scores, kind="stable")
        out: list[Candidate] = []
        for idx in order:
            record = self._records[ids[idx]]
            if record_matches(record, flt):
                out.append(Candidate(copy.deepcopy(record), float(scores[idx])))
                if len(out) == k:
                    break
        return out

    async def text_search(self, query: str, k: int, flt: MemoryFilter) -> list[Candidate]:
        self.check_open()
        if k <= 0:
            return []
        match = match_expression(self._fts, query, len(self._rows), self.lexical_max_postings,
                                 self._term_rows, self._next_row + self._removed)
        if match is None:
            return []
        out: list[Candidate] = []
        for row, score in self._fts.execute(
            "SELECT rowid, -bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts)", (match,)
        ):
            record = self._records[self._ids[row]]
            if record_matches(record, flt):
                out.append(Candidate(copy.deepcopy(record), float(score)))
                if len(out) == k:
                    break
        return out

    async def scan(
        self, flt: MemoryFilter, limit: int | None = None, offset: int = 0
    ) -> list[MemoryRecord]:
        self.check_open()
        rows = sorted(
            (r for r in self._records.values() if record_matches(r, flt)),
            key=lambda r: (r.created_at, r.id),
        )
        end = None if limit is None else offset + limit
        return [copy.deepcopy(r) for r in rows[offset:end]]

    async def count(self, flt: MemoryFilter) -> int:
        self.check_open()
        return sum(1 for r in self._records.values() if record_matches(r, flt))

    async def related_many(
        self, record_ids: Sequence[str], relation_types: Sequence[str] | None, depth: int,
        flt: MemoryFilter | None = None,
    ) -> dict[str, list[RelatedRecord]]:
        self.check_open()
        wanted = None if relation_types is None else set(relation_types)
        namespace = walk_namespace(flt)  # relations name ids of their record's namespace
        records = {r.id: r for r in self._records.values() if r.namespace == namespace}
        neighbours: dict[str, list[tuple[str, str]]] = {}
        for record in records.values():
            for rel_type, target in record.relations:
                if wanted is None or rel_type in wanted:
                    neighbours.setdefault(record.id, []).append((rel_type, target))
                    neighbours.setdefault(target, []).append((rel_type, record.id))
        out: dict[str, list[RelatedRecord]] = {}
        for start in dict.fromkeys(record_ids):
            seen, frontier, found = {start}, [start], []
            for level in range(1, depth + 1):
                next_frontier = []
                for node in frontier:
                    for rel_type, other in neighbours.get(node, []):
                        if other in seen or other not in records:
                            continue
                        seen.add(other)
                        next_frontier.append(other)
                        record = records[other]
                        if flt is None or record_matches(record, flt):  # walked through either way
                            found.append(RelatedRecord(copy.deepcopy(record), rel_type, level))
                frontier = next_frontier
            if found:
                out[start] = found
        return out

    async def health(self) -> BackendHealth:
        return BackendHealth(
            ok=self._open, backend=self.name, detail=f"{len(self._records)} records in memory"
        )

    async def get_marker(self, namespace: str, name: str) -> float | None:
        self.check_open()
        return self._markers.get((namespace, name))

    async def set_marker(self, namespace: str, name: str, value: float) -> None:
        self.check_open()
        self._markers[(namespace, name)] = float(value)
