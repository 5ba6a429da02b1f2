"""The embedded backend's truth: one SQLite file in WAL mode (records, vectors as BLOBs,
relations, the FTS5 table, meta, and the deletion log that lets every process's FAISS index
catch up with deletes). Opening it checks it; every failure becomes a MemoryBackendError
that names its real cause and the file."""

from __future__ import annotations

import errno
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from DeepResearch.src.memory.errors import MemoryBackendError

DB_FILE = "memory.sqlite3"
# PRAGMA user_version of a store with the current schema. 1: namespaces; 2: event_at;
# 3: records_type_scope; 4: ids scoped by namespace (records and relations); 5: the access
# table; 6: records_pending (rows whose vector is still to be filled: an empty BLOB).
SCHEMA_VERSION = 6
MMAP_BYTES = 256 * 1024 * 1024
RECORDS_TABLE = """
CREATE TABLE IF NOT EXISTS {name} (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: the id FAISS knows a row by
    id TEXT NOT NULL,
    namespace TEXT NOT NULL DEFAULT 'default',
    session_id TEXT NOT NULL,
    memory_type TEXT NOT NULL,
    agent_type TEXT,
    content TEXT NOT NULL,
    created_at REAL NOT NULL,
    importance REAL NOT NULL,
    temporal_weight REAL NOT NULL,
    expires_at REAL,
    content_codec TEXT,
    content_blob BLOB,
    metadata TEXT NOT NULL,
    vector BLOB NOT NULL,
    event_at REAL,
    UNIQUE (namespace, id)  -- an id is scoped by its namespace
);
"""
# A relation links two records of one namespace (src and dst are ids in it).
RELATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS {name} (
    namespace TEXT NOT NULL, src TEXT NOT NULL, type TEXT NOT NULL, dst TEXT NOT NULL,
    pos INTEGER NOT NULL,
    PRIMARY KEY (namespace, src, type, dst)
) WITHOUT ROWID;
"""
PENDING = "length(vector) = 0"  # a row whose vector is still to be filled (vector_fill.py)
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
{RECORDS_TABLE.format(name="records")}
{RELATIONS_TABLE.format(name="relations")}
-- rowid = records.seq, the column holds text.token_string of the full content
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5 (tokens);
-- how many rows hold each term: a query skips terms in most rows (see records.text_search)
CREATE VIRTUAL TABLE IF NOT EXISTS fts_vocab USING fts5vocab (fts, 'row');
-- how often retrieves returned each record, and when last (a row once it was returned);
-- kept when a record is replaced, dropped when it is deleted
CREATE TABLE IF NOT EXISTS access (
    namespace TEXT NOT NULL, id TEXT NOT NULL, count INTEGER NOT NULL, last_accessed REAL,
    PRIMARY KEY (namespace, id)
) WITHOUT ROWID;
-- seqs deleted (or replaced), in order: other processes drop them from their FAISS index
CREATE TABLE IF NOT EXISTS deleted (pos INTEGER PRIMARY KEY AUTOINCREMENT, seq INTEGER NOT NULL);
DROP INDEX IF EXISTS records_session;
DROP INDEX IF EXISTS records_session_live;
DROP INDEX IF EXISTS records_type_meta;
DROP INDEX IF EXISTS records_type_live;
DROP INDEX IF EXISTS relations_dst;
"""
# Made once the namespace column exists (a store made before it gets it at its first open).
# records_type_scope covers a memory-type filter (namespace and expiry included): the
# vector and text searches' selectivity probe reads up to 5k of its entries instead of 5k
# rows (13 -> 1.9 ms in a 100k-fact store; it ran twice per retrieve).
INDEXES = (
    "CREATE INDEX IF NOT EXISTS records_created ON records (created_at, id)",
    "CREATE INDEX IF NOT EXISTS records_expires ON records (expires_at) "
    "WHERE expires_at IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS relations_scope_dst ON relations (namespace, dst, type)",
    "CREATE INDEX IF NOT EXISTS records_scope "
    "ON records (namespace, session_id, created_at, expires_at)",
    "CREATE INDEX IF NOT EXISTS records_type_scope ON records (memory_type, namespace, expires_at)",
    # the rows written before their vector (storage.vectors=behind): the filler's queue
    f"CREATE INDEX IF NOT EXISTS records_pending ON records (created_at) WHERE {PENDING}",
)
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_FULL, SQLITE_NOTADB = 5, 6, 10, 11, 13, 26
DAMAGED_HINT = (
    "move the folder aside and import an export of it, or restore a backup "
    "(`deepresearch-memory health` runs the full check)"
)


def cause_of(exc: BaseException) -> str:
    """The real cause of a failed SQLite or file operation, in words a user acts on."""
    if isinstance(exc, sqlite3.Error):
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        if code == SQLITE_FULL:
            return f"disk full ({exc})"
        if code in (SQLITE_BUSY, SQLITE_LOCKED):
            return f"database is locked by another process ({exc})"
        if code in (SQLITE_CORRUPT, SQLITE_NOTADB):
            return f"the database file is damaged ({exc}): {DAMAGED_HINT}"
        return str(exc)
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return f"disk full ({exc})"
    return str(exc)


def backend_error(exc: BaseException, path: Path, doing: str) -> MemoryBackendError:
    return MemoryBackendError(f"memory store {path}: {doing} failed: {cause_of(exc)}")


class Database:
    """One connection (autocommit; explicit transactions), shared by the backend's threads
    under one lock."""

    def __init__(self, path: Path, *, synchronous: str, busy_timeout: float) -> None:
        self.path = path
        self.lock = threading.RLock()
        try:
            self.conn = sqlite3.connect(
                path, check_same_thread=False, isolation_level=None, timeout=busy_timeout
            )
        except sqlite3.Error as exc:
            raise backend_error(exc, path, "opening the database") from exc
        try:
            self._check()
            self.conn.execute("PRAGMA journal_mode=WAL")
            # Reads through a memory map: no system call or copy per page read (page cache,
            # shared with other processes).
            self.conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
            self.conn.execute(f"PRAGMA synchronous={'FULL' if synchronous == 'full' else 'NORMAL'}")
            with self.lock:
                self._create_or_migrate()
        except sqlite3.Error as exc:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            self.conn.close()
            raise backend_error(exc, path, "opening the database") from exc
        except BaseException:
            self.conn.close()
            raise

    def _create_or_migrate(self) -> None:
        """The schema, written only when the file lacks it: an open of a current store takes
        no write lock, so it does not wait for (or fail on) another process's long write."""
        (version,) = self.conn.execute("PRAGMA user_version").fetchone()
        if version >= SCHEMA_VERSION:
            return
        # One script (executescript commits a pending transaction before it runs): the BEGIN
        # stays open for the statements below.
        self.conn.executescript(f"BEGIN IMMEDIATE;{SCHEMA}")
        columns = {row[1] for row in self.conn.execute("PRAGMA table_info(records)")}
        if "namespace" not in columns:  # a store written before namespaces
            self.conn.execute(
                "ALTER TABLE records ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default'"
            )
        if "event_at" not in columns:  # a store written before event times (version 1)
            self.conn.execute("ALTER TABLE records ADD COLUMN event_at REAL")
        if "namespace" not in {row[1] for row in self.conn.execute("PRAGMA table_info(relations)")}:
            self._scope_ids_by_namespace()
        for index in INDEXES:
            self.conn.execute(index)
        self.conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        self.conn.execute("COMMIT")

    def _scope_ids_by_namespace(self) -> None:
        """Version 4, inside the migration's transaction: the records table rebuilt with
        UNIQUE (namespace, id) instead of a unique id (rows and seqs kept: the FTS rows and
        the FAISS index still name them), relations given their source's namespace."""
        conn = self.conn
        columns = ", ".join(row[1] for row in conn.execute("PRAGMA table_info(records)"))
        (top,) = conn.execute(
            "SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'records'"
        ).fetchone()
        conn.execute(RECORDS_TABLE.format(name="records_scoped"))
        conn.execute(f"INSERT INTO records_scoped ({columns}) SELECT {columns} FROM records")
        conn.execute(RELATIONS_TABLE.format(name="relations_scoped"))
        conn.execute(
            "INSERT INTO relations_scoped (namespace, src, type, dst, pos) SELECT coalesce("
            "(SELECT namespace FROM records WHERE records.id = relations.src), 'default'), "
            "src, type, dst, pos FROM relations"
        )
        for table in ("records", "relations"):
            conn.execute(f"DROP TABLE {table}")
            conn.execute(f"ALTER TABLE {table}_scoped RENAME TO {table}")
        # the highest seq ever given stays (a deleted row's seq is never given again)
        (now,) = conn.execute(
            "SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'records'"
        ).fetchone()
        conn.execute("DELETE FROM sqlite_sequence WHERE name = 'records'")
        conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('records', ?)",
                     (max(top, now),))

    def _check(self) -> None:
        """`PRAGMA quick_check`: a damaged file is refused here, not served later."""
        try:
            problems = [row[0] for row in self.conn.execute("PRAGMA quick_check(5)")]
        except sqlite3.DatabaseError as exc:
            raise MemoryBackendError(
                f"memory database {self.path} is damaged ({exc}): {DAMAGED_HINT}"
            ) from exc
        if problems != ["ok"]:
            raise MemoryBackendError(
                f"memory database {self.path} is damaged ({'; '.join(problems)}): {DAMAGED_HINT}"
            )

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT; on any failure rolled back (when SQLite has not already
        rolled it back itself, as it does on a full disk), the error raised unchanged."""
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: the queries inside see one committed state."""
        with self.lock:
            self.conn.execute("BEGIN")
            try:
                yield self.conn
            finally:
                if self.conn.in_transaction:
                    self.conn.execute("COMMIT")

    def meta(self) -> dict[str, str]:
        with self.lock:
            return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())

    def meta_value(self, key: str) -> str | None:
        with self.lock:
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, values: dict[str, str]) -> None:
        with self.transaction() as conn:
            conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", values.items())

    def store_id(self) -> str:
        """This store's identity (meta `store_id`, made once, kept by copies of the whole
        folder): the index file records it, and an index made for another store is refused.
        Written (a write transaction) only by the first open that finds none."""
        stored = self.meta().get("store_id")
        if stored:
            return stored
        with self.transaction() as conn:
            conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('store_id', ?)",
                         (uuid.uuid4().hex,))
            (value,) = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        return str(value)

    def changed_since(self, seen: tuple[int, int] | None) -> tuple[int, int] | None:
        """The (data_version, total_changes) pair now if the database changed since `seen`
        (committed by another connection, or by this one), else None. Cheap: no file read."""
        with self.lock:
            (version,) = self.conn.execute("PRAGMA data_version").fetchone()
            now = (int(version), self.conn.total_changes)
        return None if now == seen else now

    def integrity_problems(self) -> list[str]:
        """The full `PRAGMA integrity_check` and FTS5's own check, as messages (none: sound)."""
        problems: list[str] = []
        with self.lock:
            try:
                rows = [r[0] for r in self.conn.execute("PRAGMA integrity_check(20)")]
                if rows != ["ok"]:
                    problems += [f"{self.path}: {r}" for r in rows]
                self.conn.execute("INSERT INTO fts (fts) VALUES ('integrity-check')")
            except sqlite3.DatabaseError as exc:
                problems.append(f"{self.path}: {exc}")
        return problems
