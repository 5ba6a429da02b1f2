"""`MemorySystemClient`: the one facade the framework calls (async; sync face in sync.py).

Lifecycle and writes live here; reads in reads.py, nested contexts in sessions.py,
forget/expire/stats/health in maintenance.py, the archive tier and pins in archive.py (mixins),
item validation in inputs.py.

Written once above the backends: validation, embedding, compression, session scoping, TTL,
the automatic FOLLOWS chain, ranking, write-behind with read-your-writes, and degrading when
the backend is unavailable (writes kept in an outbox, retried, never silently dropped).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from DeepResearch.src.memory.access import AccessLog
from DeepResearch.src.memory.archive import Archive
from DeepResearch.src.memory.backends import (
    MemoryBackend,
    MemoryFilter,
    MemoryRecord,
    create_backend,
)
from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.embeddings import Embedder, get_embedder
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.hot_tier import HotTier
from DeepResearch.src.memory.inputs import (
    clean_id,
    fields_from_metadata,
    prepare_record,
)
from DeepResearch.src.memory.maintenance import Maintenance
from DeepResearch.src.memory.models import RelationType
from DeepResearch.src.memory.ranking import (
    RankingStep,
    default_steps,
)
from DeepResearch.src.memory.reads import Reads
from DeepResearch.src.memory.sessions import NestedContexts, SessionLinks, new_session_id
from DeepResearch.src.memory.vector_fill import VectorFiller
from DeepResearch.src.memory.writes import WriteQueue

log = logging.getLogger(__name__)


class MemorySystemClient(Reads, NestedContexts, Maintenance, Archive):
    """Async memory client. Opens its backend on first use; `close()` flushes."""

    def __init__(
        self,
        config: MemoryConfig | Mapping[str, Any] | None = None,
        *,
        namespace: str | None = None,
        session_id: str | None = None,
        embedder: Embedder | None = None,
        backend: MemoryBackend | None = None,
        steps: Sequence[RankingStep] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """`clock` (epoch seconds; default time.time) is what the client reads as "now": a
        retrieve's default as_of, the hot tier's entry lifetimes and expiry checks."""
        if config is None:
            config = MemoryConfig()
        elif not isinstance(config, MemoryConfig):
            config = MemoryConfig.from_omegaconf(config)
        self.config = config
        # The client's boundary: every record it writes, reads, walks or deletes is in it.
        self.namespace = clean_id(namespace or config.namespace, "namespace")
        given = session_id or config.session_id
        self.session_id = clean_id(given or new_session_id(), "session_id")
        # A session id this client made up holds nothing yet, nor do the nested contexts it
        # makes in it: their first memory follows none, with no lookup (two reads per session).
        self._new_root: str | None = None if given else self.session_id
        self._links = SessionLinks()
        self._embedder = embedder
        self._backend = backend
        self.steps: list[RankingStep] = list(steps) if steps is not None else default_steps()
        self._opened = False
        self._closed = False
        self.available = False
        self._unavailable_reason = ""
        self._next_reconnect = 0.0
        self._open_lock: asyncio.Lock | None = None
        self._last_in_session: dict[str, str] = {}
        self._last_time: dict[str, float] = {}
        self.clock: Callable[[], float] = clock or time.time
        # Consulted before the stores by get and retrieve (hot_tier.py: its coherence rules).
        self.hot = HotTier(config.hot, clock=self.clock)
        self.writes = WriteQueue(self)
        self.filler = VectorFiller(self)  # vectors of committed memories, filled behind
        self.accesses = AccessLog(lambda: self.backend, self.namespace)

    # -- lifecycle ------------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            store = self.config.vector_store
            self._embedder = get_embedder(store.embedding_model, store.embedding_runtime)
        return self._embedder

    @property
    def backend(self) -> MemoryBackend:
        if self._backend is None:
            # The model decides the dimension (loading reads its config; ONNX: ~0.2 s once exported).
            self._backend = create_backend(self.config, self.embedder.dimension)
        return self._backend

    async def open(self, *, warn_unavailable: bool = True) -> None:
        """Open the backend (idempotent). With on_unavailable=warn a failure gives one warning
        and an unavailable client; with fail it raises MemoryBackendError.
        `warn_unavailable=False`: the caller reports an unavailable backend itself (the CLI,
        whose command stops there), so the warning would say it twice."""
        if self._opened:
            return
        if self._closed:
            raise MemoryBackendError("this MemorySystemClient is closed; create a new one")
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._opened:
                return
            try:
                await self.backend.open()
                self.available = True
                self.filler.start()
            except MemoryBackendError as exc:
                if self.config.on_unavailable == "fail":
                    raise
                self._unavailable_reason = str(exc)
                if warn_unavailable:
                    log.warning(
                        "Memory backend %r is unavailable, running without memory "
                        "(memory.on_unavailable=warn; writes are kept and retried): %s",
                        self.config.backend, exc,
                    )
            self._opened = True
            self.writes.register()

    def _lost(self, exc: MemoryBackendError) -> None:
        """A backend lost mid-run degrades like one down at open (or re-raises with
        on_unavailable=fail): one warning, reads answer empty, writes wait in the outbox."""
        if self.config.on_unavailable == "fail":
            raise exc
        if self.available:
            log.warning(
                "Memory backend %r was lost, running without memory until it is back "
                "(writes are kept and retried): %s", self.config.backend, exc,
            )
        self.available = False
        self._unavailable_reason = str(exc)
        self._next_reconnect = time.monotonic() + self.config.storage.max_retry_backoff

    async def _ready(self) -> bool:
        """Open, and True when reads can reach the backend; an unavailable one is retried
        at most once per storage.max_retry_backoff seconds."""
        await self.open()
        if not self.available and time.monotonic() >= self._next_reconnect:
            self._next_reconnect = time.monotonic() + self.config.storage.max_retry_backoff
            await self.reconnect()
        return self.available

    async def reconnect(self) -> bool:
        """Try to open an unavailable backend again; True when it is available now."""
        if self.available:
            return True
        try:
            await self.backend.open()
        except MemoryBackendError as exc:
            self._unavailable_reason = str(exc)
            return False
        self.available = True
        self.filler.start()
        log.warning("Memory backend %r is available again", self.config.backend)
        return True

    async def close(self) -> None:
        """Flush pending writes, spill what cannot be written to a JSONL file, close.
        Raises UnwrittenMemoriesError (a MemoryBackendError) when memories could be neither
        written nor spilled; the backend is closed all the same."""
        if self._closed:
            return
        try:
            if self._opened:
                if self.available:
                    await self.accesses.flush()
                await self.writes.close()
                await self.filler.close()
        finally:
            if self._opened and self.available:
                await self.backend.close()
            self._closed = True
            self.available = False

    async def __aenter__(self) -> MemorySystemClient:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- writes ---------------------------------------------------------------------------
    async def store(
        self,
        content: str | bytes,
        metadata: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        **fields: Any,
    ) -> str:
        """Store one memory; returns its id. Extra fields: memory_type, agent_type, importance,
        temporal_weight, relations, id, vector, ttl, created_at, event_at (when what it tells
        of happened: a datetime, naive = UTC, or epoch seconds)."""
        ids = await self.store_many(
            [{"content": content, "metadata": metadata, **fields}], session_id=session_id
        )
        return ids[0]

    async def store_many(
        self, items: Sequence[Mapping[str, Any]], session_id: str | None = None
    ) -> list[str]:
        """Store several memories (validated all first: one bad item stores nothing). With
        synchronous writes they go to the backend in ONE upsert (one transaction on the
        embedded backend): committed all together or not at all. Ids are the items' `id` or
        new ones; storing an id again replaces that memory, so a retry never duplicates.
        Raises MemoryBackendError when the backend did not commit them (they stay in the
        outbox, retried, and are spilled at close if still unwritten)."""
        await self.open()
        if isinstance(items, Mapping | str | bytes):
            raise MemoryInputError("store_many takes a list of dicts with at least 'content'")
        session = clean_id(session_id, "session_id") if session_id is not None else self.session_id
        items = [fields_from_metadata(item, f"item {i}", session, self.namespace)
                 for i, item in enumerate(items)]
        records = [
            prepare_record(item, self.config, session, i, self.namespace, self.embedder.dimension)
            for i, item in enumerate(items)
        ]
        if not records:
            return []
        if not self.filler.defers(len(records)):
            await self._embed_missing(records)
        await self._link_follows(records)
        await self.writes.submit(records)
        return [r.id for r in records]

    def _bounded(self, **conditions: Any) -> MemoryFilter:
        """A filter with the given conditions, inside this client's namespace."""
        return MemoryFilter(namespaces=(self.namespace,), **conditions)

    async def _embed_missing(self, records: list[MemoryRecord]) -> None:
        todo = [r for r in records if r.vector is None]
        if not todo:
            return
        from DeepResearch.src.memory.compression import full_content

        texts = [full_content(r.content, r.content_codec, r.content_blob) for r in todo]
        vectors = await asyncio.to_thread(self.embedder.embed, texts)
        for record, vector in zip(todo, vectors, strict=True):
            record.vector = vector

    async def _link_follows(self, records: list[MemoryRecord]) -> None:
        """Chain each new memory to the previous memory of its session (FOLLOWS)."""
        for record in records:
            previous = self._last_in_session.get(record.session_id)
            if (
                previous is None
                and record.session_id not in self._last_in_session
                and self.available
                and not self._is_new_session(record.session_id)
            ):
                try:
                    previous = await self._latest_in_session(record.session_id)
                except MemoryBackendError as exc:  # the write itself still goes to the outbox
                    self._lost(exc)
            if previous is not None and previous != record.id and not any(
                t == RelationType.FOLLOWS.value for t, _ in record.relations
            ):
                record.relations.append((RelationType.FOLLOWS.value, previous))
            self._last_in_session[record.session_id] = record.id

    def _is_new_session(self, session_id: str) -> bool:
        """Made up by this client (or nested in such a session) and not yet written to."""
        root = self._new_root
        return root is not None and (
            session_id == root or root in self._links.ancestors(session_id)
        )

    def _forget_session_tails(self) -> None:
        """After deletes: the last memory of any session must be looked up again, and the
        sessions this client made up may have lost records."""
        self._last_in_session.clear()
        self._new_root = None

    async def _latest_in_session(self, session_id: str) -> str | None:
        await self.writes.drain_pending()
        flt = self._bounded(session_ids=(session_id,))
        n = await self.backend.count(flt)
        if n == 0:
            return None
        last = await self.backend.scan(flt, limit=1, offset=n - 1)
        return last[0].id if last else None

    async def import_records(self, records: Sequence[MemoryRecord]) -> int:
        """Write records exactly as given (ids, times, relations, vectors): CLI import. Every
        record must be in this client's namespace."""
        others = sorted({r.namespace for r in records} - {self.namespace})
        if others:
            raise MemoryInputError(
                f"records of namespace(s) {others} cannot be imported by a client of namespace "
                f"{self.namespace!r}; open one with memory.namespace set to theirs"
            )
        await self.open()
        if not self.available:
            raise MemoryBackendError(f"memory backend unavailable: {self._unavailable_reason}")
        await self.writes.drain_pending()
        try:
            await self.backend.upsert(list(records))
        finally:
            self.hot.changed(r.id for r in records)
        return len(records)

    def batched_writes(self) -> AbstractAsyncContextManager[None]:
        """`async with client.batched_writes(): ...`: what is stored inside is written in one
        backend write at the end (reads inside still see it: they write it first)."""
        return self.writes.held()

    async def flush(self) -> int:
        """Write everything pending (memories, their vectors, and the retrieves' access
        statistics) and retry the outbox; returns how many memories were written."""
        if not self._opened:
            return 0
        written = await self.writes.flush()
        if self.available:
            await self.filler.settle()
            await self.accesses.flush()
        return written
