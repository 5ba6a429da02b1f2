"""What the fact graph and its tools return (pydantic, JSON-ready), and a fact's sentence.

A fact's sentence is the text of the memory that carries it (memory_type "fact", id = the
fact's id): "Alice WORKS_AT Google. role=Software Engineer, since=2022-01".
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from DeepResearch.src.memory.facts.model import Entity, Fact
from DeepResearch.src.memory.facts.store import fact_is_current

# Attributes kept with a fact but left out of its sentence (provenance, not meaning).
UNSPOKEN = frozenset({"rule", "last_seen"})
# Attributes kept for the rules alone (rules.py: a single-valued fact's statements): never shown.
INTERNAL = frozenset({"_stated", "_said_at"})


class EntityOut(BaseModel):
    id: str
    type: str
    name: str
    real_name: str | None = None
    aliases: list[str] = Field(default_factory=list)
    attributes: dict[str, Any] = Field(default_factory=dict)


class FactOut(BaseModel):
    id: str
    subject: str
    subject_id: str
    predicate: str
    object: str
    object_id: str | None  # None: the object is a literal
    confidence: float
    evidence: list[str]  # ids of the messages / memories it came from
    valid_at: str | None  # ISO 8601 UTC; None: unknown
    invalid_at: str | None  # None: still true
    current: bool  # true now (valid, not closed, not retired)
    attributes: dict[str, Any] = Field(default_factory=dict)
    learned_at: str  # when the memory learned it
    # semantic_search_facts only: cosine similarity of the query and the fact's sentence
    similarity: float | None = None


class RelevantFact(BaseModel):
    """find_experts: a fact that makes a person an expert, as the seed names it."""

    type: str  # the predicate
    description: str  # the fact's sentence
    confidence: float


class PersonHit(BaseModel):
    person: EntityOut
    score: float | None = None  # the tool's ranking score, where it ranks
    facts: list[FactOut] = Field(default_factory=list)  # the facts that made it a hit
    confidence: float | None = None  # the best of those facts' confidence
    evidence: list[str] = Field(default_factory=list)  # their evidence, merged
    # tool-specific (None where the tool has no such field):
    proficiency: str | None = None  # find_people_by_skill
    years_experience: float | None = None
    role: str | None = None  # find_people_by_organization
    start_date: str | None = None  # ISO 8601: when the membership began / ended
    end_date: str | None = None
    location: str | None = None
    relationship_type: str | None = None  # find_people_by_topic: the predicate
    sentiment: str | None = None
    relationship: str | None = None  # find_people_by_location: lives_in, works_in
    match: str | None = None  # find_people_by_location: exact, alias, fuzzy
    details: dict[str, Any] = Field(default_factory=dict)
    relevance_score: float | None = None  # find_experts: the score it ranks by
    relevant_facts: list[RelevantFact] = Field(default_factory=list)


class Mention(BaseModel):
    """get_conversation_participants: a person named in a message."""

    name: str  # as written
    person_id: str | None  # None: no known person of that name
    mentioned_in_message: int  # index in the messages given


class PossibleMatch(BaseModel):
    person_id: str
    name: str
    confidence: float
    reason: str


class ImplicitReference(BaseModel):
    """get_conversation_participants: "my brother", "him", "the new hire"."""

    reference: str
    mentioned_in_message: int
    possible_matches: list[PossibleMatch] = Field(default_factory=list)


class SharedLink(BaseModel):
    entity: EntityOut  # an organisation, topic, skill, location or channel both are linked to
    facts: list[FactOut]


class Relationship(BaseModel):
    """get_relationships_between: a direct fact between the two, as the seed names it."""

    type: str  # the predicate: KNOWS, CLOSE_TO, RELATED_TO, ...
    attributes: dict[str, Any] = Field(default_factory=dict)
    confidence: float
    evidence: list[str]
    fact_id: str  # the fact in `facts`
    from_person: str  # the id of the fact's subject (person_a's or person_b's)


class SharedContext(BaseModel):
    """get_relationships_between: something both are linked to, as the seed names it."""

    type: str  # "same_" + the entity's type: same_organization, same_skill, same_topic, ...
    context: str  # its name
    details: dict[str, Any]  # entity_id, and each person's predicates to it (person_a, person_b)


class TimelineEntry(BaseModel):
    """get_person_timeline: one fact as the seed's timeline names it."""

    type: str  # the predicate
    object: str
    start: str | None  # ISO 8601 UTC: valid_at; None: unknown
    end: str | None  # invalid_at; None: still true
    attributes: dict[str, Any] = Field(default_factory=dict)
    confidence: float
    evidence: list[str]
    fact_id: str


def timeline_entry(view: FactOut) -> TimelineEntry:
    return TimelineEntry(type=view.predicate, object=view.object, start=view.valid_at,
                         end=view.invalid_at, attributes=dict(view.attributes),
                         confidence=view.confidence, evidence=list(view.evidence), fact_id=view.id)


class ToolAnswer(BaseModel):
    """Every fact tool's answer: `message` says what was found or why nothing was."""

    tool: str
    message: str
    person: EntityOut | None = None
    other_person: EntityOut | None = None
    facts: list[FactOut] = Field(default_factory=list)
    people: list[PersonHit] = Field(default_factory=list)
    shared: list[SharedLink] = Field(default_factory=list)
    relationships: list[Relationship] = Field(default_factory=list)  # get_relationships_between
    shared_contexts: list[SharedContext] = Field(default_factory=list)
    explicit_mentions: list[Mention] = Field(default_factory=list)  # get_conversation_participants
    implicit_references: list[ImplicitReference] = Field(default_factory=list)
    timeline: list[TimelineEntry] = Field(default_factory=list)  # get_person_timeline
    experts: list[PersonHit] = Field(default_factory=list)  # find_experts (the same as people)


def stamp(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=UTC).isoformat()


def entity_out(entity: Entity) -> EntityOut:
    return EntityOut(id=entity.id, type=entity.type, name=entity.name,
                     real_name=entity.real_name, aliases=list(entity.aliases),
                     attributes=dict(entity.attributes))


def object_name(fact: Fact, names: dict[str, str]) -> str:
    if fact.object_id is None:
        return fact.object_value or ""
    return names.get(fact.object_id, fact.object_id)


def fact_out(fact: Fact, names: dict[str, str], now: float | None = None) -> FactOut:
    """`names`: entity id -> display name of the fact's subject and object."""
    return FactOut(
        id=fact.id, subject=names.get(fact.subject_id, fact.subject_id),
        subject_id=fact.subject_id, predicate=fact.predicate, object=object_name(fact, names),
        object_id=fact.object_id, confidence=round(fact.confidence, 6),
        evidence=list(fact.evidence), valid_at=stamp(fact.valid_at),
        invalid_at=stamp(fact.invalid_at),
        current=fact_is_current(fact, time.time() if now is None else now),
        attributes={k: v for k, v in fact.attributes.items() if k not in INTERNAL},
        learned_at=stamp(fact.created_at) or "",
    )


def describe(view: FactOut) -> str:
    """A fact view as one line: "Alice HAS_SKILL Python. proficiency=expert, years=8"."""
    extra = {k: v for k, v in view.attributes.items() if v is not None and v != "" and k not in UNSPOKEN}
    head = f"{view.subject} {view.predicate} {view.object}."
    return head + (" " + ", ".join(f"{k}={v}" for k, v in extra.items()) if extra else "")


def _month(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m")


def sentence(fact: Fact, names: dict[str, str]) -> str:
    """The fact as one line of text: subject, predicate, object, then its attributes and
    validity ("since=2022-01", "until=2024-03" unless the attributes say otherwise)."""
    extra = {k: v for k, v in fact.attributes.items()
             if v is not None and v != "" and k not in UNSPOKEN and k not in INTERNAL}
    if fact.valid_at is not None:
        extra.setdefault("since", _month(fact.valid_at))
    if fact.invalid_at is not None:
        extra.setdefault("until", _month(fact.invalid_at))
    head = f"{names.get(fact.subject_id, fact.subject_id)} {fact.predicate} {object_name(fact, names)}."
    if not extra:
        return head
    return head + " " + ", ".join(f"{k}={v}" for k, v in extra.items())
