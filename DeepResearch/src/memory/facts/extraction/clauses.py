"""What a clause says besides its fact: spelled-out contractions, sentences (and the subject a
chat sentence leaves out), how sure it is (hedges, denials, negation), how often (frequencies),
when (a rule's tense + its time phrases -> valid_at / invalid_at), and whether it asserts its
fact at all, or only supposes, wants or plans it (`asserted`).

A rule matches a subject next to its verb ("I work at"), so a modal or an intention before the
verb ("I would work", "I want to work", "I'll join") already keeps most such clauses from
matching. Two kinds still match, and state nothing:

- a clause inside a condition: after "if" / "unless" / "whether" / "suppose" / "imagine" /
  "assuming" / "in case" with no "," ";" ":" or "then" in between ("If I worked at Google I
  would be happy", "I don't know if Bob works at Google"); past the comma the sentence asserts
  again ("If you need help, Bob knows Rust");
- a clause whose subject is left out after a modal or an intention ("I know Go and plan to
  move to Berlin and work at SAP": the work is planned too).

A clause that asserts nothing also lends its subject to no clause after it ("If I worked at
Google, and lived in Paris, ...": the stay is supposed as well).
"""

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


_CONDITION = re.compile(
    r"\b(?:if|unless|whether|suppose|supposing|imagine|assuming|in case)\b", re.IGNORECASE)
_CONDITION_END = re.compile(r"[,;:]|\bthen\b", re.IGNORECASE)
_INTENT = re.compile(
    r"\b(?:will|would|could|should|might|may|must|shall|can|cannot|(?:going|wants?|wanted|"
    r"plans?|planning|hopes?|hoping|like|love|intends?|about|try|trying|needs?) to)\b",
    re.IGNORECASE)


def asserted(match: re.Match[str], since: int) -> bool:
    """Whether the clause of a rule's `match` states its fact; `since`: where the sentence's
    previous clause with a fact starts (0 for none; its object may have taken the intention's
    words: "I know Go and plan to move ...")."""
    groups = match.groupdict()
    # up to the verb: a subject's name may have taken the condition ("If Bob knows Rust")
    key = next((k for k in ("subj", "a") if groups.get(k) is not None), None)
    before = match.string[:match.end(key) if key else match.start()]
    conditions = list(_CONDITION.finditer(before))
    if conditions and not _CONDITION_END.search(before, conditions[-1].end()):
        return False
    return not (groups.get("subj") == "" and _INTENT.search(before, since))
