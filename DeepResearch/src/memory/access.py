"""Access statistics of a client's retrieves: `AccessLog` collects the ids each retrieve
returned and writes them off the caller's path (`MemoryBackend.record_access`), one write per
batch: while a write is in flight, later retrieves' ids gather for the next one. A retrieve
never waits for it and never fails by it (a failed write is one warning; its counts are
lost, the memories are not). `flush()` writes what is left (the client's close, and
`access_stats` before it reads)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from DeepResearch.src.memory.backends.base import MemoryBackend

log = logging.getLogger(__name__)


class AccessLog:
    def __init__(self, backend: Callable[[], MemoryBackend], namespace: str) -> None:
        self._backend = backend
        self._namespace = namespace
        self._ids: list[str] = []  # an id once per retrieve that returned it
        self._last = 0.0  # the latest access time among them
        self._task: asyncio.Task[None] | None = None
        self._warned = False

    @property
    def pending(self) -> int:
        return len(self._ids)

    def record(self, ids: Sequence[str], at: float) -> None:
        """Note one access of each of `ids` at `at`; written by a background task."""
        if not ids:
            return
        self._ids.extend(ids)
        self._last = max(self._last, at)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._write())

    async def _write(self) -> None:
        while self._ids:
            ids, at = self._ids, self._last
            self._ids = []
            try:
                await self._backend().record_access(ids, self._namespace, at)
            except Exception as exc:  # statistics only: never the caller's failure
                if not self._warned:
                    self._warned = True
                    log.warning("memory: access statistics of %d retrieved memories not "
                                "recorded: %s", len(ids), exc)

    async def flush(self) -> None:
        """Write every access noted so far."""
        task = self._task
        if task is not None and not task.done():
            await asyncio.shield(task)
        await self._write()
