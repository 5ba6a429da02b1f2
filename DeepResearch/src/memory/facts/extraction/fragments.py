"""Chat sentences the rules can read once their left-out words are put back.

- Lower-case chat ("bilal, sre, used to be at cloudflare but now i'm at fastly"): "i" is "I",
  and in a sentence with no capital letter besides "I", the name after "at" / "in" / "from"
  / "for" / "ex-" / "moved to" is capitalised unless it is a common word ("at home", "in
  town", "for ages"): `truecase`.
- Verbless clauses of introductions and updates ("Yusuf, backend engineer at Monzo, based in
  London", "Data scientist, ex-Uber, now at Mercado Libre", "quit my job, moved out of
  Chicago, now living in Denver"): a clause (at the sentence's start or after "," ";" ":" or a
  dash) that opens on a past-tense verb of the rules, on "based in" / "living in" /
  "interested in" ..., on "now at" / "still in", on "ex-X" / "previously at", on a role "at X"
  or on "strong in" gets its subject back: the author ("I"), or the person the sentence is
  about when its first clause is a bare name known as a person or the author's own
  (`fill_subjects`). A clause after one naming another subject ("Bob is great, joined Stripe
  last month", "he's in Milan, ...") is left as it is: whose it is, the rules' left-out
  subject after "and" decides, or no one. Questions are left as they are.
"""

from __future__ import annotations

import re

from DeepResearch.src.memory.facts.extraction.patterns import ADVERBS
from DeepResearch.src.memory.facts.extraction.vocab import (
    COMMON_AFTER_PREPOSITION,
    JOB_NOUNS,
    NOT_NAMES,
)

_ADV = "(?:(?:" + "|".join(a for a in ADVERBS if a not in ("all", "both")) + r"|mostly|mainly) )*"
_PAST = (r"(?:started|joined|moved|relocated|worked|used to|left|quit|resigned|graduated|"
         r"studied|lived|met|went to|attended|got (?:hired|a job|into)|grew up|switched|"
         r"transferred|came|spent)\b")
_BE = (r"(?:based (?:in|out of)|living in|located in|working (?:at|for|as|with|in)|"
       r"interested in|obsessed with|passionate about|fascinated by|hooked on|into (?=[a-z])|"
       r"(?:a |an )?(?:big |huge |massive )?fan of |"
       r"doing (?:a|an|my) |(?:now|currently|still|also) (?:at|in) (?=[A-Z])|"
       r"(?P<role>(?:an? )?(?:[\w-]+ ){0,3}?(?:" + "|".join(JOB_NOUNS) + r")s? (?:at|for|with) "
       r"(?=[A-Z]))|"
       r"(?:strong|good|fluent|proficient|experienced|skilled|expert|decent) (?:in|at|with) |"
       r"(?:part of|a member of|on) the )")
_WAS = r"(?:(?:previously|formerly|before that)(?: at)? (?=[A-Z])|ex-(?=[A-Z]))"
_FRAGMENT = re.compile(rf"{_ADV}(?:(?P<past>{_PAST})|(?P<be>{_BE})|(?P<was>{_WAS}))",
                       re.IGNORECASE)
_PUNCT = re.compile(r"[,;:\u2014\u2013]| - ")
_CLAUSE = re.compile(r"(?:^|[,;:]\s+|\s+[-\u2014\u2013]\s+)")
_OTHER_SUBJECT = re.compile(r"\b(?:he|she|they|you|we|it|u|ur|everyone|someone)\b", re.IGNORECASE)
# A clause opening on a name and a verb has its own subject ("Bob is great, ...").
_NAMED_SUBJECT = re.compile(r"([A-Z][a-z'-]+)(?: [A-Z][a-z'-]+)? (?:is|was|has|had|does|did|will|"
                            r"can|would|\w+s|\w+ed)\b")
_OPENERS = NOT_NAMES | frozenset(ADVERBS)
_JOB = re.compile(r"(?:" + "|".join(JOB_NOUNS) + r")s?$", re.IGNORECASE)
_NAME_ONLY = re.compile(r"[A-Z][a-z'-]+(?: [A-Z][a-z'-]+)?")
_I = re.compile(r"(?<![\w'])i(?=$|[\s',.!?;:])")
# a name's preposition after a verb of the rules: "i'm at fastly", "based in cork"
_LOWER_AFTER = re.compile(
    r"(?<![\w'])(?P<prep>(?:am|is|are|was|were|be|been|work|works|worked|working|live|lives|"
    r"lived|living|based|located|moved|relocated|joined|left|quit|studied|studying|study|now|"
    r"still|currently|previously|job|jobs|ex)(?: (?:now|still|currently|also|back))? "
    r"(?:at|in|from|for|to|with) |ex-)(?P<name>[a-z][\w&'.-]*(?: [a-z][\w&'.-]*){0,2})")


_VOCATIVE = re.compile(r"^(?P<name>[A-Z][a-z'-]+),? (?:you are|ur|u r|you were) ")
_PLACE_WORDS = frozenset({"city", "town", "beach", "bay", "valley", "park", "heights", "hills",
                          "springs", "island", "county", "village"})


def addressed(sentence: str) -> str:
    """"Zoe ur in jersey city" -> "Zoe is in jersey city": the one named is the one meant."""
    if match := _VOCATIVE.match(sentence):
        verb = "was" if match[0].rstrip().endswith("were") else "is"
        return f"{match['name']} {verb} " + sentence[match.end():]
    return sentence


# The rules' words, for typos that swap two neighbouring letters ("swithced" -> "switched").
_TYPO_WORDS = (
    "switched", "joined", "joining", "moved", "moving", "relocated", "worked", "working",
    "works", "lived", "living", "lives", "started", "graduated", "studied", "studying",
    "based", "married", "engaged", "learning", "coding", "programming", "interested",
    "obsessed", "passionate", "knows", "speak", "speaks", "member", "team", "left",
    "quit", "used", "currently", "previously", "recently", "university", "college",
)
_BY_START: dict[tuple[int, str], list[str]] = {}
for _target in _TYPO_WORDS:
    _BY_START.setdefault((len(_target), _target[0]), []).append(_target)
_WORDS = re.compile(r"[a-z]{4,}")


def _swapped(word: str, target: str) -> bool:
    """Whether `word` is `target` with two neighbouring letters swapped."""
    diff = [i for i, (a, b) in enumerate(zip(word, target, strict=True)) if a != b]
    return len(diff) == 2 and diff[1] == diff[0] + 1 and word[diff[0]] == target[diff[1]] \
        and word[diff[1]] == target[diff[0]]


def untypo(sentence: str) -> str:
    """Words of the rules typed with two neighbouring letters swapped, spelt right (the first
    letter kept: "swithced" -> "switched")."""
    for word in _WORDS.findall(sentence):
        for target in _BY_START.get((len(word), word[0]), ()):
            if word != target and _swapped(word, target):
                sentence = re.sub(rf"\b{word}\b", target, sentence)
                break
    return sentence


_CAPITAL = re.compile(r"[A-Z](?<!\bI)")
_PREPOSITION = re.compile(r"\b(?:at|in|from|for|to|with) |ex-")


def truecase(sentence: str) -> str:
    """"i" as "I"; in a sentence without capitals, names after at / in / from ... capitalised."""
    if "i " in sentence or "i'" in sentence or sentence.endswith("i"):
        sentence = _I.sub("I", sentence)
    if _CAPITAL.search(sentence, 1) or not _PREPOSITION.search(sentence):
        return sentence
    return _LOWER_AFTER.sub(_capitalised, sentence)


def _capitalised(match: re.Match[str]) -> str:
    words: list[str] = []
    for word in match["name"].split():
        bare = word.rstrip(".,!?")
        if words and bare in _PLACE_WORDS:  # "jersey city"
            words.append(word[0].upper() + word[1:])
            continue
        if (bare in COMMON_AFTER_PREPOSITION or bare in NOT_NAMES or len(bare) < 3
                or bare.endswith("ing") or bare[0].isdigit()):
            break
        words.append(word[0].upper() + word[1:])
    if not words:
        return match[0]
    rest = match["name"].split()[len(words):]
    return match["prep"] + " ".join([*words, *rest])


def fill_subjects(sentence: str, author: str, types: dict[str, str]) -> str:
    """`sentence` with the subject of its verbless clauses put back (see the module)."""
    if sentence.endswith("?") or not (_FRAGMENT.match(sentence) or _PUNCT.search(sentence)):
        return sentence  # no clause but the first, and that one has a subject
    clauses = list(_CLAUSE.finditer(sentence))
    starts = [m.end() for m in clauses]
    ends = [*(m.start() for m in clauses), len(sentence)][1:]
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement)
    subject: str | None = "I"
    for start, end in zip(starts, ends, strict=False):
        clause = sentence[start:end].strip(" .!")
        if _NAME_ONLY.fullmatch(clause) and clause.lower() not in NOT_NAMES and not (
                _JOB.search(clause)):  # "Designer, previously Grab": a role, no name
            # "Owen, 6 yrs backend, ex-Booking.com": whom the clauses after a bare name are of
            known = types.get(clause.lower())
            if clause.lower() == author.lower() or known in ("Location", "Organization"):
                subject = subject or "I"  # "Lisbon, moved here from Toronto" (Lisbon answered)
            else:
                subject = clause if known == "Person" else None
            continue
        if subject is None:
            break
        named = _NAMED_SUBJECT.match(clause)
        if _OTHER_SUBJECT.match(clause) or (named and named[1].lower() not in _OPENERS):
            break  # "Bob is great, joined Stripe", "he's in Milan, ...": not the author's
        match = _FRAGMENT.match(sentence, start)
        if not match:
            continue
        am = "am" if subject == "I" else "is"
        if match["was"]:
            edits.append((start, match.end(), f"{subject} was at "))
        elif match["be"]:
            if match["role"] and not re.match(r"an? ", match["be"], re.IGNORECASE):
                edits.append((match.start("be"), match.start("be"), "a "))  # "I am a ..."
            edits.append((start, start, f"{subject} {am} "))
        else:
            edits.append((start, start, f"{subject} "))
    for start, end, text in sorted(edits, reverse=True):
        rest = sentence[end:]
        if start == end and rest[:1].isupper() and not re.match(r"[A-Z]{2}|I\b", rest):
            rest = rest[0].lower() + rest[1:]  # "Based in London" -> "I am based in London"
        sentence = sentence[:start] + text + rest
    return sentence
