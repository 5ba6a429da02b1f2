"""What the parts of the client (reads.py, maintenance.py) rely on: its state and the few
operations they share. `MemorySystemClient` (client.py) provides all of it; the parts
declare it here instead of importing the client back."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from DeepResearch.src.memory.access import AccessLog
    from DeepResearch.src.memory.backends.base import MemoryBackend, MemoryFilter, MemoryRecord
    from DeepResearch.src.memory.config import MemoryConfig
    from DeepResearch.src.memory.embeddings import Embedder
    from DeepResearch.src.memory.errors import MemoryBackendError
    from DeepResearch.src.memory.hot_tier import HotTier
    from DeepResearch.src.memory.ranking import RankingStep
    from DeepResearch.src.memory.sessions import SessionLinks
    from DeepResearch.src.memory.vector_fill import VectorFiller
    from DeepResearch.src.memory.writes import WriteQueue


DELETE_PAGE = 1000  # records read, then deleted, per backend call (_delete_where)


class ClientParts:
    config: MemoryConfig
    namespace: str  # the client's boundary: every record it touches is in it
    session_id: str
    available: bool
    steps: list[RankingStep]
    writes: WriteQueue
    filler: VectorFiller  # vectors of committed memories, filled behind (vector_fill.py)
    hot: HotTier  # consulted before the stores; `hot.changed(ids)` after any change
    clock: Callable[[], float]  # "now" in epoch seconds
    accesses: AccessLog  # the retrieves' access statistics, written in the background
    backend: MemoryBackend
    embedder: Embedder
    _links: SessionLinks
    _unavailable_reason: str
    _bounded: Callable[..., MemoryFilter]  # a filter within the namespace (and live records)
    _lost: Callable[[MemoryBackendError], None]  # the backend was lost: degrade, warn once
    _ready: Callable[[], Awaitable[bool]]  # opened and available (reconnecting if due)
    open: Callable[[], Awaitable[None]]
    reconnect: Callable[[], Awaitable[bool]]
    _forget_session_tails: Callable[[], None]
    purge_archive: Callable[..., Awaitable[int]]  # archive.py: the retention purge

    async def _delete_where(self, flt: MemoryFilter, doomed: Callable[[MemoryRecord], bool]) -> int:
        """Delete the records of `flt` that `doomed` picks: read in pages of DELETE_PAGE, deleted
        in pages, each under the graph lock (the delete's cascade edits facts); once anything
        was picked the hot tier forgets all it kept (the cascade may delete fact sentences).
        Returns how many were deleted (expiry and the archive's retention purge)."""
        picked: list[str] = []
        offset = 0
        while True:
            batch = await self.backend.scan(flt, limit=DELETE_PAGE, offset=offset)
            picked += [r.id for r in batch if doomed(r)]
            if len(batch) < DELETE_PAGE:
                break
            offset += DELETE_PAGE
        removed = 0
        try:
            for start in range(0, len(picked), DELETE_PAGE):
                async with self.backend.graph_lock:
                    removed += await self.backend.delete(
                        dataclasses.replace(flt, ids=tuple(picked[start : start + DELETE_PAGE])))
        finally:
            if picked:
                self.hot.changed()
        return removed
