"""ExecutionHistory -> memories, at the end of a run.

The single tool runs are already memories (tracking.py); the bridge adds what only the whole
history shows: one `execution_trace` per loop (the order of steps, their outcomes, timings)
and, when anything failed, ONE `failure_analysis` memory with the failure patterns (high
importance, so planners and executors of later runs meet it first).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from DeepResearch.src.datatypes.execution import ExecutionStatus
from DeepResearch.src.utils.execution_history import ExecutionHistory, ExecutionItem

TRACE_IMPORTANCE = 0.5
FAILURE_ANALYSIS_IMPORTANCE = 0.9
MAX_TRACE_LINES = 40


def _line(item: ExecutionItem) -> str:
    params = json.dumps(item.parameters, sort_keys=True, default=str)
    line = f"{item.step_name} {item.tool}{params} -> {item.status.value} ({item.duration:.3f}s)"
    if item.error:
        line += f": {item.error[:160]}"
    return line


def trace_memories(
    history: ExecutionHistory,
    question: str,
    session_id: str,
    loop_questions: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """One `execution_trace` memory per loop that ran anything, naming the loop's question
    (`loop_questions`: loop id -> question; the run's question for a loop not named)."""
    loop_questions = loop_questions or {}
    by_loop: dict[str, list[ExecutionItem]] = {}
    for item in history.items:
        by_loop.setdefault(item.loop_id, []).append(item)
    memories = []
    for loop_id, items in by_loop.items():
        asked = loop_questions.get(loop_id, question)
        failed = [i for i in items if i.status is ExecutionStatus.FAILED]
        lines = [_line(i) for i in items[:MAX_TRACE_LINES]]
        if len(items) > MAX_TRACE_LINES:
            lines.append(f"... {len(items) - MAX_TRACE_LINES} more")
        memories.append(
            {
                "content": f"Execution trace of loop {loop_id} for {asked!r}:\n"
                + "\n".join(lines),
                "memory_type": "execution_trace",
                "importance": TRACE_IMPORTANCE,
                "session_id": session_id,
                "metadata": {
                    "question": asked,
                    "loop_id": loop_id,
                    "success": not failed,
                    "tools": dict(Counter(i.tool for i in items)),
                    "failed": len(failed),
                    "total": len(items),
                    "duration": round(sum(i.duration for i in items), 4),
                },
            }
        )
    return memories


def failure_analysis_memory(
    history: ExecutionHistory, question: str, session_id: str
) -> dict[str, Any] | None:
    """The failure patterns of the run as one memory, or None when nothing failed."""
    patterns = history.failure_patterns()
    if not patterns:
        return None
    failures = history.failed_steps()
    tools = Counter(item.tool for item in failures)
    lines = [
        f"- {p.category}: {p.count}x in {', '.join(f'{t} ({n})' for t, n in p.tools.items())}; "
        f"e.g. {p.examples[0][:200] if p.examples else '(no message)'}"
        for p in patterns
    ]
    failed_calls = [
        {
            "tool": i.tool,
            "params": json.loads(json.dumps(i.parameters, default=str)),
            "category": i.error_category.value if i.error_category else None,
        }
        for i in failures[:20]
    ]
    return {
        "content": f"Failure analysis of the run for {question!r}: {len(failures)} of "
        f"{len(history)} tool runs failed.\n" + "\n".join(lines),
        "memory_type": "failure_analysis",
        "importance": FAILURE_ANALYSIS_IMPORTANCE,
        "session_id": session_id,
        "metadata": {
            "question": question,
            "success": False,
            # The most frequent failing tool, for failure-pattern matching; all of them below.
            "tool": tools.most_common(1)[0][0],
            "tools": dict(tools),
            "categories": [p.category for p in patterns],
            "failed_calls": failed_calls,
        },
    }


def history_memories(
    history: ExecutionHistory,
    question: str,
    session_id: str,
    loop_questions: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Everything the bridge stores for one run's history (store_many items)."""
    memories = trace_memories(history, question, session_id, loop_questions)
    analysis = failure_analysis_memory(history, question, session_id)
    return memories + ([analysis] if analysis is not None else [])
