"""What a new fact does to the facts already known about its subject and predicate.

- Repeated (same subject, predicate and object, and its time falls in the known fact's
  validity, or extends an open one back in time): no new fact; the known one gains the new
  evidence, its confidence rises by noisy-or (1 - (1 - a)(1 - b)), new attribute values win
  (except `last_seen`, the latest of the two).
- Contradicting, on a single-valued predicate (WORKS_AT, LIVES_IN; `facts.single_valued`):
  an older fact still valid when the new one starts is closed: its `invalid_at` becomes the
  new fact's `valid_at` (now, when unknown; a known fact of unknown start counts from when
  the memory learned it). It is kept, and history queries show it.
- Late (an older fact arriving after a newer one with another object): stored, but closed
  at the newer fact's `valid_at`; it never overrides the newer one.
Nothing is deleted; the functions only decide, the graph writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from DeepResearch.src.memory.facts.model import Fact
from DeepResearch.src.memory.facts.store import name_key

INF = float("inf")


@dataclass(slots=True)
class Outcome:
    fact: Fact  # the stored fact the new one became (itself, or the known one it repeats)
    changed: list[Fact] = field(default_factory=list)  # facts to write (incl. `fact`)
    repeated: bool = False


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
    """`known`: the subject's facts of the same predicate (history included, none retired)."""
    others = [f for f in known if not same_object(f, new) and f.expired_at is None]
    start = new.valid_at if new.valid_at is not None else now
    for old in (f for f in known if same_object(f, new) and f.expired_at is None):
        extends = (old.invalid_at is None and new.valid_at is not None
                   and old.valid_at is not None and new.valid_at < old.valid_at
                   and not (single_valued and any(
                       _between(o, new.valid_at, old.valid_at) for o in others)))
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
            return Outcome(old, [old], repeated=True)
    changed: list[Fact] = []
    if single_valued:
        for old in others:
            # an old fact of unknown start was true at least since the memory learned it
            old_start = old.created_at if old.valid_at is None else old.valid_at
            old_end = INF if old.invalid_at is None else old.invalid_at
            if old_start < start < old_end:  # older and still valid when the new one starts
                old.invalid_at = start
                changed.append(old)
            elif old_start >= start and new.valid_at is not None:  # the new one is late
                end = INF if new.invalid_at is None else new.invalid_at
                if old_start < end:
                    new.invalid_at = old_start
    changed.append(new)
    return Outcome(new, changed)


def _between(fact: Fact, low: float, high: float) -> bool:
    """Valid at some time in [low, high)."""
    start = -INF if fact.valid_at is None else fact.valid_at
    end = INF if fact.invalid_at is None else fact.invalid_at
    return start < high and end > low
