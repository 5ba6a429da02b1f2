"""Clauses joined in one sentence keep their own subjects: a compound subject ("Bob and I")
only where a clause starts, lists that end where the next clause starts, a left-out subject
that is the previous clause's, and pronouns that name a person or no one."""

from __future__ import annotations

import pytest

from test_memory.facts.extraction_support import facts_of

Triple = tuple[str, str, str]

# (what Alice says, triples that must be found, triples that must not)
CLAUSES: list[tuple[str, list[Triple], list[Triple]]] = [
    # a second clause with its own "I", after each conjunction
    ("I live in New York and I know Python.",
     [("Alice", "LIVES_IN", "New York"), ("Alice", "HAS_SKILL", "Python")],
     [("New York", "HAS_SKILL", "Python")]),
    ("I live in New York, and I know Python.", [("Alice", "HAS_SKILL", "Python")],
     [("New York", "HAS_SKILL", "Python")]),
    ("I live in New York but I know Python.", [("Alice", "HAS_SKILL", "Python")],
     [("New York", "HAS_SKILL", "Python")]),
    ("I live in New York; I know Python.", [("Alice", "HAS_SKILL", "Python")],
     [("New York", "HAS_SKILL", "Python")]),
    ("I work at Google and I know Go.",
     [("Alice", "WORKS_AT", "Google"), ("Alice", "HAS_SKILL", "Go")],
     [("Google", "HAS_SKILL", "Go")]),
    ("I moved to San Francisco and I love hiking.", [("Alice", "INTERESTED_IN", "hiking")],
     [("San Francisco", "INTERESTED_IN", "hiking")]),
    ("I visited Berlin and I met Bob.", [("Alice", "KNOWS", "Bob")],
     [("Alice", "KNOWS", "Berlin"), ("Berlin", "KNOWS", "Bob")]),
    ("I'm friends with Kim and I live in Oslo.", [("Alice", "LIVES_IN", "Oslo")],
     [("Kim", "LIVES_IN", "Oslo")]),
    # ... and without one: the previous clause's subject
    ("I live in New York and know Python.", [("Alice", "HAS_SKILL", "Python")],
     [("New York", "HAS_SKILL", "Python")]),
    ("I work at Google and know Go.", [("Alice", "HAS_SKILL", "Go")],
     [("Google", "HAS_SKILL", "Go")]),
    ("I work at Google; know Go.", [("Alice", "WORKS_AT", "Google")],  # not read: no guess
     [("Google", "HAS_SKILL", "Go")]),
    ("Bob lives in Paris and knows Rust.", [("Bob", "HAS_SKILL", "Rust")],
     [("Alice", "HAS_SKILL", "Rust"), ("Paris", "HAS_SKILL", "Rust")]),
    ("Charlie worked at Google and now works at Meta.",
     [("Charlie", "WORKED_AT", "Google"), ("Charlie", "WORKS_AT", "Meta")],
     [("Alice", "WORKS_AT", "Meta"), ("Google", "WORKS_AT", "Meta")]),
    ("Ann is my manager and lives in Oslo.", [("Ann", "LIVES_IN", "Oslo")],
     [("Alice", "LIVES_IN", "Oslo")]),
    ("Bob and I collaborate weekly and live in Paris.",
     [("Alice", "LIVES_IN", "Paris"), ("Bob", "LIVES_IN", "Paris")], []),
    # a named person, then someone else
    ("Charlie worked at Google and I work at Meta.",
     [("Charlie", "WORKED_AT", "Google"), ("Alice", "WORKS_AT", "Meta")],
     [("Google", "WORKS_AT", "Meta"), ("Charlie", "WORKS_AT", "Meta")]),
    ("Bob lives in Paris and I know Rust.",
     [("Bob", "LIVES_IN", "Paris"), ("Alice", "HAS_SKILL", "Rust")],
     [("Paris", "HAS_SKILL", "Rust"), ("Bob", "HAS_SKILL", "Rust")]),
    ("I worked at Google and Charlie works at Meta.",
     [("Alice", "WORKED_AT", "Google"), ("Charlie", "WORKS_AT", "Meta")],
     [("Google", "WORKS_AT", "Meta"), ("Alice", "WORKS_AT", "Meta")]),
    ("I work at Acme Corp and Bob knows Rust.", [("Bob", "HAS_SKILL", "Rust")],
     [("Acme Corp", "HAS_SKILL", "Rust"), ("Alice", "HAS_SKILL", "Rust")]),
    # a list ends where the next clause starts
    ("I know Python and Bob knows Rust.",
     [("Alice", "HAS_SKILL", "Python"), ("Bob", "HAS_SKILL", "Rust")],
     [("Alice", "KNOWS", "Bob"), ("Alice", "HAS_SKILL", "Rust")]),
    ("I speak French and Bob speaks German.", [("Bob", "HAS_SKILL", "German")],
     [("Alice", "HAS_SKILL", "Bob"), ("Alice", "HAS_SKILL", "German")]),
    ("I met Bob and Carol knows Rust.",
     [("Alice", "KNOWS", "Bob"), ("Carol", "HAS_SKILL", "Rust")],
     [("Bob", "HAS_SKILL", "Rust"), ("Alice", "KNOWS", "Carol")]),
    ("I love hiking and Bob lives in Oslo.",
     [("Alice", "INTERESTED_IN", "hiking"), ("Bob", "LIVES_IN", "Oslo")],
     [("Alice", "INTERESTED_IN", "Bob lives in Oslo")]),
    ("I know Python, Rust and Go.", [("Alice", "HAS_SKILL", s) for s in ("Python", "Rust", "Go")],
     []),
    ("I know Python and Bob.", [("Alice", "HAS_SKILL", "Python"), ("Alice", "KNOWS", "Bob")], []),
    # compound subjects where a clause starts
    ("I worked at Google and Charlie and I work at Meta.",
     [("Alice", "WORKS_AT", "Meta"), ("Charlie", "WORKS_AT", "Meta")], []),
    ("I think Bob and I collaborate weekly.", [("Alice", "KNOWS", "Bob")], []),
    ("Last week Bob and I met.", [("Alice", "KNOWS", "Bob")], []),
    # he / she: the one person named, or no one (then the clause, and one continuing it
    # without a subject, say nothing)
    ("Bob lives in Paris and he knows Rust.", [("Bob", "HAS_SKILL", "Rust")],
     [("Alice", "HAS_SKILL", "Rust"), ("Paris", "HAS_SKILL", "Rust")]),
    ("I know Bob and he knows Rust.", [("Alice", "KNOWS", "Bob"), ("Bob", "HAS_SKILL", "Rust")],
     [("Alice", "HAS_SKILL", "Rust")]),
    ("I live in Paris and he knows Rust and speaks French.", [("Alice", "LIVES_IN", "Paris")],
     [("Alice", "HAS_SKILL", "Rust"), ("Alice", "HAS_SKILL", "French"),
      ("Paris", "HAS_SKILL", "Rust")]),
]


@pytest.mark.parametrize("text, expected, forbidden", CLAUSES, ids=[c[0] for c in CLAUSES])
async def test_each_clause_keeps_its_own_subject(text: str, expected: list[Triple],
                                                 forbidden: list[Triple]) -> None:
    found = {(f.subject, f.predicate, f.object) for f in await facts_of(f"Alice: {text}")}
    assert set(expected) <= found, found
    assert not set(forbidden) & found, found


async def test_a_name_of_unknown_kind_is_no_antecedent_of_he() -> None:
    """"Paris", only mentioned, might be a person or a place: "he" names no one."""
    facts = await facts_of("Alice: I visited Paris.", "Alice: He works at Google.")
    assert not [f for f in facts if f.predicate == "WORKS_AT"]
