"""The HNSW kind's index: a FAISS HNSW index that grows without copying what it holds.

FAISS keeps an index's vectors in one buffer sized to fit, so the first row added to an index
read from disk reallocates and copies all of it (~85 ms, and the buffer's size again in
memory, at 100k rows of 384 floats, measured). `GrowingIndex` is the HNSW index read from
disk (or built whole), `base`, plus `delta`, an exact numpy index of the rows added since
(flat_vectors.py). Searches ask both and merge; `folded()` adds the delta to the base when the
index is about to be written, or once the delta has grown large. HNSW cannot remove rows: the
cache counts removed base rows as stale (faiss_caches.py); the delta drops its own.

Only a store of the HNSW kind imports this module, and with it FAISS.
"""

from __future__ import annotations

import faiss
import numpy as np

from DeepResearch.src.memory.backends.flat_vectors import FlatVectors, best_first

# The delta joins the base once it outgrows max(FOLD_MIN, an eighth of the base): a big
# brute-force delta beside an HNSW base would make every search brute force, and each fold
# is then paid for by that many adds.
FOLD_MIN = 4096
FOLD_SHARE = 8


def hnsw_index(dimension: int, metric: str, m: int, ef_construction: int) -> faiss.IndexIDMap:
    faiss_metric = faiss.METRIC_L2 if metric == "euclidean" else faiss.METRIC_INNER_PRODUCT
    inner = faiss.IndexHNSWFlat(dimension, m, faiss_metric)
    inner.hnsw.efConstruction = ef_construction
    return faiss.IndexIDMap(inner)


class GrowingIndex:
    def __init__(self, base: faiss.IndexIDMap, metric: str, ef_search: int) -> None:
        self.base = base
        self.metric = metric
        self.ef_search = ef_search
        self.delta = FlatVectors(base.d, metric)

    @property
    def ntotal(self) -> int:
        return int(self.base.ntotal + self.delta.ntotal)

    def ids(self) -> np.ndarray:
        """Every id held, base then delta."""
        base = faiss.vector_to_array(self.base.id_map).astype(np.int64)
        return np.concatenate([base, self.delta.ids()])

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        self.delta.add(vectors, ids)
        if self.delta.ntotal > max(FOLD_MIN, self.base.ntotal // FOLD_SHARE):
            self.folded()

    def remove(self, ids: np.ndarray) -> int:
        """Drop `ids` from the delta (the base cannot); how many it held."""
        return self.delta.remove(ids)

    def search(
        self, query: np.ndarray, k: int, among: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(raw scores, ids) of the k best over base and delta, best first (fewer when fewer
        are found); only ids in `among` when given."""
        params = faiss.SearchParametersHNSW(efSearch=max(self.ef_search, k))
        if among is not None:
            params.sel = faiss.IDSelectorBatch(np.asarray(among, dtype=np.int64))
        query = np.ascontiguousarray(np.asarray(query, dtype=np.float32).reshape(1, -1))
        raw, ids = self.base.search(query, k, params=params)
        found = ids[0] >= 0
        raw, ids = raw[0][found], ids[0][found]
        if not self.delta.ntotal:
            return raw, ids
        more_raw, more_ids = self.delta.search(query[0], k, among)
        return best_first(np.concatenate([raw, more_raw]), np.concatenate([ids, more_ids]),
                          k, self.metric)

    def folded(self) -> faiss.IndexIDMap:
        """The base with the delta added to it (the delta is then empty): one index to write."""
        for vectors, ids in self.delta.live_rows():
            self.base.add_with_ids(np.ascontiguousarray(vectors), ids)
        self.delta = FlatVectors(self.base.d, self.metric)
        return self.base
