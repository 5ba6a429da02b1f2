"""parse_messages (each accepted form, each refusal naming message, field and value) and the
model path of extract through pydantic-ai's FunctionModel (valid output, invalid twice ->
reported, invalid then valid -> kept, unknown predicates reported, batches)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from DeepResearch.src.memory.errors import MemoryConfigError, MemoryInputError
from DeepResearch.src.memory.facts.extraction import extract, parse_messages
from DeepResearch.src.memory.facts.model import ExtractedFact, ExtractionResult
from test_memory.facts.extraction_support import NOW_TS, conversation

# --- parse_messages -------------------------------------------------------------------------

def _raw(**change: Any) -> dict[str, Any]:
    raw = {"message_id": "m1", "author_id": "u1", "author_name": "Alice", "content": "hi",
           "timestamp": "2024-06-01T12:00:00+02:00"}
    raw.update(change)
    return {k: v for k, v in raw.items() if v is not ...}


@pytest.mark.parametrize("timestamp, expected", [
    ("2024-06-01T12:00:00Z", NOW_TS),
    ("2024-06-01T12:00:00", NOW_TS),  # no offset: UTC
    ("2024-06-01T14:00:00+02:00", NOW_TS),
    (datetime(2024, 6, 1, 12, tzinfo=UTC), NOW_TS),
    (NOW_TS, NOW_TS),
    (int(NOW_TS), NOW_TS),
])
def test_parse_messages_reads_each_timestamp_form(timestamp: Any, expected: float) -> None:
    (message,) = parse_messages([_raw(timestamp=timestamp, channel_id="c1")])
    assert message.timestamp == expected and message.channel_id == "c1"


@pytest.mark.parametrize("change, words", [
    ({"author_name": ...}, ["#0", "'m1'", "author_name"]),
    ({"timestamp": "yesterday-ish"}, ["#0", "'m1'", "timestamp", "yesterday-ish"]),
    ({"timestamp": "2024-13-45"}, ["timestamp", "2024-13-45", "ISO 8601"]),
    ({"timestamp": 1_717_243_200_000}, ["timestamp", "milliseconds"]),
    ({"timestamp": True}, ["timestamp", "bool"]),
    ({"content": 42}, ["content", "int", "42"]),
    ({"content": "   "}, ["content", "empty"]),
    ({"message_id": 7}, ["#0", "message_id", "int"]),
    ({"author_name": "A" * 201}, ["#0", "'m1'", "author_name", "longer than 200"]),
    ({"channel_id": ""}, ["#0", "channel_id", "empty"]),
])
def test_parse_messages_names_the_message_field_and_value(change: dict, words: list[str]) -> None:
    with pytest.raises(MemoryInputError) as caught:
        parse_messages([_raw(**change)])
    for word in words:
        assert word in str(caught.value)


def test_parse_messages_takes_messages_as_they_are() -> None:
    (message,) = parse_messages([_raw()])
    assert parse_messages([message]) == [message]


def test_parse_messages_gives_the_default_channel_to_messages_naming_none() -> None:
    named, unnamed = parse_messages([_raw(channel_id="c1"), _raw(message_id="m2")], "general")
    assert (named.channel_id, unnamed.channel_id) == ("c1", "general")


def test_parse_messages_names_the_index_of_a_later_bad_message() -> None:
    with pytest.raises(MemoryInputError, match=r"#1 \(id 'm2'\).*timestamp"):
        parse_messages([_raw(), _raw(message_id="m2", timestamp="soon")])
    with pytest.raises(MemoryInputError, match=r"#1.*repeats"):
        parse_messages([_raw(), _raw()])
    with pytest.raises(MemoryInputError, match=r"#0.*mapping"):
        parse_messages(["hello"])


# --- the model path ---------------------------------------------------------------------

GOOD = {"subject": "Alice", "predicate": "WORKS_AT", "object": "Google",
        "object_type": "Organization", "evidence": "m0", "confidence": 0.95,
        "valid_at": "2024-06-01T12:00:00Z", "attributes": {"role": "engineer"}}
BAD = {"subject": "Alice", "predicate": "WORKS_AT", "object": "Google", "evidence": "m0",
       "confidence": 1.7}  # out of [0, 1]


def scripted(*outputs: list[dict[str, Any]]) -> tuple[FunctionModel, list[AgentInfo]]:
    """A model answering the i-th request with outputs[i] (the last one again after)."""
    seen: list[AgentInfo] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        facts = outputs[min(len(seen), len(outputs) - 1)]
        seen.append(info)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"facts": facts})])

    return FunctionModel(answer), seen


async def test_the_model_lists_valid_facts_with_a_constrained_schema() -> None:
    model, seen = scripted([GOOD])
    result = await extract(conversation("Alice: I work at Google."), model=model)
    assert result == ExtractionResult(facts=[ExtractedFact(
        subject="Alice", predicate="WORKS_AT", object="Google", evidence="m0",
        confidence=0.95, object_type="Organization", attributes={"role": "engineer"},
        valid_at=NOW_TS)])
    schema = seen[0].output_tools[0].parameters_json_schema
    fact_schema = next(iter(schema["$defs"].values()))
    assert "HAS_SKILL" in fact_schema["properties"]["predicate"]["enum"]
    assert "PARTICIPATED_IN" not in fact_schema["properties"]["predicate"]["enum"]


async def test_invalid_output_twice_is_reported_with_the_message_ids() -> None:
    model, seen = scripted([BAD])
    result = await extract(conversation("Alice: I work at Google.", "Bob: hi"), model=model)
    assert len(seen) == 2  # the output was retried once
    assert result.facts == []
    assert len(result.problems) == 1
    assert "m0, m1" in result.problems[0]


async def test_invalid_then_valid_output_is_kept() -> None:
    model, seen = scripted([BAD], [GOOD])
    result = await extract(conversation("Alice: I work at Google."), model=model)
    assert len(seen) == 2
    assert [f.object for f in result.facts] == ["Google"] and result.problems == []


async def test_unknown_predicates_and_foreign_evidence_are_reported_not_kept() -> None:
    odd = [GOOD, {**GOOD, "predicate": "LIKES", "object": "tea"},
           {**GOOD, "evidence": "m42"}, {**GOOD, "object_type": "Planet"}]
    model, _ = scripted(odd)
    result = await extract(conversation("Alice: I work at Google."), model=model)
    assert [f.object for f in result.facts] == ["Google"]
    assert len(result.problems) == 3
    assert "LIKES" in result.problems[0] and "m0" in result.problems[0]
    assert "m42" in result.problems[1] and "Planet" in result.problems[2]


async def test_messages_go_to_the_model_in_batches() -> None:
    model, seen = scripted([])
    lines = [f"Alice: message {i}" for i in range(45)]
    result = await extract(conversation(*lines), model=model)
    assert len(seen) == 3 and result == ExtractionResult()


async def test_an_unusable_model_name_is_a_config_error() -> None:
    with pytest.raises(MemoryConfigError, match="nonsense-model"):
        await extract(conversation("Alice: hi"), model="nonsense-model")


async def test_the_model_is_never_offered_participated_in() -> None:
    model, seen = scripted([])
    await extract(conversation("Alice: hi"), model=model,
                  predicates=("WORKS_AT", "PARTICIPATED_IN", "LEADS"))
    fact_schema = next(iter(seen[0].output_tools[0].parameters_json_schema["$defs"].values()))
    assert fact_schema["properties"]["predicate"]["enum"] == ["WORKS_AT", "LEADS"]
