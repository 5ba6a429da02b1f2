"""The one small interface every memory backend implements (in_memory, faiss, neo4j).

Everything above it -- embedding, compression, scoring, profiles, TTL policy, nested
contexts -- is written once in the client and the ranking pipeline. A backend only persists
`MemoryRecord`s, answers filtered vector and lexical candidate queries, and walks relations.
All backends pass one shared contract suite (tests/test_memory/).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from DeepResearch.src.memory.compression import full_content
from DeepResearch.src.memory.errors import MemoryBackendError
from DeepResearch.src.memory.text import token_string

if TYPE_CHECKING:
    from DeepResearch.src.memory.facts.store import FactStore

JSONScalar = str | int | float | bool | None
FOLLOWS = "follows"  # RelationType.FOLLOWS: a memory follows the previous one of its session
DEFAULT_NAMESPACE = "default"


@dataclass(slots=True)
class MemoryRecord:
    """A memory as a backend stores it. Times are UNIX epoch seconds (float, UTC)."""

    id: str
    session_id: str
    memory_type: str
    content: str  # the full text, or a searchable prefix when content_blob holds it compressed
    created_at: float
    agent_type: str | None = None
    importance: float = 0.5
    temporal_weight: float = 1.0
    expires_at: float | None = None
    content_codec: str | None = None  # None | "lz4" | "gzip" | "zstd"
    content_blob: bytes | None = None  # the full content, compressed with content_codec
    metadata: dict[str, Any] = field(default_factory=dict)  # JSON-serialisable, returned unchanged
    relations: list[tuple[str, str]] = field(default_factory=list)  # (RelationType value, target id)
    vector: np.ndarray | None = None  # float32, shape (dimension,), L2-normalised
    # The hard boundary (user / tenant / project): no read, filter, walk or delete crosses it.
    # A record is known by (namespace, id): two namespaces may each have a record "1".
    namespace: str = DEFAULT_NAMESPACE
    # When what the memory tells of happened (e.g. the date of a conversation's session), if
    # the caller knows it; `created_at` is when it was stored. Time-aware ranking reads it.
    event_at: float | None = None


def by_namespace(keys: Iterable[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """(namespace, its ids in order, each once) of (namespace, id) keys."""
    groups: dict[str, dict[str, None]] = {}
    for namespace, record_id in keys:
        groups.setdefault(namespace, {})[record_id] = None
    return [(namespace, list(ids)) for namespace, ids in groups.items()]


def walk_namespace(flt: MemoryFilter | None) -> str:
    """The namespace a relation walk stays in: the filter's one namespace, or the default
    one (a record's relations name ids of its own namespace)."""
    if flt is None or flt.namespaces is None:
        return DEFAULT_NAMESPACE
    if len(flt.namespaces) != 1:
        raise MemoryBackendError(
            f"a relation walk stays in one namespace, the filter names {len(flt.namespaces)}"
        )
    return flt.namespaces[0]


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """A conjunction of conditions; None means "no condition on this field".

    `metadata` maps a metadata key to the values it may take (one value = equality).
    `live_at` keeps only memories not expired at that epoch time.
    """

    ids: tuple[str, ...] | None = None
    namespaces: tuple[str, ...] | None = None
    session_ids: tuple[str, ...] | None = None
    memory_types: tuple[str, ...] | None = None
    agent_types: tuple[str, ...] | None = None
    metadata: Mapping[str, tuple[JSONScalar, ...]] = field(default_factory=dict)
    live_at: float | None = None
    created_after: float | None = None
    created_before: float | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """A record found by a candidate query, with that query's score (higher is better).

    For vector search the score is cosine similarity in [-1, 1] whatever the index metric;
    for text search it is the backend's lexical score (only its order is used).
    """

    record: MemoryRecord
    score: float


@dataclass(frozen=True, slots=True)
class RelatedRecord:
    record: MemoryRecord
    relation: str  # RelationType value of the edge that reached it
    depth: int  # 1 = directly related


@dataclass(frozen=True, slots=True)
class BackendHealth:
    ok: bool
    backend: str
    detail: str = ""


class MemoryBackend(ABC):
    """Persistence and candidate search. Every write is durable when its coroutine returns."""

    name: ClassVar[str]
    # True when text_search computes in this process (it then competes with the query
    # embedding for the GIL; the candidate stage orders the two accordingly).
    lexical_in_process: ClassVar[bool] = True

    @property
    def graph_lock(self) -> asyncio.Lock:
        """Held by every read-then-write of the knowledge graph (FactGraph.writing) and by
        every delete through a client (its cascade edits facts): in one process neither
        undoes the other, however many clients share this store."""
        lock = self.__dict__.get("_graph_lock")
        if lock is None:
            lock = self.__dict__["_graph_lock"] = asyncio.Lock()
        return lock

    @abstractmethod
    async def open(self) -> None:
        """Connect / load; raise MemoryBackendError with a clear message if impossible."""

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def upsert(self, records: Sequence[MemoryRecord]) -> None:
        """Insert or replace records (vectors included) in one batch: a record replaces the
        one with its namespace and id."""

    @abstractmethod
    async def get(
        self, ids: Sequence[str], namespace: str = DEFAULT_NAMESPACE
    ) -> list[MemoryRecord]:
        """Records of `namespace` by id, in the order asked, missing ids left out; vectors
        included."""

    @abstractmethod
    async def delete(self, flt: MemoryFilter) -> int:
        """Delete every record matching the filter; return how many. A backend with a fact
        store also forgets, in the same transaction, the facts built on them (the plan of
        facts/forgetting.py), and counts the facts' sentence memories deleted with them."""

    @abstractmethod
    async def vector_search(
        self, vector: np.ndarray, k: int, flt: MemoryFilter
    ) -> list[Candidate]:
        """The k records nearest to `vector` among those matching `flt`, best first."""

    @abstractmethod
    async def text_search(self, query: str, k: int, flt: MemoryFilter) -> list[Candidate]:
        """The k best lexical (BM25-like) matches for `query` among those matching `flt`."""

    async def dense_and_lexical(
        self, vector: np.ndarray, query: str, k: int, flt: MemoryFilter
    ) -> tuple[list[Candidate], list[Candidate]]:
        """vector_search(vector) and text_search(query) of one retrieve, side by side. A
        backend that computes both in this process may do them in one go instead."""
        dense, lexical = await asyncio.gather(
            self.vector_search(vector, k, flt), self.text_search(query, k, flt)
        )
        return dense, lexical

    @abstractmethod
    async def scan(
        self, flt: MemoryFilter, limit: int | None = None, offset: int = 0
    ) -> list[MemoryRecord]:
        """Records matching `flt`, oldest first (created_at, then id)."""

    @abstractmethod
    async def count(self, flt: MemoryFilter) -> int: ...

    # A backend implements `related` or `related_many` (each default calls the other; the
    # backends here implement `related_many`, one batched walk).
    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.related is MemoryBackend.related and cls.related_many is MemoryBackend.related_many:
            raise TypeError(f"{cls.__name__} must implement related or related_many")

    async def related(
        self, record_id: str, relation_types: Sequence[str] | None, depth: int
    ) -> list[RelatedRecord]:
        """Records reachable from `record_id` over the given relation types (None: all; both
        directions), up to `depth` hops, nearest first, the start record excluded; `relation`
        is the type of the edge that reached a record, `depth` its distance in hops. The
        walk stays in one namespace: the default one here, `walk_namespace(flt)` in
        `related_many`."""
        return (await self.related_many([record_id], relation_types, depth)).get(record_id, [])

    async def related_many(
        self, record_ids: Sequence[str], relation_types: Sequence[str] | None, depth: int,
        flt: MemoryFilter | None = None,
    ) -> dict[str, list[RelatedRecord]]:
        """For each start id, what `related` finds from it, keeping only the records that
        match `flt`: the walk itself still passes through the others (a -> b -> c with b
        filtered out still finds c at depth 2). Starts with nothing found may be left out.

        This default walks `related` once per id and filters in Python; the backends here
        override it with one batched walk that filters where the records are read, since the
        ranking pipeline asks about a whole candidate list at once and keeps few records."""
        from DeepResearch.src.memory.backends.filtering import record_matches  # imports this module

        out: dict[str, list[RelatedRecord]] = {}
        for record_id in dict.fromkeys(record_ids):
            found = await self.related(record_id, relation_types, depth)
            if flt is not None:
                found = [r for r in found if record_matches(r.record, flt)]
            if found:
                out[record_id] = found
        return out

    async def session_neighbours(
        self, record_ids: Sequence[str], radius: int, flt: MemoryFilter | None = None
    ) -> dict[str, list[RelatedRecord]]:
        """For each id, the memories matching `flt` within `radius` steps of it along its
        session's FOLLOWS chain (each memory FOLLOWS the previous one of its session), both
        directions, with `depth` = the distance. Ids without neighbours may be left out."""
        return await self.related_many(record_ids, [FOLLOWS], radius, flt)

    @abstractmethod
    async def health(self) -> BackendHealth: ...

    def fact_store(self) -> FactStore:
        """This backend's store of entities and facts (facts/), kept beside its memories and
        written in the same transactions. Backends without one raise MemoryBackendError."""
        raise MemoryBackendError(
            f"backend {self.name!r} has no fact store (the knowledge-graph tier needs "
            "memory.backend=in_memory, faiss or neo4j)"
        )

    async def verify(self) -> list[str]:
        """The full (possibly slow) consistency check of what the backend stores: the
        problems found, none when sound. Backends with nothing to check return []."""
        return []


def indexed_text(record: MemoryRecord) -> str:
    """What the FTS5 row of `record` holds: the tokens of its full (decompressed) content."""
    return token_string(full_content(record.content, record.content_codec, record.content_blob))
