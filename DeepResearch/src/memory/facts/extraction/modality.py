"""Whether a clause asserts its fact, or only supposes, wants or plans it.

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
