"""Time in retrieval: query time expressions resolved against a fixed as_of (dateparser),
`as_of` as the reference of every time-aware step, and the bonus of memories whose event
time falls in the query's range. Real embedder and backends, no mocks."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from DeepResearch.src.memory import MemorySystemClient
from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.ranking.time_query import looks_like_time, time_ranges

MakeClient = Callable[..., MemorySystemClient]
AS_OF = datetime(2023, 8, 20, 12, 0, tzinfo=UTC)  # a Sunday


def _days(query: str) -> list[tuple[str, str]]:
    return [
        (datetime.fromtimestamp(r.start, UTC).strftime("%Y-%m-%d"),
         datetime.fromtimestamp(r.end, UTC).strftime("%Y-%m-%d"))
        for r in time_ranges(query, AS_OF.timestamp())
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did I buy last month?", [("2023-07-01", "2023-08-01")]),
        ("what happened in May", [("2023-05-01", "2023-06-01")]),  # the last May before as_of
        ("what did I do two weeks ago", [("2023-08-02", "2023-08-09")]),  # a week around it
        ("what did we eat yesterday", [("2023-08-18", "2023-08-21")]),  # a day either side
        ("What did Melanie do on 8 May 2023?", [("2023-05-08", "2023-05-09")]),
        ("What painting did she show on October 13, 2022?", [("2022-10-13", "2022-10-14")]),
    ],
)
def test_time_expressions_resolve_against_as_of(query: str, expected: list) -> None:
    assert _days(query) == expected


@pytest.mark.parametrize(
    "query",
    ["What may I do now?", "I march on", "Who was the second person?", "What did we do?",
     "What did she buy two weeks before the trip?"],
)
def test_words_that_merely_parse_as_dates_are_not_times(query: str) -> None:
    assert time_ranges(query, AS_OF.timestamp()) == ()


def test_the_guard_reads_prepositions_numbers_and_relative_words() -> None:
    assert looks_like_time("in May") and looks_like_time("8 May") and looks_like_time("3 days ago")
    assert not looks_like_time("may") and not looks_like_time("10") and not looks_like_time("now")


async def test_a_memory_of_the_named_month_comes_first_as_of_then(make_client: MakeClient) -> None:
    client = make_client()
    base = AS_OF - timedelta(days=200)
    await client.store_many([
        {"content": "I bought new running shoes at the mall", "event_at": datetime(2023, 5, 12)},
        {"content": "I bought a new running jacket at the mall", "event_at": datetime(2023, 7, 9)},
        {"content": "I bought running socks at the mall", "event_at": base},
    ])
    asked = "What did I buy at the mall in May?"
    hits = await client.retrieve(asked, top_k=3, as_of=AS_OF)
    assert "shoes" in hits[0].content and hits[0].signals.get("time_match", 0) > 0
    # Without as_of the question is asked now: "in May" is another May, which no memory is in.
    now_hits = await client.retrieve(asked, top_k=3)
    assert all("time_match" not in h.signals for h in now_hits)
    assert hits[0].document.event_at == datetime(2023, 5, 12, tzinfo=UTC)


async def test_as_of_is_the_reference_of_ttl(make_client: MakeClient) -> None:
    client = make_client()
    stored = datetime.now(UTC).timestamp()
    await client.store("a memory that lives an hour", ttl=3600.0, created_at=stored)
    later = datetime.fromtimestamp(stored + 7200, UTC)
    assert await client.retrieve("memory that lives", as_of=later) == []
    assert len(await client.retrieve("memory that lives", as_of=later - timedelta(hours=1.5))) == 1


async def test_as_of_is_the_reference_of_max_age(make_client: MakeClient) -> None:
    client = make_client(retrieval={"max_age_seconds": 86_400.0})
    await client.store("an old note about gardening", created_at=AS_OF.timestamp() - 3600)
    assert len(await client.retrieve("gardening", as_of=AS_OF)) == 1
    assert await client.retrieve("gardening", as_of=AS_OF + timedelta(days=2)) == []


@pytest.mark.parametrize("bad", ["2023-05-08", 1683504000.0, None.__class__])
async def test_a_bad_as_of_is_refused_naming_it(make_client: MakeClient, bad: object) -> None:
    client = make_client()
    with pytest.raises(MemoryInputError, match="as_of must be a datetime"):
        await client.retrieve("anything", as_of=bad)  # type: ignore[arg-type]


async def test_a_bad_event_at_is_refused_naming_it(make_client: MakeClient) -> None:
    client = make_client()
    with pytest.raises(MemoryInputError, match="event_at must be a datetime or epoch"):
        await client.store("text", event_at="yesterday")
