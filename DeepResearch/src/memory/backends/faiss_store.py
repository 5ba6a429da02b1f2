"""`faiss`: records and vectors in SQLite (the truth), a FAISS index as a rebuildable cache.

Layout of `memory.faiss.path`: `memory.sqlite3` (+ WAL) and `index.faiss` (a JSON header line --
up to which record seq it holds, kind, metric, dimension -- then the serialised index).

- A write returns after the SQLite transaction committed; the in-process index is updated
  too, and saved atomically on close. After a crash, open() catches the saved index up with
  the rows it missed (new seqs) and drops rows deleted since.
- The database remembers model, dimension and metric; opening it with other settings raises
  IndexMismatchError; `rebuild()` (CLI: `deepresearch-memory rebuild`) rebuilds the index from
  the records, re-embedding them when the model changed.
- Filtered search: a filter matching most rows over-fetches and post-filters in SQL; a
  selective one (below SELECTIVE_FRACTION of rows) searches only the matching seqs (an
  IDSelector on a flat index, exact numpy search on HNSW), so a small session inside a large
  store still gets its true top-k.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

import faiss
import numpy as np

from DeepResearch.src.memory.backends.base import (
    FOLLOWS,
    BackendHealth,
    Candidate,
    MemoryBackend,
    MemoryFilter,
    MemoryRecord,
    RelatedRecord,
)
from DeepResearch.src.memory.backends.sqlite_records import SQLiteRecords
from DeepResearch.src.memory.compression import full_content
from DeepResearch.src.memory.config import FaissConfig
from DeepResearch.src.memory.errors import IndexMismatchError, MemoryBackendError

SELECTIVE_FRACTION = 0.2
EXACT_HNSW_LIMIT = 50_000  # matching rows up to which a selective HNSW search is exact numpy
DB_FILE = "memory.sqlite3"
INDEX_FILE = "index.faiss"

Reembed = Callable[[list[str]], np.ndarray]


class FaissBackend(MemoryBackend):
    name: ClassVar[str] = "faiss"

    def __init__(self, config: FaissConfig, *, dimension: int, metric: str, model: str) -> None:
        self.config = config
        self.dimension = dimension
        self.metric = metric
        self.model = model
        self.root = Path(config.path)
        self._db: SQLiteRecords | None = None
        self._index: faiss.IndexIDMap | None = None
        self._watermark = 0
        self._stale = 0  # removed seqs still inside an HNSW index (it cannot remove)
        self._total = 0  # live records, kept in step with every write

    # -- lifecycle ------------------------------------------------------------------------
    async def open(self) -> None:
        await asyncio.to_thread(self._open_sync)

    def _open_sync(self) -> None:
        faiss.omp_set_num_threads(1)  # torch and FAISS fight over 2 cores (API_NOTES.md)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MemoryBackendError(f"cannot create memory folder {self.root}: {exc}") from exc
        db = SQLiteRecords(self.root / DB_FILE, synchronous=self.config.synchronous)
        try:
            self._check_meta(db)
            self._db = db
            self._total = db.count(MemoryFilter())
            self._load_index()
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
                "Configure the stored values, or rebuild the store for the new ones with "
                f"`deepresearch-memory rebuild memory.faiss.path={self.root}`."
            )

    async def close(self) -> None:
        await asyncio.to_thread(self._close_sync)

    def _close_sync(self) -> None:
        if self._db is None:
            return
        try:
            self._save_index()
        finally:
            self._db.close()
            self._db = None
            self._index = None

    # -- the FAISS cache ------------------------------------------------------------------
    def _faiss_metric(self) -> int:
        return faiss.METRIC_L2 if self.metric == "euclidean" else faiss.METRIC_INNER_PRODUCT

    def _new_index(self) -> faiss.IndexIDMap:
        if self.config.index_kind == "hnsw":
            inner = faiss.IndexHNSWFlat(self.dimension, self.config.hnsw_m, self._faiss_metric())
            inner.hnsw.efConstruction = self.config.hnsw_ef_construction
            inner.hnsw.efSearch = self.config.hnsw_ef_search
        elif self.metric == "euclidean":
            inner = faiss.IndexFlatL2(self.dimension)
        else:
            inner = faiss.IndexFlatIP(self.dimension)
        return faiss.IndexIDMap(inner)

    def _load_index(self) -> None:
        assert self._db is not None
        index_path = self.root / INDEX_FILE
        self._index, self._watermark, self._stale = self._new_index(), 0, 0
        if index_path.exists():
            try:
                blob = index_path.read_bytes()
                header, _, body = blob.partition(b"\n")
                saved = json.loads(header)
                index = faiss.deserialize_index(np.frombuffer(body, dtype=np.uint8))
                watermark = int(saved["watermark"])
                if not isinstance(index, faiss.IndexIDMap):
                    raise ValueError(f"expected an IndexIDMap, found {type(index).__name__}")
            except Exception as exc:
                raise IndexMismatchError(
                    f"the FAISS index {index_path} is corrupt or unreadable ({exc}); the "
                    "records are intact: run "
                    f"`deepresearch-memory rebuild memory.faiss.path={self.root}`"
                ) from exc
            want = {"kind": self.config.index_kind, "metric": self.metric, "dimension": self.dimension}
            got = {key: saved.get(key) for key in want}
            if got != want or index.d != self.dimension:
                raise IndexMismatchError(
                    f"the FAISS index {index_path} was built as {got}, configured {want}: "
                    f"run `deepresearch-memory rebuild memory.faiss.path={self.root}`"
                )
            if self._db.max_seq() < watermark:
                raise IndexMismatchError(
                    f"the FAISS index {index_path} is newer than its records (watermark "
                    f"{watermark} > last record {self._db.max_seq()}): run "
                    f"`deepresearch-memory rebuild memory.faiss.path={self.root}`"
                )
            self._index, self._watermark = index, watermark
        self._catch_up()

    def _catch_up(self) -> None:
        """Add rows the saved index missed and drop rows deleted since it was saved."""
        assert self._db is not None and self._index is not None
        in_index = np.zeros(0, dtype=np.int64)
        if self._index.ntotal:
            in_index = faiss.vector_to_array(self._index.id_map).astype(np.int64)
            gone = np.setdiff1d(in_index, self._db.all_seqs_upto(self._watermark))
            if self.config.index_kind == "hnsw":
                self._stale = len(gone)
                if self._stale > max(1000, self._index.ntotal // 4):
                    self._rebuild_index()
                    return
            else:
                self._index.remove_ids(gone)
        seqs, vectors = self._db.vectors_after(self._watermark)
        fresh = ~np.isin(seqs, in_index)
        self._add(seqs[fresh], vectors[fresh] if len(seqs) else vectors)

    def _add(self, seqs: np.ndarray, vectors: np.ndarray) -> None:
        if len(seqs) == 0:
            return
        assert self._index is not None
        self._index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), seqs)
        self._watermark = max(self._watermark, int(seqs.max()))

    def _remove(self, seqs: Sequence[int] | np.ndarray) -> None:
        if len(seqs) == 0:
            return
        assert self._index is not None
        if self.config.index_kind == "hnsw":
            self._stale += len(seqs)  # HNSW cannot remove: SQLite no longer resolves them
            if self._stale > max(1000, self._index.ntotal // 4):
                self._rebuild_index()
        else:
            self._index.remove_ids(np.asarray(seqs, dtype=np.int64))

    def _rebuild_index(self) -> None:
        assert self._db is not None
        self._index, self._watermark, self._stale = self._new_index(), 0, 0
        seqs, vectors = self._db.vectors_after(0)
        self._add(seqs, vectors)

    def _save_index(self) -> None:
        """One file, header line + serialised index, replaced atomically."""
        if self._index is None:
            return
        header = json.dumps(
            {
                "watermark": self._watermark,
                "kind": self.config.index_kind,
                "metric": self.metric,
                "dimension": self.dimension,
            }
        ).encode()
        tmp = self.root / (INDEX_FILE + ".tmp")
        with open(tmp, "wb") as fh:
            fh.write(header + b"\n")
            fh.write(faiss.serialize_index(self._index).tobytes())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.root / INDEX_FILE)

    def rebuild(self, reembed: Reembed | None = None, batch_size: int = 256) -> int:
        """Rebuild index (and, with `reembed`, every vector) from the records; store the
        configured model/dimension/metric. Works on a store that open() refuses. Returns the
        number of records indexed."""
        self.root.mkdir(parents=True, exist_ok=True)
        db = self._db or SQLiteRecords(self.root / DB_FILE, synchronous=self.config.synchronous)
        self._db = db
        try:
            if reembed is not None:
                seqs = db.all_seqs_upto(db.max_seq())
                for start in range(0, len(seqs), batch_size):
                    chunk = [int(s) for s in seqs[start : start + batch_size]]
                    records = db.by_seqs(chunk, MemoryFilter())
                    order = [s for s in chunk if s in records]
                    texts = [
                        full_content(records[s].content, records[s].content_codec, records[s].content_blob)
                        for s in order
                    ]
                    vectors = reembed(texts)
                    if vectors.shape != (len(order), self.dimension):
                        raise IndexMismatchError(
                            f"re-embedding gave shape {vectors.shape}, expected "
                            f"({len(order)}, {self.dimension})"
                        )
                    db.set_vectors(list(zip(order, vectors, strict=True)))
            else:
                _, sample = db.vectors_after(0)
                if sample.size and sample.shape[1] != self.dimension:
                    raise IndexMismatchError(
                        f"stored vectors have dimension {sample.shape[1]}, configured "
                        f"{self.dimension}: rebuild with re-embedding (the CLI does this when "
                        "the model changed)"
                    )
            db.set_meta(self._expected_meta())
            self._rebuild_index()
            self._save_index()
            assert self._index is not None
            return int(self._index.ntotal)
        finally:
            db.close()
            self._db = None
            self._index = None

    # -- MemoryBackend --------------------------------------------------------------------
    def _require(self) -> SQLiteRecords:
        if self._db is None or self._index is None:
            raise MemoryBackendError(f"faiss backend at {self.root} is not open (call open())")
        return self._db

    async def upsert(self, records: Sequence[MemoryRecord]) -> None:
        if not records:
            return
        for r in records:
            if r.vector is None or r.vector.shape != (self.dimension,):
                shape = None if r.vector is None else r.vector.shape
                raise MemoryBackendError(
                    f"record {r.id!r}: vector shape {shape}, expected ({self.dimension},)"
                )
        await asyncio.to_thread(self._upsert_sync, records)

    def _upsert_sync(self, records: Sequence[MemoryRecord]) -> None:
        db = self._require()
        added, removed = db.upsert(records)
        self._total += len(added) - len(removed)
        self._remove(removed)
        vectors = np.stack([np.asarray(r.vector, dtype=np.float32) for r in records])
        self._add(np.asarray(added, dtype=np.int64), vectors)

    async def get(self, ids: Sequence[str]) -> list[MemoryRecord]:
        return await asyncio.to_thread(self._require().get, list(ids))

    async def delete(self, flt: MemoryFilter) -> int:
        def run() -> int:
            seqs = self._require().delete(flt)
            self._total -= len(seqs)
            self._remove(seqs)
            return len(seqs)

        return await asyncio.to_thread(run)

    def _to_similarity(self, raw: np.ndarray) -> np.ndarray:
        # unit vectors: cosine = inner product = 1 - squared_L2 / 2
        return 1.0 - raw / 2.0 if self.metric == "euclidean" else raw

    async def vector_search(
        self, vector: np.ndarray, k: int, flt: MemoryFilter
    ) -> list[Candidate]:
        return await asyncio.to_thread(self._vector_search_sync, vector, k, flt)

    def _vector_search_sync(self, vector: np.ndarray, k: int, flt: MemoryFilter) -> list[Candidate]:
        db = self._require()
        assert self._index is not None
        query = np.ascontiguousarray(np.asarray(vector, dtype=np.float32).reshape(1, -1))
        if query.shape[1] != self.dimension:
            raise MemoryBackendError(
                f"query vector has dimension {query.shape[1]}, index has {self.dimension}"
            )
        live = self._index.ntotal - self._stale
        if k <= 0 or live <= 0:
            return []
        unconditional = flt == MemoryFilter()
        if unconditional:
            n_match = live
        elif flt == MemoryFilter(live_at=flt.live_at):  # the TTL condition alone: two cheap counts
            n_match = self._total - db.count_expired(flt.live_at or 0.0)
        else:
            n_match = db.count(flt)
        if n_match == 0:
            return []
        if unconditional or n_match >= SELECTIVE_FRACTION * live:
            return self._overfetch_search(db, query, k, flt, n_match / live)
        seqs = db.matching_seqs(flt)
        if self.config.index_kind == "hnsw" and len(seqs) <= EXACT_HNSW_LIMIT:
            seqs, vectors = db.vectors_by_filter(flt)
            sims = vectors @ query[0]
            top = np.argsort(-sims, kind="stable")[:k]
            return self._resolve(db, seqs[top], sims[top], flt, k)
        params = (
            faiss.SearchParametersHNSW(efSearch=max(self.config.hnsw_ef_search, k))
            if self.config.index_kind == "hnsw"
            else faiss.SearchParameters()
        )
        params.sel = faiss.IDSelectorBatch(seqs)
        raw, ids = self._index.search(query, min(k, len(seqs)), params=params)
        return self._resolve(db, ids[0], self._to_similarity(raw[0]), flt, k)

    def _overfetch_search(
        self, db: SQLiteRecords, query: np.ndarray, k: int, flt: MemoryFilter, fraction: float
    ) -> list[Candidate]:
        assert self._index is not None
        total = self._index.ntotal
        fetch = min(total, math.ceil((k + self._stale) / max(fraction, 1e-9) * 1.5) + 8)
        while True:
            if self.config.index_kind == "hnsw":
                params = faiss.SearchParametersHNSW(efSearch=max(self.config.hnsw_ef_search, fetch))
                raw, ids = self._index.search(query, fetch, params=params)
            else:
                raw, ids = self._index.search(query, fetch)
            found = self._resolve(db, ids[0], self._to_similarity(raw[0]), flt, k)
            if len(found) >= k or fetch >= total:
                return found
            fetch = min(total, fetch * 4)

    def _resolve(
        self, db: SQLiteRecords, ids: np.ndarray, sims: np.ndarray, flt: MemoryFilter, k: int
    ) -> list[Candidate]:
        order = [(int(i), float(s)) for i, s in zip(ids, sims, strict=True) if i >= 0]
        records = db.by_seqs([i for i, _ in order], flt)
        out = [Candidate(records[i], s) for i, s in order if i in records]
        return out[:k]

    async def text_search(self, query: str, k: int, flt: MemoryFilter) -> list[Candidate]:
        hits = await asyncio.to_thread(self._require().text_search, query, k, flt, self._total)
        return [Candidate(record, score) for record, score in hits]

    async def scan(
        self, flt: MemoryFilter, limit: int | None = None, offset: int = 0
    ) -> list[MemoryRecord]:
        return await asyncio.to_thread(self._require().scan, flt, limit, offset)

    async def count(self, flt: MemoryFilter) -> int:
        return await asyncio.to_thread(self._require().count, flt)

    async def related(
        self, record_id: str, relation_types: Sequence[str] | None, depth: int
    ) -> list[RelatedRecord]:
        return await asyncio.to_thread(self._related_sync, record_id, relation_types, depth)

    def _related_sync(
        self, record_id: str, relation_types: Sequence[str] | None, depth: int
    ) -> list[RelatedRecord]:
        db = self._require()
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

    async def session_neighbours(
        self, record_ids: Sequence[str], radius: int
    ) -> dict[str, list[RelatedRecord]]:
        return await asyncio.to_thread(self._session_neighbours_sync, list(record_ids), radius)

    def _session_neighbours_sync(
        self, record_ids: list[str], radius: int
    ) -> dict[str, list[RelatedRecord]]:
        """One edges query per step for all starts together, one get for every record."""
        db = self._require()
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

    async def health(self) -> BackendHealth:
        if self._db is None or self._index is None:
            return BackendHealth(ok=False, backend=self.name, detail=f"{self.root} not open")
        try:
            n = await self.count(MemoryFilter())
        except Exception as exc:
            return BackendHealth(ok=False, backend=self.name, detail=f"{self.root}: {exc}")
        return BackendHealth(
            ok=True,
            backend=self.name,
            detail=f"{n} records in {self.root} ({self.config.index_kind}, {self.metric}, "
            f"{self._index.ntotal} vectors indexed)",
        )
