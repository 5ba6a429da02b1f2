"""`SharedBackend`: one opened backend used by several clients (one per namespace) in one
process, as the memory service does. `open()` opens the real backend once (and again after
it was found down); `close()` of a client leaves it open: its owner calls `close_shared()`
once every client is closed. Everything else is passed through unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from DeepResearch.src.memory.backends.base import (
    DEFAULT_NAMESPACE,
    AccessStats,
    BackendHealth,
    Candidate,
    MemoryBackend,
    MemoryFilter,
    MemoryRecord,
    RelatedRecord,
)
from DeepResearch.src.memory.errors import MemoryBackendError


class SharedBackend(MemoryBackend):
    name: ClassVar[str] = "shared"

    def __init__(self, inner: MemoryBackend) -> None:
        self.inner = inner
        self.lexical_in_process = inner.lexical_in_process  # type: ignore[misc]
        self.fills_vectors_behind = inner.fills_vectors_behind  # type: ignore[misc]
        self.vectors_behind_by_default = inner.vectors_behind_by_default  # type: ignore[misc]
        self._open = False
        self._lock = asyncio.Lock()

    @property
    def is_open(self) -> bool:
        return self._open

    async def open(self) -> None:
        if self._open:
            return
        async with self._lock:
            if not self._open:
                await self.inner.open()
                self._open = True

    async def reopen(self) -> None:
        """Close (ignoring a failure) and open the real backend again."""
        async with self._lock:
            if self._open:
                self._open = False
                try:
                    await self.inner.close()
                except MemoryBackendError:
                    pass
            await self.inner.open()
            self._open = True

    async def close(self) -> None:
        """A client's close: the shared backend stays open for the others."""

    async def close_shared(self) -> None:
        async with self._lock:
            if self._open:
                self._open = False
                await self.inner.close()

    async def upsert(self, records: Sequence[MemoryRecord]) -> None:
        await self.inner.upsert(records)

    async def get(
        self, ids: Sequence[str], namespace: str = DEFAULT_NAMESPACE
    ) -> list[MemoryRecord]:
        return await self.inner.get(ids, namespace)

    async def delete(self, flt: MemoryFilter) -> int:
        return await self.inner.delete(flt)

    async def move(
        self, ids: Sequence[str], from_namespace: str, to_namespace: str,
        metadata: Mapping[str, Any | None] | None = None,
    ) -> int:
        return await self.inner.move(ids, from_namespace, to_namespace, metadata)

    async def record_access(self, ids: Sequence[str], namespace: str, at: float) -> None:
        await self.inner.record_access(ids, namespace, at)

    async def access_stats(self, ids: Sequence[str], namespace: str) -> dict[str, AccessStats]:
        return await self.inner.access_stats(ids, namespace)

    async def vector_search(self, vector: np.ndarray, k: int, flt: MemoryFilter) -> list[Candidate]:
        return await self.inner.vector_search(vector, k, flt)

    async def text_search(self, query: str, k: int, flt: MemoryFilter) -> list[Candidate]:
        return await self.inner.text_search(query, k, flt)

    async def scan(
        self, flt: MemoryFilter, limit: int | None = None, offset: int = 0
    ) -> list[MemoryRecord]:
        return await self.inner.scan(flt, limit, offset)

    async def count(self, flt: MemoryFilter) -> int:
        return await self.inner.count(flt)

    async def related_many(
        self, record_ids: Sequence[str], relation_types: Sequence[str] | None, depth: int,
        flt: MemoryFilter | None = None,
    ) -> dict[str, list[RelatedRecord]]:
        return await self.inner.related_many(record_ids, relation_types, depth, flt)

    async def session_neighbours(
        self, record_ids: Sequence[str], radius: int, flt: MemoryFilter | None = None
    ) -> dict[str, list[RelatedRecord]]:
        return await self.inner.session_neighbours(record_ids, radius, flt)

    async def health(self) -> BackendHealth:
        if not self._open:
            return BackendHealth(ok=False, backend=self.inner.name, detail="not open")
        return await self.inner.health()

    async def get_marker(self, namespace: str, name: str) -> float | None:
        return await self.inner.get_marker(namespace, name)

    async def set_marker(self, namespace: str, name: str, value: float) -> None:
        await self.inner.set_marker(namespace, name, value)

    def fact_store(self) -> Any:
        return self.inner.fact_store()

    async def verify(self) -> list[str]:
        return await self.inner.verify()

    async def pending_vectors(
        self, limit: int, skip: Sequence[Any] = (), among: tuple[str, Sequence[str]] | None = None,
    ) -> dict[Any, str | None]:
        return await self.inner.pending_vectors(limit, skip, among)

    async def fill_vectors(self, items: Sequence[tuple[Any, Any]]) -> list[str]:
        return await self.inner.fill_vectors(items)

    async def pending_figures(self) -> tuple[int, float | None]:
        return await self.inner.pending_figures()

    async def index_agreement(self) -> dict[str, Any] | None:
        return await self.inner.index_agreement()

    def __getattr__(self, name: str) -> Any:  # backend-specific extras (e.g. root, rebuild)
        return getattr(self.inner, name)
