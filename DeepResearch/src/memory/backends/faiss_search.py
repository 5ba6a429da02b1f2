"""How the faiss backend answers a filtered search: the plan for a filter (nothing matches,
search only the matching rows, or over-fetch and check the filter in SQL), the over-fetch
loop, and the step that turns index hits into records."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from DeepResearch.src.memory.backends.base import (
    MAX_COPY_WIDENING,
    Candidate,
    MemoryFilter,
    keep_newest_copies,
)
from DeepResearch.src.memory.backends.sqlite_records import SQLiteRecords

# Below this share of matching rows a search lists their seqs and searches only those;
# above it, it over-fetches (~k / share x 1.5 hits) and filters them in SQL. A flat scan
# reads every vector either way: listing 20k seqs of 100k (0.2, the old limit) cost
# ~11 ms more than one over-fetched search.
SELECTIVE_FRACTION = 0.05
# ... or below this many rows, whatever their share (small stores): listing them costs well
# under a millisecond, while an over-fetch can fail round after round when the query's best
# hits are mostly of other types (a lexical search for a workflow question: 80 -> 320 ->
# every row, each round's hits checked in SQL). A compound workflow run on a ~4k-record
# store: its 9 candidate searches 77 / 68 -> 45 / 39 ms (two rounds of 6 CLI runs).
LIST_ROWS_UP_TO = 2048
EXACT_HNSW_LIMIT = 50_000  # matching rows up to which a selective HNSW search is exact numpy


@dataclass(frozen=True, slots=True)
class FilterPlan:
    """How a search honours a filter: nothing matches, over-fetch and post-filter (`fraction`
    of the rows match), or search only `seqs`."""

    n_match: int
    fraction: float = 1.0
    seqs: np.ndarray | None = None


def make_plan(db: SQLiteRecords, flt: MemoryFilter, live: int, total: int) -> FilterPlan:
    """How a search over `live` indexed rows (`total` records) honours `flt`."""
    if live <= 0:
        return FilterPlan(0)
    if flt == MemoryFilter():
        return FilterPlan(live)
    selective = max(int(SELECTIVE_FRACTION * live), LIST_ROWS_UP_TO)
    if flt == MemoryFilter(live_at=flt.live_at):  # the TTL condition alone: two cheap counts
        n_match = total - db.count_expired(flt.live_at or 0.0)
        if n_match == 0 or n_match > selective:
            return FilterPlan(n_match, n_match / live)
    if not flt.metadata:
        # Index-only conditions (types, sessions, times): a count is cheap (~2 ms at 100k
        # rows), fetching up to `selective` seqs to find the filter broad was not (~11 ms).
        n_match = db.count(flt)
        if n_match == 0 or n_match > selective:
            return FilterPlan(n_match, n_match / live)
        seqs = db.matching_seqs(flt)
        return FilterPlan(len(seqs), len(seqs) / live, seqs if len(seqs) else None)
    # Metadata is matched row by row (as costly to count as to list) and usually narrows a
    # lot: one query answers a selective filter; a broad one is counted after it.
    seqs = db.matching_seqs(flt, limit=selective + 1)
    if len(seqs) <= selective:
        return FilterPlan(len(seqs), len(seqs) / live, seqs if len(seqs) else None)
    n_match = db.count(flt)
    return FilterPlan(n_match, n_match / live)


def overfetch(
    search: Callable[[int], tuple[np.ndarray, np.ndarray]], db: SQLiteRecords,
    flt: MemoryFilter, k: int, plan: FilterPlan, total: int, stale: int, distinct: bool = False,
) -> list[Candidate]:
    """Ask `search` for more hits until k pass the filter (k different memories when
    `distinct`, widening at most MAX_COPY_WIDENING times) or the store is exhausted."""
    if plan.fraction >= 1.0:  # every row matches (e.g. nothing has expired): no margin
        fetch = min(total, k + stale)
    else:
        fetch = min(total, math.ceil((k + stale) / max(plan.fraction, 1e-9) * 1.5) + 8)
    widest = fetch * MAX_COPY_WIDENING if distinct else total
    if distinct:  # room for copies: copy keys are cheap to read, a second search is not (a
        fetch = min(total, max(fetch, 4 * k))  # flat index reads every vector, whatever the fetch)
    checked: dict[int, Any] = {}
    while True:
        ids, scores = search(fetch)
        found = resolve(db, ids, scores, flt, k, distinct, checked)
        if len(found) >= k or fetch >= min(total, widest) or len(ids) < fetch:
            return found
        fetch = min(total, fetch * 4)


def resolve(
    db: SQLiteRecords, ids: np.ndarray, scores: np.ndarray, flt: MemoryFilter, k: int,
    distinct: bool = False, checked: dict[int, Any] | None = None,
) -> list[Candidate]:
    """The first k hits that pass `flt` (the best of each memory's copies when
    `distinct`), as records. Over-fetched hits are filtered on their seqs (or read as
    copy keys) first, so only the k kept are read whole (vectors, metadata, relations).

    `checked` carries what this was told of each seq (its copy key or None, or whether it
    passes) from one call to the next of a search that widens: a widened fetch starts with
    the hits of the one before, and on a store where a recurring memory has many copies a
    distinct search widens 80 -> 320 -> 1280 hits."""
    checked = {} if checked is None else checked
    # tolist(): Python ints and floats in one C pass (per-element int() and float() were
    # 0.24 ms at 1280 hits, against 0.09)
    hits = zip(np.asarray(ids).tolist(), np.asarray(scores).tolist(), strict=True)
    order = [(i, s) for i, s in hits if i >= 0]
    new = [i for i, _ in order if i not in checked]
    if distinct:
        keys = db.copy_keys(new, flt) if new else {}
        checked.update((i, keys.get(i)) for i in new)
        order = keep_newest_copies(
            [(i, s, *checked[i]) for i, s in order if checked[i] is not None], k
        )
    elif len(order) > k and flt != MemoryFilter():
        passing = db.seqs_matching(new, flt) if new else set()
        checked.update((i, i in passing) for i in new)
        order = [(i, s) for i, s in order if checked[i]]
    order = order[:k]
    records = db.by_seqs([i for i, _ in order], flt)
    return [Candidate(records[i], s) for i, s in order if i in records]
