"""ExecutionHistory: every tool run (and nested loop) of a workflow, in order.

The one history of a run: ToolRunner appends to it, nested loops merge their items into
their parent's (tagged with their loop id), and the run saves it as execution_history.json.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from DeepResearch.src.datatypes.execution import ErrorCategory, ExecutionStatus

FORMAT_VERSION = 1


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _jsonable(value: Any) -> Any:
    """A JSON-safe copy of a tool result (unknown objects become their repr)."""
    try:
        return json.loads(json.dumps(value, default=repr))
    except (TypeError, ValueError):
        return repr(value)


@dataclass
class ExecutionItem:
    step_name: str
    tool: str
    status: ExecutionStatus
    result: Any = None
    error: str | None = None
    timestamp: str = field(default_factory=_now)
    parameters: dict[str, Any] = field(default_factory=dict)
    duration: float = 0.0
    retry_count: int = 0
    error_category: ErrorCategory | None = None
    loop_id: str = "root"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        data["error_category"] = self.error_category.value if self.error_category else None
        data["result"] = _jsonable(self.result)
        data["parameters"] = _jsonable(self.parameters)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExecutionItem:
        values = dict(data)
        values["status"] = ExecutionStatus(values["status"])
        category = values.get("error_category")
        values["error_category"] = ErrorCategory(category) if category else None
        return cls(**values)


@dataclass
class FailurePattern:
    """Failures of one error category: how many, which tools, example messages."""

    category: str
    count: int
    tools: dict[str, int]
    examples: list[str]


@dataclass
class ExecutionHistory:
    items: list[ExecutionItem] = field(default_factory=list)
    started_at: str = field(default_factory=_now)

    def add(self, item: ExecutionItem) -> ExecutionItem:
        self.items.append(item)
        return item

    def extend(self, items: list[ExecutionItem]) -> None:
        self.items.extend(items)

    def __len__(self) -> int:
        return len(self.items)

    def successful_steps(self) -> list[ExecutionItem]:
        return [item for item in self.items if item.status is ExecutionStatus.SUCCESS]

    def failed_steps(self) -> list[ExecutionItem]:
        return [item for item in self.items if item.status is ExecutionStatus.FAILED]

    def items_for_step(self, step_name: str) -> list[ExecutionItem]:
        return [item for item in self.items if item.step_name == step_name]

    def tools_used(self) -> dict[str, int]:
        return dict(Counter(item.tool for item in self.items))

    def failure_patterns(self, max_examples: int = 3) -> list[FailurePattern]:
        """Failures grouped by error category, most frequent first."""
        grouped: dict[str, list[ExecutionItem]] = defaultdict(list)
        for item in self.failed_steps():
            category = item.error_category.value if item.error_category else "uncategorised"
            grouped[category].append(item)
        patterns = [
            FailurePattern(
                category=category,
                count=len(failures),
                tools=dict(Counter(item.tool for item in failures)),
                examples=[item.error or "" for item in failures[:max_examples]],
            )
            for category, failures in grouped.items()
        ]
        return sorted(patterns, key=lambda pattern: (-pattern.count, pattern.category))

    def summary(self) -> dict[str, Any]:
        total = len(self.items)
        succeeded = len(self.successful_steps())
        return {
            "total": total,
            "successful": succeeded,
            "failed": len(self.failed_steps()),
            "skipped": sum(item.status is ExecutionStatus.SKIPPED for item in self.items),
            "success_rate": round(succeeded / total, 3) if total else None,
            "total_duration": round(sum(item.duration for item in self.items), 4),
            "tools_used": self.tools_used(),
            "loops": sorted({item.loop_id for item in self.items}),
            "failure_patterns": [asdict(pattern) for pattern in self.failure_patterns()],
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "started_at": self.started_at,
            "summary": self.summary(),
            "items": [item.to_dict() for item in self.items],
        }

    def save_to_file(self, path: str | Path) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(self.to_dict(), indent=2), encoding="utf-8")
        return target

    @classmethod
    def load_from_file(cls, path: str | Path) -> ExecutionHistory:
        source = Path(path)
        data = json.loads(source.read_text(encoding="utf-8"))
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise ValueError(
                f"{source}: execution history format_version {version!r} is not supported "
                f"(this DeepResearch reads version {FORMAT_VERSION})"
            )
        return cls(
            items=[ExecutionItem.from_dict(item) for item in data["items"]],
            started_at=data["started_at"],
        )
