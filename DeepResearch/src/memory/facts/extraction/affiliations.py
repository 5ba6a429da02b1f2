"""Employers a clause names besides its own fact: its colleagues' and its subject's.

- "S work(s) / worked with P at X" ("I work with Bob at Google"): S works (or worked) at X,
  and so does each person P, at COLLEAGUE times S's confidence (and the 0.95 of what is said
  of another). A skill is no colleague ("I work with Python at Google": S only).
- A subject named with its organisation or team ("Sarah at Acme knows SQL", "Sarah from
  marketing", "Sarah in sales"): the clause's fact is Sarah's, and "at X" also says Sarah
  WORKS_AT X (AT_ORG). "from X" does only when X is known as an organisation or has a
  company ending ("Acme Corp"): "Sarah from Berlin" is as likely. "in" / "on X", a lower-case
  team ("marketing", "the data team"), a school ("at MIT": a student, maybe) and a name known
  to be of another kind give no employer.
"""

from __future__ import annotations

import re

from DeepResearch.src.memory.facts.extraction.objects import (
    clean_name,
    has_org_suffix,
    is_school,
    read_object,
)
from DeepResearch.src.memory.facts.extraction.vocab import KNOWN_SKILLS

COLLEAGUE = 0.85  # of the subject's confidence
AT_ORG = 0.75  # rule bases of a subject's employer, before hedges and the 0.95 of hearsay
FROM_ORG = 0.7


def colleagues(groups: dict[str, str | None]) -> list[str]:
    """The people of a match's `with` group (work_with_at), skills left out."""
    text = groups.get("with")
    return [name for _, name, _ in read_object("persons", "", {"obj": text})] if text else []


def employer(match: re.Match[str], types: dict[str, str]) -> tuple[str, float] | None:
    """(organisation, base confidence) of the match's subject's affiliation, or None."""
    groups = match.groupdict()
    if not groups.get("affil") or groups["aprep"] not in ("at", "from"):
        return None
    org = clean_name(groups["aorg"] or "")
    lower = org.lower()
    if (not org or not org[0].isupper() or lower in KNOWN_SKILLS or is_school(org)
            or types.get(lower, "Organization") != "Organization"):
        return None
    if groups["aprep"] == "at":
        return org, AT_ORG
    return (org, FROM_ORG) if lower in types or has_org_suffix(org) else None


def subject_text(match: re.Match[str], key: str) -> str:
    """The match's group `key` without the subject's affiliation ("Sarah" of "Sarah at X")."""
    text = match[key] or ""
    if key == "subj" and match.groupdict().get("affil"):
        return text[:match.start("affil") - match.start(key)]
    return re.sub(r",? who$", "", text)  # "Ana, who lives in Oslo"
