"""What a clause does not assert is no fact: conditions, wishes, plans, negations and doubts;
and he / she name someone only when one person can be meant.

Each row: the conversation ('Author: text' lines) and the exact set of (subject, predicate,
object) it states; MENTIONED and PARTICIPATED_IN are left out of the comparison (a name
talked about is still mentioned)."""

from __future__ import annotations

import pytest

from test_memory.facts.extraction_support import facts_of

Triple = tuple[str, str, str]
Row = tuple[tuple[str, ...], set[Triple]]
_IGNORED = ("MENTIONED", "PARTICIPATED_IN")


def _rows(*rows: tuple[str | tuple[str, ...], set[Triple]]) -> list[Row]:
    """A lone string is one message of Carol's."""
    return [((f"Carol: {lines}",) if isinstance(lines, str) else lines, triples)
            for lines, triples in rows]


PLANS = _rows(
    ("I will move to Berlin next year.", set()),
    ("I'm going to join Google next month.", set()),
    ("I'm moving to Berlin in June.", set()),
    ("I'm moving to Berlin in June 2025.", set()),
    ("We are planning to move to Berlin.", set()),
    ("I plan to work at Meta.", set()),
    ("I'll start at Stripe on Monday.", set()),
    ("I will move to Berlin and work at SAP.", set()),
    # present progressive and past moves are current facts
    ("I'm working at Google.", {("Carol", "WORKS_AT", "Google")}),
    ("I'm living in Berlin now.", {("Carol", "LIVES_IN", "Berlin")}),
    ("I have been living in Berlin since 2020.", {("Carol", "LIVES_IN", "Berlin")}),
    ("I moved to Berlin last year.", {("Carol", "LIVES_IN", "Berlin")}),
)

ROWS = PLANS


@pytest.mark.parametrize("lines, expected", ROWS, ids=[" / ".join(r[0]) for r in ROWS])
async def test_only_what_is_asserted_is_a_fact(lines: tuple[str, ...],
                                              expected: set[Triple]) -> None:
    facts = await facts_of(*lines)
    found = {(f.subject, f.predicate, f.object) for f in facts if f.predicate not in _IGNORED}
    assert found == expected
