"""The hot tier: a client's in-process cache, consulted before the stores.

It holds, in ONE `cachetools.TTLCache` bounded by `memory.hot.max_items` entries and
`memory.hot.max_bytes` estimated bytes (least recently used out first), each entry living
`memory.hot.ttl_seconds` at most:
- memories by id: those the client stored (once the backend committed them) and those its
  retrieves and gets returned; `get(id)` answers from them;
- retrieve answers, keyed by everything an answer depends on (the caller builds the key:
  query, resolved session scope, filters, result count, profile, query vector, as_of, ranking
  steps) and stamped with the generation they were computed at.

Coherence: what it serves equals what the stores would answer.
- `changed(ids)` is THE entry point for any code that writes, replaces, deletes, archives,
  restores or merges memories of the client's namespace (store and import through the write
  queue, forget, expire, fact writes; archive, restore and consolidation must call it too):
  it drops those memories (every memory when `ids` is None, e.g. a delete by filter whose
  ids are unknown or that cascades) and bumps the generation, which makes every cached
  retrieve answer stale. Call it once the change is committed (a change that failed half-way
  calls it as well).
- A value read from the stores is cached only if the generation did not move during the read:
  take `generation` before reading, pass it to `put_memory` / `put_answer`.
- A retrieve answer is served only at the generation it was computed at and only when none of
  its memories has expired by the retrieve's time; the caller caches only answers whose
  ranking did not read the clock (a recency weighting, max_age or a time word in the query
  would give another answer later), unless the retrieve named its `as_of`.
- A memory is served by `get` only while not expired at the caller's time.

The tier belongs to one client (one namespace, one process): writes made through other clients
or processes on the same store are not seen here. Run those with `memory.hot.enabled=false`
when one store has several writers that must see each other's forgets at once. The client's
configuration and ranking steps are read as fixed: code that edits them on a live client calls
`changed()`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cachetools import TTLCache

from DeepResearch.src.memory.config import HotConfig
from DeepResearch.src.memory.models import MemoryDocument, RetrievedMemory

ENTRY_OVERHEAD = 256  # bytes counted per cached memory beyond its content and metadata


def document_bytes(doc: MemoryDocument) -> int:
    """An estimate of what a cached memory holds in memory: content, metadata, overhead."""
    return len(doc.content.encode("utf-8", "surrogatepass")) + len(repr(doc.metadata)) + ENTRY_OVERHEAD


@dataclass(frozen=True, slots=True)
class _Answer:
    generation: int
    results: tuple[RetrievedMemory, ...]
    size: int


def _size(value: Any) -> int:
    if isinstance(value, _Answer):
        return value.size
    return document_bytes(value)


def _expired(doc: MemoryDocument, now: float) -> bool:
    return doc.expires_at is not None and doc.expires_at.timestamp() <= now


class HotTier:
    """The cache; with `enabled=False` every lookup misses and nothing is kept."""

    def __init__(self, config: HotConfig | None = None, *,
                 clock: Callable[[], float] = time.time) -> None:
        self.config = config or HotConfig()
        self.enabled = self.config.enabled
        self._cache: TTLCache[Hashable, Any] = TTLCache(
            maxsize=self.config.max_bytes, ttl=self.config.ttl_seconds, timer=clock,
            getsizeof=_size,
        )
        self.generation = 0
        self.hits = 0
        self.misses = 0

    # -- coherence -------------------------------------------------------------------------
    def changed(self, ids: Iterable[str] | None = None) -> None:
        """Memories were written, replaced, deleted or moved (None: which is unknown): drop
        them and make every cached retrieve answer stale. See the module's docstring."""
        self.generation += 1
        if ids is None:
            self._cache.clear()
            return
        for memory_id in ids:
            self._cache.pop(("m", memory_id), None)

    def written(self, docs: Sequence[MemoryDocument]) -> None:
        """Memories the backend just committed: a change, and what this session stored."""
        self.changed(d.id for d in docs)
        for doc in docs:
            self._put(("m", doc.id), doc)

    # -- memories by id --------------------------------------------------------------------
    def get_memory(self, memory_id: str, now: float) -> MemoryDocument | None:
        """The cached memory (a copy), or None (a miss) when absent or expired at `now`."""
        if not self.enabled:
            return None
        doc = self._cache.get(("m", memory_id))
        if doc is not None and _expired(doc, now):
            self._cache.pop(("m", memory_id), None)
            doc = None
        if doc is None:
            self.misses += 1
            return None
        self.hits += 1
        return doc.model_copy(deep=True)

    def put_memory(self, doc: MemoryDocument, generation: int) -> None:
        """Keep a memory read from the stores (read at `generation`)."""
        self.put_memories([doc], generation)

    def put_memories(self, docs: Iterable[MemoryDocument], generation: int) -> None:
        """Keep memories read from the stores at `generation` (a retrieve's, also one whose
        answer is not kept: the memories themselves do not depend on the time)."""
        if self.enabled and generation == self.generation:
            for doc in docs:
                self._put(("m", doc.id), doc.model_copy(deep=True))

    # -- retrieve answers ------------------------------------------------------------------
    def get_answer(self, key: Hashable, now: float) -> list[RetrievedMemory] | None:
        """The cached answer for `key` (copies), or None when absent, computed at an older
        generation, or holding a memory expired at `now`."""
        if not self.enabled:
            return None
        answer = self._cache.get(("q", key))
        if answer is not None and (
            answer.generation != self.generation
            or any(_expired(m.document, now) for m in answer.results)
        ):
            self._cache.pop(("q", key), None)
            answer = None
        if answer is None:
            self.misses += 1
            return None
        self.hits += 1
        return [m.model_copy(deep=True) for m in answer.results]

    def miss(self) -> None:
        """A lookup the tier could not answer by construction (an answer that reads the clock)."""
        if self.enabled:
            self.misses += 1

    def put_answer(self, key: Hashable, results: Sequence[RetrievedMemory], generation: int) -> None:
        """Keep a retrieve answer computed from the stores at `generation`, and its memories."""
        if not self.enabled or generation != self.generation:
            return
        kept = tuple(m.model_copy(deep=True) for m in results)
        size = ENTRY_OVERHEAD + sum(document_bytes(m.document) for m in kept)
        self._put(("q", key), _Answer(generation, kept, size))
        for m in kept:
            self._put(("m", m.id), m.document)

    # -- bounds and figures ----------------------------------------------------------------
    def _put(self, key: Hashable, value: Any) -> None:
        if not self.enabled:
            return
        try:
            self._cache[key] = value
        except ValueError:  # larger than max_bytes on its own: not kept
            self._cache.pop(key, None)
            return
        while len(self._cache) > self.config.max_items:
            self._cache.popitem()

    def counters(self) -> dict[str, Any]:
        """hot_enabled, hot_hits, hot_misses, hot_hit_ratio (None before any lookup),
        hot_items and hot_bytes (live entries)."""
        self._cache.expire()
        lookups = self.hits + self.misses
        return {
            "hot_enabled": self.enabled,
            "hot_hits": self.hits,
            "hot_misses": self.misses,
            "hot_hit_ratio": round(self.hits / lookups, 4) if lookups else None,
            "hot_items": len(self._cache),
            "hot_bytes": int(self._cache.currsize),
        }
