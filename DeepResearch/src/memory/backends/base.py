"""The one small interface every memory backend implements (in_memory, faiss, neo4j).

Everything above it -- embedding, compression, scoring, profiles, TTL policy, nested
contexts -- is written once in the client and the ranking pipeline. A backend only persists
`MemoryRecord`s, answers filtered vector and lexical candidate queries, and walks relations.
All backends pass one shared contract suite (tests/test_memory/).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from DeepResearch.src.memory.backends.record import (  # noqa: F401  (the contract's types, re-exported)
    ARCHIVE_SUFFIX,
    DEFAULT_NAMESPACE,
    FOLLOWS,
    AccessStats,
    BackendHealth,
    Candidate,
    JSONScalar,
    MemoryFilter,
    MemoryRecord,
    RelatedRecord,
    archive_namespace,
    by_namespace,
    indexed_text,
    is_archive_namespace,
    record_matches,
    walk_namespace,
)
from DeepResearch.src.memory.errors import MemoryBackendError
from DeepResearch.src.memory.facts.store import FactStore


class MemoryBackend(ABC):
    """Persistence and candidate search. Every write is durable when its coroutine returns."""

    name: ClassVar[str]
    # True when text_search computes in this process (it then competes with the query
    # embedding for the GIL; the candidate stage orders the two accordingly).
    lexical_in_process: ClassVar[bool] = True
    # True when upsert takes records without a vector (committed, found by text search at
    # once) and pending_vectors/fill_vectors give them theirs later (vector_fill.py).
    fills_vectors_behind: ClassVar[bool] = False
    # What `storage.vectors=auto` does here: fill behind (True) or embed before the write.
    vectors_behind_by_default: ClassVar[bool] = False

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
    async def move(
        self, ids: Sequence[str], from_namespace: str, to_namespace: str,
        metadata: Mapping[str, Any | None] | None = None,
    ) -> int:
        """Re-file the records `ids` of `from_namespace` under `to_namespace` (the archive and
        back), in one transaction, keeping everything they hold: vectors, relations (their
        own, and the edges between the moved ones), times, metadata, access statistics.
        `metadata` patches the metadata of the moved records in that same transaction (a
        key with value None removed, the others set; record.metadata_patch checks it before
        anything is written): the moved records are either all moved and patched or, on a
        failure, left as they were. Unlike `delete` it forgets no fact: facts keep citing
        the moved ids. A record of `to_namespace` with a moved id is replaced, as `upsert`
        replaces it. Missing ids (and records whose stored metadata cannot be read, when a
        patch is given) are skipped; returns how many records moved."""

    @abstractmethod
    async def record_access(self, ids: Sequence[str], namespace: str, at: float) -> None:
        """Each occurrence of an id in `ids` is one access of that record of `namespace`:
        its count goes up by one, its last access becomes `at` (when later than the one
        stored). Ids of no record are ignored. One cheap write for the whole batch."""

    @abstractmethod
    async def access_stats(self, ids: Sequence[str], namespace: str) -> dict[str, AccessStats]:
        """{id: AccessStats} of the records `ids` of `namespace` (a record never accessed:
        count 0, last_accessed None); ids of no record are left out."""

    @abstractmethod
    async def vector_search(
        self, vector: np.ndarray, k: int, flt: MemoryFilter
    ) -> list[Candidate]:
        """The k records nearest to `vector` among those matching `flt`, best first."""

    @abstractmethod
    async def text_search(self, query: str, k: int, flt: MemoryFilter) -> list[Candidate]:
        """The k best lexical (BM25-like) matches for `query` among those matching `flt`."""

    @abstractmethod
    async def scan(
        self, flt: MemoryFilter, limit: int | None = None, offset: int = 0
    ) -> list[MemoryRecord]:
        """Records matching `flt`, oldest first (created_at, then id)."""

    @abstractmethod
    async def count(self, flt: MemoryFilter) -> int: ...

    # A backend implements `related` or `related_many` (each default calls the other; the
    # backends here implement `related_many`, one batched walk).
    async def related(
        self, record_id: str, relation_types: Sequence[str] | None, depth: int
    ) -> list[RelatedRecord]:
        """Records reachable from `record_id` over the given relation types (None: all; both
        directions), up to `depth` hops, nearest first, the start record excluded; `relation`
        is the type of the edge that reached a record, `depth` its distance in hops. The
        walk stays in one namespace: the default one here, `walk_namespace(flt)` in
        `related_many`."""
        return (await self.related_many([record_id], relation_types, depth)).get(record_id, [])

    @abstractmethod
    async def related_many(
        self, record_ids: Sequence[str], relation_types: Sequence[str] | None, depth: int,
        flt: MemoryFilter | None = None,
    ) -> dict[str, list[RelatedRecord]]:
        """For each start id, what `related` finds from it (in the namespace
        `walk_namespace(flt)`), keeping only the records that match `flt`: the walk itself
        still passes through the others (a -> b -> c with b filtered out still finds c at
        depth 2). Starts with nothing found may be left out. One batched walk: the ranking
        pipeline asks about a whole candidate list at once and keeps few records."""

    async def session_neighbours(
        self, record_ids: Sequence[str], radius: int, flt: MemoryFilter | None = None
    ) -> dict[str, list[RelatedRecord]]:
        """For each id, the memories matching `flt` within `radius` steps of it along its
        session's FOLLOWS chain (each memory FOLLOWS the previous one of its session), both
        directions, with `depth` = the distance. Ids without neighbours may be left out.

        An optimisation a backend may declare by overriding it; this generic path (a FOLLOWS
        walk) is what every override must equal (tests/test_memory/test_contract.py)."""
        return await self.related_many(record_ids, [FOLLOWS], radius, flt)

    @abstractmethod
    async def health(self) -> BackendHealth: ...

    # Store markers: numbers kept in the store itself under (namespace, name), e.g. when the
    # namespace was last consolidated (health.py); every client of the store reads the same.
    @abstractmethod
    async def get_marker(self, namespace: str, name: str) -> float | None:
        """The marker `name` of `namespace`; None when none was set."""

    @abstractmethod
    async def set_marker(self, namespace: str, name: str, value: float) -> None:
        """Set the marker `name` of `namespace` to `value` (replacing it), durably, in one
        transaction."""

    def fact_store(self) -> FactStore:
        """This backend's store of entities and facts (facts/), kept beside its memories and
        written in the same transactions. Backends without one raise MemoryBackendError."""
        raise MemoryBackendError(
            f"backend {self.name!r} has no fact store (the knowledge-graph tier needs "
            "memory.backend=in_memory, faiss or neo4j)"
        )

    async def index_agreement(self) -> dict[str, Any] | None:
        """Whether the vector index agrees with the records: counts (`records`, `vectors`,
        `missing`, `extra`), a sample of vectors compared (`sampled`, `sampled_differ`),
        `agree` and the `problems` seen. None for a backend whose vectors are stored with the
        records they belong to (nothing to disagree)."""
        return None

    async def pending_vectors(
        self, limit: int, skip: Sequence[Any] = (), among: tuple[str, Sequence[str]] | None = None,
    ) -> dict[Any, str | None]:
        """{key: full content} of up to `limit` records still without a vector, oldest first,
        but those of `skip`; with `among` (namespace, ids), only those records. None for a
        content that cannot be read (only backends with `fills_vectors_behind`)."""
        return {}

    async def fill_vectors(self, items: Sequence[tuple[Any, Any]]) -> list[str]:
        """Give the records `pending_vectors` named (key, vector) theirs; the ids filled."""
        raise MemoryBackendError(f"backend {self.name!r} stores every vector with its record")

    async def pending_figures(self) -> tuple[int, float | None]:
        """(records without a vector, the oldest one's created_at)."""
        return 0, None

    async def verify(self) -> list[str]:
        """The full (possibly slow) consistency check of what the backend stores: the
        problems found, none when sound. Backends with nothing to check return []."""
        return []
