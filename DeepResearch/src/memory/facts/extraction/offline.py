"""The offline extractor: the rules of `patterns` over a conversation, in order.

Per sentence, every rule's matches are collected first (a match's object claims its text,
so "joined the Data team" is not also "joined Data"), then read in text order: subjects
and "there" resolve against what the conversation named before, time phrases and hedges are
read from the match's own stretch of the sentence. See `patterns` for the coverage table.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from DeepResearch.src.memory.facts.extraction.affiliations import (
    COLLEAGUE,
    colleagues,
    employer,
    subject_text,
)
from DeepResearch.src.memory.facts.extraction.answers import Dialogue
from DeepResearch.src.memory.facts.extraction.antecedents import Antecedents, guessed_type, names
from DeepResearch.src.memory.facts.extraction.clauses import (
    AFTERTHOUGHT,
    DENIAL,
    FREQUENCY,
    NEGATION,
    YEAR,
    asserted,
    hedge,
    sentences,
    times,
)
from DeepResearch.src.memory.facts.extraction.dates import find_time
from DeepResearch.src.memory.facts.extraction.fragments import (
    addressed,
    fill_subjects,
    truecase,
    untypo,
)
from DeepResearch.src.memory.facts.extraction.objects import (
    AUTHOR,
    GROUP_SHORT,
    PRONOUN,
    SKILL_IT,
    THERE,
    Candidate,
    clean_name,
    is_school,
    read_object,
)
from DeepResearch.src.memory.facts.extraction.patterns import (
    ADVERBS,
    BASE_FORMS,
    CAP,
    HINT_WORDS,
    HINTS,
    NP_END,
    RULES,
    Rule,
)
from DeepResearch.src.memory.facts.extraction.vocab import (
    CLOSE_RELATIONS,
    KNOWN_SKILLS,
    PROFICIENCY_WORDS,
    proficiency_for_years,
)
from DeepResearch.src.memory.facts.model import ExtractedFact, ExtractionResult, Message

MENTION_CONFIDENCE = 0.3
PLACE_OF = 0.7  # "works at X in Y": lives in Y
HEARSAY = 0.95  # what one person says of another
_ADVERBS = frozenset(ADVERBS)
_TRIGGERS = frozenset(trigger for rule in RULES for trigger in rule.triggers)
_RUN = re.compile(r"[a-z0-9#+]+")
_HINT_WORDS = tuple(None if words is None else re.compile("|".join(map(re.escape, words)))
                    for words in HINT_WORDS)


def _anchor(trigger: str) -> str | None:
    """The run of letters a trigger is looked up by, as the start of one of the sentence's
    words: the first that starts a word inside the trigger (" at " -> "at", "ing for" ->
    "for"), else its first ("liv" -> "liv": "living")."""
    runs = list(_RUN.finditer(trigger))
    inner = next((m[0] for m in runs if m.start() > 0), None)
    return inner or (runs[0][0] if runs else None)


_BY_ANCHOR: dict[str, list[str]] = {}
_LOOSE: list[str] = []  # triggers of punctuation only (",")
for _t in _TRIGGERS:
    if (_a := _anchor(_t)) is None:
        _LOOSE.append(_t)
    else:
        _BY_ANCHOR.setdefault(_a, []).append(_t)
_LENGTHS = sorted({len(anchor) for anchor in _BY_ANCHOR})
_RULES_OF: dict[str, tuple[int, ...]] = {  # trigger -> the rules (by priority) it runs
    t: tuple(i for i, rule in enumerate(RULES) if t in rule.triggers) for t in _TRIGGERS}


def _present(lower: str) -> set[str]:
    """The triggers in `lower` whose anchor starts one of its words (a trigger met only inside
    a word, "her" of "there", runs no rule: the rules match whole words)."""
    found = {t for t in _LOOSE if t in lower}
    for word in set(_RUN.findall(lower)):
        for n in _LENGTHS:
            if n > len(word):
                break
            for trigger in _BY_ANCHOR.get(word[:n], ()):
                if trigger in lower:
                    found.add(trigger)
    return found
_CLOSE_HOW = ("close", "best friends", "good friends", "close friends", "grew up together",
              "are roommates")
_IN_PLACE = re.compile(rf" in (?:the )?(?P<place>{CAP}){NP_END}")
_WORD = re.compile(r"[A-Za-z][\w+#]*")


def _skills_named(text: str) -> str | None:
    """The last known skill named in `text` ("React Native" before "React")."""
    words, found = _WORD.findall(text), None
    for i, word in enumerate(words):
        pair = f"{word} {words[i + 1]}" if i + 1 < len(words) else ""
        if pair.lower() in KNOWN_SKILLS:
            found = pair
        elif word.lower() in KNOWN_SKILLS and not (found and found.endswith(" " + word)):
            found = word
    return found


_COUPLE = ("are dating", "are married", "are engaged", "got married", "got engaged",
           "have been together", "live together", "are cousins", "are siblings",
           "are brothers", "are sisters", "are twins", "are partners", "are housemates",
           "are flatmates",
           "broke up", "split up", "got divorced", "are divorced", "used to date",
           "used to be together", "used to be close", "used to be best friends")
_INTEREST_STRONG = ("interested", "passionate", "fascinated", "obsessed")
_INTEREST_WEAK = ("curious", "excited")


@dataclass(slots=True)
class _Context:
    """What the conversation has named so far (for "there", "he"/"she" and types)."""

    last_org: str | None = None
    last_place: str | None = None
    recent: deque[tuple[int, str]] = field(default_factory=lambda: deque(maxlen=30))
    groups: dict[str, str] = field(default_factory=dict)  # first word -> a group named
    messages: int = 0  # messages read so far
    types: dict[str, str] = field(default_factory=dict)
    people: Antecedents = field(default_factory=Antecedents)

    def saw(self, name: str, type_: str | None) -> None:
        if type_ is None or (type_ == "Person" and name.lower() in KNOWN_SKILLS):
            return  # "Our architect is Kafka" leaves Kafka no antecedent of "he"
        self.types.setdefault(name.lower(), type_)
        if type_ == "Organization":
            self.last_org = name
        elif type_ == "Location":
            self.last_place = name


@dataclass(slots=True)
class _Hit:
    rule: Rule | None  # None: a hint ("at Stripe", "Dana is our CTO") that only types a name
    match: re.Match[str]
    candidates: list[Candidate]


class OfflineExtractor:
    """Rules over one conversation; `extract` may be called for successive batches."""

    def __init__(self, *, mentions: bool = True, author_type: str = "Person",
                 mention_type: str | None = None) -> None:
        """`author_type`: the type of a message's author as a subject (a document read as a
        message is no Person); `mention_type`: the type of a name mentioned that nothing
        typed before (None: guessed from the name)."""
        self.mentions = mentions
        self.author_type = author_type
        self.mention_type = mention_type
        self.context = _Context()
        self.dialogue = Dialogue()

    def extract(self, messages: Sequence[Message]) -> ExtractionResult:
        result = ExtractionResult()
        for message in messages:
            facts: dict[tuple[Any, ...], ExtractedFact] = {}
            parts = sentences(message.content)
            if self.author_type == "Person":  # a document's title is no speaker of its lines
                answered = self.dialogue.statements(message.author_name, parts)
                for statement in answered:  # "yes, since 2019" read with its question
                    for fact in self._sentence(statement, message, result.problems):
                        facts.setdefault((fact.subject.lower(), fact.predicate,
                                          fact.object.lower(), fact.invalid_at), fact)
                parts = [fill_subjects(truecase(addressed(untypo(part))), message.author_name,
                                       self.context.types) for part in parts]
            for sentence in parts:
                for fact in self._sentence(sentence, message, result.problems):
                    key = (fact.subject.lower(), fact.predicate, fact.object.lower(),
                           fact.invalid_at)
                    if key not in facts or facts[key].confidence < fact.confidence:
                        facts[key] = fact
                self.context.people.sentence_done(sentence)
                self.context.recent.append((self.context.messages, sentence))
            if self.author_type == "Person":  # "anyone else into sourdough?": the asker is
                for statement in self.dialogue.saw(message.author_name, parts):
                    for fact in self._sentence(statement, message, result.problems):
                        facts.setdefault((fact.subject.lower(), fact.predicate,
                                          fact.object.lower(), fact.invalid_at), fact)
            if self.mentions:
                self._mentions(message, parts, facts)
            result.facts.extend(facts.values())
            self.context.messages += 1
        return result

    # --- one sentence -------------------------------------------------------------------
    def _hits(self, sentence: str) -> list[_Hit]:
        hits: list[_Hit] = []
        claimed: list[tuple[int, int]] = []
        lower = sentence.lower()
        chosen = sorted({i for trigger in _present(lower) for i in _RULES_OF.get(trigger, ())})
        for rule in (RULES[i] for i in chosen):
            for match in rule.pattern.finditer(sentence):
                span = match.span("obj") if match.groupdict().get("obj") else match.span()
                if any(a < span[1] and span[0] < b for a, b in claimed):
                    continue
                candidates = read_object(rule.obj, rule.predicate, match.groupdict())
                if candidates:
                    hits.append(_Hit(rule, match, candidates))
                    if match.groupdict().get("obj"):
                        claimed.append(span)
        for (pattern, type_), words in zip(HINTS, _HINT_WORDS, strict=True):
            if words is not None and not words.search(lower):
                continue
            for match in pattern.finditer(sentence):
                if not any(a < match.end("obj") and match.start("obj") < b for a, b in claimed):
                    hits.append(_Hit(None, match, [("", clean_name(match["obj"]), type_)]))
        hits.sort(key=lambda hit: hit.match.start())
        return hits

    def _sentence(self, sentence: str, message: Message, problems: list[str]) -> list[ExtractedFact]:
        hits = self._hits(sentence)
        question = sentence.endswith("?")
        facts: list[ExtractedFact] = []
        previous: list[tuple[str, bool]] = []
        starts = [hit.match.start() for hit in hits if hit.rule] + [len(sentence)]
        seg_start = clause_start = 0
        for hit in hits:
            if hit.rule is None:
                _, name, type_ = hit.candidates[0]
                if name and self.context.types.get(name.lower()) in (None, type_):
                    self.context.saw(name, type_)
                continue
            match = hit.match
            seg_end = next((s for s in starts if s > match.start()), len(sentence))
            region = sentence[seg_start:match.end()].lower()
            tail = sentence[match.end():seg_end]
            if seg_end == len(sentence) and AFTERTHOUGHT.match(tail):
                region += tail.lower()  # "Bob knows Rust, I think."
            segment = sentence[min(seg_start, match.start()):max(seg_end, match.end())]
            said = asserted(match, clause_start) and not DENIAL.search(region)
            seg_start, clause_start = match.end(), match.start()
            subjects = self._subjects(match, message, previous)
            # a supposed or denied clause lends its subject to none after it
            previous = self._carried(hit, subjects, previous, message) if said else []
            if question or not said or not subjects or self._negated(hit) or self._disagrees(match):
                continue
            facts.extend(self._facts(hit, subjects, segment, region, message, problems))
            facts.extend(self._employer(match, subjects, region, message))
        return facts

    def _skill_named(self, before: str) -> str | None:
        """The skill "it" means: the last known one in `before`, or in the last two messages."""
        if named := _skills_named(before):
            return named
        for index, sentence in reversed(self.context.recent):
            if self.context.messages - index > 4:
                break
            if named := _skills_named(sentence):
                return named
        return None

    @staticmethod
    def _disagrees(match: re.Match[str]) -> bool:
        """A single named subject (or he / she) with a plural verb form: no subject at all."""
        subject = match.groupdict().get("subj")
        if not subject or " and " in subject or subject.lower() in ("i", "we"):
            return False
        following = (w.lower() for w in match.string[match.end("subj"):].split())
        return next((w for w in following if w not in _ADVERBS), "") in BASE_FORMS

    @staticmethod
    def _negated(hit: _Hit) -> bool:
        match = hit.match
        if hit.rule is not None and hit.rule.negatable:
            groups = match.groupdict()
            return bool(groups.get("neg")) and not groups.get("anymore")
        return bool(NEGATION.search(match.group(0)))

    def _carried(self, hit: _Hit, subjects: list[tuple[str, bool]],
                 previous: list[tuple[str, bool]], message: Message) -> list[tuple[str, bool]]:
        """Whom a subject left out in the sentence's next clause ("... and knows Rust") means:
        this clause's grammatical subject, even one that names no one (an unresolved "he"
        carries no one); after a clause without one ("my friend Bob") the one before, or the
        author."""
        groups = hit.match.groupdict()
        if "a" in groups:  # "Bob and I collaborate weekly and live in Paris": both
            return subjects + self._resolve(hit.match, "b", message)
        if "subj" in groups:
            return subjects
        if hit.rule is not None and hit.rule.name == "rel_is":  # "Ann is my manager and ..."
            return [(hit.candidates[0][1], False)]
        return previous or subjects

    def _subjects(self, match: re.Match[str], message: Message,
                  previous: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
        """(name, is_pronoun) of the match's subject(s); [] when it cannot be resolved."""
        groups = match.groupdict()
        if "subj" not in groups and "a" not in groups:
            return [(message.author_name, False)]  # "my friend Bob", "my hobby is ..."
        key = "subj" if "subj" in groups else "a"
        if not groups.get(key):
            return previous if key == "subj" else []
        return self._resolve(match, key, message)

    def _resolve(self, match: re.Match[str], key: str, message: Message) -> list[tuple[str, bool]]:
        """(name, is_pronoun) of the subject in the match's group `key`."""
        found: list[tuple[str, bool]] = []
        for part in subject_text(match, key).split(" and "):
            lower = part.strip().lower()
            if lower in ("i", "me", "we", "us", "my"):
                found.append((message.author_name, False))
            elif lower in ("he", "she", "his", "her", "him"):
                lower = {"his": "he", "her": "she", "him": "he"}.get(lower, lower)
                if person := self.context.people.resolve(
                        lower, match.string[:match.start(key)], message.author_name,
                        self.context.types):
                    found.append((person, True))
            elif (name := clean_name(part)) and name.lower() not in KNOWN_SKILLS:
                found.append((message.author_name if name.lower() == "i" else name, False))
        return found

    def _facts(self, hit: _Hit, subjects: list[tuple[str, bool]], segment: str, region: str,
               message: Message, problems: list[str]) -> list[ExtractedFact]:
        rule, groups = hit.rule, hit.match.groupdict()
        assert rule is not None
        t = find_time(segment, message.timestamp)
        certainty = hedge(region)
        tense = rule.tense
        if groups.get("neg") and groups.get("anymore"):
            tense = "end"  # "I'm not on the infra team anymore"
        elif groups.get("past") or groups.get("past2"):
            tense = "past"
        elif groups.get("now"):
            tense = "present"
        frequency = m[0] if (m := FREQUENCY.search(segment.lower())) else None
        out: list[ExtractedFact] = []
        for predicate, obj, obj_type in hit.candidates:
            if rule.obj == "pair":  # "Bob and I": the author is the subject
                obj = message.author_name if obj.lower() in ("i", "me") else clean_name(obj)
                if obj == message.author_name and subjects[0][0] != obj:
                    subjects, obj = [(obj, False)], subjects[0][0]
            if obj == AUTHOR:
                obj = message.author_name
            elif obj.startswith(GROUP_SHORT):
                obj = self.context.groups.get(obj[len(GROUP_SHORT):], "")
                if not obj:
                    continue
            elif obj == SKILL_IT:
                obj = self._skill_named(hit.match.string[:hit.match.start("obj")]) or ""
                if not obj:
                    continue
            elif obj.startswith(PRONOUN):
                found = self.context.people.resolve(
                    obj[len(PRONOUN):], hit.match.string[:hit.match.start("obj")],
                    message.author_name, self.context.types)
                if found is None:
                    continue
                obj = found
            if obj == THERE:
                obj = self.context.last_place if obj_type == "Location" else self.context.last_org
                if obj is None:
                    problems.append(f"message {message.message_id}: 'there' in {hit.match[0]!r} "
                                    "names no place or organisation mentioned before; skipped")
                    continue
            confidence, attrs, pred, p_tense = rule.confidence, {"rule": rule.name}, predicate, tense
            if role := (groups.get("role") or groups.get("role2")):
                attrs["role"] = role.strip().lower() if not role.isupper() else role
                confidence += 0.03 if pred == "WORKS_AT" else 0.0
                if any(word in attrs["role"] for word in ("student", "undergrad", "phd candidate")):
                    pred = "STUDIED_AT"
            if pred == "WORKS_AT" and p_tense == "past":
                pred = "WORKED_AT"
            if groups.get("perf") and t.start is None and not t.years:
                pred, p_tense, confidence = "WORKED_AT", "past", 0.8
            if pred in ("KNOWS", "CLOSE_TO") and self.context.types.get(obj.lower()) in (
                    "Location", "Organization"):
                continue  # "I know Berlin well": a place named before, no person
            if rule.name in ("joined_org", "left_org") and obj.lower() in KNOWN_SKILLS:
                continue  # "joined Slack", "left Excel open": a tool, not an employer
            if rule.name == "be_at" and is_school(obj):  # "I was at CMU too"
                pred, p_tense = "STUDIED_AT", "present"
            if rule.name == "left_for":  # "left Boston for SF": a home; "left Acme for X": a job
                left = self.context.types.get(clean_name(groups["from"]).lower())
                if left == "Location" or self.context.types.get(obj.lower()) == "Location":
                    pred, obj_type = "LIVES_IN", "Location"
                elif obj.lower() in KNOWN_SKILLS:
                    continue
            if rule.name in ("left_org", "change_from", "came_from") and (
                    self.context.types.get(obj.lower()) == "Location"):
                if rule.name == "came_from":
                    continue  # "she comes to us from Spain"
            if rule.name == "left_org" and self.context.types.get(obj.lower()) == "Location":
                pred, obj_type, confidence = "LIVES_IN", "Location", 0.8
            if pred == "HAS_SKILL" and (groups.get("subj") or "").lower() in ("we", "us"):
                continue  # "we used Postgres for the demo": a team's use, no one's skill
            if pred == "HAS_SKILL":
                years = t.years
                if years is None and t.start is not None:
                    years = round((message.timestamp - t.start) / YEAR, 1)
                if years is not None and years > 0:
                    attrs["years"] = years
                    attrs["proficiency"] = proficiency_for_years(years)
                    confidence += 0.04
                if prof := groups.get("prof"):
                    attrs["proficiency"] = PROFICIENCY_WORDS[prof]
                if rule.name == "skill_learn":
                    attrs["proficiency"] = "beginner"
            elif t.years and pred in ("WORKS_AT", "WORKED_AT", "LIVES_IN", "STUDIED_AT"):
                attrs["years"] = t.years
            if how := groups.get("how"):
                if pred == "CLOSE_TO" and how == "friends":
                    confidence = 0.7
                if pred == "INTERESTED_IN":
                    confidence = (0.88 if how.startswith(_INTEREST_STRONG) else
                                  0.75 if how.startswith(_INTEREST_WEAK) else 0.82)
            if rel := groups.get("rel"):
                attrs["relation"] = ((groups.get("adj") or "") + rel).strip().lower()
            for key in ("field", "degree"):
                if groups.get(key):
                    attrs[key] = re.sub(r"^in ", "", groups[key].strip())
            # the subjects (a pronoun: 0.9), then whom they work with there ("with Bob at X")
            said_of = [(s, 0.9 if pronoun else 1.0) for s, pronoun in subjects]
            said_of += [(name, COLLEAGUE) for name in colleagues(groups)]
            for subject, weight in said_of:
                if subject.lower() == obj.lower():
                    continue
                # how sure the sentence is: hedges, who is meant, one person telling of another
                factor = certainty * weight
                if subject != message.author_name:
                    factor *= HEARSAY
                    self.context.saw(subject, "Person")  # "he" / "she" next
                valid_at, invalid_at = times(p_tense, pred, t, message.timestamp)
                out.append(self._fact(subject, pred, obj, obj_type, confidence * factor, attrs,
                                      message, valid_at, invalid_at))
                out.extend(self._close_to(rule, groups, subject, obj, factor, frequency, message))
                out.extend(self._place_of(hit, pred, p_tense, subject, factor, t, message))
                out.extend(self._shared_skill(hit, pred, subject, obj, confidence * factor,
                                              message))
            self.context.saw(obj, obj_type)
            if pred == "MEMBER_OF" and " " in obj:  # "platform team": "on platform" later
                self.context.groups.setdefault(obj.split()[0].lower(), obj)
        return out

    def _shared_skill(self, hit: _Hit, pred: str, subject: str, skill: str, confidence: float,
                      message: Message) -> list[ExtractedFact]:
        """What a skill said of another says of the author: "Theo taught me Kubernetes" (the
        author knows it, and knows Theo), "Beatriz knows it better than me" (the author knows
        it too)."""
        author = message.author_name
        if pred != "HAS_SKILL" or subject == author:
            return []
        tail = hit.match.string[hit.match.end():hit.match.end() + 30].lower()
        if hit.rule is not None and hit.rule.name == "taught_me":
            return [self._fact(author, "HAS_SKILL", skill, "Skill", confidence,
                               {"rule": "taught_me"}, message, message.timestamp, None),
                    self._fact(author, "KNOWS", subject, "Person", confidence,
                               {"rule": "taught_me"}, message, message.timestamp, None)]
        if re.match(r"\s*(?:\w+ ){0,2}better than (?:me|I do)\b", tail):
            return [self._fact(author, "HAS_SKILL", skill, "Skill", confidence * 0.9,
                               {"rule": "better_than_me"}, message, message.timestamp, None)]
        return []

    def _place_of(self, hit: _Hit, pred: str, tense: str, subject: str, factor: float,
                  t: Any, message: Message) -> list[ExtractedFact]:
        """Where one works or studies, said with it ("a postdoc at EPFL in Lausanne", "at
        Grab in Singapore"): the place one lives (or lived), at PLACE_OF times the fact's
        sureness; not for a job only begun ("got a job at X in Milan": a move to come)."""
        if pred not in ("WORKS_AT", "WORKED_AT", "STUDIED_AT") or tense not in (
                "present", "past") or not hit.match.groupdict().get("obj"):
            return []
        after = _IN_PLACE.match(hit.match.string, hit.match.end("obj"))
        if not after:
            return []
        place = clean_name(after["place"])
        if not place or place.lower() in KNOWN_SKILLS or self.context.types.get(
                place.lower(), "Location") != "Location":
            return []
        past = tense == "past" or pred == "WORKED_AT"
        valid_at, invalid_at = times("past" if past else "present", "LIVES_IN", t,
                                     message.timestamp)
        self.context.saw(place, "Location")
        return [self._fact(subject, "LIVES_IN", place, "Location", PLACE_OF * factor,
                           {"rule": "place_of_work"}, message, valid_at, invalid_at)]

    def _employer(self, match: re.Match[str], subjects: list[tuple[str, bool]], region: str,
                  message: Message) -> list[ExtractedFact]:
        """The WORKS_AT of a subject named with its organisation ("Sarah at Acme knows SQL")."""
        found = employer(match, self.context.types)
        if found is None or not subjects:
            return []
        (org, confidence), subject = found, subjects[0][0]
        self.context.saw(org, "Organization")
        return [self._fact(subject, "WORKS_AT", org, "Organization",
                           confidence * hedge(region) * HEARSAY, {"rule": "affiliation"},
                           message, message.timestamp, None)]

    def _close_to(self, rule: Rule, groups: dict[str, Any], subject: str, obj: str,
                  factor: float, frequency: str | None, message: Message) -> list[ExtractedFact]:
        """The CLOSE_TO (or KNOWS) that comes with a KNOWS (or CLOSE_TO); `factor` is the
        sentence's certainty (hedges, pronoun, hearsay)."""
        how, rel = (groups.get("how") or ""), (groups.get("rel") or "").lower()
        close, attrs = 0.0, {"rule": rule.name}
        if rule.name == "close_with":  # friends know each other
            return [self._fact(subject, "KNOWS", obj, "Person", 0.85 * factor, attrs, message,
                               message.timestamp, None)]
        if rule.predicate != "KNOWS" or (rule.name in ("met",) and not frequency):
            return []
        if rel:
            attrs["relation"] = ((groups.get("adj") or "") + rel).strip()
            if rel in CLOSE_RELATIONS or attrs["relation"] in CLOSE_RELATIONS:
                close = 0.8
            elif rel == "friend":
                close = 0.7
        elif any(word in how for word in _CLOSE_HOW) or (
                how.startswith("are ") and how.endswith(" together")) or how in _COUPLE:
            close = 0.85
        elif "friends" in how:
            close = 0.7
        if frequency and not close:
            close = 0.75 if rule.name == "pair" else 0.7
            attrs["frequency"] = frequency
        if not close:
            return []
        if groups.get("past"):  # "Sam and I broke up": close before, no longer
            return [self._fact(subject, "CLOSE_TO", obj, "Person", close * factor, attrs,
                               message, None, message.timestamp)]
        return [self._fact(subject, "CLOSE_TO", obj, "Person", close * factor, attrs, message,
                           message.timestamp, None)]

    def _fact(self, subject: str, predicate: str, obj: str, obj_type: str | None, conf: float,
              attrs: dict[str, Any], message: Message, valid_at: float | None,
              invalid_at: float | None) -> ExtractedFact:
        author = subject == message.author_name
        if valid_at is not None and invalid_at is not None and invalid_at <= valid_at:
            invalid_at = None  # "since 2025" said of a past stay: keep the start only
        return ExtractedFact(
            subject=subject, predicate=predicate, object=obj, evidence=message.message_id,
            confidence=round(min(conf, 0.99), 2),
            subject_type=self.author_type if author else "Person", object_type=obj_type,
            attributes=dict(attrs), valid_at=valid_at, invalid_at=invalid_at,
        )

    # --- names mentioned --------------------------------------------------------------
    def _mentions(self, message: Message, sentences: list[str],
                  facts: dict[tuple[Any, ...], ExtractedFact]) -> None:
        named = {message.author_name.lower()} | {k[0] for k in facts} | {k[2] for k in facts}
        for fact in facts.values():  # words of a role / field / degree are no names
            named.update(str(v).lower() for v in fact.attributes.values())
            named.update(w for v in fact.attributes.values() for w in str(v).lower().split())
        for sentence in sentences:
            for name, start in names(sentence, self.context.types):
                lower = name.lower()
                if any(lower in n for n in named):
                    continue  # "Rome" of the topic "history of Rome" is named already
                named.add(lower)
                known = self.context.types.get(lower) or self.mention_type
                type_ = known or guessed_type(sentence, start, name)
                facts[(message.author_name.lower(), "MENTIONED", name.lower(), None)] = self._fact(
                    message.author_name, "MENTIONED", name, type_, MENTION_CONFIDENCE,
                    {"rule": "mention"}, message, message.timestamp, None)
                if known or type_ != "Person":  # a guessed person stays a guess (antecedents)
                    self.context.saw(name, type_)
