"""The ExecutionHistory bridge: what one run's history becomes in memory."""

from __future__ import annotations

import pytest

from DeepResearch.src.datatypes.execution import ErrorCategory, ExecutionStatus
from DeepResearch.src.utils.execution_history import ExecutionHistory, ExecutionItem
from DeepResearch.src.workflow.memory.bridge import history_memories

pytestmark = pytest.mark.unit
QUESTION = "Which aligner suits RNA-seq reads and how are variants called?"


def item(loop: str, tool: str, ok: bool = True, **params: str) -> ExecutionItem:
    return ExecutionItem(
        step_name=f"{loop}:{tool}", tool=tool, parameters=params, loop_id=loop,
        status=ExecutionStatus.SUCCESS if ok else ExecutionStatus.FAILED,
        error=None if ok else f"{tool}: no document 'x.md'",
        error_category=None if ok else ErrorCategory.NOT_FOUND,
    )


def test_one_trace_per_loop_naming_its_question_and_a_failure_analysis() -> None:
    history = ExecutionHistory()
    history.extend([
        item("root.1", "search_documents", query="aligner"), item("root.1", "read_document", source="a.md"),
        item("root.2", "search_documents", query="variants"), item("root.2", "read_document", source="b.md"),
        item("root", "sub_loop"), item("root", "read_document", ok=False, source="x.md"),
    ])
    loop_questions = {"root": QUESTION, "root.1": "Which aligner?"}  # root.2 is not named
    memories = history_memories(history, QUESTION, "session-1", loop_questions)
    traces = {m["metadata"]["loop_id"]: m for m in memories if m["memory_type"] == "execution_trace"}
    assert sorted(traces) == ["root", "root.1", "root.2"]
    asked = {**{loop: QUESTION for loop in traces}, "root.1": "Which aligner?"}
    for loop_id, trace in traces.items():  # the content (what is embedded) names loop, question
        assert trace["content"].startswith(f"Execution trace of loop {loop_id} for {asked[loop_id]!r}")
        assert trace["metadata"]["question"] == asked[loop_id] and "key" not in trace
    assert "read_document" in traces["root.1"]["content"] and "a.md" in traces["root.1"]["content"]
    assert not traces["root"]["metadata"]["success"] and traces["root.1"]["metadata"]["success"]
    (analysis,) = [m for m in memories if m["memory_type"] == "failure_analysis"]
    assert analysis["importance"] > max(t["importance"] for t in traces.values())
    assert analysis["metadata"]["tool"] == "read_document"
    assert analysis["metadata"]["failed_calls"] == [
        {"tool": "read_document", "params": {"source": "x.md"}, "category": "not_found"}]


def test_a_run_without_failures_has_no_failure_analysis() -> None:
    history = ExecutionHistory()
    history.add(item("root", "search_documents", query="aligner"))
    kinds = [m["memory_type"] for m in history_memories(history, QUESTION, "s")]
    assert kinds == ["execution_trace"]
