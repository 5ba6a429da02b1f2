"""A FAISS index that grows without copying what it already holds.

FAISS keeps an index's vectors in one buffer sized to fit, so the first row added to an index
read from disk reallocates and copies all of it: ~85 ms, and the buffer's size again in
memory, at 100k rows of 384 floats (measured), in every process that writes to a large store.
`GrowingIndex` is the index read from disk (or built whole), `base`, plus `delta`, an exact
flat index of the rows added since. Searches ask both and merge; `folded()` adds the delta to
the base when the index is about to be written, or once the delta has grown large.

A flat base may be a read-only view of the index file (memory-mapped: a 100k store opens in
milliseconds instead of reading 150 MB). FAISS aborts the process on a write into such a
view, so nothing writes into it: removed rows are only remembered (`_dropped`) and filtered
out of its results, and folding first copies the live rows into an index of its own.
"""

from __future__ import annotations

import faiss
import numpy as np

# The delta joins the base once it outgrows max(FOLD_MIN, an eighth of the base): a big flat
# delta beside an HNSW base would make every search brute force, and each fold's copy of the
# base is then paid for by that many adds.
FOLD_MIN = 4096
FOLD_SHARE = 8
# Rows removed from a view base are filtered out of every search of it (each search asks it
# for that many more hits); past this many the base is copied into an index of its own.
DROPPED_MAX = 1024


def flat_index(dimension: int, metric: str) -> faiss.IndexIDMap:
    inner = faiss.IndexFlatL2(dimension) if metric == "euclidean" else faiss.IndexFlatIP(dimension)
    return faiss.IndexIDMap(inner)


def flat_rows(index: faiss.IndexIDMap) -> tuple[np.ndarray, np.ndarray]:
    """(vectors, ids) of a flat IndexIDMap; the vectors are a view of its storage, not a copy
    (valid while the index lives)."""
    ids = faiss.vector_to_array(index.id_map).astype(np.int64)
    if not index.ntotal:
        return np.zeros((0, index.d), np.float32), ids
    flat = faiss.downcast_index(index.index)
    vectors = faiss.rev_swig_ptr(flat.get_xb(), index.ntotal * index.d)
    return vectors.reshape(index.ntotal, index.d), ids


class GrowingIndex:
    def __init__(self, base: faiss.IndexIDMap, metric: str, *, base_is_view: bool = False) -> None:
        self.base = base
        self.metric = metric
        self.delta = flat_index(base.d, metric)
        self.base_is_view = base_is_view  # a read-only map of the index file (flat only)
        self._dropped = np.zeros(0, np.int64)  # ids removed from a view base, sorted

    @property
    def ntotal(self) -> int:
        return int(self.base.ntotal - len(self._dropped) + self.delta.ntotal)

    def _base_ids(self) -> np.ndarray:
        return faiss.vector_to_array(self.base.id_map).astype(np.int64)

    def ids(self) -> np.ndarray:
        """Every id held, base then delta."""
        parts = []
        if self.base.ntotal:
            base = self._base_ids()
            parts.append(base[~np.isin(base, self._dropped)] if len(self._dropped) else base)
        if self.delta.ntotal:
            parts.append(faiss.vector_to_array(self.delta.id_map).astype(np.int64))
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        self.delta.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), ids)
        if self.delta.ntotal > max(FOLD_MIN, self.base.ntotal // FOLD_SHARE):
            self.folded()

    def remove_from_delta(self, ids: np.ndarray) -> int:
        """Drop `ids` from the delta; how many it held."""
        if not self.delta.ntotal:
            return 0
        return int(self.delta.remove_ids(np.asarray(ids, dtype=np.int64)))

    def remove_from_base(self, ids: np.ndarray) -> None:
        """Drop `ids` from a flat base (an HNSW base cannot remove rows)."""
        ids = np.asarray(ids, dtype=np.int64)
        if not self.base_is_view:
            self.base.remove_ids(ids)
            return
        held = np.intersect1d(ids, self._base_ids())
        self._dropped = np.union1d(self._dropped, held)
        if len(self._dropped) > DROPPED_MAX:
            self._fold_flat()

    def search(
        self, query: np.ndarray, k: int, params: faiss.SearchParameters | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(distances, ids) of the k best over base and delta, as FAISS's own search gives
        them (missing hits: id -1, last). `params` (an IDSelector, HNSW settings) applies to
        both; the flat delta ignores what is not for it."""
        if len(self._dropped):  # ask for as many more as may be filtered out
            distances, ids = self.base.search(query, k + len(self._dropped), params=params)
            ids = np.where(np.isin(ids, self._dropped), -1, ids)
        else:
            distances, ids = self.base.search(query, k, params=params)
        if not self.delta.ntotal and not len(self._dropped):
            return distances, ids
        if self.delta.ntotal:
            more_distances, more_ids = self.delta.search(query, k, params=params)
            distances = np.concatenate([distances, more_distances], axis=1)
            ids = np.concatenate([ids, more_ids], axis=1)
        key = distances if self.metric == "euclidean" else -distances  # ascending = best first
        order = np.argsort(np.where(ids >= 0, key, np.inf), axis=1, kind="stable")[:, :k]
        return np.take_along_axis(distances, order, 1), np.take_along_axis(ids, order, 1)

    def folded(self) -> faiss.IndexIDMap:
        """The base with the delta added to it (the delta is then empty): one index to write."""
        if self.base_is_view:
            self._fold_flat()
        elif self.delta.ntotal:
            vectors, ids = flat_rows(self.delta)
            self.base.add_with_ids(vectors, ids)
            self.delta = flat_index(self.base.d, self.metric)
        return self.base

    def _fold_flat(self) -> None:
        """Replace a view base by a flat index of its own (FAISS may write into that) holding
        the base's live rows and then the delta's, built with one add. Copying the view out,
        then adding the delta to the copy (which reallocates it) copied every vector ~4 times:
        a save at 5.7k rows spent ~17 ms folding."""
        vectors, ids = flat_rows(self.base)
        if len(self._dropped):
            keep = ~np.isin(ids, self._dropped)
            vectors, ids = vectors[keep], ids[keep]
        more_vectors, more_ids = flat_rows(self.delta)
        owned = flat_index(self.base.d, self.metric)
        owned.add_with_ids(np.concatenate([vectors, more_vectors]), np.concatenate([ids, more_ids]))
        self.base, self.base_is_view, self._dropped = owned, False, np.zeros(0, np.int64)
        self.delta = flat_index(self.base.d, self.metric)
