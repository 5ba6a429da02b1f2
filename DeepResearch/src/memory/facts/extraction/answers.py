"""Answers read with their question: what a reply states that only its question says.

A question names the fact it asks about; the next message of another author that answers it
states that fact of the one asked ("you" -> the answerer; he / she / a name as in the
question), and the extractor reads the statement as a sentence of the answer:

- a yes / no question ("are you in Austin?", "is he still at Accenture?", "do you know
  Go?"): a "yes" ("yup", "yes!", "I do", "enough to be dangerous") states it ("I am in
  Austin"); a "no" to a "still" question states its end ("he was at Accenture"); any other
  reply, nothing;
- "where are you based / living / these days?", "where do you live?": a reply opening on a
  name ("Lisbon, moved here ...", "Pittsburgh still", "me! still in Cambridge") lives there;
  "where do you work?", "which company?": a reply opening on a name works there;
- "does anyone know / use / is anyone good at K?": "I do", "me", "I know it a bit", "I'm
  decent" state the skill K of the answerer;
- "what about you?" / "and you?" asks the question before it again, of its own addressee.

Only the next message answers (a later one may answer another thing), and only one from
another author than the question's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from DeepResearch.src.memory.facts.extraction.patterns import CAP, PERSON, SKILLS

_YES = re.compile(
    r"^(?:yes|yeah|yep|yup|ya|yea|sure|correct|right|exactly|indeed|of course|definitely|"
    r"absolutely|true|mhm|i do|i am|i can|me|me too|still|enough|a bit|a little|decent|"
    r"pretty much|kind of|kinda|sort of|i know it|i use it|i used it|i have|he is|she is|he does|"
    r"she does|they are)\b", re.IGNORECASE)
_NO = re.compile(r"^(?:no|nope|nah|not|never|i do not|he does not|she does not|i have not)\b",
                 re.IGNORECASE)
_LEAD = re.compile(r"^(?:(?:oh|ah|haha|lol|well|so|yes|yeah|yep|yup|me|hmm|um)[!,.]* )*",
                   re.IGNORECASE)
_WHO = rf"(?P<who>you|u|he|she|{PERSON})"
# yes / no questions: (aux) (who) (still)? (the rest, as a statement's verb phrase)
_YES_NO = re.compile(
    rf"^(?:(?:so|and|but|wait|oh|ok|hey)[,!]? )*(?P<aux>are|is|do|does|did|were|was|have|has)"
    rf" {_WHO}(?P<still> still)? (?P<rest>[^?]+?)(?: right| then| now| too| yet)?\?$",
    re.IGNORECASE)
# a statement asked for confirmation: "you are in Austin, right?"
_TAG = re.compile(rf"^(?:(?:so|and|but|wait|oh|ok)[,!]? )*{_WHO} (?P<aux>are|is) "
                  rf"(?P<rest>[^?]+?),? (?:right|yeah|correct|no)\?$", re.IGNORECASE)
# a statement asked as a question: "wait you moved to Oslo??"
_DECLARATIVE = re.compile(
    r"^(?:(?:so|and|but|wait|oh|ok|hold on)[,!]? )*(?P<who>you|u) (?P<rest>(?:moved|left|quit|"
    r"joined|live|work|started|switched|relocated|got|studied|know|speak|are|were)\b[^?]*?)"
    r"(?:,? (?:right|yeah|then|now|too))?\?+$", re.IGNORECASE)
_PRONOUN = {"you": "I", "u": "I", "he": "he", "she": "she"}
_BE = {("are", "I"): "am", ("is", "I"): "am", ("were", "I"): "was", ("was", "I"): "was"}
_THIRD = re.compile(r"^(work|live|know|speak|use|study|write|code)\b")
_LIVES_Q = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"\bwhere (?:are|r) {_WHO} (?:based|living|located|these days|nowadays|now|at the moment)\b",
    rf"\bwhere (?:do|does) {_WHO} live\b",
    r"\b(?:which|what) city (?:are|do|does|is)\b"))
_WORKS_Q = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"\bwhere (?:do|does) {_WHO} work\b", rf"\bwhere (?:are|is) {_WHO} working\b",
    r"\b(?:which|what) company\b", rf"\bwho (?:do|does) {_WHO} work for\b"))
_SKILL_Q = re.compile(
    rf"\b(?:anyone|anybody|someone|somebody|who|do you|does anyone|does anybody|any of you)"
    rf"(?: here)?(?: \w+)? (?:know|knows|use|uses|good at|familiar with|experienced with|"
    rf"worked with|done|speak|speaks) (?P<skill>{SKILLS})", re.IGNORECASE)
# "anyone (else) into X?": the asker is, and a "yes" says the answerer is too
_INTEREST_Q = re.compile(
    r"\b(?:anyone|anybody|any of you|who)(?: else)?(?: here)? (?:(?:is|else) )?(?:really |also "
    r"|big |super )?(?:into|interested in|obsessed with|a fan of|passionate about) "
    r"(?P<topic>[\w+#' -]+?)\?+$", re.IGNORECASE)
_AGAIN = re.compile(r"^(?:what about|how about|and) (?:you|u)\b", re.IGNORECASE)
_ANSWER_NAME = re.compile(rf"^(?:(?:still|now|currently|in|at) )?(?P<name>{CAP})\b")


@dataclass(slots=True)
class _Question:
    author: str
    kind: str  # "yes_no", "LIVES_IN", "WORKS_AT", "HAS_SKILL"
    who: str  # "I" (the answerer), he / she, or a name
    text: str = ""  # yes_no: the statement; HAS_SKILL: the skill
    still: bool = False


class Dialogue:
    """The question a conversation's next message may answer."""

    def __init__(self) -> None:
        self._open: _Question | None = None
        self._last: _Question | None = None

    def statements(self, author: str, sentences: list[str]) -> list[str]:
        """What the message of `author` (its `sentences`) states as an answer, as sentences."""
        question, self._open = self._open, None
        if question is None or question.author == author or not sentences:
            return []
        first = sentences[0].strip()
        reply = _LEAD.sub("", first) or (sentences[1] if len(sentences) > 1 else "")
        if question.kind == "yes_no":
            if _YES.match(first) or _YES.match(reply):
                return [question.text]
            if question.still and _NO.match(first):
                return [_past(question.text)]
            return []
        if question.kind == "INTERESTED_IN":
            return [f"I am into {question.text}"] if (_YES.match(first) or _YES.match(reply)) \
                else []
        if question.kind == "HAS_SKILL":
            if _YES.match(first) or _YES.match(reply):
                return [f"I know {question.text}"]
            return []
        match = _ANSWER_NAME.match(reply)
        if not match or len(reply.split(",")[0].split()) > 5:
            return []
        name = match["name"]
        subject, verb = (("I", "live in") if question.who == "I" else (question.who, "lives in")) \
            if question.kind == "LIVES_IN" else \
            (("I", "work at") if question.who == "I" else (question.who, "works at"))
        return [f"{subject} {verb} {name}"]

    def saw(self, author: str, sentences: list[str]) -> list[str]:
        """Record the question `sentences` of `author` end on, if any; what the question says
        of its asker ("anyone else into sourdough?": the asker is), as sentences."""
        for asked in reversed(sentences):  # the last question that asks for a fact
            if asked.endswith("?") and (question := self._question(author, asked.strip())):
                self._open = self._last = question
                return [f"I am into {question.text}"] if question.kind == "INTERESTED_IN" else []
        return []

    def _question(self, author: str, text: str) -> _Question | None:
        if _AGAIN.match(text) and self._last is not None:
            last = self._last
            return _Question(author, last.kind, "I", last.text if last.kind == "HAS_SKILL"
                             else "", last.still) if last.kind != "yes_no" else None
        for kind, patterns in (("LIVES_IN", _LIVES_Q), ("WORKS_AT", _WORKS_Q)):
            if match := next((m for p in patterns if (m := p.search(text))), None):
                return _Question(author, kind, _who(match.groupdict().get("who")))
        if match := _INTEREST_Q.search(text):
            return _Question(author, "INTERESTED_IN", "I", match["topic"])
        if match := _SKILL_Q.search(text):
            skill = re.split(r",? and |, | or ", match["skill"])[0]
            return _Question(author, "HAS_SKILL", "I", skill)
        if match := _TAG.match(text):
            who = _who(match["who"])
            statement = f"{who} {_BE.get((match['aux'].lower(), who), match['aux'])} {match['rest']}"
            return _Question(author, "yes_no", who, statement)
        if match := _DECLARATIVE.match(text):
            rest = re.sub(r"^are\b", "am", re.sub(r"^were\b", "was", match["rest"]))
            return _Question(author, "yes_no", "I", f"I {rest}")
        if match := _YES_NO.match(text):
            who = _who(match["who"])
            aux, rest = match["aux"].lower(), match["rest"]
            if aux in ("do", "does", "did"):
                verb = rest if who == "I" else _THIRD.sub(r"\1s", rest).replace("studys", "studies")
                statement = f"{who} {verb}"
            else:
                statement = f"{who} {_BE.get((aux, who), aux)} {rest}"
            return _Question(author, "yes_no", who, statement, bool(match["still"]))
        return None


def _who(text: str | None) -> str:
    return _PRONOUN.get((text or "").lower(), text or "I")


def _past(statement: str) -> str:
    """"he is at Accenture" -> "he was at Accenture"; "I work at X" -> "I used to work at X"."""
    statement = re.sub(r"^(\S+) (?:am|is|are) ", r"\1 was ", statement)
    return re.sub(r"^(\S+) (work|works|live|lives)\b",
                  lambda m: f"{m[1]} used to {m[2].rstrip('s')}", statement)
