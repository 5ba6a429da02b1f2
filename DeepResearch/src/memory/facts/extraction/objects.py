"""Reading a rule's object group: names, lists of skills / topics / people, "there".

Each reader turns the matched text into candidate objects `(predicate, name, type)`; an
empty list means the match states nothing (e.g. "working with my team" is no skill).
"""

from __future__ import annotations

import re

from DeepResearch.src.memory.facts.extraction.vocab import (
    CRAFT_VERBS,
    GROUP_WORDS,
    INSTRUMENTS,
    KNOWN_SKILLS,
    NOT_ACTIVITIES,
    NOT_NAMES,
    NOT_SKILLS,
    NOT_TOPICS,
    SCHOOL_ACRONYMS,
    SCHOOL_WORDS,
    SKILL_QUANTIFIERS,
    SKILLS,
    TRAILING_FILLERS,
)

PRONOUN = "\x00pronoun:"  # + he / she: a pronoun object, resolved in text order
SKILL_IT = "\x00it"  # "it" of a skill rule: the skill named last in the conversation
GROUP_SHORT = "\x00group:"  # + a word: the group of that first word named before, if any
AUTHOR = "\x00author"  # placeholder for the message's author ("he was my best mate")
THERE = "\x00there"  # placeholder resolved in text order (the last organisation / place)
Candidate = tuple[str, str, str | None]  # predicate, object as written, object type

_LIST_SPLIT = re.compile(r",? and |, | or ")
_FILLER_END = re.compile(r"(?: (?:" + "|".join(TRAILING_FILLERS) + r"))+$", re.IGNORECASE)
# A topic does not start with a pronoun, a verb or a word pointing at something named before
# ("that first movie", "your store"), nor end on a function word ("having some of").
_BAD_TOPIC_START = frozenset({
    "i", "we", "he", "she", "they", "it", "you", "my", "our", "your", "his", "her", "their",
    "this", "that", "these", "those", "is", "are", "was", "were", "has", "have", "had", "will",
    "would", "can", "going", "getting", "having", "doing", "being", "trying", "seeing",
    "how", "what", "when", "where", "why", "who", "which", "all", "everything", "anything",
})
_LIGHT_GERUNDS = frozenset({"making", "taking", "holding", "putting", "keeping", "giving"})
_BAD_TOPIC_END = frozenset({
    "of", "the", "a", "an", "to", "for", "with", "and", "or", "some", "my", "your", "our", "in",
    "on", "at", "is", "are", "was", "it", "this", "that", "so", "very", "really",
})
_ORG_SUFFIXES = (" inc", " ltd", " llc", " gmbh", " corp", " corporation", " labs", " ag",
                 " co", " company", " technologies", " group", " bank", " foundation")


_NAME_END = re.compile(r"(?:'s|\.)+$")


def clean_name(text: str) -> str:
    """A name as written, without a trailing period / possessive and leading openers."""
    text = _NAME_END.sub("", text.strip())
    words = text.split()
    while words and words[0].lower() in NOT_NAMES:
        words.pop(0)
    while words and words[-1].lower() in NOT_NAMES:  # "Glad I", "Thanks Bob You'll"
        words.pop()
    return " ".join(words)


def is_school(name: str) -> bool:
    lower = name.lower()
    return lower in SCHOOL_ACRONYMS or any(word in lower for word in SCHOOL_WORDS)


def has_org_suffix(name: str) -> bool:
    """"Acme Corp", "Foo Labs": a company's name by its ending."""
    return name.lower().endswith(_ORG_SUFFIXES)


def guess_type(name: str) -> str:
    """The type of a name met without a predicate that says it (MENTIONED)."""
    if name.lower() in KNOWN_SKILLS:
        return "Skill"
    if is_school(name) or has_org_suffix(name) or (name.isupper() and len(name) > 1):
        return "Organization"
    return "Person"


def _items(text: str) -> list[str]:
    return [item.strip() for item in _LIST_SPLIT.split(text) if item.strip()]


def _named(text: str, predicate: str, type_: str) -> list[Candidate]:
    name = clean_name(text)
    return [(predicate, name, type_)] if name else []


_QUANTIFIER = re.compile(r"^(?:(?:" + "|".join(SKILL_QUANTIFIERS) + r") )+", re.IGNORECASE)


def _skill_items(text: str) -> list[str]:
    """The items of a skill list, without "some" / "a bit of" ("some Python"), "HTML/CSS" as
    two when both halves are known skills."""
    found = []
    for item in _items(text):
        item = _QUANTIFIER.sub("", item).strip()
        parts = item.split("/")
        if len(parts) > 1 and all(p.lower() in SKILLS for p in parts):
            found.extend(parts)
        elif item:
            found.append(item)
    return found


def _skills(text: str, predicate: str, *, listed_only: bool) -> list[Candidate]:
    found = []
    items = _skill_items(text)
    # a list is of one kind: next to a known skill, a capitalised name is a skill too
    listed_only = listed_only and not any(item.lower() in SKILLS for item in items)
    for item in items:
        lower = item.lower()
        if lower in SKILLS or (not listed_only and item[0].isupper() and lower not in NOT_NAMES):
            found.append((predicate, item, "Skill"))
    return found


def _topics(text: str, predicate: str) -> list[Candidate]:
    found = []
    for item in _items(text):
        item = _FILLER_END.sub("", item).strip()
        if re.fullmatch(r"(?:the|this|that|these|those|your|his|her|their|our) \S+", item,
                        re.IGNORECASE):
            continue  # "the results": a thing named before, not a topic
        item = re.sub(r"^(?:(?:the|a|an|to|both) )+", "", item, flags=re.IGNORECASE)
        words = item.split()
        if (not words or len(words) > 5 or not item[0].isalnum()
                or words[0].lower().split("'")[0] in _BAD_TOPIC_START
                or words[-1].lower() in _BAD_TOPIC_END
                or (len(words) == 1 and words[0].lower() in _LIGHT_GERUNDS)
                or item.lower() in NOT_TOPICS):
            continue
        found.append((predicate, item, "Topic"))
    return found


def _persons(text: str, predicate: str) -> list[Candidate]:
    found = []
    for item in _items(text):
        name = clean_name(item)
        if name and name.lower() not in KNOWN_SKILLS:
            found.append((predicate, name, "Person"))
    return found


def read_object(kind: str, predicate: str, groups: dict[str, str | None]) -> list[Candidate]:
    """The candidates of one match; `groups` are the match's named groups."""
    text = groups.get("obj") or groups.get("obj2") or ""
    if kind in ("org", "place", "school"):
        type_ = "Location" if kind == "place" else "Organization"
        if groups.get("there"):
            return [(predicate, THERE, type_)]
        found = _named(text, predicate, type_)
        if found and found[0][1].lower() in KNOWN_SKILLS:
            return []  # "a wizard with Spark", "joined Slack": a tool, no employer or place
        if kind == "school" and not (found and is_school(found[0][1])):
            return []
        return found
    if kind in ("group", "group_or_org"):
        name = re.sub(r"[.,]+$", "", text.strip())
        return [(predicate, name, "Organization")] if name else []
    if kind in ("skill_any", "skill_vocab"):
        return _skills(text, predicate, listed_only=kind == "skill_vocab")
    if kind == "skill_or_person":
        found: list[Candidate] = []
        for item in _skill_items(text):
            if item.lower() in KNOWN_SKILLS:
                found.append(("HAS_SKILL", item, "Skill"))
            elif name := clean_name(item):
                if name[0].isupper():
                    found.append(("KNOWS", name, "Person"))
        return found
    if kind == "activity":  # "been climbing for 10 years", "started skiing"
        text = groups.get("obj") or groups.get("obj2") or ""
        return [] if text in NOT_ACTIVITIES else [(predicate, text, "Skill")]
    if kind == "skill_free":  # "good at public speaking", "5 years of Python"
        found = []
        for item in _skill_items(text):
            if item.lower() in KNOWN_SKILLS or (item[0].isupper() and item.lower() not in NOT_NAMES):
                found.append((predicate, item, "Skill"))
            elif len(item.split()) <= 3 and item.lower() not in NOT_SKILLS:
                found.extend((predicate, topic, "Skill") for _, topic, _ in _topics(item, predicate))
        return found
    if kind == "school_or_org":  # "an MIT alum" studied there; "a Google alum" worked there
        found = _named(text, predicate, "Organization")
        if not found or found[0][1].lower() in KNOWN_SKILLS:
            return []
        return [("STUDIED_AT" if is_school(found[0][1]) else "WORKED_AT", found[0][1],
                 "Organization")]
    if kind == "skill_it":  # "Beatriz knows it better than me": the skill last named
        return [(predicate, SKILL_IT, "Skill")]
    if kind == "skill_list":  # "Figma, Sketch, a bit of HTML/CSS." (an intro's list)
        items = _skill_items(text)
        known = sum(item.lower() in KNOWN_SKILLS for item in items)
        if known < 2 or any(item.lower() not in KNOWN_SKILLS and (
                not item[0].isupper() or " " in item or item.lower() in NOT_NAMES)
                for item in items):
            return []  # two known skills at least, the rest names of one word
        return [(predicate, item, "Skill") for item in items]
    if kind == "craft":  # "I knit" -> knitting
        return [(predicate, CRAFT_VERBS[text.lower()], "Skill")] if text.lower() in CRAFT_VERBS \
            else []
    if kind == "skill_instrument":  # "I play the cello"
        return [(predicate, text, "Skill")] if text.lower() in INSTRUMENTS else []
    if kind == "org_or_place":  # "spent 5 years at Google / in Berlin / at MIT"
        name = clean_name(text)
        if not name or name.lower() in KNOWN_SKILLS:
            return []
        if is_school(name):
            return [("STUDIED_AT", name, "Organization")]
        if groups.get("prep") == "in":
            return [("LIVES_IN", name, "Location")]
        return [(predicate, name, "Organization")]
    if kind == "org_or_group":  # "switched from the mobile team" / "from Goldman"
        text = re.sub(r"[.,]+$", "", text.strip())
        if re.search(rf"\b(?:{'|'.join(GROUP_WORDS)})s?$", text, re.IGNORECASE):
            return [("MEMBER_OF", text, "Organization")]
        name = clean_name(text)
        return [(predicate, name, "Organization")] if name and name[0].isupper() else []
    if kind == "topics":
        return _topics(text, predicate)
    if kind in ("persons", "relation"):
        return _persons(text, predicate)
    if kind == "pronoun":  # "I know him already": resolved like he / she
        return [(predicate, PRONOUN + {"him": "he", "her": "she"}[text.lower()], "Person")]
    if kind == "known_group":  # "I'm on platform too": the group named before, if any
        return [(predicate, GROUP_SHORT + text.lower(), "Organization")]
    if kind == "author":
        return [(predicate, AUTHOR, "Person")]
    if kind == "pair":
        return [(predicate, groups.get("b") or "", "Person")]
    raise ValueError(f"unknown object kind {kind!r}")
