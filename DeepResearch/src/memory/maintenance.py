"""Deleting and inspecting memories: forget, expire, stats, health.
A mixin of MemorySystemClient (the public methods live on the client)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from DeepResearch.src.memory.backends import MemoryFilter
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.inputs import clean_name, parse_filters
from DeepResearch.src.memory.status import MemoryHealth, MemoryStats

if TYPE_CHECKING:
    from DeepResearch.src.memory.client import MemorySystemClient


class Maintenance:
    """forget / expire / stats / health of MemorySystemClient."""

    async def forget(
        self,
        ids: str | Sequence[str] | None = None,
        *,
        filters: Mapping[str, Any] | None = None,
        session_id: str | None = None,
    ) -> int:
        """Delete memories by id and/or filters (within `session_id` if given)."""
        await self.open()
        if ids is None and not filters and session_id is None:
            raise MemoryInputError("forget needs ids, filters or a session_id (refusing to delete everything)")
        kwargs = parse_filters(filters)
        if ids is not None:
            ids = [ids] if isinstance(ids, str) else list(ids)
            kwargs["ids"] = tuple(clean_name(i, "id") for i in ids)
        if session_id is not None:
            kwargs["session_ids"] = (clean_name(session_id, "session_id"),)
        await self.writes.drain_pending()
        if not self.available:
            return 0
        removed = await self.backend.delete(MemoryFilter(**kwargs))
        self._forget_session_tails()
        return removed

    async def expire(self: MemorySystemClient, now: float | None = None) -> int:
        """Delete memories whose TTL has passed (expires_at <= now); returns how many."""
        await self.open()
        await self.writes.drain_pending()
        if not self.available:
            return 0
        now = time.time() if now is None else now
        everything, live = MemoryFilter(), MemoryFilter(live_at=now)
        if await self.backend.count(everything) == await self.backend.count(live):
            return 0  # the common case costs two counts
        doomed: list[str] = []
        offset, page = 0, 1000
        while True:
            batch = await self.backend.scan(everything, limit=page, offset=offset)
            doomed += [r.id for r in batch if r.expires_at is not None and r.expires_at <= now]
            if len(batch) < page:
                break
            offset += page
        removed = 0
        for start in range(0, len(doomed), page):
            removed += await self.backend.delete(MemoryFilter(ids=tuple(doomed[start : start + page])))
        if removed:
            self._forget_session_tails()
        return removed

    async def stats(self: MemorySystemClient) -> MemoryStats:
        await self.open()
        total = in_session = None
        if self.available:
            try:
                await self.writes.drain_pending()
                total = await self.backend.count(MemoryFilter())
                in_session = await self.backend.count(MemoryFilter(session_ids=(self.session_id,)))
            except MemoryBackendError as exc:
                self._lost(exc)
        return MemoryStats(
            backend=self.config.backend, available=self.available, session_id=self.session_id,
            total=total, in_session=in_session, **self.writes.counters(),
        )

    async def health(self: MemorySystemClient) -> MemoryHealth:
        await self.open()
        if not self.available:
            await self.reconnect()
        if self.available:
            backend = await self.backend.health()
            ok, detail = backend.ok, backend.detail
        else:
            ok, detail = False, self._unavailable_reason
        counters = self.writes.counters()
        return MemoryHealth(
            ok=ok and counters["outbox"] == 0, available=self.available,
            backend=self.config.backend, detail=detail, **counters,
        )
