"""Group commit: store requests of one namespace that arrive while a write is running go to
the backend together, in the next `store_many` (one transaction, one fsync, one encode).

Each request still gets its own ids, and its own answer: when the combined write is refused
as data (MemoryInputError: one request's bad item), each request is written alone, so one
caller's mistake never fails another; a backend failure fails every request of the batch
(none of them acknowledged)."""

from __future__ import annotations

import asyncio
from typing import Any

from DeepResearch.src.memory.client import MemorySystemClient
from DeepResearch.src.memory.errors import MemoryInputError

MAX_ITEMS = 512  # items per combined write


class StoreCoalescer:
    def __init__(self, client: MemorySystemClient) -> None:
        self.client = client
        self._waiting: list[tuple[list[dict[str, Any]], asyncio.Future[list[str]]]] = []
        self._task: asyncio.Task[None] | None = None
        self.writes = 0  # combined writes run (tests, metrics)

    async def store(self, items: list[dict[str, Any]]) -> list[str]:
        done: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        self._waiting.append((items, done))
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())
        return await asyncio.shield(done)

    async def _run(self) -> None:
        while self._waiting:
            batch, size = [], 0
            while self._waiting and (not batch or size + len(self._waiting[0][0]) <= MAX_ITEMS):
                entry = self._waiting.pop(0)
                batch.append(entry)
                size += len(entry[0])
            await self._write(batch)

    async def _write(self, batch: list[tuple[list[dict[str, Any]], asyncio.Future[list[str]]]]) -> None:
        self.writes += 1
        if len(batch) > 1:
            try:
                ids = await self.client.store_many([i for items, _ in batch for i in items])
            except MemoryInputError:
                pass  # someone's bad item: each request alone below
            except BaseException as exc:
                for _, done in batch:
                    if not done.done():
                        done.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
                return
            else:
                start = 0
                for items, done in batch:
                    if not done.done():
                        done.set_result(ids[start:start + len(items)])
                    start += len(items)
                return
        for items, done in batch:
            try:
                result = await self.client.store_many(items)
            except Exception as exc:
                if not done.done():
                    done.set_exception(exc)
            else:
                if not done.done():
                    done.set_result(result)

    async def drain(self) -> None:
        """Wait for the writes under way (shutdown)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)
