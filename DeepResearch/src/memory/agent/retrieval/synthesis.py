"""From the facts the tools found to the answer: de-duplicate, rank, format, grade.

Relevance of a fact, in [0, 1], is the sum of
  0.5  it names (as subject, object or in its sentence) an entity or subject of the
       conversation's questions,
  0.3  a targeted fact tool found it (0.15 semantic_search_facts, 0.1 search_memory),
  0.2  its predicate is one the question asks about: by the question's kind (experts ->
       HAS_SKILL, INTERESTED_IN; organization -> WORKS_AT, WORKED_AT; location -> LIVES_IN;
       ...) or, about a person, by its words ("where does Alice work" -> WORKS_AT, WORKED_AT),
capped at 1. Facts are ranked in three tiers: the answers (relevance >= 0.4), then the
off-topic hits kept as context, then the channel's people; within a tier by 0.6 * relevance
+ 0.4 * confidence (ties: the more confident, the newer, then the tool's own order, e.g.
find_experts' expertise).
A semantic or memory hit that names nothing the conversation asks about (relevance < 0.4)
is not on topic: it is returned, ranked after the others, only if its similarity to the
search's query is at least `min_similarity` (default 0.3; with all-MiniLM-L6-v2 unrelated
short sentences score 0 to 0.25, so "Alice works at Google" is not returned as context for
"who should I ask about TypeScript?"). The channel's participants, when no question asked
for them, are context too (their relevance is capped at 0.35) and are kept.

Overall confidence (`grade`), over the on-topic facts returned: with H the number of facts of
confidence >= 0.8, m their mean confidence and s the share of tool calls that succeeded,
  high    at least one fact, H >= min(2, number of facts), m >= 0.75 and s >= 0.75;
  medium  at least one fact, H >= 1 or m >= 0.5, and s >= 0.5;
  low     otherwise (nothing found, only weak facts, or most tools failed).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from datetime import UTC, datetime

from DeepResearch.src.memory.agent.retrieval.types import (
    MEMORY_TOOL,
    AnswerFact,
    Confidence,
    ConversationAnalysis,
    FoundFact,
)

HIGH_CONFIDENCE = 0.8
ON_TOPIC = 0.4  # the relevance from which a fact counts towards the overall confidence
CONTEXT = 0.35  # the relevance of what only the implicit channel need found
MIN_SIMILARITY = 0.3  # an off-topic similarity hit below it is noise, not context

_KIND_PREDICATES: dict[str, set[str]] = {
    "experts": {"HAS_SKILL", "INTERESTED_IN"},
    "skill": {"HAS_SKILL"},
    "who_knows": {"KNOWS", "CLOSE_TO", "HAS_SKILL"},
    "topic": {"INTERESTED_IN", "HAS_SKILL"},
    "organization": {"WORKS_AT", "WORKED_AT", "MEMBER_OF"},
    "location": {"LIVES_IN"},
    "relationship": {"KNOWS", "CLOSE_TO", "MEMBER_OF"},
    "participants": {"PARTICIPATED_IN"},
    "channel": {"PARTICIPATED_IN"},
    "timeline": {"WORKS_AT", "WORKED_AT", "LIVES_IN", "STUDIED_AT"},
}


def _words(text: str) -> str:
    return " " + " ".join(re.findall(r"[\w#+.]+", text.casefold())) + " "


def mentions(fact: FoundFact, terms: Iterable[str]) -> bool:
    """The fact names one of the terms (whole words, case-insensitively) as its subject, its
    object or in its sentence."""
    text = _words(" ".join(filter(None, (fact.subject, fact.object, fact.sentence or ""))))
    return any(_words(t).strip() and _words(t) in text for t in terms)


def score_relevance(fact: FoundFact, analysis: ConversationAnalysis) -> float:
    terms = {t for t in analysis.entities} | {n.subject for n in analysis.needs if len(n.subject) < 60}
    score = 0.0
    if mentions(fact, terms):
        score += 0.5
    score += {"semantic_search_facts": 0.15, MEMORY_TOOL: 0.1}.get(fact.tool, 0.3)
    needs = [analysis.needs[fact.need]] if fact.need is not None and fact.need < len(analysis.needs) \
        else analysis.needs
    asked: set[str] = set()
    for need in needs:
        asked |= _KIND_PREDICATES.get(need.kind, set()) | set(need.focus)
    if fact.predicate and fact.predicate.upper() in asked:
        score += 0.2
    fact.context = bool(needs) and all(n.kind == "channel" for n in needs)
    if fact.context:
        score = min(score, CONTEXT)  # the channel's people: context, after the answers
    return min(1.0, score)


def worth_returning(fact: FoundFact, min_similarity: float = MIN_SIMILARITY) -> bool:
    """On topic, or found by similarity and close enough to its query to be context."""
    return fact.relevance >= ON_TOPIC or fact.similarity is None or fact.similarity >= min_similarity


def deduplicate(facts: list[FoundFact]) -> list[FoundFact]:
    """One fact per (person, predicate, object): the most confident, with every evidence id
    and the highest relevance of its copies."""
    kept: dict[tuple[str, ...], FoundFact] = {}
    for fact in facts:
        key = fact.key()
        other = kept.get(key)
        if other is None:
            kept[key] = fact
            continue
        best, worse = (fact, other) if fact.confidence > other.confidence else (other, fact)
        best.evidence = tuple(dict.fromkeys(best.evidence + worse.evidence))
        best.relevance = max(best.relevance, worse.relevance)
        best.context = best.context and worse.context  # an answer too, if either copy is
        known = [s for s in (best.similarity, worse.similarity) if s is not None]
        best.similarity = max(known) if known else None
        kept[key] = best
    return list(kept.values())


def tier(fact: FoundFact) -> int:
    """0 an answer (on topic), 1 an off-topic hit kept as context, 2 the channel's people."""
    return 2 if fact.context else 0 if fact.relevance >= ON_TOPIC else 1


def rank(facts: list[FoundFact]) -> list[FoundFact]:
    """Answers first, then off-topic context, then the channel's people; within a tier by
    0.6 relevance + 0.4 confidence, then confidence, the newer, the tool's own order."""
    return sorted(
        facts,
        key=lambda f: (-tier(f), round(0.6 * f.relevance + 0.4 * f.confidence, 9), f.confidence,
                       f.valid_at or 0.0, -f.order),
        reverse=True,
    )


def _year(ts: float | None) -> int | None:
    return datetime.fromtimestamp(ts, UTC).year if ts is not None else None


def _new_year(ts: float | None) -> bool:
    if ts is None:
        return False
    moment = datetime.fromtimestamp(ts, UTC)
    return (moment.month, moment.day, moment.hour, moment.minute, moment.second) == (1, 1, 0, 0, 0)


def _end_year(end: float | None) -> int | None:
    """The last year a fact was true. Validity ends are exclusive: a fact invalid from
    midnight on 1 January 2023 ("from 2019 to 2022" as the extractor stores it, or a job
    closed by one starting "2023-01") was last true in 2022."""
    if end is None:
        return None
    year = datetime.fromtimestamp(end, UTC).year
    return year - 1 if _new_year(end) else year


def _number(value: object) -> object:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _article(word: str) -> str:
    return "an" if word[:1].casefold() in "aeiou" else "a"


def sentence(fact: FoundFact) -> str:
    """The fact as one sentence, without its confidence and evidence."""
    if fact.predicate is None:
        text = " ".join((fact.sentence or fact.object).split())
        return text if len(text) <= 300 else text[:297] + "..."
    s, o, p = fact.subject or "someone", fact.object, fact.predicate.upper()
    attrs = fact.attributes
    start, end = _year(fact.valid_at), _end_year(fact.invalid_at)
    role = attrs.get("role") or attrs.get("title") or attrs.get("position")
    as_role = f" as {_article(str(role))} {role}" if role else ""
    closed = fact.invalid_at is not None
    if p in ("WORKED_AT",) or (p == "WORKS_AT" and closed):
        span = f" from {start} to {end}" if start and end else (f" until {end}" if end else (f" from {start}" if start else ""))
        return f"{s} previously worked at {o}{span}{as_role}"
    if p == "WORKS_AT":
        return f"{s} works at {o}{as_role}" + (f" since {start}" if start else "")
    if p == "HAS_SKILL":
        level = attrs.get("proficiency") or attrs.get("level")
        years = _number(attrs.get("years") or attrs.get("years_experience"))
        text = f"{s} has {level}-level {o} skills" if level else f"{s} has {o} skills"
        return text + (f" with {years} years of experience" if years else "")
    span = f" from {start} to {end}" if start and end else (f" until {end}" if end else "")
    if p == "LIVES_IN":
        return f"{s} previously lived in {o}{span}" if closed else f"{s} lives in {o}" + (f" since {start}" if start else "")
    simple = {
        "INTERESTED_IN": "is interested in", "STUDIED_AT": "studied at", "KNOWS": "knows",
        "CLOSE_TO": "is close to", "MEMBER_OF": "is a member of", "MENTIONED": "mentioned",
        "PARTICIPATED_IN": "took part in",
    }
    if p in simple:
        return f"{s} {simple[p]} {o}" + (f" ({span.strip()})" if closed and span else "")
    if fact.sentence:
        return " ".join(fact.sentence.split()).rstrip(".")
    return f"{s} {p.replace('_', ' ').casefold()} {o}" + (f" ({span.strip()})" if closed and span else "")


def format_fact(fact: FoundFact) -> str:
    evidence = ", ".join(fact.evidence[:3]) + (f" +{len(fact.evidence) - 3} more" if len(fact.evidence) > 3 else "")
    if not evidence:
        evidence = f"fact {fact.fact_id}" if fact.fact_id else "none"
    return f"{sentence(fact).rstrip('.')} (confidence: {fact.confidence:.2f}, evidence: {evidence})"


def _iso(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).isoformat()


def answer_fact(fact: FoundFact, now: float | None = None) -> AnswerFact:
    """The fact as the answer returns it: its sentence, structure and validity."""
    now = time.time() if now is None else now
    return AnswerFact(
        text=format_fact(fact), subject=fact.subject, predicate=fact.predicate, object=fact.object,
        confidence=round(fact.confidence, 6), evidence=list(fact.evidence),
        valid_at=_iso(fact.valid_at), invalid_at=_iso(fact.invalid_at),
        current=(fact.invalid_at is None or fact.invalid_at > now)
        and (fact.valid_at is None or fact.valid_at <= now),
    )


def confidence_score(facts: list[FoundFact], calls: int, successes: int) -> float:
    """The mean confidence of the on-topic facts times the tool success rate (0 with none)."""
    on_topic = [f.confidence for f in facts if f.relevance >= ON_TOPIC]
    if not on_topic:
        return 0.0
    return round(sum(on_topic) / len(on_topic) * (successes / calls if calls else 1.0), 4)


def grade(facts: list[FoundFact], calls: int, successes: int) -> Confidence:
    """The overall confidence; the rule is in this module's docstring."""
    facts = [f for f in facts if f.relevance >= ON_TOPIC]
    if not facts:
        return "low"
    high = sum(1 for f in facts if f.confidence >= HIGH_CONFIDENCE)
    mean = sum(f.confidence for f in facts) / len(facts)
    success_rate = successes / calls if calls else 1.0
    if high >= min(2, len(facts)) and mean >= 0.75 and success_rate >= 0.75:
        return "high"
    if (high >= 1 or mean >= 0.5) and success_rate >= 0.5:
        return "medium"
    return "low"
