"""What a new fact does to the facts already known about its subject and predicate.

- Already known (a fact with the same object already has all of the new one's evidence: the
  same message or memory sent again): nothing changes, not even the confidence.
- Repeated, on a multi-valued predicate (same subject, predicate and object, and its time
  falls in the known fact's validity, or extends an open one back in time): no new fact; the
  known one gains the new evidence, its confidence rises by noisy-or (1 - (1 - a)(1 - b)),
  new attribute values win (except `last_seen`, the latest of the two).
- Single-valued predicates (WORKS_AT, LIVES_IN; `facts.single_valued`) keep a timeline: every
  statement (its evidence, its time, its confidence, an explicit end) is kept with the fact
  it belongs to (attribute `_stated`, never shown), and each new statement rebuilds the
  subject's timeline around its time (`_window`) from them, ordered by their times, then
  their messages' times (a statement without a time counts from when the memory learned
  it): consecutive statements of one object are one fact
  (valid from the first; confidence the noisy-or of theirs), closed when a statement of
  another object starts. So the result does not depend on the order statements arrive in,
  and at most one fact is current. Closed facts are kept; history queries show them.
Nothing is deleted (a stored fact a rebuild no longer needs is retired: `expired_at`); the
functions only decide, the graph writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from uuid import uuid4

from DeepResearch.src.memory.facts.model import Fact
from DeepResearch.src.memory.facts.store import name_key

INF = float("inf")
STATED = "_stated"  # single-valued facts: statements, [evidence, at, learned, conf, end, said]
SAID = "_said_at"  # a new fact's message time (ingest): orders statements of the same time


@dataclass(slots=True)
class Outcome:
    fact: Fact  # the stored fact the new one became (itself, or the known one it repeats)
    changed: list[Fact] = field(default_factory=list)  # facts to write (incl. `fact`)
    added: list[Fact] = field(default_factory=list)  # facts new to the subject's predicate


def same_object(a: Fact, b: Fact) -> bool:
    if a.object_id is not None or b.object_id is not None:
        return a.object_id == b.object_id
    return name_key(a.object_value or "") == name_key(b.object_value or "")


def noisy_or(a: float, b: float) -> float:
    return 1.0 - (1.0 - a) * (1.0 - b)


def _covers(known: Fact, at: float | None) -> bool:
    if at is None:
        return known.invalid_at is None
    return (known.valid_at is None or known.valid_at <= at) and (
        known.invalid_at is None or at < known.invalid_at)


def apply_rules(new: Fact, known: Sequence[Fact], single_valued: bool, now: float) -> Outcome:
    """`known`: the subject's facts of the same predicate (history included)."""
    said = new.attributes.pop(SAID, None)
    live = [f for f in known if f.expired_at is None]
    for old in live:
        if same_object(old, new) and set(new.evidence) <= set(old.evidence):
            return Outcome(old)  # this evidence was applied already: sending it again is a no-op
    if single_valued:
        return _timeline(new, live, now, said)
    for old in (f for f in live if same_object(f, new)):
        extends = (old.invalid_at is None and new.valid_at is not None
                   and old.valid_at is not None and new.valid_at < old.valid_at)
        if _covers(old, new.valid_at) or extends:
            old.evidence = tuple(dict.fromkeys((*old.evidence, *new.evidence)))
            old.confidence = noisy_or(old.confidence, new.confidence)
            seen = [v for v in (old.attributes.get("last_seen"), new.attributes.get("last_seen"))
                    if isinstance(v, int | float)]
            old.attributes = {**old.attributes, **new.attributes}
            if seen:  # an older batch arriving late does not move last_seen back
                old.attributes["last_seen"] = max(seen)
            if extends:
                old.valid_at = new.valid_at
            return Outcome(old, [old])
    return Outcome(new, [new], [new])


# -- single-valued: the timeline ----------------------------------------------------------

@dataclass(slots=True)
class Statement:
    evidence: tuple[str, ...]
    at: float | None  # when it became true, as said (None: not said)
    learned: float  # when the memory learned it
    confidence: float
    end: float | None  # an explicit end, as said
    fact: Fact  # the fact it was stored with (object, attributes)
    said: float | None = None  # when its message was written
    object_key: str = ""  # _object_key(fact)

    @property
    def time(self) -> float:
        if self.at is not None:
            return self.at
        if self.end is not None and self.end <= self.learned:
            return -INF  # true until a time already past, start unknown
        return self.learned

    def key(self) -> tuple[float, float, str, tuple[str, ...]]:
        said = self.time if self.said is None else self.said
        return (self.time, said, self.object_key, self.evidence)

    def row(self) -> list[Any]:
        return [list(self.evidence), self.at, self.learned, self.confidence, self.end, self.said]


def keep_statements(attributes: dict[str, Any], evidence: set[str]) -> dict[str, Any]:
    """`attributes` with the statements (`_stated`) cut to `evidence`: what forgetting
    leaves of a fact whose evidence it cut (no id of a forgotten memory stays behind)."""
    rows = attributes.get(STATED)
    if not isinstance(rows, list):
        return attributes
    kept = []
    for row in rows:
        try:
            ids = [e for e in row[0] if e in evidence]
        except (TypeError, IndexError):
            continue
        if ids:
            kept.append([ids, *row[1:]])
    return {**attributes, STATED: kept}


def _object_key(fact: Fact) -> str:
    return fact.object_id if fact.object_id is not None else "=" + name_key(fact.object_value or "")


def _statements(fact: Fact, starts: set[float], said_at: float | None) -> list[Statement]:
    """The statements a fact holds: its `_stated` rows (evidence forgotten since left out),
    and, for evidence no row names (a fact written before rows were kept, a new fact), one
    statement of the fact's own times (an `invalid_at` that is another fact's start was a
    closure, not said)."""
    evidence = set(fact.evidence)
    key = _object_key(fact)
    out: list[Statement] = []
    rows = fact.attributes.get(STATED)
    for row in rows if isinstance(rows, list) else []:
        try:
            ev, at, learned, conf, end, *said = row
            kept = tuple(e for e in ev if e in evidence)
        except (TypeError, ValueError):
            continue
        if kept:
            out.append(Statement(kept, at, learned, conf, end, fact, said[0] if said else None,
                                 key))
            evidence -= set(kept)
    rest = tuple(e for e in fact.evidence if e in evidence)
    if rest:
        end = None if fact.invalid_at in starts else fact.invalid_at
        out.append(Statement(rest, fact.valid_at, fact.created_at, fact.confidence, end, fact,
                             said_at, key))
    return out


def _timeline(new: Fact, live: list[Fact], now: float, said: float | None) -> Outcome:
    known_same = {e for f in live if same_object(f, new) for e in f.evidence}
    new.evidence = tuple(e for e in new.evidence if e not in known_same)
    starts = {f.valid_at for f in live if f.valid_at is not None}
    told = _statements(new, starts, said)
    live, after = _window(live, told[0].time)
    statements = sorted([*told, *(s for f in live for s in _statements(f, starts, None))],
                        key=Statement.key)
    segments: list[list[Statement]] = []
    ends: list[float | None] = []
    for s in statements:
        last = segments[-1] if segments else None
        if (last is not None and last[0].object_key == s.object_key
                and (ends[-1] is None or s.time < ends[-1])):
            last.append(s)
            if ends[-1] is not None and s.end is not None:
                ends[-1] = max(ends[-1], s.end)
        else:
            segments.append([s])
            ends.append(s.end)
    before = {id(f): _snapshot(f) for f in live}
    # (object, evidence id) -> the fact holding it; a stored fact wins over `new`
    holder = {(_object_key(f), e): f for f in [new, *live] for e in f.evidence}
    free = {id(f) for f in [*live, new]}
    result, added, used = new, [], set()
    for i, segment in enumerate(segments):
        fact = _owner(segment, holder, free, new, now)
        used.add(id(fact))
        following = segments[i + 1][0].time if i + 1 < len(segments) else after
        end = min((t for t in (ends[i], following) if t is not None), default=None)
        start = segment[0]
        fact.valid_at = start.at
        fact.invalid_at = end
        fact.evidence = tuple(dict.fromkeys(e for s in segment for e in s.evidence))
        confidence = 0.0
        for s in segment:
            confidence = noisy_or(confidence, s.confidence)
        fact.confidence = confidence
        if any(s.fact is new for s in segment):
            result = fact
            if fact is not new:
                fact.attributes = {**fact.attributes, **new.attributes}
        fact.attributes = {**fact.attributes, STATED: [s.row() for s in segment]}
        if id(fact) not in before:
            added.append(fact)
    for fact in live:
        if id(fact) not in used:  # its statements now belong to another fact of this object
            fact.expired_at = now
    changed = [f for f in [*live, *added] if _snapshot(f) != before.get(id(f))]
    return Outcome(result, changed, added)


def _window(live: list[Fact], at: float) -> tuple[list[Fact], float | None]:
    """The facts a statement at `at` can change, and the start of the first fact after them.
    Each dated fact is one run of statements from its `valid_at` to the next fact's, so only
    the facts starting last before `at`, at `at`, and first after it can change (those of
    unknown start are always taken): a rebuild costs the same however long the history."""
    dated = sorted({f.valid_at for f in live if f.valid_at is not None})
    lower = max((t for t in dated if t < at), default=None)  # may continue into `at`
    higher = [t for t in dated if t > at][:2]
    keep = {lower, at, *higher[:1]} - {None}
    window = [f for f in live if f.valid_at is None or f.valid_at in keep]
    return window, higher[1] if len(higher) > 1 else None


def _owner(segment: list[Statement], holder: dict[tuple[str, str], Fact], free: set[int],
           new: Fact, now: float) -> Fact:
    """The fact a segment is written as: the free fact of its object holding most of its
    evidence (a stored one before the new one), else a copy of its first statement's."""
    counts: dict[int, list[Any]] = {}
    for s in segment:
        for e in s.evidence:
            fact = holder.get((s.object_key, e))
            if fact is not None and id(fact) in free:
                counts.setdefault(id(fact), [0, fact])[0] += 1
    if counts:
        _, best = max(counts.values(), key=lambda c: (c[0], c[1] is not new, c[1].id))
        free.discard(id(best))
        return best
    source = segment[0].fact
    return replace(source, id=f"fact-{uuid4().hex}", created_at=now, expired_at=None,
                   attributes=dict(source.attributes))


def _snapshot(fact: Fact) -> tuple[Any, ...]:
    """What a write would change (the rules assign new attribute dicts, never edit one)."""
    return (fact.valid_at, fact.invalid_at, fact.expired_at, fact.evidence, fact.confidence,
            fact.attributes)
