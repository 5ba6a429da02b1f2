"""ExecutionHistory: step queries, failure patterns, summary and the JSON round-trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from DeepResearch.src.datatypes.execution import ErrorCategory, ExecutionStatus
from DeepResearch.src.utils.execution_history import ExecutionHistory, ExecutionItem

pytestmark = pytest.mark.unit


def sample_history() -> ExecutionHistory:
    history = ExecutionHistory()
    history.add(
        ExecutionItem(
            "step_1",
            "search_documents",
            ExecutionStatus.SUCCESS,
            result=[{"source": "a.md"}],
            parameters={"query": "q"},
            duration=0.5,
        )
    )
    history.add(
        ExecutionItem(
            "step_2",
            "read_document",
            ExecutionStatus.FAILED,
            error="no document 'x.md'",
            error_category=ErrorCategory.NOT_FOUND,
        )
    )
    history.add(
        ExecutionItem(
            "step_2",
            "read_document",
            ExecutionStatus.FAILED,
            error="no document 'y.md'",
            error_category=ErrorCategory.NOT_FOUND,
            retry_count=0,
            loop_id="root.1",
        )
    )
    history.add(
        ExecutionItem(
            "step_3",
            "search_documents",
            ExecutionStatus.FAILED,
            error="bad top_k",
            error_category=ErrorCategory.VALIDATION,
        )
    )
    history.add(
        ExecutionItem(
            "step_4",
            "read_document",
            ExecutionStatus.SKIPPED,
            error_category=ErrorCategory.ITERATION_LIMIT,
        )
    )
    return history


def test_successful_and_failed_steps() -> None:
    history = sample_history()
    assert [i.step_name for i in history.successful_steps()] == ["step_1"]
    assert [i.step_name for i in history.failed_steps()] == ["step_2", "step_2", "step_3"]
    assert len(history.items_for_step("step_2")) == 2


def test_failure_patterns_group_by_category_most_frequent_first() -> None:
    patterns = sample_history().failure_patterns()
    assert [(p.category, p.count) for p in patterns] == [("not_found", 2), ("validation", 1)]
    assert patterns[0].tools == {"read_document": 2}
    assert patterns[0].examples == ["no document 'x.md'", "no document 'y.md'"]


def test_summary_counts() -> None:
    summary = sample_history().summary()
    assert summary["total"] == 5
    assert (summary["successful"], summary["failed"], summary["skipped"]) == (1, 3, 1)
    assert summary["success_rate"] == 0.2
    assert summary["tools_used"] == {"search_documents": 2, "read_document": 3}
    assert summary["loops"] == ["root", "root.1"]
    assert ExecutionHistory().summary()["success_rate"] is None


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    history = sample_history()
    path = history.save_to_file(tmp_path / "deep" / "history.json")
    loaded = ExecutionHistory.load_from_file(path)
    assert loaded.items == history.items
    assert loaded.started_at == history.started_at
    assert json.loads(path.read_text())["summary"]["failed"] == 3


def test_unserialisable_results_are_stored_as_repr(tmp_path: Path) -> None:
    history = ExecutionHistory()
    history.add(ExecutionItem("s", "t", ExecutionStatus.SUCCESS, result={"obj": object()}))
    loaded = ExecutionHistory.load_from_file(history.save_to_file(tmp_path / "h.json"))
    assert loaded.items[0].result["obj"].startswith("<object object")


def test_load_rejects_other_format_versions(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text(json.dumps({"format_version": 99, "items": [], "started_at": "x"}))
    with pytest.raises(ValueError, match="format_version 99 is not supported"):
        ExecutionHistory.load_from_file(path)
