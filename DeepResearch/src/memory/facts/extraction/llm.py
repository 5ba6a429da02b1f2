"""Facts listed by a language model as pydantic-ai typed output.

The messages go to the model in batches, each line tagged with its message id. The output
type (`FactList`) lists facts whose predicate and types are constrained, in the JSON schema
the model is given, to the configured predicates and entity types. Validation is strict on
the structure (missing fields, a confidence outside [0, 1], a date that does not parse): such
an output is retried once by pydantic-ai and then REPORTED in `ExtractionResult.problems`
naming the batch's message ids. A single fact with an unknown predicate or type, or evidence
that is not one of the batch's messages, is reported and left out, so one bad fact does not
cost the batch. A model that cannot be used at all (unknown name, missing API key, rejected
credentials) raises MemoryConfigError.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from DeepResearch.src.memory.errors import MemoryConfigError
from DeepResearch.src.memory.facts.model import (
    ENTITY_TYPES,
    PREDICATES,
    ExtractedFact,
    ExtractionResult,
    Message,
)

# What a model may state; PARTICIPATED_IN is written by ingest for each message's author.
EXTRACTED_PREDICATES: tuple[str, ...] = tuple(p for p in PREDICATES if p != "PARTICIPATED_IN")
BATCH_SIZE = 20
OUTPUT_RETRIES = 1
_INSTRUCTIONS = """You extract facts about people from conversation messages for a knowledge graph.
Each input line is `[message_id] timestamp author: text`. List every fact a message states,
as (subject, predicate, object), with:
- predicate: one of {predicates};
- subject / object: names as written; a first-person subject ("I", "we", "my") is the
  message's author by name; subject_type / object_type: one of {types}, object_type null
  when the object is a literal (a number, a date);
- evidence: the id of the message that states it;
- confidence in [0, 1]: high for an explicit statement ("I work at X"), lower for belief
  ("I think Bob knows Rust"), lower still for a guess ("maybe");
- valid_at / invalid_at: ISO 8601 dates when the fact became / stopped being true, if said
  (a present-tense statement is valid at least from its message's timestamp);
- attributes: details such as role, years, proficiency, field.
Facts the messages do not state are not listed. No facts: an empty list."""


class FactOut(BaseModel):
    """One fact as the model lists it."""

    model_config = ConfigDict(extra="forbid")
    subject: str = Field(min_length=1)
    subject_type: str = "Person"
    predicate: str
    object: str = Field(min_length=1)
    object_type: str | None = None
    evidence: str = Field(min_length=1, description="the message_id stating the fact")
    confidence: float = Field(ge=0.0, le=1.0)
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    attributes: dict[str, str | int | float | bool] = Field(default_factory=dict)


class FactList(BaseModel):
    facts: list[FactOut]


def _constrained(predicates: Sequence[str], entity_types: Sequence[str]) -> type[FactList]:
    """FactList whose JSON schema names the allowed predicates and types (an `enum`)."""
    types = list(entity_types)
    fact = create_model(
        "FactOut", __base__=FactOut,
        predicate=(str, Field(json_schema_extra={"enum": list(predicates)})),
        subject_type=(str, Field("Person", json_schema_extra={"enum": types})),
        object_type=(str | None, Field(None, json_schema_extra={
            "anyOf": [{"enum": types}, {"type": "null"}]})),
    )
    return create_model("FactList", __base__=FactList, facts=(list[fact], ...))


def _epoch(moment: datetime | None) -> float | None:
    if moment is None:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _prompt(batch: Sequence[Message]) -> str:
    lines = []
    for m in batch:
        when = datetime.fromtimestamp(m.timestamp, UTC).isoformat().replace("+00:00", "Z")
        lines.append(f"[{m.message_id}] {when} {m.author_name}: {m.content}")
    return "\n".join(lines)


def make_agent(model: Any, predicates: Sequence[str], entity_types: Sequence[str]) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import UserError

    try:
        return Agent(
            model, output_type=_constrained(predicates, entity_types),
            instructions=_INSTRUCTIONS.format(predicates=", ".join(predicates),
                                              types=", ".join(entity_types)),
            retries={"output": OUTPUT_RETRIES},
        )
    except UserError as exc:
        raise MemoryConfigError(f"fact extraction model {model!r} cannot be used: {exc}") from None


def _keep(out: FactOut, ids: set[str], predicates: Sequence[str],
          entity_types: Sequence[str]) -> str | None:
    """Why a validated fact cannot be kept, or None."""
    if out.predicate not in predicates:
        return f"unknown predicate {out.predicate!r} (allowed: {', '.join(predicates)})"
    for what, type_ in (("subject_type", out.subject_type), ("object_type", out.object_type)):
        if type_ is not None and type_ not in entity_types:
            return f"unknown {what} {type_!r} (allowed: {', '.join(entity_types)})"
    if out.evidence not in ids:
        return f"evidence {out.evidence!r} is not one of the messages given"
    return None


async def extract_with_model(
    messages: Sequence[Message], model: Any, *,
    predicates: Sequence[str] = EXTRACTED_PREDICATES,
    entity_types: Sequence[str] = ENTITY_TYPES, batch_size: int = BATCH_SIZE,
) -> ExtractionResult:
    from pydantic_ai.exceptions import (
        AgentRunError,
        ModelAuthenticationError,
        ModelNotFoundError,
    )

    agent = make_agent(model, predicates, entity_types)
    result = ExtractionResult()
    for i in range(0, len(messages), batch_size):
        batch = messages[i:i + batch_size]
        ids = [m.message_id for m in batch]
        try:
            run = await agent.run(_prompt(batch))
        except (ModelAuthenticationError, ModelNotFoundError) as exc:
            raise MemoryConfigError(f"fact extraction model {model!r}: {exc}") from exc
        except AgentRunError as exc:
            result.problems.append(
                f"messages {', '.join(ids)}: the model's facts were not used: {exc} "
                f"(output retried {OUTPUT_RETRIES}x)")
            continue
        for out in run.output.facts:
            if reason := _keep(out, set(ids), predicates, entity_types):
                result.problems.append(f"message {out.evidence}: fact ({out.subject}, "
                                       f"{out.predicate}, {out.object}) left out: {reason}")
                continue
            result.facts.append(ExtractedFact(
                subject=out.subject, predicate=out.predicate, object=out.object,
                evidence=out.evidence, confidence=out.confidence,
                subject_type=out.subject_type, object_type=out.object_type,
                attributes=dict(out.attributes), valid_at=_epoch(out.valid_at),
                invalid_at=_epoch(out.invalid_at),
            ))
    return result
