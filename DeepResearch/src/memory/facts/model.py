"""Entities and facts as the knowledge-graph tier stores them.

Times are UNIX epoch seconds (float, UTC), like MemoryRecord. A fact has two times:
when it was true in the world (`valid_at`, `invalid_at`) and when the memory learned or
retired it (`created_at`, `expired_at`). Facts are never deleted when the world changes:
a contradicting newer fact closes the older one's validity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Built-in entity types; a user may configure more (memory.facts.entity_types).
ENTITY_TYPES: tuple[str, ...] = ("Person", "Organization", "Topic", "Skill", "Location", "Channel")

# Built-in predicates; a user may configure more (memory.facts.predicates).
# PARTICIPATED_IN (Person -> Channel) is written by ingest for each message's author.
PREDICATES: tuple[str, ...] = (
    "WORKS_AT", "WORKED_AT", "HAS_SKILL", "INTERESTED_IN", "LIVES_IN", "STUDIED_AT",
    "KNOWS", "CLOSE_TO", "MEMBER_OF", "MENTIONED", "PARTICIPATED_IN",
)

# A subject holds one current object of these at a time: a newer fact closes the older one.
SINGLE_VALUED: tuple[str, ...] = ("WORKS_AT", "LIVES_IN")

# The memory_type of the memory that carries a fact's sentence (embedded, lexically indexed);
# its id is the fact's id. Episodes are the raw ingested messages.
FACT_MEMORY_TYPE = "fact"
EPISODE_MEMORY_TYPE = "episode"


@dataclass(slots=True)
class Entity:
    id: str
    namespace: str
    type: str  # one of ENTITY_TYPES or a configured type
    name: str  # the display name ("Alice")
    created_at: float
    real_name: str | None = None  # people: the full name ("Alice Johnson")
    aliases: tuple[str, ...] = ()
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Fact:
    id: str  # also the id of the memory that carries its sentence
    namespace: str
    subject_id: str  # an Entity id
    predicate: str
    object_id: str | None  # an Entity id, or None when the object is a literal
    object_value: str | None  # the literal, or None when the object is an entity
    confidence: float  # in [0, 1]
    evidence: tuple[str, ...]  # ids of the messages / memories / documents it came from (>= 1)
    created_at: float  # when the memory learned it
    valid_at: float | None = None  # when it became true in the world (None: unknown)
    invalid_at: float | None = None  # when it stopped being true (None: still true)
    expired_at: float | None = None  # when the memory retired it (None: not retired)
    attributes: dict[str, Any] = field(default_factory=dict)  # role, proficiency, years, ...


@dataclass(frozen=True, slots=True)
class FactQuery:
    """A conjunction of conditions over one namespace's facts; None = no condition.

    Time: by default only facts current at `as_of` (valid_at <= as_of < invalid_at, unknown
    bounds count as open, and not expired at as_of). `include_history=True` drops the time
    condition and returns closed and retired facts too.
    """

    namespace: str
    subject_ids: tuple[str, ...] | None = None
    predicates: tuple[str, ...] | None = None
    object_ids: tuple[str, ...] | None = None
    object_values: tuple[str, ...] | None = None  # compared case-insensitively
    ids: tuple[str, ...] | None = None
    as_of: float | None = None  # None: now
    include_history: bool = False
    min_confidence: float = 0.0
    limit: int = 1000


# --- what extraction produces (ingest turns these into Entities and Facts) ---------------

@dataclass(frozen=True, slots=True)
class Message:
    """One conversation message given to ingest; `timestamp` in epoch seconds (UTC)."""

    message_id: str
    author_id: str
    author_name: str
    content: str
    timestamp: float
    channel_id: str | None = None


@dataclass(frozen=True, slots=True)
class ExtractedFact:
    """A fact found in a message, before entity resolution.

    `subject` and `object` are names as written, except that first-person references are
    already replaced by the message author's name ("I work at Google" -> subject = author).
    `object_type` None means the object is a literal (e.g. a number of years).
    """

    subject: str
    predicate: str
    object: str
    evidence: str  # the message_id it came from
    confidence: float
    subject_type: str = "Person"
    object_type: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    valid_at: float | None = None
    invalid_at: float | None = None


@dataclass(slots=True)
class ExtractionResult:
    facts: list[ExtractedFact] = field(default_factory=list)
    # One line per message or model output that could not be used, naming it; never dropped
    # silently (ingest reports them to its caller).
    problems: list[str] = field(default_factory=list)
