"""What `stats()` and `health()` report."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class MemoryStats:
    backend: str
    available: bool
    session_id: str
    total: int | None  # None while the backend is unavailable
    in_session: int | None
    pending: int  # write-behind records not yet written
    outbox: int  # failed writes waiting for a retry
    written: int  # records this client has written
    failed_attempts: int  # batch writes that failed (and went to the outbox)
    spilled_file: str | None  # JSONL file unwritten records were saved to, if any

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class MemoryHealth:
    ok: bool  # backend healthy and nothing waiting in the outbox
    available: bool
    backend: str
    detail: str
    pending: int
    outbox: int
    written: int
    failed_attempts: int
    spilled_file: str | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
