"""The small interface each backend implements to persist entities and facts.

Resolution, contradiction rules, ingestion and the fact tools live above it and are written
once. A backend keeps entities and facts beside its memories: `put` writes entities, facts
and the memories that carry the facts' sentences in one transaction.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from DeepResearch.src.memory.backends.base import MemoryRecord
from DeepResearch.src.memory.facts.model import Entity, Fact, FactQuery


def name_key(name: str) -> str:
    """The normalised form entity names and aliases are matched by (exact match step)."""
    return " ".join(name.casefold().split())


class FactStore(ABC):
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
        """Facts matching the query, newest valid_at first (unknown last), at most limit."""
