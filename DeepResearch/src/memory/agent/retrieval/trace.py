"""A small in-process store of recent retrieval results (with their traces), by request id.

Bounded: the oldest entry goes when a new one would exceed `max_entries`. Process-local and
not persisted (a restart forgets it); the service reads it to answer "what did request X do".
"""

from __future__ import annotations

import threading

from cachetools import LRUCache

from DeepResearch.src.memory.agent.retrieval.types import RetrievalResult


class TraceStore:
    def __init__(self, max_entries: int = 256) -> None:
        if max_entries < 1:
            raise ValueError(f"TraceStore max_entries must be >= 1, got {max_entries}")
        self.max_entries = max_entries
        self._entries: LRUCache[str, RetrievalResult] = LRUCache(max_entries)
        self._lock = threading.Lock()

    def put(self, result: RetrievalResult) -> None:
        with self._lock:
            self._entries[result.metadata.request_id] = result

    def get(self, request_id: str) -> RetrievalResult | None:
        with self._lock:
            return self._entries.get(request_id)

    def request_ids(self) -> list[str]:
        """The stored request ids, newest last."""
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


TRACES = TraceStore()


def get_trace(request_id: str, store: TraceStore | None = None) -> RetrievalResult | None:
    """The result (facts, metadata, trace) of a recent request, or None once evicted."""
    return (store if store is not None else TRACES).get(request_id)
