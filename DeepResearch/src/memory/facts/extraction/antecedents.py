"""Whom "he" / "she" means: the one person who can be meant, or no one.

The extractor takes no name for a gender, so it never chooses between people: every name in
the pronoun's sentence before it and in the WINDOW sentences before that (any author's) is a
candidate, except the speaker's own; a pronoun resolved counts as its person named again (so
"Dave ... He ... He ..." goes on meaning Dave). A name of another kind (a place, an
organisation, a skill) is no candidate, nor is a person the other pronoun has named before
("Alice works at Acme. She ... Bob worked at IBM. He ...": Alice, once "she", is no "he").
The pronoun names someone only when one candidate is left and a fact (or a typed mention) has
made that name a person; a name of unknown kind ("I visited Paris", "Erin called me") may be
the one meant, so it leaves the pronoun unresolved. "they" is never resolved: in chat it is
mostly a group or an organisation.

`names` (the capitalised names of a sentence) also serves MENTIONED.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator

from DeepResearch.src.memory.facts.extraction.objects import clean_name, guess_type
from DeepResearch.src.memory.facts.extraction.vocab import NOT_NAMES

WINDOW = 4  # sentences before the pronoun's own (chat sentences are short: "DIEGO??")
_NAME = re.compile(r"(?<![\w'])[A-Z][\w'&-]*(?: (?:of (?:the )?|de |& )?[A-Z][\w'&-]*)*")
_PLACE_BEFORE = re.compile(r"\b(?:in|to|from|near) $")
# A sentence's first word is only a name when one of these follows it ("Bob said ...").
# ("Life is ..." and "Dance and ..." are too common to count.)
_NAME_FOLLOWERS = frozenset({
    "has", "had", "will", "said", "says", "thinks", "told", "asked", "mentioned", "wants",
    "did", "does", "got", "just", "also", "called", "wrote", "sent", "replied", "agrees",
})


def names(sentence: str, types: dict[str, str]) -> Iterator[tuple[str, int]]:
    """(name, where it starts) of each capitalised name in `sentence`; `types` (lower-case
    name -> type) tells a known name at the sentence's start from an opener."""
    for match in _NAME.finditer(sentence):
        name = clean_name(match[0])
        lower = name.lower()
        if len(name) < 2 or lower in NOT_NAMES:
            continue
        if match.start() == 0 and name == match[0].rstrip("."):
            following = sentence[match.end():].split(maxsplit=1)
            if name.endswith("ing") or (lower not in types and not (
                    following and following[0].lower() in _NAME_FOLLOWERS)):
                continue  # "Dancing is ...": a gerund; "Sounds like ...": an opener
        yield name, match.start()


def guessed_type(sentence: str, start: int, name: str) -> str:
    """The type of a name no fact has typed, from the word before it or its form."""
    return "Location" if _PLACE_BEFORE.search(sentence, 0, start) else guess_type(name)


class Antecedents:
    """The last sentences of a conversation, read for the person a he / she means."""

    def __init__(self) -> None:
        # each sentence with the people its pronouns were resolved to
        self._recent: deque[tuple[str, list[str]]] = deque(maxlen=WINDOW)
        self._resolved: list[str] = []
        self._pronouns: dict[str, str] = {}  # lower-case name -> the he / she that named it

    def sentence_done(self, sentence: str) -> None:
        self._recent.append((sentence, self._resolved))
        self._resolved = []

    def resolve(self, pronoun: str, before: str, speaker: str,
                types: dict[str, str]) -> str | None:
        """The person meant by `pronoun` (he / she, lower case) following `before` in its
        sentence, or None."""
        candidates: dict[str, tuple[str, str]] = {}  # lower-case name -> (name, type)
        for sentence, resolved in (*self._recent, (before, self._resolved)):
            candidates.update((name.lower(), (name, "Person")) for name in resolved)
            for name, start in names(sentence, types):
                candidates.setdefault(name.lower(), (
                    name, types.get(name.lower()) or guessed_type(sentence, start, name)))
        candidates.pop(speaker.lower(), None)
        people = [name for name, type_ in candidates.values() if type_ == "Person"
                  and self._pronouns.get(name.lower(), pronoun) == pronoun]
        if len(people) != 1 or types.get(people[0].lower()) != "Person":
            return None  # no one, a choice, or a name not known to be a person's
        self._resolved.append(people[0])
        self._pronouns[people[0].lower()] = pronoun
        return people[0]
