"""Reads of MemorySystemClient: `retrieve` (candidates, then the ranking pipeline), `get`,
`get_related_memories`. A mixin, like sessions.py and maintenance.py: the public methods live
on the client."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any

import numpy as np

from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord
from DeepResearch.src.memory.backends.decoding import report_skipped
from DeepResearch.src.memory.backends.record import AccessStats, record_matches
from DeepResearch.src.memory.client_parts import ClientParts
from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.inputs import (
    clean_content,
    clean_id,
    clean_profile,
    clean_relations,
    clean_time,
    clean_top_k,
    clean_vector,
    parse_filters,
    unreadable,
)
from DeepResearch.src.memory.models import RelatedMemory, RelationType, RetrievedMemory
from DeepResearch.src.memory.ranking import RankingContext, gather_candidates, narrow_filter, rank
from DeepResearch.src.memory.ranking.candidates import dense_query_text
from DeepResearch.src.memory.ranking.graph import evidence_paths
from DeepResearch.src.memory.records_io import to_document
from DeepResearch.src.memory.text import tokenize

_PENDING_VECTOR = np.zeros(0, dtype=np.float32)  # replaced once the query is embedded


def readable(record: MemoryRecord) -> bool:
    """False (with one warning per record and process, the warning of a damaged record) for
    a stored record that cannot be served; reads skip it instead of failing on it."""
    problem = unreadable(record)
    if problem is None:
        return True
    report_skipped(record.id, problem)
    return False


async def _given(vector: np.ndarray) -> np.ndarray:
    return vector


async def _part(pair: asyncio.Future, i: int) -> np.ndarray:
    return (await pair)[i]


def clean_as_of(as_of: Any) -> float:
    """The retrieve's reference time as epoch seconds; MemoryInputError for anything but a
    datetime."""
    if not isinstance(as_of, datetime):
        raise MemoryInputError(
            f"as_of must be a datetime (naive = UTC), got {type(as_of).__name__} {as_of!r:.80}"
        )
    return clean_time(as_of, "as_of")


def limit_for(top_k: int | None, config: MemoryConfig, profile: Any) -> int:
    """How many results a retrieve returns: top_k (or the default), capped by the profile."""
    limit = top_k or config.retrieval.top_k
    return min(limit, profile.max_items) if profile is not None else limit



def reads_clock(steps: Sequence[Any], ctx: RankingContext) -> bool:
    """True when the ranking's answer depends on the time it is asked at (an enabled step
    says so; a step that cannot say is assumed to)."""
    return any(
        step.enabled(ctx) and (not hasattr(step, "reads_clock") or step.reads_clock(ctx))
        for step in steps
    )


def answer_key(query: str, limit: int, kwargs: Mapping[str, Any], profile: str | None,
               query_vector: np.ndarray | None, as_of: float | None,
               steps: Sequence[Any]) -> tuple[Any, ...]:
    """What a retrieve's answer depends on besides the stores' content: the hot tier's key."""
    conditions = json.dumps(kwargs, sort_keys=True, default=repr)
    vector = None if query_vector is None else hashlib.sha1(query_vector.tobytes()).hexdigest()
    return (query, limit, conditions, profile, vector, as_of, tuple(map(id, steps)))


class Reads(ClientParts):
    """retrieve / get / get_related_memories of MemorySystemClient."""

    def _scope(
        self, session_id: str | None, all_sessions: bool
    ) -> tuple[str, ...] | None:
        if all_sessions:
            return None
        session = clean_id(session_id, "session_id") if session_id is not None else self.session_id
        return self._links.scope(session, self.config.nested.include_ancestors)

    async def visible_sessions(self, session_id: str) -> tuple[str, ...]:
        """The sessions a retrieve scoped to `session_id` reads."""
        return self._scope(clean_id(session_id, "session_id"), False) or ()

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
        as_of: datetime | None = None,
    ) -> list[RetrievedMemory]:
        """Ranked memories for `query`, always inside this client's namespace: from
        `session_id` (plus its ancestors for nested contexts) when given, else from every
        session of the namespace (`all_sessions=True` says so explicitly). A `session_id` key
        in `filters` picks sessions too. `query_vector` (optional)
        is used for the dense search instead of embedding `query`, which still drives the
        lexical search and the ranking steps that read words. `as_of` (a datetime, naive =
        UTC; default now) is the time the question is asked: memories expired by then are
        left out, max_age and temporal weighting count ages up to it, and time words in the
        query ("last month", "in May") are resolved against it. It does not hide memories
        stored after it."""
        query = clean_content(query, self.config.max_content_bytes, what="query")
        if query_vector is not None:
            query_vector = clean_vector(query_vector, self.embedder.dimension)
        if top_k is not None:
            top_k = clean_top_k(top_k)
        now = self.clock() if as_of is None else clean_as_of(as_of)
        prof = clean_profile(self.config, profile)
        kwargs = parse_filters(filters)
        if not await self._ready():
            return []
        try:
            found = await self._retrieve(query, limit_for(top_k, self.config, prof), kwargs,
                                         session_id, all_sessions, prof, query_vector, now,
                                         hot_key=(profile, as_of is not None))
        except MemoryBackendError as exc:
            self._lost(exc)
            return []
        self.accesses.record([m.id for m in found], self.clock())  # written in the background
        return found

    async def _retrieve(
        self, query: str, limit: int, kwargs: dict[str, Any],
        session_id: str | None, all_sessions: bool, prof: Any,
        query_vector: np.ndarray | None = None, now: float | None = None,
        hot_key: tuple[str | None, bool] | None = None,
    ) -> list[RetrievedMemory]:
        """The retrieve; with `hot_key` (the profile's name, whether as_of was given) the hot
        tier answers it when it can and keeps what the stores answered."""
        await self.writes.drain_pending()  # read-your-writes (the hot tier hears of them)
        await self.filler.settle()  # and the vectors of what this client stored
        if "session_ids" not in kwargs and session_id is not None:
            kwargs["session_ids"] = self._scope(session_id, all_sessions)
        now = self.clock() if now is None else now
        flt = MemoryFilter(namespaces=(self.namespace,), live_at=now, **kwargs)
        ctx = RankingContext(
            query=query, query_vector=_PENDING_VECTOR, query_tokens=frozenset(tokenize(query)), now=now,
            limit=limit, retrieval=self.config.retrieval, profile=prof,
            accept=lambda record: record_matches(record, flt) and readable(record),
            fetch_related=self.backend.related_many,
            fetch_neighbours=self.backend.session_neighbours,
            search_vector=self.backend.vector_search,
            search_text=self.backend.text_search,
        )
        flt = narrow_filter(self.steps, flt, ctx)
        key, generation = None, self.hot.generation
        if hot_key is not None and self.hot.enabled:
            profile_name, as_of_given = hot_key
            if as_of_given or not reads_clock(self.steps, ctx):
                key = answer_key(query, limit, kwargs, profile_name, query_vector,
                                 now if as_of_given else None, self.steps)
                cached = self.hot.get_answer(key, now)
                if cached is not None:
                    return cached
            else:
                self.hot.miss()
        # The query embeds in a worker thread; the candidate stage awaits it (and decides
        # what may overlap it); no step reads the vector before that stage has it.
        mode = self.config.retrieval.dense_query
        dense_text = query if mode == "both" else dense_query_text(query, mode)
        topic_text = dense_query_text(query, mode) if mode == "both" else query
        if query_vector is None:
            query_vector = self.embedder.cached(dense_text)  # a hit needs no worker thread
        topic = None
        if topic_text != query:  # dense_query "both": the name-free query, in the same batch
            both = asyncio.ensure_future(self._embed_pair(dense_text, topic_text, query_vector))
            embedding, topic = (asyncio.ensure_future(_part(both, i)) for i in (0, 1))
        else:
            embedding = asyncio.ensure_future(
                asyncio.to_thread(self.embedder.embed_query, dense_text)
                if query_vector is None
                else _given(query_vector)
            )
        # Bound only now, to the narrowed filter (the unbound fetches above just show the
        # steps' enabled() that fetching is possible): steps that add records get only those
        # the filter passes, filtered where the backend reads them (most graph neighbours of a
        # candidate fail a type filter).
        ctx.accept = lambda record: record_matches(record, flt) and readable(record)
        ctx.fetch_related = partial(self.backend.related_many, flt=flt)
        ctx.fetch_neighbours = partial(self.backend.session_neighbours, flt=flt)
        ctx.search_vector = partial(self.backend.vector_search, flt=flt)
        ctx.search_text = partial(self.backend.text_search, flt=flt)
        ctx.graph_evidence = self._graph_walk()
        ctx.fetch_records = partial(self.backend.get, namespace=self.namespace)
        # A pool whose size does not depend on top_k (up to the pool size): top_k=10 is the
        # first 10 of top_k=50.
        n = max(self.config.retrieval.candidate_pool, limit)
        try:
            pool = await gather_candidates(
                self.backend, query, embedding, flt, n, self.config.retrieval, topic
            )
        finally:
            for future in (embedding, topic):
                if future is not None and not future.done():
                    future.cancel()
        ctx.query_vector = embedding.result()
        pool.items = [m for m in pool.items if readable(m.record)]
        ctx.score_unseen = pool.score_unseen
        ranked = await rank(pool.items, ctx, self.steps)
        results = [
            RetrievedMemory(
                document=to_document(m.record), similarity=m.similarity, score=m.score,
                rank=i, signals=m.signals, paths=m.paths,
            )
            for i, m in enumerate(ranked, start=1)
        ]
        if key is not None:
            self.hot.put_answer(key, results, generation)
        elif hot_key is not None:
            self.hot.put_memories((m.document for m in results), generation)
        return results

    async def _embed_pair(self, text: str, topic: str, vector: np.ndarray | None
                          ) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of `text` (unless given) and `topic`, the missing ones embedded in one
        batch in a worker thread (one forward pass), both kept in the query cache."""
        known = [vector, self.embedder.cached(topic)]
        missing = [t for t, v in zip((text, topic), known, strict=True) if v is None]
        if missing:
            found = iter(await asyncio.to_thread(self.embedder.embed, missing))
            known = [v if v is not None else self.embedder.prime(t, next(found))
                     for t, v in zip((text, topic), known, strict=True)]
        return known[0], known[1]

    def _graph_walk(self) -> Any:
        """The graph path's walk bound to this namespace's fact store, or None when
        retrieval.graph is off or the backend has no fact store."""
        cfg = self.config.retrieval.graph
        if not cfg.enabled:
            return None
        try:
            store = self.backend.fact_store()
        except MemoryBackendError:
            return None
        return partial(evidence_paths, store, self.namespace, max_entities=cfg.max_entities,
                       max_facts=cfg.max_facts, max_evidence=cfg.max_evidence,
                       max_fact_evidence=cfg.max_fact_evidence)

    async def access_stats(self, ids: Sequence[str]) -> dict[str, AccessStats]:
        """{id: AccessStats(count, last_accessed)} of memories of this namespace: how many
        retrieves returned each, and when last (epoch seconds). Missing ids are left out."""
        if isinstance(ids, str | bytes) or not isinstance(ids, Sequence):
            raise MemoryInputError(f"ids must be a list of memory ids, got {ids!r:.80}")
        wanted = [clean_id(i, "memory id") for i in ids]
        await self.open()
        if not self.available:
            raise MemoryBackendError(f"memory backend unavailable: {self._unavailable_reason}")
        await self.accesses.flush()
        return await self.backend.access_stats(wanted, self.namespace)

    async def get(self, memory_id: str) -> RetrievedMemory | None:
        """One memory by id (any session of this namespace), or None."""
        memory_id = clean_id(memory_id, "memory_id")
        if not await self._ready():
            return None
        try:
            await self.writes.drain_pending()
            cached = self.hot.get_memory(memory_id, self.clock())
            if cached is not None:
                return RetrievedMemory(document=cached, similarity=1.0, score=1.0, rank=1)
            generation = self.hot.generation
            found = await self.backend.get([memory_id], self.namespace)
        except MemoryBackendError as exc:
            self._lost(exc)
            return None
        if not found or not readable(found[0]):
            return None
        document = to_document(found[0])
        self.hot.put_memory(document, generation)
        return RetrievedMemory(document=document, similarity=1.0, score=1.0, rank=1)

    async def get_related_memories(
        self,
        memory_id: str,
        types: Sequence[str | RelationType] | None = None,
        depth: int = 1,
    ) -> list[RelatedMemory]:
        """Memories linked to `memory_id` (both directions) up to `depth` hops, nearest first."""
        memory_id = clean_id(memory_id, "memory_id")
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 10:
            raise MemoryInputError(f"depth must be an int in [1, 10], got {depth!r}")
        rel_types = None if types is None else [t for t, _ in clean_relations([(t, "x") for t in types])]
        if not await self._ready():
            return []
        try:
            await self.writes.drain_pending()
            if not await self.backend.get([memory_id], self.namespace):
                return []
            walks = await self.backend.related_many(
                [memory_id], rel_types, depth, self._bounded()
            )
        except MemoryBackendError as exc:
            self._lost(exc)
            return []
        found = [r for r in walks.get(memory_id, []) if readable(r.record)]
        return [
            RelatedMemory(document=to_document(r.record), relation=RelationType(r.relation), depth=r.depth)
            for r in found
        ]
