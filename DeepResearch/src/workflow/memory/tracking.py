"""Tool execution tracking: every ToolRunner run becomes ONE `tool_execution` memory.

This listener is the only layer that writes tool runs to memory (the agents' tools, the
nodes and the history bridge do not), and it remembers which runs it has taken, so a run
is never stored twice -- not even when a nested loop's history is merged into its parent's.
Runs join the run's pending batch (`MemoryRun.pending`), written with `store_many` when a
nested loop ends and when the run ends.
"""

from __future__ import annotations

import json
from typing import Any

from DeepResearch.src.datatypes.execution import ExecutionStatus
from DeepResearch.src.tools.runner import ToolRunEvent
from DeepResearch.src.workflow.memory.run_context import MemoryRun, excerpt

SUCCESS_IMPORTANCE = 0.4
FAILURE_IMPORTANCE = 0.7


def _summary(data: Any, limit: int = 300) -> str:
    """A short text of a tool result: sources and titles first, then the start of the text."""
    if isinstance(data, list):
        parts = [
            f"{hit.get('source')} ({hit.get('score')})" if isinstance(hit, dict) else str(hit)
            for hit in data
        ]
        return excerpt(f"{len(data)} results: " + ", ".join(parts), limit)
    if isinstance(data, dict) and "source" in data:
        return excerpt(
            f"{data['source']}: {data.get('title', '')}: {data.get('content', '')}", limit
        )
    return excerpt(json.dumps(data, default=str), limit)


def tool_memory(event: ToolRunEvent, session_id: str, question: str | None = None) -> dict[str, Any]:
    """The store_many item of one tool run. Its content (what gets embedded) starts with the
    question of the loop the tool ran for, so a tool run is found by what it did and for what."""
    item = event.item
    ok = item.status is ExecutionStatus.SUCCESS
    params = json.dumps(item.parameters, sort_keys=True, default=str)
    category = item.error_category.value if item.error_category else None
    if ok:
        content = f"Tool {item.tool} succeeded with {params}: {_summary(item.result)}"
    else:
        content = f"Tool {item.tool} failed ({category}) with {params}: {item.error}"
    return {
        "content": f"Question: {question}\n{content}" if question else content,
        "memory_type": "tool_execution",
        "agent_type": "executor",
        "importance": SUCCESS_IMPORTANCE if ok else FAILURE_IMPORTANCE,
        "session_id": session_id,
        "metadata": {
            "tool": item.tool,
            "params": json.loads(json.dumps(item.parameters, default=str)),
            "success": ok,
            "duration": round(item.duration, 6),
            "error": item.error,
            "error_category": category,
            "result_summary": _summary(item.result) if ok else None,
            "step": item.step_name,
            "loop_id": event.loop_id,
            "retry_count": item.retry_count,
        },
    }


class ToolExecutionTracker:
    """A ToolRunListener of every ToolRunner of the run (root and nested)."""

    def __init__(self) -> None:
        self.run: MemoryRun | None = None
        self._seen: set[int] = set()  # id() of ExecutionItems taken (they live in the history)

    def start(self, run: MemoryRun) -> None:
        self.run, self._seen = run, set()

    def stop(self) -> None:
        self.run = None

    async def on_tool_run(self, event: ToolRunEvent) -> None:
        if self.run is None or id(event.item) in self._seen:
            return
        self._seen.add(id(event.item))
        run = self.run
        run.pending.append(
            tool_memory(event, run.session_of(event.loop_id), run.questions.get(event.loop_id))
        )
