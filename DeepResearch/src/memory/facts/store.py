"""The small interface each backend implements to persist entities and facts.

Resolution, contradiction rules, ingestion and the fact tools live above it and are written
once. A backend keeps entities and facts beside its memories: `put` writes entities, facts
and the memories that carry the facts' sentences in one transaction. `write_lock` serialises
the writers of a namespace that one process's own lock cannot see (other processes).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager

from DeepResearch.src.memory.backends.record import MemoryRecord
from DeepResearch.src.memory.errors import MemoryBackendError
from DeepResearch.src.memory.facts.model import Entity, Fact, FactQuery


def name_key(name: str) -> str:
    """The normalised form entity names and aliases are matched by (exact match step)."""
    return " ".join(name.casefold().split())


def entity_name_keys(entity: Entity) -> list[str]:
    """The distinct name keys of an entity: name, real name, aliases (the exact-match pool)."""
    names = [entity.name, entity.real_name or "", *entity.aliases]
    return list(dict.fromkeys(k for k in map(name_key, names) if k))


def refuse_foreign_ids(items: Sequence[Entity | Fact], owner: Mapping[str, str]) -> None:
    """MemoryBackendError when an entity's or fact's id is already another namespace's
    (`owner`: stored id -> its namespace): a put never replaces across namespaces."""
    for item in items:
        namespace = owner.get(item.id, item.namespace)
        if namespace != item.namespace:
            raise MemoryBackendError(
                f"{type(item).__name__.lower()} id {item.id!r} already belongs to namespace "
                f"{namespace!r}, not {item.namespace!r}: ids are unique across namespaces; "
                "nothing of this batch was written"
            )


def fact_is_current(fact: Fact, as_of: float) -> bool:
    """True in the world at `as_of` (unknown bounds open) and not retired by then."""
    return (
        (fact.valid_at is None or fact.valid_at <= as_of)
        and (fact.invalid_at is None or fact.invalid_at > as_of)
        and (fact.expired_at is None or fact.expired_at > as_of)
    )


def fact_matches(fact: Fact, query: FactQuery, now: float) -> bool:
    """`query` evaluated in Python: for stores that keep facts in dicts (and for tests)."""
    if fact.namespace != query.namespace or fact.confidence < query.min_confidence:
        return False
    for wanted, value in (
        (query.ids, fact.id), (query.subject_ids, fact.subject_id),
        (query.predicates, fact.predicate), (query.object_ids, fact.object_id),
    ):
        if wanted is not None and value not in wanted:
            return False
    if query.object_values is not None:
        keys = {name_key(v) for v in query.object_values}
        if fact.object_value is None or name_key(fact.object_value) not in keys:
            return False
    return query.include_history or fact_is_current(
        fact, now if query.as_of is None else query.as_of
    )


def fact_order(fact: Fact) -> tuple[bool, float, float, str]:
    """Sort key of find_facts: newest valid_at first, unknown last (then newest learned)."""
    return (fact.valid_at is None, -(fact.valid_at or 0.0), -fact.created_at, fact.id)


class FactStore(ABC):
    @asynccontextmanager
    async def write_lock(self, namespace: str) -> AsyncIterator[None]:
        """Held around the reads, the rules and the one `put` of a batch of `namespace`
        (FactGraph): a block entered after another has committed its put sees that put.
        Here nothing: the backend's `graph_lock` (FactGraph.writing) serialises one
        process's writers, which is what in_memory has and what the embedded store's service
        runs (one worker). Neo4j, which
        any number of workers write, overrides it (backends/neo4j_fact_lock.py)."""
        yield

    @abstractmethod
    async def put(
        self,
        entities: Sequence[Entity] = (),
        facts: Sequence[Fact] = (),
        memories: Sequence[MemoryRecord] = (),
        delete_entity_ids: Sequence[str] = (),
    ) -> None:
        """Insert or replace entities and facts (by id), upsert the memories carrying the
        facts' sentences, and delete merged-away entities -- all or nothing."""

    @abstractmethod
    async def entities_by_key(
        self, namespace: str, keys: Sequence[str], types: Sequence[str] | None = None
    ) -> list[Entity]:
        """Entities whose name, real name or an alias has one of these `name_key`s."""

    @abstractmethod
    async def get_entities(self, namespace: str, ids: Sequence[str]) -> list[Entity]: ...

    @abstractmethod
    async def entity_keys(self, namespace: str, types: Sequence[str] | None = None) -> list[tuple[str, str]]:
        """(entity id, name key) of every name, real name and alias: the fuzzy-match pool."""

    @abstractmethod
    async def find_facts(self, query: FactQuery) -> list[Fact]:
        """Facts matching the query, newest valid_at first (unknown last), at most limit.
        `object_values` compare by `name_key` (case- and space-insensitive)."""
