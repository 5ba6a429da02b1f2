"""The client's write path: immediate or write-behind batches, and the outbox.

- `enable_async_writes=false`: `store` returns after the backend committed the batch, except
  inside `held()` (the client's `batched_writes()`), whose writes go in one batch at its end.
- `true`: records wait in `pending`; a background task writes them every `flush_interval`
  seconds or as soon as `batch_size` are waiting; every read drains `pending` first
  (read-your-writes); `close()` and interpreter exit flush.
- A write that fails with MemoryBackendError/OSError (or any write while the backend is
  unavailable) goes to the `outbox`, is retried with exponential backoff on later flushes,
  is counted in stats()/health(), and at close is spilled to a JSONL file (one warning
  naming it) if it still cannot be written. Nothing is dropped silently.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import tempfile
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from DeepResearch.src.memory.backends.base import MemoryRecord
from DeepResearch.src.memory.config import StorageConfig
from DeepResearch.src.memory.errors import MemoryBackendError
from DeepResearch.src.memory.records_io import record_to_json

if TYPE_CHECKING:
    from DeepResearch.src.memory.client import MemorySystemClient

log = logging.getLogger(__name__)
RETRYABLE = (MemoryBackendError, OSError, ConnectionError, TimeoutError)
_open_queues: weakref.WeakSet[WriteQueue] = weakref.WeakSet()


class WriteQueue:
    def __init__(self, client: MemorySystemClient) -> None:
        self.client = client
        self.pending: list[MemoryRecord] = []
        self.outbox: list[MemoryRecord] = []
        self.written = 0
        self.failed_attempts = 0
        self.spilled_file: str | None = None
        self._retry_delay = 0.0
        self._next_retry = 0.0
        self._warned = False
        self._lock: asyncio.Lock | None = None
        self._flusher: asyncio.Task[None] | None = None
        self._holds = 0  # > 0 inside held(): writes wait in `pending`

    def register(self) -> None:
        _open_queues.add(self)

    def counters(self) -> dict[str, Any]:
        return {
            "pending": len(self.pending),
            "outbox": len(self.outbox),
            "written": self.written,
            "failed_attempts": self.failed_attempts,
            "spilled_file": self.spilled_file,
        }

    @property
    def _cfg(self) -> StorageConfig:
        return self.client.config.storage

    def _get_lock(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def submit(self, records: list[MemoryRecord]) -> None:
        if not records:
            return
        if not self.client.available:
            self._to_outbox(records, "backend unavailable")
            return
        if self._holds:
            self.pending.extend(records)
            return
        if not self._cfg.enable_async_writes:
            async with self._get_lock():
                await self._write(records)
            return
        self.pending.extend(records)
        self._ensure_flusher()
        if len(self.pending) >= self._cfg.batch_size:
            await self.drain_pending()

    def _ensure_flusher(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush_periodically())

    async def _flush_periodically(self) -> None:
        while True:
            await asyncio.sleep(self._cfg.flush_interval)
            try:
                await self.flush()
            except Exception:  # the outbox holds the records; say why, keep flushing
                log.exception("memory background flush failed; records stay queued")

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Writes submitted inside wait in `pending` and go to the backend together at the
        end, also when the block raises; reads inside drain them first, as always."""
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            if not self._holds:
                await self.drain_pending()

    async def drain_pending(self) -> None:
        """Write what is pending now (reads call this: read-your-writes)."""
        if not self.pending:
            return
        async with self._get_lock():
            batch, self.pending = self.pending, []
            if self.client.available:
                await self._write(batch)
            else:
                self._to_outbox(batch, "backend unavailable")

    async def flush(self, *, force: bool = False) -> int:
        """Write pending records and retry the outbox (when its backoff is due, or force)."""
        before = self.written
        await self.drain_pending()
        if self.outbox and (force or time.monotonic() >= self._next_retry):
            if not self.client.available and not await self.client.reconnect():
                self._backoff()
                return self.written - before
            async with self._get_lock():
                batch, self.outbox = self.outbox, []
                await self._write(batch)
        return self.written - before

    async def _write(self, records: list[MemoryRecord]) -> None:
        size = self._cfg.batch_size
        for start in range(0, len(records), size):
            batch = records[start : start + size]
            try:
                await self.client.backend.upsert(batch)
            except RETRYABLE as exc:
                self.failed_attempts += 1
                self._to_outbox(records[start:], f"{type(exc).__name__}: {exc}")
                self._backoff()
                return
            self.written += len(batch)
        if self.outbox == [] and self._warned:
            log.warning("memory writes succeed again; the outbox is empty")
            self._warned = False
        self._retry_delay = 0.0

    def _to_outbox(self, records: list[MemoryRecord], reason: str) -> None:
        self.outbox.extend(records)
        if not self._warned:
            log.warning(
                "memory: %d write(s) could not be stored (%s); kept in the outbox and retried "
                "on the next flush", len(records), reason,
            )
            self._warned = True

    def _backoff(self) -> None:
        self._retry_delay = min(self._cfg.max_retry_backoff, max(0.5, self._retry_delay * 2))
        self._next_retry = time.monotonic() + self._retry_delay

    async def close(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
            try:
                await self._flusher
            except asyncio.CancelledError:
                pass
            self._flusher = None
        await self.flush(force=True)
        try:
            self.spill()
        except OSError as exc:  # kept in memory: the exit hook tries once more, then says so
            log.error("memory: %d unwritten memories could not be spilled anywhere (%s)",
                      len(self.outbox) + len(self.pending), exc)
            return
        _open_queues.discard(self)

    def spill(self) -> Path | None:
        """Write the outbox (and anything pending) to a JSONL file; warn naming it. The file
        goes beside the faiss store, or, when that folder cannot be written (the reason the
        writes failed, often), into the working folder or the system's temp folder. Raises
        OSError only when none of them can take it."""
        leftover = self.outbox + self.pending
        if not leftover:
            return None
        name = f"unwritten-{time.strftime('%Y%m%dT%H%M%S')}-{self.client.session_id[:12]}.jsonl"
        lines = [json.dumps(record_to_json(record)) + "\n" for record in leftover]
        failures = []
        for folder in _spill_folders(Path(self.client.config.faiss.path)):
            path = folder / name
            try:
                folder.mkdir(parents=True, exist_ok=True)
                with path.open("a", encoding="utf-8") as fh:
                    fh.writelines(lines)
            except OSError as exc:
                failures.append(f"{folder}: {exc}")
                continue
            self.outbox, self.pending = [], []
            self.spilled_file = str(path)
            log.warning(
                "memory: %d memories could not be written to the %r backend and were saved to "
                "%s; load them later with `deepresearch-memory import %s`",
                len(leftover), self.client.config.backend, path, path,
            )
            return path
        raise OSError("; ".join(failures))


def _spill_folders(store: Path) -> list[Path]:
    return [store, Path.cwd() / "memory-unwritten",
            Path(tempfile.gettempdir()) / "deepresearch-memory-unwritten"]


def _flush_at_exit() -> None:
    """Interpreter exit: flush every client that still holds writes, on a fresh loop in a
    fresh thread (the caller's loop may be gone); spill what cannot be written."""
    for queue in list(_open_queues):
        if not (queue.pending or queue.outbox):
            continue
        errors: list[BaseException] = []

        def run(q: WriteQueue = queue, errors: list[BaseException] = errors) -> None:
            try:
                q._lock = None  # a lock bound to a finished loop cannot be awaited here
                asyncio.run(q.flush(force=True))
            except BaseException as exc:  # reported below, then the records are spilled
                errors.append(exc)

        worker = threading.Thread(target=run, name="memory-atexit-flush")
        worker.start()
        worker.join(timeout=30)
        if errors:
            log.warning("memory: flush at exit failed (%s); spilling", errors[0])
        try:
            queue.spill()
        except OSError as exc:
            log.error("memory: %d unwritten memories lost at exit: cannot spill them (%s)",
                      len(queue.outbox) + len(queue.pending), exc)


def register_exit_hook(hook: Callable[[], None]) -> None:
    """Run `hook` at interpreter exit BEFORE concurrent.futures refuses new work (its exit
    hook runs first among atexit handlers, and backends use asyncio.to_thread). Uses
    threading's pre-atexit hook list when available, else atexit."""
    register = getattr(threading, "_register_atexit", None)
    if register is None:
        atexit.register(hook)
        return
    try:
        register(hook)
    except RuntimeError:  # already shutting down
        atexit.register(hook)


register_exit_hook(_flush_at_exit)
