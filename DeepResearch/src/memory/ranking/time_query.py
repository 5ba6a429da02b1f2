"""Time expressions in a query ("last month", "in May", "two weeks ago", "yesterday", "on 8 May
2023"), resolved against a reference time (the retrieve's `as_of`) into time ranges, with the
maintained library dateparser (its `search_dates` finds them, `DateDataParser` says how wide
each is: a day, a week, a month, a year).

dateparser finds dates in many words that are not dates here ("may", "now", "we", a bare
"10"), so a match counts only when it looks like a time reference: it holds a year, a month
or weekday name with a number or a preposition ("in May", "on Friday"), or a relative word
("ago", "yesterday", "last week"). A relative expression anchored on something else ("two
weeks before the trip") is left out: only `as_of` anchors here. Times are UTC.

The ranking step TimeMatch: when the query names a time, memories whose event time falls in it
gain `weight` x the best score of the list. The event time is `event_at` when the caller gave
one (e.g. the date of a conversation's session), else the time the memory was stored. Nothing
is dropped: a query whose time words were misread loses nothing but the bonus.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory

DAY = timedelta(days=1)
_MONTHS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
).split()
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_YEAR = re.compile(r"\b(1[89]\d\d|2[01]\d\d)\b")
_RELATIVE = re.compile(
    r"\b(ago|yesterday|today|tonight|(last|past|previous|this)\s+"
    r"(day|week|weekend|month|year|spring|summer|autumn|fall|winter|"
    + "|".join(_WEEKDAYS) + "|" + "|".join(_MONTHS) + r"))\b"
)
_NAMED = re.compile(r"\b(" + "|".join(_MONTHS + _WEEKDAYS) + r")\b")
_PREPOSITION = re.compile(r"^(in|on|during|since|from|until|by|of|last|this)\s")
_ANCHORED_ELSEWHERE = re.compile(r"\b(before|after)\b")
# how wide a resolved date is, by dateparser's period; a relative week is centred on its date
_WIDTH = {"day": timedelta(days=1), "week": timedelta(days=7)}


@dataclass(frozen=True, slots=True)
class TimeRange:
    """[start, end) in UNIX epoch seconds, and the words of the query it came from."""

    start: float
    end: float
    text: str

    def contains(self, when: float) -> bool:
        return self.start <= when < self.end


def looks_like_time(text: str) -> bool:
    """Whether a dateparser match is a time reference rather than a word that parses as one."""
    words = text.lower().strip()
    if _ANCHORED_ELSEWHERE.search(words) and not _YEAR.search(words):
        return False
    if _YEAR.search(words) or _RELATIVE.search(words):
        return True
    if _NAMED.search(words):
        return bool(re.search(r"\d", words)) or bool(_PREPOSITION.match(words))
    return False


def _settings(as_of: datetime) -> dict[str, object]:
    return {
        "RELATIVE_BASE": as_of,
        "PREFER_DATES_FROM": "past",
        "PREFER_DAY_OF_MONTH": "first",
        "RETURN_TIME_AS_PERIOD": True,
        "TIMEZONE": "UTC",
        "RETURN_AS_TIMEZONE_AWARE": False,
    }


def _bounds(date: datetime, period: str, relative: bool) -> tuple[datetime, datetime]:
    day = date.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "month":
        start = day.replace(day=1)
        end = (start + timedelta(days=32)).replace(day=1)
    elif period == "year":
        start = day.replace(month=1, day=1)
        end = start.replace(year=start.year + 1)
    else:
        width = _WIDTH.get(period, DAY)
        start, end = (day, day + width) if not relative or width == DAY else (
            day - width / 2, day + width / 2
        )
        if relative and width == DAY:  # "3 days ago" is rarely exact: a day either side
            start, end = day - DAY, day + 2 * DAY
    return start, end


@lru_cache(maxsize=4096)
def _resolve(query: str, base: datetime) -> tuple[TimeRange, ...]:
    from dateparser.date import DateDataParser
    from dateparser.search import search_dates

    settings = _settings(base)
    found = search_dates(query, languages=["en"], settings=settings) or []
    parser = DateDataParser(languages=["en"], settings=settings)
    ranges: list[TimeRange] = []
    for text, _ in found:
        if not looks_like_time(text):
            continue
        data = parser.get_date_data(text)
        if data is None or data.date_obj is None:
            continue
        relative = bool(_RELATIVE.search(text.lower()))
        start, end = _bounds(data.date_obj, data.period or "day", relative)
        ranges.append(TimeRange(
            start.replace(tzinfo=UTC).timestamp(), end.replace(tzinfo=UTC).timestamp(), text
        ))
    return tuple(ranges)


def names_time(query: str) -> bool:
    """Whether `query` holds anything that could name a time (a year, a relative or a named
    day or month): only such a query's time ranges depend on the time it is asked at."""
    lowered = query.lower()
    return bool(_YEAR.search(lowered) or _RELATIVE.search(lowered) or _NAMED.search(lowered))


def time_ranges(query: str, as_of: float) -> tuple[TimeRange, ...]:
    """The time ranges the query names, resolved against `as_of` (epoch seconds); none when
    it names no time."""
    base = datetime.fromtimestamp(as_of, tz=UTC).replace(tzinfo=None)
    if not names_time(query):
        return ()  # nothing that could be a time: dateparser not asked
    return _resolve(query, base)


class TimeMatch(BaseStep):
    name = "time_match"

    def enabled(self, ctx: RankingContext) -> bool:
        cfg = ctx.retrieval.time_query
        return cfg.enabled and cfg.weight > 0

    def reads_clock(self, ctx: RankingContext) -> bool:
        return names_time(ctx.query)  # its time words are resolved against ctx.now

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        if not items:
            return items
        ranges = time_ranges(ctx.query, ctx.now)
        if not ranges:
            return items
        bonus = ctx.retrieval.time_query.weight * max(max(m.score for m in items), 1e-9)
        for m in items:
            r = m.record
            when = r.event_at if r.event_at is not None else r.created_at
            if any(span.contains(when) for span in ranges):
                m.score += bonus
                m.signals[self.name] = bonus
        return items
