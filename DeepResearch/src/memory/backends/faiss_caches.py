"""The two rebuildable in-process caches of the faiss backend, both keyed by record `seq`.

- `VectorCache`: the flat kind's exact numpy index in `index.flat` (flat_vectors.py), or a
  FAISS HNSW index in `index.faiss`, whose rows added since it was read wait in a flat delta
  beside it (faiss_growing.py) until it is written.
- `LexicalCache`: a `LexicalIndex` (BM25) over the tokens the FTS5 table stores, in
  `lexical.npz`.

Both files hold a JSON header (up to which seq the cache holds, plus the settings it was
built with) and a body, replaced atomically on close (layouts: faiss_files.py); an open maps
them rather than reading them (a flat index, the BM25 postings). On open each cache catches
up with the records table, SQLite being the truth: rows with seq above its watermark are added, rows at
or below it that are gone from the table are dropped. So a file need not be rewritten at
every close: it is, once the changes since it was written would cost more to replay on the
next open than rewriting it costs (`worth_saving`), or when there is no file yet (its header
tells a later open which index kind was built) -- a run that adds ten memories to a store of
100k no longer rewrites ~150 MB of index on its way out. A damaged or mismatched vector index is
an error naming the rebuild command (rebuilding re-reads every vector); a damaged lexical
file is simply rebuilt from the stored tokens.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from DeepResearch.src.memory.backends.base import MemoryFilter, MemoryRecord, embedded_text
from DeepResearch.src.memory.backends.faiss_files import (
    map_after_header,
    read_flat_file,
    read_index_file,
    saved_kind,
    write_atomically,
    write_flat_file,
    write_index_file,
)
from DeepResearch.src.memory.backends.flat_vectors import FlatVectors
from DeepResearch.src.memory.backends.lexical import LexicalIndex, saved_in_current_layout
from DeepResearch.src.memory.backends.sqlite_records import SQLiteRecords
from DeepResearch.src.memory.compression import full_content
from DeepResearch.src.memory.config import FaissConfig
from DeepResearch.src.memory.errors import IndexMismatchError
from DeepResearch.src.memory.text import tokenize

if TYPE_CHECKING:
    from DeepResearch.src.memory.backends.faiss_growing import GrowingIndex

FLAT_FILE = "index.flat"
INDEX_FILE = "index.faiss"  # the HNSW kind's
VectorIndex = Union[FlatVectors, "GrowingIndex"]  # add, remove, ids, search, ntotal
Reembed = Callable[[list[str]], np.ndarray]
LEXICAL_FILE = "lexical.npz"
# Replaying a row on open costs ~40 us (lexical postings), rewriting a cache ~3 us per row
# it holds plus an fsync: rewrite once the rows changed since the last write pass this.
SAVE_MIN_CHANGES = 64
SAVE_SHARE = 16
log = logging.getLogger(__name__)


def worth_saving(changes: int, size: int) -> bool:
    """Whether a cache with `changes` rows added/removed since its file was written, out of
    `size` rows, should be rewritten now rather than caught up on the next open."""
    return changes >= SAVE_MIN_CHANGES + size // SAVE_SHARE


class SavedCache:
    """What both caches share: a file, and the count of rows changed since it was written."""

    path: Path
    unsaved: int
    # The file was read in an older layout: rewrite it at the next close even if nothing
    # changed, so that later opens map it instead of reading it.
    outdated: bool = False

    def __len__(self) -> int:
        raise NotImplementedError

    def save(self) -> None:
        raise NotImplementedError

    def save_if_worth_it(self) -> None:
        if not self.path.exists() or self.outdated or worth_saving(self.unsaved, len(self)):
            self.save()


class LiveSeqs:
    """The seqs of the records table, read once per open (both caches reconcile with them)."""

    def __init__(self, db: SQLiteRecords) -> None:
        self.db = db
        self._all: np.ndarray | None = None

    def upto(self, watermark: int) -> np.ndarray:
        if self._all is None:
            self._all = self.db.all_seqs_upto(self.db.max_seq())
        return self._all[self._all <= watermark]


def reconcile(
    cached: np.ndarray, live_seqs: LiveSeqs, watermark: int
) -> tuple[np.ndarray, np.ndarray]:
    """(gone, missed) for a cache holding `cached` seqs, all <= `watermark`: seqs whose records
    were deleted since it was saved, and live seqs <= watermark it never held. The latter are
    rows another process wrote while this cache's process had the store open: that process
    then wrote rows of its own past them, and saved its watermark beyond them."""
    if watermark <= 0:
        return cached[:0], cached[:0]
    live = live_seqs.upto(watermark)
    # isin with assume_unique (each side holds a seq once), not setdiff1d: its np.unique makes
    # numpy import numpy.ma (~6 ms at every store open).
    gone = cached[~np.isin(cached, live, assume_unique=True)]
    missed = live[~np.isin(live, cached, assume_unique=True)]
    return gone, missed


def missed_records(db: SQLiteRecords, missed: np.ndarray) -> list[tuple[int, MemoryRecord]]:
    """The records of `missed` seqs (see reconcile), in seq order."""
    found = db.by_seqs([int(s) for s in missed], MemoryFilter())
    return sorted(found.items())


def rebuild_hint(root: Path, index_kind: str = "flat") -> str:
    kind = "" if index_kind == "flat" else f" memory.faiss.index_kind={index_kind}"
    return f"`deepresearch-memory rebuild memory.faiss.path={root}{kind}`"


class VectorCache(SavedCache):
    """The vector index: `FlatVectors` in `index.flat` (the flat kind, numpy only), or an HNSW
    `GrowingIndex` in `index.faiss` (the HNSW kind, which imports FAISS)."""

    def __init__(self, config: FaissConfig, root: Path, dimension: int, metric: str) -> None:
        self.config = config
        self.path = root / (INDEX_FILE if self.hnsw else FLAT_FILE)
        self.other_path = root / (FLAT_FILE if self.hnsw else INDEX_FILE)  # the other kind's
        self.dimension = dimension
        self.metric = metric
        self.index = self._new_index()
        self.watermark = 0
        self.stale = 0  # removed seqs still inside an HNSW index (it cannot remove)
        self.unsaved = 0  # rows added or removed since the file was written

    @property
    def hnsw(self) -> bool:
        return self.config.index_kind == "hnsw"

    def __len__(self) -> int:
        return int(self.index.ntotal)

    @property
    def live(self) -> int:
        return self.index.ntotal - self.stale

    def _header(self) -> dict:
        return {"kind": self.config.index_kind, "metric": self.metric, "dimension": self.dimension}

    def _new_index(self, base: Any = None) -> VectorIndex:
        if not self.hnsw:
            return FlatVectors(self.dimension, self.metric)
        from DeepResearch.src.memory.backends.faiss_growing import GrowingIndex, hnsw_index

        if base is None:
            base = hnsw_index(self.dimension, self.metric, self.config.hnsw_m,
                              self.config.hnsw_ef_construction)
        return GrowingIndex(base, self.metric, self.config.hnsw_ef_search)

    def _read(self) -> tuple[dict, VectorIndex, bool]:
        """(header, index, whether the file is in an older layout) of the saved file."""
        if not self.hnsw:
            return (*read_flat_file(self.path, self.metric), False)
        import faiss

        saved, index, older = read_index_file(self.path)
        if not isinstance(index, faiss.IndexIDMap):
            raise ValueError(f"expected an IndexIDMap, found {type(index).__name__}")
        # The index's own dimension is checked with the header's settings: a header that
        # says otherwise does not describe this index.
        return {**saved, "dimension": index.d}, self._new_index(index), older

    def load(self, db: SQLiteRecords, live: LiveSeqs | None = None) -> None:
        """Read the saved index (if any), check it, and catch it up with the records."""
        self.index = self._new_index()
        self.watermark, self.stale, self.unsaved, self.outdated = 0, 0, 0, False
        root = self.path.parent
        if self.path.exists():
            try:
                saved, index, self.outdated = self._read()
            except Exception as exc:
                raise IndexMismatchError(
                    f"the vector index {self.path} is corrupt or unreadable ({exc}); the records "
                    f"are intact: run {rebuild_hint(root, self.config.index_kind)}"
                ) from exc
            want = self._header()
            got = {key: saved.get(key) for key in want}
            if got != want:
                raise IndexMismatchError(
                    f"the vector index {self.path} was built as {got}, configured {want}: run "
                    f"{rebuild_hint(root, self.config.index_kind)}"
                )
            if db.max_seq() < saved["watermark"]:
                raise IndexMismatchError(
                    f"the vector index {self.path} is newer than its records (watermark "
                    f"{saved['watermark']} > last record {db.max_seq()}): run "
                    f"{rebuild_hint(root, self.config.index_kind)}"
                )
            self.index = index
            self.watermark = saved["watermark"]
        elif self.other_path.exists():
            self._check_other_kind(root)
        in_index = self.index.ids()
        gone, missed = reconcile(in_index, live or LiveSeqs(db), self.watermark)
        self.remove(gone, db)
        if len(missed):
            found = missed_records(db, missed)
            self.add(np.array([s for s, _ in found], dtype=np.int64),
                     np.stack([r.vector for _, r in found]))
        seqs, vectors = db.vectors_after(self.watermark)
        fresh = ~np.isin(seqs, in_index)
        self.add(seqs[fresh], vectors[fresh] if len(seqs) else vectors)

    def _check_other_kind(self, root: Path) -> None:
        """Only the other kind's file exists: a store built as that kind is refused, and a flat
        index saved in index.faiss (before 2026-11-25) is rebuilt from the records and saved
        as index.flat at the next close."""
        try:
            kind = saved_kind(self.other_path)
        except Exception as exc:
            raise IndexMismatchError(
                f"the vector index {self.other_path} is corrupt or unreadable ({exc}); the "
                f"records are intact: run {rebuild_hint(root, self.config.index_kind)}"
            ) from exc
        if kind != self.config.index_kind:
            raise IndexMismatchError(
                f"the vector index {self.other_path} was built as kind {kind!r}, configured "
                f"{self.config.index_kind!r}: run {rebuild_hint(root, self.config.index_kind)}"
            )
        self.outdated = True

    def add(self, seqs: np.ndarray, vectors: np.ndarray) -> None:
        if len(seqs) == 0:
            return
        self.index.add(vectors, seqs)
        self.watermark = max(self.watermark, int(seqs.max()))
        self.unsaved += len(seqs)

    def remove(self, seqs, db: SQLiteRecords | None = None) -> None:
        """Drop seqs; an HNSW index only counts those in its base (SQLite no longer resolves
        them) and is rebuilt from `db` once a quarter of it is stale."""
        if len(seqs) == 0:
            return
        self.unsaved += len(seqs)
        removed = self.index.remove(np.asarray(seqs, dtype=np.int64))
        if not self.hnsw:
            return
        self.stale += len(seqs) - removed
        if db is not None and self.stale > max(1000, self.index.ntotal // 4):
            self.rebuild(db)

    def rebuild(self, db: SQLiteRecords) -> None:
        seqs, vectors = db.vectors_after(0)
        self.index, self.stale = self._new_index(), 0
        if len(seqs):
            if self.hnsw:
                self.index.base.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), seqs)
            else:
                self.index = FlatVectors.of(np.ascontiguousarray(vectors, dtype=np.float32),
                                            seqs, self.metric)
        self.watermark = int(seqs.max()) if len(seqs) else 0
        self.unsaved += len(seqs)

    def save(self) -> None:
        header = {"watermark": self.watermark, **self._header()}
        if isinstance(self.index, FlatVectors):
            write_flat_file(self.path, header, self.index)
        else:
            write_index_file(self.path, header, self.index.folded())
        self.other_path.unlink(missing_ok=True)  # a kind's file from before a rebuild
        self.unsaved, self.outdated = 0, False


class LexicalCache(SavedCache):
    def __init__(self, root: Path) -> None:
        self.path = root / LEXICAL_FILE
        self.index = LexicalIndex()
        self.watermark = 0
        self.unsaved = 0  # rows added or removed since the file was written

    def __len__(self) -> int:
        return len(self.index)

    def load(self, db: SQLiteRecords, live: LiveSeqs | None = None) -> None:
        self.index, self.watermark, self.unsaved, self.outdated = LexicalIndex(), 0, 0, False
        if self.path.exists():
            try:
                # Mapped, not read: the postings are used in place (at 100k rows reading the
                # ~50 MB file and unpacking it took ~100 ms of a store's open).
                saved, body, start = map_after_header(self.path)
                if db.max_seq() < saved["watermark"]:
                    raise ValueError(f"watermark {saved['watermark']} > last record {db.max_seq()}")
                self.index = LexicalIndex.from_buffer(body, start)
                self.outdated = not saved_in_current_layout(body, start)
                self.watermark = saved["watermark"]
            except Exception as exc:  # a cache: rebuild it from the stored tokens
                log.warning("lexical index %s unusable (%s); rebuilding it", self.path, exc)
                self.index, self.watermark = LexicalIndex(), 0
        gone, missed = reconcile(self.index.live_rows(), live or LiveSeqs(db), self.watermark)
        self.remove(gone)
        for seq, record in missed_records(db, missed):
            self.add(seq, tokenize(record.content))  # the tokens upsert gave FTS5
        for seq, tokens in db.tokens_after(self.watermark):
            if seq not in self.index:
                self.add(seq, tokens.split())

    def add(self, seq: int, tokens: list[str]) -> None:
        self.index.add(seq, tokens)
        self.watermark = max(self.watermark, seq)
        self.unsaved += 1

    def remove(self, seqs) -> None:
        self.index.remove(seqs)
        self.unsaved += len(seqs)

    def save(self) -> None:
        body = self.index.to_bytes()
        write_atomically(self.path, {"watermark": self.watermark}, lambda fh: fh.write(body))
        self.unsaved, self.outdated = 0, False


def reembed_records(db: SQLiteRecords, reembed: Reembed, dimension: int, batch_size: int) -> None:
    """Replace every stored vector with `reembed` of the text it stands for: the record's
    embedding key when it has one, else its full content."""
    seqs = db.all_seqs_upto(db.max_seq())
    for start in range(0, len(seqs), batch_size):
        chunk = [int(s) for s in seqs[start : start + batch_size]]
        records = db.by_seqs(chunk, MemoryFilter())
        order = [s for s in chunk if s in records]
        texts = [
            embedded_text(
                records[s],
                full_content(records[s].content, records[s].content_codec, records[s].content_blob),
            )
            for s in order
        ]
        vectors = reembed(texts)
        if vectors.shape != (len(order), dimension):
            raise IndexMismatchError(
                f"re-embedding gave shape {vectors.shape}, expected ({len(order)}, {dimension})"
            )
        db.set_vectors(list(zip(order, vectors, strict=True)))


def rebuild_caches(
    db: SQLiteRecords, config: FaissConfig, root: Path, dimension: int, metric: str
) -> int:
    """Both caches rebuilt from the records and saved; the number of vectors indexed."""
    vectors = VectorCache(config, root, dimension, metric)
    vectors.rebuild(db)
    vectors.save()
    lexical = LexicalCache(root)
    lexical.path.unlink(missing_ok=True)
    lexical.load(db)
    lexical.save()
    return vectors.index.ntotal
