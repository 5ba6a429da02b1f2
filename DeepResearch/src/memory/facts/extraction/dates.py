"""Time phrases in a clause, resolved against the message's timestamp (UTC, epoch seconds).

A named period resolves to the half-open interval [its first instant, the first instant
after it): "2019" -> [2019-01-01, 2020-01-01), "March 2020" -> [2020-03-01, 2020-04-01),
"2020-03-05" -> that day. Ranges are inclusive as English uses them: "from 2019 to 2022"
-> start 2019-01-01, end 2023-01-01 (a fact's validity is [valid_at, invalid_at)).

Recognised: from/between A to/and B, A-B (years), since A, until/till/through A, in/on/back
in A, "for N years/months/weeks" (a duration), "N years ago", last/this year, last month,
last week, yesterday. Dates: a year (1900-2099), Month YYYY, Month D(, YYYY), D Month YYYY,
YYYY-MM, YYYY-MM-DD. Written out by hand: cheap enough for the ingest rate (dateparser costs
milliseconds per call and guesses a day for a bare year).
"""

from __future__ import annotations

import re
from calendar import monthrange
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from DeepResearch.src.memory.facts.extraction.vocab import NUMBER_WORDS

_MONTHS = {
    name: i + 1
    for i, names in enumerate((
        "january jan", "february feb", "march mar", "april apr", "may", "june jun",
        "july jul", "august aug", "september sep sept", "october oct", "november nov",
        "december dec",
    ))
    for name in names.split()
}
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?:19|20)\d\d"
_NUM = r"(?:\d+(?:\.\d+)?|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + ")"
DATE = (
    rf"(?:{_YEAR}-\d\d(?:-\d\d)?|{_MONTH} \d{{1,2}}(?:st|nd|rd|th)?,? {_YEAR}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)? (?:of )?{_MONTH},? {_YEAR}|{_MONTH},? {_YEAR}|{_YEAR}"
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
    moment = datetime.fromtimestamp(ts, UTC)
    year, month = divmod(moment.year * 12 + moment.month - 1 - months, 12)
    day = min(moment.day, monthrange(year, month + 1)[1])
    return moment.replace(year=year, month=month + 1, day=day).timestamp()


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


def _ts(year: int, month: int = 1, day: int = 1) -> float:
    return datetime(year, month, day, tzinfo=UTC).timestamp()


def _next_month(year: int, month: int) -> float:
    return _ts(year + month // 12, month % 12 + 1)


def period(text: str, ref: float) -> tuple[float, float] | None:
    """The [start, end) of one date phrase (DATE), relative phrases against `ref`."""
    text = text.lower().strip().replace(",", "").rstrip(".")
    now = datetime.fromtimestamp(ref, UTC)
    if m := re.fullmatch(r"(\d{4})-(\d\d)(?:-(\d\d))?", text):
        y, mo = int(m[1]), int(m[2])
        if not 1 <= mo <= 12:
            return None
        if m[3]:
            try:
                day = datetime(y, mo, int(m[3]), tzinfo=UTC)
            except ValueError:
                return None
            return day.timestamp(), (day + timedelta(days=1)).timestamp()
        return _ts(y, mo), _next_month(y, mo)
    if re.fullmatch(_YEAR, text):
        return _ts(int(text)), _ts(int(text) + 1)
    words = text.replace(".", "").split()
    if text in ("last year", "this year"):
        y = now.year - (text == "last year")
        return _ts(y), _ts(y + 1)
    if text in ("last month", "this month"):
        y, mo = now.year, now.month - (text == "last month")
        if mo == 0:
            y, mo = y - 1, 12
        return _ts(y, mo), _next_month(y, mo)
    if text in ("last week", "yesterday", "today"):
        days = {"last week": 7, "yesterday": 1, "today": 0}[text]
        day = (now - timedelta(days=days)).replace(hour=0, minute=0, second=0, microsecond=0)
        return day.timestamp(), (day + timedelta(days=1 if days < 7 else 7)).timestamp()
    if words and words[-1] == "ago":
        n, unit = _number(" ".join(words[:-2])), words[-2].rstrip("s")
        point = years_before(ref, n * _UNIT_YEARS[unit])
        return point, point + 86400
    year = next((int(w) for w in words if re.fullmatch(_YEAR, w)), None)
    month = next((_MONTHS[w] for w in words if w in _MONTHS), None)
    if year is None or month is None:
        return None
    day_word = next((w for w in words if re.fullmatch(r"\d{1,2}(?:st|nd|rd|th)?", w)), None)
    if day_word is None:
        return _ts(year, month), _next_month(year, month)
    try:
        day = datetime(year, month, int(re.sub(r"\D", "", day_word)), tzinfo=UTC)
    except ValueError:
        return None
    return day.timestamp(), (day + timedelta(days=1)).timestamp()


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
