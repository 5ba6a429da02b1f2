"""`GraphCore`, the heart of `FactGraph` (graph.py): entities and time-aware facts over a
MemorySystemClient's backend. The helpers that take a graph (ingest.py, io.py, merge.py) need
only this class; `FactGraph` adds their entry points on top.

    graph = FactGraph(client)
    await graph.add_fact("Alice", "WORKS_AT", "Google", confidence=0.9, evidence="msg-1",
                         valid_at="2022-01", attributes={"role": "Software Engineer"})
    await graph.facts(subject="alice")             # current facts; include_history=True: all

Bound to the client: its namespace, its embedder (for the facts' sentences) and its backend's
FactStore. A batch (`add_facts`, `ingest`) is validated whole before anything is resolved,
then written in one `FactStore.put`: all of it or nothing. Writes are serialised: in one
process by the backend's `graph_lock` (which deletes take too: a delete's cascade edits
facts), across processes by the store's `write_lock(namespace)` (Neo4j, which a Neo4j delete
takes too), both held from before resolution (resolution.py) and the time rules (rules.py)
until the put has committed, so each batch sees every batch committed before it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from DeepResearch.src.memory.backends.base import MemoryRecord
from DeepResearch.src.memory.config import FactsConfig
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.facts.model import (
    FACT_MEMORY_TYPE,
    Entity,
    ExtractedFact,
    Fact,
    FactQuery,
)
from DeepResearch.src.memory.facts.resolution import Hint, Resolution, Resolver
from DeepResearch.src.memory.facts.rules import SAID, apply_rules
from DeepResearch.src.memory.facts.store import FactStore, name_key
from DeepResearch.src.memory.facts.validation import (
    check_attributes,
    check_choice,
    check_confidence,
    check_evidence,
    check_name,
    parse_time,
)
from DeepResearch.src.memory.facts.views import EntityOut, FactOut, entity_out, fact_out, sentence

if TYPE_CHECKING:
    from DeepResearch.src.memory.client import MemorySystemClient

FACT_SESSION = "facts"  # the session id of the memories carrying facts' sentences
KNOWN_LIMIT = 1_000_000  # facts read per chunk of subjects when a batch applies the rules


@dataclass(slots=True)
class FactSpec:
    """One validated fact to add, names not yet resolved."""

    subject: str
    predicate: str
    object: str
    subject_type: str
    object_type: str | None  # None: a literal object
    attributes: dict[str, Any]
    confidence: float
    evidence: tuple[str, ...]
    valid_at: float | None
    invalid_at: float | None
    subject_external_id: str | None = None  # the author id, when the subject is the author
    said_at: float | None = None  # when its message was written (orders same-time statements)

    def to_json(self) -> dict[str, Any]:
        """The spec as `GraphCore.spec` reads it back (a spill file's unwritten fact)."""
        return {**asdict(self), "evidence": list(self.evidence)}


class AmbiguousName(MemoryInputError):
    """A name that could mean several stored entities."""


class GraphCore:
    def __init__(self, client: MemorySystemClient, config: FactsConfig | None = None) -> None:
        self.client = client
        self.config = config or client.config.facts

    @property
    def namespace(self) -> str:
        return self.client.namespace

    async def store(self) -> FactStore:
        await self.client.open()
        if not self.client.available:
            raise MemoryBackendError(f"memory backend unavailable: {self.client.writes.cause()}")
        return self.client.backend.fact_store()

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[FactStore]:
        """The graph's write lock, in this process and across processes (the store's
        `write_lock`); yields the store. Every read-then-put of the graph runs inside it."""
        store = await self.store()
        try:
            async with self.client.backend.graph_lock:  # shared with the store's deletes
                async with store.write_lock(self.namespace):
                    yield store
        finally:  # facts steer retrieve's graph path and write sentence memories
            self.client.hot.changed()

    # -- validation -----------------------------------------------------------------------
    def spec(self, item: Mapping[str, Any] | ExtractedFact, index: int = 0) -> FactSpec:
        """A FactSpec of a dict (add_fact's arguments) or an ExtractedFact; MemoryInputError
        naming the fact and the value otherwise."""
        data = item if isinstance(item, Mapping) else {
            "subject": item.subject, "predicate": item.predicate, "object": item.object,
            "subject_type": item.subject_type, "object_type": item.object_type,
            "attributes": item.attributes, "confidence": item.confidence,
            "evidence": item.evidence, "valid_at": item.valid_at, "invalid_at": item.invalid_at,
        }
        try:
            return self._spec(data)
        except MemoryInputError as exc:
            label = f"{data.get('subject')!r} {data.get('predicate')!r} {data.get('object')!r}"
            raise MemoryInputError(f"fact {index} ({label}): {exc}") from None

    def _spec(self, data: Mapping[str, Any]) -> FactSpec:
        known = {"subject", "predicate", "object", "subject_type", "object_type", "attributes",
                 "confidence", "evidence", "valid_at", "invalid_at", "subject_external_id",
                 "said_at"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise MemoryInputError(f"unknown field(s) {unknown}; fields: {sorted(known)}")
        cfg = self.config
        predicate = check_choice(data.get("predicate"), "predicate", cfg.predicates)
        subject_type = check_choice(data.get("subject_type") or "Person", "subject_type",
                                    cfg.entity_types)
        object_type = data.get("object_type") or cfg.object_types.get(predicate)
        if object_type is not None:
            check_choice(object_type, "object_type", cfg.entity_types)
        if "confidence" not in data:
            raise MemoryInputError("confidence is missing: give a number in [0, 1]")
        if not data.get("evidence"):
            raise MemoryInputError(f"evidence={data.get('evidence')!r}: a fact needs evidence "
                                   "(the id of a message or memory it came from)")
        obj = data.get("object")
        if isinstance(obj, int | float) and not isinstance(obj, bool) and object_type is None:
            obj = str(obj)
        valid_at = parse_time(data.get("valid_at"), "valid_at")
        invalid_at = parse_time(data.get("invalid_at"), "invalid_at")
        if valid_at is not None and invalid_at is not None and invalid_at <= valid_at:
            raise MemoryInputError(f"invalid_at={data.get('invalid_at')!r} is not after "
                                   f"valid_at={data.get('valid_at')!r}")
        return FactSpec(
            subject=check_name(data.get("subject"), "subject"), predicate=predicate,
            object=check_name(obj, "object"), subject_type=subject_type, object_type=object_type,
            attributes=check_attributes(data.get("attributes")),
            confidence=check_confidence(data.get("confidence")),
            evidence=check_evidence(data.get("evidence")), valid_at=valid_at,
            invalid_at=invalid_at, subject_external_id=data.get("subject_external_id"),
            said_at=parse_time(data.get("said_at"), "said_at"),
        )

    # -- writes ---------------------------------------------------------------------------
    async def add_fact(
        self, subject: str, predicate: str, object: str, *, subject_type: str = "Person",
        object_type: str | None = None, attributes: Mapping[str, Any] | None = None,
        confidence: float, evidence: str | Sequence[str], valid_at: Any = None,
        invalid_at: Any = None,
    ) -> FactOut:
        """Add one fact (see rules.py for what a repeat or a contradiction does); returns the
        stored fact it became."""
        item = {"subject": subject, "predicate": predicate, "object": object,
                "subject_type": subject_type, "object_type": object_type,
                "attributes": attributes, "confidence": confidence, "evidence": evidence,
                "valid_at": valid_at, "invalid_at": invalid_at}
        return (await self.add_facts([item]))[0]

    async def add_facts(self, items: Sequence[Mapping[str, Any] | ExtractedFact]) -> list[FactOut]:
        """Add several facts: all validated first, written in one put (all or nothing)."""
        if isinstance(items, Mapping | str):
            raise MemoryInputError("add_facts takes a list of facts (dicts or ExtractedFacts)")
        specs = [self.spec(item, i) for i, item in enumerate(items)]
        return await self.write(specs)

    async def write(
        self, specs: Sequence[FactSpec], memories: Sequence[MemoryRecord] = (),
        problems: list[str] | None = None,
    ) -> list[FactOut]:
        """Resolve, apply the rules and put `specs` (and `memories`, e.g. episodes) at once.

        A name that could mean several entities fails the batch (the caller names it better),
        unless `problems` is given: then that fact is left out and described there (ingest:
        a chat cannot be reworded, and its messages and other facts are still worth keeping)."""
        async with self.writing() as store:
            await self.client.writes.drain_pending()
            resolver = Resolver(store, self.namespace, self.config)
            now = time.time()
            # A few reads for the whole batch (names, then the subjects' known facts), not a
            # few per fact: each read is a hop to the backend's worker thread.
            await resolver.prefetch([(s.subject, s.subject_type) for s in specs] + [
                (s.object, s.object_type) for s in specs if s.object_type is not None])
            facts = []
            for spec in specs:
                try:
                    facts.append(await self._new_fact(resolver, spec, now))
                except AmbiguousName as exc:
                    if problems is None:
                        raise
                    problems.append(f"{spec.subject} {spec.predicate} {spec.object}: {exc}; "
                                    "fact left out")
            known = await self._known(store, facts)
            changed: dict[str, Fact] = {}
            results: list[Fact] = []
            for fact in facts:
                pair = known.setdefault((fact.subject_id, fact.predicate), [])
                outcome = apply_rules(fact, [changed.get(f.id, f) for f in pair],
                                      fact.predicate in self.config.single_valued, now)
                changed.update((f.id, f) for f in outcome.changed)
                pair.extend(outcome.added)
                results.append(outcome.fact)
            names = await self._names(store, changed.values(), resolver.pending)
            records = await self.fact_records(list(changed.values()), names)
            await store.put(entities=list(resolver.pending.values()),
                            facts=list(changed.values()), memories=[*memories, *records])
            self.client.filler.wrote(r.id for r in [*memories, *records] if r.vector is None)
            return [fact_out(f, names, now) for f in results]

    async def add_entity(
        self, name: str, type: str = "Person", *, real_name: str | None = None,
        aliases: Sequence[str] = (), attributes: Mapping[str, Any] | None = None,
    ) -> EntityOut:
        """Add an entity, or add these names (and attributes) to the one `name` resolves to."""
        name = check_name(name, "name")
        check_choice(type, "type", self.config.entity_types)
        extra = [check_name(n, "alias") for n in ([real_name] if real_name else []) + list(aliases)]
        attrs = check_attributes(attributes)
        async with self.writing() as store:
            resolver = Resolver(store, self.namespace, self.config)
            entity = await self._resolve(resolver, name, type, Hint(), time.time())
            if real_name and not entity.real_name:
                entity.real_name = extra[0]
            for other in extra:
                resolver.learn_name(entity, other)
            entity.attributes.update(attrs)
            resolver.keep(entity)
            await store.put(entities=[entity])
            return entity_out(entity)

    async def _new_fact(self, resolver: Resolver, spec: FactSpec, now: float) -> Fact:
        obj = None
        if spec.object_type is not None:
            obj = await self._resolve(resolver, spec.object, spec.object_type, Hint(), now)
        hint = Hint(external_id=spec.subject_external_id)
        if spec.predicate in self.config.single_valued:
            hint = Hint(spec.subject_external_id, spec.predicate, name_key(spec.object))
        subject = await self._resolve(resolver, spec.subject, spec.subject_type, hint, now)
        attributes = dict(spec.attributes)
        if spec.said_at is not None:  # for the rules alone (apply_rules takes it out)
            attributes[SAID] = spec.said_at
        return Fact(
            id=f"fact-{uuid4().hex}", namespace=self.namespace, subject_id=subject.id,
            predicate=spec.predicate, object_id=obj.id if obj else None,
            object_value=None if obj else spec.object, confidence=spec.confidence,
            evidence=spec.evidence, created_at=now, valid_at=spec.valid_at,
            invalid_at=spec.invalid_at, attributes=attributes,
        )

    async def _resolve(
        self, resolver: Resolver, name: str, type_: str, hint: Hint, now: float
    ) -> Entity:
        by_id = await resolver.by_id(name, [type_])
        if by_id is not None:
            return resolver.pending.get(by_id.id, by_id)
        found = await resolver.find(name, type_, hint)
        if found.ambiguous:
            raise AmbiguousName(ambiguity(name, type_, found))
        entity = found.entity or resolver.new_entity(name, type_, now)
        resolver.learn_name(entity, name)
        resolver.learn_external_id(entity, hint.external_id)
        return entity

    async def _known(
        self, store: FactStore, facts: Sequence[Fact]
    ) -> dict[tuple[str, str], list[Fact]]:
        """The stored facts (history too) of the facts' subjects and predicates, by pair."""
        out: dict[tuple[str, str], list[Fact]] = {}
        subjects = sorted({f.subject_id for f in facts})
        predicates = tuple(sorted({f.predicate for f in facts}))
        for start in range(0, len(subjects), 400):
            for fact in await store.find_facts(FactQuery(
                    self.namespace, subject_ids=tuple(subjects[start : start + 400]),
                    predicates=predicates, include_history=True, limit=KNOWN_LIMIT)):
                out.setdefault((fact.subject_id, fact.predicate), []).append(fact)
        return out

    async def _names(
        self, store: FactStore, facts: Iterable[Fact], pending: Mapping[str, Entity]
    ) -> dict[str, str]:
        ids = {i for f in facts for i in (f.subject_id, f.object_id) if i is not None}
        names = {i: pending[i].name for i in ids if i in pending}
        stored = await store.get_entities(self.namespace, sorted(ids - set(names)))
        return {**names, **{e.id: e.name for e in stored}}

    async def fact_records(self, facts: list[Fact], names: dict[str, str]) -> list[MemoryRecord]:
        """The memories carrying `facts`' sentences; a sentence already stored keeps its
        vector, the others are embedded (in one batch, in a worker thread) or, where the
        store fills vectors behind, left to the filler."""
        texts = [sentence(f, names) for f in facts]
        stored = {r.id: r for r in await self.client.backend.get([f.id for f in facts],
                                                                self.namespace)}
        todo = [t for f, t in zip(facts, texts, strict=True)
                if f.id not in stored or stored[f.id].content != t]
        vectors = {}  # left to the filler (vector_fill.py) when it takes them
        if todo and not self.client.filler.defers(len(todo)):
            vectors = dict(zip(todo, await asyncio.to_thread(self.client.embedder.embed, todo),
                               strict=True))
        return [
            MemoryRecord(
                id=f.id, session_id=FACT_SESSION, memory_type=FACT_MEMORY_TYPE, content=text,
                created_at=f.created_at, importance=f.confidence, namespace=self.namespace,
                metadata={"subject_id": f.subject_id, "predicate": f.predicate,
                          "object_id": f.object_id, "subject": names.get(f.subject_id, ""),
                          "object": names.get(f.object_id or "", f.object_value)},
                vector=vectors.get(text) if text in todo else stored[f.id].vector,
            )
            for f, text in zip(facts, texts, strict=True)
        ]

    # -- reads ----------------------------------------------------------------------------
    async def _by_id(self, store: FactStore, ref: str, types: Sequence[str] | None) -> Entity | None:
        found = await store.get_entities(self.namespace, [ref])
        return found[0] if found and (types is None or found[0].type in types) else None

    async def lookup(self, ref: str, types: Sequence[str] | None = None) -> Resolution:
        """The entity `ref` names (an id, a name, a real name or an alias), among `types`
        (None: every type, people first)."""
        store = await self.store()
        ref = check_name(ref, "name")
        by_id = await self._by_id(store, ref, types)
        if by_id is not None:
            return Resolution(by_id)
        resolver = Resolver(store, self.namespace, self.config)
        for type_ in types or ["Person", *(t for t in self.config.entity_types if t != "Person")]:
            found = await resolver.find(ref, type_)
            if found.entity is not None or found.ambiguous:
                return found
        return Resolution(None)

    async def entity(self, ref: str) -> EntityOut | None:
        found = await self.lookup(ref)
        return entity_out(found.entity) if found.entity else None

    async def facts(
        self, subject: str | None = None, predicate: str | None = None,
        object: str | None = None, *, as_of: Any = None, include_history: bool = False,
        min_confidence: float = 0.0, limit: int | None = None,
    ) -> list[FactOut]:
        """Facts by subject / predicate / object (names, aliases or ids): current ones by
        default, those true at `as_of`, or all of them with include_history."""
        store = await self.store()
        query: dict[str, Any] = {}
        if subject is not None:
            found = await self.lookup(subject)
            if found.entity is None:
                return []
            query["subject_ids"] = (found.entity.id,)
        if predicate is not None:
            query["predicates"] = (check_choice(predicate, "predicate", self.config.predicates),)
        if object is not None:
            found = await self.lookup(object)
            if found.entity is not None:
                query["object_ids"] = (found.entity.id,)
            else:
                query["object_values"] = (object,)
        facts = await store.find_facts(FactQuery(
            self.namespace, as_of=parse_time(as_of, "as_of"), include_history=include_history,
            min_confidence=check_confidence(min_confidence), limit=self.clean_limit(limit),
            **query))
        return await self.views(facts)

    async def views(self, facts: Sequence[Fact]) -> list[FactOut]:
        names = await self._names(await self.store(), facts, {})
        return [fact_out(f, names) for f in facts]

    def clean_limit(self, limit: Any) -> int:
        if limit is None:
            return self.config.default_limit
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise MemoryInputError(f"limit={limit!r}: give a whole number >= 1")
        return min(limit, self.config.max_limit)

def ambiguity(name: str, type_: str, found: Resolution) -> str:
    ordered = sorted(found.candidates, key=lambda e: (e.real_name or e.name, e.id))
    options = ", ".join(f"{e.real_name or e.name} (id {e.id})" for e in ordered[:5])
    return (f"{type_} {name!r} is ambiguous: it may be {options}; give the full name, an "
            "alias or the id")
