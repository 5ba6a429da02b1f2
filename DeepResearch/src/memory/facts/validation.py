"""Checks of what callers hand the fact graph: times, confidences, names, messages.

Every check raises MemoryInputError naming the offending value and what is allowed, before
anything is written.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.facts.model import Message

_PARTIAL_DATE = re.compile(r"^(\d{4})(?:-(\d{1,2}))?$")  # "2022", "2022-01"
_EPOCH_TEXT = re.compile(r"^-?\d+(\.\d+)?$")
MAX_NAME_CHARS = 200
# Proficiency words, as a share of the top level (numbers: 0..1 as is, 1..5 and 1..10 scaled).
PROFICIENCY_WORDS = {
    "beginner": 0.25, "basic": 0.25, "novice": 0.25, "intermediate": 0.5, "working": 0.5,
    "advanced": 0.75, "proficient": 0.75, "expert": 1.0, "master": 1.0,
}


def parse_time(value: Any, what: str) -> float | None:
    """Epoch seconds (UTC) of a datetime, a date, an epoch number, an ISO 8601 string or
    "YYYY" / "YYYY-MM" (naive times are UTC); other text is given to dateparser. None stays
    None. MemoryInputError naming `what` and the value when it does not parse."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise MemoryInputError(f"{what}={value!r}: expected a time, got a bool")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise MemoryInputError(f"{what}={value!r}: not a finite epoch time")
        return float(value)
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()
    if not isinstance(value, str) or not value.strip():
        raise MemoryInputError(
            f"{what}={value!r}: expected a datetime, epoch seconds or an ISO 8601 string"
        )
    text = value.strip()
    if _EPOCH_TEXT.match(text):
        return float(text)
    partial = _PARTIAL_DATE.match(text)
    if partial:
        month = int(partial.group(2) or 1)
        if 1 <= month <= 12:
            return datetime(int(partial.group(1)), month, 1, tzinfo=UTC).timestamp()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        parsed = _dateparser(text)
    if parsed is None:
        raise MemoryInputError(
            f"{what}={value!r}: not a time I can read; give ISO 8601 (2024-03-01 or "
            "2024-03-01T12:00:00Z), YYYY-MM, epoch seconds or a datetime"
        )
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def _dateparser(text: str) -> datetime | None:
    import dateparser  # only for text that is not ISO: it takes ~0.3 s to import

    # English only: detecting the language loads every language's data (seconds)
    return dateparser.parse(text, languages=["en"],
                            settings={"TIMEZONE": "UTC", "RETURN_AS_TIMEZONE_AWARE": True})


def iso(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=UTC).isoformat()


def check_confidence(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
        math.isfinite(value) and 0.0 <= value <= 1.0
    ):
        raise MemoryInputError(f"confidence={value!r}: must be a number in [0, 1]")
    return float(value)


def check_name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MemoryInputError(f"{what}={value!r}: must be a non-empty name")
    text = " ".join(value.split())
    if len(text) > MAX_NAME_CHARS:
        raise MemoryInputError(f"{what}={text[:40]!r}...: longer than {MAX_NAME_CHARS} characters")
    return text


def check_choice(value: Any, what: str, choices: list[str]) -> str:
    if value not in choices:
        raise MemoryInputError(f"{what}={value!r}: unknown; choices: {choices}")
    return value


def check_evidence(value: Any) -> tuple[str, ...]:
    """One id or a non-empty list of ids of the messages / memories a fact came from."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not items or not all(
        isinstance(i, str) and i.strip() for i in items
    ):
        raise MemoryInputError(
            f"evidence={value!r}: a fact needs evidence: the id (or a list of ids) of the "
            "messages or memories it came from"
        )
    return tuple(dict.fromkeys(i.strip() for i in items))


def check_attributes(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise MemoryInputError(f"attributes={value!r}: must be a dict with str keys")
    return dict(value)


def proficiency(value: Any) -> float | None:
    """A proficiency as a share of the top level in [0, 1]: words (beginner .. expert),
    0..1, 1..5 or 1..10 scales; None when absent or unreadable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        word = value.strip().casefold()
        if word in PROFICIENCY_WORDS:
            return PROFICIENCY_WORDS[word]
        try:
            value = float(word)
        except ValueError:
            return None
    if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    if value <= 1:
        return float(value)
    return min(1.0, value / 5 if value <= 5 else value / 10)


def check_proficiency(value: Any) -> float | None:
    if value is None:
        return None
    level = proficiency(value)
    if level is None:
        raise MemoryInputError(
            f"min_proficiency={value!r}: give a word {sorted(PROFICIENCY_WORDS)} or a number "
            "(0..1, or a 1..5 / 1..10 scale)"
        )
    return level


MESSAGE_KEYS = ("message_id", "author_id", "author_name", "content", "timestamp")


def clean_message(raw: Any, index: int, channel_id: str | None) -> Message:
    """A Message from a dict {author_id, author_name, content, timestamp, message_id}
    (channel_id optional), or MemoryInputError naming the message and what is wrong."""
    if isinstance(raw, Message):
        return raw
    if not isinstance(raw, Mapping):
        raise MemoryInputError(f"message {index}: expected a dict, got {type(raw).__name__}")
    where = f"message {index} ({raw.get('message_id', 'no id')!r})"
    missing = [k for k in MESSAGE_KEYS if raw.get(k) in (None, "")]
    if missing:
        raise MemoryInputError(f"{where}: missing {missing}; a message needs {list(MESSAGE_KEYS)}")
    for key in ("message_id", "author_id", "author_name", "content"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise MemoryInputError(f"{where}: {key}={raw[key]!r} must be non-empty text")
    channel = raw.get("channel_id", channel_id)
    if channel is not None and (not isinstance(channel, str) or not channel.strip()):
        raise MemoryInputError(f"{where}: channel_id={channel!r} must be non-empty text")
    stamp = parse_time(raw["timestamp"], f"{where} timestamp")
    assert stamp is not None
    return Message(message_id=raw["message_id"].strip(), author_id=raw["author_id"].strip(),
                   author_name=check_name(raw["author_name"], f"{where} author_name"),
                   content=raw["content"], timestamp=stamp, channel_id=channel)
