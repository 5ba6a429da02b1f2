"""Deleting and inspecting memories: forget, expire, stats, health.
A mixin of MemorySystemClient (the public methods live on the client)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from DeepResearch.src.memory.backends.record import MemoryFilter, archive_namespace
from DeepResearch.src.memory.client_parts import ClientParts
from DeepResearch.src.memory.errors import (
    ConfirmationRequired,
    MemoryBackendError,
    MemoryInputError,
)
from DeepResearch.src.memory.health import detail
from DeepResearch.src.memory.inputs import clean_id, parse_filters
from DeepResearch.src.memory.models import MemoryHealth, MemoryStats


class Maintenance(ClientParts):
    """forget / expire / stats / health of MemorySystemClient."""

    async def forget(
        self,
        ids: str | Sequence[str] | None = None,
        *,
        filters: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        everything: bool = False,
        confirm: bool = False,
        archived: bool = False,
    ) -> int:
        """Delete memories of this namespace by id and/or filters (within `session_id` if
        given); returns how many were deleted (facts' sentence memories included).

        - Nothing given deletes nothing: every memory of the namespace needs `everything=True`.
        - A metadata filter key that no memory of the namespace has is refused, naming the
          key and the keys the namespace has; `{"key": None}` selects the memories without a
          value for a key that others have.
        - A forget selecting more than `memory.forget.confirm_above` memories raises
          ConfirmationRequired (with the count) unless `confirm=True`.
        - `archived=True` deletes from the namespace's archive (archive.py) instead."""
        await self.open()
        if ids is None and not filters and session_id is None and not everything:
            raise MemoryInputError(
                "forget needs ids, filters or a session_id; to delete every memory of namespace "
                f"{self.namespace!r} say so (everything=True, CLI: --all)"
            )
        kwargs = parse_filters(filters)
        if ids is not None:
            ids = [ids] if isinstance(ids, str) else list(ids)
            kwargs["ids"] = tuple(clean_id(i, "id") for i in ids)
        if session_id is not None:
            kwargs["session_ids"] = (clean_id(session_id, "session_id"),)
        await self.writes.drain_pending()
        if not self.available:
            return 0
        namespace = archive_namespace(self.namespace) if archived else self.namespace
        flt = MemoryFilter(namespaces=(namespace,), **kwargs)
        await self._refuse_unknown_keys(kwargs.get("metadata", {}), namespace)
        selected = await self.backend.count(flt)
        limit = self.config.forget.confirm_above
        if selected > limit and not confirm:
            raise ConfirmationRequired(
                f"forget would delete {selected} memories of namespace {namespace!r} "
                f"(more than memory.forget.confirm_above={limit}): confirm it (confirm=True; "
                "CLI: --yes; REST and MCP: confirm=true)", selected)
        try:
            async with self.backend.graph_lock:  # a fact write in flight cannot undo the cascade
                removed = await self.backend.delete(flt)
        finally:  # the cascade deletes more than the ids asked: the hot tier drops everything
            self.hot.changed()
        self._forget_session_tails()
        return removed

    async def _refuse_unknown_keys(self, metadata: Mapping[str, Any], namespace: str) -> None:
        """MemoryInputError for a metadata filter key that no memory of `namespace` has (a
        value for): such a key matches nothing, or with None every memory."""
        if not metadata:
            return
        scope = MemoryFilter(namespaces=(namespace,))
        total = await self.backend.count(scope)
        unknown = [key for key in metadata if await self.backend.count(
            MemoryFilter(namespaces=(namespace,), metadata={key: (None,)})) == total]
        if unknown:
            known = await self._metadata_keys(scope)
            raise MemoryInputError(
                f"filter key(s) {unknown} are held by no memory of namespace "
                f"{namespace!r}; its metadata keys: {known[:50]}"
                f"{' ...' if len(known) > 50 else ''} (check the spelling; key=null selects "
                "the memories without a key that others have)")

    async def _metadata_keys(self, scope: MemoryFilter) -> list[str]:
        """The metadata keys the namespace's memories have (a scan: an error's path only)."""
        keys: set[str] = set()
        offset, page = 0, 1000
        while True:
            batch = await self.backend.scan(scope, limit=page, offset=offset)
            keys.update(k for r in batch for k, v in r.metadata.items() if v is not None)
            if len(batch) < page:
                return sorted(keys)
            offset += page

    async def expire(self, now: float | None = None) -> int:
        """Delete memories whose TTL has passed (expires_at <= now), and archived ones older
        than memory.archive.retention_days; returns how many."""
        await self.open()
        await self.writes.drain_pending()
        if not self.available:
            return 0
        now = time.time() if now is None else now
        purged = await self.purge_archive(now)
        return purged + await self._expire_live(now)

    async def _expire_live(self, now: float) -> int:
        everything, live = self._bounded(), self._bounded(live_at=now)
        if await self.backend.count(everything) == await self.backend.count(live):
            return 0  # the common case costs two counts
        removed = await self._delete_where(
            everything, lambda r: r.expires_at is not None and r.expires_at <= now)
        if removed:
            self._forget_session_tails()
        return removed

    async def stats(self) -> MemoryStats:
        await self.open()
        total = in_session = archived = None
        if self.available:
            try:
                await self.writes.drain_pending()
                total = await self.backend.count(self._bounded())
                in_session = await self.backend.count(self._bounded(session_ids=(self.session_id,)))
                archived = await self.backend.count(
                    MemoryFilter(namespaces=(archive_namespace(self.namespace),)))
            except MemoryBackendError as exc:
                self._lost(exc)
        return MemoryStats(
            backend=self.config.backend, available=self.available, session_id=self.session_id,
            total=total, in_session=in_session, archived=archived, **self.writes.counters(),
            **self.hot.counters(), **self.filler.counters(),
        )

    async def health_detail(self) -> dict[str, Any]:
        """Each tier reachable, the vector index against the records, growth, the outbox,
        consolidation lag, and the problems seen (health.py)."""
        await self.open()
        return await detail(self.backend, self.config, (self.namespace,), [self.hot.counters()],
                            [self.writes], self.clock())

    async def health(self) -> MemoryHealth:
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
