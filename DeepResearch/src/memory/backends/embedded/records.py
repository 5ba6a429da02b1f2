"""Records in and out of the embedded backend's database: one transaction per write, filters
in SQL, lexical search with FTS5's bm25(). Raises sqlite3 errors unchanged (the backend turns
them into MemoryBackendError with their cause). A row that cannot be decoded (decoding.py) is
left out of every read, with one warning naming it; `damaged()` lists them for `health`."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from DeepResearch.src.memory.backends.base import (
    MemoryFilter,
    MemoryRecord,
    by_namespace,
    indexed_text,
)
from DeepResearch.src.memory.backends.decoding import (
    DamagedRecord,
    decode_json,
    decoded,
    readable_content,
    stored_problem,
)
from DeepResearch.src.memory.backends.embedded.database import PENDING, Database
from DeepResearch.src.memory.backends.embedded.filters import filter_sql
from DeepResearch.src.memory.backends.lexical import TermRows, match_expression
from DeepResearch.src.memory.backends.record import patched
from DeepResearch.src.memory.compression import content_problem
from DeepResearch.src.memory.config_base import LEXICAL_MAX_POSTINGS
from DeepResearch.src.memory.facts.forgetting import Forgotten
from DeepResearch.src.memory.text import token_string

COLUMNS = (
    "seq, id, namespace, session_id, memory_type, agent_type, content, created_at, importance, "
    "temporal_weight, expires_at, content_codec, content_blob, metadata, vector, event_at"
)
# What a delete returns of each row: its seq, and what the fact cascade reads (Forgotten.of);
# a row with damaged metadata JSON has no message id (json_type would fail on it).
DELETED = ("RETURNING seq, id, namespace, memory_type, CASE WHEN json_valid(metadata) THEN "
           "(CASE json_type(metadata, '$.message_id') WHEN 'text' THEN "
           "json_extract(metadata, '$.message_id') END) END")
Cascade = Callable[[list[Forgotten]], Sequence[tuple[str, str]]]  # -> (namespace, id)s
CHUNK = 500  # ids or seqs per IN (...) list (SQLite bounds the number of parameters)
BROAD_FILTERS = 256  # filters remembered as broad (selective_seqs), forgotten all at once


def chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


class Records:
    """The records of `db`, whose vectors have `dimension` values (a stored vector of another
    length makes its record damaged: never read, never indexed)."""

    def __init__(self, db: Database, dimension: int) -> None:
        self.db = db
        self.dimension = dimension
        self._broad: set[str] = set()  # filters (but their live_at) found broad
        self.term_rows = TermRows()

    # -- writes ---------------------------------------------------------------------------
    def upsert(self, records: Sequence[MemoryRecord]) -> None:
        """All of `records` in one transaction, or none: a record replaces the one with its
        namespace and id."""
        texts = [indexed_text(r) for r in records]  # before the write lock is taken
        with self.db.transaction():
            self.write(records, texts)

    def write(self, records: Sequence[MemoryRecord], texts: Sequence[str]) -> None:
        """The body of `upsert`, inside a transaction the caller holds (the fact store writes
        memories, entities and facts in one); `texts` are the records' `indexed_text`."""
        conn = self.db.conn
        for record, text in zip(records, texts, strict=True):
            for (seq,) in conn.execute(
                "DELETE FROM records WHERE namespace = ? AND id = ? RETURNING seq",
                (record.namespace, record.id),
            ).fetchall():
                self._forget_seq(seq)
            cur = conn.execute(
                f"INSERT INTO records ({COLUMNS.split(', ', 1)[1]}) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    record.id, record.namespace, record.session_id, record.memory_type,
                    record.agent_type, record.content, record.created_at, record.importance,
                    record.temporal_weight, record.expires_at, record.content_codec,
                    record.content_blob, json.dumps(record.metadata),
                    b"" if record.vector is None  # pending: vector_fill.py fills it
                    else np.ascontiguousarray(record.vector, dtype=np.float32).tobytes(),
                    record.event_at,
                ),
            )
            conn.execute("INSERT INTO fts (rowid, tokens) VALUES (?, ?)", (cur.lastrowid, text))
            conn.execute("DELETE FROM relations WHERE namespace = ? AND src = ?",
                         (record.namespace, record.id))
            conn.executemany(
                "INSERT OR IGNORE INTO relations (namespace, src, type, dst, pos) "
                "VALUES (?, ?, ?, ?, ?)",
                [(record.namespace, record.id, t, dst, pos)
                 for pos, (t, dst) in enumerate(record.relations)],
            )

    def _forget_seq(self, seq: int) -> None:
        """Within a write: a row's FTS entry goes, its seq enters the deletion log."""
        self.db.conn.execute("DELETE FROM fts WHERE rowid = ?", (seq,))
        self.db.conn.execute("INSERT INTO deleted (seq) VALUES (?)", (seq,))

    def delete(self, flt: MemoryFilter, cascade: Cascade | None = None) -> int:
        """Delete the matching records in one transaction; `cascade(forgotten)`, called
        inside it, writes what their loss does elsewhere (the fact store) and returns more
        ids to delete with them. Returns how many records were deleted in all."""
        where, params = filter_sql(flt)
        with self.db.transaction() as conn:
            rows = conn.execute(f"DELETE FROM records WHERE {where} {DELETED}", params).fetchall()
            if rows and cascade is not None:
                for namespace, ids in by_namespace(cascade([Forgotten.of(*r[1:]) for r in rows])):
                    for chunk in chunks(ids):
                        rows += conn.execute(
                            "DELETE FROM records WHERE namespace = ? AND id IN "
                            f"({','.join('?' * len(chunk))}) {DELETED}",
                            [namespace, *chunk]).fetchall()
            for seq, *_ in rows:
                self._forget_seq(seq)
            for table, key in (("relations", "src"), ("access", "id")):
                conn.executemany(f"DELETE FROM {table} WHERE namespace = ? AND {key} = ?",
                                 [(r[2], r[1]) for r in rows])
        return len(rows)

    def record_access(self, ids: Sequence[str], namespace: str, at: float) -> None:
        """One transaction: each occurrence of an id is one access of that record (ids of
        no record are skipped)."""
        counts = Counter(ids)
        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT INTO access (namespace, id, count, last_accessed) SELECT ?, ?, ?, ? "
                "WHERE EXISTS (SELECT 1 FROM records WHERE namespace = ? AND id = ?) "
                "ON CONFLICT (namespace, id) DO UPDATE SET count = count + excluded.count, "
                "last_accessed = max(coalesce(last_accessed, excluded.last_accessed), "
                "excluded.last_accessed)",
                [(namespace, i, n, at, namespace, i) for i, n in counts.items()])

    def access_stats(self, ids: Sequence[str], namespace: str) -> dict[str, tuple[int, float | None]]:
        """{id: (count, last_accessed)} of the records `ids` of `namespace`."""
        out: dict[str, tuple[int, float | None]] = {}
        with self.db.lock:
            for chunk in chunks(list(dict.fromkeys(ids))):
                for rid, count, last in self.db.conn.execute(
                    "SELECT r.id, coalesce(a.count, 0), a.last_accessed FROM records r "
                    "LEFT JOIN access a ON a.namespace = r.namespace AND a.id = r.id "
                    f"WHERE r.namespace = ? AND r.id IN ({','.join('?' * len(chunk))})",
                    [namespace, *chunk],
                ):
                    out[rid] = (int(count), last)
        return out

    def move(
        self, ids: Sequence[str], from_namespace: str, to_namespace: str,
        patch: Mapping[str, Any] | None = None,
    ) -> int:
        """Re-file the records `ids` of `from_namespace` under `to_namespace` and apply
        `patch` (record.metadata_patch, checked) to their metadata, in one transaction: each
        row is updated in place, keeping its seq and its vector BLOB (empty while it waits
        for vector_fill.py), so its FTS row and its FAISS vector stay as they are (every
        search filters the namespace in SQL); its outgoing relations go with it, as do its
        access statistics. A record of `to_namespace` with a moved id is replaced (deleted
        as `write` deletes it). With a patch, a row whose stored metadata is no JSON object
        is not moved (reads skip it too). Returns how many moved."""
        moved = 0
        with self.db.transaction() as conn:
            for chunk in chunks(list(dict.fromkeys(ids))):
                rows = conn.execute(
                    "SELECT seq, id, metadata FROM records WHERE namespace = ? AND id IN "
                    f"({','.join('?' * len(chunk))})", [from_namespace, *chunk]).fetchall()
                if patch:
                    rows = [(seq, rid, json.dumps(patched(found, patch))) for seq, rid, found
                            in ((seq, rid, _metadata_object(text)) for seq, rid, text in rows)
                            if found is not None]
                if not rows:
                    continue
                present = [rid for _, rid, _ in rows]
                marks = ",".join("?" * len(present))
                if from_namespace != to_namespace:
                    for (seq,) in conn.execute(
                        f"DELETE FROM records WHERE namespace = ? AND id IN ({marks}) "
                        "RETURNING seq", [to_namespace, *present],
                    ).fetchall():
                        self._forget_seq(seq)
                    for table, key in (("relations", "src"), ("access", "id")):
                        conn.execute(f"DELETE FROM {table} WHERE namespace = ? AND {key} IN "
                                     f"({marks})", [to_namespace, *present])
                    for table, key in (("relations", "src"), ("access", "id")):
                        conn.execute(f"UPDATE {table} SET namespace = ? WHERE namespace = ? AND "
                                     f"{key} IN ({marks})", [to_namespace, from_namespace, *present])
                conn.executemany(
                    "UPDATE records SET namespace = ?, metadata = coalesce(?, metadata) "
                    "WHERE seq = ?",
                    [(to_namespace, text if patch else None, seq) for seq, _, text in rows])
                moved += len(rows)
        return moved

    def set_vectors(self, items: Sequence[tuple[int, np.ndarray]]) -> None:
        with self.db.transaction() as conn:
            conn.executemany(
                "UPDATE records SET vector = ? WHERE seq = ?",
                [(np.ascontiguousarray(v, dtype=np.float32).tobytes(), s) for s, v in items],
            )

    def pending_vectors(
        self, limit: int, skip: Sequence[int] = (), among: tuple[str, Sequence[str]] | None = None,
    ) -> dict[int, str | None]:
        """{seq: full content} of up to `limit` rows still without a vector, oldest first,
        but those of `skip`; with `among` (namespace, ids) only those records. None for a
        content that cannot be read (damaged)."""
        where, params = PENDING, [*skip]
        where += f" AND seq NOT IN ({','.join('?' * len(skip))})"
        if among is not None:
            namespace, ids = among
            ids = list(ids)[:CHUNK]
            where += f" AND namespace = ? AND id IN ({','.join('?' * len(ids))})"
            params += [namespace, *ids]
        with self.db.lock:
            seqs = [seq for (seq,) in self.db.conn.execute(
                f"SELECT seq FROM records WHERE {where} ORDER BY created_at LIMIT ?",
                (*params, limit))]
        texts = self.texts(seqs)
        return {seq: texts.get(seq) for seq in seqs}

    def pending_seqs(self) -> np.ndarray:
        """The seqs of the rows still without a vector."""
        with self.db.lock:
            return np.array([seq for (seq,) in self.db.conn.execute(
                f"SELECT seq FROM records WHERE {PENDING}")], dtype=np.int64)

    def pending_figures(self) -> tuple[int, float | None]:
        """(rows without a vector, the oldest one's created_at)."""
        with self.db.lock:
            count, oldest = self.db.conn.execute(
                f"SELECT count(*), min(created_at) FROM records WHERE {PENDING}").fetchone()
        return int(count), oldest

    def fill_vectors(self, items: Sequence[tuple[int, np.ndarray]]) -> list[str]:
        """Give rows written without a vector theirs, in one transaction; returns the ids
        filled (a row replaced or deleted meanwhile, or filled by another process, is left).
        A filled row gets a new seq (its FTS row follows; the old seq enters the deletion
        log): every process's FAISS index then catches up with it as with any new row."""
        filled: list[str] = []
        with self.db.transaction() as conn:
            (top,) = conn.execute(
                "SELECT seq FROM sqlite_sequence WHERE name = 'records'").fetchone()
            for seq, vector in items:
                found = conn.execute(
                    f"UPDATE records SET seq = ?, vector = ? WHERE seq = ? AND {PENDING} "
                    "RETURNING id",
                    (top + 1, np.ascontiguousarray(vector, dtype=np.float32).tobytes(), seq),
                ).fetchone()
                if found is None:
                    continue
                top += 1
                conn.execute("INSERT INTO fts (rowid, tokens) SELECT ?, tokens FROM fts "
                             "WHERE rowid = ?", (top, seq))
                self._forget_seq(seq)
                filled.append(found[0])
            conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'records'", (top,))
        return filled

    def refill_fts(self) -> None:
        """Every FTS5 row rewritten from its record's full content (rebuild)."""
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM fts")
            for chunk in chunks(self.all_seqs().tolist()):
                conn.executemany(
                    "INSERT INTO fts (rowid, tokens) VALUES (?, ?)",
                    [(seq, token_string(text)) for seq, text in self.texts(chunk).items()],
                )

    def texts(self, seqs: Sequence[int]) -> dict[int, str]:
        """{seq: full content} of the rows `seqs`, whatever their vectors and metadata (what
        re-embedding and re-indexing read); a content blob that does not decompress is left
        out, with one warning naming its record."""
        out: dict[int, str] = {}
        with self.db.lock:
            rows = [row for chunk in chunks(list(seqs)) for row in self.db.conn.execute(
                "SELECT seq, id, content, content_codec, content_blob FROM records "
                f"WHERE seq IN ({','.join('?' * len(chunk))})", chunk)]
        for seq, rid, content, codec, blob in rows:
            text = readable_content(rid, content, codec, blob)
            if text is not None:
                out[seq] = text
        return out

    # -- reads ----------------------------------------------------------------------------
    def _read(self, sql: str, params: Sequence[Any]) -> list[tuple[int, MemoryRecord]]:
        """(seq, record) of a `SELECT {COLUMNS} ...`, each with its relations; damaged rows
        left out (one warning each)."""
        with self.db.lock:
            rows = self.db.conn.execute(sql, params).fetchall()
            relations: dict[tuple[str, str], list[tuple[str, str]]] = {}
            for namespace, ids in by_namespace((row[2], row[1]) for row in rows):
                for chunk in chunks(ids):
                    for src, rel_type, dst in self.db.conn.execute(
                        "SELECT src, type, dst FROM relations WHERE namespace = ? AND src IN "
                        f"({','.join('?' * len(chunk))}) ORDER BY src, pos",
                        [namespace, *chunk],
                    ):
                        relations.setdefault((namespace, src), []).append((rel_type, dst))
        return decoded(rows, lambda row: (
            row[0], _to_record(row, relations.get((row[2], row[1]), []), self.dimension)))

    def get(
        self, ids: Sequence[str], namespace: str, flt: MemoryFilter | None = None
    ) -> list[MemoryRecord]:
        """Records of `namespace` by id, in the order asked, missing ids (and, with `flt`,
        those it refuses) left out."""
        where, params = filter_sql(flt, use_indexes=False) if flt is not None else ("1", [])
        found: dict[str, MemoryRecord] = {}
        for chunk in chunks(list(ids)):
            found.update((r.id, r) for _, r in self._read(
                f"SELECT {COLUMNS} FROM records WHERE namespace = ? AND id IN "
                f"({','.join('?' * len(chunk))}) AND {where}",
                [namespace, *chunk, *params],
            ))
        return [found[i] for i in ids if i in found]

    def by_seqs(self, seqs: Sequence[int], flt: MemoryFilter) -> dict[int, MemoryRecord]:
        where, params = filter_sql(flt, use_indexes=False)
        out: dict[int, MemoryRecord] = {}
        for chunk in chunks(list(seqs)):
            out.update(self._read(
                f"SELECT {COLUMNS} FROM records WHERE seq IN ({','.join('?' * len(chunk))}) "
                f"AND {where}",
                [*chunk, *params],
            ))
        return out

    def seqs_matching(self, seqs: Sequence[int], flt: MemoryFilter) -> set[int]:
        """Which of `seqs` match `flt` (reads no vectors)."""
        where, params = filter_sql(flt, use_indexes=False)
        out: set[int] = set()
        with self.db.lock:
            for chunk in chunks(list(seqs)):
                out.update(r[0] for r in self.db.conn.execute(
                    f"SELECT seq FROM records WHERE seq IN ({','.join('?' * len(chunk))}) "
                    f"AND {where}",
                    [*chunk, *params],
                ))
        return out

    def first_matching(self, seqs: Sequence[int], flt: MemoryFilter, k: int) -> list[int]:
        """The first `k` of `seqs` (in their order) that match `flt`, checked k at a time:
        a check reads each row it names (a random read in a large store), and the hits of an
        over-fetching search mostly pass a broad filter."""
        out: list[int] = []
        for start in range(0, len(seqs), max(k, 1)):
            chunk = seqs[start:start + max(k, 1)]
            passing = self.seqs_matching(chunk, flt)
            out += [seq for seq in chunk if seq in passing]
            if len(out) >= k:
                return out[:k]
        return out

    def matching_seqs(self, flt: MemoryFilter, limit: int) -> np.ndarray:
        """Seqs of the rows matching `flt`, at most `limit` of them."""
        where, params = filter_sql(flt)
        with self.db.lock:
            (text,) = self.db.conn.execute(
                f"SELECT group_concat(seq) FROM (SELECT seq FROM records WHERE {where} LIMIT ?)",
                [*params, limit],
            ).fetchone()
        return _seqs(text)

    def selective_seqs(self, flt: MemoryFilter, limit: int) -> np.ndarray | None:
        """The seqs of the rows matching `flt` when there are at most `limit`, else None
        (broad: the searches over-fetch and check their hits instead). The probe reads up
        to `limit` entries of an index (5% of the store, twice per retrieve: 14 ms at a
        million rows), so a filter found broad is remembered, whatever its live_at, until a
        search finds too few of its hits passing it (`probe_again`): a verdict gone stale
        costs an over-fetch, never a result."""
        key = _broad_key(flt)
        if key in self._broad:
            return None
        seqs = self.matching_seqs(flt, limit + 1)
        if len(seqs) <= limit:
            return seqs
        if len(self._broad) >= BROAD_FILTERS:
            self._broad.clear()
        self._broad.add(key)
        return None

    def probe_again(self, flt: MemoryFilter) -> None:
        """`flt` may have become selective: the next search probes it."""
        self._broad.discard(_broad_key(flt))

    def all_seqs(self) -> np.ndarray:
        with self.db.lock:
            (text,) = self.db.conn.execute("SELECT group_concat(seq) FROM records").fetchone()
        return _seqs(text)

    def vectors_of(self, seqs: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        rows: list[tuple[int, bytes]] = []
        with self.db.lock:
            for chunk in chunks(list(seqs)):
                rows += self.db.conn.execute(
                    f"SELECT seq, vector FROM records WHERE seq IN ({','.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
        return stack(rows, self.dimension)

    def stored_dimension(self) -> int | None:
        """The length of the first stored vector (None in an empty store)."""
        with self.db.lock:
            row = self.db.conn.execute(
                f"SELECT length(vector) FROM records WHERE NOT {PENDING} LIMIT 1").fetchone()
        return None if row is None else int(row[0]) // 4

    def damaged(self) -> dict[str, str]:
        """{id: why} of every row a read cannot decode (what `health` counts)."""
        out: dict[str, str] = {}
        last = 0
        while True:
            with self.db.lock:
                rows = self.db.conn.execute(
                    "SELECT seq, id, metadata, content_codec, content_blob, length(vector) "
                    "FROM records WHERE seq > ? ORDER BY seq LIMIT ?", (last, CHUNK)
                ).fetchall()
            for _, rid, metadata, codec, blob, size in rows:
                problem = _vector_problem(size, self.dimension) or stored_problem(
                    metadata, None, codec, blob)
                if problem is not None:
                    out[rid] = problem
            if len(rows) < CHUNK:
                return out
            last = rows[-1][0]

    def changes_after(
        self, seq: int, deleted_pos: int, batch: int
    ) -> tuple[list[tuple[int, bytes]], list[tuple[int, int]]]:
        """In one snapshot: up to `batch` (seq, vector) rows after `seq`, and the (pos, seq)
        entries of the deletion log after `deleted_pos` (all of them, only in the first
        batch's call: pass deleted_pos=-1 to skip)."""
        with self.db.snapshot() as conn:
            rows = conn.execute(
                "SELECT seq, vector FROM records WHERE seq > ? ORDER BY seq LIMIT ?", (seq, batch)
            ).fetchall()
            gone = [] if deleted_pos < 0 else conn.execute(
                "SELECT pos, seq FROM deleted WHERE pos > ? ORDER BY pos", (deleted_pos,)
            ).fetchall()
        return rows, gone

    def positions(self) -> tuple[int, int]:
        """(the highest seq ever given, the last deletion-log position)."""
        with self.db.lock:
            found = dict(self.db.conn.execute(
                "SELECT name, seq FROM sqlite_sequence WHERE name IN ('records', 'deleted')"
            ).fetchall())
        return int(found.get("records", 0)), int(found.get("deleted", 0))

    def scan(self, flt: MemoryFilter, limit: int | None, offset: int) -> list[MemoryRecord]:
        where, params = filter_sql(flt)
        return [r for _, r in self._read(
            f"SELECT {COLUMNS} FROM records WHERE {where} ORDER BY created_at, id LIMIT ? OFFSET ?",
            [*params, -1 if limit is None else limit, offset],
        )]

    def count(self, flt: MemoryFilter) -> int:
        where, params = filter_sql(flt)
        with self.db.lock:
            return int(self.db.conn.execute(
                f"SELECT count(*) FROM records WHERE {where}", params
            ).fetchone()[0])

    def text_search(
        self, query: str, k: int, flt: MemoryFilter, selective: int, total: int,
        max_postings: int = LEXICAL_MAX_POSTINGS,
    ) -> list[tuple[int, float]]:
        """(seq, score) of the k best FTS5 matches of `query` that pass `flt`, best first;
        the score is -bm25() (higher is better); `total` is the number of records. The terms
        matched are lexical.match_expression's (their rows within `max_postings`). A filter
        matching at most `selective` rows is joined to the match; a broader one over-fetches
        and checks the hits (a join reads a record row per match: ~1.6x the time of the match
        alone)."""
        if k <= 0:
            return []
        plain = "SELECT rowid, -bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?"
        with self.db.lock:
            match = match_expression(self.db.conn, query, total, max_postings, self.term_rows,
                                     sum(self.positions()))
            if match is None:
                return []
            if flt == MemoryFilter():
                return self.db.conn.execute(plain, (match, k)).fetchall()
            if self.selective_seqs(flt, selective) is not None:
                # The filter's few rows, as a set SQLite builds once (`+` keeps it from being
                # handed to FTS5, which would run the MATCH once per row): a match is checked
                # against it instead of reading its record row (a join cost ~1 us per match
                # in the whole store, 20 ms at 13,000 rows); bm25() is computed for the
                # matches that pass.
                where, params = filter_sql(flt)
                return self.db.conn.execute(
                    "SELECT rowid, -bm25(fts) FROM fts WHERE fts MATCH ? AND "
                    f"+rowid IN (SELECT seq FROM records WHERE {where}) "
                    "ORDER BY bm25(fts) LIMIT ?",
                    [match, *params, k],
                ).fetchall()
            fetch = 4 * k
            while True:
                hits = self.db.conn.execute(plain, (match, fetch)).fetchall()
                passing = set(self.first_matching([seq for seq, _ in hits], flt, k))
                kept = [hit for hit in hits if hit[0] in passing]
                if len(kept) >= k or len(hits) < fetch:
                    return kept
                self.probe_again(flt)
                fetch *= 8

    def edges(
        self, namespace: str, nodes: Sequence[str], relation_types: Sequence[str] | None
    ) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
        """(node, relation type, neighbour) of the edges touching `nodes` of `namespace`:
        (outgoing, incoming)."""
        marks = ",".join("?" * len(nodes))
        type_sql, type_params = "", []
        if relation_types is not None:
            type_sql = f" AND type IN ({','.join('?' * len(relation_types))})"
            type_params = list(relation_types)
        with self.db.lock:
            out = self.db.conn.execute(
                "SELECT src, type, dst FROM relations WHERE namespace = ? AND "
                f"src IN ({marks}){type_sql}",
                [namespace, *nodes, *type_params],
            ).fetchall()
            back = self.db.conn.execute(
                "SELECT dst, type, src FROM relations WHERE namespace = ? AND "
                f"dst IN ({marks}){type_sql}",
                [namespace, *nodes, *type_params],
            ).fetchall()
        return out, back


def _broad_key(flt: MemoryFilter) -> str:
    return repr(replace(flt, live_at=None))


def _metadata_object(text: str | None) -> dict[str, Any] | None:
    """A row's stored metadata as a dict; None when it is no JSON object (damaged)."""
    try:
        found = json.loads(text or "{}")
    except (TypeError, ValueError, RecursionError):
        return None
    return found if isinstance(found, dict) else None


def _seqs(text: str | None) -> np.ndarray:
    return np.array(text.split(","), dtype=np.int64) if text else np.zeros(0, np.int64)


def stack(rows: Sequence[tuple[int, bytes]], dimension: int) -> tuple[np.ndarray, np.ndarray]:
    """(seqs, vectors) of (seq, vector BLOB) rows, those of another dimension left out."""
    if any(len(r[1]) != 4 * dimension for r in rows):  # damaged rows: left out
        rows = [r for r in rows if len(r[1]) == 4 * dimension]
    seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    if not rows:
        return seqs, np.zeros((0, dimension), dtype=np.float32)
    vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    return seqs, vectors


def _vector_problem(size: int | None, dimension: int) -> str | None:
    if size == 4 * dimension or size == 0:  # 0: pending, not damaged
        return None
    return f"its stored vector has {(size or 0) / 4:g} values, the store's dimension is {dimension}"


def _to_record(
    row: Sequence[Any], relations: list[tuple[str, str]], dimension: int
) -> MemoryRecord:
    """The record of a row; DamagedRecord when it cannot be decoded."""
    (_, rid, namespace, session_id, memory_type, agent_type, content, created_at, importance,
     temporal_weight, expires_at, codec, blob, metadata, vector, event_at) = row
    problem = _vector_problem(len(vector), dimension) or content_problem(codec, blob)
    if problem is not None:
        raise DamagedRecord(rid, problem)
    return MemoryRecord(
        id=rid, namespace=namespace, session_id=session_id, memory_type=memory_type,
        agent_type=agent_type, content=content, created_at=created_at, importance=importance,
        temporal_weight=temporal_weight, expires_at=expires_at, content_codec=codec,
        content_blob=blob, metadata=decode_json(metadata, "metadata", rid, "{}"), relations=relations,
        vector=np.frombuffer(vector, dtype=np.float32).copy() if vector else None,
        event_at=event_at,
    )
