"""The FAISS index kept in step with the SQLite records it caches.

The records are the truth; the index is rebuilt from them whenever it cannot be trusted, so
nothing here can lose a memory:

- `load`: the index file, caught up with the records; rebuilt (one warning) when the file is
  damaged, was built for another store (its store id), reflects changes the records do not
  have, holds another number of vectors, or a sample of its vectors differs from the records'.
- `catch_up`: before every read, rows committed since (by any connection or process: SQLite's
  `data_version` says whether there are any) are added and deletions applied.
- `save_if_worth`: at close, the file is rewritten only once catching up on the next open
  would cost more than rewriting (SAVE_MIN_CHANGES + 1/SAVE_SHARE of the index).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from DeepResearch.src.memory.backends.base import MemoryFilter
from DeepResearch.src.memory.backends.embedded.database import backend_error
from DeepResearch.src.memory.backends.embedded.records import Records, stack
from DeepResearch.src.memory.backends.embedded.vectors import (
    IndexSettings,
    OtherIndexKind,
    UnusableIndexFile,
    VectorIndex,
)
from DeepResearch.src.memory.faiss_pool import all_openmp_threads

CATCH_UP_BATCH = 10_000
SAVE_MIN_CHANGES = 64
SAVE_SHARE = 16
OPEN_SAMPLE = 256  # index vectors compared with the records' at every open
log = logging.getLogger(__name__)


class IndexCache:
    """The index of one open store (`index`), and the database state it last caught up with."""

    def __init__(self, settings: IndexSettings, path: Path, store_id: str) -> None:
        self.settings = settings
        self.path = path
        self.store_id = store_id
        self.index = VectorIndex(settings, store_id)
        self._seen: tuple[int, int] | None = None

    def load(self, records: Records) -> None:
        if self.path.exists():
            try:
                self.index.load(self.path)
                last_seq, last_pos = records.positions()
                if self.index.seq > last_seq or self.index.deleted_pos > last_pos:
                    raise UnusableIndexFile(
                        f"reflects changes up to record {self.index.seq} / deletion "
                        f"{self.index.deleted_pos}, the records end at {last_seq} / {last_pos}"
                    )
            except OtherIndexKind as exc:  # index_kind changed, or auto passed hnsw_above
                log.info("memory index %s is %s: building it from the records", self.path, exc)
                self.rebuild(records)
                self.save()
                return
            except (UnusableIndexFile, RuntimeError, OSError) as exc:
                log.warning("memory index %s is unusable (%s); rebuilding it from the records",
                            self.path, exc)
                self.rebuild(records)
                self.save()
                return
        self._seen = None
        self.catch_up(records)
        total = records.count(MemoryFilter())
        held = self.index.live + len(self.index.unindexed)  # damaged vectors are not indexed
        differ, compared = mismatched_vectors(records, self.index, OPEN_SAMPLE)
        if held != total or differ:
            log.warning("memory index %s holds %d vectors for %d records (%d of %d sampled "
                        "differ from the records'); rebuilding it from the records",
                        self.path, held, total, differ, compared)
            self.rebuild(records)
            self.save()

    def rebuild(self, records: Records) -> None:
        self.index = VectorIndex(self.settings, self.store_id)
        self._seen = None
        with all_openmp_threads():  # the store waits for it: use every core
            self.catch_up(records)
        self.index.changes = max(self.index.changes, 1)  # saved at close even when empty

    def catch_up(self, records: Records) -> None:
        """Bring the index up to every committed write (call holding the database lock)."""
        index = self.index
        now = records.db.changed_since(self._seen)
        if now is None:
            return
        deleted_pos = index.deleted_pos
        while True:
            rows, gone = records.changes_after(index.seq, deleted_pos, CATCH_UP_BATCH)
            seqs, vectors = stack(rows, records.dimension)
            if len(seqs) < len(rows):
                index.unindexed |= {r[0] for r in rows} - set(seqs.tolist())
            index.add(seqs, vectors)
            if len(seqs):
                index.seq = int(seqs[-1])
            if gone:
                index.remove([seq for _, seq in gone])
                index.unindexed -= {seq for _, seq in gone}
                index.deleted_pos = gone[-1][0]
            deleted_pos = -1
            if len(rows) < CATCH_UP_BATCH:
                break
        if index.worth_rebuilding():
            self.rebuild(records)
            return
        self._seen = now

    def save_if_worth(self) -> None:
        if (not self.path.exists()
                or self.index.changes >= SAVE_MIN_CHANGES + self.index.index.ntotal // SAVE_SHARE):
            self.save()

    def save(self) -> None:
        """Write the index file; a failure is one warning (it is a cache: the records are
        safe, and the next open catches up or rebuilds)."""
        try:
            self.index.save(self.path)
        except OSError as exc:
            log.warning("memory index not saved: %s; the next open rebuilds it from the records",
                        backend_error(exc, self.path, "saving the index"))


def mismatched_vectors(records: Records, index: VectorIndex, limit: int) -> tuple[int, int]:
    """(how many differ, how many compared): up to `limit` vectors of the index, spread over
    it, against the records' stored vectors of the same seqs."""
    ids = index.ids()
    ids = np.sort(ids[ids <= index.seq])
    if index.stale:
        ids = ids[~np.isin(ids, np.fromiter(index.stale, np.int64, len(index.stale)))]
    if len(ids) > limit:
        ids = ids[np.linspace(0, len(ids) - 1, limit).astype(np.int64)]
    seqs, stored = records.vectors_of(ids.tolist())
    if not len(seqs):
        return 0, 0
    held = index.vectors(seqs)
    if stored.shape != held.shape:
        return len(seqs), len(seqs)
    differ = ~np.all(np.isclose(held, stored, rtol=0.0, atol=1e-6), axis=1)
    return int(differ.sum()), len(seqs)


def vectors_of_rows(index: VectorIndex, records: Records, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(seqs ascending, their vectors) of live rows: from the index's memory, which holds
    every row up to its seq (re-reading them from SQLite cost ~5 us a row); rows another
    process committed since the index caught up (past `index.seq`) from SQLite."""
    seqs = np.sort(seqs)
    if index.unindexed:  # a damaged stored vector: not in the index
        seqs = seqs[~np.isin(seqs, np.fromiter(index.unindexed, np.int64))]
    known = int(np.searchsorted(seqs, index.seq, side="right"))
    vectors = index.vectors(seqs[:known])
    if known == len(seqs):
        return seqs, vectors
    later, rest = records.vectors_of(seqs[known:].tolist())
    return np.concatenate([seqs[:known], later]), np.concatenate([vectors, rest])
