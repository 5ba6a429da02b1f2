"""Conversation messages as callers hand them in (dicts) -> validated `Message`s.

Each dict: author_id, author_name, content, timestamp, message_id (all required) and
channel_id (optional); other keys are ignored. Ids and names are non-empty strings; content a non-empty string;
timestamp an ISO 8601 string ("2024-05-01T10:00:00Z"; without an offset it is taken as UTC),
a `datetime` (naive = UTC) or epoch seconds (int/float). Anything else raises
MemoryInputError naming the message (index and id), the field and the value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.facts.model import Message

REQUIRED = ("message_id", "author_id", "author_name", "content", "timestamp")
OPTIONAL = ("channel_id",)
# Epoch seconds beyond this (year 3000) are almost surely milliseconds.
_MAX_EPOCH = 32_503_680_000


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_timestamp(value: Any, where: str) -> float:
    """Epoch seconds (UTC) of an ISO 8601 string, a datetime or an epoch number."""
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return moment.timestamp()
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
    if isinstance(value, str):
        text = value.strip()
        try:
            moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z"))
                                            else text)
        except ValueError:
            raise MemoryInputError(
                f"{where}: field 'timestamp' = {_short(value)} is not an ISO 8601 date/time "
                "(e.g. '2024-05-01T10:00:00Z')"
            ) from None
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    raise MemoryInputError(f"{where}: field 'timestamp' is a {type(value).__name__} "
                           f"({_short(value)}); give an ISO 8601 string, a datetime or "
                           "epoch seconds")


def _text(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw[key]
    if not isinstance(value, str):
        raise MemoryInputError(f"{where}: field {key!r} must be a string, got "
                               f"{type(value).__name__} ({_short(value)})")
    if not value.strip():
        raise MemoryInputError(f"{where}: field {key!r} is empty ({_short(value)})")
    return value


def parse_message(raw: Any, index: int) -> Message:
    if not isinstance(raw, Mapping):
        raise MemoryInputError(f"message #{index}: expected a mapping with fields "
                               f"{', '.join(REQUIRED)}, got {type(raw).__name__}")
    ident = raw.get("message_id")
    where = f"message #{index}" + (f" (id {ident!r})" if isinstance(ident, str) else "")
    missing = [key for key in REQUIRED if key not in raw or raw[key] is None]
    if missing:
        raise MemoryInputError(f"{where}: missing field(s) {', '.join(missing)}; "
                               f"required: {', '.join(REQUIRED)}")
    channel = raw.get("channel_id")
    return Message(
        message_id=_text(raw, "message_id", where),
        author_id=_text(raw, "author_id", where),
        author_name=_text(raw, "author_name", where).strip(),
        content=_text(raw, "content", where),
        timestamp=parse_timestamp(raw["timestamp"], where),
        channel_id=None if channel is None else _text(raw, "channel_id", where),
    )


def parse_messages(raw: Sequence[Mapping[str, Any]]) -> list[Message]:
    """Validated Messages, in the given order; the first bad one raises MemoryInputError."""
    if isinstance(raw, str | bytes | Mapping) or not isinstance(raw, Sequence):
        raise MemoryInputError(f"messages: expected a list of mappings, got {type(raw).__name__}")
    messages = [parse_message(item, i) for i, item in enumerate(raw)]
    seen: dict[str, int] = {}
    for i, message in enumerate(messages):
        if message.message_id in seen:
            raise MemoryInputError(f"message #{i}: message_id {message.message_id!r} repeats "
                                   f"message #{seen[message.message_id]}'s; ids must be unique")
        seen[message.message_id] = i
    return messages
