"""The client's write path: immediate or write-behind batches, and the outbox.

- `enable_async_writes=false`: `store`/`store_many` return after the backend committed the
  call's records in ONE upsert (one transaction on the embedded backend: a crash leaves all of
  them or none); a failed one raises one MemoryBackendError naming the cause. Inside `held()`
  (the client's `batched_writes()`) writes go in one upsert at its end.
- `true`: records wait in `pending`; a background task writes them every `flush_interval`
  seconds or as soon as `batch_size` are waiting; every read drains `pending` first
  (read-your-writes); `close()` and interpreter exit flush.
- A record leaves the queue only once the backend committed it. ANY failure of a write (or a
  write while the backend is unavailable) puts the records in the `outbox`; it is retried
  with exponential backoff on later flushes (upserts by id: a retry never duplicates), counted
  in stats()/health(), and at close spilled to a JSONL file if it still cannot be written.
- Facts a caller could not write to the graph (`keep_facts`: a run's document facts while
  the backend is down) are spilled with them, as `unwritten_fact` lines that
  `deepresearch-memory import` writes to the graph again.
- A spill that no folder can take is an error: `close()` raises UnwrittenMemoriesError, and
  at interpreter exit the process ends with status 1 (see `_exit_status`).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures.thread  # noqa: F401  (its exit hook must be registered before ours)
import contextlib
import hashlib
import json
import logging
import os
import re
import stat
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from DeepResearch.src.memory.backends.base import MemoryRecord
from DeepResearch.src.memory.config import StorageConfig
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.records_io import record_to_json, to_document

if TYPE_CHECKING:
    from DeepResearch.src.memory.backends.base import MemoryBackend
    from DeepResearch.src.memory.config import MemoryConfig
    from DeepResearch.src.memory.hot_tier import HotTier
    from DeepResearch.src.memory.vector_fill import VectorFiller

log = logging.getLogger(__name__)
_open_queues: weakref.WeakSet[WriteQueue] = weakref.WeakSet()
_lost_at_exit: list[int] = []  # memories the exit hook could not save: the status is then 1
LOST_EXIT_STATUS = 1
UNWRITTEN_FACT = "unwritten_fact"  # the `kind` of a spilled fact's line


class UnwrittenMemoriesError(MemoryBackendError):
    """Memories could be neither written to the backend nor saved to a spill file."""


def failure_cause(exc: BaseException) -> str:
    """The cause of a failed write as the user should read it: the error, and the errors it
    was raised while handling (a failed ROLLBACK hides the "disk is full" that caused it)."""
    parts: list[str] = []
    seen: BaseException | None = exc
    while seen is not None and len(parts) < 3:
        text = str(seen) if isinstance(seen, MemoryBackendError) else f"{type(seen).__name__}: {seen}"
        if not any(text in part for part in parts):
            parts.append(text)
        seen = seen.__cause__ or seen.__context__
    return "; after ".join(parts)


class Owner(Protocol):
    """What the write queue needs of the client that owns it (client.py)."""

    config: MemoryConfig
    namespace: str
    session_id: str
    available: bool
    _unavailable_reason: str
    hot: HotTier
    filler: VectorFiller

    @property
    def backend(self) -> MemoryBackend: ...

    async def reconnect(self) -> bool: ...


class WriteQueue:
    def __init__(self, client: Owner) -> None:
        self.client = client
        self.pending: list[MemoryRecord] = []
        self.refused: list[MemoryRecord] = []  # refused by the backend as data: spilled, never retried
        self.outbox: list[MemoryRecord] = []
        self.facts: list[dict[str, Any]] = []  # unwritten facts (keep_facts): spilled at close
        self.written = 0
        self.failed_attempts = 0
        self.spilled_file: str | None = None
        self.spilled = 0  # memories saved to spill files
        self.spilled_facts = 0  # facts saved to spill files
        self.unsaved = 0  # memories neither written nor spilled when the queue closed
        self.last_failure = ""
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
        """Queue or write `records`; with synchronous writes raise MemoryBackendError when the
        backend did not commit them (they are in the outbox then)."""
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
                await self._write(records, at_once=True, raise_failure=True)
            if self.outbox and time.monotonic() >= self._next_retry:
                await self.flush()
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
            except Exception as exc:  # the records stay queued; say why, keep flushing
                log.warning("memory: background flush failed (%s); records stay queued",
                            failure_cause(exc))

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Writes submitted inside wait in `pending` and go to the backend together at the
        end (one upsert), also when the block raises; reads inside drain them first, as
        always. A failed final write keeps them in the outbox with one warning, as a
        write-behind flush does (the workflow's nested merges go on)."""
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            if not self._holds:
                await self.drain_pending(at_once=True)

    async def drain_pending(self, *, at_once: bool = False) -> None:
        """Write what is pending now (reads call this: read-your-writes)."""
        if not self.pending:
            return
        async with self._get_lock():
            batch, self.pending = self.pending, []
            if self.client.available:
                await self._write(batch, at_once=at_once or not self._cfg.enable_async_writes)
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

    async def _write(
        self, records: list[MemoryRecord], *, at_once: bool = False, raise_failure: bool = False
    ) -> None:
        """Upsert `records` (all in one call when `at_once`, else in batch_size batches).
        Whatever the backend raises, the records not committed go to the outbox."""
        size = max(1, len(records)) if at_once else self._cfg.batch_size
        for start in range(0, len(records), size):
            batch = records[start : start + size]
            try:
                await self._upsert(batch)
            except MemoryInputError:
                # Data the backend refuses (a value Neo4j cannot store, a wrong vector) never
                # succeeds on a retry. A synchronous store reports it and writes
                # nothing; a background write lands the good records and sets the refused
                # ones aside for the spill file, so they neither block the others nor vanish.
                if raise_failure:
                    raise
                await self._write_each(batch)
                continue
            except BaseException as exc:  # incl. cancellation: the records must not vanish
                self.failed_attempts += 1
                self.last_failure = failure_cause(exc)
                self._backoff()
                if not isinstance(exc, Exception):
                    self.outbox.extend(records[start:])
                    raise
                message = (
                    f"could not write {len(records) - start} memories to the "
                    f"{self.client.config.backend!r} backend: {self.last_failure}; they are kept "
                    "in the outbox, retried on the next flush, and saved to a spill file at "
                    "close if still unwritten"
                )
                if raise_failure:  # the caller hears of it through the exception alone
                    self.outbox.extend(records[start:])
                    self._warned = True
                    raise MemoryBackendError(message) from exc
                self._to_outbox(records[start:], self.last_failure)
                return
            self.written += len(batch)
        if self.outbox == [] and self._warned:
            if self.last_failure:  # a flush at exit with nothing failed before says nothing
                log.warning("memory writes succeed again; the outbox is empty")
            self._warned = False
        self._retry_delay = 0.0

    async def _write_each(self, records: list[MemoryRecord]) -> None:
        for i, record in enumerate(records):
            try:
                await self._upsert([record])
            except MemoryInputError as exc:
                self.refused.append(record)
                log.error("memory: the %r backend refused memory %r (%s); it goes to the spill "
                          "file at close", self.client.config.backend, record.id, exc)
                continue
            except Exception as exc:
                self._to_outbox(records[i:], failure_cause(exc))
                return
            self.written += 1

    async def _upsert(self, records: list[MemoryRecord]) -> None:
        """One backend upsert; the hot tier hears of it (committed: the records are what this
        session stored; failed: they may be half-written, so only dropped)."""
        try:
            await self.client.backend.upsert(records)
        except BaseException:
            self.client.hot.changed(r.id for r in records)
            raise
        self.client.filler.wrote(r.id for r in records if r.vector is None)
        if self.client.hot.enabled:
            self.client.hot.written([to_document(r) for r in records])
        else:
            self.client.hot.changed(r.id for r in records)

    def _to_outbox(self, records: list[MemoryRecord], reason: str) -> None:
        self.outbox.extend(records)
        if not self._warned:
            log.warning(
                "memory: %d write(s) could not be stored (%s); kept in the outbox and retried "
                "on the next flush", len(records), reason,
            )
            self._warned = True

    def cause(self) -> str:
        """Why the queued records are not written."""
        if self.last_failure:
            return self.last_failure
        return f"backend unavailable: {self.client._unavailable_reason or 'not opened'}"

    def _backoff(self) -> None:
        self._retry_delay = min(self._cfg.max_retry_backoff, max(0.5, self._retry_delay * 2))
        self._next_retry = time.monotonic() + self._retry_delay

    async def close(self) -> None:
        """Flush; spill what is still unwritten. Raises UnwrittenMemoriesError when no folder
        can take the spill (the records stay in `outbox` for the caller; `unsaved` counts them)."""
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
            self._flusher = None
        self._warned = True  # the spill's warning says it all
        try:
            await self.flush(force=True)
        except Exception as exc:  # the records are still queued: spilled below
            self.last_failure = failure_cause(exc)
        try:
            self.spill()
        except OSError as exc:
            self.unsaved = len(self.outbox) + len(self.pending) + len(self.facts)
            _open_queues.discard(self)  # the caller hears it now; the exit hook stays quiet
            raise UnwrittenMemoriesError(
                f"{_what(len(self.outbox) + len(self.pending), len(self.facts))} could not be "
                f"written to the {self.client.config.backend!r} backend ({self.cause()}) nor "
                f"saved to a spill file: {exc}"
            ) from exc
        _open_queues.discard(self)

    def keep_facts(self, facts: list[dict[str, Any]], cause: BaseException) -> None:
        """Facts (FactSpec lines, facts/graph.py) the graph could not write: kept here and
        spilled at close with the memories, so nothing a run could not write is dropped."""
        self.facts.extend(facts)
        self.last_failure = failure_cause(cause)

    def spill(self) -> Path | None:
        """Write the outbox (and anything pending) to a JSONL file; warn naming it. The file
        goes into storage.spill_dir (default: the faiss store's folder), or, when that folder
        cannot be written (the reason the
        writes failed, often), into the working folder or the system's temp folder. Raises
        OSError only when none of them can take it (no partial file is left behind)."""
        leftover = self.outbox + self.pending + self.refused
        facts = self.facts
        if not leftover and not facts:
            return None
        name = spill_name(self.client.session_id)
        lines = [json.dumps(record_to_json(record)) + "\n" for record in leftover]
        lines += [json.dumps({"kind": UNWRITTEN_FACT, "namespace": self.client.namespace,
                              **fact}) + "\n" for fact in facts]
        failures: list[str] = []
        config = self.client.config
        for folder, private in _spill_folders(Path(config.storage.spill_dir or config.faiss.path),
                                              failures):
            path = folder / name
            try:
                if private:
                    private_folder(folder)
                else:
                    folder.mkdir(parents=True, exist_ok=True)
                _write_new_file(path, lines)
            except OSError as exc:
                failures.append(f"{folder}: {exc.strerror or exc}")
                continue
            self.outbox, self.pending, self.refused, self.facts = [], [], [], []
            self.spilled_file = str(path)
            self.spilled += len(leftover)
            self.spilled_facts += len(facts)
            self.unsaved = 0
            log.warning(
                "memory: %s could not be written to the %r backend (%s) and were saved to "
                "%s; load them later with `deepresearch-memory import %s`",
                _what(len(leftover), len(facts)), self.client.config.backend, self.cause(),
                path, path,
            )
            return path
        raise OSError("; ".join(failures))


def private_folder(folder: Path) -> None:
    """Make sure `folder` is this user's alone: created with mode 0700 when missing; an
    existing one must be a real folder (not a link) owned by this user with mode 0700, or
    OSError says what is wrong (a shared folder such as the temp folder may hold a folder
    of that name made by someone else)."""
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = folder.lstat()
    problem = None
    if not stat.S_ISDIR(info.st_mode):
        problem = "is not a folder (a link or a file)"
    elif info.st_uid != os.geteuid():
        problem = f"belongs to uid {info.st_uid}, not to this user (uid {os.geteuid()})"
    elif info.st_mode & 0o077:
        problem = f"has mode {stat.S_IMODE(info.st_mode):04o}, not 0700"
    if problem is not None:
        log.warning("memory: not spilling into %s: it %s", folder, problem)
        raise OSError(f"refused: it {problem}; a spill folder must be yours with mode 0700 "
                      "(remove it, or set memory.storage.spill_dir)")


def _write_new_file(path: Path, lines: list[str]) -> None:
    """Create `path` (never an existing file, never through a link) with mode 0600 and
    `lines`, synced; removed again on failure."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        try:
            fh.writelines(lines)
            fh.flush()
            os.fsync(fh.fileno())
        except BaseException:
            fh.close()
            path.unlink(missing_ok=True)
            raise


def _what(memories: int, facts: int) -> str:
    parts = [f"{memories} memories"] if memories or not facts else []
    return " and ".join([*parts, *([f"{facts} facts"] if facts else [])])


_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def spill_name(session_id: str) -> str:
    """A file name safe for any session id: a readable slug of it, its hash (two ids with the
    same slug differ), the time and the process id."""
    slug = _UNSAFE.sub("-", session_id).strip("-")[:24] or "session"
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    stamp = time.strftime("%Y%m%dT%H%M%S")
    return f"unwritten-{stamp}-{os.getpid()}-{slug}-{digest}.jsonl"


def spill_files(config: MemoryConfig) -> list[Path]:
    """The spill files waiting in the folders a spill of this configuration goes to (memories
    never written: `deepresearch-memory import FILE` loads them), oldest first."""
    found: list[Path] = []
    for folder, _ in _spill_folders(Path(config.storage.spill_dir or config.faiss.path), []):
        with contextlib.suppress(OSError):
            found += [p for p in folder.glob("unwritten-*.jsonl") if p.is_file()]
    return sorted(set(found), key=lambda p: p.name)


def _spill_folders(store: Path, failures: list[str]) -> Iterator[tuple[Path, bool]]:
    """Where a spill may go, in order, and whether the folder must be private (the fallbacks
    in shared places: `private_folder`); a folder that cannot even be named is a failure."""
    yield store, False
    for name, where in (("working folder", Path.cwd), ("temp folder", tempfile.gettempdir)):
        try:
            base = where()
        except OSError as exc:  # a deleted working folder; no usable temp folder
            failures.append(f"{name}: {exc.strerror or exc}")
            continue
        yield Path(base) / ("memory-unwritten" if name == "working folder"
                            else "deepresearch-memory-unwritten"), True


def _flush_at_exit() -> None:
    """Interpreter exit: flush every client that still holds writes, on a fresh loop in a
    fresh thread (the caller's loop may be gone); spill what cannot be written."""
    for queue in list(_open_queues):
        if not (queue.pending or queue.outbox or queue.facts):
            continue
        errors: list[BaseException] = []

        def run(q: WriteQueue = queue, errors: list[BaseException] = errors) -> None:
            try:
                q._lock = None  # a lock bound to a finished loop cannot be awaited here
                q._warned = True  # the spill's warning says it all
                asyncio.run(q.flush(force=True))
            except BaseException as exc:  # reported below, then the records are spilled
                errors.append(exc)

        worker = threading.Thread(target=run, name="memory-atexit-flush")
        worker.start()
        worker.join(timeout=30)
        if errors:
            log.warning("memory: flush at exit failed (%s); spilling", failure_cause(errors[0]))
        try:
            queue.spill()
        except OSError as exc:
            lost = len(queue.outbox) + len(queue.pending) + len(queue.facts)
            _lost_at_exit.append(lost)
            log.error(
                "memory: %d unwritten memories lost at exit: cannot spill them (%s); the "
                "process ends with status %d", lost, exc, LOST_EXIT_STATUS,
            )


def _exit_status() -> None:
    """Registered first among atexit handlers, so it runs last: when the exit hook could not
    save memories, end the process with LOST_EXIT_STATUS instead of the status it had (an
    atexit handler can change it only by ending the process, after flushing the logs)."""
    if not _lost_at_exit:
        return
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(LOST_EXIT_STATUS)


def register_exit_hook(hook: Callable[[], None]) -> None:
    """Run `hook` at interpreter exit BEFORE concurrent.futures refuses new work (backends use
    asyncio.to_thread and thread pools). Threading's pre-atexit hooks run in reverse order of
    registration, and concurrent.futures registers its own when first imported: this module
    imports it first, so a hook registered here always runs before it. Uses threading's
    pre-atexit hook list when available, else atexit."""
    register = getattr(threading, "_register_atexit", None)
    if register is None:
        atexit.register(hook)
        return
    try:
        register(hook)
    except RuntimeError:  # already shutting down
        atexit.register(hook)


atexit.register(_exit_status)
register_exit_hook(_flush_at_exit)
