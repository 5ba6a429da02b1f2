"""Common chat phrasings the offline extractor reads: natural languages as skills, a colleague
"at X", a subject with its team or organisation ("Sarah from marketing"), a sentence whose
subject (the author) is left out ("Started at Shopify in 2021."), and role statements ("Dana
is our CTO"), with the phrasings next to them that must not be read so.

Each row: the conversation ('Author: text' lines; a lone string is one message of Carol's)
and the exact set of (subject, predicate, object) it states, MENTIONED and PARTICIPATED_IN
left out of the comparison."""

from __future__ import annotations

import pytest

from test_memory.facts.extraction_support import facts_of

Triple = tuple[str, str, str]
Row = tuple[tuple[str, ...], set[Triple]]
_IGNORED = ("MENTIONED", "PARTICIPATED_IN")


def _rows(*rows: tuple[str | tuple[str, ...], set[Triple]]) -> list[Row]:
    return [((f"Carol: {lines}",) if isinstance(lines, str) else lines, triples)
            for lines, triples in rows]


LANGUAGES = _rows(
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

ROWS = LANGUAGES

@pytest.mark.parametrize("lines, expected", ROWS, ids=[" / ".join(r[0]) for r in ROWS])
async def test_phrasing_gives_exactly_its_facts(lines: tuple[str, ...],
                                                expected: set[Triple]) -> None:
    facts = await facts_of(*lines)
    found = {(f.subject, f.predicate, f.object) for f in facts if f.predicate not in _IGNORED}
    assert found == expected


async def test_a_known_skill_is_never_a_person() -> None:
    facts = await facts_of("Carol: I know French.", "Carol: I love French food.",
                           "Carol: I work with Python and Bob.")
    assert not [f for f in facts if f.object in ("French", "Python")
                and f.object_type == "Person"]

