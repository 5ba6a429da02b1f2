"""Common chat phrasings the offline extractor reads: natural languages as skills, a colleague
"at X", a subject with its team or organisation ("Sarah from marketing"), a sentence whose
subject (the author) is left out ("Started at Shopify in 2021."), and role statements ("Dana
is our CTO"), with the phrasings next to them that must not be read so.

Each row: the conversation ('Author: text' lines; a lone string is one message of Carol's)
and the exact set of (subject, predicate, object) it states, MENTIONED and PARTICIPATED_IN
left out of the comparison."""

from __future__ import annotations

import pytest

from DeepResearch.src.memory.facts.extraction import OfflineExtractor
from test_memory.facts.extraction_support import (
    Triple,
    carol_rows,
    conversation,
    facts_of,
    find,
    stated,
    ts,
)

LANGUAGES = carol_rows(
    ("I know French.", {("Carol", "HAS_SKILL", "French")}),
    ("I speak French.", {("Carol", "HAS_SKILL", "French")}),
    ("I know Mandarin and Japanese.",
     {("Carol", "HAS_SKILL", "Mandarin"), ("Carol", "HAS_SKILL", "Japanese")}),
    ("I know Spanish and Bob.", {("Carol", "HAS_SKILL", "Spanish"), ("Carol", "KNOWS", "Bob")}),
    ("Bob knows German.", {("Bob", "HAS_SKILL", "German")}),
    # a known skill word is never a person, whatever the verb
    ("I work with German and Bob.", {("Carol", "KNOWS", "Bob")}),
    ("I met Bob and Portuguese.", {("Carol", "KNOWS", "Bob")}),
    # a nationality before "developer" is no skill
    ("I'm a French developer.", set()),
)

COLLEAGUES = carol_rows(
    ("I work with Bob at Google.", {("Carol", "WORKS_AT", "Google"), ("Carol", "KNOWS", "Bob"),
                                    ("Bob", "WORKS_AT", "Google")}),
    ("I work with Bob.", {("Carol", "KNOWS", "Bob")}),
    ("I'm working with Bob and Dana at Acme Corp.",
     {("Carol", "WORKS_AT", "Acme Corp"), ("Carol", "KNOWS", "Bob"), ("Carol", "KNOWS", "Dana"),
      ("Bob", "WORKS_AT", "Acme Corp"), ("Dana", "WORKS_AT", "Acme Corp")}),
    ("I worked with Bob at Google from 2019 to 2021.",
     {("Carol", "WORKED_AT", "Google"), ("Carol", "KNOWS", "Bob"),
      ("Bob", "WORKED_AT", "Google")}),
    ("Bob works with Dana at Stripe.", {("Bob", "WORKS_AT", "Stripe"), ("Bob", "KNOWS", "Dana"),
                                        ("Dana", "WORKS_AT", "Stripe")}),
    # a skill is no colleague
    ("I work with Python at Google.",
     {("Carol", "WORKS_AT", "Google"), ("Carol", "HAS_SKILL", "Python")}),
    # only working with someone at X places both there
    ("I talk with Bob at Google.", {("Carol", "KNOWS", "Bob")}),
    ("I met Bob at Google.", {("Carol", "KNOWS", "Bob")}),
    ("I would work with Bob at Google.", set()),
    ("Join us at Google!", set()),
    ("Will you start at Google?", set()),
)

AFFILIATED_SUBJECTS = carol_rows(
    ("Sarah from marketing knows SQL.", {("Sarah", "HAS_SKILL", "SQL")}),
    ("Sarah in marketing knows SQL.", {("Sarah", "HAS_SKILL", "SQL")}),
    ("Sarah from the data team knows SQL.", {("Sarah", "HAS_SKILL", "SQL")}),
    ("Sarah at Acme knows SQL.", {("Sarah", "HAS_SKILL", "SQL"), ("Sarah", "WORKS_AT", "Acme")}),
    ("Sarah at Acme knows SQL and lives in Oslo.",
     {("Sarah", "HAS_SKILL", "SQL"), ("Sarah", "WORKS_AT", "Acme"), ("Sarah", "LIVES_IN", "Oslo")}),
    # "from X": an employer only when X is known to be one ("from Berlin" is as likely)
    ("Sarah from Acme knows SQL.", {("Sarah", "HAS_SKILL", "SQL")}),
    ("Sarah from Berlin knows SQL.", {("Sarah", "HAS_SKILL", "SQL")}),
    ("Sarah from Acme Corp knows SQL.",
     {("Sarah", "HAS_SKILL", "SQL"), ("Sarah", "WORKS_AT", "Acme Corp")}),
    (("Carol: I work at Acme.", "Carol: Sarah from Acme knows SQL."),
     {("Carol", "WORKS_AT", "Acme"), ("Sarah", "HAS_SKILL", "SQL"), ("Sarah", "WORKS_AT", "Acme")}),
    # "in X" is a team or a place, never an employer
    ("Sarah in Berlin knows SQL.", {("Sarah", "HAS_SKILL", "SQL")}),
    ("Sarah at MIT knows SQL.", {("Sarah", "HAS_SKILL", "SQL")}),  # a student, maybe
    # no one named: nothing, and the organisation is no subject
    ("Everyone at Google knows Python.", set()),
    ("Someone at Google knows Rust.", set()),
    ("Sarah at Acme doesn't know SQL.", set()),
)

LEFT_OUT_SUBJECT = carol_rows(
    ("Started at Shopify in 2021.", {("Carol", "WORKS_AT", "Shopify")}),
    ("Joined Stripe last month.", {("Carol", "WORKS_AT", "Stripe")}),
    ("Moved to Berlin in 2020.", {("Carol", "LIVES_IN", "Berlin")}),
    ("Just joined Stripe!", {("Carol", "WORKS_AT", "Stripe")}),
    ("Left Google in 2022.", {("Carol", "WORKED_AT", "Google")}),
    ("Worked at IBM from 2015 to 2019.", {("Carol", "WORKED_AT", "IBM")}),
    ("Studied at MIT.", {("Carol", "STUDIED_AT", "MIT")}),
    ("Met Bob at the conference.", {("Carol", "KNOWS", "Bob")}),
    ("Joined the data team in March.", {("Carol", "MEMBER_OF", "data team")}),
    ("started at Shopify in 2021", {("Carol", "WORKS_AT", "Shopify")}),
    ("Great news. Joined Stripe last month.", {("Carol", "WORKS_AT", "Stripe")}),
    ("Started at Shopify in 2021 and moved to Berlin.",
     {("Carol", "WORKS_AT", "Shopify"), ("Carol", "LIVES_IN", "Berlin")}),
    (("Bob: Moved to Berlin in 2020.",), {("Bob", "LIVES_IN", "Berlin")}),
    # questions, imperatives, plans and the middle of a sentence are not the author's
    ("Moved to Berlin?", set()),
    ("Started? no", set()),
    ("Started at Shopify?", set()),
    ("Join Stripe!", set()),
    ("Move to Berlin.", set()),
    ("Joining Stripe next month.", set()),
    ("Bob is great, joined Stripe last month.", set()),
    ("Both moved to Berlin in 2020.", set()),
    # joining a call is no new job, with or without "I"
    ("Joined the Zoom call.", set()),
    ("I joined the Google Meet call.", set()),
)

ROLE_STATEMENTS = carol_rows(
    # which organisation "our" means is not in the message: a mention of Dana, no employer
    ("Our CTO is Dana.", set()),
    ("Dana is our CTO.", set()),
    (("Carol: I work at Acme.", "Carol: Dana is our CTO."), {("Carol", "WORKS_AT", "Acme")}),
    # ... but Dana is known to be a person
    ("Dana is our CTO. She lives in Berlin.", {("Dana", "LIVES_IN", "Berlin")}),
    ("Dana is our manager.", {("Carol", "KNOWS", "Dana")}),
)

ROWS = LANGUAGES + COLLEAGUES + AFFILIATED_SUBJECTS + LEFT_OUT_SUBJECT + ROLE_STATEMENTS


@pytest.mark.parametrize("lines, expected", ROWS, ids=[" / ".join(r[0]) for r in ROWS])
async def test_phrasing_gives_exactly_its_facts(lines: tuple[str, ...],
                                                expected: set[Triple]) -> None:
    assert await stated(*lines) == expected


async def test_a_known_skill_is_never_a_person() -> None:
    facts = await facts_of("Carol: I know French.", "Carol: I love French food.",
                           "Carol: I work with Python and Bob.", "Carol: Our architect is Kafka.")
    assert not [f for f in facts if f.object in ("French", "Python", "Kafka")
                and f.object_type == "Person"]


async def test_what_is_said_of_another_is_less_sure_than_what_the_author_says() -> None:
    facts = await facts_of("Carol: I work with Bob at Google.", "Carol: Sarah at Acme knows SQL.",
                           "Carol: I think Ann at Stripe knows Go.")
    author = find(facts, "WORKS_AT", "Google", "Carol")
    colleague = find(facts, "WORKS_AT", "Google", "Bob")
    assert colleague.confidence < author.confidence
    assert colleague.valid_at == author.valid_at
    said = find(facts, "WORKS_AT", "Acme", "Sarah")
    assert said.confidence < find(facts, "HAS_SKILL", "SQL", "Sarah").confidence
    assert find(facts, "WORKS_AT", "Stripe", "Ann").confidence < said.confidence  # "I think"


async def test_a_left_out_subject_reads_as_i() -> None:
    for text, predicate, obj in (("Started at Shopify in 2021.", "WORKS_AT", "Shopify"),
                                 ("Moved to Berlin in 2020.", "LIVES_IN", "Berlin"),
                                 ("Left Google in 2022.", "WORKED_AT", "Google")):
        bare = find(await facts_of(f"Carol: {text}"), predicate, obj, "Carol")
        full = find(await facts_of(f"Carol: I {text[0].lower()}{text[1:]}"), predicate, obj,
                    "Carol")
        assert (bare.valid_at, bare.invalid_at, bare.confidence) == (
            full.valid_at, full.invalid_at, full.confidence)
    joined = find(await facts_of("Carol: Started at Shopify in 2021."), "WORKS_AT", "Shopify")
    assert joined.valid_at == ts(2021)


def test_a_document_s_sentence_without_subject_is_not_its_title_s() -> None:
    """A document's author is its title: "Moved to Berlin in 2020." there is no one's."""
    messages = conversation("Relocation guide: Moved to Berlin in 2020.")
    facts = OfflineExtractor(author_type="Topic").extract(messages).facts
    assert not [f for f in facts if f.predicate == "LIVES_IN"]


async def test_a_role_statement_mentions_the_person_not_the_title() -> None:
    for text in ("Dana is our CTO.", "Our CTO is Dana."):
        mentions = {(f.object, f.object_type) for f in await facts_of(f"Carol: {text}")
                    if f.predicate == "MENTIONED"}
        assert mentions == {("Dana", "Person")}
