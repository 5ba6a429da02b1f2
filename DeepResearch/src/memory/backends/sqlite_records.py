"""The SQLite half of the faiss backend: the source of truth for records AND their vectors.

One WAL-mode database file. Every write is one transaction committed before the call
returns (synchronous=FULL by default: durable against power loss; NORMAL is durable against
a crash of the process, which is what kill -9 tests). Filters, TTL and metadata conditions are
SQL (json_extract). The FTS5 table keeps each row's `text.token_string`: the durable source
the in-process BM25 index (lexical.py) is built and caught up from. `seq` (AUTOINCREMENT, never reused) is the id FAISS knows a row
by: a replaced record gets a new seq, so "rows with seq > watermark" is what an index misses.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from DeepResearch.src.memory.backends.base import CopyKey, MemoryFilter, MemoryRecord
from DeepResearch.src.memory.backends.sqlite_filters import filter_sql
from DeepResearch.src.memory.backends.sqlite_row_cache import Relations, Row, RowCache
from DeepResearch.src.memory.backends.sqlite_schema import COLUMNS, SCHEMA
from DeepResearch.src.memory.errors import MemoryBackendError
from DeepResearch.src.memory.text import token_string

# Reads of the database file's first MMAP_BYTES go through a memory map: a process's first
# read of a page costs no system call and no copy. A `deepresearch` run is a fresh process:
# its recalls' own work, first executions only, 55 -> 44 ms per compound run (medians of 6
# alternating CLI runs on a ~1k-memory store). 64 MiB holds a store of ~25k memories whole;
# mapped pages are file cache, shared and reclaimable, reported apart from private memory by
# bench_memory.
MMAP_BYTES = 64 * 1024 * 1024


class SQLiteRecords:
    """Thread-safe (one lock) access to the records database of one memory folder."""

    def __init__(self, path: Path, *, synchronous: str = "full") -> None:
        self.path = path
        self._lock = threading.RLock()
        self._cache = RowCache()  # rows read before, by seq (sqlite_row_cache.py)
        try:
            self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA synchronous={'FULL' if synchronous == 'full' else 'NORMAL'}")
            self._conn.execute("PRAGMA foreign_keys=OFF")
            self._conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
            self._conn.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise MemoryBackendError(f"cannot open memory database {path}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- meta ---------------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        with self._lock:
            return dict(self._conn.execute("SELECT key, value FROM meta").fetchall())

    def set_meta(self, values: dict[str, str]) -> None:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", values.items()
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    # -- writes -------------------------------------------------------------------------
    def upsert(self, records: Sequence[MemoryRecord]) -> tuple[list[int], list[int]]:
        """Insert/replace in one committed transaction; returns (new seqs, replaced seqs)."""
        added: list[int] = []
        removed: list[int] = []
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for r in records:
                    old = self._conn.execute(
                        "DELETE FROM records WHERE id = ? RETURNING seq", (r.id,)
                    ).fetchall()
                    for (seq,) in old:
                        removed.append(seq)
                        self._conn.execute("DELETE FROM fts WHERE rowid = ?", (seq,))
                    cur = self._conn.execute(
                        f"INSERT INTO records ({COLUMNS.split(', ', 1)[1]}) "
                        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        (
                            r.id, r.session_id, r.memory_type, r.agent_type, r.content,
                            r.created_at, r.importance, r.temporal_weight, r.expires_at,
                            r.content_codec, r.content_blob, json.dumps(r.metadata),
                            np.ascontiguousarray(r.vector, dtype=np.float32).tobytes(),
                        ),
                    )
                    seq = int(cur.lastrowid)
                    added.append(seq)
                    self._conn.execute(
                        "INSERT INTO fts (rowid, tokens) VALUES (?, ?)",
                        (seq, token_string(r.content)),
                    )
                    self._conn.execute("DELETE FROM relations WHERE src = ?", (r.id,))
                    self._conn.executemany(
                        "INSERT OR IGNORE INTO relations (src, type, dst, pos) VALUES (?, ?, ?, ?)",
                        [(r.id, t, dst, pos) for pos, (t, dst) in enumerate(r.relations)],
                    )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._cache.drop(removed)
        return added, removed

    def delete(self, flt: MemoryFilter) -> list[int]:
        """Delete matching records (with their FTS rows and outgoing relations); their seqs."""
        where, params = filter_sql(flt)
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                rows = self._conn.execute(
                    f"DELETE FROM records WHERE {where} RETURNING seq, id", params
                ).fetchall()
                self._conn.executemany("DELETE FROM fts WHERE rowid = ?", [(s,) for s, _ in rows])
                self._conn.executemany(
                    "DELETE FROM relations WHERE src = ?", [(i,) for _, i in rows]
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._cache.drop(s for s, _ in rows)
        return [s for s, _ in rows]

    def set_vectors(self, items: Sequence[tuple[int, np.ndarray]]) -> None:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "UPDATE records SET vector = ? WHERE seq = ?",
                    [(np.ascontiguousarray(v, dtype=np.float32).tobytes(), s) for s, v in items],
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._cache.drop(s for s, _ in items)  # the one change to an existing seq's row

    # -- reads --------------------------------------------------------------------------
    def _sync_cache(self) -> None:
        """Call holding the lock, before a read that uses the row cache."""
        (version,) = self._conn.execute("PRAGMA data_version").fetchone()
        self._cache.valid_for(version)

    def _fetch(self, sql: str, params: Sequence[Any]) -> list[tuple[Row, Relations]]:
        """Rows of a `SELECT {COLUMNS} ...` with their relations, kept in the row cache.
        Call holding the lock, after _sync_cache."""
        rows = self._conn.execute(sql, params).fetchall()
        relations: dict[str, list[tuple[str, str]]] = {}
        ids = [row[1] for row in rows]
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            for src, rel_type, dst in self._conn.execute(
                f"SELECT src, type, dst FROM relations WHERE src IN ({','.join('?' * len(chunk))})"
                " ORDER BY src, pos",
                chunk,
            ):
                relations.setdefault(src, []).append((rel_type, dst))
        entries = [(row, tuple(relations.get(row[1], ()))) for row in rows]
        self._cache.put([row for row, _ in entries], [rels for _, rels in entries])
        return entries

    def _records(self, sql: str, params: Sequence[Any]) -> list[tuple[int, MemoryRecord]]:
        with self._lock:
            self._sync_cache()
            entries = self._fetch(sql, params)
        return [(row[0], _to_record(row, rels)) for row, rels in entries]

    def _by_passing_seqs(self, seqs: Sequence[int]) -> dict[int, MemoryRecord]:
        """Records of `seqs`, which exist and passed the read's filter in SQL: from the row
        cache, the others read (one query). Call holding the lock, after _sync_cache."""
        entries: dict[int, tuple[Row, Relations]] = {}
        missing = []
        for seq in seqs:
            entry = self._cache.get(seq)
            if entry is None:
                missing.append(seq)
            else:
                entries[seq] = entry
        for start in range(0, len(missing), 500):
            chunk = missing[start : start + 500]
            for row, rels in self._fetch(
                f"SELECT {COLUMNS} FROM records WHERE seq IN ({','.join('?' * len(chunk))})", chunk
            ):
                entries[row[0]] = (row, rels)
        return {seq: _to_record(*entries[seq]) for seq in seqs if seq in entries}

    def get(self, ids: Sequence[str], flt: MemoryFilter | None = None) -> list[MemoryRecord]:
        """Records by id, in the order asked, missing ids left out; with `flt` only those
        matching it (filtered in SQL: the others are never decoded)."""
        where, params = filter_sql(flt, use_indexes=False) if flt is not None else ("1", [])
        found: dict[str, MemoryRecord] = {}
        with self._lock:
            self._sync_cache()
            for start in range(0, len(ids), 500):
                chunk = list(ids[start : start + 500])
                seq_of = dict(self._conn.execute(
                    f"SELECT seq, id FROM records WHERE id IN ({','.join('?' * len(chunk))}) "
                    f"AND {where}",
                    [*chunk, *params],
                ).fetchall())
                found.update((r.id, r) for r in self._by_passing_seqs(list(seq_of)).values())
        return [found[i] for i in ids if i in found]

    def by_seqs(self, seqs: Sequence[int], flt: MemoryFilter) -> dict[int, MemoryRecord]:
        """Records with these seqs that match `flt`, keyed by seq."""
        if not seqs:
            return {}
        where, params = filter_sql(flt, use_indexes=False)  # rows named by seq: rowid
        marks = ",".join("?" * len(seqs))
        with self._lock:
            self._sync_cache()
            known = sum(seq in self._cache for seq in seqs)
            # Mostly new rows: one query reads them all, as without the cache (a filter check
            # and then a read of the rest would be two); mostly known: check, read the rest.
            if known * 2 < len(seqs):
                entries = self._fetch(
                    f"SELECT {COLUMNS} FROM records WHERE seq IN ({marks}) AND {where}",
                    [*seqs, *params],
                )
                return {row[0]: _to_record(row, rels) for row, rels in entries}
            passing = self.seqs_matching(seqs, flt)
            return self._by_passing_seqs([seq for seq in seqs if seq in passing])

    def copy_keys(
        self, seqs: Sequence[int], flt: MemoryFilter
    ) -> dict[int, tuple[CopyKey, float]]:
        """For each of `seqs` that matches `flt`: its same_memory_key (type, text, compressed
        text) and created_at, to tell copies apart without reading vectors or metadata."""
        if not seqs:
            return {}
        where, params = filter_sql(flt, use_indexes=False)  # rows named by seq: rowid
        with self._lock:
            rows = self._conn.execute(
                "SELECT seq, memory_type, content, content_blob, created_at FROM records "
                f"WHERE seq IN ({','.join('?' * len(seqs))}) AND {where}",
                [*seqs, *params],
            ).fetchall()
        return {seq: ((kind, text, blob), created) for seq, kind, text, blob, created in rows}

    def seqs_matching(self, seqs: Sequence[int], flt: MemoryFilter) -> set[int]:
        """Which of `seqs` match `flt` (reads no vectors)."""
        if not seqs:
            return set()
        where, params = filter_sql(flt, use_indexes=False)  # rows named by seq: rowid
        with self._lock:
            rows = self._conn.execute(
                f"SELECT seq FROM records WHERE seq IN ({','.join('?' * len(seqs))}) AND {where}",
                [*seqs, *params],
            ).fetchall()
        return {r[0] for r in rows}

    def matching_seqs(self, flt: MemoryFilter, limit: int | None = None) -> np.ndarray:
        """Seqs of the rows matching `flt` (at most `limit` of them)."""
        where, params = filter_sql(flt)
        with self._lock:  # one string, not a tuple per row (see all_seqs_upto): 0.49 -> 0.23 ms
            (text,) = self._conn.execute(  # for 1.8k seqs
                f"SELECT group_concat(seq) FROM (SELECT seq FROM records WHERE {where} LIMIT ?)",
                [*params, -1 if limit is None else limit],
            ).fetchone()
        return np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, np.int64)

    def vectors_by_filter(self, flt: MemoryFilter) -> tuple[np.ndarray, np.ndarray]:
        where, params = filter_sql(flt)
        with self._lock:
            rows = self._conn.execute(
                f"SELECT seq, vector FROM records WHERE {where}", params
            ).fetchall()
        return _stack(rows)

    def vectors_after(self, watermark: int) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT seq, vector FROM records WHERE seq > ? ORDER BY seq", (watermark,)
            ).fetchall()
        return _stack(rows)

    def tokens_after(self, watermark: int) -> list[tuple[int, str]]:
        """(seq, space-separated tokens) of rows above `watermark`, from the FTS5 table."""
        with self._lock:
            return self._conn.execute(
                "SELECT rowid, tokens FROM fts WHERE rowid > ? ORDER BY rowid", (watermark,)
            ).fetchall()

    def all_seqs_upto(self, watermark: int) -> np.ndarray:
        """The seqs of all records up to `watermark`, in no particular order."""
        # From a narrow index, which holds every seq: the table's own rows carry vectors and
        # contents, so walking them read ~10x the pages (2.2 vs 0.3 ms at 1.3k records).
        # As one string, not a row per seq: at 13k records the rows' tuples took 5-18 ms, the
        # string ~2.5 ms (the tuples' allocations also set off garbage collections).
        with self._lock:
            (text,) = self._conn.execute(
                "SELECT group_concat(seq) FROM records INDEXED BY records_type_live "
                "WHERE seq <= ?",
                (watermark,),
            ).fetchone()
        return np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, np.int64)

    def max_seq(self) -> int:
        with self._lock:
            row = self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name='records'").fetchone()
        return int(row[0]) if row else 0

    def count_expired(self, at: float) -> int:
        """Rows with expires_at <= at (uses the partial index on expires_at)."""
        with self._lock:
            return int(self._conn.execute(
                "SELECT count(*) FROM records WHERE expires_at IS NOT NULL AND expires_at <= ?", (at,)
            ).fetchone()[0])

    def scan(self, flt: MemoryFilter, limit: int | None, offset: int) -> list[MemoryRecord]:
        where, params = filter_sql(flt)
        return [
            r
            for _, r in self._records(
                f"SELECT {COLUMNS} FROM records WHERE {where} ORDER BY created_at, id "
                "LIMIT ? OFFSET ?",
                [*params, -1 if limit is None else limit, offset],
            )
        ]

    def count(self, flt: MemoryFilter) -> int:
        where, params = filter_sql(flt)
        with self._lock:
            return int(self._conn.execute(f"SELECT count(*) FROM records WHERE {where}", params).fetchone()[0])

    def edges(
        self, nodes: Sequence[str], relation_types: Sequence[str] | None
    ) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
        """(node, relation type, neighbour) for the edges touching `nodes`: (outgoing ones,
        incoming ones)."""
        marks = ",".join("?" * len(nodes))
        type_sql, type_params = "", []
        if relation_types is not None:
            type_sql = f" AND type IN ({','.join('?' * len(relation_types))})"
            type_params = list(relation_types)
        with self._lock:
            out = self._conn.execute(
                f"SELECT src, type, dst FROM relations WHERE src IN ({marks}){type_sql}",
                [*nodes, *type_params],
            ).fetchall()
            back = self._conn.execute(
                f"SELECT dst, type, src FROM relations WHERE dst IN ({marks}){type_sql}",
                [*nodes, *type_params],
            ).fetchall()
        return out, back


def _stack(rows: Sequence[tuple[int, bytes]]) -> tuple[np.ndarray, np.ndarray]:
    seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    if not rows:
        return seqs, np.zeros((0, 0), dtype=np.float32)
    vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    return seqs, vectors


def _to_record(row: Sequence[Any], relations: Relations = ()) -> MemoryRecord:
    """A new record from a row (and its relations): nothing in it is shared with the cache."""
    (_, rid, session_id, memory_type, agent_type, content, created_at, importance,
     temporal_weight, expires_at, codec, blob, metadata, vector) = row[:14]
    return MemoryRecord(
        id=rid, session_id=session_id, memory_type=memory_type, agent_type=agent_type,
        content=content, created_at=created_at, importance=importance,
        temporal_weight=temporal_weight, expires_at=expires_at, content_codec=codec,
        content_blob=blob, metadata=json.loads(metadata), relations=list(relations),
        vector=np.frombuffer(vector, dtype=np.float32).copy(),
    )
