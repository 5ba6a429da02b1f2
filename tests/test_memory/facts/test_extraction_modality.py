"""What a clause does not assert is no fact: conditions, wishes, plans, negations and doubts;
and he / she name someone only when one person can be meant.

Each row: the conversation ('Author: text' lines) and the exact set of (subject, predicate,
object) it states; MENTIONED and PARTICIPATED_IN are left out of the comparison (a name
talked about is still mentioned)."""

from __future__ import annotations

import pytest

from test_memory.facts.extraction_support import Triple, carol_rows, stated

CONDITIONS_AND_WISHES = carol_rows(
    ("If I worked at Google I would be happy.", set()),
    ("I would be happy if I worked at Google.", set()),
    ("If I worked at Google and lived in Paris, I would be happy.", set()),
    ("If I worked at Google, and lived in Paris, I would be happy.", set()),
    ("If Bob knows Rust he can help.", set()),
    ("Unless Bob lives in Oslo we meet in Paris.", set()),
    ("I don't know if Bob works at Google.", set()),
    ("I wonder whether Bob still lives in Oslo.", set()),
    ("I wish I lived in Paris.", set()),
    ("I'd like to work at Apple.", set()),
    ("I'd love to live in Paris and work at Google.", set()),
    ("I know Python and would like to work at Apple and live in Cupertino.",
     {("Carol", "HAS_SKILL", "Python")}),
    ("I want to learn Rust.", set()),
    ("I was hoping to work at Apple.", set()),
    ("I could move to Berlin.", set()),
    ("Would you work at Google?", set()),
    ("Maybe I'll join Stripe.", set()),
    ("I doubt Bob works at Google and lives in Paris.", set()),  # the doubt covers both
    # what follows a condition, past its comma, is said
    ("Even if Bob works at Google, I live in Paris and know Python.",
     {("Carol", "LIVES_IN", "Paris"), ("Carol", "HAS_SKILL", "Python")}),
    ("If you need help, Bob knows Rust.", {("Bob", "HAS_SKILL", "Rust")}),
    ("Bob works at Google if you need a contact.", {("Bob", "WORKS_AT", "Google")}),
)

PLANS = carol_rows(
    ("I will move to Berlin next year.", set()),
    ("I'm going to join Google next month.", set()),
    ("I'm moving to Berlin in June.", set()),
    ("I'm moving to Berlin in June 2025.", set()),
    ("We are planning to move to Berlin.", set()),
    ("I plan to work at Meta.", set()),
    ("I'll start at Stripe on Monday.", set()),
    ("I will move to Berlin and work at SAP.", set()),
    ("I know Go and plan to move to Berlin and work at SAP.", {("Carol", "HAS_SKILL", "Go")}),
    # present progressive and past moves are current facts
    ("I'm working at Google.", {("Carol", "WORKS_AT", "Google")}),
    ("I'm living in Berlin now.", {("Carol", "LIVES_IN", "Berlin")}),
    ("I have been living in Berlin since 2020.", {("Carol", "LIVES_IN", "Berlin")}),
    ("I moved to Berlin last year.", {("Carol", "LIVES_IN", "Berlin")}),
)

PRONOUNS = carol_rows(
    ("Alice and Bob met yesterday. She works at Stripe.", {("Alice", "KNOWS", "Bob")}),
    (("Carol: Alice and Bob met yesterday.", "Carol: He works at Stripe."),
     {("Alice", "KNOWS", "Bob")}),
    ("Alice met Bob and she works at Stripe.", {("Alice", "KNOWS", "Bob")}),
    ("I met Bob at Google. I met Alice too. She works at Stripe.",
     {("Carol", "KNOWS", "Bob"), ("Carol", "KNOWS", "Alice")}),
    # a name only mentioned may be the one meant: no guess
    (("Carol: My colleague Dave lives in Lisbon.", "Carol: Erin called me. She works at Stripe."),
     {("Carol", "KNOWS", "Dave"), ("Dave", "LIVES_IN", "Lisbon")}),
    # the speaker is no "he" of their own
    (("Carol: My colleague Dave lives in Lisbon.", "Dave: He works at Airbnb."),
     {("Carol", "KNOWS", "Dave"), ("Dave", "LIVES_IN", "Lisbon")}),
    # "they" is not resolved (mostly a group or an organisation)
    (("Carol: My colleague Dave lives in Lisbon.", "Carol: They work at Airbnb."),
     {("Carol", "KNOWS", "Dave"), ("Dave", "LIVES_IN", "Lisbon")}),
    # one person: he / she is that person, along a chain of sentences
    (("Carol: My colleague Dave lives in Lisbon.", "Carol: He works at Airbnb.",
      "Carol: He knows Rust. He speaks Spanish."),
     {("Carol", "KNOWS", "Dave"), ("Dave", "LIVES_IN", "Lisbon"), ("Dave", "WORKS_AT", "Airbnb"),
      ("Dave", "HAS_SKILL", "Rust"), ("Dave", "HAS_SKILL", "Spanish")}),
    ("Bob lives in Paris and he knows Rust.",
     {("Bob", "LIVES_IN", "Paris"), ("Bob", "HAS_SKILL", "Rust")}),
    ("Alice works at Acme. Bob worked at IBM. She lives in Boston.",
     {("Alice", "WORKS_AT", "Acme"), ("Bob", "WORKED_AT", "IBM")}),
    # what the text showed: a person once "she" is no "he", and the reverse
    ("Alice works at Acme. She lives in Boston. Bob worked at IBM. He studied at MIT.",
     {("Alice", "WORKS_AT", "Acme"), ("Alice", "LIVES_IN", "Boston"),
      ("Bob", "WORKED_AT", "IBM"), ("Bob", "STUDIED_AT", "MIT")}),
    ("Bob lives in Paris and he knows Rust. Alice met Bob. She works at Stripe.",
     {("Bob", "LIVES_IN", "Paris"), ("Bob", "HAS_SKILL", "Rust"), ("Alice", "KNOWS", "Bob"),
      ("Alice", "WORKS_AT", "Stripe")}),
)

NEGATIONS = carol_rows(
    ("I've never worked at IBM.", set()),
    ("I haven't lived in Paris.", set()),
    ("Bob doesn't work at Google.", set()),
    ("I didn't study at MIT.", set()),
    ("Not sure I know Kubernetes.", set()),
    ("I'm not sure Bob knows Rust.", set()),
    ("I don't know Python.", set()),
    ("I don't work at Google anymore.", {("Carol", "WORKED_AT", "Google")}),
    ("I no longer live in Paris.", {("Carol", "LIVES_IN", "Paris")}),
    # a doubt set apart by a comma and "but" is a hedge: the clause after it is said, weakly
    ("I'm not sure, but Bob knows Rust.", {("Bob", "HAS_SKILL", "Rust")}),
)

ROWS = CONDITIONS_AND_WISHES + PLANS + PRONOUNS + NEGATIONS


@pytest.mark.parametrize("lines, expected", ROWS, ids=[" / ".join(r[0]) for r in ROWS])
async def test_only_what_is_asserted_is_a_fact(lines: tuple[str, ...],
                                              expected: set[Triple]) -> None:
    assert await stated(*lines) == expected
