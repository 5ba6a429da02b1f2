"""The fact extractor: offline rules (every predicate, confidence, "there", dates), message
validation, and the model path through pydantic-ai's FunctionModel."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from DeepResearch.src.memory.errors import MemoryConfigError, MemoryInputError
from DeepResearch.src.memory.facts.extraction import extract, parse_messages
from DeepResearch.src.memory.facts.model import ExtractedFact, ExtractionResult

NOW = "2024-06-01T12:00:00Z"
NOW_TS = datetime(2024, 6, 1, 12, tzinfo=UTC).timestamp()


def ts(year: int, month: int = 1, day: int = 1) -> float:
    return datetime(year, month, day, tzinfo=UTC).timestamp()


def conversation(*lines: str, when: str = NOW) -> list:
    """'Author: text' lines -> Messages m0, m1, ..."""
    raw = []
    for i, line in enumerate(lines):
        author, text = line.split(": ", 1)
        raw.append({"message_id": f"m{i}", "author_id": author.lower(), "author_name": author,
                    "content": text, "timestamp": when, "channel_id": "general"})
    return parse_messages(raw)


async def facts_of(*lines: str) -> list[ExtractedFact]:
    result = await extract(conversation(*lines))
    assert result.problems == []
    return result.facts


def find(facts: list[ExtractedFact], predicate: str, obj: str,
         subject: str | None = None) -> ExtractedFact:
    hits = [f for f in facts if f.predicate == predicate and f.object == obj
            and (subject is None or f.subject == subject)]
    assert hits, f"no {subject} {predicate} {obj} in {[(f.subject, f.predicate, f.object) for f in facts]}"
    return hits[0]


# --- every predicate from at least one phrasing --------------------------------------------

async def test_works_at_with_role_is_explicit_and_valid_from_the_message() -> None:
    facts = await facts_of("Alice: I work at Google as a software engineer.")
    fact = find(facts, "WORKS_AT", "Google", "Alice")
    assert fact.attributes["role"] == "software engineer"
    assert fact.object_type == "Organization" and fact.subject_type == "Person"
    assert fact.confidence >= 0.9
    assert fact.valid_at == NOW_TS and fact.invalid_at is None
    assert fact.evidence == "m0"


@pytest.mark.parametrize("line, org, role", [
    ("Bob: I'm a data scientist at Acme Corp.", "Acme Corp", "data scientist"),
    ("Bob: Then I joined Netflix as a product manager.", "Netflix", "product manager"),
    ("Bob: I have been working for the University of Toronto since 2019.",
     "University of Toronto", None),
    ("Bob: Bob's been with Stripe since 2020.", "Stripe", None),
])
async def test_other_works_at_phrasings(line: str, org: str, role: str | None) -> None:
    fact = find(await facts_of(line), "WORKS_AT", org, "Bob")
    assert fact.attributes.get("role") == role


async def test_there_is_the_organisation_last_mentioned_and_years_bound_the_validity() -> None:
    facts = await facts_of("Alice: I work at Google as a software engineer.",
                           "Bob: Nice! Charlie worked there from 2019 to 2022.")
    fact = find(facts, "WORKED_AT", "Google", "Charlie")
    assert fact.evidence == "m1"
    assert fact.valid_at == ts(2019) and fact.invalid_at == ts(2023)  # through 2022


async def test_there_follows_the_latest_organisation_within_a_sentence() -> None:
    facts = await facts_of("Alice: I worked at IBM. I joined Stripe in 2021 and worked there "
                           "until 2023.")
    assert find(facts, "WORKS_AT", "Stripe", "Alice").valid_at == ts(2021)
    assert find(facts, "WORKED_AT", "Stripe", "Alice").invalid_at == ts(2024)


async def test_there_without_an_organisation_is_reported_not_guessed() -> None:
    result = await extract(conversation("Bob: Charlie worked there for years."))
    assert not [f for f in result.facts if f.predicate == "WORKED_AT"]
    assert len(result.problems) == 1 and "m0" in result.problems[0]


async def test_leaving_ends_the_job() -> None:
    facts = await facts_of("Alice: I left Google in 2022. I don't work at IBM anymore.")
    assert find(facts, "WORKED_AT", "Google").invalid_at == ts(2023)
    assert find(facts, "WORKED_AT", "IBM").invalid_at == NOW_TS


async def test_has_skill_with_years_and_proficiency() -> None:
    fact = find(await facts_of("Alice: I've been coding in Python for 5 years."),
                "HAS_SKILL", "Python", "Alice")
    assert fact.attributes["years"] == 5
    assert fact.attributes["proficiency"] == "advanced"
    assert fact.object_type == "Skill"
    assert fact.valid_at == pytest.approx(NOW_TS - 5 * 365.25 * 86400)


@pytest.mark.parametrize("line, skill, proficiency", [
    ("Bob: I'm fluent in Spanish.", "Spanish", "expert"),
    ("Bob: I'm learning Rust.", "Rust", "beginner"),
    ("Bob: I know Python, Rust and Go.", "Go", None),
    ("Bob: I've been using Kubernetes since 2020.", "Kubernetes", "advanced"),  # 4.4 years
])
async def test_other_skill_phrasings(line: str, skill: str, proficiency: str | None) -> None:
    fact = find(await facts_of(line), "HAS_SKILL", skill, "Bob")
    assert fact.attributes.get("proficiency") == proficiency


async def test_interested_in_topics() -> None:
    facts = await facts_of("Bob: I'm into machine learning and I'm interested in distributed "
                           "systems. I also love hiking.")
    into = find(facts, "INTERESTED_IN", "machine learning", "Bob")
    interested = find(facts, "INTERESTED_IN", "distributed systems", "Bob")
    loves = find(facts, "INTERESTED_IN", "hiking", "Bob")
    assert into.object_type == "Topic"
    assert interested.confidence > into.confidence > loves.confidence


async def test_lives_in_from_we_moved_and_from_a_past_stay() -> None:
    facts = await facts_of("Bob: We moved to Berlin last year. I lived in Madrid from 2010 to "
                           "2014.")
    berlin = find(facts, "LIVES_IN", "Berlin", "Bob")  # "we" -> the author
    assert berlin.object_type == "Location" and berlin.valid_at == ts(2023)
    madrid = find(facts, "LIVES_IN", "Madrid", "Bob")
    assert (madrid.valid_at, madrid.invalid_at) == (ts(2010), ts(2015))


async def test_studied_at() -> None:
    facts = await facts_of("Alice: I studied at MIT. I did my PhD in physics at ETH Zurich. "
                           "I graduated from Oxford in 2015.")
    assert find(facts, "STUDIED_AT", "MIT", "Alice").object_type == "Organization"
    assert find(facts, "STUDIED_AT", "ETH Zurich").attributes["field"] == "physics"
    assert find(facts, "STUDIED_AT", "Oxford").invalid_at == ts(2016)


async def test_collaborating_weekly_is_knows_and_close_to() -> None:
    facts = await facts_of("Alice: Bob and I collaborate weekly.")
    knows = find(facts, "KNOWS", "Bob", "Alice")
    close = find(facts, "CLOSE_TO", "Bob", "Alice")
    assert close.attributes["frequency"] == "weekly"
    assert knows.object_type == close.object_type == "Person"
    assert knows.confidence > close.confidence


async def test_relations_name_people_known_and_close() -> None:
    facts = await facts_of("Gus: Ann is my manager. My best friend Ivy is great. I met Ben.")
    assert find(facts, "KNOWS", "Ann", "Gus").attributes["relation"] == "manager"
    assert not [f for f in facts if f.predicate == "CLOSE_TO" and f.object == "Ann"]
    assert find(facts, "CLOSE_TO", "Ivy", "Gus").attributes["relation"] == "best friend"
    find(facts, "KNOWS", "Ben", "Gus")


async def test_member_of_a_team() -> None:
    facts = await facts_of("Bob: I joined the data team in March 2024. I'm part of the Open "
                           "Source Initiative.")
    team = find(facts, "MEMBER_OF", "data team", "Bob")
    assert team.valid_at == ts(2024, 3)
    find(facts, "MEMBER_OF", "Open Source Initiative", "Bob")
    assert not [f for f in facts if f.predicate == "WORKS_AT"]  # a team is no employer


async def test_a_name_mentioned_is_a_low_confidence_mention() -> None:
    facts = await facts_of("Bob: Erin said the build is green. Let me ask Frank tomorrow.")
    erin, frank = find(facts, "MENTIONED", "Erin", "Bob"), find(facts, "MENTIONED", "Frank")
    assert erin.confidence == frank.confidence <= 0.3
    assert erin.object_type == "Person"
    assert not [f for f in facts if f.object in ("Let", "Bob")]


# --- confidence, negation, questions ------------------------------------------------------

async def test_explicit_beats_belief_beats_guess() -> None:
    facts = await facts_of("Alice: Bob knows Rust. I think Carl knows Rust. Maybe Dana knows "
                           "Rust.")
    explicit, belief, guess = (find(facts, "HAS_SKILL", "Rust", who).confidence
                               for who in ("Bob", "Carl", "Dana"))
    assert explicit > belief > guess
    first_person = find(await facts_of("Alice: I work at Google as an engineer."),
                        "WORKS_AT", "Google")
    assert first_person.confidence > explicit  # said by the person, explicitly


async def test_an_afterthought_hedge_weakens_its_own_clause_only() -> None:
    facts = await facts_of("Alice: I work at Google, and Bob knows Rust, I think.")
    assert find(facts, "WORKS_AT", "Google").confidence >= 0.9
    assert find(facts, "HAS_SKILL", "Rust", "Bob").confidence < 0.8


@pytest.mark.parametrize("line", [
    "Alice: I don't work at Google.",
    "Alice: I never worked at Google.",
    "Alice: I don't think Bob knows Rust.",
    "Alice: Do you work at Google?",
])
async def test_negations_denials_and_questions_state_nothing(line: str) -> None:
    facts = await facts_of(line)
    assert [f for f in facts if f.predicate != "MENTIONED"] == []


async def test_pronouns_resolve_to_the_last_person_named() -> None:
    facts = await facts_of("Carol: My friend Dave lives in Lisbon.", "Carol: He works at Airbnb.")
    fact = find(facts, "WORKS_AT", "Airbnb", "Dave")
    assert fact.confidence < 0.9  # a pronoun and hearsay


async def test_configured_predicates_restrict_the_offline_output() -> None:
    msgs = conversation("Alice: I work at Google and I live in Paris.")
    result = await extract(msgs, predicates=("LIVES_IN",))
    assert {f.predicate for f in result.facts} == {"LIVES_IN"}


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
])
def test_parse_messages_names_the_message_field_and_value(change: dict, words: list[str]) -> None:
    with pytest.raises(MemoryInputError) as caught:
        parse_messages([_raw(**change)])
    for word in words:
        assert word in str(caught.value)


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


async def test_every_offline_fact_has_its_validity_in_order() -> None:
    result = await extract(conversation(
        "Alice: I lived in Rome since 2030.", "Bob: I left Google in 2019 and I work at IBM "
        "until 2018.", when="2024-06-01T00:00:00Z"))
    assert result.facts
    for fact in result.facts:
        assert fact.valid_at is None or fact.invalid_at is None or fact.valid_at < fact.invalid_at


async def test_friends_know_each_other_at_least_as_surely_as_they_are_close() -> None:
    facts = await facts_of("Gus: I'm friends with Kim. I'm close friends with Lou.")
    kim_close, kim_knows = find(facts, "CLOSE_TO", "Kim"), find(facts, "KNOWS", "Kim")
    lou_close = find(facts, "CLOSE_TO", "Lou")
    assert kim_knows.confidence >= kim_close.confidence
    assert lou_close.confidence > kim_close.confidence


async def test_he_and_she_never_mean_the_author() -> None:
    facts = await facts_of("Alice: I work at Google. He works at Meta.")
    assert not [f for f in facts if f.object == "Meta" and f.predicate == "WORKS_AT"]
