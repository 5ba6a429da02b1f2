"""`MemorySystemClient`: the one facade the framework calls (async; sync face in sync.py).

Lifecycle, writes and reads live here; nested contexts in sessions.py, forget/expire/stats/
health in maintenance.py (mixins), item validation in inputs.py.

Written once above the backends: validation, embedding, compression, session scoping, TTL,
the automatic FOLLOWS chain, ranking, write-behind with read-your-writes, and degrading when
the backend is unavailable (writes kept in an outbox, retried, never silently dropped).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import Any

import numpy as np

from DeepResearch.src.memory.backends import (
    MemoryBackend,
    MemoryFilter,
    MemoryRecord,
    create_backend,
)
from DeepResearch.src.memory.backends.filtering import record_matches
from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.embeddings import Embedder, get_embedder
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryConfigError, MemoryInputError
from DeepResearch.src.memory.inputs import (
    clean_content,
    clean_name,
    clean_relations,
    clean_vector,
    parse_filters,
    prepare_record,
)
from DeepResearch.src.memory.maintenance import Maintenance
from DeepResearch.src.memory.models import RelatedMemory, RelationType, RetrievedMemory
from DeepResearch.src.memory.ranking import (
    RankingContext,
    RankingStep,
    default_steps,
    gather_candidates,
    narrow_filter,
    rank,
)
from DeepResearch.src.memory.records_io import to_document
from DeepResearch.src.memory.sessions import (
    NESTED_SEPARATOR,
    NestedContexts,
    NewSessionRecords,
    ancestor_sessions,
    new_session_id,
)
from DeepResearch.src.memory.text import tokenize
from DeepResearch.src.memory.writes import WriteQueue

log = logging.getLogger(__name__)

_PENDING_VECTOR = np.zeros(0, dtype=np.float32)  # replaced once the query is embedded


async def _given(vector: np.ndarray) -> np.ndarray:
    return vector


def limit_for(top_k: int | None, config: MemoryConfig, profile: Any) -> int:
    """How many results a retrieve returns: top_k (or the default), capped by the profile."""
    limit = top_k or config.retrieval.top_k
    return min(limit, profile.max_items) if profile is not None else limit


class MemorySystemClient(NestedContexts, Maintenance):
    """Async memory client. Opens its backend on first use; `close()` flushes."""

    def __init__(
        self,
        config: MemoryConfig | Mapping[str, Any] | None = None,
        *,
        session_id: str | None = None,
        embedder: Embedder | None = None,
        backend: MemoryBackend | None = None,
        steps: Sequence[RankingStep] | None = None,
    ) -> None:
        if config is None:
            config = MemoryConfig()
        elif not isinstance(config, MemoryConfig):
            config = MemoryConfig.from_omegaconf(config)
        self.config = config
        given = session_id or config.session_id
        self.session_id = clean_name(given or new_session_id(), "session_id")
        # A session id this client made up holds nothing yet, nor do the nested contexts named
        # after it: their first memory follows none, with no lookup (two reads per session).
        self._new_root: str | None = None if given else self.session_id
        self._written = NewSessionRecords()  # what it wrote there: merges need not read them
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
        self.writes = WriteQueue(self)

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
            self._backend = create_backend(self.config, self.config.vector_store.embedding_dimension)
        return self._backend

    async def open(self) -> None:
        """Open the backend (idempotent). With on_unavailable=warn a failure gives one warning
        and an unavailable client; with fail it raises MemoryBackendError."""
        if self._opened:
            return
        if self._closed:
            raise MemoryBackendError("this MemorySystemClient is closed; create a new one")
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._opened:
                return
            dim = self.embedder.dimension
            if dim != self.config.vector_store.embedding_dimension:
                raise MemoryConfigError(
                    f"memory.vector_store.embedding_dimension="
                    f"{self.config.vector_store.embedding_dimension} but model "
                    f"{self.config.vector_store.embedding_model!r} gives {dim}-dimensional vectors"
                )
            try:
                await self.backend.open()
                self.available = True
            except MemoryBackendError as exc:
                if self.config.on_unavailable == "fail":
                    raise
                self._unavailable_reason = str(exc)
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
        log.warning("Memory backend %r is available again", self.config.backend)
        return True

    async def close(self) -> None:
        """Flush pending writes, spill what cannot be written to a JSONL file, close."""
        if self._closed:
            return
        if self._opened:
            await self.writes.close()
            if self.available:
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
        temporal_weight, relations, id, vector, ttl, created_at."""
        ids = await self.store_many(
            [{"content": content, "metadata": metadata, **fields}], session_id=session_id
        )
        return ids[0]

    async def store_many(
        self, items: Sequence[Mapping[str, Any]], session_id: str | None = None
    ) -> list[str]:
        """Store several memories (validated all first: one bad item stores nothing)."""
        await self.open()
        if isinstance(items, Mapping | str | bytes):
            raise MemoryInputError("store_many takes a list of dicts with at least 'content'")
        session = clean_name(session_id, "session_id") if session_id is not None else self.session_id
        records = [prepare_record(item, self.config, session, i) for i, item in enumerate(items)]
        if not records:
            return []
        await self._embed_missing(records)
        await self._link_follows(records)
        self._written.add([r for r in records if self._is_new_session(r.session_id)])
        await self.writes.submit(records)
        return [r.id for r in records]

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
            session_id == root or session_id.startswith(root + NESTED_SEPARATOR)
        )

    def _forget_session_tails(self) -> None:
        """After deletes: the last memory of any session must be looked up again, and the
        sessions this client made up may have lost records."""
        self._last_in_session.clear()
        self._new_root = None
        self._written.forget()

    async def _latest_in_session(self, session_id: str) -> str | None:
        await self.writes.drain_pending()
        flt = MemoryFilter(session_ids=(session_id,))
        n = await self.backend.count(flt)
        if n == 0:
            return None
        last = await self.backend.scan(flt, limit=1, offset=n - 1)
        return last[0].id if last else None

    async def import_records(self, records: Sequence[MemoryRecord]) -> int:
        """Write records exactly as given (ids, times, relations, vectors): CLI import."""
        await self.open()
        if not self.available:
            raise MemoryBackendError(f"memory backend unavailable: {self._unavailable_reason}")
        await self.writes.drain_pending()
        await self.backend.upsert(list(records))
        self._written.forget()  # records exactly as given: they may join any session
        return len(records)

    def batched_writes(self) -> AbstractAsyncContextManager[None]:
        """`async with client.batched_writes(): ...`: what is stored inside is written in one
        backend write at the end (reads inside still see it: they write it first)."""
        return self.writes.held()

    async def flush(self) -> int:
        """Write everything pending and retry the outbox; returns how many were written."""
        if not self._opened:
            return 0
        return await self.writes.flush()

    # -- reads ----------------------------------------------------------------------------
    def _scope(self, session_id: str | None, all_sessions: bool) -> tuple[str, ...] | None:
        if all_sessions:
            return None
        session = clean_name(session_id, "session_id") if session_id is not None else self.session_id
        if self.config.nested.include_ancestors:
            return (session, *ancestor_sessions(session))
        return (session,)

    async def retrieve(
        self,
        query: str,
        top_k: int | None = None,
        filters: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        profile: str | None = None,
        *,
        all_sessions: bool = False,
        query_vector: Any = None,
    ) -> list[RetrievedMemory]:
        """Ranked memories for `query` from `session_id` (default: this client's session,
        plus its ancestors for nested contexts). A `session_id` key in `filters` or
        `all_sessions=True` searches other sessions explicitly. `query_vector` (optional)
        is used for the dense search instead of embedding `query`, which still drives the
        lexical search and the ranking steps that read words."""
        query = clean_content(query, self.config.max_content_bytes, what="query")
        if query_vector is not None:
            query_vector = clean_vector(query_vector, self.embedder.dimension)
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
            raise MemoryInputError(f"top_k must be an int >= 1, got {top_k!r}")
        prof = self.config.profile(profile)
        kwargs = parse_filters(filters)
        if not await self._ready():
            return []
        try:
            return await self._retrieve(query, limit_for(top_k, self.config, prof), kwargs,
                                        session_id, all_sessions, prof, query_vector)
        except MemoryBackendError as exc:
            self._lost(exc)
            return []

    async def _retrieve(
        self, query: str, limit: int, kwargs: dict[str, Any], session_id: str | None,
        all_sessions: bool, prof: Any, query_vector: np.ndarray | None = None,
    ) -> list[RetrievedMemory]:
        await self.writes.drain_pending()  # read-your-writes
        if "session_ids" not in kwargs:
            kwargs["session_ids"] = self._scope(session_id, all_sessions)
        now = time.time()
        flt = MemoryFilter(live_at=now, **kwargs)
        # The query embeds in a worker thread; the candidate stage awaits it (and decides
        # what may overlap it); no step reads the vector before that stage has it.
        if query_vector is None:
            query_vector = self.embedder.cached(query)  # a hit needs no worker thread
        embedding = asyncio.ensure_future(
            asyncio.to_thread(self.embedder.embed_query, query)
            if query_vector is None
            else _given(query_vector)
        )
        ctx = RankingContext(
            query=query, query_vector=_PENDING_VECTOR, query_tokens=frozenset(tokenize(query)), now=now,
            limit=limit, retrieval=self.config.retrieval, profile=prof,
            accept=lambda record: record_matches(record, flt),
            fetch_related=self.backend.related_many,
            fetch_neighbours=self.backend.session_neighbours,
        )
        flt = narrow_filter(self.steps, flt, ctx)
        # Bound only now, to the narrowed filter (the unbound fetches above just show the
        # steps' enabled() that fetching is possible): steps that add records get only those
        # the filter passes, filtered where the backend reads them (most graph neighbours of a
        # candidate fail a type filter).
        ctx.accept = lambda record: record_matches(record, flt)
        ctx.fetch_related = partial(self.backend.related_many, flt=flt)
        ctx.fetch_neighbours = partial(self.backend.session_neighbours, flt=flt)
        n = max(20, limit * self.config.retrieval.candidate_multiplier)
        try:
            pool = await gather_candidates(
                self.backend, query, embedding, flt, n, self.config.retrieval
            )
        finally:
            if not embedding.done():
                embedding.cancel()
        ctx.query_vector = embedding.result()
        ctx.score_unseen = pool.score_unseen
        ranked = await rank(pool.items, ctx, self.steps)
        return [
            RetrievedMemory(
                document=to_document(m.record), similarity=m.similarity, score=m.score,
                rank=i, signals=m.signals,
            )
            for i, m in enumerate(ranked, start=1)
        ]

    async def get(self, memory_id: str) -> RetrievedMemory | None:
        """One memory by id (any session), or None."""
        memory_id = clean_name(memory_id, "memory_id")
        if not await self._ready():
            return None
        try:
            await self.writes.drain_pending()
            found = await self.backend.get([memory_id])
        except MemoryBackendError as exc:
            self._lost(exc)
            return None
        if not found:
            return None
        return RetrievedMemory(document=to_document(found[0]), similarity=1.0, score=1.0, rank=1)

    async def get_related_memories(
        self,
        memory_id: str,
        types: Sequence[str | RelationType] | None = None,
        depth: int = 1,
    ) -> list[RelatedMemory]:
        """Memories linked to `memory_id` (both directions) up to `depth` hops, nearest first."""
        memory_id = clean_name(memory_id, "memory_id")
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 10:
            raise MemoryInputError(f"depth must be an int in [1, 10], got {depth!r}")
        rel_types = None if types is None else [t for t, _ in clean_relations([(t, "x") for t in types])]
        if not await self._ready():
            return []
        try:
            await self.writes.drain_pending()
            found = await self.backend.related(memory_id, rel_types, depth)
        except MemoryBackendError as exc:
            self._lost(exc)
            return []
        return [
            RelatedMemory(document=to_document(r.record), relation=RelationType(r.relation), depth=r.depth)
            for r in found
        ]

