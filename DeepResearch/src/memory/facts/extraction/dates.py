"""Time phrases in a clause, resolved against the message's timestamp (UTC, epoch seconds).

A named period resolves to the half-open interval [its first instant, the first instant
after it): "2019" -> [2019-01-01, 2020-01-01), "March 2020" -> [2020-03-01, 2020-04-01),
"2020-03-05" -> that day. Ranges are inclusive as English uses them: "from 2019 to 2022"
-> start 2019-01-01, end 2023-01-01 (a fact's validity is [valid_at, invalid_at)).

Recognised: from/between A to/and B, A-B (years), since A, until/till/through A, in/on/back
in A, "for N years/months/weeks" (a duration), "N years ago", last/this year/month/week,
yesterday, today. Dates: a year (1900-2099), Month YYYY, Month D(, YYYY), D Month YYYY,
YYYY-MM, YYYY-MM-DD. The patterns below find the phrases and say what role each plays (since,
until, a range); dateparser reads each date, relative ones against the message's time
(its RELATIVE_BASE), and says how wide it is (a day, a week, a month, a year).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from dateutil.relativedelta import relativedelta

from DeepResearch.src.memory.facts.extraction.vocab import NUMBER_WORDS

_MONTHS = (
    "january jan february feb march mar april apr may june jun july jul august aug september "
    "sep sept october oct november nov december dec"
).split()
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?:19|20)\d\d"
_NUM = r"(?:\d+(?:\.\d+)?|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + ")"
DATE = (
    rf"(?:{_YEAR}-(?:0[1-9]|1[0-2])(?:-\d\d)?|{_MONTH} \d{{1,2}}(?:st|nd|rd|th)?,? {_YEAR}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)? (?:of )?{_MONTH},? {_YEAR}|{_MONTH},? {_YEAR}|{_YEAR}(?!-\d)"
    rf"|(?:last|this) (?:year|month|week)|yesterday|today|{_NUM} (?:years?|months?|weeks?) ago)"
)
_RANGE = re.compile(
    rf"\b(?:from|between) (?P<a>{DATE}) (?:to|until|till|through|and|-) (?P<b>{DATE})"
    rf"|\b(?P<ya>{_YEAR}) ?[-–] ?(?P<yb>{_YEAR})\b",
    re.IGNORECASE,
)
_SINCE = re.compile(rf"\b(?:since|starting(?: in)?|as of) (?P<a>{DATE})", re.IGNORECASE)
_UNTIL = re.compile(rf"\b(?:until|till|through|up to|to) (?P<b>{DATE})", re.IGNORECASE)
_AT = re.compile(
    rf"(?:\b(?:back in|in|on|during|around)\s+(?P<a>{DATE})|(?P<bare>\b(?:last|this) "
    rf"(?:year|month|week)|\byesterday|\b{_NUM} (?:years?|months?|weeks?) ago)\b)",
    re.IGNORECASE,
)
_FOR = re.compile(rf"\bfor (?:about |almost |over |nearly |around )?(?P<n>{_NUM}) (?P<unit>years?|months?|weeks?)\b",
                  re.IGNORECASE)
_UNIT_YEARS = {"year": 1.0, "month": 1 / 12, "week": 7 / 365.25}


def years_before(ts: float, years: float) -> float:
    """`years` before `ts` on the calendar when they are whole months ("for 6 years" from
    2024-03-01 10:00 is 2018-03-01 10:00, not 12 hours off by leap days; 31 March less a
    month is 29 February), else in days of 365.25 per year (weeks)."""
    months = round(years * 12)
    if abs(years * 12 - months) > 1e-6:
        return ts - years * 365.25 * 86400
    return (datetime.fromtimestamp(ts, UTC) - relativedelta(months=months)).timestamp()


@dataclass(slots=True)
class TimeInfo:
    """What a clause says about time; every field None when it says nothing."""

    start: float | None = None  # since / from
    end: float | None = None  # until / to (end of the named period)
    at: float | None = None  # "in 2021": start of the period
    at_end: float | None = None  # "in 2021": end of the period
    years: float | None = None  # "for 5 years"

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.start, self.end, self.at, self.years))


def _number(text: str) -> float:
    text = text.lower()
    return NUMBER_WORDS[text] if text in NUMBER_WORDS else float(text)


_WIDTH = {"day": timedelta(days=1), "week": timedelta(days=7)}


@lru_cache(maxsize=4096)
def _read(text: str, day: float | None) -> tuple[float, float] | None:
    """dateparser's reading of one date phrase as [start, end) of the period it names, a
    relative one against `day` (the message's day at 00:00 UTC: a period starts at midnight,
    so the hour changes nothing, and the messages of one day share the cached reading);
    `day` is None for a phrase with a year in it, whose reading does not depend on it."""
    from dateparser.date import DateDataParser  # ~0.3 s to import: only when a date is named

    base = datetime.fromtimestamp(0 if day is None else day, UTC).replace(tzinfo=None)
    data = DateDataParser(languages=["en"], settings={
        "RELATIVE_BASE": base, "PREFER_DATES_FROM": "past", "PREFER_DAY_OF_MONTH": "first",
        "RETURN_TIME_AS_PERIOD": True, "TIMEZONE": "UTC", "RETURN_AS_TIMEZONE_AWARE": False,
    }).get_date_data(text)
    if data is None or data.date_obj is None:
        return None
    start = data.date_obj.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=UTC)
    if data.period == "year":
        start = start.replace(month=1, day=1)
        end = start.replace(year=start.year + 1)
    elif data.period == "month":
        start = start.replace(day=1)
        end = start + relativedelta(months=1)
    else:
        end = start + _WIDTH.get(data.period or "day", _WIDTH["day"])
    return start.timestamp(), end.timestamp()


def period(text: str, ref: float) -> tuple[float, float] | None:
    """The [start, end) of one date phrase (DATE), relative phrases against `ref`."""
    text = text.lower().strip().replace(",", "").rstrip(".")
    words = text.split()
    if words and words[-1] == "ago":
        # Not dateparser: it reads none of "a couple of / a few / several / half a / 1.5 years
        # ago" (dateparser 1.5.0 returns None), and a point in the past is the same calendar
        # arithmetic as "for N years" (years_before), a day wide.
        point = years_before(ref, _number(" ".join(words[:-2]))
                             * _UNIT_YEARS[words[-2].rstrip("s")])
        return point, point + 86400
    return _read(text, None if re.search(_YEAR, text) else ref // 86400 * 86400)


def find_time(segment: str, ref: float) -> TimeInfo:
    """The time phrases of one clause; a range wins over since/until, which win over "in"."""
    info = TimeInfo()
    if m := _RANGE.search(segment):
        a = period(m["a"] or m["ya"], ref)
        b = period(m["b"] or m["yb"], ref)
        if a and b and a[0] < b[1]:
            info.start, info.end = a[0], b[1]
    else:
        if (m := _SINCE.search(segment)) and (a := period(m["a"], ref)):
            info.start = a[0]
        if (m := _UNTIL.search(segment)) and (b := period(m["b"], ref)):
            info.end = b[1]
        if info.start is None and info.end is None and (m := _AT.search(segment)):
            if p := period(m["a"] or m["bare"], ref):
                info.at, info.at_end = p
    if m := _FOR.search(segment):
        info.years = round(_number(m["n"]) * _UNIT_YEARS[m["unit"].lower().rstrip("s")], 2)
    return info
