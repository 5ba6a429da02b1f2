"""Entity resolution: which stored entity a name means.

In order, within one entity type:
1. exact: the `name_key` of the name equals a key of an entity (its name, real name or an
   alias): "Alice", "alice" and a known alias are one entity;
2. people only, a full name and a first name: "Alice Johnson" meets an "Alice" who has no
   other full name, or "Alice" meets the one person whose full name starts with Alice;
3. fuzzy: rapidfuzz's ratio of the keys at or above `fuzzy_threshold` (90 by default), never
   for names shorter than `fuzzy_min_length` ("Al" matches nothing fuzzily), never between
   names whose numbers differ ("channel-80" is not "channel-89", "Python 2" not "Python 3"),
   never for the `exact_types` (Channel: its names are ids).
A candidate is refused when its other facts disagree with what is known of the mention: a
different author id (messages), or a current single-valued fact with another object
("Alice Smith works at Microsoft" does not join the Alice who works at Google). Two or more
candidates left: ambiguous (the caller asks for the full name or the id).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from uuid import uuid4

from rapidfuzz import fuzz, process

from DeepResearch.src.memory.config import FactsConfig
from DeepResearch.src.memory.facts.model import Entity, FactQuery
from DeepResearch.src.memory.facts.store import FactStore, entity_name_keys, name_key

_NUMBER = re.compile(r"\d+")
EXTERNAL_IDS = "external_ids"  # Entity.attributes key: ids of the person elsewhere (authors)


@dataclass(frozen=True, slots=True)
class Hint:
    """What the mention says besides its name, to tell same-named entities apart."""

    external_id: str | None = None
    predicate: str | None = None  # a single-valued predicate the mention is the subject of
    object_key: str | None = None  # ... and the name key of its object


@dataclass(slots=True)
class Resolution:
    entity: Entity | None  # the one match (None: no match, or ambiguous)
    candidates: list[Entity] = field(default_factory=list)  # > 1 when ambiguous

    @property
    def ambiguous(self) -> bool:
        return self.entity is None and len(self.candidates) > 1


@dataclass(slots=True)
class _Pool:
    """One type's stored name keys: the fuzzy candidates (long enough) and, per first
    name, the entities with a full name starting with it."""

    ids: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    full_names: dict[str, set[str]] = field(default_factory=dict)


class Resolver:
    """Resolution against a store, plus the entities a batch has made but not yet written."""

    def __init__(self, store: FactStore, namespace: str, config: FactsConfig) -> None:
        self.store = store
        self.namespace = namespace
        self.config = config
        self.pending: dict[str, Entity] = {}  # made or changed by the current batch
        self._by_key: dict[tuple[str, str], list[Entity]] = {}  # (type, key): prefetched
        self._by_ref: dict[str, Entity | None] = {}  # a name read as an id: prefetched
        self._pools: dict[str, _Pool] = {}
        self._pending_keys: dict[tuple[str, str], set[str]] = {}  # (type, key) -> pending ids

    def keep(self, entity: Entity) -> None:
        """Mark `entity` as made or changed by this batch (written by its put)."""
        self.pending[entity.id] = entity
        for key in entity_name_keys(entity):
            self._pending_keys.setdefault((entity.type, key), set()).add(entity.id)

    async def prefetch(self, mentions: Sequence[tuple[str, str]]) -> None:
        """Read the stored entities a batch's (name, type) mentions may mean, by name key
        and as ids, in one query per type."""
        keys: dict[str, set[str]] = {}
        for name, type_ in mentions:
            keys.setdefault(type_, set()).add(name_key(name))
        for type_, wanted in keys.items():
            for key in wanted:
                self._by_key[(type_, key)] = []
            for entity in await self.store.entities_by_key(self.namespace, sorted(wanted), [type_]):
                for key in set(entity_name_keys(entity)) & wanted:
                    self._by_key[(type_, key)].append(entity)
        refs = sorted({name for name, _ in mentions})
        self._by_ref.update(dict.fromkeys(refs))
        self._by_ref.update((e.id, e) for e in await self.store.get_entities(self.namespace, refs))

    async def by_id(self, ref: str, types: Sequence[str] | None) -> Entity | None:
        """The entity whose id is `ref` (among `types`), or None."""
        if ref in self._by_ref:
            found = self._by_ref[ref]
        else:
            stored = await self.store.get_entities(self.namespace, [ref])
            found = stored[0] if stored else None
        return found if found is not None and (types is None or found.type in types) else None

    async def find(self, name: str, type_: str, hint: Hint = Hint()) -> Resolution:
        key = name_key(name)
        found = await self._exact(key, type_)
        # An exact name is the entity unless an author id says otherwise ("Alice" moving from
        # Google to Microsoft is a job change); a near name must also agree with its facts.
        strict = not found
        if not found and type_ == "Person":
            found = await self._first_name(key)
        if not found and len(key) >= self.config.fuzzy_min_length \
                and type_ not in self.config.exact_types:
            found = await self._fuzzy(key, type_)
        kept = [e for e in found if not self._other_author(e, hint)]
        if strict or len(kept) > 1:
            agreeing = [e for e in kept if not await self._disagrees(e, hint)]
            kept = agreeing if strict or agreeing else kept
        if len(kept) > 1 and hint.external_id:  # the one this author is, when known
            known = [e for e in kept if hint.external_id in e.attributes.get(EXTERNAL_IDS, [])]
            kept = known or kept
        if len(kept) > 1:  # the one the name names exactly, not by alias
            exact = [e for e in kept if key in {name_key(e.name), name_key(e.real_name or "")}]
            kept = exact if len(exact) == 1 else kept
        if len(kept) == 1:
            return Resolution(kept[0])
        return Resolution(None, kept)

    @staticmethod
    def _other_author(entity: Entity, hint: Hint) -> bool:
        known = entity.attributes.get(EXTERNAL_IDS, [])
        return bool(hint.external_id and known and hint.external_id not in known)

    async def _entities(self, keys: Sequence[str], type_: str) -> list[Entity]:
        if all((type_, k) in self._by_key for k in keys):
            stored = [e for k in keys for e in self._by_key[(type_, k)]]
        else:
            stored = await self.store.entities_by_key(self.namespace, list(keys), [type_])
        out = {e.id: self.pending.get(e.id, e) for e in stored}
        for key in keys:
            for entity_id in self._pending_keys.get((type_, key), ()):
                out[entity_id] = self.pending[entity_id]
        # an entity whose pending version no longer has the key
        return [e for e in out.values() if set(entity_name_keys(e)) & set(keys)]

    async def _exact(self, key: str, type_: str) -> list[Entity]:
        return await self._entities([key], type_)

    async def _first_name(self, key: str) -> list[Entity]:
        tokens = key.split()
        if len(tokens) > 1:  # "alice johnson" -> an "alice" without another full name
            return [e for e in await self._entities([tokens[0]], "Person")
                    if not e.real_name or name_key(e.real_name) == key]
        pool = await self._stored_pool("Person")
        ids = {i for i in pool.full_names.get(key, ()) if i not in self.pending}
        ids |= {e.id for e in self._pending_of("Person")
                for k in entity_name_keys(e) if " " in k and k.split()[0] == key}
        return await self._by_ids(ids)

    async def _fuzzy(self, key: str, type_: str) -> list[Entity]:
        pool = await self._stored_pool(type_)
        numbers = _NUMBER.findall(key)
        # limit=None: every near key, so ten near misses by number cannot hide the real one
        ids = {pool.ids[idx] for near, _, idx in process.extract(
            key, pool.keys, scorer=fuzz.ratio, score_cutoff=self.config.fuzzy_threshold,
            limit=None) if _NUMBER.findall(near) == numbers}
        ids = {i for i in ids if i not in self.pending}
        ids |= {e.id for e in self._pending_of(type_) for k in entity_name_keys(e)
                if len(k) >= self.config.fuzzy_min_length and _NUMBER.findall(k) == numbers
                and fuzz.ratio(key, k) >= self.config.fuzzy_threshold}
        return await self._by_ids(ids)

    def _pending_of(self, type_: str) -> list[Entity]:
        return [e for e in self.pending.values() if e.type == type_]

    async def _stored_pool(self, type_: str) -> _Pool:
        """The stored name keys of a type, read once per resolver (a batch): the pending
        entities are checked beside it."""
        pool = self._pools.get(type_)
        if pool is None:
            pool = _Pool()
            for entity_id, key in await self.store.entity_keys(self.namespace, [type_]):
                if len(key) >= self.config.fuzzy_min_length:
                    pool.ids.append(entity_id)
                    pool.keys.append(key)
                if " " in key:
                    pool.full_names.setdefault(key.split()[0], set()).add(entity_id)
            self._pools[type_] = pool
        return pool

    async def _by_ids(self, ids: set[str]) -> list[Entity]:
        stored = await self.store.get_entities(
            self.namespace, sorted(i for i in ids if i not in self.pending))
        return stored + [self.pending[i] for i in sorted(ids) if i in self.pending]

    async def _disagrees(self, entity: Entity, hint: Hint) -> bool:
        """A current fact of the hint's single-valued predicate with another object."""
        if hint.predicate is None or hint.object_key is None:
            return False
        current = await self.store.find_facts(FactQuery(
            self.namespace, subject_ids=(entity.id,), predicates=(hint.predicate,), limit=20))
        objects = [f.object_id for f in current if f.object_id]
        named = {k for e in await self.store.get_entities(self.namespace, objects)
                 for k in entity_name_keys(e)}
        named |= {name_key(f.object_value) for f in current if f.object_value}
        return bool(current) and hint.object_key not in named

    def new_entity(self, name: str, type_: str, created_at: float) -> Entity:
        entity = Entity(id=f"{type_.lower()}-{uuid4().hex[:16]}", namespace=self.namespace,
                        type=type_, name=name, created_at=created_at)
        self.keep(entity)
        return entity

    def learn_name(self, entity: Entity, name: str) -> bool:
        """Add `name` to the entity's names (a person's first full name becomes its real
        name, anything else an alias); True when the entity changed."""
        key = name_key(name)
        if key in entity_name_keys(entity):
            return False
        if entity.type == "Person" and not entity.real_name and " " in key \
                and key.split()[0] == name_key(entity.name):
            entity.real_name = name
        else:
            entity.aliases = (*entity.aliases, name)
        self.keep(entity)
        return True

    def learn_external_id(self, entity: Entity, external_id: str | None) -> bool:
        known = list(entity.attributes.get(EXTERNAL_IDS, []))
        if not external_id or external_id in known:
            return False
        entity.attributes[EXTERNAL_IDS] = [*known, external_id]
        self.keep(entity)
        return True
