"""Conversation messages into the graph, in one write:

- each message becomes an episode memory (memory_type "episode", id = its message_id,
  session "channel:<id>" or "episodes", created_at = its timestamp): kept, searchable, and what
  facts' evidence points at;
- `extract(messages)` (facts/extraction/) finds facts; each keeps the message id it came from
  as evidence, and a fact about the author is resolved by the author's id (two authors both
  called "Alice" stay two people);
- each author gets PARTICIPATED_IN(author -> Channel) for every channel written in (evidence:
  their message ids there; attributes: last_seen, the epoch of their latest message).
Messages are validated first (nothing written on a bad one); what extraction could not use is
reported in `IngestReport.problems`, never dropped silently.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from DeepResearch.src.memory.backends.base import MemoryRecord
from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.facts.graph_core import FactSpec, GraphCore
from DeepResearch.src.memory.facts.model import EPISODE_MEMORY_TYPE, ExtractedFact, Message
from DeepResearch.src.memory.facts.store import name_key
from DeepResearch.src.memory.facts.validation import parse_messages
from DeepResearch.src.memory.facts.views import FactOut
from DeepResearch.src.memory.inputs import clean_id

EPISODE_SESSION = "episodes"  # messages without a channel


class IngestReport(BaseModel):
    messages: int
    episodes: list[str]  # the episode memory ids (= message ids)
    facts: list[FactOut] = Field(default_factory=list)  # the stored facts the batch became
    problems: list[str] = Field(default_factory=list)  # what extraction could not use


async def ingest(
    graph: GraphCore, raw: Sequence[Any], channel_id: str | None = None, *, model: Any = None
) -> IngestReport:
    messages = parse_messages(raw, channel_id)
    for i, m in enumerate(messages):  # each becomes an episode memory of that id
        clean_id(m.message_id, f"message #{i}: field 'message_id'")
    if not messages:
        return IngestReport(messages=0, episodes=[])
    from DeepResearch.src.memory.facts.extraction import extract  # lazy: it may load a model

    result = await extract(messages, model=model, predicates=graph.config.predicates,
                           entity_types=graph.config.entity_types)
    by_id = {m.message_id: m for m in messages}
    specs: list[FactSpec] = []
    problems = list(result.problems)
    for i, found in enumerate(result.facts):
        try:
            specs.append(_extracted_spec(graph, found, by_id, i))
        except MemoryInputError as exc:  # a model's odd output is a problem, not a failure
            problems.append(str(exc))
    specs += _participation(graph, messages)
    episodes = await _episodes(graph, messages)
    facts = await graph.write(specs, memories=episodes, problems=problems)
    return IngestReport(messages=len(messages), episodes=[e.id for e in episodes],
                        facts=facts, problems=problems)


def _extracted_spec(graph: GraphCore, found: ExtractedFact, by_id: dict[str, Message],
                    index: int) -> FactSpec:
    spec = graph.spec(found, index)
    source = by_id.get(found.evidence)
    if source is None:
        raise MemoryInputError(f"extracted fact {index}: evidence {found.evidence!r} is not a "
                               "message of this batch; left out")
    if spec.subject_type == "Person" and name_key(spec.subject) == name_key(source.author_name):
        spec.subject_external_id = source.author_id
    if spec.valid_at is None and spec.predicate in graph.config.single_valued:
        spec.valid_at = source.timestamp  # true at least since it was said
    spec.said_at = source.timestamp
    return spec


def _participation(graph: GraphCore, messages: list[Message]) -> list[FactSpec]:

    groups: dict[tuple[str, str], list[Message]] = {}
    for m in messages:
        if m.channel_id:
            groups.setdefault((m.author_id, m.channel_id), []).append(m)
    return [
        FactSpec(subject=ms[0].author_name, predicate="PARTICIPATED_IN", object=channel,
                 subject_type="Person", object_type="Channel",
                 attributes={"last_seen": max(m.timestamp for m in ms)}, confidence=1.0,
                 evidence=tuple(m.message_id for m in ms),
                 valid_at=min(m.timestamp for m in ms), invalid_at=None,
                 subject_external_id=author)
        for (author, channel), ms in groups.items()
    ]


async def _episodes(graph: GraphCore, messages: list[Message]) -> list[MemoryRecord]:
    texts = [f"{m.author_name}: {m.content}" for m in messages]
    vectors: Any = [None] * len(texts)  # filled behind the write where the store can
    if not graph.client.filler.defers(len(texts)):
        vectors = await asyncio.to_thread(graph.client.embedder.embed, texts)
    return [
        MemoryRecord(
            id=m.message_id, session_id=f"channel:{m.channel_id}" if m.channel_id else EPISODE_SESSION,
            memory_type=EPISODE_MEMORY_TYPE, content=text, created_at=m.timestamp,
            namespace=graph.namespace, vector=vector,
            metadata={"author_id": m.author_id, "author_name": m.author_name,
                      "channel_id": m.channel_id, "message_id": m.message_id},
        )
        for m, text, vector in zip(messages, texts, vectors, strict=True)
    ]
