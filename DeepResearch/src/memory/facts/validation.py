"""Checks of what callers hand the fact graph: times, confidences, names, messages.

Every check raises MemoryInputError naming the offending value and what is allowed, before
anything is written. Types and ranges are pydantic (TypeAdapters, and MessageFields for a
message's fields); the messages name the field and the value as before.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    TypeAdapter,
    ValidationError,
)

from DeepResearch.src.memory.config_base import TEXT, number_in
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


def check_confidence(value: Any, what: str = "confidence") -> float:
    try:
        return number_in(0.0, 1.0).validate_python(value)
    except ValidationError:
        raise MemoryInputError(f"{what}={value!r}: must be a number in [0, 1]") from None


_WORDS = TypeAdapter(Annotated[Sequence[StrictStr], Field(min_length=1)])  # not a bare str
_IDS = TypeAdapter(Annotated[Sequence[TEXT], Field(min_length=1)])
_ATTRIBUTES = TypeAdapter(dict[StrictStr, Any])
_NAME = TypeAdapter(Annotated[TEXT, AfterValidator(lambda text: " ".join(text.split()))])


def check_fact_types(value: Any, what: str, predicates: Sequence[str]) -> tuple[str, ...] | None:
    """None, or a non-empty list of known predicates (any case) -> the upper-case tuple."""
    if value is None:
        return None
    try:
        items = _WORDS.validate_python([value] if isinstance(value, str) else value)
    except ValidationError:
        raise MemoryInputError(
            f"{what}={value!r}: give a list of predicates, e.g. ['WORKS_AT']"
        ) from None
    upper = tuple(dict.fromkeys(i.strip().upper() for i in items))
    unknown = [i for i in upper if i not in predicates]
    if unknown:
        raise MemoryInputError(f"{what}={value!r}: unknown predicate(s) {unknown}; "
                               f"choices: {list(predicates)}")
    return upper


def check_name(value: Any, what: str) -> str:
    try:
        text = _NAME.validate_python(value)
    except ValidationError:
        raise MemoryInputError(f"{what}={value!r}: must be a non-empty name") from None
    if len(text) > MAX_NAME_CHARS:
        raise MemoryInputError(f"{what}={text[:40]!r}...: longer than {MAX_NAME_CHARS} characters")
    return text


def check_choice(value: Any, what: str, choices: list[str]) -> str:
    if value not in choices:
        raise MemoryInputError(f"{what}={value!r}: unknown; choices: {choices}")
    return value


def check_evidence(value: Any) -> tuple[str, ...]:
    """One id or a non-empty list of ids of the messages / memories a fact came from."""
    try:
        items = _IDS.validate_python([value] if isinstance(value, str) else value)
    except ValidationError:
        raise MemoryInputError(
            f"evidence={value!r}: a fact needs evidence: the id (or a list of ids) of the "
            "messages or memories it came from"
        ) from None
    return tuple(dict.fromkeys(i.strip() for i in items))


def check_attributes(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    try:
        return _ATTRIBUTES.validate_python(value)
    except ValidationError:
        raise MemoryInputError(f"attributes={value!r}: must be a dict with str keys") from None


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


# --- messages (graph.ingest, extraction.extract) ----------------------------------------------
MESSAGE_FIELDS = ("message_id", "author_id", "author_name", "content", "timestamp")
_MAX_EPOCH = 32_503_680_000  # epoch seconds beyond the year 3000 are almost surely milliseconds


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_timestamp(value: Any, where: str) -> float:
    """Epoch seconds (UTC) of a message's ISO 8601 string, datetime or epoch number (naive =
    UTC). Stricter than parse_time: a message is stamped by a machine, so free text, partial
    dates and numbers in the wrong unit are mistakes, not guesses to make."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, bool):  # bool is an int: refuse it explicitly
        raise MemoryInputError(f"{where}: field 'timestamp' is a bool ({value!r}); "
                               "give an ISO 8601 string, a datetime or epoch seconds")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise MemoryInputError(f"{where}: field 'timestamp' = {value!r} is not a "
                                   "non-negative finite number of epoch seconds")
        if value > _MAX_EPOCH:
            raise MemoryInputError(f"{where}: field 'timestamp' = {value!r} is after the year "
                                   "3000: epoch milliseconds? give seconds")
        return float(value)
    if not isinstance(value, str):
        raise MemoryInputError(f"{where}: field 'timestamp' is a {type(value).__name__} "
                               f"({_short(value)}); give an ISO 8601 string, a datetime or "
                               "epoch seconds")
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise MemoryInputError(f"{where}: field 'timestamp' = {_short(value)} is not an ISO 8601 "
                               "date/time (e.g. '2024-05-01T10:00:00Z')") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


class MessageFields(BaseModel):
    """The fields of a message given as a mapping: each a non-empty str, but the timestamp
    (parse_timestamp reads it). A field given as None is missing."""

    model_config = ConfigDict(strict=True, extra="ignore")
    message_id: TEXT
    author_id: TEXT
    author_name: TEXT
    content: TEXT
    timestamp: Any
    channel_id: TEXT | None = None


def _fields(raw: Mapping[str, Any], where: str) -> MessageFields:
    try:
        return MessageFields.model_validate({k: v for k, v in raw.items() if v is not None})
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    missing = [str(e["loc"][0]) for e in errors if e["type"] == "missing"]
    if missing:
        raise MemoryInputError(f"{where}: missing field(s) {', '.join(missing)}; "
                               f"required: {', '.join(MESSAGE_FIELDS)}") from None
    key, value = str(errors[0]["loc"][0]), errors[0]["input"]
    if errors[0]["type"] == "string_type":
        raise MemoryInputError(f"{where}: field {key!r} must be a string, got "
                               f"{type(value).__name__} ({_short(value)})") from None
    raise MemoryInputError(f"{where}: field {key!r} is empty ({_short(value)})") from None


def parse_message(raw: Any, index: int, channel_id: str | None = None) -> Message:
    """A Message from a dict {message_id, author_id, author_name, content, timestamp,
    channel_id?} (`channel_id`: the channel of one that names none); a Message as it is."""
    if isinstance(raw, Message):  # already validated
        return raw
    if not isinstance(raw, Mapping):
        raise MemoryInputError(f"message #{index}: expected a mapping with fields "
                               f"{', '.join(MESSAGE_FIELDS)}, got {type(raw).__name__}")
    ident = raw.get("message_id")
    where = f"message #{index}" + (f" (id {ident!r})" if isinstance(ident, str) else "")
    fields = _fields(raw, where)
    return Message(
        message_id=fields.message_id.strip(),
        author_id=fields.author_id.strip(),
        author_name=check_name(fields.author_name, f"{where}: field 'author_name'"),
        content=fields.content,
        timestamp=parse_timestamp(fields.timestamp, where),
        channel_id=channel_id if fields.channel_id is None else fields.channel_id.strip(),
    )


def parse_messages(raw: Any, channel_id: str | None = None) -> list[Message]:
    """Validated Messages, in the given order, or MemoryInputError naming the first bad
    message (index and id), the field and the value; message ids must be unique."""
    if isinstance(raw, str | bytes | Mapping) or not isinstance(raw, Sequence):
        raise MemoryInputError(f"messages: expected a list of mappings, got {type(raw).__name__}")
    messages = [parse_message(item, i, channel_id) for i, item in enumerate(raw)]
    seen: dict[str, int] = {}
    for i, message in enumerate(messages):
        if message.message_id in seen:
            raise MemoryInputError(f"message #{i}: message_id {message.message_id!r} repeats "
                                   f"message #{seen[message.message_id]}'s; ids must be unique")
        seen[message.message_id] = i
    return messages
