"""Reading a conversation without a model: its messages, entities, questions and goal, and
for each question the fact-tool calls that may answer it (the rules planner's agenda).

Each question is matched against a short list of intents, first match wins:

  relationship   "how do Alice and Bob know each other", "does Alice know Bob"
                 -> get_relationships_between(a, b)
  experts        "who should I ask about X", "who is an expert in X", "who can help with X"
                 -> find_experts(X), then find_people_by_skill, find_people_by_topic
  who_knows      "who knows X" -> get_person_profile(X) (it holds the facts naming X); X not
                 a known person: then find_people_by_skill(X), find_experts(X); X a known
                 person (an author): also get_relationships_between(asker, X)
  skill          "who has experience with X", "who is good at X" -> find_people_by_skill(X)
  organization   "who works at X" -> find_people_by_organization(X, current_only=True),
                 then current_only=False; "who worked at X", "anyone work at X?" -> only
                 current_only=False (past members too)
  employment     "didn't Charlie work there?", "has Charlie ever worked at X?" ("there": the
                 latest name before the question that is not a person)
                 -> get_person_profile(Charlie, fact_types=[WORKS_AT, WORKED_AT],
                 include_history=True), and a second need: find_people_by_organization(X)
  location       "who lives in X", "who is based in X" -> find_people_by_location(X)
  topic          "who is interested in X", "who is working on X" -> find_people_by_topic(X)
  timeline       "where did Alice work before", "Alice's career since 2020"
                 -> get_person_timeline(Alice, start_date, end_date)
  person         "where does Alice work", "tell me about Alice", "who is Alice"
                 -> get_person_profile(Alice), then get_person_timeline(Alice) when the
                 profile has nothing the question asks about (an ended job)
  participants   "who is in this channel" -> get_conversation_participants(channel_id); with a
                 channel_id and no such question, the same call as context ("channel" need)

Every need ends with semantic_search_facts over its words (current facts, then ended ones
too) and, with a client, the hybrid memory retrieval (search_memory) as fallbacks; a
question about the past (asks_past) starts with the history; a conversation with no question gets one
need over its last message. When no intent is recognised, up to 3 names the conversation
mentions get a profile lookup each ("mention" needs).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from DeepResearch.src.memory.agent.retrieval.types import ConversationAnalysis, Need, PlannedCall


@dataclass(frozen=True, slots=True)
class Turn:
    author: str | None
    content: str


def read_messages(messages: Iterable[Any] | str) -> list[Turn]:
    """Accepts a string, strings, mappings ({"content"/"text", "author_name"/"author"/"name"/
    "role"}) or objects with `.content` (facts.model.Message, pydantic-ai parts)."""
    if isinstance(messages, str):
        messages = [messages]
    turns: list[Turn] = []
    for message in messages:
        if isinstance(message, str):
            content, author = message, None
        elif isinstance(message, Mapping):
            content = message.get("content") or message.get("text") or ""
            author = (message.get("author_name") or message.get("author") or message.get("name")
                      or message.get("user"))
        else:
            content = getattr(message, "content", None) or getattr(message, "text", None) or ""
            author = getattr(message, "author_name", None) or getattr(message, "author", None)
        if not isinstance(content, str):
            content = str(content)
        if content.strip():
            turns.append(Turn(str(author) if author else None, content.strip()))
    return turns


# Words that start questions or sentences and are never entities.
_STOP = {
    "i", "i'm", "im", "i've", "we", "you", "he", "she", "they", "it", "the", "a", "an", "and",
    "or", "but", "so", "who", "whom", "whose", "what", "where", "when", "why", "how", "which",
    "should", "could", "would", "can", "does", "do", "did", "is", "are", "was", "were", "has",
    "have", "had", "will", "tell", "me", "please", "hey", "hi", "hello", "thanks", "anyone",
    "someone", "any", "this", "that", "there", "here", "our", "my", "your", "ok", "okay",
    "yes", "no", "also", "let", "let's", "if", "in", "on", "at", "for", "with", "about", "to",
    "didn't", "doesn't", "don't", "isn't", "wasn't", "hasn't", "hadn't", "weren't", "aren't",
    "yeah", "yep", "nope", "well", "oh",
}
_X = r"(?P<x>[\w#+.\-/' ]+?)"
_A = r"(?P<a>[\w'\- ]+?)"
_B = r"(?P<b>[\w'\- ]+?)"
_AUX = r"(?:did|didn't|didnt|does|doesn't|doesnt|has|hasn't|had|hadn't|was|wasn't|is|isn't)"
_JOB = r"(?:work|worked|working|employed|intern|interned)"
_END = (r"\s*(?:[?!.,;:]|\s+(?:now|currently|today|these days|right now|at the moment|before|"
        r"previously|in the past|ever|already|here|well)\b|$)")

_INTENTS: list[tuple[str, re.Pattern[str]]] = [
    (kind, re.compile(pattern, re.I))
    for kind, pattern in [
        ("relationship", rf"relationship between {_A} and {_B}{_END}"),
        ("relationship", rf"how (?:do|did|does) {_A} and {_B} know each other"),
        ("relationship", rf"how (?:is|are|was) {_A} (?:related|connected) to {_B}{_END}"),
        ("relationship", rf"\b(?:does|do|did) {_A} know {_B}{_END}"),
        ("organization_any", rf"\b(?:anyone|anybody|someone|somebody|people)(?: here| else)? (?:ever )?(?:work|works|worked|working|employed) (?:at|for) {_X}{_END}"),
        ("employment", rf"\b{_AUX} {_A} (?:ever |once |also |previously |formerly |use to |used to )?{_JOB} (?:at|for|in) {_X}{_END}"),
        ("employment", rf"\b{_AUX} {_A} (?:ever |once |also |previously |formerly |use to |used to )?{_JOB} there\b"),
        ("experts", rf"who (?:should|could|can|do|would|might) (?:i|we) (?:ask|talk to|contact|consult|ping|reach out to) (?:about|on|for|regarding|re) {_X}{_END}"),
        ("experts", rf"who(?:'s| is| are)? (?:an? |the )?(?:experts?|go-to person|go-to|best person|specialists?|gurus?) (?:in|on|for|at|with|about) {_X}{_END}"),
        ("experts", rf"\bexperts? (?:in|on|for|about) {_X}{_END}"),
        ("experts", rf"who can help (?:me |us )?(?:with|on|out with) {_X}{_END}"),
        ("experts", rf"who knows (?:about|a lot about|the most about|anything about|much about) {_X}{_END}"),
        ("who_knows", rf"who (?:knows|knew) {_X}{_END}"),
        ("skill", rf"who (?:has|have) (?:any )?(?:experience|skills?|background) (?:with|in) {_X}{_END}"),
        ("skill", rf"who (?:has|have) {_X} (?:skills?|experience){_END}"),
        ("skill", rf"who (?:is|are) (?:good|skilled|proficient|fluent|strong) (?:at|in|with) {_X}{_END}"),
        ("skill", rf"who (?:can|could) (?:code|program|write|develop) (?:in |with )?{_X}{_END}"),
        ("skill", rf"who (?:uses|has used|used)(?! to\b) {_X}{_END}"),
        ("skill", rf"(?:anyone|someone|anybody)(?: here)? (?:good|skilled|proficient|experienced) (?:at|in|with) {_X}{_END}"),
        ("organization_past", rf"who (?:used to work|worked|has worked|have worked|previously worked|ever worked) (?:at|for|with) {_X}{_END}"),
        ("organization", rf"who (?:works|work|is working|are working|is employed) (?:at|for) {_X}{_END}"),
        ("organization", rf"(?:anyone|people|who else|someone|colleagues) (?:at|from) {_X}{_END}"),
        ("location", rf"who (?:lives|live|is based|are based|is located|is living|resides) (?:in|near|around) {_X}{_END}"),
        ("location", rf"(?:anyone|people|who) (?:based|living|located) (?:in|near) {_X}{_END}"),
        ("topic", rf"who (?:is|are|was) (?:interested in|into|curious about|passionate about|working on|excited about) {_X}{_END}"),
        ("topic", rf"who cares about {_X}{_END}"),
        ("participants", r"who (?:is|was|are|were|'s) (?:in|part of|participating in|active in|talking in|here in) (?:this|the) (?:channel|conversation|thread|chat|discussion|room)"),
        ("participants", r"who(?:'s| is| are) here\b"),
        ("timeline", rf"where (?:did|has|had) {_A} (?:work|worked|live|lived|study|studied)\b"),
        ("timeline", rf"\b{_A}'s (?:history|career|timeline|background|past jobs|work history)\b"),
        ("timeline", rf"what (?:did|has) {_A} (?:do|done|work on|worked on) (?:before|previously|in the past|since|until|between)"),
        ("person", rf"where (?:does|is) {_A} (?:work|working|live|living|based|located|study|studying){_END}"),
        ("person", rf"tell me (?:more )?about {_A}{_END}"),
        ("person", rf"who (?:is|was) {_A}{_END}"),
        ("person", rf"what (?:does|is) {_A} (?:do|doing|know|work on|working on|good at|skilled in|interested in){_END}"),
        ("person", rf"what (?:is|are) {_A}'s\b"),
        ("person", rf"\b{_A}'s (?:skills|job|role|employer|company|location|interests|profile)\b"),
    ]
]

# A question about the past: its answer may be a fact that has ended.
_PAST = re.compile(r"\b(?:did|didn't|didnt|was|wasn't|were|weren't|had|hadn't|used to|previously|"
                   r"formerly|before|ever|in the past|once|worked|lived|studied|left|quit)\b", re.I)


def asks_past(question: str) -> bool:
    """The question asks about the past ("didn't Charlie work there?", "who used to ...")."""
    return bool(_PAST.search(question))


MAX_MENTIONED = 3  # names looked up when no question's intent is recognised
_YEAR = re.compile(r"\b(19\d{2}|20\d{2})\b")


def _clean_phrase(text: str | None) -> str:
    if not text:
        return ""
    words = text.strip(" '\"?!.,;:").split()
    while words and words[0].casefold() in {"the", "a", "an", "some", "our", "my"}:
        words = words[1:]
    return " ".join(words)


def _year_epoch(year: int, end: bool = False) -> str:
    return datetime(year + (1 if end else 0), 1, 1, tzinfo=UTC).date().isoformat()


def time_window(text: str) -> tuple[str | None, str | None]:
    """(since, until) as ISO dates (the fact tools parse them) from "since 2020", "before 2022", "in 2019", "between
    2019 and 2022" / "from 2019 to 2022"; (None, None) when the text names no year."""
    lowered = text.casefold()
    years = [int(y) for y in _YEAR.findall(lowered)]
    if not years:
        return None, None
    if re.search(r"\b(?:between|from)\b", lowered) and len(years) >= 2:
        return _year_epoch(min(years)), _year_epoch(max(years), end=True)
    if re.search(r"\b(?:since|after)\b", lowered):
        return _year_epoch(years[0]), None
    if re.search(r"\b(?:before|until|till|up to)\b", lowered):
        return None, _year_epoch(years[0])
    return _year_epoch(years[0]), _year_epoch(years[0], end=True)


def find_entities(turns: list[Turn]) -> list[str]:
    """Capitalised words and runs of them that are not question or stop words, in order."""
    found: list[str] = []
    for turn in turns:
        for match in re.finditer(r"[A-Z][\w#+.\-]*(?:\s+[A-Z][\w#+.\-]*)*", turn.content):
            words = [w.strip(".,") for w in match.group(0).split()]
            while words and words[0].casefold() in _STOP:
                words = words[1:]
            name = " ".join(w for w in words if w)
            if name.endswith("'s"):
                name = name[:-2]
            if name and name.casefold() not in _STOP and name not in found:
                found.append(name)
    return found


def mid_sentence_names(turns: list[Turn]) -> list[str]:
    """The capitalised names written at least once inside a sentence (a sentence's first
    word is capitalised whatever it is), in order."""
    found: list[str] = []
    for turn in turns:
        for match in re.finditer(r"\b[A-Z][\w#+\-]*(?:\s+[A-Z][\w#+\-]*)*", turn.content):
            start = match.start()
            before = turn.content[:start].rstrip()
            if not before or before[-1] in ".!?":
                continue
            name = match.group(0).strip()
            if name.casefold() not in _STOP and not name.casefold().startswith("i'") and name not in found:
                found.append(name)
    return found


def find_questions(turns: list[Turn]) -> list[tuple[str, str | None]]:
    """(question, asker) pairs, the latest first."""
    questions: list[tuple[str, str | None]] = []
    wh = re.compile(r"^(?:who|what|where|when|which|how|does|do|did|is|are|can|could|should|tell me|anyone)\b", re.I)
    for turn in reversed(turns):
        parts = re.split(r"(?<=[?!.])\s+", turn.content)
        for part in reversed(parts):
            part = part.strip()
            if part.endswith("?") or wh.match(part):
                questions.append((part, turn.author))
    return questions


_FOCUS: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
    (re.compile(r"\b(?:work|works|worked|working|job|jobs|employ\w*|company|career|role)\b", re.I),
     ("WORKS_AT", "WORKED_AT")),
    (re.compile(r"\b(?:live|lives|lived|living|based|located|move[ds]?|from)\b", re.I), ("LIVES_IN",)),
    (re.compile(r"\b(?:study|studies|studied|school|university|college|degree)\b", re.I), ("STUDIED_AT",)),
    (re.compile(r"\b(?:skills?|good at|know|knows|expert|experience)\b", re.I), ("HAS_SKILL",)),
    (re.compile(r"\b(?:interest\w*|into|care about|passionate)\b", re.I), ("INTERESTED_IN",)),
    (re.compile(r"\b(?:team|member|group)\b", re.I), ("MEMBER_OF",)),
]


def focus_of(question: str) -> list[str]:
    """The predicates a question's words ask about ("where does Alice work" -> WORKS_AT, ...)."""
    found: list[str] = []
    for pattern, predicates in _FOCUS:
        if pattern.search(question):
            found += [p for p in predicates if p not in found]
    return found


def _fallbacks(text: str, with_memory: bool, past: bool = False) -> list[PlannedCall]:
    """Semantic search over current facts, then over ended ones too (a question a current
    fact cannot answer; a question about the past starts there), then the memories."""
    # similarity_threshold 0: every hit comes back and synthesis judges it (a hit naming what
    # is asked about is kept however far its sentence is; others need min_similarity)
    calls = [] if past else [PlannedCall(tool="semantic_search_facts", reason="facts near the words",
                                         arguments={"query": text, "similarity_threshold": 0.0})]
    calls.append(PlannedCall(tool="semantic_search_facts", reason="facts near the words, ended ones too",
                             arguments={"query": text, "similarity_threshold": 0.0, "include_history": True}))
    if with_memory:
        calls.append(PlannedCall(tool="search_memory", arguments={"query": text}, reason="hybrid memory retrieval"))
    return calls


def plan_need(
    question: str,
    asker: str | None,
    people: list[str],
    channel_id: str | None,
    with_memory: bool,
    context: list[str] | None = None,
) -> list[Need]:
    """The needs one question expresses (one, or two for "who knows <a person>" and "didn't
    <a person> work at <X>"), each with its calls; empty for no recognised intent.
    `context`: the names written before the question, oldest first ("there" is the latest
    one that is not a person)."""
    extra: list[Need] = []
    past = asks_past(question)
    for kind, pattern in _INTENTS:
        match = pattern.search(question)
        if not match:
            continue
        groups = match.groupdict()
        x = _clean_phrase(groups.get("x"))
        a, b = _clean_phrase(groups.get("a")), _clean_phrase(groups.get("b"))
        calls: list[PlannedCall]
        subject = x or a
        if kind == "relationship" and a and b:
            subject = f"{a} and {b}"
            calls = [
                PlannedCall(tool="get_relationships_between", arguments={"person_a": a, "person_b": b}),
                PlannedCall(tool="get_person_profile", arguments={"person": a}),
                PlannedCall(tool="get_person_profile", arguments={"person": b}),
            ]
        elif kind == "experts" and x:
            calls = [
                PlannedCall(tool="find_experts", arguments={"query": x}),
                PlannedCall(tool="find_people_by_skill", arguments={"skill": x}),
                PlannedCall(tool="find_people_by_topic", arguments={"topic": x}),
            ]
        elif kind == "who_knows" and x:
            # X's profile holds the facts naming X (Alice KNOWS X); for a skill it finds no
            # person and the skill lookups follow. When X is known to be a person (an author)
            # and someone asks, how the asker relates to X is a second need.
            calls = [PlannedCall(tool="get_person_profile", arguments={"person": x})]
            if any(x.casefold() == p.casefold() for p in people):
                if asker and asker.casefold() != x.casefold():
                    extra.append(Need(question=f"how {asker} relates to {x}", kind="relationship",
                                      subject=x, focus=["KNOWS", "CLOSE_TO"], calls=[
                                          PlannedCall(tool="get_relationships_between",
                                                      arguments={"person_a": asker, "person_b": x})]))
            else:
                calls += [
                    PlannedCall(tool="find_people_by_skill", arguments={"skill": x}),
                    PlannedCall(tool="find_experts", arguments={"query": x}),
                ]
        elif kind == "skill" and x:
            calls = [
                PlannedCall(tool="find_people_by_skill", arguments={"skill": x}),
                PlannedCall(tool="find_experts", arguments={"query": x}),
            ]
        elif kind in ("organization", "organization_past", "organization_any") and x:
            # Who works there now, then (when nobody does, or the question is about the past
            # or open about time: "anyone work at X?") who ever did.
            calls = [PlannedCall(tool="find_people_by_organization",
                                 arguments={"organization": x, "current_only": False})]
            if kind == "organization" and not past:
                calls.insert(0, PlannedCall(tool="find_people_by_organization",
                                            arguments={"organization": x, "current_only": True}))
            kind = "organization"
        elif kind == "employment" and a:
            if not x:  # "didn't Charlie work there?": the latest place named before
                known = {p.casefold() for p in people} | {a.casefold()}
                x = next((e for e in reversed(context or []) if e.casefold() not in known), "")
            subject = a
            calls = [PlannedCall(tool="get_person_profile", arguments={
                "person": a, "fact_types": ["WORKS_AT", "WORKED_AT"], "include_history": True})]
            if x:
                extra.append(Need(question=f"who works or worked at {x}", kind="organization", subject=x,
                                  calls=[PlannedCall(tool="find_people_by_organization",
                                                     arguments={"organization": x, "current_only": False}),
                                         *_fallbacks(x, with_memory, past=True)]))
            kind = "person"
        elif kind == "location" and x:
            calls = [PlannedCall(tool="find_people_by_location", arguments={"location": x})]
        elif kind == "topic" and x:
            calls = [
                PlannedCall(tool="find_people_by_topic", arguments={"topic": x}),
                PlannedCall(tool="find_experts", arguments={"query": x}),
            ]
        elif kind == "participants":
            if not channel_id:
                continue
            subject = channel_id
            calls = [PlannedCall(tool="get_conversation_participants", arguments={"channel_id": channel_id})]
        elif kind == "timeline" and a:
            since, until = time_window(question)
            arguments: dict[str, Any] = {"person": a}
            if since is not None:
                arguments["start_date"] = since
            if until is not None:
                arguments["end_date"] = until
            calls = [
                PlannedCall(tool="get_person_timeline", arguments=arguments),
                PlannedCall(tool="get_person_profile", arguments={"person": a}),
            ]
        elif kind == "person" and a:
            # the current profile, then the timeline (ended facts too) when the profile has
            # nothing the question asks about; a question about the past starts there
            calls = [PlannedCall(tool="get_person_profile", arguments={"person": a}),
                     PlannedCall(tool="get_person_timeline", arguments={"person": a})]
            if past or re.search(r"\b(?:history|since|until)\b", question, re.I):
                calls.reverse()
        else:
            continue
        calls += _fallbacks(subject if kind not in ("participants",) else question, with_memory, past)
        focus = focus_of(question) if kind in ("person", "timeline", "who_knows", "relationship") else []
        return [Need(question=question, kind=kind, subject=subject, calls=calls, focus=focus), *extra]
    return []


def analyze(
    messages: Iterable[Any] | str,
    *,
    channel_id: str | None = None,
    with_memory: bool = True,
) -> ConversationAnalysis:
    """The rules' reading of a conversation (used offline, and given to a model planner)."""
    turns = read_messages(messages)
    authors = [t.author for t in turns if t.author]
    people = list(dict.fromkeys(a for a in authors if a.casefold() not in {"user", "assistant", "system"}))
    entities = find_entities(turns)
    questions = find_questions(turns)
    needs: list[Need] = []
    seen: set[tuple[str, str]] = set()
    for question, asker in questions[:5]:
        at = next((i for i, t in enumerate(turns) if question in t.content), len(turns))
        context = find_entities(turns[:at]) + [e for e in find_entities(turns[at:at + 1])
                                               if turns[at].content.find(e) < turns[at].content.find(question)]
        found = plan_need(question, asker, people, channel_id, with_memory, context) or [
            Need(question=question, kind="search", subject=question,
                 calls=_fallbacks(question, with_memory, asks_past(question)))]
        for need in found:
            if (need.kind, need.subject.casefold()) in seen:
                continue
            seen.add((need.kind, need.subject.casefold()))
            needs.append(need)
    if not needs and turns:
        last = turns[-1].content
        needs.append(Need(question=last, kind="search", subject=last,
                          calls=_fallbacks(last, with_memory, asks_past(last))))
    if needs and all(n.kind == "search" for n in needs):
        # No intent recognised: the people the conversation names are context too (a
        # name that is not a person's costs one call that finds nothing).
        covered = {n.subject.casefold() for n in needs}
        named = [e for e in mid_sentence_names(turns) if e.casefold() not in covered][:MAX_MENTIONED]
        for name in named:
            needs.append(Need(question=f"who is {name}", kind="mention", subject=name,
                              calls=[PlannedCall(tool="get_person_profile", arguments={"person": name})]))
    if channel_id and not any(n.kind == "participants" for n in needs):
        # The channel's people are context for any question asked in it ("channel": ranked
        # after what the questions ask for, see synthesis.py).
        needs.append(Need(question=f"who takes part in {channel_id}", kind="channel", subject=channel_id,
                          calls=[PlannedCall(tool="get_conversation_participants",
                                             arguments={"channel_id": channel_id})]))
    for index, need in enumerate(needs):
        for call in need.calls:
            call.need = index
            if not call.reason:
                call.reason = f"{need.kind}: {need.subject}"
    goal = questions[0][0] if questions else (turns[-1].content if turns else "")
    return ConversationAnalysis(
        entities=entities,
        people=people,
        questions=[q for q, _ in questions],
        goal=goal,
        needs=needs,
        channel_id=channel_id,
    )
