"""The ten fact tools: plain async functions over a FactGraph, each returning a ToolAnswer.

A person is given by name, alias or id; an unknown (or ambiguous) one gives an empty answer
whose `message` says so, never an error. Every answer is bounded (`limit`, else
`memory.facts.default_limit`, at most `max_limit`); its facts carry confidence, evidence and
validity. `TOOLS` maps each name to its function (the toolset and the CLI use it).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping, Sequence, Sized
from typing import Any

from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.facts import places
from DeepResearch.src.memory.facts.graph import FactGraph, ambiguity
from DeepResearch.src.memory.facts.model import Entity, Fact, FactQuery
from DeepResearch.src.memory.facts.search import search_facts
from DeepResearch.src.memory.facts.store import fact_is_current
from DeepResearch.src.memory.facts.validation import (
    check_confidence,
    check_fact_types,
    check_name,
    check_proficiency,
    parse_time,
    proficiency,
)
from DeepResearch.src.memory.facts.views import (
    FactOut,
    ImplicitReference,
    Mention,
    PersonHit,
    PossibleMatch,
    Relationship,
    RelevantFact,
    SharedContext,
    SharedLink,
    ToolAnswer,
    describe,
    entity_out,
    stamp,
    timeline_entry,
)

ORGANIZATION_PREDICATES = ("WORKS_AT", "WORKED_AT", "MEMBER_OF", "STUDIED_AT")
TOPIC_PREDICATES = ("INTERESTED_IN", "MENTIONED", "HAS_SKILL")
# get_person_timeline's default: the facts that have a span in a life (jobs, studies,
# memberships, homes); skills, topics and acquaintances are asked for by fact_types.
TIMELINE_PREDICATES = ("WORKS_AT", "WORKED_AT", "STUDIED_AT", "MEMBER_OF", "LIVES_IN")
# find_experts' facts found by meaning: skills, topics and organisations
EXPERT_PREDICATES = (*TOPIC_PREDICATES, "WORKS_AT", "MEMBER_OF", "STUDIED_AT")


async def _one(graph: FactGraph, ref: str, types: Sequence[str], what: str) -> Entity | str:
    """The entity `ref` names, or the message saying why there is none."""
    found = await graph.lookup(check_name(ref, what), types)
    if found.ambiguous:
        return ambiguity(ref, what, found)
    if found.entity is None:
        return f"no {what} named {ref!r} is known"
    return found.entity


async def _objects(graph: FactGraph, ref: str, types: Sequence[str]) -> dict[str, Any]:
    """Query conditions for facts whose object is `ref`: its entities (every match, as a
    search term may name several) or, when none, the literal."""
    found = await graph.lookup(check_name(ref, "name"), types)
    entities = [found.entity] if found.entity else found.candidates
    if entities:
        return {"object_ids": tuple(e.id for e in entities)}
    return {"object_values": (ref,)}


async def _find(graph: FactGraph, **query: Any) -> list[Fact]:
    query.setdefault("limit", graph.config.max_limit)
    return await (await graph.store()).find_facts(FactQuery(graph.namespace, **query))


def _best(facts: list[Fact]) -> Fact:
    """A person's fact a hit speaks of: a current one first, then the most confident, the newest."""
    now = time.time()
    return max(facts, key=lambda f: (fact_is_current(f, now), f.confidence, f.valid_at or 0.0))


async def _people(
    graph: FactGraph, facts: list[Fact], limit: int,
    score: Callable[[list[Fact]], float] | None = None,
    fields: Callable[[list[Fact]], dict[str, Any]] | None = None,
) -> list[PersonHit]:
    """Facts grouped by subject person, best score first (else in the facts' order); each
    hit with its facts' best confidence, their evidence and the tool's own `fields`."""
    by_subject: dict[str, list[Fact]] = {}
    for fact in facts:
        by_subject.setdefault(fact.subject_id, []).append(fact)
    people = {e.id: e for e in await (await graph.store()).get_entities(
        graph.namespace, list(by_subject)) if e.type == "Person"}
    ranked = [(sid, fs, score(fs) if score else None) for sid, fs in by_subject.items()
              if sid in people]
    if score:
        ranked.sort(key=lambda item: -(item[2] or 0.0))
    views = {f.id: f for f in await graph.views([f for _, fs, _ in ranked[:limit] for f in fs])}
    return [PersonHit(person=entity_out(people[sid]),
                      score=None if s is None else round(s, 6),
                      facts=[views[f.id] for f in fs],
                      confidence=round(max(f.confidence for f in fs), 6),
                      evidence=list(dict.fromkeys(e for f in fs for e in f.evidence)),
                      **(fields(fs) if fields else {})) for sid, fs, s in ranked[:limit]]


def _count(items: Sized, noun: str, plural: str | None = None) -> str:
    """'1 fact', '3 facts', '1 person', '2 people'."""
    n = len(items)
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _answer(tool: str, message: str, **fields: Any) -> ToolAnswer:
    return ToolAnswer(tool=tool, message=message, **fields)


async def get_person_profile(
    graph: FactGraph, person: str, fact_types: list[str] | None = None,
    include_history: bool = False, limit: int | None = None,
) -> ToolAnswer:
    """Everything known about a person: their facts and the facts naming them, current ones
    unless include_history (then ended facts too, each with when it ended); `fact_types`
    keeps those predicates only (e.g. ["WORKS_AT", "HAS_SKILL"])."""
    types = check_fact_types(fact_types, "fact_types", graph.config.predicates)
    who = await _one(graph, person, ["Person"], "person")
    if isinstance(who, str):
        return _answer("get_person_profile", who)
    n = graph.clean_limit(limit)
    history = bool(include_history)
    facts = await _find(graph, subject_ids=(who.id,), predicates=types, include_history=history, limit=n)
    facts += await _find(graph, object_ids=(who.id,), predicates=types, include_history=history,
                         limit=max(0, n - len(facts)) or 1)
    out = await graph.views(facts[:n])
    what = "fact" if history else "current fact"
    return _answer("get_person_profile", f"{_count(out, what)} about {who.name}",
                   person=entity_out(who), facts=out)


def _skill_fields(facts: list[Fact]) -> dict[str, Any]:
    best = _best(facts)
    level, years = best.attributes.get("proficiency"), best.attributes.get("years")
    return {"proficiency": None if level is None else str(level),
            "years_experience": years if isinstance(years, int | float) and not isinstance(years, bool)
            else None}


async def find_people_by_skill(
    graph: FactGraph, skill: str, min_proficiency: Any = None, min_confidence: float = 0.5,
    limit: int | None = None,
) -> ToolAnswer:
    """People with a skill, most proficient first; `min_proficiency` a word (beginner,
    intermediate, advanced, expert) or a number (0..1, or a 1..5 / 1..10 scale);
    `min_confidence`: the facts' confidence from which they count."""
    floor = check_proficiency(min_proficiency)
    facts = await _find(graph, predicates=("HAS_SKILL",),
                        min_confidence=check_confidence(min_confidence, "min_confidence"),
                        **await _objects(graph, skill, ["Skill"]))
    if floor is not None:
        facts = [f for f in facts if (proficiency(f.attributes.get("proficiency")) or 0) >= floor]
    hits = await _people(graph, facts, graph.clean_limit(limit),
                         lambda fs: max(proficiency(f.attributes.get("proficiency")) or 0 for f in fs),
                         _skill_fields)
    return _answer("find_people_by_skill", f"{_count(hits, 'person', 'people')} with skill {skill!r}", people=hits)


async def find_people_by_organization(
    graph: FactGraph, organization: str, current_only: bool = False, min_confidence: float = 0.5,
    limit: int | None = None,
) -> ToolAnswer:
    """People who work, worked, studied or are members at an organisation, those who left
    included (end_date says when they left); current_only=True: only those there now."""
    facts = await _find(graph, predicates=ORGANIZATION_PREDICATES, include_history=not current_only,
                        min_confidence=check_confidence(min_confidence, "min_confidence"),
                        **await _objects(graph, organization, ["Organization"]))
    hits = await _people(graph, facts, graph.clean_limit(limit), fields=_membership_fields)
    when = "now" if current_only else "ever"
    return _answer("find_people_by_organization",
                   f"{_count(hits, 'person', 'people')} linked to {organization!r} ({when})", people=hits)


def _membership_fields(facts: list[Fact]) -> dict[str, Any]:
    best = _best(facts)
    role = best.attributes.get("role") or best.attributes.get("title")
    place = best.attributes.get("location")
    return {"role": None if role is None else str(role), "start_date": stamp(best.valid_at),
            "end_date": stamp(best.invalid_at), "location": None if place is None else str(place),
            "relationship_type": best.predicate}


async def get_relationships_between(
    graph: FactGraph, person_a: str, person_b: str, limit: int | None = None
) -> ToolAnswer:
    """Facts linking two people directly (KNOWS, CLOSE_TO, ...) and what they share
    (organisations, skills, topics, places, channels), current facts only: as facts and
    shared links, and as the seed names them (relationships, shared_contexts)."""
    a = await _one(graph, person_a, ["Person"], "person")
    b = await _one(graph, person_b, ["Person"], "person")
    if isinstance(a, str) or isinstance(b, str):
        return _answer("get_relationships_between", a if isinstance(a, str) else str(b))
    n = graph.clean_limit(limit)
    direct = await _find(graph, subject_ids=(a.id,), object_ids=(b.id,), limit=n)
    direct += await _find(graph, subject_ids=(b.id,), object_ids=(a.id,), limit=n)
    of_a = await _find(graph, subject_ids=(a.id,))
    of_b = await _find(graph, subject_ids=(b.id,))
    common = sorted({f.object_id for f in of_a if f.object_id}
                    & {f.object_id for f in of_b if f.object_id} - {a.id, b.id})[:n]
    store = await graph.store()
    entities = {e.id: e for e in await store.get_entities(graph.namespace, common)}
    linking = [f for f in of_a + of_b if f.object_id in entities]
    views = {f.id: f for f in await graph.views(direct[:n] + linking)}
    shared = [SharedLink(entity=entity_out(entities[oid]),
                         facts=[views[f.id] for f in linking if f.object_id == oid])
              for oid in common if oid in entities]
    relationships = [Relationship(type=f.predicate, attributes=views[f.id].attributes,
                                  confidence=views[f.id].confidence, evidence=list(f.evidence),
                                  fact_id=f.id, from_person=f.subject_id) for f in direct[:n]]
    contexts = [SharedContext(
        type=f"same_{link.entity.type.lower()}", context=link.entity.name,
        details={"entity_id": link.entity.id,
                 **{side: sorted({f.predicate for f in link.facts if f.subject_id == who.id})
                    for side, who in (("person_a", a), ("person_b", b))}})
        for link in shared]
    return _answer("get_relationships_between",
                   f"{_count(direct[:n], 'direct fact')}, {_count(shared, 'shared link')} between "
                   f"{a.name} and {b.name}", person=entity_out(a), other_person=entity_out(b),
                   facts=[views[f.id] for f in direct[:n]], shared=shared,
                   relationships=relationships, shared_contexts=contexts)


def _topic_fields(facts: list[Fact]) -> dict[str, Any]:
    best = max(facts, key=lambda f: f.confidence)
    feeling = best.attributes.get("sentiment")
    return {"relationship_type": best.predicate, "sentiment": None if feeling is None else str(feeling)}


async def find_people_by_topic(
    graph: FactGraph, topic: str, relationship_types: list[str] | None = None,
    min_confidence: float = 0.5, limit: int | None = None,
) -> ToolAnswer:
    """People interested in, talking about or skilled in a topic, most confident first;
    `relationship_types`: the predicates to follow (default INTERESTED_IN, MENTIONED,
    HAS_SKILL)."""
    types = check_fact_types(relationship_types, "relationship_types", graph.config.predicates)
    facts = await _find(graph, predicates=types or TOPIC_PREDICATES,
                        min_confidence=check_confidence(min_confidence, "min_confidence"),
                        **await _objects(graph, topic, ["Topic", "Skill"]))
    hits = await _people(graph, facts, graph.clean_limit(limit),
                         lambda fs: max(f.confidence for f in fs), _topic_fields)
    return _answer("find_people_by_topic", f"{_count(hits, 'person', 'people')} linked to topic {topic!r}",
                   people=hits)


def _bound_of(value: Any, alias: Any, name: str, alias_name: str) -> float | None:
    """One end of a time window given as `name` or its alias (the same end: both given must agree)."""
    low, other = parse_time(value, name), parse_time(alias, alias_name)
    if low is not None and other is not None and low != other:
        raise MemoryInputError(f"{name}={value!r} and {alias_name}={alias!r}: two names of one "
                               "bound that disagree; give one")
    return low if low is not None else other


async def get_person_timeline(
    graph: FactGraph, person: str, fact_types: list[str] | None = None, start_date: Any = None,
    end_date: Any = None, limit: int | None = None, since: Any = None, until: Any = None,
) -> ToolAnswer:
    """A person's jobs, studies, memberships and homes over time, history included, oldest
    first (`fact_types` names other predicates instead, e.g. ["HAS_SKILL"]); `start_date` /
    `end_date` (ISO 8601 dates, e.g. "2020-01-01"; `since` / `until` are the same) keep the
    facts valid at some time between them. Answers `timeline` (type, object, start, end)."""
    types = check_fact_types(fact_types, "fact_types", graph.config.predicates) or TIMELINE_PREDICATES
    low = _bound_of(start_date, since, "start_date", "since")
    high = _bound_of(end_date, until, "end_date", "until")
    if low is not None and high is not None and low > high:
        given = (start_date if start_date is not None else since, end_date if end_date is not None else until)
        raise MemoryInputError(f"start_date={given[0]!r} is after end_date={given[1]!r}")
    who = await _one(graph, person, ["Person"], "person")
    if isinstance(who, str):
        return _answer("get_person_timeline", who)
    facts = await _find(graph, subject_ids=(who.id,), predicates=types, include_history=True)
    facts = [f for f in facts
             if (low is None or f.invalid_at is None or f.invalid_at > low)
             and (high is None or f.valid_at is None or f.valid_at <= high)]
    facts.sort(key=lambda f: (f.valid_at if f.valid_at is not None else f.created_at, f.id))
    out = await graph.views(facts[: graph.clean_limit(limit)])
    return _answer("get_person_timeline", f"{_count(out, 'fact')} in {who.name}'s timeline",
                   person=entity_out(who), facts=out, timeline=[timeline_entry(v) for v in out])


async def find_people_by_location(
    graph: FactGraph, location: str, min_confidence: float = 0.5, limit: int | None = None
) -> ToolAnswer:
    """People who live in a place now, or work there (their job's location): the place as
    written first, then its other names and the places of a region it names ("SF", "NYC",
    "the Bay Area": places.yaml), then names close in spelling."""
    query = check_name(location, "location")
    floor = check_confidence(min_confidence, "min_confidence")
    store = await graph.store()
    keys = await store.entity_keys(graph.namespace, ["Location"])
    aliases = places.alias_keys(query)
    fuzzy = places.fuzzy_keys(query, [places.place_key(k) for _, k in keys])
    grades: dict[str, str] = {}
    for entity_id, key in keys:
        grade = places.grade_of(key, query, aliases, fuzzy)
        known = grades.get(entity_id)
        if grade and (known is None or places.GRADES.index(grade) < places.GRADES.index(known)):
            grades[entity_id] = grade
    facts = await _find(graph, predicates=("LIVES_IN",), object_ids=tuple(grades), min_confidence=floor) \
        if grades else []
    match = {f.id: (grades[f.object_id or ""], "lives_in") for f in facts}
    for job in await _find(graph, predicates=("WORKS_AT",), min_confidence=floor):
        place = job.attributes.get("location")
        grade = places.grade_of(place, query, aliases, fuzzy) if isinstance(place, str) else None
        if grade:
            facts.append(job)
            match[job.id] = (grade, "works_in")

    def rank(fs: list[Fact]) -> float:  # exact 3, alias 2, fuzzy 1, then the confidence
        return max(3 - places.GRADES.index(match[f.id][0]) + f.confidence for f in fs)

    def fields(fs: list[Fact]) -> dict[str, Any]:
        best = max(fs, key=lambda f: (3 - places.GRADES.index(match[f.id][0]), f.confidence))
        grade, relationship = match[best.id]
        place = best.attributes.get("location") if relationship == "works_in" else None
        return {"match": grade, "relationship": relationship,
                "details": {"place": place} if place else {}}

    hits = await _people(graph, facts, graph.clean_limit(limit), rank, fields)
    return _answer("find_people_by_location", f"{_count(hits, 'person', 'people')} in {location!r}", people=hits)


# "my brother", "our manager": a relation word after a possessive
_RELATION = re.compile(r"\b(?:my|our) (brother|sister|cousin|friend|best friend|colleague|coworker|"
                       r"co-worker|manager|boss|teammate|team mate|partner|wife|husband|mentor|"
                       r"roommate|flatmate|neighbou?r|dad|mom|mum|father|mother|son|daughter)\b", re.I)
_PRONOUN = re.compile(r"\b(he|him|his|she|her|hers)\b", re.I)
_WORK_RELATIONS = {"colleague", "coworker", "co-worker", "manager", "boss", "teammate", "team mate"}
_NAME = re.compile(r"@(?P<at>[\w.\-]+)|\b(?P<name>[A-Z][\w'\-]*(?: [A-Z][\w'\-]*){0,2})")
MAX_MATCHES = 5


def _message_parts(message: Any, index: int) -> tuple[str, str | None]:
    """(content, author name) of a message given as text or as a mapping."""
    if isinstance(message, str):
        return message, None
    if isinstance(message, Mapping):
        content = message.get("content") or message.get("text")
        author = message.get("author_name") or message.get("author")
        if isinstance(content, str):
            return content, author if isinstance(author, str) else None
    raise MemoryInputError(f"messages[{index}]={str(message)[:60]!r}: give a string or "
                           "{'content', 'author_name'}")


async def _mentions(graph: FactGraph, messages: list[Any]) -> tuple[list[Mention], list[ImplicitReference]]:
    """The people the messages name (resolved where the graph knows them), and what their
    relation words and pronouns may refer to (with why)."""
    known: dict[str, Entity | None] = {}

    async def person(name: str) -> Entity | None:
        key = name.casefold()
        if key not in known:
            found = await graph.lookup(name, ["Person"])
            known[key] = None if found.ambiguous else found.entity
        return known[key]

    explicit: list[Mention] = []
    implicit: list[ImplicitReference] = []
    for index, message in enumerate(messages):
        content, author_name = _message_parts(message, index)
        author = await person(author_name) if author_name else None
        for match in _NAME.finditer(content):
            for written, found in await _known_spans(person, match):
                if found is not None and author is not None and found.id == author.id:
                    continue  # the author naming themself
                explicit.append(Mention(name=written, person_id=found.id if found else None,
                                        mentioned_in_message=index))
        for match in _RELATION.finditer(content):
            implicit.append(ImplicitReference(
                reference=match.group(0), mentioned_in_message=index,
                possible_matches=await _related(graph, author, match.group(1).casefold())))
        for match in _PRONOUN.finditer(content):
            last = next((m for m in reversed(explicit) if m.person_id and m.mentioned_in_message <= index
                         and not (m.mentioned_in_message == index and content.find(m.name) > match.start())), None)
            if last is None or last.person_id is None:
                continue
            implicit.append(ImplicitReference(
                reference=match.group(0), mentioned_in_message=index, possible_matches=[PossibleMatch(
                    person_id=last.person_id, name=last.name, confidence=0.6,
                    reason=f"the person last named before it (message {last.mentioned_in_message})")]))
    return explicit, implicit


async def _known_spans(
    person: Callable[[str], Any], match: re.Match[str]
) -> list[tuple[str, Entity | None]]:
    """The people a name match writes: an @mention as it is (known or not); in a run of
    capitalised words, the longest known spans from left to right ("Didn't Charlie" ->
    Charlie; "Alice Johnson" -> Alice Johnson), unknown words skipped."""
    if match.group("at"):
        return [(match.group("at"), await person(match.group("at")))]
    words = match.group("name").split()
    spans: list[tuple[str, Entity | None]] = []
    start = 0
    while start < len(words):
        for end in range(len(words), start, -1):
            name = " ".join(words[start:end])
            found = await person(name)
            if found is not None:
                spans.append((name, found))
                start = end
                break
        else:
            start += 1
    return spans


async def _related(graph: FactGraph, author: Entity | None, relation: str) -> list[PossibleMatch]:
    """Who the author's "my <relation>" may be: the people their KNOWS / CLOSE_TO facts link
    them to (a fact whose `relation` attribute says so first) and, for a work relation, the
    people at their current employer."""
    if author is None:
        return []
    store = await graph.store()
    links = await _find(graph, subject_ids=(author.id,), predicates=("KNOWS", "CLOSE_TO"))
    links += await _find(graph, object_ids=(author.id,), predicates=("KNOWS", "CLOSE_TO"))
    scores: dict[str, tuple[float, str]] = {}
    for fact in links:
        other = fact.object_id if fact.subject_id == author.id else fact.subject_id
        if not other or other == author.id:
            continue
        said = str(fact.attributes.get("relation") or fact.attributes.get("type") or "").casefold()
        weight = 1.0 if said == relation else 0.3 if said else 0.5
        scores[other] = max(scores.get(other, (0.0, "")), (round(weight * fact.confidence, 4),
                            f"{fact.predicate}" + (f" ({said})" if said else "")))
    if relation in _WORK_RELATIONS:
        jobs = await _find(graph, subject_ids=(author.id,), predicates=("WORKS_AT", "MEMBER_OF"))
        orgs = tuple(j.object_id for j in jobs if j.object_id)
        if orgs:
            names = {e.id: e.name for e in await store.get_entities(graph.namespace, list(orgs))}
            for fact in await _find(graph, predicates=("WORKS_AT", "MEMBER_OF"), object_ids=orgs):
                if fact.subject_id != author.id:
                    why = f"also at {names.get(fact.object_id or '', '?')}"
                    scores[fact.subject_id] = max(scores.get(fact.subject_id, (0.0, "")),
                                                  (round(0.5 * fact.confidence, 4), why))
    people = {e.id: e for e in await store.get_entities(graph.namespace, list(scores)) if e.type == "Person"}
    ranked = sorted((pid for pid in scores if pid in people), key=lambda pid: (-scores[pid][0], pid))
    return [PossibleMatch(person_id=pid, name=people[pid].name, confidence=scores[pid][0],
                          reason=f"{author.name} {scores[pid][1]} {people[pid].name}"
                          if not scores[pid][1].startswith("also") else f"{people[pid].name} is {scores[pid][1]}")
            for pid in ranked[:MAX_MATCHES]]


async def get_conversation_participants(
    graph: FactGraph, channel_id: str | None = None, since: Any = None,
    messages: list[Any] | None = None, limit: int | None = None,
) -> ToolAnswer:
    """Who a conversation involves. `messages` (strings or {content, author_name}, oldest
    first): the people they name (explicit_mentions, with the message index) and what
    "my brother", "my colleague", "him" may refer to (implicit_references, with possible
    matches and why). `channel_id`: the people who wrote there (since a time: those who
    wrote since then), most recent first. Give either or both."""
    if channel_id is None and messages is None:
        raise MemoryInputError("get_conversation_participants needs messages or a channel_id")
    explicit: list[Mention] = []
    implicit: list[ImplicitReference] = []
    if messages is not None:
        if not isinstance(messages, list | tuple):
            raise MemoryInputError(f"messages={str(messages)[:60]!r}: give a list of messages")
        explicit, implicit = await _mentions(graph, list(messages))
    if channel_id is None:
        return _answer("get_conversation_participants",
                       f"{_count(explicit, 'mention')}, {_count(implicit, 'implicit reference')}",
                       explicit_mentions=explicit, implicit_references=implicit)
    low = parse_time(since, "since")
    channel = await _one(graph, channel_id, ["Channel"], "channel")
    if isinstance(channel, str):
        return _answer("get_conversation_participants", channel, explicit_mentions=explicit,
                       implicit_references=implicit)
    facts = await _find(graph, predicates=("PARTICIPATED_IN",), object_ids=(channel.id,),
                        include_history=True)
    if low is not None:
        facts = [f for f in facts if _last_seen(f) >= low]
    hits = await _people(graph, facts, graph.clean_limit(limit), lambda fs: max(map(_last_seen, fs)))
    message = f"{_count(hits, 'participant')} in channel {channel.name!r}"
    if messages is not None:
        message += f"; {_count(explicit, 'mention')}, {_count(implicit, 'implicit reference')}"
    return _answer("get_conversation_participants", message, people=hits,
                   explicit_mentions=explicit, implicit_references=implicit)


def _last_seen(fact: Fact) -> float:
    seen = fact.attributes.get("last_seen")
    try:
        value = parse_time(seen, "last_seen") if seen is not None else None
    except ValueError:
        value = None
    return value or fact.valid_at or fact.created_at


RECENCY_HALF_LIFE_DAYS = 730.0  # find_experts: a fact last seen 2 years ago weighs 0.85
RECENCY_FLOOR = 0.7  # ... and one from long ago 0.7: old expertise still counts


def recency(fact: Fact, now: float) -> float:
    """find_experts' weight of a fact by when it was last true: when it ended, else when it
    was last stated (attributes.last_seen, valid_at or when it was learnt); 1 for today."""
    seen = fact.invalid_at if fact.invalid_at is not None else _last_seen(fact)
    days = max(now - seen, 0.0) / 86400
    return RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 0.5 ** (days / RECENCY_HALF_LIFE_DAYS)


def expertise(facts: Sequence[Fact], relevance: Mapping[str, float] | None = None,
              now: float | None = None) -> float:
    """find_experts' score: proficiency (0.5), years (0.2, saturating at 10), evidence count
    (0.15, at 5 pieces) and confidence (0.15); the best of a person's matching facts, each
    times its `relevance` to the query (1 when not given) and its `recency`."""
    at = time.time() if now is None else now

    def one(f: Fact) -> float:
        years = f.attributes.get("years")
        years = years if isinstance(years, int | float) and math.isfinite(years) else 0
        return (0.5 * (proficiency(f.attributes.get("proficiency")) or 0)
                + 0.2 * min(max(years, 0) / 10, 1.0) + 0.15 * min(len(f.evidence) / 5, 1.0)
                + 0.15 * f.confidence) * (1.0 if relevance is None else relevance.get(f.id, 1.0)) \
            * recency(f, at)
    return max(one(f) for f in facts)


async def find_experts(graph: FactGraph, query: str, limit: int = 5) -> ToolAnswer:
    """The people best placed to help with `query` (free text: "TypeScript", "deploying
    Rust services on Kubernetes"), best first. A query naming a skill or topic takes the
    people with it, ranked by `expertise`; otherwise the current skill, topic and
    organisation facts whose sentence matches the query (semantic_search_facts' retrieval,
    above memory.facts.similarity_threshold), a person ranked by the best expertise x
    similarity. Hits carry relevance_score and relevant_facts."""
    text = check_name(query, "query")
    n = graph.clean_limit(limit)
    facts = await _find(graph, predicates=TOPIC_PREDICATES, **await _objects(graph, text, ["Skill", "Topic"]))
    relevance: dict[str, float] | None = None
    if not facts:
        found = await search_facts(graph, text, max(4 * n, 20), 0.0, False, predicates=EXPERT_PREDICATES,
                                   min_similarity=graph.config.similarity_threshold)
        facts = [fact for fact, _ in found]
        relevance = {fact.id: 1.0 if sim is None else max(sim, 0.0) for fact, sim in found}
    hits = await _people(graph, facts, n, lambda fs: expertise(fs, relevance))
    for person in hits:
        person.relevance_score = person.score
        person.relevant_facts = [RelevantFact(type=v.predicate, description=describe(v), confidence=v.confidence)
                                 for v in person.facts]
    return _answer("find_experts", f"{_count(hits, 'expert')} for {query!r}", people=hits, experts=hits)


async def semantic_search_facts(
    graph: FactGraph, query: str, fact_types: list[str] | None = None, limit: int = 10,
    similarity_threshold: float | None = None, min_confidence: float = 0.0,
    include_history: bool = False,
) -> ToolAnswer:
    """Facts whose sentence matches `query` (hybrid dense + lexical retrieval over the fact
    memories, see search.py), current ones unless include_history; `fact_types` those
    predicates only; `similarity_threshold`: the cosine similarity to the query from which a
    hit is returned (default memory.facts.similarity_threshold)."""
    n = graph.clean_limit(limit)
    floor = check_confidence(min_confidence, "min_confidence")
    types = check_fact_types(fact_types, "fact_types", graph.config.predicates)
    threshold = graph.config.similarity_threshold if similarity_threshold is None else similarity_threshold
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not -1.0 <= threshold <= 1.0:
        raise MemoryInputError(f"similarity_threshold={similarity_threshold!r}: must be a number in [-1, 1]")
    found = await search_facts(graph, check_name(query, "query"), n, floor, include_history,
                               predicates=types, min_similarity=float(threshold))
    out: list[FactOut] = await graph.views([fact for fact, _ in found])
    for view, (_, similarity) in zip(out, found, strict=True):
        view.similarity = None if similarity is None else round(similarity, 4)
    return _answer("semantic_search_facts", f"{_count(out, 'fact')} matching {query!r}", facts=out)


TOOLS: dict[str, Callable[..., Any]] = {
    f.__name__: f for f in (
        get_person_profile, find_people_by_skill, find_people_by_organization,
        get_relationships_between, find_people_by_topic, get_person_timeline,
        find_people_by_location, get_conversation_participants, find_experts,
        semantic_search_facts,
    )
}
