"""The embedded backend's checks and repairs: stored settings, re-embedding, the index check
of `verify`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from DeepResearch.src.memory.backends.embedded.database import Database
from DeepResearch.src.memory.backends.embedded.index_cache import mismatched_vectors
from DeepResearch.src.memory.backends.embedded.records import Records, chunks
from DeepResearch.src.memory.backends.embedded.vectors import UnusableIndexFile, VectorIndex
from DeepResearch.src.memory.errors import IndexMismatchError

Reembed = Callable[[list[str]], np.ndarray]


def rebuild_hint(root: Path) -> str:
    return f"`deepresearch-memory rebuild memory.faiss.path={root}`"


def check_meta(db: Database, expected: dict[str, str], root: Path) -> None:
    """Store `expected` in a new database; IndexMismatchError if the store was built with
    other settings."""
    stored = db.meta()
    if not all(key in stored for key in expected):
        db.set_meta({**expected, **stored})
        stored = db.meta()
    diffs = [f"{k}: stored {stored[k]!r}, configured {v!r}" for k, v in expected.items()
             if stored[k] != v]
    if diffs:
        raise IndexMismatchError(
            f"memory store {root} was built with other settings ({'; '.join(diffs)}). "
            f"Configure the stored values, or rebuild the store for the new ones with "
            f"{rebuild_hint(root)[:-1]} <the new settings>` (e.g. the overrides of this "
            "command: rebuild re-embeds for another model)."
        )


def reembed_records(records: Records, reembed: Reembed, dimension: int, batch_size: int) -> None:
    """Replace every stored vector with `reembed` of its record's full content."""
    seqs = records.all_seqs().tolist()
    for start in range(0, len(seqs), batch_size):
        found = records.texts(seqs[start : start + batch_size])
        order = list(found)
        vectors = reembed([found[s] for s in order])
        if vectors.shape != (len(order), dimension):
            raise IndexMismatchError(
                f"re-embedding gave shape {vectors.shape}, expected ({len(order)}, {dimension})"
            )
        records.set_vectors(list(zip(order, vectors, strict=True)))


HEALTH_SAMPLE = 1000  # index vectors `health` compares with the records'


def index_agreement(records: Records, index: VectorIndex) -> tuple[dict[str, int], list[str]]:
    """The index against the records: every record with a vector in it once and nothing else
    (counts; `records` includes those awaiting their vector, `awaiting_vectors`), and a
    sample of its vectors equal to theirs. The figures, and the problems they show."""
    problems: list[str] = []
    pending = records.pending_seqs()  # awaiting their vectors (vector_fill.py): not indexed yet
    damaged = np.setdiff1d(np.fromiter(index.unindexed, np.int64), pending)
    live = np.setdiff1d(records.all_seqs(), damaged)
    indexable = np.setdiff1d(live, pending)
    ids = index.ids()
    if index.stale:
        ids = ids[~np.isin(ids, np.fromiter(index.stale, np.int64, len(index.stale)))]
    missing = np.setdiff1d(indexable, ids)
    extra = np.setdiff1d(ids, indexable)
    if len(missing) or len(extra) or len(ids) != len(indexable):
        problems.append(
            f"the vector index holds {len(ids)} vectors for {len(indexable)} records "
            f"({len(missing)} missing, {len(extra)} not in the records): reopening rebuilds it"
        )
    differ, compared = mismatched_vectors(records, index, HEALTH_SAMPLE)
    if differ:
        problems.append(
            f"{differ} of {compared} sampled vectors of the index differ from the records' "
            "stored vectors (the index was built from other records): reopening rebuilds it"
        )
    figures = {"records": len(live), "vectors": len(ids), "awaiting_vectors": len(pending),
               "missing": len(missing),
               "extra": len(extra), "sampled": compared, "sampled_differ": differ}
    return figures, problems


def verify_index(records: Records, index: VectorIndex, path: Path) -> list[str]:
    """The index against the records (`index_agreement`), and the saved file (checksum, store
    id), and the stored vectors (finite unit vectors)."""
    live = np.setdiff1d(records.all_seqs(), np.fromiter(index.unindexed, np.int64))
    problems = index_agreement(records, index)[1]
    if path.exists():
        try:
            VectorIndex(index.settings, index.store_id).load(path)
        except (UnusableIndexFile, RuntimeError, OSError) as exc:
            problems.append(f"{path} is unusable ({exc}): the next open rebuilds it")
    bad = 0
    for chunk in chunks(live.tolist()):
        vectors = records.vectors_of(chunk)[1]
        if len(vectors):
            norms = np.linalg.norm(vectors, axis=1)
            bad += int(np.sum(~np.isfinite(norms) | (np.abs(norms - 1.0) > 1e-3)))
    if bad:
        problems.append(f"{bad} stored vectors are not finite unit vectors: re-embed them with "
                        f"{rebuild_hint(path.parent)[:-1]} --reembed`")
    return problems
