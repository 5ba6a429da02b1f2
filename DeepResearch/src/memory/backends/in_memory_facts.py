"""The in_memory backend's FactStore: entities and facts in dicts beside its records.

`put` checks everything (the memories through the backend's own checks) before it changes
anything, so a refused batch leaves no trace."""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from typing import Protocol

from DeepResearch.src.memory.backends.base import MemoryRecord
from DeepResearch.src.memory.facts.forgetting import Forgotten, matches, plan_sync
from DeepResearch.src.memory.facts.model import Entity, Fact, FactQuery
from DeepResearch.src.memory.facts.store import (
    FactStore,
    entity_name_keys,
    fact_matches,
    fact_order,
    refuse_foreign_ids,
)


class Host(Protocol):
    """What the fact store needs of the in_memory backend that owns it (in_memory.py)."""

    def check_open(self) -> None: ...

    async def upsert(self, records: Sequence[MemoryRecord]) -> None: ...


class InMemoryFactStore(FactStore):
    def __init__(self, backend: Host) -> None:
        self.backend = backend
        self._entities: dict[str, Entity] = {}
        self._facts: dict[str, Fact] = {}
        self._keys: dict[tuple[str, str], set[str]] = {}  # (namespace, name key) -> entity ids

    async def put(
        self,
        entities: Sequence[Entity] = (),
        facts: Sequence[Fact] = (),
        memories: Sequence[MemoryRecord] = (),
        delete_entity_ids: Sequence[str] = (),
    ) -> None:
        self.backend.check_open()
        refuse_foreign_ids(entities, {i: e.namespace for i, e in self._entities.items()})
        refuse_foreign_ids(facts, {i: f.namespace for i, f in self._facts.items()})
        # The only step that can refuse (vector shape, another namespace's id) goes first and
        # writes nothing when it refuses; the dict updates below cannot fail.
        if memories:
            await self.backend.upsert(memories)
        for entity_id in delete_entity_ids:
            self._unkey(entity_id)
            self._entities.pop(entity_id, None)
        for entity in entities:
            self._unkey(entity.id)
            stored = copy.deepcopy(entity)
            self._entities[entity.id] = stored
            for key in entity_name_keys(stored):
                self._keys.setdefault((stored.namespace, key), set()).add(stored.id)
        for fact in facts:
            self._facts[fact.id] = copy.deepcopy(fact)

    def forget(self, forgotten: Sequence[Forgotten]) -> list[tuple[str, str]]:
        """The fact side of the backend's delete of `forgotten`: facts deleted or their
        evidence cut (facts/forgetting.py); returns the sentence memories to delete too."""
        plan = plan_sync(forgotten, lambda lookup: [
            copy.deepcopy(f) for f in self._facts.values() if matches(f, lookup)])
        for _, fact_id in plan.delete_facts:
            self._facts.pop(fact_id, None)
        for fact in plan.update_facts:
            self._facts[fact.id] = fact
        return plan.delete_memories

    def _unkey(self, entity_id: str) -> None:
        old = self._entities.get(entity_id)
        if old is not None:
            for key in entity_name_keys(old):
                self._keys.get((old.namespace, key), set()).discard(entity_id)

    async def entities_by_key(
        self, namespace: str, keys: Sequence[str], types: Sequence[str] | None = None
    ) -> list[Entity]:
        ids: dict[str, None] = {}
        for key in keys:
            ids.update(dict.fromkeys(sorted(self._keys.get((namespace, key), ()))))
        found = [self._entities[i] for i in ids]
        return [copy.deepcopy(e) for e in found if types is None or e.type in types]

    async def get_entities(self, namespace: str, ids: Sequence[str]) -> list[Entity]:
        return [copy.deepcopy(self._entities[i]) for i in ids
                if i in self._entities and self._entities[i].namespace == namespace]

    async def entity_keys(
        self, namespace: str, types: Sequence[str] | None = None
    ) -> list[tuple[str, str]]:
        return [(e.id, key) for e in self._entities.values()
                if e.namespace == namespace and (types is None or e.type in types)
                for key in entity_name_keys(e)]

    async def find_facts(self, query: FactQuery) -> list[Fact]:
        now = time.time()
        found = sorted((f for f in self._facts.values() if fact_matches(f, query, now)),
                       key=fact_order)
        return [copy.deepcopy(f) for f in found[: query.limit]]
