"""What one tool run produced, and the status/error vocabulary shared by runner and history."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ExecutionStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"
    SKIPPED = "skipped"


class ErrorCategory(StrEnum):
    """Why a run failed; ExecutionHistory groups failure patterns by these."""

    VALIDATION = "validation"  # bad or missing parameters: retrying cannot help
    UNKNOWN_TOOL = "unknown_tool"  # the name is not in the registry
    NOT_FOUND = "not_found"  # the thing asked for (a document, a file) does not exist
    TIMEOUT = "timeout"
    RUNTIME = "runtime"  # the tool raised
    ITERATION_LIMIT = "iteration_limit"
    # the executor made no call for the step (memory said the call failed before, or it judged
    # the call useless): a skip, not a failure
    NOT_CALLED = "not_called"


@dataclass
class ExecutionResult:
    """The outcome of one tool run: `data` on success, `error` (+ category) on failure."""

    success: bool
    data: Any = None
    metrics: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    error_category: ErrorCategory | None = None

    @classmethod
    def ok(cls, data: Any, **metrics: Any) -> ExecutionResult:
        return cls(success=True, data=data, metrics=dict(metrics))

    @classmethod
    def fail(cls, error: str, category: ErrorCategory, **metrics: Any) -> ExecutionResult:
        return cls(success=False, error=error, error_category=category, metrics=dict(metrics))


class ToolNotFoundError(LookupError):
    """A tool asked for something that does not exist (maps to ErrorCategory.NOT_FOUND)."""
