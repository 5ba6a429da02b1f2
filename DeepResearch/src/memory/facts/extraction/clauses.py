"""What a clause says besides its fact: spelled-out contractions, sentences (and the subject a
chat sentence leaves out), how sure it is (hedges, denials, negation), how often (frequencies)
and when (a rule's tense + its time phrases -> valid_at / invalid_at)."""

from __future__ import annotations

import re

from DeepResearch.src.memory.facts.extraction.dates import TimeInfo, years_before
from DeepResearch.src.memory.facts.extraction.patterns import ADVERBS
from DeepResearch.src.memory.facts.extraction.vocab import (
    DENIALS,
    FREQUENCIES,
    STRONG_HEDGES,
    WEAK_HEDGES,
)

YEAR = 365.25 * 86400
# Present-state predicates: stated in the past tense they end (at the end named, or before
# the message); WORKS_AT said in the past becomes WORKED_AT instead.
CLOSED_IN_PAST = frozenset({"LIVES_IN", "MEMBER_OF", "INTERESTED_IN", "KNOWS", "CLOSE_TO"})
_CONTRACTIONS = tuple((re.compile(a), b) for a, b in (
    (r"[\u2018\u2019]", "'"), (r"\b[Ii]'m\b", "I am"),
    (r"\b([Ii]|[Ww]e|[Yy]ou|[Tt]hey)'ve\b", r"\1 have"), (r"\b([Ww]e|[Yy]ou|[Tt]hey)'re\b", r"\1 are"),
    (r"\b([Hh]e|[Ss]he|[Ii]t|[Tt]hat|[Tt]here)'s\b", r"\1 is"), (r"\b([Cc])an't\b", r"\1annot"),
    (r"\b([Ww])on't\b", r"\1ill not"), (r"n't\b", " not"),
    (r"\b([Ii]|[Ww]e|[Hh]e|[Ss]he|[Tt]hey)'ll\b", r"\1 will"),
    (r"\b([Ii]|[Ww]e|[Hh]e|[Ss]he|[Tt]hey)'d\b", r"\1 would"),
    (r"\b([A-Z][a-z]+)'s (been|got|worked|moved|lived|studied|joined|left)\b", r"\1 has \2"),
))
SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
# A chat sentence that opens on one of the rules' past-tense verbs tells of the speaker
# ("Started at Shopify in 2021.", "Just joined Stripe!"). Only past forms: "Join Stripe!" and
# "Move to Berlin." are imperatives; "Both moved to Berlin" is no one's.
_LEFT_OUT_SUBJECT = re.compile(
    r"(?:(?:" + "|".join(a for a in ADVERBS if a not in ("all", "both")) + r") )*(?:started|joined|moved|relocated|worked|used to|"
    r"left|quit|resigned|graduated|studied|lived|met|went to|attended|got (?:hired|a job|into))"
    r"\b", re.IGNORECASE)
NEGATION = re.compile(r"\b(?:not|never|no longer|cannot)\b")
# "not sure" doubts the clause it governs ("Not sure I know Kubernetes"); set apart ("I'm not
# sure, but Bob knows Rust", "Bob knows Rust, not sure.") it is a hedge (STRONG_HEDGES).
DENIAL = re.compile(
    r"\b(?:" + "|".join(map(re.escape, DENIALS)) + r")\b|\bnot sure (?!but\b)(?=\w)")
FREQUENCY = re.compile(r"\b(?:" + "|".join(map(re.escape, FREQUENCIES)) + r")\b")
_STRONG = re.compile(r"\b(?:" + "|".join(map(re.escape, STRONG_HEDGES)) + r")\b")
_WEAK = re.compile(r"\b(?:" + "|".join(map(re.escape, WEAK_HEDGES)) + r")\b")
# A hedge after the fact, ending the sentence: "Bob knows Rust, I think."
AFTERTHOUGHT = re.compile(r"^[\s,;-]*(?:" + "|".join(map(re.escape, STRONG_HEDGES + WEAK_HEDGES))
                          + r")[\s.!?]*$", re.IGNORECASE)


def normalise(text: str) -> str:
    """Contractions spelled out ("I'm" -> "I am", "don't" -> "do not")."""
    if "'" not in text and "\u2019" not in text and "\u2018" not in text:
        return text
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return text


def sentences(text: str) -> list[str]:
    return [s for s in (part.strip() for part in SENTENCES.split(normalise(text))) if s]


def with_subject(sentence: str) -> str:
    """A chat sentence opening on a past-tense verb, with the speaker's "I" put back ("Joined
    Stripe." -> "I joined Stripe."); questions ("Moved to Berlin?") as they are."""
    if sentence.endswith("?") or not _LEFT_OUT_SUBJECT.match(sentence):
        return sentence
    return "I " + sentence[0].lower() + sentence[1:]


def hedge(region: str) -> float:
    """1.0, or 0.8 after a belief ("I think"), or 0.6 after a guess ("maybe")."""
    if _STRONG.search(region):
        return 0.6
    return 0.8 if _WEAK.search(region) else 1.0


def times(tense: str, predicate: str, t: TimeInfo, ts: float) -> tuple[float | None, float | None]:
    """(valid_at, invalid_at) of a fact stated in `tense` with time phrases `t` at `ts`."""
    if tense == "past":
        end = t.end if t.end is not None else (ts if predicate in CLOSED_IN_PAST else None)
        return (t.start if t.start is not None else t.at), end
    if tense == "start":
        start = t.at if t.at is not None else t.start
        return (ts if start is None else start), t.end
    if tense == "end":
        end = t.at_end if t.at_end is not None else t.end
        return t.start, ts if end is None else end
    start = t.start if t.start is not None else (years_before(ts, t.years) if t.years else ts)
    return start, t.end if t.end is not None and t.end > start else None
