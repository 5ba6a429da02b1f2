"""Exact vector search in numpy: the faiss backend's flat index.

A flat index scores every stored vector against the query, as FAISS's IndexFlat does; for one
query that is one BLAS matrix-vector product, and numpy's is as fast as FAISS's flat search
(384 dimensions, top 10: 0.09 vs 0.07 ms at 2k rows, 7.7 vs 7.6 ms at 100k, measured). Doing
it here spares every process that opens a flat store FAISS's import (~35-45 ms, more than a
run's eight recalls spend searching); FAISS stays the engine of the HNSW kind.

Rows live in two segments, each searched in place:
- `base`: the rows read from the cache file, usually a read-only memory map of it (a 100k
  store opens without reading its 150 MB; nothing is ever written into the map);
- `tail`: the rows added since, in a buffer that doubles when full.
Removing a row clears its `alive` flag (a map cannot be written into, and compacting on every
removal would copy the segment); a segment is compacted once a quarter of it is dead, and a
save writes only live rows.

Scores are FAISS's: the inner product for "cosine" and "dot_product", the squared L2
distance for "euclidean" (smaller is better).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

COMPACT_MIN = 1024  # dead rows a segment tolerates before max(this, a quarter) is reached
TAIL_START = 256  # the tail's first capacity in rows


def smaller_is_better(metric: str) -> bool:
    return metric == "euclidean"


def distinct(ids: np.ndarray) -> np.ndarray:
    """`ids` sorted, each once. Not np.unique: it imports numpy.ma (~9 ms in every process
    that makes a restricted search)."""
    ordered = np.sort(np.asarray(ids, dtype=np.int64))
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))] if len(ordered) else ordered


def best_first(
    raw: np.ndarray, ids: np.ndarray, k: int, metric: str
) -> tuple[np.ndarray, np.ndarray]:
    """The k best of (raw score, id) pairs, best first (equal scores among them keep their order)."""
    key = raw if smaller_is_better(metric) else -raw
    if k < len(key):
        keep = np.argpartition(key, k - 1)[:k]
        order = keep[np.argsort(key[keep], kind="stable")]
    else:
        order = np.argsort(key, kind="stable")
    return raw[order], ids[order]


class _Segment:
    """Rows [0, n) of `vectors` / `ids`, with an `alive` flag each once one was removed."""

    def __init__(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        self.vectors = vectors
        self.ids = ids
        self.n = len(ids)
        self.alive: np.ndarray | None = None  # None: every row is alive
        self.dead = 0
        self._lookup: tuple[np.ndarray, np.ndarray | None] | None = None
        self._sq_norms: np.ndarray | None = None

    def live_ids(self) -> np.ndarray:
        ids = self.ids[: self.n]
        return ids if self.alive is None else ids[self.alive[: self.n]]

    def live_vectors(self) -> np.ndarray:
        vectors = self.vectors[: self.n]
        return vectors if self.alive is None else vectors[self.alive[: self.n]]

    def append(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        need = self.n + len(ids)
        if need > len(self.ids):
            capacity = max(TAIL_START, need, 2 * len(self.ids))
            grown = np.empty((capacity, self.vectors.shape[1]), np.float32)
            grown[: self.n] = self.vectors[: self.n]
            grown_ids = np.empty(capacity, np.int64)
            grown_ids[: self.n] = self.ids[: self.n]
            self.vectors, self.ids = grown, grown_ids
            if self.alive is not None:
                self.alive = np.concatenate([self.alive[: self.n], np.ones(capacity - self.n, bool)])
        self.vectors[self.n : need] = vectors
        self.ids[self.n : need] = ids
        self.n = need
        self._lookup = self._sq_norms = None

    def rows_of(self, ids: np.ndarray) -> np.ndarray:
        """Positions of the live rows holding any of `ids`."""
        if self._lookup is None:
            held = self.ids[: self.n]
            if self.n < 2 or bool(np.all(held[1:] > held[:-1])):  # seq order, as saved
                self._lookup = (held, None)
            else:
                order = np.argsort(held, kind="stable")
                self._lookup = (held[order], order)
        ordered, order = self._lookup
        if not len(ordered):
            return np.zeros(0, np.int64)
        at = np.minimum(np.searchsorted(ordered, ids), len(ordered) - 1)
        at = at[ordered[at] == ids]
        rows = at if order is None else order[at]
        return rows if self.alive is None else rows[self.alive[rows]]

    def kill(self, rows: np.ndarray) -> None:
        if self.alive is None:
            self.alive = np.ones(len(self.ids), bool)
        self.alive[rows] = False
        self.dead += len(rows)
        if self.dead > max(COMPACT_MIN, self.n // 4):
            self.vectors, self.ids = self.live_vectors(), self.live_ids()  # copies: masked
            self.n, self.alive, self.dead = len(self.ids), None, 0
            self._lookup = self._sq_norms = None

    def sq_norms(self) -> np.ndarray:
        if self._sq_norms is None:
            vectors = self.vectors[: self.n]
            self._sq_norms = np.einsum("ij,ij->i", vectors, vectors)
        return self._sq_norms

    def scores(
        self, query: np.ndarray, metric: str, rows: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(raw scores, ids) of `rows` (every live row when None)."""
        if rows is None:
            vectors, ids = self.vectors[: self.n], self.ids[: self.n]
        else:
            vectors, ids = self.vectors[rows], self.ids[rows]
        raw = vectors @ query
        if smaller_is_better(metric):
            norms = self.sq_norms() if rows is None else self.sq_norms()[rows]
            raw = norms - 2.0 * raw + float(query @ query)
        if rows is None and self.alive is not None:
            live = self.alive[: self.n]
            raw, ids = raw[live], ids[live]
        return raw, ids


class FlatVectors:
    """An exact index of (id, vector) rows; ids are the records' seqs, each held once."""

    def __init__(self, dimension: int, metric: str) -> None:
        self.d = dimension
        self.metric = metric
        self.base = _Segment(np.zeros((0, dimension), np.float32), np.zeros(0, np.int64))
        self.tail = _Segment(np.zeros((0, dimension), np.float32), np.zeros(0, np.int64))

    @classmethod
    def of(cls, vectors: np.ndarray, ids: np.ndarray, metric: str) -> FlatVectors:
        """An index whose base is `vectors` / `ids`, used as they are (a read-only memory
        map included: they are never written into)."""
        index = cls(vectors.shape[1], metric)
        index.base = _Segment(vectors, ids)
        return index

    @property
    def ntotal(self) -> int:
        return self.base.n - self.base.dead + self.tail.n - self.tail.dead

    def _segments(self) -> tuple[_Segment, _Segment]:
        return self.base, self.tail

    def ids(self) -> np.ndarray:
        """Every id held, base then tail."""
        return np.concatenate([s.live_ids() for s in self._segments()])

    def live_rows(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(vectors, ids) of the live rows, segment by segment (what a save writes)."""
        for segment in self._segments():
            if segment.n - segment.dead:
                yield segment.live_vectors(), segment.live_ids()

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.d or len(vectors) != len(ids):
            raise ValueError(f"expected ({len(ids)}, {self.d}) vectors, got {vectors.shape}")
        self.tail.append(vectors, np.asarray(ids, dtype=np.int64))

    def remove(self, ids: np.ndarray) -> int:
        """Drop the rows holding `ids`; how many there were."""
        ids = distinct(ids)
        removed = 0
        for segment in self._segments():
            rows = segment.rows_of(ids)
            if len(rows):
                segment.kill(rows)
                removed += len(rows)
        return removed

    def search(
        self, query: np.ndarray, k: int, among: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(raw scores, ids) of the k best live rows, best first, fewer when fewer are held;
        only rows whose id is in `among` when given."""
        query = np.asarray(query, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.d:
            raise ValueError(f"query has dimension {query.shape[0]}, index has {self.d}")
        if among is not None:
            among = distinct(among)
        parts = [
            s.scores(query, self.metric, None if among is None else s.rows_of(among))
            for s in self._segments()
            if s.n
        ]
        if not parts or k <= 0:
            return np.zeros(0, np.float32), np.zeros(0, np.int64)
        raw = np.concatenate([p[0] for p in parts]) if len(parts) > 1 else parts[0][0]
        ids = np.concatenate([p[1] for p in parts]) if len(parts) > 1 else parts[0][1]
        return best_first(raw, ids, k, self.metric)
