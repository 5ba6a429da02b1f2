"""The `faiss` backend: SQLite (the truth, and FTS5 for lexical search) + a FAISS index (a cache).

Layout of `memory.faiss.path`: `memory.sqlite3` (+ its WAL files) and `index.faiss`.

- A write is one SQLite transaction, committed before the call returns; nothing of a failed
  batch is written. Every read first catches the FAISS index up with what any connection
  committed since (index_cache.py). FTS5 lives in the database, so it is always current.
- The database remembers model, dimension and metric; opening it with other settings raises
  IndexMismatchError; `rebuild()` (`deepresearch-memory rebuild`) re-indexes (re-embeds).
- Filtered vector search: a selective filter (few matching rows) is answered exactly over
  those rows' vectors; a broad one over-fetches from FAISS and filters in SQL.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

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
)
from DeepResearch.src.memory.backends.decoding import damaged_summary
from DeepResearch.src.memory.backends.embedded.database import (
    DB_FILE,
    Database,
    backend_error,
)
from DeepResearch.src.memory.backends.embedded.facts import ensure_schema as ensure_fact_schema
from DeepResearch.src.memory.backends.embedded.graph import walk
from DeepResearch.src.memory.backends.embedded.index_cache import IndexCache, vectors_of_rows
from DeepResearch.src.memory.backends.embedded.maintenance import (
    Reembed,
    check_meta,
    index_agreement,
    reembed_records,
    verify_index,
)
from DeepResearch.src.memory.backends.embedded.records import Records
from DeepResearch.src.memory.backends.embedded.vectors import (
    INDEX_FILE,
    IndexSettings,
    VectorIndex,
)
from DeepResearch.src.memory.backends.record import metadata_patch
from DeepResearch.src.memory.config import FaissConfig
from DeepResearch.src.memory.config_base import LEXICAL_MAX_POSTINGS
from DeepResearch.src.memory.errors import IndexMismatchError, MemoryBackendError
from DeepResearch.src.memory.faiss_pool import run_faiss

if TYPE_CHECKING:
    from DeepResearch.src.memory.backends.embedded.facts import EmbeddedFactStore

__all__ = ["DB_FILE", "INDEX_FILE", "EmbeddedBackend"]

T = TypeVar("T")
OLD_FILES = ("index.flat", "lexical.npz")  # caches of an older layout: removed, rebuilt
# A filter matching at most max(SELECTIVE_ROWS, SELECTIVE_SHARE of the store) rows is
# searched exactly over those rows' vectors; a broader one over-fetches from FAISS.
SELECTIVE_ROWS = 2048
SELECTIVE_SHARE = 0.05
log = logging.getLogger(__name__)


class EmbeddedBackend(MemoryBackend):
    name: ClassVar[str] = "faiss"
    # FTS5 ranks inside SQLite, which releases the GIL: the lexical search can overlap the
    # query's embedding instead of waiting for it.
    lexical_in_process: ClassVar[bool] = False
    # A row can be committed before its vector (an empty BLOB; records.py's fill_vectors).
    fills_vectors_behind: ClassVar[bool] = True
    vectors_behind_by_default: ClassVar[bool] = True

    def __init__(
        self, config: FaissConfig, *, dimension: int, metric: str, model: str,
        lexical_max_postings: int = LEXICAL_MAX_POSTINGS,
    ) -> None:
        self.config = config
        self.lexical_max_postings = lexical_max_postings
        self.dimension = dimension
        self.metric = metric
        self.model = model
        self.root = Path(config.path)
        self.settings = IndexSettings(  # kind "auto" is settled at open
            config.index_kind, dimension, config.hnsw_m, config.hnsw_ef_construction,
            config.hnsw_ef_search,
        )
        self._db: Database | None = None
        self._records: Records | None = None
        self._cache: IndexCache | None = None
        self._fact_store: EmbeddedFactStore | None = None

    @property
    def index_path(self) -> Path:
        return self.root / INDEX_FILE

    @property
    def _index(self) -> VectorIndex | None:
        return self._cache.index if self._cache is not None else None

    # -- lifecycle ------------------------------------------------------------------------
    async def open(self) -> None:
        await run_faiss(self._open_sync)

    def _connect(self) -> Records:
        db_path = self.root / DB_FILE
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MemoryBackendError(f"cannot create memory folder {self.root}: {exc}") from exc
        if self.index_path.exists() and (not db_path.exists() or db_path.stat().st_size == 0):
            state = "missing" if not db_path.exists() else "empty (0 bytes)"
            raise MemoryBackendError(
                f"memory database {db_path} is {state} while its index {self.index_path} exists: "
                "the records are gone. Restore the database from a backup, or remove the "
                "folder to start an empty store."
            )
        db = Database(db_path, synchronous=self.config.synchronous,
                      busy_timeout=self.config.busy_timeout)
        self._db = db
        self._records = Records(db, self.dimension)
        return self._records

    def _settle_index_kind(self, records: Records) -> None:
        """`index_kind=auto`: flat below `hnsw_above` records, HNSW from there."""
        if self.config.index_kind == "auto":
            large = records.count(MemoryFilter()) >= self.config.hnsw_above
            self.settings = replace(self.settings, kind="hnsw" if large else "flat")

    def _open_sync(self) -> None:
        records = self._connect()
        try:
            check_meta(records.db, self._expected_meta(), self.root)
            self._settle_index_kind(records)
            ensure_fact_schema(records.db)
            for name in OLD_FILES:
                (self.root / name).unlink(missing_ok=True)
            self._cache = IndexCache(self.settings, self.index_path, records.db.store_id())
            self._cache.load(records)
        except (sqlite3.Error, OSError) as exc:
            self._close_db()
            raise backend_error(exc, self.root / DB_FILE, "opening the store") from exc
        except BaseException:
            self._close_db()
            raise

    def _expected_meta(self) -> dict[str, str]:
        return {"model": self.model, "dimension": str(self.dimension), "metric": self.metric}

    async def close(self) -> None:
        await run_faiss(self._close_sync)

    def _close_sync(self) -> None:
        if self._db is None:
            return
        try:
            with self._db.lock:
                if self._cache is not None:
                    self._catch_up()
                    self._cache.save_if_worth()
        except (sqlite3.Error, OSError) as exc:
            raise backend_error(exc, self._db.path, "closing the store") from exc
        finally:
            self._close_db()

    def _close_db(self) -> None:
        if self._db is not None:
            self._db.close()
        self._db = self._records = self._cache = None

    def rebuild(self, reembed: Reembed | None = None, batch_size: int = 256) -> int:
        """Rebuild the FTS5 rows and the index (and, with `reembed`, every vector) from the
        records; store the configured model/dimension/metric. Works on a store that open()
        refuses for its settings. Returns the number of records indexed."""
        records = self._connect()
        try:
            if reembed is not None:
                reembed_records(records, reembed, self.dimension, batch_size)
            else:
                stored = records.stored_dimension()
                if stored is not None and stored != self.dimension:
                    raise IndexMismatchError(
                        f"stored vectors have dimension {stored}, configured "
                        f"{self.dimension}: rebuild with re-embedding (--reembed)"
                    )
            records.refill_fts()
            records.db.set_meta(self._expected_meta())
            self._settle_index_kind(records)
            cache = IndexCache(self.settings, self.index_path, records.db.store_id())
            cache.rebuild(records)
            cache.index.save(self.index_path)  # unlike a cache's save, a failure is the rebuild's
            return cache.index.live
        except (sqlite3.Error, OSError) as exc:
            raise backend_error(exc, self.root, "rebuilding the store") from exc
        finally:
            self._close_db()

    # -- plumbing -------------------------------------------------------------------------
    def require(self) -> Records:
        if self._records is None:
            raise MemoryBackendError(f"faiss backend at {self.root} is not open (call open())")
        return self._records

    async def run(self, doing: str, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on the FAISS worker threads, holding the database lock; SQLite and file
        errors become MemoryBackendError naming their cause."""
        records = self.require()

        def call() -> T:
            with records.db.lock:
                try:
                    return fn(*args)
                except (sqlite3.Error, OSError) as exc:
                    raise backend_error(exc, records.db.path, doing) from exc

        return await run_faiss(call)

    def _catch_up(self) -> None:
        """Bring the index up to every committed write (call holding the database lock)."""
        assert self._cache is not None
        self._cache.catch_up(self.require())

    # -- MemoryBackend --------------------------------------------------------------------
    def check_vectors(self, records: Sequence[MemoryRecord]) -> None:
        """Each vector has the store's dimension (a missing one is filled behind)."""
        for r in records:
            if r.vector is not None and r.vector.shape != (self.dimension,):
                shape = None if r.vector is None else r.vector.shape
                raise MemoryBackendError(
                    f"record {r.id!r}: vector shape {shape}, expected ({self.dimension},)"
                )

    async def upsert(self, records: Sequence[MemoryRecord]) -> None:
        if not records:
            return
        self.check_vectors(records)
        await self.run("storing memories", self.require().upsert, records)

    async def pending_vectors(
        self, limit: int, skip: Sequence[int] = (), among: tuple[str, Sequence[str]] | None = None,
    ) -> dict[int, str | None]:
        return await self.run("reading memories without vectors", self.require().pending_vectors,
                               limit, list(skip), among)

    async def fill_vectors(self, items: Sequence[tuple[int, np.ndarray]]) -> list[str]:
        for seq, vector in items:
            if np.shape(vector) != (self.dimension,):
                raise MemoryBackendError(f"row {seq}: vector shape {np.shape(vector)}, "
                                         f"expected ({self.dimension},)")
        return await self.run("storing vectors", self.require().fill_vectors, list(items))

    async def pending_figures(self) -> tuple[int, float | None]:
        return await self.run("counting memories without vectors",
                               self.require().pending_figures)

    def fact_store(self) -> EmbeddedFactStore:
        if self._fact_store is None:
            from DeepResearch.src.memory.backends.embedded.facts import EmbeddedFactStore

            self._fact_store = EmbeddedFactStore(self)
        return self._fact_store

    async def get(
        self, ids: Sequence[str], namespace: str = DEFAULT_NAMESPACE
    ) -> list[MemoryRecord]:
        return await self.run("reading memories", self.require().get, list(ids), namespace)

    async def delete(self, flt: MemoryFilter) -> int:
        """The records and, in the same transaction, the facts built on them (facts.py)."""
        return await self.run("deleting memories", self.require().delete, flt,
                               self.fact_store().forget)

    async def move(
        self, ids: Sequence[str], from_namespace: str, to_namespace: str,
        metadata: Mapping[str, Any | None] | None = None,
    ) -> int:
        """Records re-filed and their metadata patched in one SQLite transaction
        (records.py); the FAISS index is unchanged (a row keeps its seq), no fact is
        touched."""
        patch = metadata_patch(metadata)
        return await self.run("moving memories", self.require().move, list(ids),
                               from_namespace, to_namespace, patch)

    async def record_access(self, ids: Sequence[str], namespace: str, at: float) -> None:
        if ids:
            await self.run("recording accesses", self.require().record_access, list(ids),
                           namespace, at)

    async def access_stats(self, ids: Sequence[str], namespace: str) -> dict[str, AccessStats]:
        found = await self.run("reading access statistics", self.require().access_stats,
                               list(ids), namespace)
        return {i: AccessStats(*found[i]) for i in ids if i in found}

    async def vector_search(
        self, vector: np.ndarray, k: int, flt: MemoryFilter
    ) -> list[Candidate]:
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dimension:
            raise MemoryBackendError(
                f"query vector has dimension {query.shape[0]}, index has {self.dimension}"
            )
        return await self.run("searching memories", self._vector_search_sync, query, k, flt)

    def _vector_search_sync(self, query: np.ndarray, k: int, flt: MemoryFilter) -> list[Candidate]:
        self._catch_up()
        records, index = self.require(), self._index
        assert index is not None
        if k <= 0 or index.live == 0:
            return []
        if flt != MemoryFilter():
            seqs = records.selective_seqs(flt, self._selective_rows())
            if seqs is not None:  # exact, over just those rows
                seqs, vectors = self._vectors_of(seqs)
                if not len(seqs):
                    return []
                sims = vectors @ query
                top = np.argsort(-sims, kind="stable")[:k]
                return self._candidates(seqs[top], sims[top], flt)
        fetch = 4 * k + len(index.stale)
        while True:
            seqs, sims = index.search(query, fetch)
            if flt != MemoryFilter():
                passing = set(records.first_matching(seqs.tolist(), flt, k))
                keep = np.fromiter((s in passing for s in seqs.tolist()), bool, len(seqs))
                seqs, sims = seqs[keep], sims[keep]
            if len(seqs) >= k or fetch >= index.index.ntotal:
                return self._candidates(seqs[:k], sims[:k], flt)
            records.probe_again(flt)
            fetch *= 4

    def _vectors_of(self, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        assert self._index is not None
        return vectors_of_rows(self._index, self.require(), seqs)

    def _selective_rows(self) -> int:
        """Filters matching at most this many rows are searched over just those rows."""
        return max(SELECTIVE_ROWS, int(SELECTIVE_SHARE * (self._index.live if self._index else 0)))

    def _candidates(self, seqs: np.ndarray, sims: np.ndarray, flt: MemoryFilter) -> list[Candidate]:
        found = self.require().by_seqs(seqs.tolist(), flt)
        scores = np.clip(sims, -1.0, 1.0).tolist()
        return [Candidate(found[s], score) for s, score in zip(seqs.tolist(), scores, strict=True)
                if s in found]

    async def text_search(self, query: str, k: int, flt: MemoryFilter) -> list[Candidate]:
        def search() -> list[Candidate]:
            records = self.require()
            self._catch_up()  # the index's size is the store's
            assert self._index is not None
            hits = records.text_search(query, k, flt, self._selective_rows(), self._index.live,
                                       self.lexical_max_postings)
            found = records.by_seqs([seq for seq, _ in hits], MemoryFilter())
            return [Candidate(found[seq], float(score)) for seq, score in hits if seq in found]

        return await self.run("searching memories", search)

    async def scan(
        self, flt: MemoryFilter, limit: int | None = None, offset: int = 0
    ) -> list[MemoryRecord]:
        return await self.run("reading memories", self.require().scan, flt, limit, offset)

    async def count(self, flt: MemoryFilter) -> int:
        return await self.run("counting memories", self.require().count, flt)

    async def related_many(
        self, record_ids: Sequence[str], relation_types: Sequence[str] | None, depth: int,
        flt: MemoryFilter | None = None,
    ) -> dict[str, list[RelatedRecord]]:
        return await self.run("reading related memories", walk, self.require(),
                               list(record_ids), relation_types, depth, flt)

    async def health(self) -> BackendHealth:
        if self._records is None or self._index is None:
            return BackendHealth(ok=False, backend=self.name, detail=f"{self.root} not open")
        try:
            n = await self.count(MemoryFilter())
        except MemoryBackendError as exc:
            return BackendHealth(ok=False, backend=self.name, detail=str(exc))
        return BackendHealth(
            ok=True, backend=self.name,
            detail=f"{n} records in {self.root} ({self.settings.kind} FAISS index, {self.metric})",
        )

    @staticmethod
    def _marker_key(namespace: str, name: str) -> str:
        """A marker's row of the meta table (JSON: any namespace and name, unambiguous)."""
        return "marker:" + json.dumps([namespace, name])

    async def get_marker(self, namespace: str, name: str) -> float | None:
        key = self._marker_key(namespace, name)
        value = await self.run("reading a store marker", self.require().db.meta_value, key)
        try:
            return None if value is None else float(value)
        except ValueError:
            raise MemoryBackendError(
                f"memory store {self.root}: meta {key} holds {value!r}, not a number") from None

    async def set_marker(self, namespace: str, name: str, value: float) -> None:
        await self.run("recording a store marker", self.require().db.set_meta,
                       {self._marker_key(namespace, name): repr(float(value))})

    async def index_agreement(self) -> dict[str, Any]:
        def check() -> dict[str, Any]:
            records = self.require()
            self._catch_up()
            assert self._index is not None
            figures, problems = index_agreement(records, self._index)
            return {**figures, "agree": not problems, "problems": problems}

        return await self.run("comparing the vector index with the records", check)

    async def verify(self) -> list[str]:
        """The full check: SQLite's integrity_check, FTS5's, the records reads cannot decode
        (decoding.py), the index file (checksum, store id), and the index against the records.
        Problems found (none: sound)."""
        def check() -> list[str]:
            records = self.require()
            problems = records.db.integrity_problems()
            if problems:
                return problems
            self._catch_up()
            assert self._index is not None
            return damaged_summary(records.damaged()) + verify_index(
                records, self._index, self.index_path)

        return await self.run("checking the store", check)
