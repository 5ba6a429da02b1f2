"""A stand-in with the FactGraph's ten tool signatures, for tests of the agent's control flow
(loop guard, limits, failures). Results are shaped like typed results: the entities and the
model's Fact records. Behaviour over the real FactGraph is tested in test_retrieval_real.py."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from DeepResearch.src.memory.facts.model import Entity, Fact

NS = "test"


def person(name: str) -> Entity:
    return Entity(id=f"e_{name.lower()}", namespace=NS, type="Person", name=name, created_at=0.0)


def thing(name: str, kind: str) -> Entity:
    return Entity(id=f"e_{name.lower()}", namespace=NS, type=kind, name=name, created_at=0.0)


def fact(fid: str, subject: Entity, predicate: str, obj: Entity, confidence: float,
         evidence: tuple[str, ...], **attributes: Any) -> Fact:
    return Fact(id=fid, namespace=NS, subject_id=subject.id, predicate=predicate, object_id=obj.id,
                object_value=None, confidence=confidence, evidence=evidence, created_at=0.0,
                attributes=dict(attributes))


@dataclass
class FakeFactGraph:
    """Tools answer from `answers` (tool name -> result); `fail` raises, `slow` sleeps."""

    answers: dict[str, Any] = field(default_factory=dict)
    fail: set[str] = field(default_factory=set)
    slow: dict[str, float] = field(default_factory=dict)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def _answer(self, tool: str, **arguments: Any) -> Any:
        self.calls.append((tool, arguments))
        if tool in self.slow:
            await asyncio.sleep(self.slow[tool])
        if tool in self.fail:
            raise RuntimeError(f"{tool} is broken")
        answer = self.answers.get(tool)
        return answer(**arguments) if callable(answer) else (answer or [])

    async def get_person_profile(self, person: str, fact_types: list[str] | None = None,
                                 include_history: bool = False) -> Any:
        return await self._answer("get_person_profile", person=person)

    async def find_people_by_skill(self, skill: str, min_proficiency: str | None = None,
                                   min_confidence: float = 0.5) -> Any:
        return await self._answer("find_people_by_skill", skill=skill, min_proficiency=min_proficiency)

    async def find_people_by_organization(self, organization: str, current_only: bool = False,
                                          min_confidence: float = 0.5) -> Any:
        return await self._answer("find_people_by_organization", organization=organization,
                                  current_only=current_only)

    async def get_relationships_between(self, person_a: str, person_b: str) -> Any:
        return await self._answer("get_relationships_between", person_a=person_a, person_b=person_b)

    async def find_people_by_topic(self, topic: str, relationship_types: list[str] | None = None,
                                   min_confidence: float = 0.5) -> Any:
        return await self._answer("find_people_by_topic", topic=topic)

    async def get_person_timeline(self, person: str, fact_types: list[str] | None = None,
                                  start_date: Any = None, end_date: Any = None) -> Any:
        return await self._answer("get_person_timeline", person=person, start_date=start_date,
                                  end_date=end_date)

    async def find_people_by_location(self, location: str, min_confidence: float = 0.5) -> Any:
        return await self._answer("find_people_by_location", location=location)

    async def get_conversation_participants(self, channel_id: str | None = None, since: Any = None,
                                            messages: list[Any] | None = None) -> Any:
        return await self._answer("get_conversation_participants", channel_id=channel_id, since=since)

    async def find_experts(self, query: str, limit: int = 5) -> Any:
        return await self._answer("find_experts", query=query, limit=limit)

    async def semantic_search_facts(self, query: str, fact_types: list[str] | None = None, limit: int = 10,
                                    similarity_threshold: float | None = None, min_confidence: float = 0.0,
                                    include_history: bool = False) -> Any:
        return await self._answer("semantic_search_facts", query=query, limit=limit,
                                  min_confidence=min_confidence)


ALICE, BOB, CHARLIE = person("Alice"), person("Bob"), person("Charlie")
TYPESCRIPT, GOOGLE = thing("TypeScript", "Skill"), thing("Google", "Organization")


def skill_result(*facts: Fact) -> dict[str, Any]:
    return {"entities": [ALICE, BOB, CHARLIE, TYPESCRIPT, GOOGLE], "facts": list(facts)}
