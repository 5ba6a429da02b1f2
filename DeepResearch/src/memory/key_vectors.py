"""Vectors of workflow memory keys embedded by earlier runs, kept beside a faiss store.

Workflow memories are embedded by a short key ("Tool read_document with {...} succeeded",
"Plan for '...' failed"), and the same keys come back run after run: related questions read
the same documents. The model is deterministic, so a key it has embedded once needs no
second pass -- at ~10 ms per short text on a 2-core CPU that is most of what memory adds to
a run. This is a cache and nothing more: deleting the file only costs re-embedding, a
damaged file is set aside and started afresh, and a folder that cannot be written turns the
cache off for the run (a warning each, never a failed run).
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

log = logging.getLogger("DeepResearch.memory")

FILE_NAME = "key_vectors.sqlite"
MAX_KEYS = 200_000  # ~300 MiB of 384-d vectors at most; the oldest go first


class KeyVectorCache:
    """`lookup(keys)` -> the known vectors; `remember(keys, vectors)` adds new ones."""

    def __init__(self, folder: str | Path, model: str, dimension: int) -> None:
        self.path = Path(folder) / FILE_NAME
        self.model, self.dimension = model, dimension
        self._lock = threading.Lock()  # called from worker threads (asyncio.to_thread)
        self._db: sqlite3.Connection | None = None
        self._off = False  # the folder or file cannot be used: no reuse in this process

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            # A lost cache write only costs an embedding later: no fsync on the run's path.
            db.execute("PRAGMA synchronous=OFF")
            db.execute("CREATE TABLE IF NOT EXISTS key_vectors (digest BLOB PRIMARY KEY, vector BLOB)")
            self._db = db
        return self._db

    def _digest(self, key: str) -> bytes:
        return hashlib.sha256(f"{self.model}\x1f{key}".encode("utf-8", "surrogatepass")).digest()[:16]

    def lookup(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        if not keys:
            return {}
        wanted = {self._digest(k): k for k in dict.fromkeys(keys)}
        marks = ",".join("?" * len(wanted))
        rows = self._guarded(
            lambda db: db.execute(
                f"SELECT digest, vector FROM key_vectors WHERE digest IN ({marks})", list(wanted)
            ).fetchall()
        ) or []
        found = {}
        for digest, blob in rows:
            vector = np.frombuffer(blob, dtype=np.float32)
            if vector.shape == (self.dimension,):
                found[wanted[digest]] = vector
        return found

    def remember(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        rows = [(self._digest(k), np.asarray(v, dtype=np.float32).tobytes())
                for k, v in zip(keys, vectors, strict=True)]
        if not rows:
            return

        def write(db: sqlite3.Connection) -> None:
            db.execute("BEGIN")
            db.executemany("INSERT OR REPLACE INTO key_vectors VALUES (?, ?)", rows)
            db.execute(
                "DELETE FROM key_vectors WHERE rowid <= (SELECT MAX(rowid) FROM key_vectors) - ?",
                (MAX_KEYS,),
            )
            db.execute("COMMIT")

        self._guarded(write)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _guarded(self, operation):  # type: ignore[no-untyped-def]
        """Run `operation(db)`. A damaged file is set aside for a new one; an unusable folder
        (not writable, not a folder, disk full) turns the cache off. Either way: None."""
        with self._lock:
            if self._off:
                return None
            try:
                return operation(self._connect())
            except (sqlite3.OperationalError, OSError) as exc:
                log.warning("memory: key-vector cache %s unusable (%s); not reusing key "
                            "vectors in this run", self.path, exc)
                self._off = True
            except sqlite3.DatabaseError as exc:  # e.g. "file is not a database"
                log.warning("memory: key-vector cache %s damaged (%s); starting a new one",
                            self.path, exc)
                try:
                    self.path.replace(self.path.with_suffix(".damaged"))
                except OSError:
                    self._off = True
            if self._db is not None:
                self._db.close()
                self._db = None
            return None
