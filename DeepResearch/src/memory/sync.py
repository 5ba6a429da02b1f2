"""The sync face: `SyncMemorySystemClient` has the async client's methods as plain calls.

Every call runs on ONE event loop per process, in its own thread (anyio's blocking portal;
never `asyncio.run` inside a running loop), so it works from sync code, from threads, and from
sync code called inside a running event loop. The wrapped async client lives on that loop for
its whole life.
"""

from __future__ import annotations

import threading
from collections.abc import Coroutine, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

from DeepResearch.src.memory.backends.record import AccessStats
from DeepResearch.src.memory.client import MemorySystemClient
from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.models import (
    MemoryDocument,
    MemoryHealth,
    MemoryStats,
    RelatedMemory,
    RetrievedMemory,
)
from DeepResearch.src.memory.writes import register_exit_hook

T = TypeVar("T")


class _Portal:
    """anyio's blocking portal: one event loop in its own thread, started on first use and
    kept for the life of the process (the async clients it runs live on that loop)."""

    def __init__(self) -> None:
        self._portal: BlockingPortal | None = None
        self._started: AbstractContextManager[BlockingPortal] | None = None
        self._lock = threading.Lock()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        with self._lock:
            if self._portal is None:
                # entered on first use, left at interpreter exit (stop)
                self._started = start_blocking_portal()
                self._portal = self._started.__enter__()
        try:
            return self._portal.call(lambda: coro)
        except RuntimeError as exc:
            if "event loop thread" not in str(exc):
                raise
            coro.close()
            raise RuntimeError(
                "a SyncMemorySystemClient method was called from its own loop thread; "
                "use the async MemorySystemClient there"
            ) from None

    def stop(self) -> None:
        """Stop the loop while threads still run (an exit hook, after the clients closed):
        left to the garbage collector at interpreter shutdown, the portal's exit would wait
        forever for its frozen daemon thread, and the process would never end."""
        with self._lock:
            started, self._started, self._portal = self._started, None, None
        if started is not None:
            started.__exit__(None, None, None)


_LOOP = _Portal()
# Exit hooks run in reverse order of registration: this one runs after _close_at_exit (below).
register_exit_hook(_LOOP.stop)
_open_clients: list[SyncMemorySystemClient] = []


class SyncMemorySystemClient:
    """Blocking twin of MemorySystemClient (same arguments, same results)."""

    def __init__(
        self, config: MemoryConfig | Mapping[str, Any] | None = None, **kwargs: Any
    ) -> None:
        self.aio = MemorySystemClient(config, **kwargs)
        _open_clients.append(self)

    @property
    def session_id(self) -> str:
        return self.aio.session_id

    @property
    def namespace(self) -> str:
        return self.aio.namespace

    @property
    def config(self) -> MemoryConfig:
        return self.aio.config

    @property
    def available(self) -> bool:
        return self.aio.available

    def open(self) -> None:
        _LOOP.run(self.aio.open())

    def store(self, content: str | bytes, metadata: Mapping[str, Any] | None = None,
              session_id: str | None = None, **fields: Any) -> str:
        return _LOOP.run(self.aio.store(content, metadata, session_id, **fields))

    def store_many(self, items: Sequence[Mapping[str, Any]], session_id: str | None = None) -> list[str]:
        return _LOOP.run(self.aio.store_many(items, session_id))

    def retrieve(self, query: str, top_k: int | None = None, filters: Mapping[str, Any] | None = None,
                 session_id: str | None = None, profile: str | None = None, *,
                 all_sessions: bool = False, query_vector: Any = None,
                 as_of: datetime | None = None) -> list[RetrievedMemory]:
        return _LOOP.run(self.aio.retrieve(query, top_k, filters, session_id, profile,
                                           all_sessions=all_sessions, query_vector=query_vector,
                                           as_of=as_of))

    def access_stats(self, ids: Sequence[str]) -> dict[str, AccessStats]:
        return _LOOP.run(self.aio.access_stats(ids))

    def get(self, memory_id: str) -> RetrievedMemory | None:
        return _LOOP.run(self.aio.get(memory_id))

    def get_related_memories(self, memory_id: str, types: Sequence[str] | None = None,
                             depth: int = 1) -> list[RelatedMemory]:
        return _LOOP.run(self.aio.get_related_memories(memory_id, types, depth))

    def create_nested_context(self, parent_session_id: str, loop_id: str) -> str:
        return self.aio.create_nested_context(parent_session_id, loop_id)

    def merge_nested_context(self, child_session_id: str, parent_session_id: str) -> None:
        self.aio.merge_nested_context(child_session_id, parent_session_id)

    def nested_context(self, parent_session_id: str, loop_id: str) -> AbstractContextManager[str]:
        return self.aio.nested_context(parent_session_id, loop_id)

    def forget(self, ids: str | Sequence[str] | None = None, *,
               filters: Mapping[str, Any] | None = None, session_id: str | None = None,
               everything: bool = False, confirm: bool = False, archived: bool = False) -> int:
        return _LOOP.run(self.aio.forget(ids, filters=filters, session_id=session_id,
                                         everything=everything, confirm=confirm,
                                         archived=archived))

    def archive(self, ids: Sequence[str], *, reason: str) -> int:
        return _LOOP.run(self.aio.archive(ids, reason=reason))

    def restore(self, ids: Sequence[str]) -> int:
        return _LOOP.run(self.aio.restore(ids))

    def pin(self, ids: Sequence[str]) -> int:
        return _LOOP.run(self.aio.pin(ids))

    def unpin(self, ids: Sequence[str]) -> int:
        return _LOOP.run(self.aio.unpin(ids))

    def archived(self, limit: int | None = None, offset: int = 0) -> list[MemoryDocument]:
        return _LOOP.run(self.aio.archived(limit, offset))

    def expire(self, now: float | None = None) -> int:
        return _LOOP.run(self.aio.expire(now))

    def flush(self) -> int:
        return _LOOP.run(self.aio.flush())

    def stats(self) -> MemoryStats:
        return _LOOP.run(self.aio.stats())

    def health(self) -> MemoryHealth:
        return _LOOP.run(self.aio.health())

    def health_detail(self) -> dict[str, Any]:
        return _LOOP.run(self.aio.health_detail())

    def close(self) -> None:
        _LOOP.run(self.aio.close())
        if self in _open_clients:
            _open_clients.remove(self)

    def __enter__(self) -> SyncMemorySystemClient:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close_at_exit() -> None:
    for client in list(_open_clients):
        try:
            client.close()
        except Exception as exc:  # report and go on closing the others
            import logging

            logging.getLogger(__name__).error("memory: closing a client at exit failed: %s", exc)


register_exit_hook(_close_at_exit)
