"""Access statistics of a client's retrieves: `AccessLog` collects the ids each retrieve
returned and writes them off the caller's path (`MemoryBackend.record_access`), one write per
batch: the ids of an isolated retrieve are written at once, and a write follows the previous
one by at least SPACING seconds, the ids of the retrieves in between gathered for it. (A
write holds the embedded store's connection through its commit, an fsync of ~6 ms: with one
write per retrieve, back-to-back retrieves each waited for the last one's.) A retrieve never
waits for it and never fails by it (a failed write is one warning; its counts are lost, the
memories are not). `flush()` writes what is left at once (the client's close, and
`access_stats` before it reads)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence

from DeepResearch.src.memory.backends.base import MemoryBackend

log = logging.getLogger(__name__)
SPACING = 0.5  # seconds from one write to the next


class AccessLog:
    def __init__(self, backend: Callable[[], MemoryBackend], namespace: str) -> None:
        self._backend = backend
        self._namespace = namespace
        self._ids: list[str] = []  # an id once per retrieve that returned it
        self._last = 0.0  # the latest access time among them
        self._task: asyncio.Task[None] | None = None
        self._warned = False
        self._written = float("-inf")  # time.monotonic() at the end of the last write
        self._flushing = False
        self._pause: asyncio.Future[None] | None = None  # the spacing being waited out

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
            wait = self._written + SPACING - time.monotonic()
            if wait > 0 and not self._flushing:
                self._pause = asyncio.get_running_loop().create_future()
                try:
                    await asyncio.wait_for(self._pause, wait)
                except TimeoutError:
                    pass
                finally:
                    self._pause = None
            ids, at = self._ids, self._last
            self._ids = []
            try:
                await self._backend().record_access(ids, self._namespace, at)
            except Exception as exc:  # statistics only: never the caller's failure
                if not self._warned:
                    self._warned = True
                    log.warning("memory: access statistics of %d retrieved memories not "
                                "recorded: %s", len(ids), exc)
            self._written = time.monotonic()

    async def flush(self) -> None:
        """Write every access noted so far, at once."""
        self._flushing = True
        try:
            if self._pause is not None and not self._pause.done():
                self._pause.set_result(None)
            task = self._task
            if task is not None and not task.done():
                await asyncio.shield(task)
            await self._write()
        finally:
            self._flushing = False
