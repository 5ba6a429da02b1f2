"""The offline fact extractor: every predicate from at least one phrasing, confidence
(explicit > belief > guess), "there", dates and years, negations and small talk, robustness.
Message validation and the model path: test_extraction_inputs.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from DeepResearch.src.memory.facts.extraction import extract
from test_memory.facts.extraction_support import NOW_TS, conversation, facts_of, find, ts

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


async def test_living_there_is_the_place_last_named() -> None:
    facts = await facts_of("Alice: I moved to Berlin in 2020.", "Bob: I work at SAP. I live there too.")
    assert find(facts, "LIVES_IN", "Berlin", "Bob").evidence == "m1"


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
    # five calendar years before the message (2024-06-01 12:00), to the hour
    assert fact.valid_at == datetime(2019, 6, 1, 12, tzinfo=UTC).timestamp()


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


async def test_adverbs_inside_the_verb_and_forums() -> None:
    facts = await facts_of("Maria: I've always been passionate about veterans' rights. I "
                           "joined a fantasy literature forum last night.")
    assert find(facts, "INTERESTED_IN", "veterans' rights").confidence == 0.88
    assert find(facts, "MEMBER_OF", "fantasy literature forum").valid_at is not None


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


async def test_a_pronoun_resolves_to_the_one_person_named() -> None:
    facts = await facts_of("Carol: My friend Dave lives in Lisbon.", "Carol: He works at Airbnb.")
    fact = find(facts, "WORKS_AT", "Airbnb", "Dave")
    assert fact.confidence < 0.9  # a pronoun and hearsay


async def test_configured_predicates_restrict_the_offline_output() -> None:
    msgs = conversation("Alice: I work at Google and I live in Paris.")
    result = await extract(msgs, predicates=("LIVES_IN",))
    assert {f.predicate for f in result.facts} == {"LIVES_IN"}


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


@pytest.mark.parametrize("line", [
    "Dina: I'm interested in the results.",  # "the results": named before, no topic
    "Dina: We joined Slack.",  # a tool, not an employer
    "Dina: I left Slack open.",
    "Dina: I like it.",
    "Dina: I work from home today.",
    "Dina: I joined the meeting late.",
    "Dina: We moved the meeting to Friday.",
    "Dina: I know, right?",
    "Dina: i work at home",  # lower-case chat: a common word is no name
    # shapes of real chat (LoCoMo-like) that once gave facts
    "Dina: Sounds like a great plan! Looks like fun.",  # no "Sounds" who likes a plan
    "Dina: I love that first movie too.",  # a thing named before, not an interest
    "Dina: I love how you did it. I like having some of them around.",
    "Dina: I joined a group of hikers.",  # no group named "a group"
])
async def test_small_talk_states_no_fact(line: str) -> None:
    assert [f for f in await facts_of(line) if f.predicate != "MENTIONED"] == []


async def test_sentence_openers_are_no_mentions() -> None:
    facts = await facts_of("Dina: Life is good. Dancing is fun. Glad I went! Lately I rest.")
    assert [f.object for f in facts] == []


async def test_tools_worked_with_are_skills_not_people() -> None:
    facts = await facts_of("Dina: I work with Jira daily. I'm good at Mario Kart.")
    assert find(facts, "HAS_SKILL", "Jira").object_type == "Skill"
    assert find(facts, "HAS_SKILL", "Mario Kart").attributes["proficiency"] == "advanced"
    assert not [f for f in facts if f.predicate in ("KNOWS", "CLOSE_TO")]


def test_any_text_gives_well_formed_facts_or_none() -> None:
    """Seeded word soup and random characters: no exception, and every fact is one the graph
    accepts (names, a known predicate and types, confidence in [0, 1], times in order)."""
    import random
    import string

    from DeepResearch.src.memory.facts.extraction import OfflineExtractor
    from DeepResearch.src.memory.facts.model import ENTITY_TYPES, PREDICATES, Message

    words = ("I we he she Bob Alice and there work worked at for Google in from to 2019 2022 "
             "since years maybe think not never joined the team club moved lived live studied "
             "MIT know knows Rust Python friend my is was , . ? ! ' ’ don't I'm I've Then "
             "coding as a engineer with weekly into").split()
    rng = random.Random(20261126)
    extractor = OfflineExtractor()
    for i in range(3000):
        if rng.random() < 0.2:
            text = "".join(rng.choice(string.printable + "éü’—") for _ in range(rng.randint(1, 80)))
        else:
            text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 25)))
        message = Message(f"m{i}", "a", "Alice", text, 1.7e9)
        for fact in extractor.extract([message]).facts:
            assert fact.subject.strip() and fact.object.strip(), (text, fact)
            assert fact.predicate in PREDICATES and fact.subject_type in ENTITY_TYPES, (text, fact)
            assert fact.object_type is None or fact.object_type in ENTITY_TYPES, (text, fact)
            assert 0.0 <= fact.confidence <= 1.0 and fact.evidence == f"m{i}", (text, fact)
            assert (fact.valid_at is None or fact.invalid_at is None
                    or fact.valid_at < fact.invalid_at), (text, fact)


async def test_a_large_batch_is_extracted_off_the_event_loop() -> None:
    """The loop keeps running (a ticker advances) while a large batch is extracted."""
    import asyncio

    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    lines = [f"User{i}: I work at Acme{i} as an engineer and I live in Berlin." for i in range(600)]
    task = asyncio.create_task(ticker())
    result = await extract(conversation(*lines))
    task.cancel()
    assert len([f for f in result.facts if f.predicate == "WORKS_AT"]) == 600
    assert ticks > 1


@pytest.mark.parametrize(("line", "predicate", "obj", "valid_at"), [
    # a decimal count is read as written (1.5 years, not 15) on the calendar, to the hour
    ("Bob: I moved to Berlin 1.5 years ago.", "LIVES_IN", "Berlin",
     datetime(2022, 12, 1, 12, tzinfo=UTC)),
    # dateparser reads "this week" against the message's day (2024-06-01)
    ("Bob: I joined the chess club this week.", "MEMBER_OF", "chess club",
     datetime(2024, 6, 1, tzinfo=UTC)),
    ("Bob: I moved to Lisbon on 5th of March, 2020.", "LIVES_IN", "Lisbon",
     datetime(2020, 3, 5, tzinfo=UTC)),
    ("Bob: We moved to Oslo last month.", "LIVES_IN", "Oslo", datetime(2024, 5, 1, tzinfo=UTC)),
])
async def test_dates_are_read_against_the_message(line: str, predicate: str, obj: str,
                                                  valid_at: datetime) -> None:
    assert find(await facts_of(line), predicate, obj).valid_at == valid_at.timestamp()


@pytest.mark.parametrize(("now", "years", "then"), [
    (datetime(2024, 3, 1, 10, tzinfo=UTC), 6, datetime(2018, 3, 1, 10, tzinfo=UTC)),
    (datetime(2024, 2, 29, tzinfo=UTC), 1, datetime(2023, 2, 28, tzinfo=UTC)),  # no 29th then
    (datetime(2024, 3, 31, tzinfo=UTC), 1 / 12, datetime(2024, 2, 29, tzinfo=UTC)),  # a month
    (datetime(2024, 1, 15, tzinfo=UTC), 0.5, datetime(2023, 7, 15, tzinfo=UTC)),
])
def test_years_back_are_calendar_years(now: datetime, years: float, then: datetime) -> None:
    from DeepResearch.src.memory.facts.extraction.dates import years_before

    assert years_before(now.timestamp(), years) == then.timestamp()
