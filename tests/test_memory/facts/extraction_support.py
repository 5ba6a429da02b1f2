"""Shared by the extraction tests: conversations from 'Author: text' lines, fact lookup."""

from __future__ import annotations

from datetime import UTC, datetime

from DeepResearch.src.memory.facts.extraction import extract, parse_messages
from DeepResearch.src.memory.facts.model import ExtractedFact, Message

NOW = "2024-06-01T12:00:00Z"
NOW_TS = datetime(2024, 6, 1, 12, tzinfo=UTC).timestamp()


def ts(year: int, month: int = 1, day: int = 1) -> float:
    return datetime(year, month, day, tzinfo=UTC).timestamp()


def conversation(*lines: str, when: str = NOW) -> list[Message]:
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


Triple = tuple[str, str, str]
Row = tuple[tuple[str, ...], set[Triple]]  # a conversation's lines, what it states


def carol_rows(*rows: tuple[str | tuple[str, ...], set[Triple]]) -> list[Row]:
    """Table rows; a lone string is one message of Carol's."""
    return [((f"Carol: {lines}",) if isinstance(lines, str) else lines, triples)
            for lines, triples in rows]


async def stated(*lines: str) -> set[Triple]:
    """(subject, predicate, object) of what a conversation states; MENTIONED and
    PARTICIPATED_IN (a name talked about is still mentioned) left out."""
    return {(f.subject, f.predicate, f.object) for f in await facts_of(*lines)
            if f.predicate not in ("MENTIONED", "PARTICIPATED_IN")}


def find(facts: list[ExtractedFact], predicate: str, obj: str,
         subject: str | None = None) -> ExtractedFact:
    hits = [f for f in facts if f.predicate == predicate and f.object == obj
            and (subject is None or f.subject == subject)]
    assert hits, f"no {subject} {predicate} {obj} in {[(f.subject, f.predicate, f.object) for f in facts]}"
    return hits[0]
