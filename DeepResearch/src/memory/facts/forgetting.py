"""What forgetting memories does to the facts built on them, decided once for every backend.

A backend's `delete` hands the memories it is about to delete to a `Cascade`, answers its
look-ups from its own fact tables and applies the `Plan` in the SAME transaction as the
memory delete (all or nothing). The rules:

- a fact whose sentence memory (memory id = fact id) is deleted is deleted;
- every deleted memory's id leaves the evidence of the facts of its namespace; so does an
  episode's `metadata["message_id"]` (ingest stores a message as the episode whose id IS its
  message id, and facts' evidence names that id: the two are one; the metadata is read too
  so an episode stored under another id still takes its message with it);
- a fact left with no evidence is deleted, with its sentence memory; that memory's id is in
  turn removed from the evidence of other facts (repeated until nothing changes);
- a fact keeping other evidence stays, with the remaining evidence (and the statements the
  rules keep of it, rules.py, without the removed ids). Its confidence is kept:
  a repeat raised it by noisy-or (rules.py) from the new evidence's confidence, which is not
  stored, so the share of the removed evidence cannot be taken back out.

Current and historical (closed, retired) facts alike: forgetting is about the data, not the
time. Entities stay (a name with no facts left says nothing the memory was told), as do
evidence ids that were never memories (a document's source, `api:<request id>`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from DeepResearch.src.memory.backends.record import live_namespace
from DeepResearch.src.memory.facts.model import EPISODE_MEMORY_TYPE, Fact
from DeepResearch.src.memory.facts.rules import keep_statements


@dataclass(frozen=True, slots=True)
class Forgotten:
    """A memory being deleted, as the cascade needs it."""

    id: str
    namespace: str
    memory_type: str = ""
    message_id: str | None = None  # metadata["message_id"], when a string

    @classmethod
    def of(cls, id: str, namespace: str, memory_type: str | None, message_id: Any) -> Forgotten:
        """From a stored memory's fields; `message_id` as read from its metadata (any value:
        only a non-empty string counts). An archived memory (backends/record.py) is one of
        its live namespace: the facts citing it are there."""
        return cls(id, live_namespace(namespace), memory_type or "",
                   message_id if isinstance(message_id, str) and message_id else None)


@dataclass(frozen=True, slots=True)
class Lookup:
    """Facts of `namespace` to read, history included: those whose id is one of `ids` and
    those whose evidence holds one of `evidence`."""

    namespace: str
    ids: tuple[str, ...]
    evidence: tuple[str, ...]


@dataclass(slots=True)
class Plan:
    """What to write beside the memory delete."""

    delete_facts: list[tuple[str, str]] = field(default_factory=list)  # (namespace, fact id)
    update_facts: list[Fact] = field(default_factory=list)  # facts with their evidence cut
    # sentence memories of deleted facts that the delete itself did not select
    delete_memories: list[tuple[str, str]] = field(default_factory=list)  # (namespace, id)


class Cascade:
    """The plan, computed without I/O: `lookups()` says what to read, `found()` takes the
    facts read, until `lookups()` is empty; then `plan()`."""

    def __init__(self, forgotten: Iterable[Forgotten]) -> None:
        # every (namespace, memory id) deleted (asked + cascaded)
        self._gone_memories: set[tuple[str, str]] = set()
        self._gone_evidence: dict[str, set[str]] = {}  # namespace -> evidence ids gone
        self._selected: set[tuple[str, str]] = set()  # what the delete itself selected
        self._facts: dict[str, Fact] = {}  # every fact read, as the cascade changed it
        self._deleted: set[str] = set()
        self._changed: set[str] = set()
        self._todo: dict[str, tuple[set[str], set[str]]] = {}
        for memory in forgotten:
            self._selected.add((memory.namespace, memory.id))
            evidence = {memory.id}
            if memory.memory_type == EPISODE_MEMORY_TYPE and memory.message_id:
                evidence.add(memory.message_id)
            self._forget(memory.namespace, memory.id, evidence)

    def _forget(self, namespace: str, memory_id: str, evidence: set[str]) -> None:
        self._gone_memories.add((namespace, memory_id))
        new = evidence - self._gone_evidence.setdefault(namespace, set())
        self._gone_evidence[namespace] |= new
        ids, more = self._todo.setdefault(namespace, (set(), set()))
        ids.add(memory_id)
        more |= new

    def lookups(self) -> list[Lookup]:
        """The reads still needed (each taken once: call `found` with their facts next)."""
        todo, self._todo = self._todo, {}
        return [Lookup(ns, tuple(sorted(ids)), tuple(sorted(evidence)))
                for ns, (ids, evidence) in sorted(todo.items()) if ids or evidence]

    def found(self, facts: Iterable[Fact]) -> None:
        """Facts answering the last lookups (extra or repeated ones do no harm)."""
        for read in facts:
            fact = self._facts.get(read.id)  # this cascade's version wins
            if fact is None:
                fact = self._facts[read.id] = replace(read)  # never changes what it read
            if fact.id in self._deleted:
                continue
            gone = self._gone_evidence.get(fact.namespace, set())
            kept = tuple(e for e in fact.evidence if e not in gone)
            if (fact.namespace, fact.id) in self._gone_memories or not kept:
                self._deleted.add(fact.id)
                self._changed.discard(fact.id)
                self._forget(fact.namespace, fact.id, {fact.id})
            elif kept != fact.evidence:
                fact.evidence = kept
                fact.attributes = keep_statements(fact.attributes, set(kept))
                self._changed.add(fact.id)

    def plan(self) -> Plan:
        deleted = sorted(self._deleted)
        return Plan(
            delete_facts=[(self._facts[i].namespace, i) for i in deleted],
            update_facts=[self._facts[i] for i in sorted(self._changed)],
            delete_memories=[(self._facts[i].namespace, i) for i in deleted
                             if (self._facts[i].namespace, i) not in self._selected],
        )


def plan_sync(
    forgotten: Iterable[Forgotten], read: Callable[[Lookup], Iterable[Fact]]
) -> Plan:
    """The plan, reading facts with `read` (a backend's look-up inside its transaction)."""
    cascade = Cascade(forgotten)
    while lookups := cascade.lookups():
        for lookup in lookups:
            cascade.found(read(lookup))
    return cascade.plan()


async def plan_async(
    forgotten: Iterable[Forgotten], read: Callable[[Lookup], Awaitable[Iterable[Fact]]]
) -> Plan:
    """`plan_sync` for a backend whose reads are coroutines."""
    cascade = Cascade(forgotten)
    while lookups := cascade.lookups():
        for lookup in lookups:
            cascade.found(await read(lookup))
    return cascade.plan()


def matches(fact: Fact, lookup: Lookup) -> bool:
    """`lookup` evaluated in Python (for stores keeping facts in dicts)."""
    return fact.namespace == lookup.namespace and (
        fact.id in lookup.ids or not set(fact.evidence).isdisjoint(lookup.evidence))
