"""`faiss`: records, vectors and tokens in SQLite (the truth); a vector index (exact numpy for
the flat kind, FAISS HNSW for the hnsw kind) and a BM25 index in process as rebuildable caches
(faiss_caches.py).

Layout of `memory.faiss.path`: `memory.sqlite3` (+ WAL), `index.flat` (or, for the HNSW kind,
`index.faiss`) and `lexical.npz`.

- A write returns after the SQLite transaction committed; both in-process caches are updated
  too, and saved atomically on close. After a crash, open() catches them up with the rows they
  missed (new seqs) and drops rows deleted since.
- The database remembers model, dimension and metric; opening it with other settings raises
  IndexMismatchError; `rebuild()` (CLI: `deepresearch-memory rebuild`) rebuilds the caches
  from the records, re-embedding them when the model changed.
- Filtered search (vector and lexical alike; faiss_search.py): a filter matching many rows
  over-fetches and post-filters in SQL; a selective one (below SELECTIVE_FRACTION of rows)
  searches only the matching seqs (only their rows of a flat index, exact numpy on HNSW, a
  row restriction for BM25), so a small session inside a large store still gets its true top-k.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from DeepResearch.src.memory.backends.base import (
    MAX_COPY_WIDENING,
    BackendHealth,
    Candidate,
    MemoryBackend,
    MemoryFilter,
    MemoryRecord,
    RelatedRecord,
)
from DeepResearch.src.memory.backends.faiss_caches import (
    FLAT_FILE,
    INDEX_FILE,
    LexicalCache,
    LiveSeqs,
    Reembed,
    VectorCache,
    rebuild_caches,
    rebuild_hint,
    reembed_records,
)
from DeepResearch.src.memory.backends.faiss_search import (
    EXACT_HNSW_LIMIT,
    FilterPlan,
    make_plan,
    overfetch,
    resolve,
)
from DeepResearch.src.memory.backends.sqlite_graph import walk
from DeepResearch.src.memory.backends.sqlite_records import SQLiteRecords
from DeepResearch.src.memory.config import FaissConfig
from DeepResearch.src.memory.errors import IndexMismatchError, MemoryBackendError
from DeepResearch.src.memory.text import tokenize
from DeepResearch.src.utils.faiss_threads import one_openmp_thread_here, run_faiss

__all__ = ["DB_FILE", "FLAT_FILE", "INDEX_FILE", "FaissBackend"]

DB_FILE = "memory.sqlite3"
T = TypeVar("T")
# Reads of a store up to this many live records run in the calling (event loop's) thread: a
# filtered flat search and its SQLite reads take ~0.1-2 ms there, while each hand-off to the
# FAISS pool cost ~0.3-0.5 ms on 2 cores, and a recall makes three or four (search, graph
# walks, session neighbours). Larger stores, and any read that finds a write holding the
# caches, go to the pool, so the event loop never waits long.
INLINE_READS_UP_TO = 20_000


def _holding_caches(method: Callable[..., T]) -> Callable[..., T]:
    """Run `method` holding the backend's caches lock (see FaissBackend.__init__)."""

    @functools.wraps(method)
    def holding(self: FaissBackend, *args: Any) -> T:
        with self._caches_lock:
            return method(self, *args)

    return holding


class FaissBackend(MemoryBackend):
    name: ClassVar[str] = "faiss"

    def __init__(self, config: FaissConfig, *, dimension: int, metric: str, model: str) -> None:
        self.config = config
        self.dimension = dimension
        self.metric = metric
        self.model = model
        self.root = Path(config.path)
        self._db: SQLiteRecords | None = None
        self._vectors: VectorCache | None = None
        self._lexical: LexicalCache | None = None
        self._total = 0  # live records, kept in step with every write
        self._plan_lock = threading.Lock()
        # The backend's pool has two workers: a write-behind flush may run beside a search,
        # and neither index may be searched while rows are added or removed (an add may move
        # its vectors: FAISS's buffer, the flat index's tail). Cache writes and reads take
        # turns; reentrant, as one hand-off may run both searches of a retrieve.
        self._caches_lock = threading.RLock()
        self._last_plan: tuple[MemoryFilter, FilterPlan] | None = None

    # -- lifecycle ------------------------------------------------------------------------
    async def open(self) -> None:
        await run_faiss(self._open_sync)

    def _open_sync(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MemoryBackendError(f"cannot create memory folder {self.root}: {exc}") from exc
        db = SQLiteRecords(self.root / DB_FILE, synchronous=self.config.synchronous)
        try:
            self._check_meta(db)
            self._db = db
            self._total = db.count(MemoryFilter())
            self._load_caches(db)
        except BaseException:
            db.close()
            self._db = None
            raise

    def _expected_meta(self) -> dict[str, str]:
        return {"model": self.model, "dimension": str(self.dimension), "metric": self.metric}

    def _check_meta(self, db: SQLiteRecords) -> None:
        stored = db.meta()
        expected = self._expected_meta()
        if not stored:
            db.set_meta(expected)
            return
        diffs = [
            f"{k}: stored {stored.get(k)!r}, configured {v!r}"
            for k, v in expected.items()
            if stored.get(k) != v
        ]
        if diffs:
            raise IndexMismatchError(
                f"memory store {self.root} was built with other settings ({'; '.join(diffs)}). "
                f"Configure the stored values, or rebuild the store for the new ones with {rebuild_hint(self.root)}."
            )

    async def close(self) -> None:
        await run_faiss(self._close_sync)

    @_holding_caches
    def _close_sync(self) -> None:
        if self._db is None:
            return
        try:
            if self._vectors is not None and self._lexical is not None:
                self._vectors.save_if_worth_it()
                self._lexical.save_if_worth_it()
        finally:
            self._db.close()
            self._db = None
            self._vectors = self._lexical = None

    def _load_caches(self, db: SQLiteRecords) -> None:
        live = LiveSeqs(db)
        self._vectors = VectorCache(self.config, self.root, self.dimension, self.metric)
        self._vectors.load(db, live)
        self._lexical = LexicalCache(self.root)
        self._lexical.load(db, live)

    def rebuild(self, reembed: Reembed | None = None, batch_size: int = 256) -> int:
        """Rebuild index (and, with `reembed`, every vector) from the records; store the
        configured model/dimension/metric. Works on a store that open() refuses. Returns the
        number of records indexed."""
        self.root.mkdir(parents=True, exist_ok=True)
        db = self._db or SQLiteRecords(self.root / DB_FILE, synchronous=self.config.synchronous)
        self._db = db
        try:
            if reembed is not None:
                reembed_records(db, reembed, self.dimension, batch_size)
            else:
                _, sample = db.vectors_after(0)
                if sample.size and sample.shape[1] != self.dimension:
                    raise IndexMismatchError(
                        f"stored vectors have dimension {sample.shape[1]}, configured "
                        f"{self.dimension}: rebuild with re-embedding (the CLI does this when "
                        "the model changed)"
                    )
            db.set_meta(self._expected_meta())
            return rebuild_caches(db, self.config, self.root, self.dimension, self.metric)
        finally:
            db.close()
            self._db = None
            self._vectors = self._lexical = None

    # -- MemoryBackend --------------------------------------------------------------------
    async def _read(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in this thread when the store is small and no write holds the caches
        (see INLINE_READS_UP_TO), else on the FAISS pool."""
        if self._total <= INLINE_READS_UP_TO and self._caches_lock.acquire(blocking=False):
            try:
                with one_openmp_thread_here():
                    return fn(*args)
            finally:
                self._caches_lock.release()
        return await run_faiss(fn, *args)

    def _require(self) -> SQLiteRecords:
        if self._db is None or self._vectors is None or self._lexical is None:
            raise MemoryBackendError(f"faiss backend at {self.root} is not open (call open())")
        return self._db

    def _caches(self) -> tuple[VectorCache, LexicalCache]:
        self._require()
        assert self._vectors is not None and self._lexical is not None
        return self._vectors, self._lexical

    async def upsert(self, records: Sequence[MemoryRecord]) -> None:
        if not records:
            return
        for r in records:
            if r.vector is None or r.vector.shape != (self.dimension,):
                shape = None if r.vector is None else r.vector.shape
                raise MemoryBackendError(
                    f"record {r.id!r}: vector shape {shape}, expected ({self.dimension},)"
                )
        await run_faiss(self._upsert_sync, records)

    @_holding_caches
    def _upsert_sync(self, records: Sequence[MemoryRecord]) -> None:
        db = self._require()
        vector_cache, lexical = self._caches()
        added, removed = db.upsert(records)
        self._total += len(added) - len(removed)
        self._drop_from_caches(removed)
        vectors = np.stack([np.asarray(r.vector, dtype=np.float32) for r in records])
        vector_cache.add(np.asarray(added, dtype=np.int64), vectors)
        for seq, record in zip(added, records, strict=True):
            lexical.add(seq, tokenize(record.content))  # the tokens db.upsert gave FTS5

    def _drop_from_caches(self, seqs: Sequence[int]) -> None:
        vector_cache, lexical = self._caches()
        vector_cache.remove(seqs, self._db)
        lexical.remove(seqs)

    async def get(self, ids: Sequence[str]) -> list[MemoryRecord]:
        return await self._read(self._require().get, list(ids))

    async def delete(self, flt: MemoryFilter) -> int:
        def run() -> int:
            with self._caches_lock:
                seqs = self._require().delete(flt)
                self._total -= len(seqs)
                self._drop_from_caches(seqs)
                return len(seqs)

        return await run_faiss(run)

    def _plan(self, db: SQLiteRecords, flt: MemoryFilter) -> FilterPlan:
        """The plan for `flt`, made once per filter object: a retrieve's vector and lexical
        searches get the same one, and run side by side on one SQLite connection."""
        with self._plan_lock:
            if self._last_plan is not None and self._last_plan[0] is flt:
                return self._last_plan[1]
            plan = make_plan(db, flt, self._caches()[0].live, self._total)
            self._last_plan = (flt, plan)
            return plan

    def _to_similarity(self, raw: np.ndarray) -> np.ndarray:
        # unit vectors: cosine = inner product = 1 - squared_L2 / 2
        return 1.0 - raw / 2.0 if self.metric == "euclidean" else raw

    async def vector_search(
        self, vector: np.ndarray, k: int, flt: MemoryFilter
    ) -> list[Candidate]:
        return await self._read(self._vector_search_sync, vector, k, flt)

    async def distinct_vector_search(
        self, vector: np.ndarray, k: int, flt: MemoryFilter
    ) -> list[Candidate]:
        # Copies are told apart on their type and text (copy_keys), without reading vectors,
        # metadata or relations; only the k kept are read whole.
        return await self._read(self._vector_search_sync, vector, k, flt, True)

    async def dense_and_lexical(
        self, vector: np.ndarray, query: str, k: int, flt: MemoryFilter
    ) -> tuple[list[Candidate], list[Candidate]]:
        # One read for both: they share the filter plan and need the GIL in turn anyway (on
        # the pool, one hand-off: a compound workflow run came out 6-18 ms faster).
        def both() -> tuple[list[Candidate], list[Candidate]]:
            return self._vector_search_sync(vector, k, flt, True), self._text_search_sync(query, k, flt)

        return await self._read(both)

    @_holding_caches
    def _vector_search_sync(
        self, vector: np.ndarray, k: int, flt: MemoryFilter, distinct: bool = False
    ) -> list[Candidate]:
        db = self._require()
        cache = self._caches()[0]
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dimension:
            raise MemoryBackendError(
                f"query vector has dimension {query.shape[0]}, index has {self.dimension}"
            )
        plan = self._plan(db, flt) if k > 0 else FilterPlan(0)
        if plan.n_match == 0:
            return []
        if plan.seqs is None:
            def search(fetch: int) -> tuple[np.ndarray, np.ndarray]:
                raw, ids = cache.index.search(query, fetch)
                return ids, self._to_similarity(raw)

            return overfetch(search, db, flt, k, plan, cache.index.ntotal, cache.stale, distinct)
        widest = min(len(plan.seqs), k * MAX_COPY_WIDENING if distinct else k)
        if cache.hnsw and len(plan.seqs) <= EXACT_HNSW_LIMIT:
            seqs, vectors = db.vectors_by_filter(flt)
            sims = vectors @ query
            top = np.argsort(-sims, kind="stable")[:widest]
            return resolve(db, seqs[top], sims[top], flt, k, distinct)
        fetch = min(k * 4 if distinct else k, widest)
        checked: dict[int, Any] = {}
        while True:  # once, unless copies must make room for different memories
            raw, ids = cache.index.search(query, fetch, among=plan.seqs)
            found = resolve(db, ids, self._to_similarity(raw), flt, k, distinct, checked)
            if len(found) >= k or fetch >= widest:
                return found
            fetch = min(widest, fetch * 4)

    async def text_search(self, query: str, k: int, flt: MemoryFilter) -> list[Candidate]:
        return await self._read(self._text_search_sync, query, k, flt)

    @_holding_caches
    def _text_search_sync(self, query: str, k: int, flt: MemoryFilter) -> list[Candidate]:
        db = self._require()
        lexical = self._caches()[1].index
        tokens = tokenize(query)
        plan = self._plan(db, flt) if k > 0 and tokens else FilterPlan(0)
        if plan.n_match == 0:
            return []
        if plan.seqs is not None:
            seqs, scores = lexical.search(tokens, k, among=plan.seqs)
            return resolve(db, seqs, scores, flt, k)
        return overfetch(
            lambda fetch: lexical.search(tokens, fetch), db, flt, k, plan, len(lexical),
            self._caches()[0].stale,
        )

    async def scan(
        self, flt: MemoryFilter, limit: int | None = None, offset: int = 0
    ) -> list[MemoryRecord]:
        # On the pool (a scan may read every row), holding the caches like a write: a small
        # read that comes meanwhile then waits on the pool too, not in the event loop.
        return await run_faiss(self._scan_sync, flt, limit, offset)

    @_holding_caches
    def _scan_sync(self, flt: MemoryFilter, limit: int | None, offset: int) -> list[MemoryRecord]:
        return self._require().scan(flt, limit, offset)

    async def count(self, flt: MemoryFilter) -> int:
        return await self._read(self._require().count, flt)

    async def related_many(
        self, record_ids: Sequence[str], relation_types: Sequence[str] | None, depth: int,
        flt: MemoryFilter | None = None,
    ) -> dict[str, list[RelatedRecord]]:
        """The batched walk of sqlite_graph.py (records filtered in SQL), in one read."""
        return await self._read(walk, self._require(), list(record_ids), relation_types, depth, flt)

    async def health(self) -> BackendHealth:
        if self._db is None or self._vectors is None:
            return BackendHealth(ok=False, backend=self.name, detail=f"{self.root} not open")
        try:
            n = await self.count(MemoryFilter())
        except Exception as exc:
            return BackendHealth(ok=False, backend=self.name, detail=f"{self.root}: {exc}")
        return BackendHealth(
            ok=True,
            backend=self.name,
            detail=f"{n} records in {self.root} ({self.config.index_kind}, {self.metric}, "
            f"{self._vectors.index.ntotal} vectors indexed)",
        )
