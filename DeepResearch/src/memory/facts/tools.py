"""The ten fact tools: plain async functions over a FactGraph, each returning a ToolAnswer.

A person is given by name, alias or id; an unknown (or ambiguous) one gives an empty answer
whose `message` says so, never an error. Every answer is bounded (`limit`, else
`memory.facts.default_limit`, at most `max_limit`); its facts carry confidence, evidence and
validity. `TOOLS` maps each name to its function (the toolset and the CLI use it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence, Sized
from typing import Any

from DeepResearch.src.memory.facts.graph import FactGraph, ambiguity
from DeepResearch.src.memory.facts.model import Entity, Fact, FactQuery
from DeepResearch.src.memory.facts.search import search_facts
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
    PersonHit,
    SharedLink,
    ToolAnswer,
    entity_out,
)

ORGANIZATION_PREDICATES = ("WORKS_AT", "WORKED_AT", "MEMBER_OF", "STUDIED_AT")
TOPIC_PREDICATES = ("INTERESTED_IN", "MENTIONED", "HAS_SKILL")


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


async def _people(
    graph: FactGraph, facts: list[Fact], limit: int,
    score: Callable[[list[Fact]], float] | None = None,
) -> list[PersonHit]:
    """Facts grouped by subject person, best score first (else in the facts' order)."""
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
                      facts=[views[f.id] for f in fs]) for sid, fs, s in ranked[:limit]]


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


async def find_people_by_skill(
    graph: FactGraph, skill: str, min_proficiency: Any = None, limit: int | None = None
) -> ToolAnswer:
    """People with a skill, most proficient first; `min_proficiency` a word (beginner,
    intermediate, advanced, expert) or a number (0..1, or a 1..5 / 1..10 scale)."""
    floor = check_proficiency(min_proficiency)
    facts = await _find(graph, predicates=("HAS_SKILL",), **await _objects(graph, skill, ["Skill"]))
    if floor is not None:
        facts = [f for f in facts if (proficiency(f.attributes.get("proficiency")) or 0) >= floor]
    hits = await _people(graph, facts, graph.clean_limit(limit),
                         lambda fs: max(proficiency(f.attributes.get("proficiency")) or 0 for f in fs))
    return _answer("find_people_by_skill", f"{_count(hits, 'person', 'people')} with skill {skill!r}", people=hits)


async def find_people_by_organization(
    graph: FactGraph, organization: str, current_only: bool = False, limit: int | None = None
) -> ToolAnswer:
    """People who work, worked, studied or are members at an organisation, those who left
    included (their facts say when it ended); current_only=True: only those there now."""
    facts = await _find(graph, predicates=ORGANIZATION_PREDICATES, include_history=not current_only,
                        **await _objects(graph, organization, ["Organization"]))
    hits = await _people(graph, facts, graph.clean_limit(limit))
    when = "now" if current_only else "ever"
    return _answer("find_people_by_organization",
                   f"{_count(hits, 'person', 'people')} linked to {organization!r} ({when})", people=hits)


async def get_relationships_between(
    graph: FactGraph, person_a: str, person_b: str, limit: int | None = None
) -> ToolAnswer:
    """Facts linking two people directly (KNOWS, CLOSE_TO, ...) and what they share
    (organisations, skills, topics, places, channels), current facts only."""
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
    return _answer("get_relationships_between",
                   f"{_count(direct[:n], 'direct fact')}, {_count(shared, 'shared link')} between "
                   f"{a.name} and {b.name}", person=entity_out(a), other_person=entity_out(b),
                   facts=[views[f.id] for f in direct[:n]], shared=shared)


async def find_people_by_topic(graph: FactGraph, topic: str, limit: int | None = None) -> ToolAnswer:
    """People interested in, talking about or skilled in a topic, most confident first."""
    facts = await _find(graph, predicates=TOPIC_PREDICATES,
                        **await _objects(graph, topic, ["Topic", "Skill"]))
    hits = await _people(graph, facts, graph.clean_limit(limit),
                         lambda fs: max(f.confidence for f in fs))
    return _answer("find_people_by_topic", f"{_count(hits, 'person', 'people')} linked to topic {topic!r}",
                   people=hits)


async def get_person_timeline(
    graph: FactGraph, person: str, since: Any = None, until: Any = None,
    limit: int | None = None,
) -> ToolAnswer:
    """A person's facts over time, history included, oldest first; `since` / `until` keep
    the facts valid at some time in between."""
    low, high = parse_time(since, "since"), parse_time(until, "until")
    who = await _one(graph, person, ["Person"], "person")
    if isinstance(who, str):
        return _answer("get_person_timeline", who)
    facts = await _find(graph, subject_ids=(who.id,), include_history=True)
    facts = [f for f in facts
             if (low is None or f.invalid_at is None or f.invalid_at > low)
             and (high is None or f.valid_at is None or f.valid_at <= high)]
    facts.sort(key=lambda f: (f.valid_at if f.valid_at is not None else f.created_at, f.id))
    out = await graph.views(facts[: graph.clean_limit(limit)])
    return _answer("get_person_timeline", f"{_count(out, 'fact')} in {who.name}'s timeline",
                   person=entity_out(who), facts=out)


async def find_people_by_location(
    graph: FactGraph, location: str, limit: int | None = None
) -> ToolAnswer:
    """People who live in a place now."""
    facts = await _find(graph, predicates=("LIVES_IN",),
                        **await _objects(graph, location, ["Location"]))
    hits = await _people(graph, facts, graph.clean_limit(limit))
    return _answer("find_people_by_location", f"{_count(hits, 'person', 'people')} in {location!r}", people=hits)


async def get_conversation_participants(
    graph: FactGraph, channel_id: str, since: Any = None, limit: int | None = None
) -> ToolAnswer:
    """People who wrote in a channel (since a time: those who wrote since then)."""
    low = parse_time(since, "since")
    channel = await _one(graph, channel_id, ["Channel"], "channel")
    if isinstance(channel, str):
        return _answer("get_conversation_participants", channel)
    facts = await _find(graph, predicates=("PARTICIPATED_IN",), object_ids=(channel.id,),
                        include_history=True)
    if low is not None:
        facts = [f for f in facts if _last_seen(f) >= low]
    hits = await _people(graph, facts, graph.clean_limit(limit), lambda fs: max(map(_last_seen, fs)))
    return _answer("get_conversation_participants",
                   f"{_count(hits, 'participant')} in channel {channel.name!r}", people=hits)


def _last_seen(fact: Fact) -> float:
    seen = fact.attributes.get("last_seen")
    try:
        value = parse_time(seen, "last_seen") if seen is not None else None
    except ValueError:
        value = None
    return value or fact.valid_at or fact.created_at


def expertise(facts: Sequence[Fact]) -> float:
    """find_experts' score: proficiency (0.5), years (0.2, saturating at 10), evidence count
    (0.15, at 5 pieces) and confidence (0.15); the best of a person's matching facts."""
    def one(f: Fact) -> float:
        years = f.attributes.get("years")
        years = years if isinstance(years, int | float) and math.isfinite(years) else 0
        return (0.5 * (proficiency(f.attributes.get("proficiency")) or 0)
                + 0.2 * min(max(years, 0) / 10, 1.0) + 0.15 * min(len(f.evidence) / 5, 1.0)
                + 0.15 * f.confidence)
    return max(one(f) for f in facts)


async def find_experts(graph: FactGraph, topic: str, limit: int = 5) -> ToolAnswer:
    """The people who know most about a topic or skill, best first (see `expertise`)."""
    facts = await _find(graph, predicates=TOPIC_PREDICATES,
                        **await _objects(graph, topic, ["Skill", "Topic"]))
    hits = await _people(graph, facts, graph.clean_limit(limit), expertise)
    return _answer("find_experts", f"{_count(hits, 'expert')} on {topic!r}", people=hits)


async def semantic_search_facts(
    graph: FactGraph, query: str, limit: int = 10, min_confidence: float = 0.0,
    include_history: bool = False,
) -> ToolAnswer:
    """Facts whose sentence matches `query` (hybrid dense + lexical retrieval over the fact
    memories, see search.py), current ones unless include_history."""
    n = graph.clean_limit(limit)
    floor = check_confidence(min_confidence)
    found = await search_facts(graph, check_name(query, "query"), n, floor, include_history)
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
